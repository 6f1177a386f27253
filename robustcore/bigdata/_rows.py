"""Per-row results of out-of-core work (scores, flags, projections): in memory when they fit the
memory budget, otherwise in a Zarr store under the settings' ``store_dir`` (or a temporary folder).

A stored result is a :class:`StoredRows`: sliced like a numpy array (a slice reads only its
chunks), and combined like one: ``a | b``, ``~a``, ``a > 1.0``, ``a / 2`` are computed block by
block into a new result, kept in memory or stored by the same budget rule, so code written for
numpy results (``flags["outside_spe"] | flags["outside_t2"]``) works on stored ones too.
Reductions (``sum``, ``any``, ``count_nonzero``, ``max``...) read the store block by block.
"""
from __future__ import annotations

import operator
import os
import shutil
import tempfile
import threading
import uuid
import weakref
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from . import _direct_io
from ._dask import compute, get_settings, require_dask

__all__ = ["materialize", "fill_rows", "aligned_step", "in_slices", "sliceable", "row_slices", "sliced_indices",
           "as_dask_rows", "held_rows", "StoredRows", "store_bytes", "hold", "held_bytes", "result_codecs"]


def store_bytes(arrays: dict) -> int:
    return sum(int(np.prod(a.shape)) * np.dtype(a.dtype).itemsize for a in arrays.values())


def result_codecs(dtype, working: bool = False) -> dict:
    """Keyword arguments of Zarr's ``create_array`` for a per-row result of ``dtype``, wherever
    one is stored (here, and the command line's METHOD-results.zarr): no compression for floats
    (their mantissas are noise: zstd cost time and saved 3 %); the default (zstd) for flags and
    integers, which compress well. A ``working`` result (an intermediate a fit reads back a few
    times in slices, never one of its outputs: the calibration rows' masks, the indices made from
    them) is never compressed: its chunks are then plain files (:class:`RawChunks`), where zstd
    through Zarr's pipeline cost every write and every sweep over it. Every chunk is written,
    even one of only the fill value: Zarr's check for those compares every value written (about
    40 % of an uncompressed write's CPU), and a store with all its chunks never reads as one
    with some missing."""
    codecs = {"compressors": None} if working or np.dtype(dtype).kind == "f" else {}
    return {**codecs, "config": {"write_empty_chunks": True}}


# Per-row results held in memory take at most this share of the memory budget: the rest is for
# the blocks being read and computed and the arrays derived from the results (30M x 50 float32
# from the command line: results up to the whole 2 GB budget peaked at 4.6 GB; up to half, at
# 1.5 GB, and 2.0 GB once the passes ran on both cores; up to 0.4, at 1.8 GB;
# benchmarks/results_bigdata.md).
RESULTS_SHARE = 0.4

# The share counts every per-row result out-of-core work holds in memory, not each call's alone:
# one fit makes many (Coherence Pursuit at 30M rows: coherence, flags, selected and calibration
# indices, scores: 1.2 GB together, each under the share), and the peak is their sum. Arrays are
# counted while alive (weakref.finalize drops them when freed).
_held: dict[int, int] = {}
_held_lock = threading.Lock()
_held_ids = iter(range(1 << 62))


def _release(key):
    with _held_lock:
        _held.pop(key, None)


def hold(a):
    """Count the numpy array ``a`` (a per-row result kept in memory) against the results' share
    of the memory budget while it is alive; returns ``a``."""
    if isinstance(a, np.ndarray) and a.nbytes:
        with _held_lock:
            key = next(_held_ids)
            _held[key] = int(a.nbytes)
        weakref.finalize(a, _release, key)
    return a


def held_bytes() -> int:
    """Bytes of the per-row results held in memory now (those passed to :func:`hold`)."""
    with _held_lock:
        return sum(_held.values())


def fits_in_memory(nbytes: int) -> bool:
    """Whether ``nbytes`` more of per-row results may be held in memory (:data:`RESULTS_SHARE`
    of the memory budget, with those already held)."""
    return nbytes + held_bytes() <= RESULTS_SHARE * get_settings().memory_budget


