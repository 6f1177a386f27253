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

_LIMIT_ALPHA = 0.01   # as robustcore.methods


def _table(dataset):
    if getattr(dataset, "kind", "table") != "table":
        raise ValueError(f"'{dataset.name}' is a video opened out of core; run the streaming method "
                         f"(online-rpca) on it, or load the video into memory for this method")
    from .estimators import as_dask
    return as_dask(dataset.source)


def _params_for(cls, values):
    names = {p.name for p in cls._params}
    return {k: v for k, v in values.items() if k in names}


def _scored_fields(X, est, rep, rule, extra_scores=None):
    """SPE, T², the outlier score (the larger of SPE and T² in units of their limits), the
    projection and the flags "SPE or T² above its limit", in one pass over X, from the fitted
    estimator's own limits (as robustcore.methods._model_fields in memory)."""
    import dask.array as da

    from .estimators import lazy_spe_t2, project
    spe, t2 = lazy_spe_t2(est, X)
    score = da.maximum(spe / est.spe_limit_, t2 / est.t2_limit_)
    proj = project(X, est.components_, est.mean_)
    out_spe, out_t2 = spe > est.spe_limit_, t2 > est.t2_limit_
    outlier = score > -est.offset_
    rows = materialize({"outlier_score": score, "spe": spe, "t2": t2, "projection": proj, "outlier": outlier,
                        "outside_spe": out_spe, "outside_t2": out_t2}, progress=rep, message="scores",
                       name="scores")
    n_out = int(compute(da.count_nonzero(as_dask_rows(rows["outlier"], X.chunks[0])), message="counting")[0])
    scores = {"outlier_score": rows["outlier_score"], **(extra_scores or {}), "spe": rows["spe"], "t2": rows["t2"]}
    flags = {k: rows[k] for k in ("outlier", "outside_spe", "outside_t2")}
    summary = {"outlier rule": rule, "SPE limit": float(est.spe_limit_), "T2 limit": float(est.t2_limit_),
               "flagged": n_out, "out of core": True}
    return scores, flags, rows["projection"], summary


def _rule(values, alpha):
    from ..methods import contamination_rule
    c = values.get("contamination", "auto")
    return contamination_rule(c) if c != "auto" else f"SPE or T² above its limit (alpha = {alpha:g})"


def _rank(est, values):
    r = est.components_.shape[0]
    return f"{r} (scree elbow)" if values.get("n_components") is None else r


def run_pca(est, dataset, values, rep):
    from .estimators import DaskPCA
    X = _table(dataset)
    est = DaskPCA(**_params_for(DaskPCA, values))
    est.fit(X, progress=rep.span(0, 0.5))
    arrays = {"components": est.components_, "mean": est.mean_, "explained_variance": est.explained_variance_}
    summary = {"rank": _rank(est, values), "explained variance ratio": float(est.explained_variance_ratio_.sum())}
    notes = []
    if est.residual_eigenvalues_.size == 0:
        notes.append("no SPE/T² limits for this subspace: no residual is left")
        return dict(arrays=arrays, summary=summary, warnings=notes, estimator=est)
    scores, flags, proj, more = _scored_fields(X, est, rep.span(0.5, 1.0), _rule(values, _LIMIT_ALPHA))
    arrays["projection"] = proj
    summary.update(more)
    return dict(sample_scores=scores, flags=flags, arrays=arrays, summary=summary, warnings=notes, estimator=est)


def run_residual(est, dataset, values, rep):
    from .estimators import DaskResidualScorer
    X = _table(dataset)
    est = DaskResidualScorer(**_params_for(DaskResidualScorer, values))
    est.fit(X, progress=rep.span(0, 0.5))
    scores, flags, proj, summary = _scored_fields(X, est, rep.span(0.5, 1.0), _rule(values, est.alpha))
    flags["outside_either"] = flags["outside_spe"] | flags["outside_t2"]
    summary = {"rank": _rank(est, values), "alpha": est.alpha, **summary}
    arrays = {"components": est.components_, "mean": est.mean_, "projection": proj}
    return dict(sample_scores=scores, flags=flags, arrays=arrays, summary=summary, estimator=est)


def run_cop(est, dataset, values, rep):
    """Coherence Pursuit, its SPE/T² limits calibrated inside the fit on all but the gross
    outliers (as in memory)."""
    import dask.array as da

    from .estimators import DaskCoherencePursuit
    X = _table(dataset)
    est = DaskCoherencePursuit(**_params_for(DaskCoherencePursuit, values))
    est.fit(X, progress=rep.span(0, 0.6))
    scores, flags, proj, summary = _scored_fields(X, est, rep.span(0.6, 1.0), _rule(values, _LIMIT_ALPHA),
                                                  extra_scores={"coherence": est.coherence_})
    flags["selected"] = est.selected_
    flags["degenerate"] = est.degenerate_
    degenerate = as_dask_rows(est.degenerate_, X.chunks[0])
    n_deg = int(compute(da.count_nonzero(degenerate), message="counting")[0])
    n_sel = int(compute(da.count_nonzero(as_dask_rows(est.selected_, X.chunks[0])), message="counting")[0])
    summary = {"rank": _rank(est, values), "selected inliers": n_sel, "degenerate samples": n_deg,
               "calibrated on": f"{est.n_calibration_} samples (all but log-SPE outliers)", **summary}
    arrays = {"components": est.components_, "mean": est.mean_, "projection": proj}
    return dict(sample_scores=scores, flags=flags, arrays=arrays, summary=summary, estimator=est)


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
    score = est.sample_scores_
    cut = robust_threshold(score)
    h = est.history_
    arrays = {"low_rank": sink.array("low_rank"), "sparse": sink.array("sparse"), "mask": sink.array("mask"),
              "components": est.components_, "foreground_fraction": est.foreground_fraction_,
              "history_residual": np.asarray(h["residual"]), "history_rank": np.full(len(h["residual"]), est.n_components),
              "history_basis_change": np.asarray(h["basis_change"]), "history_frames": np.asarray(h["frames"])}
    summary = {"frames": source.n_frames, "batches": len(h["frames"]), "rank of L": int(est.n_components),
               "lambda1": est.lambda1_, "lambda2": est.lambda2_, "data scale": est.scale_,
               "mask threshold": est.mask_threshold_,
               "mean foreground share": float(np.mean(est.foreground_fraction_)),
               "last basis change": float(h["basis_change"][-1]),
               "results in": "memory" if sink.in_memory else str(sink.path),
               "outlier rule": "sparse-part score above median + 3 MAD", "flagged": int((score > cut).sum())}
    return dict(sample_scores={"sparse_score": score}, flags={"outlier": flags_above(score, cut)},
                arrays=arrays, summary=summary)
