"""The method registry: one entry per method, used by the window, the command line and exports.

Each :class:`Method` names its estimator (whose ``_params`` declaration builds forms and CLI
help), the views it feeds, and an adapter that turns a fitted estimator into a :class:`RunResult`
-- the uniform bundle of per-sample scores, flags, arrays and summary numbers that views draw and
exports write. Views never compute: anything they need is put in the result here.
"""
from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ._params import Param, validate_params
from ._progress import Reporter

__all__ = ["Method", "RunResult", "METHODS", "get_method", "method_names"]


@dataclass
class RunResult:
    """Everything one run produced, tagged with what produced it.

    sample_scores : name -> (n,) float array (written to the per-sample CSV).
    flags : name -> (n,) bool array (e.g. "outlier"; the CSV has them as 0/1 columns).
    arrays : name -> ndarray (written to the NPZ: bases, L, S, projections, histories).
    feature_scores : name -> (d,) array (ESFS scores; written to their own CSV).
    summary : name -> number/str (what the log and the summary view show).
    """

    method: str
    params: dict
    data_fingerprint: str
    estimator: Any = None
    sample_scores: dict = field(default_factory=dict)
    flags: dict = field(default_factory=dict)
    arrays: dict = field(default_factory=dict)
    feature_scores: dict = field(default_factory=dict)
    summary: dict = field(default_factory=dict)
    warnings: list = field(default_factory=list)
    elapsed: float = 0.0

    @property
    def primary_score(self) -> str | None:
        return next(iter(self.sample_scores), None)


@dataclass(frozen=True)
class Method:
    name: str                   # stable, lower-case, hyphenated (CLI name)
    title: str                  # shown in the window
    description: str            # one line
    factory: Callable[[], type]  # returns the estimator class (imported lazily)
    adapter: Callable[[Any, Any, dict], dict]  # (estimator, dataset, params) -> RunResult fields
    views: tuple = ()
    needs_labels: bool = False
    accepts_sparse: bool = False
    extra_params: tuple = ()    # run-level parameters that are not the estimator's (e.g. alpha)

    @property
    def estimator_class(self) -> type:
        return self.factory()

    def params(self) -> tuple[Param, ...]:
        return tuple(p for p in self.estimator_class.param_specs() if not p.scriptable_only) + self.extra_params

    def defaults(self) -> dict:
        return {p.name: p.default for p in self.params()}

    def validate(self, params: dict) -> dict:
        return validate_params(self.params(), params)

    def run(self, dataset, params: dict | None = None, progress=None) -> RunResult:
        """Validate ``params``, fit on ``dataset`` and return a :class:`RunResult`.

        Raises ``ValueError`` for bad parameters or data, :class:`~robustcore.Cancelled` when the
        progress callback cancels.
        """
        values = self.validate(params or {})
        if self.needs_labels and dataset.labels is None:
            raise ValueError(f"{self.title} needs class labels, and data set '{dataset.name}' has none; "
                             f"load a file with a label column")
        est_names = {p.name for p in self.estimator_class.param_specs()}
        est = self.estimator_class(**{k: v for k, v in values.items() if k in est_names})
        t0 = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fields = self.adapter(est, dataset, values, Reporter(progress))
        elapsed = time.perf_counter() - t0
        res = RunResult(method=self.name, params=values, data_fingerprint=dataset.fingerprint(),
                        estimator=est, elapsed=elapsed, **fields)
        res.warnings.extend(str(w.message) for w in caught)
        return res


# -- adapters ---------------------------------------------------------------------------------

def _X(dataset, accept_sparse=False):
    return dataset.X if accept_sparse else dataset.dense()


def _subspace_fields(est, X, extra_scores=None):
    """Shared result fields of anything with components_ and mean_ (projection and SPE)."""
    from .anomaly import ResidualScorer
    scorer = ResidualScorer(n_components=est.components_.shape[0]).fit_subspace(
        X, components=est.components_, mean=est.mean_)
    proj = (X - est.mean_) @ est.components_.T
    scores = dict(extra_scores or {})
    scores["spe"] = scorer.spe(X)
    scores["t2"] = scorer.t2(X)
    arrays = {"components": est.components_, "mean": est.mean_, "projection": proj}
    return scores, arrays, scorer


def _run_pca(est, dataset, values, rep):
    X = _X(dataset)
    est.fit(X, progress=rep.span(0, 0.9))
    scores, arrays, _ = _subspace_fields(est, X)
    summary = {"explained variance ratio": float(est.explained_variance_ratio_.sum())}
    arrays["explained_variance"] = est.explained_variance_
    return dict(sample_scores=scores, arrays=arrays, summary=summary)


def _run_cop(est, dataset, values, rep):
    X = _X(dataset)
    est.fit(X, progress=rep.span(0, 0.9))
    scores, arrays, _ = _subspace_fields(est, X, {"coherence": est.coherence_})
    inlier = np.zeros(X.shape[0], dtype=bool)
    inlier[est.inlier_indices_] = True
    flags = {"outlier": ~inlier & ~est.degenerate_, "degenerate": est.degenerate_.copy()}
    summary = {"selected inliers": int(inlier.sum()), "degenerate samples": int(est.degenerate_.sum())}
    return dict(sample_scores=scores, flags=flags, arrays=arrays, summary=summary)


