"""Registry adapters for out-of-core data (a LazyDataset) and for the streaming method.

Each returns the same RunResult fields as its in-memory counterpart in robustcore/methods.py:
per-sample scores and flags, arrays, a summary. Per-sample results are numpy arrays when they
fit the memory budget of :func:`robustcore.bigdata.settings`, StoredRows (Zarr, sliced and
combined like numpy arrays) otherwise; the fitted estimator (the in-memory class: the same
estimator fits lazy input) is what the run's ``estimator`` holds.
"""
from __future__ import annotations

import numpy as np

from .._passes import count_true

__all__ = ["run_pca", "run_residual", "run_cop", "run_online_rpca"]

_LIMIT_ALPHA = 0.01   # as robustcore.methods


def _table(dataset):
    if getattr(dataset, "kind", "table") != "table":
        raise ValueError(f"'{dataset.name}' is a video opened out of core; run the streaming method "
                         f"(online-rpca) on it, or load the video into memory for this method")
    from .._passes import lazy_array
    return lazy_array(dataset)


def _params_for(cls, values):
    names = {p.name for p in cls._params}
    return {k: v for k, v in values.items() if k in names}


def _scored_fields(est, res, rule, extra_scores=None):
    """SPE, T², the outlier score (the larger of SPE and T² in units of their limits), the
    projection and the flags "SPE or T² above its limit" from the estimator's per-row results
    (``row_results``: one pass over X), as robustcore.methods._model_fields in memory."""
    n_out = count_true(res.outlier)
    scores = {"outlier_score": res.outlier_score, **(extra_scores or {}), "spe": res.spe, "t2": res.t2}
    flags = {"outlier": res.outlier, "outside_spe": res.outside_spe, "outside_t2": res.outside_t2}
    summary = {"outlier rule": rule, "SPE limit": float(est.spe_limit_), "T2 limit": float(est.t2_limit_),
               "flagged": n_out, "out of core": True}
    return scores, flags, res.projection, summary


def _rule(values, alpha):
    from .._outlier import contamination_rule
    c = values.get("contamination", "auto")
    return contamination_rule(c) if c != "auto" else f"SPE or T² above its limit (alpha = {alpha:g})"


def _rank(est, values):
    r = est.components_.shape[0]
    return f"{r} (scree elbow)" if values.get("n_components") is None else r


def run_pca(est, dataset, values, rep):
    from ..subspace.pca import PCA
    X = _table(dataset)
    est = PCA(**_params_for(PCA, values))
    res = est.fit_row_results(X, progress=rep)
    arrays = {"components": est.components_, "mean": est.mean_, "explained_variance": est.explained_variance_}
    summary = {"rank": _rank(est, values), "explained variance ratio": float(est.explained_variance_ratio_.sum())}
    notes = []
    if est.residual_eigenvalues_.size == 0:
        notes.append("no SPE/T² limits for this subspace: no residual is left")
        return dict(arrays=arrays, summary=summary, warnings=notes, estimator=est)
    scores, flags, proj, more = _scored_fields(est, res, _rule(values, _LIMIT_ALPHA))
    arrays["projection"] = proj
    summary.update(more)
    return dict(sample_scores=scores, flags=flags, arrays=arrays, summary=summary, warnings=notes, estimator=est)


def run_residual(est, dataset, values, rep):
    from ..anomaly import ResidualScorer
    X = _table(dataset)
    est = ResidualScorer(**_params_for(ResidualScorer, values))
    res = est.fit_row_results(X, progress=rep)
    scores, flags, proj, summary = _scored_fields(est, res, _rule(values, est.alpha))
    flags["outside_either"] = flags["outside_spe"] | flags["outside_t2"]
    summary = {"rank": _rank(est, values), "alpha": est.alpha, **summary}
    arrays = {"components": est.components_, "mean": est.mean_, "projection": proj}
    return dict(sample_scores=scores, flags=flags, arrays=arrays, summary=summary, estimator=est)


def run_cop(est, dataset, values, rep):
    """Coherence Pursuit, its SPE/T² limits calibrated inside the fit on all but the gross
    outliers (as in memory)."""
    from ..subspace.coherence_pursuit import CoherencePursuit
    X = _table(dataset)
    est = CoherencePursuit(**_params_for(CoherencePursuit, values))
    res = est.fit_row_results(X, progress=rep)
    scores, flags, proj, summary = _scored_fields(est, res, _rule(values, _LIMIT_ALPHA),
                                                  extra_scores={"coherence": res.extra["coherence"]})
    flags["selected"] = res.extra["selected"]
    flags["degenerate"] = res.extra["degenerate"]
    summary = {"rank": _rank(est, values), "selected inliers": count_true(res.extra["selected"]),
               "degenerate samples": count_true(res.extra["degenerate"]),
               "calibrated on": f"{est.calibration_indices_.size} samples (all but log-SPE outliers)", **summary}
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

    from .._outlier import flags_above, robust_threshold
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