def _split_by_budget(arrays: dict) -> tuple[list, list]:
    """(names held in memory, names stored): the smallest results first, each kept in memory
    while it fits the results' share beside those already held and those kept before it. A
    fit's small scores stay in memory (where order statistics and flags are numpy operations)
    while a wide result beside them (projections, r floats a row) goes to disk."""
    mem, stored, used = [], [], 0
    for k in sorted(arrays, key=lambda k: store_bytes({k: arrays[k]})):
        size = store_bytes({k: arrays[k]})
        if not stored and fits_in_memory(used + size):
            mem.append(k)
            used += size
        else:
            stored.append(k)
    return mem, stored


def materialize(arrays: dict, progress=None, message: str = "scores", name: str = "rows", also=(), direct=()):
    """Compute 1-D or 2-D Dask arrays (rows first) in one pass over their common inputs.

    Returns name -> numpy array for those that fit in :data:`RESULTS_SHARE` of the memory
    budget beside the results already held (:func:`fits_in_memory`; the smallest first), and
    name -> :class:`StoredRows` for the rest, in a new Zarr store written under ``NAME.partial``
    and renamed into place when complete (a store under its own name is always whole).
    ``also``: Dask values computed in the same pass (sharing its tasks); then
    ``(that dict, [their values])``. ``direct``: the names of results read at most once more,
    whose chunks, if stored, are written around the page cache (:class:`RawChunks`).
    """
    require_dask()
    import dask.array as da
    s = get_settings()
    also = list(also)
    mem, keep_out = _split_by_budget(arrays)
    out = {}
    if s.client is not None:
        # a cluster's workers cannot write into this process's arrays: they send the blocks
        sources, targets = [], []
    else:
        # each block is written into the result as it is made and freed (threads of this
        # process): computing the arrays would hold every block until the end and then their
        # concatenation, twice the result
        out = {k: hold(np.empty(arrays[k].shape, arrays[k].dtype)) for k in mem}
        sources, targets = [arrays[k] for k in mem], [out[k] for k in mem]
    store = _NewStore(name) if keep_out else None
    for k in keep_out:
        a = arrays[k]
        t = store.array(k, a.shape, a.dtype, max(a.chunks[0]), direct=k in direct)
        sources.append(a.rechunk((chunks_of(t),) + tuple((v,) for v in a.shape[1:])))
        targets.append(t)
    try:
        stored = da.store(sources, targets, lock=False, compute=False) if sources else None
        lead = [stored] if stored is not None else []
        sent = [arrays[k] for k in mem] if s.client is not None else []
        vals = compute(*lead, *sent, *also, progress=progress, message=message)[len(lead):]
    except BaseException:
        if store is not None:
            store.abandon()
        raise
    if s.client is not None:
        out = {k: hold(v) for k, v in zip(mem, vals[:len(mem)])}
        vals = vals[len(mem):]
    if store is not None:
        out.update(store.finish(keep_out))
    out = {k: out[k] for k in arrays}
    return (out, list(vals)) if also else out


def fill_rows(fn, spec: dict, arrays, *, name: str = "rows", step: int = 1 << 20, stored=(),
              working: bool = False, direct=()) -> dict:
    """Per-row results ``fn(*row slices of arrays) -> {name: values}`` of numpy per-row
    ``arrays`` (of one length), without Dask: slices of ``step`` rows written into results held
    in memory or stored, by :func:`materialize`'s budget rule; the names in ``stored`` always
    stored (an intermediate read a few times in slices, which would only raise the memory peak);
    ``working``: the results are intermediates, stored uncompressed (:func:`result_codecs`);
    ``direct``: as :func:`materialize`'s.
    ``spec``: name -> (dtype, trailing shape). (Element-wise work on results already in memory
    gains nothing from Dask's blocks, only their scheduling.)"""
    n = int(arrays[0].shape[0])
    step = aligned_step(arrays, step)
    shapes = {k: SimpleNamespace(shape=(n,) + tuple(tail), dtype=np.dtype(dt)) for k, (dt, tail) in spec.items()}
    mem, keep_out = _split_by_budget({k: v for k, v in shapes.items() if k not in stored})
    keep_out += [k for k in shapes if k in stored]
    out = {k: hold(np.empty(shapes[k].shape, shapes[k].dtype)) for k in mem}
    store = _NewStore(name, working) if keep_out else None
    # stored results in the chunks of the stored inputs: a later sweep over both then reads
    # whole chunk files of each (aligned_step); with chunks of two lengths every slice went
    # through Zarr's own reads (30M rows: the training T² and the calibration after it)
    chunk = _common_chunk(arrays) or max(1, min(step, n))
    try:
        targets = dict(out)
        for k in keep_out:
            targets[k] = store.array(k, shapes[k].shape, shapes[k].dtype, chunk, direct=k in direct)
        for s0 in range(0, n, step):
            res = fn(*[a[s0:s0 + step] for a in arrays])
            for k in spec:
                targets[k][s0:s0 + step] = res[k]
    except BaseException:
        if store is not None:
            store.abandon()
        raise
    if store is not None:
        out.update(store.finish(keep_out))
    return {k: out[k] for k in spec}