def _run_pcp(est, dataset, values, rep):
    X = _X(dataset)
    est.fit(X, progress=rep)
    h = est.history_
    arrays = {"low_rank": est.low_rank_, "sparse": est.sparse_,
              "history_residual": np.asarray(h["residual"]), "history_rank": np.asarray(h["rank"]),
              "history_nnz": np.asarray(h["nnz"])}
    summary = {"iterations": est.n_iter_, "converged": bool(est.converged_), "rank of L": int(est.rank_),
               "nnz of S": int(np.count_nonzero(est.sparse_)), "lambda": est.lam_, "mu": est.mu_}
    scores = {"sparse_score": est.sample_scores_}
    return dict(sample_scores=scores, arrays=arrays, summary=summary)


def _run_residual(est, dataset, values, rep):
    X = _X(dataset)
    est.fit(X, progress=rep)
    spe, t2 = est.spe(X), est.t2(X)
    flags = est.flag(X)
    summary = {"SPE limit": est.spe_limit_, "T2 limit": est.t2_limit_, "alpha": est.alpha,
               "flagged (either)": int(flags["either"].sum())}
    arrays = {"components": est.components_, "mean": est.mean_, "projection": est.transform(X),
              "contributions": est.contributions(X)}
    return dict(sample_scores={"spe": spe, "t2": t2}, flags={f"outside_{k}": v for k, v in flags.items()},
                arrays=arrays, summary=summary)


def _run_esfs(est, dataset, values, rep):
    X = _X(dataset)
    est.fit(X, progress=rep)
    arrays = {"eigenvalues": est.eigenvalues_, "derivatives": est.derivatives_, "ranking": est.ranking_}
    summary = {"sigma": est.sigma_, "graph": est.graph_, "top feature": dataset.feature_names[int(est.ranking_[0])]}
    return dict(feature_scores={"evsc": est.scores_}, arrays=arrays, summary=summary)


def _run_scw(est, dataset, values, rep):
    X = _X(dataset, accept_sparse=est.covariance == "diagonal")
    y = dataset.labels
    est.fit(X, y, progress=rep)
    h = est.history_
    pred = est.predict(X)
    arrays = {"mean": est.mean_, "history_mistake_rate": np.asarray(h["mistake_rate"]),
              "history_updates": np.asarray(h["updates"])}
    summary = {"online mistake rate": float(h["mistake_rate"][-1]), "updates": int(h["updates"][-1]),
               "training accuracy": float(np.mean(pred == y))}
    flags = {"misclassified": pred != y}
    return dict(flags=flags, arrays=arrays, summary=summary)


_ALPHA = Param("alpha", float, 0.01, "False-alarm rate of the SPE and T² control limits.",
               low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)


def _cls(module, name):
    def load():
        import importlib
        return getattr(importlib.import_module(module, __package__), name)
    return load


METHODS: dict[str, Method] = {m.name: m for m in [
    Method("pca", "PCA", "Principal component analysis: the non-robust baseline.",
           _cls(".subspace.pca", "PCA"), _run_pca, views=("scatter", "detail", "contour", "comparison")),
    Method("coherence-pursuit", "Coherence Pursuit",
           "Robust subspace from the most mutually coherent samples (Rahmani & Atia 2017).",
           _cls(".subspace.coherence_pursuit", "CoherencePursuit"), _run_cop,
           views=("scatter", "detail", "contour", "comparison")),
    Method("pcp", "Robust PCA (PCP)",
           "Principal Component Pursuit: split X into low-rank L plus sparse S (Candès et al. 2011).",
           _cls(".subspace.pcp", "PCP"), _run_pcp, views=("decomposition", "detail", "scatter", "comparison")),
    Method("residual", "SPE / T² scoring",
           "Reconstruction error (SPE) and Hotelling T² against a subspace, with control limits.",
           _cls(".anomaly", "ResidualScorer"), _run_residual, views=("contour", "scatter", "detail")),
    Method("esfs", "ESFS feature ranking",
           "Eigenvalue Sensitive Feature Selection from Laplacian eigenmaps (Jiang & Ren 2011).",
           _cls(".features.esfs", "ESFS"), _run_esfs, views=("ranking",)),
    Method("scw", "SCW online classifier",
           "Soft Confidence-Weighted online learning, SCW-I / SCW-II (Wang, Zhao & Hoi 2012).",
           _cls(".online.scw", "SCW"), _run_scw, views=("learning-curve",), needs_labels=True,
           accepts_sparse=True),
]}


def method_names() -> list[str]:
    return list(METHODS)


def get_method(name: str) -> Method:
    try:
        return METHODS[name]
    except KeyError:
        raise ValueError(f"unknown method {name!r}; choose one of: {', '.join(METHODS)}") from None
