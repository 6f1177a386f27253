"""Tall tables on disk opened lazily as Dask arrays: HDF5, Zarr, .npy, within the policy.

Opening reads headers and metadata only, and applies the bounded-resource policy of
:mod:`robustcore.datasets._limits` before anything large is read: only regular files (no FIFO,
device or socket, also behind a symlink), the declared width against ``max_features``, one
decoded chunk and one block of rows (as float64) against the memory budget, no data outside the
file or store (:mod:`._hdf5`, :mod:`._zarr`), no object dtype, and a ``.npy`` file must hold
exactly the bytes its header declares. Blocks of rows are read when Dask computes something from
them, by readers that open the file per read (so a block can be read in another process, a
dask.distributed worker on this machine or on a cluster that sees the same path), each chunk
decoded to exactly its declared size (:mod:`._codecs`); a missing chunk is an error naming it.
Declared rows, blocks and chunk reads are charged before the graph is made (:mod:`._bounds`).
"""
from __future__ import annotations

import hashlib
import os
import sys
import threading
from pathlib import Path

import numpy as np

from ..datasets._errors import LoadError, listing, shown
from ..datasets._limits import (DEFAULT_MAX_FEATURES, MAX_BYTES, MAX_FEATURES, check_features, open_regular,
                                regular_file)
from ._bounds import block_rows, check_chunk_reads
from ._dask import get_settings, require_dask

__all__ = ["LazyTable", "open_table", "TABLE_SUFFIXES", "NpyReader", "ReadAhead"]

TABLE_SUFFIXES = {".zarr": "zarr", ".h5": "hdf5", ".hdf5": "hdf5", ".he5": "hdf5", ".npy": "npy"}
_NPY_HEADER_LIMIT = 10000


def _err(msg):
    return LoadError(msg)


class NpyReader:
    """Rows of a 2-D ``.npy`` file, read as bytes at their offset (picklable: path and numbers).

    The header is parsed without pickle; the file must hold exactly the bytes the header
    declares (a truncated file, or a header that claims another shape, is refused at open).
    """

    def __init__(self, path):
        self.path = str(path)
        name = os.path.basename(self.path)
        fmt = np.lib.format
        with open_regular(self.path, name) as fh:
            try:
                version = fmt.read_magic(fh)
                read = {(1, 0): fmt.read_array_header_1_0, (2, 0): fmt.read_array_header_2_0}.get(version)
                if read is None:
                    raise ValueError(f"format version {version} is not one this program reads (1.0, 2.0)")
                shape, fortran, dtype = read(fh, max_header_size=_NPY_HEADER_LIMIT)
            except (ValueError, OSError, SyntaxError, EOFError) as exc:
                raise _err(f"{name} is not a readable .npy file ({exc}); save it with numpy.save") from None
            self.offset = fh.tell()
            size = os.fstat(fh.fileno()).st_size
        if dtype.hasobject:
            raise _err(f"{name} holds Python objects (dtype {dtype}), which are never loaded (that would "
                       f"run pickle); save the numbers as a numeric array")
        if dtype.kind not in "biuf" or dtype.fields is not None or dtype.subdtype is not None:
            raise _err(f"{name} holds {dtype}; a table must hold numbers (bool, int, uint, float)")
        if len(shape) != 2:
            raise _err(f"{name} holds an array of shape {shape}; a table must be 2-D (samples x features)")
        self.shape, self.dtype, self.fortran = tuple(int(v) for v in shape), np.dtype(dtype), bool(fortran)
        self.stored = size - self.offset

    @property
    def ndim(self) -> int:
        return 2

    def check(self, budget: int) -> None:
        """The file must hold exactly the bytes its header declares (no chunks: a block is the
        bytes of its rows, within the budget by its number of rows)."""
        need = int(np.prod(self.shape, dtype=object)) * self.dtype.itemsize
        if self.stored != need:
            how = "truncated" if self.stored < need else "longer than its header says"
            raise _err(f"{os.path.basename(self.path)} is {how}: its header declares {self.shape} {self.dtype} = "
                       f"{need:,} bytes of values, the file holds {self.stored:,}; it is damaged. Copy or save "
                       f"it again")

    def read_ahead(self) -> ReadAhead | None:
        """A :class:`ReadAhead` of the values (not started), for a pass that reads them all; None
        for a column-major file, or one larger than half the memory available now (its pages
        would evict one another before the pass reached them)."""
        if self.fortran or self.stored > _available_memory() // 2:
            return None
        return ReadAhead(self.path, self.offset, self.stored)

    def read(self, start: int, stop: int) -> np.ndarray:
        n, d = self.shape
        name = os.path.basename(self.path)
        if self.fortran:
            # Column-major: a block of rows is strided over the whole file; a read-only memory map
            # of the file (opened after the regular-file check) copies just those rows.
            with open_regular(self.path, name) as fh:
                m = np.memmap(fh, dtype=self.dtype, mode="r", offset=self.offset, shape=self.shape, order="F")
                return np.array(m[start:stop])
        out = _BUFFERS.take((stop - start) * d * self.dtype.itemsize).view(self.dtype).reshape(stop - start, d)
        with open_regular(self.path, name) as fh:
            fh.seek(self.offset + start * d * self.dtype.itemsize)
            got = fh.readinto(memoryview(out.reshape(-1).view(np.uint8))) if out.size else 0
        if got != out.nbytes:
            raise _err(f"{name} is truncated: rows {start}-{stop - 1} end past the end of the file (it changed "
                       f"while it was read?); copy it again")
        return out


