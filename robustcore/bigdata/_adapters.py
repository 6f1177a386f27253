"""Registry adapters for out-of-core data (a LazyDataset) and for the streaming method.

Each returns the same RunResult fields as its in-memory counterpart in robustcore/methods.py:
per-sample scores and flags, arrays, a summary. Per-sample results are numpy arrays when they
fit the memory budget of :func:`robustcore.bigdata.settings`, Zarr arrays (sliced like numpy
arrays) otherwise; the fitted estimator (a Dask* class) is what the run's ``estimator`` holds.
"""
from __future__ import annotations

import numpy as np

from ._dask import compute
from ._rows import as_dask_rows, materialize

__all__ = ["run_pca", "run_residual", "run_cop", "run_online_rpca"]

def _table(dataset):
    if getattr(dataset, "kind", "table") != "table":
        raise ValueError(f"'{dataset.name}' is a video opened out of core; run the streaming method "
                         f"(online-rpca) on it, or load the video into memory for this method")
    from .estimators import as_dask
    return as_dask(dataset.source)


def _params_for(cls, values):
    names = {p.name for p in cls._params}
    return {k: v for k, v in values.items() if k in names}


def _scored_fields(X, est, rep, rule, values, source, extra_scores=None) -> dict:
    """SPE, T², the outlier score (the larger of SPE and T² in units of their limits), the
    projection and the flags "SPE or T² above its limit", in one pass over X, from the fitted
    estimator's own limits (as robustcore.methods._model_fields in memory)."""
    import dask.array as da

    from ..result import Limits, Outliers, Storage, Subspace
    from .estimators import lazy_spe_t2, project
    spe, t2 = lazy_spe_t2(est, X)
    score = da.maximum(spe / est.spe_limit_, t2 / est.t2_limit_)
    proj = project(X, est.components_, est.mean_)
    out_spe, out_t2 = spe > est.spe_limit_, t2 > est.t2_limit_
    outlier = score > -est.offset_
    rows = materialize({"outlier_score": score, "spe": spe, "t2": t2, "projection": proj, "outlier": outlier,
                        "outside_spe": out_spe, "outside_t2": out_t2, "outside_either": out_spe | out_t2},
                       progress=rep, message="scores", name="scores")
    n_out = int(compute(da.count_nonzero(as_dask_rows(rows["outlier"], X.chunks[0])), message="counting")[0])
    n = int(X.shape[0])
    from ..methods import _rank_rule
    return {"sample_scores": {"outlier_score": rows["outlier_score"], **(extra_scores or {}),
                              "spe": rows["spe"], "t2": rows["t2"]},
            "flags": {k: rows[k] for k in ("outlier", "outside_spe", "outside_t2")},
            "arrays": {"projection": rows["projection"]},
            "subspace": Subspace(components=est.components_, mean=est.mean_, rank_rule=_rank_rule(values),
                                 source=source, variances=est.variances_),
            "limits": Limits(spe=float(est.spe_limit_), t2=float(est.t2_limit_), alpha=rule.alpha_for(values),
                             spe_method=str(est.spe_limit_method_), calibration_rows=n),
            "outliers": Outliers(rule=rule.describe(values), score="outlier_score", n_flagged=n_out, n_samples=n),
            "storage": Storage(out_of_core=True, results_in=_where(rows)),
            "rows": rows}


def _where(rows) -> str:
    """"memory", or the folder of the Zarr store holding the per-row results."""
    for v in rows.values():
        if not isinstance(v, np.ndarray):
            store = getattr(v, "store", None)
            root = getattr(store, "root", None) or getattr(store, "path", None)
            return str(root) if root is not None else "a Zarr store"
    return "memory"


def run_pca(est, dataset, values, rep):
    from ..methods import LIMITS_RULE, _rank_rule
    from ..result import Storage, Subspace
    from .estimators import DaskPCA
    X = _table(dataset)
    est = DaskPCA(**_params_for(DaskPCA, values))
    est.fit(X, progress=rep.span(0, 0.5))
    explained = float(est.explained_variance_ratio_.sum())
    if est.residual_eigenvalues_.size == 0:
        why = "the subspace has full rank, so no residual is left: SPE is 0 and has no limit"
        sub = Subspace(components=est.components_, mean=est.mean_, rank_rule=_rank_rule(values), source="PCA",
                       variances=est.variances_, explained_variance_ratio=explained)
        return dict(arrays={"explained_variance": est.explained_variance_}, subspace=sub, no_limits=why,
                    storage=Storage(out_of_core=True), warnings=[f"no SPE/T² limits for this subspace: {why}"],
                    estimator=est)
    fields = _scored_fields(X, est, rep.span(0.5, 1.0), LIMITS_RULE, values, "PCA")
    fields.pop("rows")
    fields["subspace"].explained_variance_ratio = explained
    fields["arrays"]["explained_variance"] = est.explained_variance_
    return dict(fields, estimator=est)


