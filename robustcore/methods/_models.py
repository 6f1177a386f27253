"""The adapters of the subspace models (PCA, Coherence Pursuit, ROBPCA, SPE/T² scoring): one fit
of their per-row results (``fit_row_results``: passes over the rows, in memory or out of core),
turned into the result's fields by one function (``_model_fields``), from the estimator's own
control limits.

Each adapter fits the estimator on the data set and returns the RunResult's fields: per-sample
dicts and the typed parts of robustcore.result; ``robustcore.methods._assemble`` adds the rest.
"""
from __future__ import annotations

import numpy as np

from ..datasets._kind import is_lazy_dataset
from ..result import Limits, OutlierMap, Outliers, Selection, Storage, Subspace
from ._rules import LIMITS_RULE, RESIDUAL_RULE, ROBPCA_RULE

__all__ = ["rows_in_memory", "run_pca", "run_cop", "run_robpca", "run_residual"]


def rows_in_memory(dataset, accept_sparse=False):
    """The rows in memory, sparse data densified unless ``accept_sparse``; the dense copy and the
    fit's working copies were charged against the fit budget by :meth:`Method.run` first."""
    import scipy.sparse as sp
    if accept_sparse or not sp.issparse(dataset.X):
        return dataset.X
    return dataset.dense()


def _adjustment(est) -> dict:
    """Limits' ``adjustment`` and ``factor`` from the estimator's ``limit_calibration_``."""
    rec = getattr(est, "limit_calibration_", None) or {}
    return {"adjustment": str(rec.get("action", "kept")), "factor": float(rec.get("factor", 1.0))}


def _rank_rule(values, name="n_components") -> str:
    return "scree elbow" if values.get(name) is None else "given"


def _scaling_of(est) -> dict:
    """The estimator's scaling as Subspace fields (its arrays only when it scaled its input)."""
    c, s = est.scale_center_, est.scale_
    scaled = c.any() or not np.all(s == 1.0)
    return {"scaling": est.scaling_, "scale_center": c if scaled else None, "scale": s if scaled else None}


def _rows(dataset):
    """The rows a table method fits: the data in memory, or the table opened out of core (which
    the same estimators fit a block of rows at a time; the registry's ``lazy_kinds`` let only
    tables through)."""
    return dataset if dataset.is_lazy else rows_in_memory(dataset)


def _model_fields(est, X, rows, *, rule, values, source, rank_rule, calibration_text="all samples",
                  explained=False, own_cutoffs=False) -> dict:
    """The result fields of a fitted subspace model (PCA, Coherence Pursuit, the SPE/T² scorer)
    from its per-row results ``rows`` (``fit_row_results``: one pass over X, in memory or out of
    core), all from the estimator's own control limits: ``flags["outlier"]``, the estimator's
    ``predict`` and the views' rings are one rule.

    What needs the rows themselves (the planes the SPE/T² map offers, the outlier map) is made
    when the data and the per-row results are in memory. ``explained``: the model has an explained
    variance ratio; ``own_cutoffs``: its own (SD, OD) cut-offs for the outlier map (ROBPCA's
    ``sd_cutoff_``, ``od_cutoff_``), instead of robustcore.outlier_map's rule."""
    from .._passes import count_true
    C, m = np.atleast_2d(est.components_), est.mean_
    lazy = is_lazy_dataset(X)
    fields = {"sample_scores": rows.scores, "flags": rows.flags, "arrays": {"projection": rows.projection},
              "warnings": []}
    ratio = float(est.explained_variance_ratio_.sum()) if explained else None
    fields["subspace"] = Subspace(components=C, mean=m, rank_rule=rank_rule, source=source,
                                  variances=est.variances_, explained_variance_ratio=ratio,
                                  **_scaling_of(est))
    n = int(X.n_samples if lazy else X.shape[0])
    # (out of core Coherence Pursuit's indices are made when first read: only their count here)
    sized = getattr(est, "_calibration_size", None)
    calibration = None if lazy or sized is None else est.calibration_indices_
    n_calibration = sized() if sized is not None else n
    if est.residual_eigenvalues_.size == 0:
        # Full rank: nothing is left off the subspace, so SPE is 0 and only T² can flag.
        why = "the subspace has full rank, so no residual is left: SPE is 0 and has no limit"
        fields["warnings"].append(f"no SPE limit for this subspace: {why}")
        fields["no_limits"] = why
    else:
        plane = direction = None
        if not lazy:
            from ..compare import principal_plane, residual_direction
            Z = est._scaled(X)
            Zc = Z if calibration is None else Z[calibration]
            plane, direction = principal_plane(Zc), residual_direction(Zc, C, m)
        fields["limits"] = Limits(spe=float(est.spe_limit_), t2=float(est.t2_limit_), alpha=rule.alpha_for(values),
                                  spe_method=str(est.spe_limit_method_),
                                  calibration_rows=n_calibration,
                                  calibration=calibration_text, data_plane=plane, residual_direction=direction,
                                  **_adjustment(est))
    fields["outliers"] = Outliers(rule=rule.describe(values), score="outlier_score",
                                  n_flagged=count_true(rows.outlier), n_samples=n)
    # in memory or on disk alike (an out-of-core fit's distances are per-row results too)
    from ..outlier_map import outlier_map_of_scores
    try:
        om = outlier_map_of_scores(rows.spe, rows.t2, rows.projection, robust=sized is not None,
                                   cutoffs=(est.sd_cutoff_, est.od_cutoff_) if own_cutoffs else None,
                                   variances=est.variances_)
    except ValueError as exc:   # a flat component: no score distance along it
        fields["no_outlier_map"] = str(exc)
    else:
        fields["arrays"].update(score_distance=om["score_distance"], orthogonal_distance=om["orthogonal_distance"],
                                map_region=om["region"])
        fields["outlier_map"] = OutlierMap(sd_cutoff=float(om["sd_cutoff"]), od_cutoff=float(om["od_cutoff"]),
                                           counts=dict(om["counts"]))
    if lazy or not rows.in_memory:
        fields["storage"] = Storage(out_of_core=lazy, results_in=_results_folder(rows),
                                    passes=int(getattr(rows, "passes", 0) or 0))
    return fields


