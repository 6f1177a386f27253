"""Beyond memory: lazy frame sources and tables, a per-frame result sink, and out-of-core
estimators on Dask.

Frames (video and image stacks, for streaming methods): :class:`FrameSource`,
:class:`ArrayFrames`, ``robustcore.datasets.open_video`` (PyAV), results in a
:class:`FrameSink` (memory or Zarr) read back with :func:`open_frame_store`.

Either kind as a data set the registry's out-of-core adapters take: :func:`open_lazy` ->
:class:`LazyDataset` (shape, on-disk size, chunking, provenance; no ``X`` in memory).

Tables (PCA, SPE/T², Coherence Pursuit ℓ2 out of core): :func:`open_table` (HDF5, Zarr,
memory-mapped .npy) -> :class:`LazyTable`, given as it is to ``robustcore.PCA``,
``ResidualScorer`` or ``CoherencePursuit`` (the same estimators as in memory: their fits run in
passes over blocks of rows either way); per-row results beyond the memory budget come back as
:class:`StoredRows` (Zarr); :func:`settings` chooses the scheduler (local threads or a
dask.distributed address) and where large results go; :func:`compute` runs a graph with
progress and Cancel; :func:`median` and :func:`order_statistics` are exact order statistics of
Dask arrays in two passes.

Every source opened out of core goes through the bounded-resource policy of the in-memory
loaders (:mod:`robustcore.datasets._limits`): see :mod:`._tables`. Its content digest
(:func:`content_digest`, :func:`describe_digest`, :func:`expect_digest`) is taken in the first
pass that reads it whole (:mod:`._digest`); :func:`check_address` checks a scheduler address.

Dask, Zarr and h5py are imported only when used (the ``big`` extra installs them).
"""
from ._dask import DEFAULT_MEMORY_BUDGET, Settings, check_address, compute, get_settings, settings
from ._frames import ArrayFrames, FrameSource, as_frame_source
from ._sink import FrameSink, open_frame_store

__all__ = ["FrameSource", "ArrayFrames", "as_frame_source", "FrameSink", "open_frame_store",
           "Settings", "settings", "get_settings", "compute", "DEFAULT_MEMORY_BUDGET",
           "open_table", "LazyTable", "StoredRows", "materialize", "median", "order_statistics",
           "open_lazy", "LazyDataset", "content_digest", "describe_digest", "expect_digest",
           "DataChangedError", "check_address"]

_LAZY = {"open_table": "._tables", "LazyTable": "._tables", "median": "._reductions",
         "order_statistics": "._reductions", "materialize": "._rows", "StoredRows": "._rows",
         "open_lazy": "._lazy", "LazyDataset": "._lazy", "content_digest": "._dask",
         "describe_digest": "._digest", "expect_digest": "._digest", "DataChangedError": "._digest"}


def __getattr__(name):
    if name in _LAZY:
        import importlib
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
