"""The registry's adapter of the streaming method (online-rpca): frames of a video opened out of
core, or an image stack in memory, through OR-PCA a batch at a time, with L, S and the mask in
memory when they fit the results' share of the memory budget of
:func:`robustcore.bigdata.settings` (the rule of the tables' per-row results,
:func:`robustcore.bigdata._rows.fits_in_memory`) and in a Zarr store otherwise.
(The table methods need no adapter of their own out of core: one estimator
fits numpy and lazy input, robustcore.methods.)
"""
from __future__ import annotations

import numpy as np

__all__ = ["run_online_rpca"]


def run_online_rpca(est, dataset, values, rep, rule):
    """Stream the frames (a video opened out of core, or an image stack in memory) through OR-PCA,
    flagged by the registry's ``rule`` (robustcore.methods.SPARSE_RULE: median + n_mad MAD).

    L, S and the mask go to memory when they fit the results' share of the memory budget beside
    the results already held, else to a Zarr store in the settings' ``store_dir`` (a temporary
    folder if none is set): the same rule whether the video was opened out of core or not.
    (2,000 frames of 320 x 240 from the command line: 1.38 GB of results under the 2 GiB
    budget were held in memory, and the run peaked at 1.7 GB; stored, about 0.5 GB.)
    """
    import tempfile
    import uuid
    from pathlib import Path

    from .._outlier import flags_above, robust_threshold
    from ._dask import get_settings
    from ._frames import as_frame_source
    from ._rows import fits_in_memory, hold
    from ._sink import FrameSink
    if dataset.is_lazy:
        if dataset.kind != "frames":
            raise ValueError(f"'{dataset.name}' is a table; the streaming method takes frames (a video or "
                             f"an image stack)")
        source = dataset.source
    else:
        source = as_frame_source(dataset)
    s = get_settings()
    need = FrameSink.estimate_bytes(source.n_frames, source.n_features, est.FIELDS)
    store = None
    if not fits_in_memory(need):
        root = Path(s.store_dir) if s.store_dir else Path(tempfile.mkdtemp(prefix="robust-studio-"))
        root.mkdir(parents=True, exist_ok=True)
        store = root / f"online-rpca-{uuid.uuid4().hex[:8]}.zarr"
    sink = FrameSink(source.n_frames, source.n_features, est.FIELDS, path=store,
                     frame_shape=source.display_shape)
    if sink.in_memory:
        for field in est.FIELDS:
            hold(sink.array(field))   # counted against the share while the result lives
    try:
        est.fit(source, progress=rep.span(0, 0.97), sink=sink)
    except BaseException:
        sink.abort()
        raise
    sink.close()
    from ..result import Outliers, Storage, Stream, Subspace
    score = est.sample_scores_
    cut = robust_threshold(score, rule.n_mad)
    h = est.history_
    arrays = {"low_rank": sink.array("low_rank"), "sparse": sink.array("sparse"), "mask": sink.array("mask"),
              "foreground_fraction": est.foreground_fraction_,
              "history_residual": np.asarray(h["residual"]),
              "history_rank": np.full(len(h["residual"]), est.n_components),
              "history_basis_change": np.asarray(h["basis_change"]), "history_frames": np.asarray(h["frames"])}
    stream = Stream(frames=int(source.n_frames), batches=len(h["frames"]), rank_of_L=int(est.n_components),
                    lambda1=float(est.lambda1_), lambda2=float(est.lambda2_), data_scale=float(est.scale_),
                    mask_threshold=float(est.mask_threshold_),
                    mean_foreground_share=float(np.mean(est.foreground_fraction_)),
                    last_basis_change=float(h["basis_change"][-1]))
    C = np.atleast_2d(est.components_)
    subspace = Subspace(components=C, mean=np.zeros(C.shape[1]), rank_rule="given", source="OR-PCA basis")
    flagged = flags_above(score, cut)
    outliers = Outliers(rule=rule.describe(values), score="sparse_score",
                        n_flagged=int(np.count_nonzero(flagged)), n_samples=int(source.n_frames))
    storage = Storage(out_of_core=dataset.is_lazy,
                      results_in="memory" if sink.in_memory else str(sink.path))
    return dict(sample_scores={"sparse_score": score}, flags={"outlier": flagged}, arrays=arrays,
                subspace=subspace, stream=stream, outliers=outliers, storage=storage)
