"""Robust PCA (PCP)'s adapter: L + S in memory, and the subspace of L the views draw."""
from __future__ import annotations

import numpy as np

from .._mad import MAD_NORMAL
from ..result import Decomposition, OutlierMap, Outliers, Subspace
from ._models import rows_in_memory
from ._rules import PCP_RULE

__all__ = ["run_pcp", "PCP_DIRECTIONS"]

# How many leading directions of PCP's L are kept as its subspace (every scatter axis and
# principal angle the views show, and the common rank of the comparison, fit in it).
PCP_DIRECTIONS = 10

def _outlier_map(Z, components, mean, variances, robust: bool) -> tuple[dict, dict]:
    """The outlier map (robustcore.outlier_map) of rows Z in the model's units: (arrays,
    result fields). ``robust``: the OD cut-off from the median/MAD (robust fits), else from the
    mean/sd (PCA)."""
    from ..outlier_map import REGIONS, outlier_map
    try:
        om = outlier_map(Z, components, mean, variances, robust=robust)
    except ValueError as exc:   # a flat component: no score distance along it
        return {}, {"no_outlier_map": str(exc)}
    arrays = {"score_distance": om["score_distance"], "orthogonal_distance": om["orthogonal_distance"],
              "map_region": om["region"]}
    part = OutlierMap(sd_cutoff=float(om["sd_cutoff"]), od_cutoff=float(om["od_cutoff"]),
                      counts={r: int(om["counts"][r]) for r in REGIONS})
    return arrays, {"outlier_map": part}


def run_pcp(est, dataset, values, rep):
    from ..compare import lowrank_subspace
    X = rows_in_memory(dataset)
    est.fit(X, progress=rep.span(0, 0.95))
    h = est.history_
    arrays = {"low_rank": est.low_rank_, "sparse": est.sparse_,
              "history_residual": np.asarray(h["residual"]), "history_rank": np.asarray(h["rank"]),
              "history_nnz": np.asarray(h["nnz"])}
    score = est.sample_scores_
    # The estimator's own cut (its limit at alpha, median + 3 MAD, or the contamination's
    # quantile): flags == est.predict(X) == -1.
    outlier = score > -est.offset_
    decomposition = Decomposition(rank_of_L=int(est.rank_), lam=float(est.lam_), iterations=int(est.n_iter_),
                                  converged=bool(est.converged_), nnz_S=int(np.count_nonzero(est.sparse_)),
                                  mu=float(est.mu_), scaling=est.scaling_)
    outliers = Outliers(rule=PCP_RULE.describe(values), score="sparse_score",
                        n_flagged=int(outlier.sum()), n_samples=int(X.shape[0]))
    fields = dict(sample_scores={"sparse_score": score}, flags={"outlier": outlier}, arrays=arrays,
                  decomposition=decomposition, outliers=outliers)
    if int(est.rank_) == 0:
        # Nothing low-rank was found: no subspace to project onto or measure distances from.
        fields["no_outlier_map"] = ("robust PCA found no low-rank part (L = 0, S = X), so there is no "
                                    "subspace to measure distances from")
        return fields
    # The subspace of L: its PCP_DIRECTIONS leading directions at most.
    sub = lowrank_subspace(est.low_rank_, n_components=min(int(est.rank_), PCP_DIRECTIONS))
    arrays["projection"] = (X - sub["mean"]) @ sub["components"].T
    # The outlier map of X against L's subspace. The spread along each direction is robust
    # (1.4826 MAD of X's scores): L's own spread understates it along its weak directions (on
    # ODDS cardio every sample then lay beyond the score cut-off).
    T = arrays["projection"]
    mad = MAD_NORMAL * np.median(np.abs(T - np.median(T, axis=0)), axis=0)
    var = np.where(mad > 0, mad ** 2, T.var(axis=0, ddof=1))
    more, said = _outlier_map(X, sub["components"], sub["mean"], var, robust=True)
    arrays.update(more)
    fields["subspace"] = Subspace(components=sub["components"], mean=sub["mean"], rank_rule="rank of L",
                                  source="PCA of L", variances=var)
    fields.update(said)
    return fields