def in_slices(values) -> bool:
    """Whether ``values`` are per-row results read by plain slicing (numpy, or stored:
    :class:`StoredRows`), not a Dask array."""
    return isinstance(values, (np.ndarray, StoredRows))


def sliceable(values, name: str = "rows"):
    """``values`` as per-row results read by slicing: numpy and :class:`StoredRows` as they are;
    a Dask array (or anything with ``to_dask``) computed once into a result held or stored by
    the budget's rule (:func:`materialize`). Every step after a fit's passes reads its per-row
    results this way, in plain slices, in memory, out of core and with a cluster alike (a
    cluster's results are held in this process or stored where it reads them)."""
    if values is None or in_slices(values):
        return values
    return materialize({name: _lift(values)}, name=name)[name]


def row_slices(arrays, step: int = 1 << 20):
    """(start, [each array's rows start:start + step]) over per-row ``arrays`` of one length
    (None entries stay None), in whole chunks of the stored ones (:func:`aligned_step`)."""
    n = int(next(a for a in arrays if a is not None).shape[0])
    step = aligned_step([a for a in arrays if a is not None], step)
    for s0 in range(0, n, step):
        yield s0, [None if a is None else a[s0:s0 + step] for a in arrays]


def sliced_indices(mask, step: int = 1 << 22, chunk: int = 1 << 20):
    """np.flatnonzero of a per-row bool result read by slicing (numpy or stored), in two sweeps
    of plain slices (counts, then the indices): in memory when they fit the results' share of
    the budget (:func:`fits_in_memory`), else stored as a new per-row result, written in whole
    chunks of ``chunk`` indices (a Zarr write across a chunk's edge reads and rewrites it: at
    30M rows that cost 1 s of CPU and 150 MB more than whole chunks)."""
    total = sum(int(np.count_nonzero(m)) for _, (m,) in row_slices([mask], step))
    if fits_in_memory(total * np.dtype(np.intp).itemsize):
        out, store = np.empty(total, np.intp), None
    else:
        store = _NewStore("indices", working=True)
        out = store.array("indices", (total,), np.intp, max(1, min(chunk, total)))
    try:
        buf, fill, at = np.empty(max(1, min(chunk, total)), np.intp), 0, 0
        for s0, (m,) in row_slices([mask], step):
            idx = np.flatnonzero(m)
            idx += s0
            while idx.size:
                take = min(buf.size - fill, idx.size)
                buf[fill:fill + take] = idx[:take]
                fill, idx = fill + take, idx[take:]
                if fill == buf.size:
                    out[at:at + fill] = buf
                    at, fill = at + fill, 0
        if fill:
            out[at:at + fill] = buf[:fill]
    except BaseException:
        if store is not None:
            store.abandon()
        raise
    return hold(out) if store is None else store.finish(["indices"])["indices"]


def _common_chunk(arrays) -> int | None:
    """The one chunk length (rows) of the stored arrays among ``arrays``, or None (none stored,
    or several lengths)."""
    chunks = {int(a.z.chunks[0]) for a in arrays if isinstance(a, StoredRows)}
    return chunks.pop() if len(chunks) == 1 else None


