"""Per-row results of out-of-core work (scores, flags): in memory when they fit the budget,
otherwise in a Zarr store under the settings' ``store_dir`` (or a temporary folder)."""
from __future__ import annotations

import tempfile
import uuid
from pathlib import Path

import numpy as np

from ._dask import compute, get_settings, require_dask

__all__ = ["materialize", "as_dask_rows"]


def materialize(arrays: dict, progress=None, message: str = "scores", name: str = "rows") -> dict:
    """Compute 1-D or 2-D Dask arrays (rows first) in one pass over their common inputs.

    Returns name -> numpy array when all of them together fit in the memory budget, else
    name -> Zarr array (read by slices like a numpy array) in a new store.
    """
    require_dask()
    import dask.array as da
    total = sum(int(np.prod(a.shape)) * a.dtype.itemsize for a in arrays.values())
    s = get_settings()
    keys = list(arrays)
    if total <= s.memory_budget:
        vals = compute(*[arrays[k] for k in keys], progress=progress, message=message)
        return dict(zip(keys, vals))
    import zarr
    root = Path(s.store_dir) if s.store_dir else Path(tempfile.mkdtemp(prefix="robust-studio-"))
    root.mkdir(parents=True, exist_ok=True)
    path = root / f"{name}-{uuid.uuid4().hex[:8]}.zarr"
    group = zarr.open_group(str(path), mode="w")
    targets = []
    for k in keys:
        a = arrays[k]
        chunks = (a.chunks[0][0],) + tuple(a.shape[1:])
        make = group.create_array if hasattr(group, "create_array") else group.create_dataset
        targets.append(make(k, shape=a.shape, dtype=a.dtype, chunks=chunks))
    stored = da.store([arrays[k] for k in keys], targets, lock=False, compute=False)
    compute(stored, progress=progress, message=message)
    return {k: zarr.open_group(str(path), mode="r")[k] for k in keys}


def as_dask_rows(values, row_chunks):
    """A stored per-row array (numpy or Zarr) as a Dask array whose row blocks are ``row_chunks``
    (a tuple of block lengths, e.g. another array's ``chunks[0]``, so blocks line up)."""
    import dask.array as da
    chunks = (tuple(row_chunks),) + tuple((s,) for s in values.shape[1:])
    if isinstance(values, np.ndarray):
        return da.from_array(values, chunks=chunks)
    return da.from_zarr(values, chunks=chunks)
