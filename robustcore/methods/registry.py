"""The registry: one row per method, and what the window, the command line and exports ask of it.

A row declares the estimator, its parameters, the views it feeds and its outlier rule; which
data it takes out of core is the table of ``_takes``, its help prose the table of ``_about``."""
from __future__ import annotations

import functools
import importlib

from ._esfs import run_esfs
from ._method import Method
from ._models import run_cop, run_pca, run_residual, run_robpca
from ._pcp import run_pcp
from ._rules import LIMITS_RULE, PCP_RULE, RESIDUAL_RULE, ROBPCA_RULE, SPARSE_RULE
from ._scw import TEST_FRACTION, run_scw
from ._streaming import run_online_rpca

__all__ = ["METHODS", "VIEW_MIN_METHODS", "get_method", "method_names", "methods_for_view", "view_requirement"]


def _cls(module, name):
    def load():
        return getattr(importlib.import_module(module, "robustcore"), name)
    return load


def _import_params(module):
    return importlib.import_module(module, "robustcore").PARAMS


def _declared(module):
    # a partial of a module-level function, not a closure: a Method travels to the worker
    # process by pickle (a test's own Method, made with dataclasses.replace, does)
    return functools.partial(_import_params, module)


_MODEL_VIEWS = ("scatter", "detail", "contour", "outlier-map", "comparison", "evaluation")

METHODS: dict[str, Method] = {m.name: m for m in [
    Method("pca", "PCA", "Principal component analysis: the non-robust baseline.",
           _cls(".subspace.pca", "PCA"), run_pca, views=_MODEL_VIEWS,
           declared=_declared(".subspace._pca_params"), outlier_score="outlier_score", outlier_rule=LIMITS_RULE,
           subspace="PCA", dense_copies=8, short="PCA", rank_param="n_components"),
    Method("coherence-pursuit", "Coherence Pursuit",
           "Robust subspace from the most mutually coherent samples (Rahmani & Atia 2017).",
           _cls(".subspace.coherence_pursuit", "CoherencePursuit"), run_cop,
           declared=_declared(".subspace._coherence_pursuit_params"), views=_MODEL_VIEWS,
           outlier_score="outlier_score", outlier_rule=LIMITS_RULE, subspace="Coherence Pursuit", dense_copies=8,
           short="CoP", rank_param="n_components"),
    Method("robpca", "ROBPCA",
           "Robust PCA from projection pursuit and the MCD (Hubert, Rousseeuw & Vanden Branden 2005).",
           _cls(".subspace.robpca", "ROBPCA"), run_robpca,
           declared=_declared(".subspace._robpca_params"),
           views=("outlier-map", "scatter", "detail", "comparison", "evaluation"), outlier_score="outlier_score",
           outlier_rule=ROBPCA_RULE, subspace="ROBPCA", short="ROBPCA", rank_param="n_components"),
    Method("pcp", "Robust PCA (PCP)",
           "Principal Component Pursuit: split X into low-rank L plus sparse S (Candès et al. 2011).",
           _cls(".subspace.pcp", "PCP"), run_pcp, declared=_declared(".subspace._pcp_params"),
           views=("decomposition", "detail", "scatter", "outlier-map", "comparison", "evaluation"),
           outlier_score="sparse_score", outlier_rule=PCP_RULE, subspace="PCA of L", dense_copies=5, short="PCP"),
    Method("residual", "SPE / T² scoring",
           "Reconstruction error (SPE) and Hotelling T² against a subspace, with control limits.",
           _cls(".anomaly", "ResidualScorer"), run_residual,
           declared=_declared("._anomaly_params"), views=("contour", "scatter", "detail", "outlier-map", "evaluation"),
           outlier_score="outlier_score", outlier_rule=RESIDUAL_RULE, subspace="PCA", dense_copies=10,
           short="SPE/T²", rank_param="n_components"),
    Method("online-rpca", "Online robust PCA (streaming)",
           "Low-rank + sparse one batch of frames at a time, for long videos (OR-PCA, Feng, Xu & Yan 2013).",
           _cls(".subspace.online_rpca", "OnlineRPCA"), run_online_rpca,
           declared=_declared(".subspace._online_rpca_params"),
           views=("decomposition", "detail", "comparison", "evaluation"),
           outlier_score="sparse_score", outlier_rule=SPARSE_RULE, subspace="OR-PCA basis", short="OR-PCA"),
    Method("esfs", "ESFS feature ranking",
           "Eigenvalue Sensitive Feature Selection from Laplacian eigenmaps (Jiang & Ren 2011).",
           _cls(".features.esfs", "ESFS"), run_esfs, declared=_declared(".features._esfs_params"),
           views=("ranking",), short="ESFS"),
    Method("scw", "SCW online classifier",
           "Soft Confidence-Weighted online learning, SCW-I / SCW-II (Wang, Zhao & Hoi 2012).",
           _cls(".online.scw", "SCW"), run_scw, declared=_declared(".online._scw_params"),
           views=("learning-curve",), needs_labels=True, accepts_sparse=True,
           extra_params=(TEST_FRACTION,), sparse_when=("covariance", "diagonal"),
           dense_copies=2, short="SCW"),
]}

#: Views that draw several methods' results at once, and how many they need.
VIEW_MIN_METHODS = {"comparison": 2}


def methods_for_view(view: str) -> tuple[str, ...]:
    """The methods whose results feed ``view``, in registry order."""
    return tuple(m.name for m in METHODS.values() if view in m.views)


def view_requirement(view: str, have) -> str | None:
    """What ``view`` still needs, given the methods ``have`` results (None: it can be drawn)."""
    feeds = methods_for_view(view)
    got = [m for m in feeds if m in set(have)]
    need = VIEW_MIN_METHODS.get(view, 1)
    if len(got) >= need:
        return None
    if need == 1:
        return f"it draws a result of one of: {', '.join(feeds)}"
    return (f"it compares the results of at least {need} of: {', '.join(feeds)}; "
            f"{'only ' + ', '.join(got) if got else 'none of them'} {'is' if len(got) == 1 else 'are'} there")


def method_names() -> list[str]:
    return list(METHODS)


def get_method(name: str) -> Method:
    try:
        return METHODS[name]
    except KeyError:
        raise ValueError(f"unknown method {name!r:.80}; choose one of: {', '.join(METHODS)}") from None
