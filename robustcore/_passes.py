"""Passes over the rows of a table: the one engine under the subspace fits, in memory or out of core.

A fit is written ONCE as a few passes over blocks of rows, and runs on whatever array holds the
rows (the way scikit-learn's array-API support keeps one estimator for several array libraries):

* a **reduce** -- an accumulator (``add(block, start, *extra)``, ``merge(other)``) fed every
  block: a loop over cache-sized blocks in memory (a large table in lanes of blocks, on every
  core when they are free, with the same sums on one: ``robustcore._lanes``); out of core, the
  same loop inside each Dask block and a tree of merges over the blocks;
* a **map** to per-row outputs -- numpy arrays in memory; out of core computed lazily, then kept
  in memory or written to a Zarr store according to ``robustcore.bigdata`` settings'
  ``memory_budget`` (:func:`robustcore.bigdata._rows.materialize`);
* exact **order statistics** of a per-row array -- ``np.partition`` in memory, two passes over
  the stored values out of core (a sorted sketch per block bounds where they lie, then the few
  values inside the bounds are gathered; ``bigdata/_reductions.py``).

``extra`` per-row arrays (scores kept from an earlier pass) travel block by block beside the rows.
Every Dask computation goes through ``robustcore.bigdata._dask.compute`` (progress, Cancel, a
dask.distributed client). Dask and Zarr are imported only when lazy input arrives: a
``dask.array.Array``, a :class:`robustcore.bigdata.LazyTable`, or a
:class:`robustcore.bigdata.LazyDataset` of kind "table".

``Rows.passes`` counts the passes made over the table (tests and benchmarks read it).
"""
from __future__ import annotations

import math
import sys
import threading

import numpy as np

from ._lanes import LaneRunner, lanes
from ._order_stats import kth_values
from ._progress import Reporter
from .datasets._kind import is_lazy_dataset

__all__ = ["Rows", "is_lazy", "lazy_array", "kth_smallest", "percentile", "percentile_of", "kth_of_slices_of",
           "rowwise", "count_true", "indices", "scratch", "gil_free", "SUB_BLOCK_ENTRIES"]

# Entries of one block of rows inside a pass (2 MB of float64: centring, products and their
# scratch stay in cache).
SUB_BLOCK_ENTRIES = 262_144

_LOCAL = threading.local()


def scratch(rows: int, cols: int, slot: int = 0) -> np.ndarray:
    """A C-ordered float64 (rows, cols) scratch array of this thread (``slot`` tells several
    apart): reused from block to block, so a pass allocates no memory per block."""
    bufs = getattr(_LOCAL, "bufs", None)
    if bufs is None:
        bufs = _LOCAL.bufs = {}
    need = rows * cols
    buf = bufs.get(slot)
    if buf is None or buf.size < need:
        buf = bufs[slot] = np.empty(max(need, 1))
    return buf[:need].reshape(rows, cols)


def gil_free() -> bool:
    """Whether this thread's products must release the GIL: inside the blocks of an out-of-core
    pass, where Dask threads run side by side. scipy.linalg.blas's wrappers (dsyrk, dgemm,
    dtrmm: in-place updates, half the flops of a triangular product) hold the GIL, and with them
    the threads of a pass ran one at a time; numpy's products release it. In memory the lanes of
    a large table (robustcore._lanes) use numpy's products too wherever threads may run them,
    threaded or not, so one thread and several give the same bits; where only one may run, and
    on a table of one lane, the scipy kernels stay."""
    return getattr(_LOCAL, "gil_free", False)


class _GilFree:
    """Marks the blocks of an out-of-core pass, or of in-memory lanes that threads may run, run
    on this thread (:func:`gil_free`); ``_GilFree(False)`` marks nothing."""

    def __init__(self, on: bool = True):
        self.on = on

    def __enter__(self):
        self.before = getattr(_LOCAL, "gil_free", False)
        _LOCAL.gil_free = self.before or self.on

    def __exit__(self, *exc):
        _LOCAL.gil_free = self.before


def _lazy_table(X) -> bool:
    """Whether X is a robustcore.bigdata.LazyTable (one exists only if its module was imported)."""
    tables = sys.modules.get("robustcore.bigdata._tables")
    return tables is not None and isinstance(X, tables.LazyTable)