class _Buffers:
    """Memory for blocks read from a file (and for the per-row outputs of a pass's blocks:
    ``_OUTPUTS``), reused once nothing refers to it any more.

    A block freshly allocated is memory the kernel has not mapped yet: each of its pages costs a
    fault when the read first writes it (30M x 50 float32, two passes: 12 GB of blocks, about
    40 % of the reads' CPU). A block's array and every view of it refer to its buffer (numpy's
    base), so a buffer whose only references are this pool's is free: a later read of the same
    size or less takes it. At most ``keep`` buffers are kept (the blocks a pass holds at once on
    a machine of a few cores); beyond them reads allocate as before."""

    # references to a free buffer seen inside take(): the pool's list, the comprehension's name
    # and getrefcount's own argument
    _FREE = 3

    def __init__(self, keep: int = 4):
        self.keep = keep
        self._bufs: list[np.ndarray] = []
        self._lock = threading.Lock()

    def take(self, nbytes: int) -> np.ndarray:
        """A uint8 array of ``nbytes`` (contents undefined) that nothing else refers to."""
        with self._lock:
            # the smallest free buffer that holds nbytes: blocks of several sizes (a pass's
            # outputs) each find their own
            free = [b for b in self._bufs if b.size >= nbytes and sys.getrefcount(b) == self._FREE]
            if free:
                return min(free, key=lambda b: b.size)[:nbytes]
            buf = np.empty(nbytes, np.uint8)
            if len(self._bufs) < self.keep:
                self._bufs.append(buf)
            return buf[:nbytes]

    def clear(self) -> None:
        with self._lock:
            self._bufs.clear()


_BUFFERS = _Buffers()
# The per-row outputs of each block of a pass (Rows.map out of core: at 30M rows the residual
# pass alone makes 1.7 GB of them, 8 MB of projections and 1.3 MB of SPE a block), reused as the
# read blocks are: made afresh, glibc handed them fresh pages in some runs and not in others
# (a 30M command: 116,000 to 454,000 page faults; with the pool 112,000-117,000). Emptied after
# each pass, as the read blocks are: kept across the steps between passes, the two pools raised
# the 30M command's peak from 836 to 905 MB.
_OUTPUTS = _Buffers(keep=8)


class ReadAhead:
    """A thread that asks the kernel to read a file's bytes into the page cache, in file order,
    a piece at a time (posix_fadvise WILLNEED: each call queues the reads and returns), while
    the pass computes: the first pass over a table that is not cached then reads while it
    computes, whatever order Dask takes its blocks in. Only a hint: a refused call, or a system
    without fadvise, changes nothing. :meth:`stop` (the pass ended, or was cancelled) ends it
    after the piece it is at."""

    PIECE = 64 << 20

    def __init__(self, path: str, offset: int, length: int, advise=None):
        self.path, self.offset, self.length = path, int(offset), int(length)
        self.advise = advise or getattr(os, "posix_fadvise", None)
        self.pieces = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="table read-ahead", daemon=True)

    def start(self) -> ReadAhead:
        if self.advise is not None and self.length > 0:
            self._thread.start()
        return self

    def _run(self) -> None:
        try:
            with open_regular(self.path, os.path.basename(self.path)) as fh:
                end = self.offset + self.length
                for at in range(self.offset, end, self.PIECE):
                    if self._stop.is_set():
                        return
                    self.advise(fh.fileno(), at, min(self.PIECE, end - at), os.POSIX_FADV_WILLNEED)
                    self.pieces += 1
        except (OSError, LoadError):
            return    # a hint: the pass reads (and reports) the file itself

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)