def aligned_step(arrays, step: int) -> int:
    """``step`` rounded to whole chunks of the stored arrays among ``arrays`` when they share
    one chunk length (their slices are then read as whole chunk files, :class:`RawChunks`);
    ``step`` itself otherwise."""
    c = _common_chunk(arrays)
    if c is None:
        return step
    return max(1, step // c) * c


class _NewStore:
    """A Zarr store of per-row results, written under ``NAME.partial`` and renamed into place
    once complete (a store under its own name is always whole)."""

    def __init__(self, name: str, working: bool = False):
        import zarr
        self.working = working       # result_codecs' rule
        s = get_settings()
        root = Path(s.store_dir) if s.store_dir else Path(tempfile.mkdtemp(prefix="robust-studio-"))
        root.mkdir(parents=True, exist_ok=True)
        self.path = root / f"{name}-{uuid.uuid4().hex[:8]}.zarr"
        self.partial = self.path.with_name(self.path.name + ".partial")
        self.group = zarr.open_group(str(self.partial), mode="w")

    def array(self, key, shape, dtype, chunk_rows: int, direct: bool = False):
        """A new array; ``direct``: read at most once more (RawChunks' ``direct``)."""
        chunks = (int(chunk_rows),) + tuple(shape[1:])
        if hasattr(self.group, "create_array"):
            z = self.group.create_array(key, shape=shape, dtype=dtype, chunks=chunks,
                                         **result_codecs(dtype, self.working))
            return RawChunks(z, direct) if RawChunks.takes(z) else z
        return self.group.create_dataset(key, shape=shape, dtype=dtype, chunks=chunks)   # zarr 2

    def abandon(self):
        shutil.rmtree(self.partial, ignore_errors=True)

    def finish(self, keys) -> dict:
        import zarr
        os.replace(self.partial, self.path)
        _direct_io.moved(str(self.partial), str(self.path))
        group = zarr.open_group(str(self.path), mode="r")
        return {k: StoredRows(group[k]) for k in keys}


class RawChunks:
    """Whole chunks of an uncompressed Zarr v3 array in a local store, written and read as the
    very files Zarr writes (the chunk's bytes, little-endian, C order, an edge chunk padded with
    the fill value, under ``c/i/0...``), without Zarr's codec pipeline and event loop: 240 MB of
    float64 results in 1.3 MB chunks took 0.5-0.9 s of CPU to write through Zarr and 0.14-0.5 s
    as plain writes. Any other selection is Zarr's own read or write.

    ``direct``: chunks are written around the page cache (:mod:`._direct_io`), for a result
    read at most once more; the chunks of such an array are read so too, by any RawChunks of
    it in this process."""

    def __init__(self, z, direct: bool = False):
        self.z = z
        self.direct = direct
        self.shape, self.dtype, self.chunks = tuple(z.shape), np.dtype(z.dtype), tuple(z.chunks)
        self.folder = os.path.join(str(z.store.root), z.path, "c")
        self.fill = np.asarray(z.fill_value, dtype=self.dtype)

    @staticmethod
    def takes(z) -> bool:
        """Whether ``z`` stores a chunk as its raw bytes in a file of its own (see the class doc)."""
        try:
            from zarr.codecs import BytesCodec
            from zarr.storage import LocalStore
            md = z.metadata
            enc = md.chunk_key_encoding
            return (md.zarr_format == 3 and isinstance(z.store, LocalStore) and not z.compressors
                    and not z.filters and isinstance(z.serializer, BytesCodec)
                    and (z.dtype.itemsize == 1 or str(getattr(z.serializer.endian, "value", "")) == "little")
                    and type(enc).__name__ == "DefaultChunkKeyEncoding" and enc.separator == "/"
                    and tuple(z.chunks[1:]) == tuple(z.shape[1:]) and len(z.shape) >= 1 and z.shape[0] > 0)
        except (ImportError, AttributeError, TypeError, ValueError):   # another Zarr: its own reads and writes
            return False

    def _rows_of(self, key):
        """(start, stop) of a selection of whole chunks of rows and every trailing entry, or None."""
        key = key if isinstance(key, tuple) else (key,)
        sel, rest = key[0], key[1:]
        if not isinstance(sel, slice) or sel.step not in (None, 1) or len(rest) > len(self.shape) - 1:
            return None
        if any(not (isinstance(r, slice) and r.indices(d) == (0, d, 1)) for r, d in zip(rest, self.shape[1:])):
            return None
        n, c = self.shape[0], self.chunks[0]
        start, stop, _ = sel.indices(n)
        if start % c or stop <= start or (stop % c and stop != n):
            return None
        return start, stop

    def __setitem__(self, key, value):
        rows = self._rows_of(key)
        value = np.asarray(value)
        if rows is None or value.shape != (rows[1] - rows[0],) + self.shape[1:]:
            self.z[key] = value
            return
        start, stop = rows
        c = self.chunks[0]
        value = value.astype(self.dtype.newbyteorder("<"), copy=False)
        tail = ("0",) * (len(self.shape) - 1)
        for i in range(start // c, -(-stop // c)):
            piece = value[i * c - start:(i + 1) * c - start]
            if piece.shape[0] < c:
                full = np.empty((c,) + self.shape[1:], value.dtype)
                full[:piece.shape[0]] = piece
                full[piece.shape[0]:] = self.fill
                piece = full
            path = os.path.join(self.folder, str(i), *tail)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            data = np.ascontiguousarray(piece).data
            if self.direct and _direct_io.write_file(path, data):
                _direct_io.mark(self.folder)
                continue
            with open(path, "wb") as fh:
                fh.write(data)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __dask_tokenize__(self):
        return ("RawChunks", self.folder, self.shape, self.dtype.str, self.chunks)

    def __getitem__(self, key):
        """Whole chunks of rows read from their files (0.05 s of CPU for 240 MB, 0.27-0.45 s
        through Zarr); a chunk without a file reads as the fill value, as in Zarr."""
        rows = self._rows_of(key)
        if rows is None:
            return np.asarray(self.z[key])
        start, stop = rows
        c = self.chunks[0]
        out = np.empty((stop - start,) + self.shape[1:], self.dtype)
        tail = ("0",) * (len(self.shape) - 1)
        size = c * int(np.prod(self.shape[1:], dtype=np.int64))
        # the file's bytes are the array's (little-endian) when read around the cache
        direct = _direct_io.is_direct(self.folder) and self.dtype == self.dtype.newbyteorder("<")
        for i in range(start // c, -(-stop // c)):
            part = out[i * c - start:(i + 1) * c - start]
            path = os.path.join(self.folder, str(i), *tail)
            try:
                if direct and _direct_io.read_into(path, part) == part.nbytes:
                    continue
                with open(path, "rb") as fh:
                    chunk = np.fromfile(fh, dtype=self.dtype.newbyteorder("<"), count=size)
            except FileNotFoundError:
                part[...] = self.fill
                continue
            part[...] = chunk.reshape((c,) + self.shape[1:])[:part.shape[0]]
        return out


def chunks_of(z) -> tuple:
    """Row blocks of a Zarr array as a Dask chunk tuple (each a whole Zarr chunk)."""
    n, c = int(z.shape[0]), int(z.chunks[0])
    return tuple([c] * (n // c) + ([n % c] if n % c else [])) or (0,)


def as_dask_rows(values, row_chunks):
    """A per-row array (numpy, StoredRows, Zarr or Dask) as a Dask array whose row blocks are
    ``row_chunks`` (a tuple of block lengths, e.g. another array's ``chunks[0]``, so blocks line
    up)."""
    import dask.array as da
    chunks = (tuple(row_chunks),) + tuple((s,) for s in values.shape[1:])
    if isinstance(values, da.Array):
        return values.rechunk(chunks)
    if isinstance(values, StoredRows):
        return values.to_dask().rechunk(chunks)
    if isinstance(values, np.ndarray):
        return held_rows(values, chunks)
    return da.from_zarr(values).rechunk(chunks)


class _Held:
    """A numpy array as ``da.from_array`` reads it without copying it first: Dask copies an
    array-like that has ``copy`` (a 240 MB result: 0.47 s of CPU and 240 MB more memory, at each
    use). The results wrapped here are not written while a computation reads them."""

    __slots__ = ("a", "shape", "dtype", "ndim")

    def __init__(self, a: np.ndarray):
        self.a, self.shape, self.dtype, self.ndim = a, a.shape, a.dtype, a.ndim

    def __getitem__(self, index):
        return self.a[index]


def held_rows(values: np.ndarray, chunks):
    """The numpy array ``values`` as a Dask array of blocks ``chunks`` (as ``da.from_array``
    takes them) reading it in place: no copy, and name=False (a random name, where Dask would
    hash every byte to make one: sha1 of a 240 MB result, 0.2 s on the main thread)."""
    import dask.array as da
    return da.from_array(_Held(values), chunks=chunks, name=False, asarray=False,
                         meta=np.empty((0,) * values.ndim, values.dtype))


def _lift(value):
    if isinstance(value, StoredRows):
        return value.to_dask()
    return value


class StoredRows:
    """A per-row result held in a Zarr array (see the module doc).

    Slicing returns numpy; ``np.asarray(stored)`` reads it all (only when that is what you
    want). ``store`` and ``path`` are the Zarr array's (where it lives on disk)."""

    __array_priority__ = 20

    def __init__(self, z):
        self.z = z
        # whole chunks of rows are read as their files when Zarr stores them raw (RawChunks)
        self._rows = RawChunks(z) if RawChunks.takes(z) else z

    # -- what a numpy array has ---------------------------------------------------------------
    @property
    def shape(self):
        return tuple(int(v) for v in self.z.shape)

    @property
    def dtype(self):
        return np.dtype(self.z.dtype)

    @property
    def ndim(self):
        return len(self.z.shape)

    @property
    def size(self):
        return int(np.prod(self.shape))

    @property
    def nbytes(self):
        return self.size * self.dtype.itemsize

    def __len__(self):
        return self.shape[0]

    def __getitem__(self, key):
        return np.asarray(self._rows[key])

    def __array__(self, dtype=None, copy=None):
        a = np.asarray(self.z[...])
        return a if dtype is None else a.astype(dtype, copy=False)

    def __getattr__(self, name):        # store, path, chunks, attrs ...: the Zarr array's
        if name in ("z", "_rows"):
            raise AttributeError(name)
        return getattr(self.z, name)

    def __repr__(self):
        return f"StoredRows(shape={self.shape}, dtype={self.dtype}, store={self.z.store})"

    def to_dask(self):
        import dask.array as da
        src = RawChunks(self.z) if RawChunks.takes(self.z) else self.z
        return da.from_array(src, chunks=(chunks_of(self.z),) + tuple((s,) for s in self.shape[1:]),
                             asarray=True)

    # -- element-wise: a new result, by the same budget rule ----------------------------------
    def _apply(self, op, *others):
        lazy = op(self.to_dask(), *[_lift(o) for o in others])
        return materialize({"value": lazy}, message="combining results", name="combined")["value"]

    def _reflected(self, op, other):
        lazy = op(_lift(other), self.to_dask())
        return materialize({"value": lazy}, message="combining results", name="combined")["value"]

    def __invert__(self):
        return self._apply(operator.invert)

    def __neg__(self):
        return self._apply(operator.neg)

    def __abs__(self):
        return self._apply(operator.abs)

    def astype(self, dtype):
        return self._apply(lambda a: a.astype(dtype))

    # -- reductions, read block by block ------------------------------------------------------
    def _reduce(self, fn, *args, **kw):
        return compute(fn(self.to_dask(), *args, **kw), message="reading results")[0]

    def sum(self, axis=None, dtype=None):
        return self._reduce(lambda a: a.sum(axis=axis, dtype=dtype))

    def any(self, axis=None):
        return self._reduce(lambda a: a.any(axis=axis))

    def all(self, axis=None):
        return self._reduce(lambda a: a.all(axis=axis))

    def max(self, axis=None):
        return self._reduce(lambda a: a.max(axis=axis))

    def min(self, axis=None):
        return self._reduce(lambda a: a.min(axis=axis))

    def mean(self, axis=None):
        return self._reduce(lambda a: a.mean(axis=axis))

    def count_nonzero(self):
        import dask.array as da
        return int(self._reduce(da.count_nonzero))

    def flatnonzero(self):
        """Indices of the nonzero entries of a 1-D result (numpy: they fit where the flags do)."""
        import dask.array as da
        return np.asarray(self._reduce(lambda a: da.flatnonzero(a)), dtype=np.intp)


def _binary(op):
    def method(self, other):
        return self._apply(op, other)

    def reflected(self, other):
        return self._reflected(op, other)
    return method, reflected


for _name, _op in (("or", operator.or_), ("and", operator.and_), ("xor", operator.xor),
                   ("add", operator.add), ("sub", operator.sub), ("mul", operator.mul),
                   ("truediv", operator.truediv)):
    _m, _r = _binary(_op)
    setattr(StoredRows, f"__{_name}__", _m)
    setattr(StoredRows, f"__r{_name}__", _r)
for _name, _op in (("lt", operator.lt), ("le", operator.le), ("gt", operator.gt), ("ge", operator.ge),
                   ("eq", operator.eq), ("ne", operator.ne)):
    setattr(StoredRows, f"__{_name}__", _binary(_op)[0])
StoredRows.__hash__ = None