def _results_folder(rows) -> str:
    """"memory", or the folder of the store holding the per-row results."""
    for v in (rows.spe, rows.projection, *rows.extra.values()):
        if not isinstance(v, np.ndarray):
            store = getattr(v, "store", None)
            root = getattr(store, "root", None) or getattr(store, "path", None)
            return str(root) if root is not None else "a Zarr store"
    return "memory"


def _fit(est, dataset, values, rep, **model):
    """Fit the model's per-row results on the data set's rows (one pass or a few, in memory or
    out of core): ``(X, rows, fields)``, the fields from :func:`_model_fields`."""
    X = _rows(dataset)
    rows = est.fit_row_results(X, progress=rep)
    return X, rows, _model_fields(est, X, rows, values=values, **model)


def run_pca(est, dataset, values, rep):
    _, _, fields = _fit(est, dataset, values, rep, rule=LIMITS_RULE, source="PCA", rank_rule=_rank_rule(values),
                        explained=True)
    fields["arrays"]["explained_variance"] = est.explained_variance_
    return fields


def run_cop(est, dataset, values, rep):
    from .._passes import count_true
    _, rows, fields = _fit(est, dataset, values, rep, rule=LIMITS_RULE, source="Coherence Pursuit",
                           rank_rule=_rank_rule(values), calibration_text="all but log-SPE outliers")
    fields["selection"] = Selection(selected=count_true(rows.extra["selected"]),
                                    degenerate=count_true(rows.extra["degenerate"]))
    return fields


def run_robpca(est, dataset, values, rep):
    _, _, fields = _fit(est, dataset, values, rep, rule=ROBPCA_RULE, source="ROBPCA",
                        rank_rule="given" if values.get("n_components") is not None else "80 % rule",
                        calibration_text="all samples (robust cut-offs)",
                        explained=True, own_cutoffs=True)
    fields["arrays"]["explained_variance"] = est.explained_variance_
    return fields


def run_residual(est, dataset, values, rep):
    from .._passes import count_true
    X, _, fields = _fit(est, dataset, values, rep, rule=RESIDUAL_RULE, source="PCA", rank_rule=_rank_rule(values))
    if not dataset.is_lazy:
        # Its map offers the plane the scorer itself chose (the feature axes of 2-D data).
        if fields.get("limits") is not None:
            fields["limits"].data_plane = np.atleast_2d(np.asarray(est.plane_, dtype=float))
        fields["arrays"]["contributions"] = est.contributions(X)
    flags = fields["flags"]
    out_spe, out_t2 = flags["outside_spe"], flags["outside_t2"]
    flags["outside_either"] = out_spe | out_t2
    fields["outliers"].spe_only = count_true(out_spe & ~out_t2)
    fields["outliers"].t2_only = count_true(out_t2 & ~out_spe)
    return fields