def _available_memory() -> int:
    """Bytes of memory the system could give now (MemAvailable), or 0 when unknown."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _read_block(reader, start: int, stop: int) -> np.ndarray:
    return reader.read(start, stop)


def _table_array(reader, rows: int, name: str):
    """The Dask array (n, d) of ``reader``'s rows, ``rows`` per block, one read task per block
    (:func:`._digest.read_task`: never fused, so the content digest shares each read)."""
    import dask.array as da
    from dask.highlevelgraph import HighLevelGraph

    from ._digest import read_task
    n, d = reader.shape
    starts = range(0, n, rows) or range(1)     # at most MAX_BLOCKS (._bounds.block_rows)
    layer = {}
    for i, s in enumerate(starts):
        layer[(name, i, 0)] = read_task((name, i, 0), _read_block, reader, s, min(s + rows, n))
    chunks = (tuple(min(s + rows, n) - s for s in starts), (d,))
    graph = HighLevelGraph.from_collections(name, layer, dependencies=())
    return da.Array(graph, name, chunks, meta=np.empty((0, 0), reader.dtype))


class LazyTable:
    """A (n_samples, n_features) table on disk, as a Dask array of row blocks.

    Attributes: ``array`` (the Dask array, in the file's dtype), ``path``, ``format``
    ("zarr", "hdf5", "npy" or "array"), ``component`` (the dataset / array name inside the
    file), ``shape``, ``dtype``, ``chunk_rows``, ``disk_bytes`` (bytes on disk),
    ``content_digest`` (None until a computation has read the whole table from its file, see
    :mod:`._digest`; always None for a table of an array in memory), ``options`` (the options
    it was opened with).
    """

    content_digest: str | None = None
    expected_digest = None

    def __init__(self, array, path=None, format="array", component=None, disk_bytes=None, reader=None,
                 options=None):
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
        self.reader = reader
        self.options = dict(options or {})
        if reader is not None:
            from ._digest import register
            register(self)

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
        out["chunking"] = f"{self.array.numblocks[0]:,} blocks of {self.chunk_rows:,} rows"
        out["memory budget"] = format_bytes(get_settings().memory_budget)
        if self.content_digest:
            hash_name = self.content_digest.split("-", 1)[0]     # xxh3-blocks:... -> xxh3
            out["content digest"] = f"{hash_name} {self.content_digest.rsplit(':', 1)[-1][:16]}…"
        return out

    def fingerprint(self) -> str:
        """Identity of the table without reading it: path, sizes and modification times of its
        files (a content hash would cost a full pass over the data)."""
        h = hashlib.sha256()
        h.update(f"{self.format}|{self.component}|{self.shape}|{self.dtype}".encode())
        if self.path:
            p = Path(self.path)
            for f, st in _files(p):
                h.update(f"{f.relative_to(p.parent)}|{st.st_size}|{st.st_mtime_ns}".encode())
        else:
            from dask.base import tokenize
            h.update(tokenize(self.array).encode())
        return "shallow:" + h.hexdigest()


_MAX_NESTING = 64     # folders within folders a store may have (Zarr's own nesting is a few levels)


def _files(p: Path):
    """(path, lstat) of ``p`` or of every file in the folder ``p`` (links not followed), walked
    without recursion and refused past :data:`_MAX_NESTING` levels (a chain of 1,200 folders)."""
    if not p.is_dir():
        yield p, p.stat()
        return
    todo = [(p, 0)]
    while todo:
        folder, depth = todo.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name, reverse=True)
        except OSError:
            continue
        for e in entries:
            try:
                if e.is_dir(follow_symlinks=False):
                    if depth >= _MAX_NESTING:
                        raise _err(f"{p.name} nests folders more than {_MAX_NESTING} deep ({e.path}); it is not "
                                   f"a store this program reads")
                    todo.append((Path(e.path), depth + 1))
                else:
                    yield Path(e.path), e.stat(follow_symlinks=False)
            except OSError:
                continue


def _disk_size(p: Path) -> int:
    return sum(st.st_size for _, st in _files(p))


def _pick(candidates: dict, what: str, where: str, option: str = "dataset"):
    two_d = {k: v for k, v in candidates.items() if len(v[0]) == 2}
    if len(two_d) == 1:
        return next(iter(two_d))
    found = listing([f"{k} {tuple(v[0])}" for k, v in candidates.items()])
    if not two_d:
        raise _err(f"{where} holds no 2-D {what} (found: {found}); a table must be samples x features")
    raise _err(f"{where} holds several 2-D {what}s ({found}); choose one with {option}=NAME")


def open_table(path, dataset: str | None = None, chunk_rows: int | None = None,
               missing_chunks: str = "error", max_features: int | None = None,
               max_bytes: int | None = None) -> LazyTable:
    """Open an HDF5 file, a Zarr store or a .npy file as a lazy table, within the policy.

    Parameters
    ----------
    path : str or Path
        ``.h5``/``.hdf5``/``.he5``, a ``.zarr`` store (folder), or ``.npy``.
    dataset : str, optional
        The 2-D array inside an HDF5 file or Zarr group; needed only when there are several.
    chunk_rows : int, optional
        Rows per Dask block; default about 64 MB of float64, aligned to the file's own chunks.
    missing_chunks : "error" or "fill"
        A chunk the store or file does not hold is an error naming it (default), or, with
        "fill", the array's fill value (for stores written without their empty chunks).
    max_features : int, optional
        Refuse a table declaring more columns (default that of the in-memory loaders, 2**24).
    max_bytes : int, optional
        The memory one decoded chunk and one block of rows (as float64) may take; default the
        out-of-core memory budget (:func:`robustcore.bigdata.settings`).

    Raises :class:`~robustcore.datasets.LoadError` naming the problem.
    """
    require_dask()
    try:
        budget = MAX_BYTES.validate(max_bytes) if max_bytes is not None else int(get_settings().memory_budget)
        limit = MAX_FEATURES.validate(max_features) if max_features is not None else DEFAULT_MAX_FEATURES
    except ValueError as exc:
        raise _err(str(exc)) from None
    try:
        p = Path(os.fspath(path))
    except TypeError:
        raise _err(f"path must be a file or folder path; got {shown(path)}") from None
    if not os.path.lexists(p):
        raise _err(f"no such file or folder: {p}")
    p = regular_file(p, allow_dir=True)
    kind = TABLE_SUFFIXES.get(p.suffix.lower())
    if kind is None and p.is_dir():
        kind = "zarr"
    if kind is None:
        raise _err(f"{p.name}: out-of-core tables are HDF5 (.h5, .hdf5), Zarr (.zarr) or .npy files")
    if kind == "zarr" and not p.is_dir():
        raise _err(f"{p} is a file; a Zarr store is a folder")
    if kind != "zarr" and p.is_dir():
        raise _err(f"{p} is a folder; a {kind} table is a file")
    if not isinstance(missing_chunks, str) or missing_chunks not in ("error", "fill"):
        raise _err(f"missing_chunks must be 'error' or 'fill'; got {shown(missing_chunks)}")
    if dataset is not None and not isinstance(dataset, str):
        raise _err(f"dataset must be the name of an array inside the file; got {shown(dataset)}")
    align, component = None, None
    if kind == "npy":
        reader = NpyReader(p)
    elif kind == "hdf5":
        from ._hdf5 import open_h5
        reader = open_h5(p, dataset, _pick)
        reader.missing = missing_chunks
        component, align = reader.name, (reader.chunks[0] if reader.chunks else None)
    else:
        from ._zarr import ZarrReader, find_arrays
        found = find_arrays(p)
        if None in found:
            if dataset not in (None, ""):
                raise _err(f"{p.name} is a single array; it has no array {shown(dataset)} inside")
            component = None
        else:
            shapes = {k: (tuple(m["shape"]) if isinstance(m.get("shape"), list) else (),)
                      for k, (m, _) in found.items()}
            component = dataset if dataset is not None else _pick(shapes, "array", p.name)
            if component not in found:
                raise _err(f"{p.name} has no array {shown(component)}; it has: {listing(found)}")
        meta, fmt = found[component]
        reader = ZarrReader(p, component, meta, fmt, missing_chunks)
        if len(reader.shape) != 2:
            raise _err(f"{p.name} holds an array of shape {reader.shape}; a table must be 2-D (samples x features)")
        align = reader.chunks[0]
    n, d = reader.shape
    label = p.name + (f":{component}" if component else "")
    check_features(d, limit, label, "its declared shape")   # rows are not limited: they stay on disk
    reader.check(budget)
    rows = block_rows(n, d, align, chunk_rows, budget, label)
    if getattr(reader, "chunks", None):
        check_chunk_reads(n, d, rows, reader.chunks, reader.dtype.itemsize, label)
    options = {"dataset": dataset, "chunk_rows": chunk_rows, "missing_chunks": missing_chunks}
    token = _token(p, component, rows, missing_chunks)
    arr = _table_array(reader, rows, f"{kind}-{token}")
    return LazyTable(arr, p, kind, component, _disk_size(p), reader=reader,
                     options={k: v for k, v in options.items() if v is not None and v != "error"})


def _token(p: Path, *extra) -> str:
    st = p.stat()
    return hashlib.sha1(f"{p.resolve()}|{st.st_size}|{st.st_mtime_ns}|{extra}".encode()).hexdigest()[:16]