def is_lazy(X) -> bool:
    """Whether X is lazy input (checked without importing Dask: a Dask array exists only if Dask
    was imported)."""
    if is_lazy_dataset(X) or _lazy_table(X):
        return True
    da = sys.modules.get("dask.array")
    return da is not None and isinstance(X, da.Array)


def lazy_array(X):
    """The Dask array (n, d) of lazy input, one block per run of whole rows."""
    if is_lazy_dataset(X):
        if X.kind != "table":
            raise ValueError(f"'{X.name}' is a video opened out of core; this method takes a table. "
                             f"Run the streaming method (online-rpca) on it, or load the frames into memory")
        X = X.source
    if _lazy_table(X):
        X = X.array
    if X.ndim == 2 and X.numblocks[1] != 1:
        X = X.rechunk({1: -1})
    return X


def _sub_blocks(n: int, d: int, rows: int | None = None):
    step = rows or max(1, SUB_BLOCK_ENTRIES // max(d, 1))
    return range(0, n, step), step


def _as_float(B):
    return B if B.dtype == np.float64 else np.asarray(B, dtype=np.float64)


def _block_for(acc, B):
    """B as ``acc.add`` takes it: float64, or float32 as it is to an accumulator that converts
    it in its own first sweep (``converts_float32``: the same bits, one sweep less)."""
    if B.dtype == np.float32 and getattr(acc, "converts_float32", False):
        return B
    return _as_float(B)


def _feed(acc, B, start, extra, block_rows=None):
    """The in-memory loop: feed ``acc`` the cache-sized blocks of B (float64) and of ``extra``."""
    B = np.asarray(B)
    extra = [np.asarray(e) for e in extra]
    starts, step = _sub_blocks(B.shape[0], B.shape[1], block_rows)
    for s in starts:
        acc.add(_block_for(acc, B[s:s + step]), start + s, *[e[s:s + step] for e in extra])
    return acc


def _reduce_block(B, start, make, block_rows, *extra):
    with _GilFree():
        return _feed(make(), B, start, extra, block_rows)


def _merge(*accs):
    out = accs[0]
    for a in accs[1:]:
        out = out.merge(a)
    return out


def _map_into(out, fn, B, start, extra, args, block_rows=None, acc=None):
    starts, step = _sub_blocks(B.shape[0], B.shape[1], block_rows)
    kw = {} if acc is None else {"acc": acc}
    for s in starts:
        res = fn(_as_float(B[s:s + step]), start + s, *[e[s:s + step] for e in extra], *args, **kw)
        for k, v in res.items():
            out[k][s:s + step] = v
    return out


def _block_output(shape, dtype):
    """An output of one block of a pass out of core (every row written by ``_map_into``), in
    memory no block refers to any more (``bigdata._tables._OUTPUTS``)."""
    from .bigdata._tables import _OUTPUTS
    dtype = np.dtype(dtype)
    return _OUTPUTS.take(int(np.prod(shape, dtype=np.int64)) * dtype.itemsize).view(dtype).reshape(shape)


def _map_block(B, start, fn, spec, block_rows, nextra, make, *rest):
    with _GilFree():
        return _map_block_here(B, start, fn, spec, block_rows, nextra, make, *rest)


def _map_block_here(B, start, fn, spec, block_rows, nextra, make, *rest):
    B = np.asarray(B)
    extra, args = [np.asarray(e) for e in rest[:nextra]], rest[nextra:]
    out = {k: _block_output((B.shape[0],) + tuple(tail), dtype) for k, (dtype, tail) in spec.items()}
    acc = make() if make is not None else None
    out = _map_into(out, fn, B, start, extra, args, block_rows, acc)
    if acc is not None:
        out[_ACC] = acc
    return out


# the key under which a block's accumulator travels beside its per-row outputs (Rows.map)
_ACC = "__accumulator__"
# The runner of a table of one lane: the caller's thread, never threads.
_ONE_LANE = LaneRunner(1)


class Rows:
    """The rows a fit passes over: a float numpy array (n, d), or a Dask array of row blocks.
    ``block_rows``: rows per block inside a pass (default: blocks of SUB_BLOCK_ENTRIES)."""

    def __init__(self, X, block_rows: int | None = None):
        self.X = X
        self.block_rows = block_rows
        self.lazy = not isinstance(X, np.ndarray)
        self.n, self.d = (int(v) for v in X.shape)
        self.passes = 0
        if self.lazy:
            self.starts = np.concatenate(([0], np.cumsum(X.chunks[0])[:-1])).astype(np.int64)

    # -- in-memory lanes (robustcore._lanes) ---------------------------------------------------
    def _lane_ranges(self):
        """(lanes as (start, stop) row ranges, rows per block) of an in-memory table."""
        step = _sub_blocks(self.n, self.d, self.block_rows)[1]
        return lanes(self.n, step), step

    def _lane_runner(self) -> LaneRunner:
        if getattr(self, "_runner", None) is None:
            self._runner = LaneRunner()
        return self._runner

    def _over_lanes(self, feed, rep, message) -> list:
        """``[feed(lo, hi, step, tick) for each lane]`` of an in-memory table, in lane order: on
        the lanes' threads when they pay; a table of one lane on the caller's thread, with the
        scipy kernels (gil_free)."""
        ranges, step = self._lane_ranges()
        runner = self._lane_runner() if len(ranges) > 1 else _ONE_LANE
        numpy_products = len(ranges) > 1 and runner.numpy_products

        def lane(lo, hi, tick):
            with _GilFree(numpy_products):
                return feed(lo, hi, step, tick)
        return runner.run(lane, ranges, step, rep, message)

    # -- lazy plumbing ------------------------------------------------------------------------
    def _blocks(self, extra):
        from .bigdata._rows import as_dask_rows
        xs = list(self.X.to_delayed().ravel())
        es = [list(as_dask_rows(e, self.X.chunks[0]).to_delayed().ravel()) for e in extra]
        return [(b, int(s), [e[i] for e in es]) for i, (b, s) in enumerate(zip(xs, self.starts))]

    # -- the two kinds of pass ----------------------------------------------------------------
    def reduce(self, make, *, extra=(), progress=None, message="pass", with_sketch=False):
        """``make()`` -> an accumulator fed every block of rows (and of each ``extra`` per-row
        array), merged: one pass. ``with_sketch`` (out of core only) also sketches every column
        in the same pass, for :meth:`column_order_statistics`: returns ``(acc, sketches)``."""
        rep = progress if isinstance(progress, Reporter) else Reporter(progress)
        self.passes += 1
        if not self.lazy:
            extra = [np.asarray(e) for e in extra]

            def feed(lo, hi, step, tick):
                acc = make()
                for s in range(lo, hi, step):
                    e = min(s + step, hi)
                    acc.add(_block_for(acc, self.X[s:e]), s, *[x[s:e] for x in extra])
                    tick()
                return acc
            acc = _merge(*self._over_lanes(feed, rep, message))
            return (acc, None) if with_sketch else acc
        from dask import delayed

        from .bigdata import _reductions as red
        from .bigdata._dask import compute
        parts = [delayed(_reduce_block)(b, s, make, self.block_rows, *e) for b, s, e in self._blocks(extra)]
        total = red.tree_reduce(parts, _merge)
        if not with_sketch:
            return compute(total, progress=rep, message=message)[0]
        sketches = [delayed(red.sketch)(b) for b in self.X.to_delayed().ravel()]
        out = compute(total, *sketches, progress=rep, message=message)
        return out[0], list(out[1:])

    def map(self, fn, spec: dict, *args, extra=(), progress=None, message="pass", name="rows",
            reduce=None, direct=()):
        """Per-row outputs of ``fn(block, start, *extra_blocks, *args) -> {name: array}`` over
        every block: one pass. ``spec``: name -> (dtype, trailing shape). Returns name -> numpy
        array, or (out of core, beyond the memory budget) -> a stored array
        (:class:`robustcore.bigdata.StoredRows`).

        ``reduce``: also an accumulator (``make()``, merged as in :meth:`reduce`) that ``fn``
        feeds in the same pass (it is passed as ``acc=``); then ``(outputs, accumulator)``.
        ``direct``: outputs read at most once more, stored around the page cache if stored
        (``bigdata._rows.materialize``)."""
        rep = progress if isinstance(progress, Reporter) else Reporter(progress)
        self.passes += 1
        if not self.lazy:
            out = {k: np.empty((self.n,) + tuple(tail), dtype) for k, (dtype, tail) in spec.items()}
            extra = [np.asarray(e) for e in extra]

            def feed(lo, hi, step, tick):
                acc = reduce() if reduce is not None else None
                kw = {} if acc is None else {"acc": acc}
                for s in range(lo, hi, step):
                    e = min(s + step, hi)
                    res = fn(_as_float(self.X[s:e]), s, *[x[s:e] for x in extra], *args, **kw)
                    for k, v in res.items():
                        out[k][s:e] = v
                    tick()
                return acc
            accs = self._over_lanes(feed, rep, message)
            return out if reduce is None else (out, _merge(*accs))
        return map_lazy(self, fn, spec, args, extra, rep, message, name, reduce, direct)

    def column_order_statistics(self, sketches, ks, *, progress=None, message="order statistics"):
        """Exact ks-th smallest values (len(ks), d) of every column, out of core: one pass that
        gathers the values the sketches (from ``reduce(..., with_sketch=True)``) cannot rule
        out. Each k is bracketed on its own, so distant ks cost no more than one each."""
        from .bigdata import _reductions as red
        self.passes += 1
        return red.exact_order_statistics(self.X, sketches, ks, progress=progress, message=message)

    def shift(self) -> np.ndarray:
        """A point near the rows (the mean of the first 1000, non-finite entries as 0), for sums
        of x - shift that keep the digits of columns far from zero (robustcore._row_stats)."""
        if getattr(self, "_shift", None) is None:
            head = self.X[:min(self.n, 1000)]
            if self.lazy:
                from .bigdata._dask import compute
                head = compute(head, message="reading the first rows")[0]
            with np.errstate(invalid="ignore", over="ignore"):
                K = np.asarray(head, dtype=np.float64).mean(axis=0) if self.n else np.zeros(self.d)
            self._shift = np.where(np.isfinite(K), K, 0.0)
        return self._shift

    def dense(self):
        """The whole table as a float64 numpy array (the caller checked that it fits)."""
        if not self.lazy:
            return self.X
        from .bigdata._dask import compute
        self.passes += 1
        return np.asarray(compute(self.X, message="loading")[0], dtype=np.float64)


def map_lazy(rows, fn, spec, args, extra, rep, message, name, reduce=None, direct=()):
    """Rows.map out of core: each Dask block runs the in-memory loop; the outputs of a block are
    one task shared by every output array (and its accumulator, merged in a tree), so storing
    them all reads each block once."""
    import operator

    import dask.array as da
    from dask import delayed

    from .bigdata import _reductions as red
    from .bigdata._rows import materialize
    arrays = {k: [] for k in spec}
    accs = []
    for (b, s, e), size in zip(rows._blocks(extra), rows.X.chunks[0]):
        part = delayed(_map_block)(b, s, fn, spec, rows.block_rows, len(e), reduce, *e, *args)
        for k, (dtype, tail) in spec.items():
            arrays[k].append(da.from_delayed(delayed(operator.getitem)(part, k),
                                             shape=(size,) + tuple(tail), dtype=dtype))
        if reduce is not None:
            accs.append(delayed(operator.getitem)(part, _ACC))
    lazy = {k: da.concatenate(v) if len(v) > 1 else v[0] for k, v in arrays.items()}
    if reduce is None:
        return materialize(lazy, progress=rep, message=message, name=name, direct=direct)
    out, (acc,) = materialize(lazy, progress=rep, message=message, name=name, direct=direct,
                              also=(red.tree_reduce(accs, _merge),))
    return out, acc


def kth_smallest(values, ks, *, exclude=None, progress=None, message="order statistics") -> np.ndarray:
    """Exact ks-th smallest values (0-based) of a per-row array, leaving out the rows where
    ``exclude`` is True (their count shifts nothing: ks count the kept rows only).

    numpy: the values ``np.partition`` places there (``robustcore._order_stats``). A stored
    array (Zarr) or Dask array: two sweeps over slices of the stored values (a histogram of
    their bits, a gather: ``robustcore.bigdata._selection``). Returns an array (len(ks),)."""
    ks = np.atleast_1d(np.asarray(ks, dtype=np.int64))
    if isinstance(values, np.ndarray):
        # brackets from a sample, then a partition of the few values inside them (_order_stats)
        return kth_values(values, ks, exclude).astype(np.float64)
    # per-row results (stored, or Dask arrays computed once): a histogram and a gather over
    # plain slices, robustcore.bigdata._selection (the same values)
    from .bigdata._rows import sliceable
    return kth_of_slices_of(sliceable(values), ks, sliceable(exclude))


def kth_of_slices_of(values, ks, exclude=None, fn=None) -> np.ndarray:
    """:func:`kth_smallest` of ``fn(values)`` (element-wise; ``values`` when None) for per-row
    results read by slicing (numpy or stored), slice by slice: ``fn``'s values are never
    written whole."""
    from .bigdata._rows import row_slices
    from .bigdata._selection import kth_of_slices

    def slices():
        for _, (v, e) in row_slices([values, exclude]):
            yield (v if fn is None else fn(v)), e
    return kth_of_slices(slices, ks)


def percentile(values, q: float, *, message="percentile") -> float:
    """``np.percentile(values, q)`` (linear interpolation) of a per-row array, exactly, for
    numpy and stored arrays alike."""
    if isinstance(values, np.ndarray):
        return float(np.percentile(values, q))
    return percentile_of(lambda ks: kth_smallest(values, ks, message=message), int(values.shape[0]), q)


def percentile_of(kth, n: int, q: float) -> float:
    """``np.percentile`` (linear interpolation) of n values from ``kth(ks)``, their exact
    ks-th smallest."""
    h = (n - 1) * q / 100.0
    lo = int(math.floor(h))
    a, b = kth([lo, min(lo + 1, n - 1)])
    t = h - lo
    # numpy's interpolation, written the way it writes it (exact at t = 0 and t = 1)
    return float(b - (b - a) * (1.0 - t)) if t >= 0.5 else float(a + (b - a) * t)


def rowwise(fn, *arrays, name="rows", message="combining results"):
    """``fn(*arrays)`` of per-row arrays, element-wise: numpy for numpy arrays; for stored (or
    Dask) ones computed slice by slice and kept by the memory-budget rule (a sweep over the
    stored values, none over the table)."""
    if all(isinstance(a, np.ndarray) for a in arrays):
        return fn(*arrays)
    # per-row results (stored, or Dask arrays computed once) in plain slices (fill_rows); the
    # result's dtype and shape from one row
    from .bigdata._rows import fill_rows, sliceable
    arrays = [sliceable(a) for a in arrays]
    one = np.asarray(fn(*[a[:1] for a in arrays]))
    return fill_rows(lambda *parts: {"value": fn(*parts)}, {"value": (one.dtype, one.shape[1:])},
                     arrays, name=name)["value"]


def count_true(mask) -> int:
    """Number of True entries of a per-row bool array (numpy or stored)."""
    if isinstance(mask, np.ndarray):
        return int(np.count_nonzero(mask))
    from .bigdata._rows import row_slices, sliceable
    return sum(int(np.count_nonzero(m)) for _, (m,) in row_slices([sliceable(mask)]))


def indices(mask, lazy: bool = False):
    """np.flatnonzero of a per-row bool array (numpy or stored). In memory (``lazy`` False, a
    numpy mask) a numpy array; out of core the indices are a per-sample result like any other:
    in memory when they fit the results' share of the memory budget, else stored
    (:class:`robustcore.bigdata.StoredRows`: 30M rows make up to 240 MB of them)."""
    if isinstance(mask, np.ndarray) and not lazy:
        return np.flatnonzero(mask)
    from .bigdata._rows import fits_in_memory, hold, sliceable, sliced_indices
    if isinstance(mask, np.ndarray) and fits_in_memory(int(np.count_nonzero(mask)) * np.dtype(np.intp).itemsize):
        return hold(np.flatnonzero(mask))
    # held beyond the budget's share, stored, or a Dask array computed once: plain slices
    return sliced_indices(sliceable(mask))
