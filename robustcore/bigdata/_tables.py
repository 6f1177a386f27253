"""Tall tables on disk opened lazily as Dask arrays: HDF5 (h5py), Zarr, memory-mapped .npy.

Nothing is read when a table is opened except its header; blocks of rows are read when Dask
computes something from them. The readers for HDF5 and .npy open the file inside each block
read, so a block can be read in another process (a dask.distributed worker on this machine, or
on a cluster that sees the same path).
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np

from ._dask import get_settings, require_dask

__all__ = ["LazyTable", "open_table", "TABLE_SUFFIXES"]

TABLE_SUFFIXES = {".zarr": "zarr", ".h5": "hdf5", ".hdf5": "hdf5", ".he5": "hdf5", ".npy": "npy"}
# Rows per block aim at this many bytes of float64 (the dtype every block is computed in).
_BLOCK_BYTES = 64 << 20


def _err(msg):
    from ..datasets._errors import LoadError
    return LoadError(msg)


class _H5Rows:
    """Row-block reader of an HDF5 dataset that opens the file per read (picklable)."""

    def __init__(self, path: str, name: str, shape, dtype):
        self.path, self.name = path, name
        self.shape, self.dtype, self.ndim = tuple(shape), np.dtype(dtype), len(shape)

    def __getitem__(self, key):
        import h5py
        with h5py.File(self.path, "r") as f:
            return f[self.name][key]


class _NpyRows:
    """Row-block reader of a .npy file through a read-only memory map opened per read (picklable)."""

    def __init__(self, path: str, shape, dtype):
        self.path = path
        self.shape, self.dtype, self.ndim = tuple(shape), np.dtype(dtype), len(shape)

    def __getitem__(self, key):
        a = np.load(self.path, mmap_mode="r", allow_pickle=False)
        return np.array(a[key])


class LazyTable:
    """A (n_samples, n_features) table on disk, as a Dask array of row blocks.

    Attributes: ``array`` (the Dask array, in the file's dtype), ``path``, ``format``
    ("zarr", "hdf5", "npy" or "array"), ``component`` (the dataset / array name inside the
    file), ``shape``, ``dtype``, ``chunk_rows``, ``disk_bytes`` (bytes on disk).
    """

    def __init__(self, array, path=None, format="array", component=None, disk_bytes=None):
        if array.ndim != 2:
            raise _err(f"a table must be 2-D (samples x features); got shape {array.shape}")
        if array.dtype.kind not in "biuf":
            raise _err(f"a table must hold numbers; got dtype {array.dtype}")
        if array.numblocks[1] != 1:
            array = array.rechunk({1: -1})      # every block holds whole rows
        self.array = array
        self.path = None if path is None else str(path)
        self.format = format
        self.component = component
        self.disk_bytes = disk_bytes

    @property
    def shape(self):
        return tuple(int(v) for v in self.array.shape)

    @property
    def dtype(self):
        return self.array.dtype

    @property
    def chunk_rows(self) -> int:
        return int(self.array.chunks[0][0])

    @property
    def nbytes(self) -> int:
        """Bytes of the whole table as float64 (what loading it into memory would take)."""
        n, d = self.shape
        return n * d * 8

    def describe(self) -> dict:
        from ..datasets._loader import format_bytes
        n, d = self.shape
        out = {"samples": n, "features": d, "stored as": f"{self.format} ({self.dtype})"}
        if self.component:
            out["array"] = self.component
        if self.disk_bytes is not None:
            out["on disk"] = format_bytes(self.disk_bytes)
        out["in memory as float64"] = format_bytes(self.nbytes)
        out["chunking"] = f"{self.array.numblocks[0]} blocks of {self.chunk_rows} rows"
        out["memory budget"] = format_bytes(get_settings().memory_budget)
        return out

    def fingerprint(self) -> str:
        """Identity of the table without reading it: path, sizes and modification times of its
        files (a content hash would cost a full pass over the data)."""
        h = hashlib.sha256()
        h.update(f"{self.format}|{self.component}|{self.shape}|{self.dtype}".encode())
        if self.path:
            p = Path(self.path)
            files = sorted(p.rglob("*")) if p.is_dir() else [p]
            for f in files:
                if f.is_file():
                    st = f.stat()
                    h.update(f"{f.relative_to(p.parent)}|{st.st_size}|{st.st_mtime_ns}".encode())
        else:
            from dask.base import tokenize
            h.update(tokenize(self.array).encode())
        return "shallow:" + h.hexdigest()


def _rows_per_block(d: int, align: int | None = None, chunk_rows: int | None = None) -> int:
    if chunk_rows is not None:
        return max(1, int(chunk_rows))
    rows = max(1, _BLOCK_BYTES // (8 * max(d, 1)))
    if align and align > 0:
        rows = max(align, (rows // align) * align)
    return rows


def _disk_size(p: Path) -> int:
    if p.is_dir():
        return sum(f.stat().st_size for f in p.rglob("*") if f.is_file())
    return p.stat().st_size


def _pick(candidates: dict, what: str, where: str, option: str = "dataset"):
    two_d = {k: v for k, v in candidates.items() if len(v[0]) == 2}
    if len(two_d) == 1:
        return next(iter(two_d))
    listing = ", ".join(f"{k} {tuple(v[0])}" for k, v in candidates.items()) or "none"
    if not two_d:
        raise _err(f"{where} holds no 2-D {what} (found: {listing}); a table must be samples x features")
    raise _err(f"{where} holds several 2-D {what}s ({listing}); choose one with {option}=NAME")


def open_table(path, dataset: str | None = None, chunk_rows: int | None = None) -> LazyTable:
    """Open an HDF5 file, a Zarr store or a .npy file as a lazy table.

    Parameters
    ----------
    path : str or Path
        ``.h5``/``.hdf5``/``.he5``, a ``.zarr`` store (folder), or ``.npy``.
    dataset : str, optional
        The 2-D array inside an HDF5 file or Zarr group; needed only when there are several.
    chunk_rows : int, optional
        Rows per Dask block; default about 64 MB of float64, aligned to the file's own chunks.

    Raises :class:`~robustcore.datasets.LoadError` naming the problem.
    """
    da = require_dask().array
    p = Path(os.fspath(path))
    if not p.exists():
        raise _err(f"no such file or folder: {p}")
    kind = TABLE_SUFFIXES.get(p.suffix.lower())
    if kind is None and p.is_dir():
        kind = "zarr"
    if kind is None:
        raise _err(f"{p.name}: out-of-core tables are HDF5 (.h5, .hdf5), Zarr (.zarr) or .npy files")
    if kind == "npy":
        try:
            a = np.load(p, mmap_mode="r", allow_pickle=False)
        except ValueError as exc:
            raise _err(f"{p.name} cannot be memory-mapped ({exc}); save it with numpy.save") from None
        except OSError as exc:
            raise _err(f"{p.name} is not a readable .npy file ({exc})") from None
        if a.ndim != 2:
            raise _err(f"{p.name} holds an array of shape {a.shape}; a table must be 2-D (samples x features)")
        rows = _rows_per_block(a.shape[1], None, chunk_rows)
        reader = _NpyRows(str(p), a.shape, a.dtype)
        arr = da.from_array(reader, chunks=(rows, a.shape[1]), name=f"npy-{_token(p)}",
                            meta=np.empty((0, 0), a.dtype), asarray=False)
        return LazyTable(arr, p, "npy", None, _disk_size(p))
    if kind == "hdf5":
        try:
            import h5py
        except ImportError:
            raise _err("reading HDF5 needs h5py, which is not installed; install the extra: "
                       "pip install -e \".[big]\"") from None
        try:
            with h5py.File(p, "r") as f:
                found = {}
                f.visititems(lambda name, obj: found.__setitem__(name, (obj.shape, obj.dtype, obj.chunks))
                             if isinstance(obj, h5py.Dataset) else None)
                name = dataset if dataset is not None else _pick(found, "dataset", p.name)
                if name not in found:
                    raise _err(f"{p.name} has no dataset {name!r}; it has: {', '.join(found) or 'none'}")
                shape, dtype, h5chunks = found[name]
        except OSError as exc:
            raise _err(f"{p.name} is not a readable HDF5 file ({exc})") from None
        if len(shape) != 2:
            raise _err(f"{p.name}:{name} has shape {shape}; a table must be 2-D (samples x features)")
        rows = _rows_per_block(shape[1], h5chunks[0] if h5chunks else None, chunk_rows)
        reader = _H5Rows(str(p), name, shape, dtype)
        arr = da.from_array(reader, chunks=(rows, shape[1]), name=f"h5-{_token(p, name)}",
                            meta=np.empty((0, 0), dtype), asarray=False)
        return LazyTable(arr, p, "hdf5", name, _disk_size(p))
    try:
        import zarr
    except ImportError:
        raise _err("reading Zarr needs zarr, which is not installed; install the extra: "
                   "pip install -e \".[big]\"") from None
    try:
        node = zarr.open(str(p), mode="r")
    except Exception as exc:  # zarr raises several types for a folder that is not a store
        raise _err(f"{p} is not a readable Zarr store ({type(exc).__name__}: {exc})") from None
    if hasattr(node, "shape"):
        component, z = None, node
    else:
        found = {}
        for name, arr in _zarr_arrays(node):
            found[name] = (arr.shape, arr.dtype, arr.chunks)
        component = dataset if dataset is not None else _pick(found, "array", p.name)
        if component not in found:
            raise _err(f"{p.name} has no array {component!r}; it has: {', '.join(found) or 'none'}")
        z = node[component]
    if len(z.shape) != 2:
        raise _err(f"{p.name} holds an array of shape {z.shape}; a table must be 2-D (samples x features)")
    rows = _rows_per_block(z.shape[1], z.chunks[0], chunk_rows)
    arr = da.from_zarr(str(p), component=component, chunks=(rows, z.shape[1]))
    return LazyTable(arr, p, "zarr", component, _disk_size(p))


def _zarr_arrays(group, prefix=""):
    for name, arr in group.arrays():
        yield prefix + name, arr
    for name, sub in group.groups():
        yield from _zarr_arrays(sub, prefix + name + "/")


def _token(p: Path, *extra) -> str:
    st = p.stat()
    return hashlib.sha1(f"{p.resolve()}|{st.st_size}|{st.st_mtime_ns}|{extra}".encode()).hexdigest()[:16]