def run_residual(est, dataset, values, rep):
    from ..methods import RESIDUAL_RULE
    from .estimators import DaskResidualScorer
    X = _table(dataset)
    est = DaskResidualScorer(**_params_for(DaskResidualScorer, values))
    est.fit(X, progress=rep.span(0, 0.5))
    fields = _scored_fields(X, est, rep.span(0.5, 1.0), RESIDUAL_RULE, values, "PCA")
    rows = fields.pop("rows")
    fields["flags"]["outside_either"] = rows["outside_either"]
    return dict(fields, estimator=est)


def run_cop(est, dataset, values, rep):
    """Coherence Pursuit, its SPE/T² limits calibrated inside the fit on all but the gross
    outliers (as in memory)."""
    import dask.array as da

    from ..methods import LIMITS_RULE
    from ..result import Selection
    from .estimators import DaskCoherencePursuit
    X = _table(dataset)
    est = DaskCoherencePursuit(**_params_for(DaskCoherencePursuit, values))
    est.fit(X, progress=rep.span(0, 0.6))
    fields = _scored_fields(X, est, rep.span(0.6, 1.0), LIMITS_RULE, values, "Coherence Pursuit",
                            extra_scores={"coherence": est.coherence_})
    fields.pop("rows")
    fields["flags"]["selected"] = est.selected_
    fields["flags"]["degenerate"] = est.degenerate_
    degenerate = as_dask_rows(est.degenerate_, X.chunks[0])
    n_deg = int(compute(da.count_nonzero(degenerate), message="counting")[0])
    n_sel = int(compute(da.count_nonzero(as_dask_rows(est.selected_, X.chunks[0])), message="counting")[0])
    fields["selection"] = Selection(selected=n_sel, degenerate=n_deg)
    fields["limits"].calibration_rows = int(est.n_calibration_)
    fields["limits"].calibration = "all but log-SPE outliers"
    return dict(fields, estimator=est)


def run_online_rpca(est, dataset, values, rep):
    """Stream the frames (a video opened out of core, or an image stack in memory) through OR-PCA.

    L, S and the mask go to memory when they take at most the memory budget, else to a Zarr
    store in the settings' ``store_dir`` (a temporary folder if none is set).
    """
    import tempfile
    import uuid
    from pathlib import Path

    from ..compare import flags_above, robust_threshold
    from ._dask import get_settings
    from ._frames import as_frame_source
    from ._sink import FrameSink
    if getattr(dataset, "is_lazy", False):
        if dataset.kind != "frames":
            raise ValueError(f"'{dataset.name}' is a table; the streaming method takes frames (a video or "
                             f"an image stack)")
        source = dataset.source
    else:
        source = as_frame_source(dataset)
    s = get_settings()
    need = FrameSink.estimate_bytes(source.n_frames, source.n_features, est.FIELDS)
    store = None
    if need > s.memory_budget:
        root = Path(s.store_dir) if s.store_dir else Path(tempfile.mkdtemp(prefix="robust-studio-"))
        root.mkdir(parents=True, exist_ok=True)
        store = root / f"online-rpca-{uuid.uuid4().hex[:8]}.zarr"
    sink = FrameSink(source.n_frames, source.n_features, est.FIELDS, path=store,
                     frame_shape=source.display_shape)
    try:
        est.fit(source, progress=rep.span(0, 0.97), sink=sink)
    except BaseException:
        sink.abort()
        raise
    sink.close()
    from ..result import Outliers, Storage, Stream, Subspace
    score = est.sample_scores_
    cut = robust_threshold(score)
    h = est.history_
    arrays = {"low_rank": sink.array("low_rank"), "sparse": sink.array("sparse"), "mask": sink.array("mask"),
              "foreground_fraction": est.foreground_fraction_,
              "history_residual": np.asarray(h["residual"]), "history_rank": np.full(len(h["residual"]), est.n_components),
              "history_basis_change": np.asarray(h["basis_change"]), "history_frames": np.asarray(h["frames"])}
    stream = Stream(frames=int(source.n_frames), batches=len(h["frames"]), rank_of_L=int(est.n_components),
                    lambda1=float(est.lambda1_), lambda2=float(est.lambda2_), data_scale=float(est.scale_),
                    mask_threshold=float(est.mask_threshold_),
                    mean_foreground_share=float(np.mean(est.foreground_fraction_)),
                    last_basis_change=float(h["basis_change"][-1]))
    C = np.atleast_2d(est.components_)
    subspace = Subspace(components=C, mean=np.zeros(C.shape[1]), rank_rule="given", source="OR-PCA basis")
    flagged = flags_above(score, cut)
    outliers = Outliers(rule="sparse-part score above median + 3 MAD", score="sparse_score",
                        n_flagged=int(np.count_nonzero(flagged)), n_samples=int(source.n_frames))
    storage = Storage(out_of_core=bool(getattr(dataset, "is_lazy", False)),
                      results_in="memory" if sink.in_memory else str(sink.path))
    return dict(sample_scores={"sparse_score": score}, flags={"outlier": flagged}, arrays=arrays,
                subspace=subspace, stream=stream, outliers=outliers, storage=storage)
