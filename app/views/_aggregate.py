"""Point clouds aggregated where the data is, block by block (numpy only, no Qt).

A scatter of millions of samples is drawn the way Datashader draws one: the samples in the
visible range are counted into a screen-sized grid, one grid per colour layer, and only what is
worth drawing one by one crosses to the GUI (the highest-scoring flagged samples, or every
sample once few enough are in view). Zooming asks again for the new range, so the picture is
exact for what is on screen at any zoom.

Everything here reads its per-row inputs in blocks of :data:`BLOCK` rows: numpy arrays, memory
maps and arrays stored on disk (:class:`robustcore.bigdata.StoredRows`, Zarr) alike, so a
result whose rows are on disk is never read whole, and no numpy call on the data holds Python's
GIL for more than a few milliseconds (the window's GUI thread answers in between; these
functions run on a worker thread, see :mod:`app.views._cloud`). ``report(fraction, message)``
is robustcore's progress protocol, called between blocks: it raises ``Cancelled`` to stop.

Bins follow ``np.histogram2d``'s rule (bin j holds ``e_j <= v < e_(j+1)``, the last one closed),
rectangles and lassos :mod:`app.views._geometry`'s, and "highest" means the largest score, ties
going to the smaller sample index, NaN below everything.
"""
from __future__ import annotations

import mmap
import os
import threading
from dataclasses import dataclass, field, replace

import numpy as np

from robustcore._progress import Reporter

from . import _geometry as geo
from ..mapped_tables import release as release_mapped, trim_heap
from ._binning import blocks

__all__ = ["BLOCK", "Column", "Picture", "Chosen", "extent", "aggregate", "select", "quantiles", "take",
           "bin_index", "describe", "Ranks", "bounds"]

#: Rows per block: 100,000 float64 values are 0.8 MB, and one numpy pass over them takes
#: 0.05-0.5 ms, so a block's dozen operations keep the GIL for a few ms at most (2,000,000
#: rows at load 6: 25 ms between reports at 100,000 rows a block, 49 ms at 200,000, 122 ms at
#: 400,000, for 0.36 / 0.44 / 0.52 s in all).
BLOCK = 100_000
# Bins of each refinement pass of :func:`quantiles`, and how many values of the cell holding a
# wanted rank are kept to finish it with np.partition instead of another pass.
_Q_BINS = 2048
_Q_COLLECT = 1 << 16


def _file_of(a) -> tuple[str, int] | None:
    """(file, byte offset) of a 1-D contiguous numpy array that is part of a memory map of a
    file (a large result's arrays are, :mod:`app.mapped_tables`), or None."""
    if not isinstance(a, np.ndarray) or a.ndim != 1 or not a.flags.c_contiguous or a.dtype.hasobject:
        return None
    mm = a
    while mm is not None and not isinstance(mm, np.memmap):
        # (an array's base may be any buffer: bytes from np.frombuffer, an mmap, ...)
        mm = getattr(mm, "base", None)
    # not a private map ("c"): its pages may have been written, unlike the file
    if mm is None or not getattr(mm, "filename", None) or not isinstance(mm.base, mmap.mmap) or mm.mode == "c":
        return None
    return mm.filename, int(mm.offset) + (a.__array_interface__["data"][0] - mm.__array_interface__["data"][0])


class Column:
    """One per-row column: a 1-D array-like, or column ``k`` of a 2-D one (rows first).

    Anything that slices like numpy will do (numpy, np.memmap, Zarr, StoredRows): blocks are
    read as ``data[a:b]`` or ``data[a:b, k]``, as float64 unless ``dtype`` says otherwise.
    A 1-D array mapped from a file is read from the file with plain reads, not through its
    map: every page read through it stayed counted in the window's memory until it was given
    back (issue 33.2: at 30M rows, up to 95 MB of a result's pages while the first pictures'
    passes and an index build read them at once, between two hand-backs)."""

    def __init__(self, data, k: int | None = None, dtype=np.float64):
        self.data, self.k, self.dtype = data, k, np.dtype(dtype)
        self.n = int(data.shape[0])
        self._file = _file_of(data) if k is None else None
        chunks = getattr(data, "chunks", None)
        rows = chunks[0] if isinstance(chunks, tuple) and chunks else None
        # Rows of one chunk of an array chunked on disk (Zarr), when a block is smaller: each
        # chunk is then read once and the blocks served from it. Read a block at a time, a
        # 30M-row result's flags (chunks of 16.7M rows, compressed) were decompressed whole for
        # every block of 100,000 rows, 170 times per pass.
        self._chunk = int(rows) if isinstance(rows, (int, np.integer)) and rows > BLOCK else 0
        self._held = (-1, None)
        self._lock = threading.Lock()

    def _raw(self, a: int, b: int) -> np.ndarray:
        if self._file is not None:
            v = self._pread(a, b)
            if v is not None:
                return v if v.dtype == self.dtype else v.astype(self.dtype)
        v = self.data[a:b] if self.k is None else self.data[a:b, self.k]
        return np.asarray(v, dtype=self.dtype)

    def _pread(self, a: int, b: int) -> np.ndarray | None:
        """Rows a:b read from the mapped file, or None when it cannot be opened any more (its
        result was dropped: the map still holds its pages, read through it then)."""
        path, offset = self._file
        b = min(b, self.n)
        out = np.empty(max(b - a, 0), dtype=self.data.dtype)
        view = memoryview(out).cast("B")
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            return None
        try:
            done, at = 0, offset + a * out.itemsize
            while done < view.nbytes:
                got = os.preadv(fd, [view[done:]], at + done)
                if not got:
                    raise OSError(f"{os.path.basename(path)} ended early")
                done += got
        finally:
            os.close(fd)
        return out

    def read(self, a: int, b: int) -> np.ndarray:
        if not self._chunk:
            return self._raw(a, b)
        parts = []
        with self._lock:   # one chunk held per column, shared by the threads reading it
            for c0 in range(a - a % self._chunk, b, self._chunk):
                if self._held[0] != c0:
                    chunk = self._raw(c0, min(c0 + self._chunk, self.n))
                    chunk.flags.writeable = False   # blocks are views of it: read only
                    self._held = (c0, chunk)
                parts.append(self._held[1][max(a - c0, 0):b - c0])
                if b >= min(c0 + self._chunk, self.n):
                    # Read to its end: a pass is done with it. Held on, each column of each
                    # view kept its last chunk for as long as the view lived (chunks of a
                    # stored result can hold millions of rows).
                    self._held = (-1, None)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _col(c, dtype=np.float64) -> Column | None:
    if c is None or isinstance(c, Column):
        return c
    return Column(c, dtype=dtype)


def bin_index(v: np.ndarray, lo: float, hi: float, nb: int) -> np.ndarray:
    """Bin of each value of ``v`` (all within [lo, hi]) among ``nb`` equal bins: np.histogram's
    edges and rule, so counts equal ``np.histogram2d``'s."""
    edges = np.linspace(lo, hi, nb + 1)
    with np.errstate(over="ignore", invalid="ignore"):
        f = (v - lo) * (nb / (hi - lo))
    idx = np.clip(f, 0, nb - 1).astype(np.intp)
    idx -= v < edges[idx]
    idx += (v >= edges[idx + 1]) & (idx != nb - 1)
    return idx


def _rank_key(score: np.ndarray | None, n: int) -> np.ndarray:
    """What "highest" orders by: the score, NaN below everything (no score: all equal)."""
    if score is None:
        return np.zeros(n)
    return np.where(np.isnan(score), -np.inf, score)


class _Top:
    """The k highest (key, index) pairs of those added, fed block by block. Candidates are
    buffered and cut back to k (O(size), no sort) whenever the buffer passes 2k, so each row
    costs O(1) whatever k is; :meth:`index` sorts the k once at the end. Columns passed to
    :meth:`add` by name (the sample's x, y, ...) are kept with their rows (:meth:`kept`)."""

    def __init__(self, k: int):
        self.k = int(k)
        self._idx: list = []
        self._key: list = []
        self._more: dict = {}
        self._size = 0

    def add(self, idx: np.ndarray, key: np.ndarray, **more) -> None:
        if self.k <= 0 or idx.size == 0:
            return
        self._idx.append(idx)
        self._key.append(key)
        for name, v in more.items():
            self._more.setdefault(name, []).append(v)
        self._size += idx.size
        if self._size > max(2 * self.k, 4 * BLOCK // 10):
            self._cut()

    def _cut(self) -> tuple[np.ndarray, np.ndarray]:
        idx = np.concatenate(self._idx) if self._idx else np.zeros(0, dtype=np.int64)
        key = np.concatenate(self._key) if self._key else np.zeros(0)
        more = {name: np.concatenate(v) for name, v in self._more.items()}
        k = self.k
        if idx.size > k:
            thr = np.partition(key, idx.size - k)[idx.size - k]   # the k-th largest key
            keep = key > thr
            ties = np.flatnonzero(key == thr)
            ties = ties[np.argsort(idx[ties], kind="stable")][:k - int(keep.sum())]   # smallest indices
            keep[ties] = True
            idx, key = idx[keep], key[keep]
            more = {name: v[keep] for name, v in more.items()}
        self._idx, self._key, self._size = [idx], [key], idx.size
        self._more = {name: [v] for name, v in more.items()}
        return idx, key

    def index(self) -> np.ndarray:
        """The kept indices, highest key first (ties: smaller index first)."""
        idx, key = self._cut()
        return idx[np.lexsort((idx, -key))].astype(np.int64)

    def kept(self) -> tuple[np.ndarray, dict]:
        """:meth:`index` and, in the same order, the columns added with them."""
        idx, key = self._cut()
        order = np.lexsort((idx, -key))
        return idx[order].astype(np.int64), {name: v[0][order] for name, v in self._more.items()}


#: Rows read between two hand-backs of the columns' mapped pages in a pass over a whole cloud.
GIVE_BACK = 1_000_000


def released_blocks(n: int, block: int):
    """The blocks of a pass over ``n`` rows, the pages of the columns' mapped files read so far
    (a large result's arrays are) given back every :data:`GIVE_BACK` rows and at the end, with
    the heap freed meanwhile: such a pass at 30M rows otherwise leaves every page it read in the
    window's memory until the views are done (issue 33.2)."""
    read = 0
    for a, b in blocks(0, n, block):
        yield a, b
        read += b - a
        if read >= GIVE_BACK:
            release_mapped()
            trim_heap()
            read = 0
    release_mapped()


def extent(x, y, report=None, block: int = BLOCK, score=None, ranks: Ranks | None = None
           ) -> tuple[float, float, float, float, int]:
    """(x0, x1, y0, y1, number of samples with finite x and y): the range they span. With
    ``ranks``, every block of ``score`` is fed to its first pass on the way."""
    x, y, score = _col(x), _col(y), _col(score)
    rep = Reporter(report)
    x0 = y0 = np.inf
    x1 = y1 = -np.inf
    count = 0
    for a, b in released_blocks(x.n, block):
        rep.report(a / max(x.n, 1), "measuring the cloud")
        xb, yb = x.read(a, b), y.read(a, b)
        if ranks is not None:
            ranks.first(score.read(a, b))
        ok = np.isfinite(xb) & np.isfinite(yb)
        m = int(ok.sum())
        if m:
            count += m
            xs, ys = xb[ok], yb[ok]
            x0, x1 = min(x0, xs.min()), max(x1, xs.max())
            y0, y1 = min(y0, ys.min()), max(y1, ys.max())
    return float(x0), float(x1), float(y0), float(y1), count


def padded(lo: float, hi: float) -> tuple[float, float]:
    """A range with room for bins: one sample (lo == hi) gets a unit-wide range, as before."""
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return 0.0, 1.0
    if hi > lo and np.isfinite(hi - lo) and (hi - lo) > 4 * np.spacing(max(abs(lo), abs(hi))):
        return float(lo), float(hi)
    return float(lo), float(lo) + max(1.0, abs(lo) * 1e-9)


@dataclass
class Picture:
    """What a cloud draws for one visible range (see :func:`aggregate`).

    ``counts`` (layers, bins_x, bins_y): samples per bin of each layer (the colour groups, then
    the flagged samples, which leave their group's layer); ``layer_totals`` the samples of each
    layer in view; ``points`` what is drawn one by one ("index", "x", "y", "code", "flag",
    "score"; "score" None without scores), best first unless ``all_points`` (then by index):
    every sample in view when ``all_points``, else the ``top_k`` highest-scoring flagged ones
    (of ``n_candidates`` flagged in view; every sample in view counts as a candidate when
    there are no flags)."""

    extent: tuple
    counts: np.ndarray
    layer_totals: np.ndarray
    n: int
    n_finite: int
    in_view: int
    points: dict
    all_points: bool
    n_candidates: int
    flagged_layer: int | None
    bins: tuple = field(default=(0, 0))
    mean: np.ndarray | None = None
    #: The points are the best of each spot of the picture (:func:`spread`), not simply the highest.
    spread: bool = False
    #: Counted in coarser bins than the screen's, a first answer while the exact one is made.
    coarse: bool = False


def aggregate(x, y, *, rng=None, bins=(300, 300), codes=None, n_codes: int = 1, flags=None, score=None,
              top_k: int = 1000, max_points: int = 5000, mean_score: bool = False, report=None,
              block: int = BLOCK, gather=None, ids=None, fine=None) -> Picture:
    """Count the samples in ``rng`` = (x0, x1, y0, y1) (None: all finite ones) into ``bins``.

    ``codes`` (int, 0 .. n_codes-1) is each sample's colour layer, ``flags`` (bool) moves a
    sample to a layer of its own (index ``n_codes``), ``score`` orders which samples are drawn
    as points; ``mean_score``: also the mean finite score of each bin (``Picture.mean``, NaN
    where none). Samples whose x or y is NaN or infinite are in no bin. ``gather``: the second
    pass of a :class:`Ranks` of ``score``, fed every block of it on the way. ``ids``: each row's
    sample index when the rows are not the samples in order (a part of them, in any order): the
    points and ties are then the same as a pass over all the samples'. ``fine``: a
    :class:`app.views._cloud_pyramid.Pyramid` over an extent holding every finite sample, when
    ``rng`` holds that extent whole: every sample is added to it on the way."""
    x, y = _col(x), _col(y)
    ids = _col(ids, np.int64)
    codes, flags, score = _col(codes, np.int64), _col(flags, bool), _col(score)
    rep = Reporter(report)
    n = x.n
    if rng is None:
        x0, x1, y0, y1, n_finite = extent(x, y, report=Reporter(report).span(0.0, 0.3).report, block=block)
        rep = rep.span(0.3, 1.0)
        x0, x1 = padded(x0, x1)
        y0, y1 = padded(y0, y1)
    else:
        x0, x1, y0, y1 = (float(v) for v in rng)
        x0, x1 = padded(min(x0, x1), max(x0, x1))
        y0, y1 = padded(min(y0, y1), max(y0, y1))
        n_finite = -1
    bx, by = int(bins[0]), int(bins[1])
    n_layers = int(n_codes) + (1 if flags is not None else 0)
    counts = np.zeros(n_layers * bx * by, dtype=np.int64)
    sums = np.zeros(counts.size) if mean_score and score is not None else None
    sizes = np.zeros(counts.size) if sums is not None else None
    finite = 0
    kept: list | None = []   # every sample in view, while there are at most max_points
    n_kept = 0
    top = _Top(top_k)
    n_cand = 0
    for a, b in blocks(0, n, block):
        rep.report(a / max(n, 1), "binning the cloud")
        xb, yb = x.read(a, b), y.read(a, b)
        with np.errstate(invalid="ignore"):
            view = (xb >= x0) & (xb <= x1) & (yb >= y0) & (yb <= y1)
        if n_finite < 0:
            finite += int(np.count_nonzero(np.isfinite(xb) & np.isfinite(yb)))
        sb = None
        if gather is not None:
            sb = score.read(a, b)
            gather.add(sb)
        where = np.flatnonzero(view)
        if where.size == 0:
            continue
        xs, ys = xb[where], yb[where]
        code = (codes.read(a, b)[where] if codes is not None else np.zeros(where.size, dtype=np.int64))
        fl = flags.read(a, b)[where] if flags is not None else None
        layer = np.where(fl, n_codes, code) if fl is not None else code
        cell = (layer * bx + bin_index(xs, x0, x1, bx)) * by + bin_index(ys, y0, y1, by)
        counts += np.bincount(cell, minlength=counts.size)
        sc = (score.read(a, b) if sb is None else sb)[where] if score is not None else None
        if sums is not None:
            ok = np.isfinite(sc)
            sums += np.bincount(cell[ok], weights=sc[ok], minlength=sums.size)
            sizes += np.bincount(cell[ok], minlength=sizes.size)
        rows = where + a if ids is None else ids.read(a, b)[where]
        if fine is not None:
            fine.add(xs, ys, rows, None if codes is None else code, fl, sc)
        if kept is not None:
            n_kept += where.size
            if n_kept <= max_points:
                kept.append((rows, xs, ys, code, fl if fl is not None else np.zeros(where.size, bool), sc))
            else:
                kept = None
        cand = np.flatnonzero(fl) if fl is not None else slice(None)
        ci = rows[cand]
        n_cand += ci.size
        if ci.size:
            # the candidates' columns kept with them: reading the points back afterwards was
            # one more pass over every block (2,000 points spread over 30M rows)
            top.add(ci, _rank_key(None if sc is None else sc[cand], ci.size), x=xs[cand], y=ys[cand],
                    code=code[cand], **({} if sc is None else {"score": sc[cand]}))
    if n_finite < 0:
        n_finite = finite
    counts = counts.reshape(n_layers, bx, by)
    mean = None
    if sums is not None:
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = (sums / sizes).reshape(n_layers, bx, by)
    if kept is not None:
        points = _concat_points(kept)
        if ids is not None:   # rows in another order than the samples': drawn in sample order
            order = np.argsort(points["index"], kind="stable")
            points = {k: None if v is None else v[order] for k, v in points.items()}
    else:
        idx, more = top.kept()
        points = {"index": idx, "x": more.get("x", np.zeros(0)), "y": more.get("y", np.zeros(0)),
                  "code": more.get("code", np.zeros(0, dtype=np.int64)),
                  "flag": np.full(idx.size, flags is not None), "score": None if score is None else
                  more.get("score", np.zeros(0))}
    totals = counts.reshape(n_layers, -1).sum(axis=1)
    return Picture(extent=(x0, x1, y0, y1), counts=counts, layer_totals=totals, n=n, n_finite=n_finite,
                   in_view=int(totals.sum()), points=points, all_points=kept is not None, n_candidates=n_cand,
                   flagged_layer=n_codes if flags is not None else None, bins=(bx, by), mean=mean)


_POINT_KEYS = ("index", "x", "y", "code", "flag", "score")


def _concat_points(kept: list) -> dict:
    if not kept:
        return {"index": np.zeros(0, dtype=np.int64), "x": np.zeros(0), "y": np.zeros(0),
                "code": np.zeros(0, dtype=np.int64), "flag": np.zeros(0, dtype=bool), "score": None}
    out = {}
    for i, nm in enumerate(_POINT_KEYS):
        parts = [k[i] for k in kept]
        out[nm] = None if parts[0] is None else np.concatenate(parts)
    out["index"] = out["index"].astype(np.int64)
    return out


def take(col, idx: np.ndarray, block: int = BLOCK) -> np.ndarray:
    """Values of ``col`` at the sorted sample indices ``idx``, reading only the blocks that hold
    some (a stored column is never read whole)."""
    col = _col(col)
    idx = np.asarray(idx, dtype=np.int64)
    if isinstance(col.data, np.ndarray):
        v = col.data[idx] if col.k is None else col.data[idx, col.k]
        return np.asarray(v, dtype=col.dtype)
    out = np.empty(idx.size, dtype=col.dtype)
    if idx.size == 0:
        return out
    starts = np.searchsorted(idx, np.arange(0, col.n + block, block))
    for j in np.flatnonzero(np.diff(starts)):
        s, e = starts[j], starts[j + 1]
        a, b = int(idx[s]), int(idx[e - 1]) + 1
        out[s:e] = col.read(a, b)[idx[s:e] - a]
    return out


@dataclass
class Chosen:
    """A rectangle or lasso resolved: ``count`` samples inside, ``index`` (sorted) every one
    of them when ``complete``, else the ``cap`` highest-scoring."""

    count: int
    index: np.ndarray
    complete: bool


def bounds(region) -> tuple[float, float, float, float]:
    """(x0, x1, y0, y1) around a region's rectangle corners or lasso vertices (see :func:`select`)."""
    pts = np.asarray(region[1], dtype=np.float64).reshape(-1, 2)
    return float(pts[:, 0].min()), float(pts[:, 0].max()), float(pts[:, 1].min()), float(pts[:, 1].max())


def select(x, y, region, score=None, cap: int = 200_000, report=None, block: int = BLOCK, ids=None) -> Chosen:
    """The samples inside ``region``: ("rect", (x0, y0, x1, y1)) or ("lasso", (m, 2) vertices).
    ``ids``: each row's sample index, when the rows are some of the samples in any order."""
    x, y, score, ids = _col(x), _col(y), _col(score), _col(ids, np.int64)
    kind, shape = region
    if kind not in ("rect", "lasso"):
        raise ValueError(f"a selection is a 'rect' or a 'lasso'; got {kind!r}")
    rep = Reporter(report)
    count, kept, top = 0, [], _Top(cap)
    for a, b in released_blocks(x.n, block):
        rep.report(a / max(x.n, 1), "selecting")
        xb, yb = x.read(a, b), y.read(a, b)
        inside = geo.in_rect(xb, yb, *shape) if kind == "rect" else geo.in_polygon(xb, yb, shape)
        if inside.size == 0:
            continue
        count += inside.size
        rows = inside + a if ids is None else ids.read(a, b)[inside]
        if count <= cap:
            kept.append(rows)
        top.add(rows, _rank_key(None if score is None else score.read(a, b)[inside], inside.size))
    if count <= cap:
        idx = np.concatenate(kept) if kept else np.zeros(0, dtype=np.int64)
        return Chosen(count, np.sort(idx.astype(np.int64)) if ids is not None else idx.astype(np.int64), True)
    return Chosen(count, np.sort(top.index()), False)


def quantiles(col, qs, report=None, block: int = BLOCK) -> np.ndarray:
    """``np.percentile`` of the finite values of ``col`` at ``qs`` (percent), without sorting
    them: two passes of :class:`Ranks` (a histogram of the values' bit patterns, then the few
    values of the buckets holding the wanted ranks), or more when such a bucket is too crowded
    to keep. NaN for every q when no value is finite."""
    col = _col(col)
    rep = Reporter(report)
    ranks = Ranks(qs)
    for a, b in blocks(0, col.n, block):
        rep.report(0.0, "score range")
        ranks.first(col.read(a, b))
    gather = ranks.gather()
    if gather is not None:
        for a, b in blocks(0, col.n, block):
            rep.report(0.5, "score range")
            gather.add(col.read(a, b))
    return ranks.result(gather, col, rep, block)


#: Buckets of :class:`Ranks`' first pass: the top bits of a float64's order-preserving bit
#: pattern (sign, exponent, 8 bits of mantissa: 256 buckets per power of two).
_KEY_BITS = 20
#: Values of the wanted buckets the second pass keeps; past it, the exact narrowing passes of
#: :func:`_order_stats` finish those ranks (values all within one power of two, say).
_Q_KEEP = 1 << 21


def _bucket(v: np.ndarray) -> np.ndarray:
    """Bucket of each finite float64: buckets are in the values' order (a negative number's bits
    flipped, a positive one's sign bit set, then the top _KEY_BITS bits)."""
    u = np.ascontiguousarray(v, dtype=np.float64).view(np.uint64)
    key = np.where(u >> np.uint64(63), ~u, u | np.uint64(1 << 63))
    return (key >> np.uint64(64 - _KEY_BITS)).astype(np.intp)


def _bucket_range(k: int) -> tuple[float, float]:
    """The smallest and largest float64 in bucket ``k`` (see :func:`_bucket`)."""
    shift = 64 - _KEY_BITS
    keys = np.array([k << shift, (k << shift) | ((1 << shift) - 1)], dtype=np.uint64)
    sign = np.uint64(1 << 63)
    u = np.where(keys & sign, keys & ~sign, ~keys)
    lo, hi = u.view(np.float64)
    return float(lo), float(hi)


class Ranks:
    """``np.percentile`` of a column's finite values at ``qs``, gathered by passes that read the
    column for something else too: :meth:`first` on every block of one pass, then the
    :meth:`gather` object's ``add`` on every block of a second, then :meth:`result` (which
    reads the column again only when a wanted bucket held more than :data:`_Q_KEEP` values)."""

    def __init__(self, qs):
        self.qs = np.atleast_1d(np.asarray(qs, dtype=np.float64))
        self.m = 0
        self.lo, self.hi = np.inf, -np.inf
        self._hist = np.zeros(1 << _KEY_BITS, dtype=np.int64)

    def first(self, v: np.ndarray) -> None:
        v = v[np.isfinite(v)]
        if not v.size:
            return
        self.m += v.size
        self.lo, self.hi = min(self.lo, v.min()), max(self.hi, v.max())
        # Counted as each block comes (np.add.at: as fast as a bincount of a block). Gathered
        # and counted by 4M values, the buckets held 64 MB at once (issue 33.2).
        np.add.at(self._hist, _bucket(v), 1)

    def _ranks(self) -> tuple[np.ndarray, list]:
        pos = self.qs / 100.0 * (self.m - 1)
        return pos, sorted({int(np.floor(p)) for p in pos} | {int(np.ceil(p)) for p in pos})

    def gather(self) -> _Gather | None:
        """What the second pass feeds (None: no finite value, nothing to gather)."""
        if self.m == 0:
            return None
        cum = np.cumsum(self._hist)
        want = {}
        for r in self._ranks()[1]:
            k = int(np.searchsorted(cum, r, side="right"))
            want.setdefault(k, (int(cum[k - 1]) if k else 0, []))[1].append(r)
        return _Gather(want)

    def result(self, gather: _Gather | None, col=None, report=None, block: int = BLOCK) -> np.ndarray:
        """The percentiles, NaN for every q when no value is finite; ``col`` is read again
        only for a bucket too crowded to keep (see :data:`_Q_KEEP`)."""
        if self.m == 0 or gather is None:
            return np.full(self.qs.shape, np.nan)
        found = gather.found()
        rest = [r for r in self._ranks()[1] if r not in found]
        if rest:
            found.update(_order_stats(_col(col), rest, float(self.lo), float(self.hi), Reporter(report), block))
        pos = self._ranks()[0]
        out = np.empty(self.qs.shape)
        for i, p in enumerate(pos):
            f = int(np.floor(p))
            a, b, t = found[f], found[int(np.ceil(p))], p - f
            out[i] = a + (b - a) * t if t < 0.5 else b - (b - a) * (1 - t)   # numpy's own lerp
        return out


class _Gather:
    """The second pass of :class:`Ranks`: keeps the values of the buckets holding wanted ranks."""

    def __init__(self, want: dict):
        self.want = want   # bucket -> (finite values in lower buckets, ranks it holds)
        self.keys = np.array(sorted(want), dtype=np.intp)
        self.vals = {k: [] for k in want}
        self.sizes = dict.fromkeys(want, 0)
        self.bounds = [_bucket_range(k) for k in self.keys.tolist()]

    def add(self, v: np.ndarray) -> None:
        # The buckets' value ranges first (two comparisons each, where bit patterns and np.isin
        # over every value cost a fifth of a counting pass), then the exact bucket of the few
        # values inside (-0.0 and 0.0 compare equal but lie in neighbouring buckets).
        hit = None
        for lo, hi in self.bounds:
            inside = (v >= lo) & (v <= hi)
            hit = inside if hit is None else hit | inside
        v = v[hit]
        if not v.size:
            return
        b = _bucket(v)
        for k in self.keys[np.isin(self.keys, b)].tolist():
            part = v[b == k]
            self.sizes[k] += part.size
            if self.sizes[k] <= _Q_KEEP:
                self.vals[k].append(part)
            else:
                self.vals[k] = []

    def found(self) -> dict:
        """rank -> value for the ranks whose bucket was kept whole."""
        out = {}
        for k, (below, ranks) in self.want.items():
            if self.sizes[k] > _Q_KEEP:
                continue
            v = np.concatenate(self.vals[k])
            for r in ranks:
                out[r] = float(np.partition(v, r - below)[r - below])
        return out


def _order_stats(col, ranks, lo, hi, rep, block) -> dict:
    """rank -> value (0-based among the finite values sorted), for the wanted ranks."""
    # Each unresolved rank has a cell: the values v with lo <= v < hi (<= hi when closed), and
    # how many finite values lie below the cell.
    cells = {r: (lo, hi, True, 0) for r in ranks}
    found = {}
    for _ in range(64):   # each pass narrows a cell 2048-fold or resolves it: far fewer suffice
        todo = {}
        for r, c in cells.items():
            if r not in found:
                todo.setdefault(c, []).append(r)
        if not todo:
            break
        hist = {c: np.zeros(_Q_BINS, dtype=np.int64) for c in todo}
        vals = {c: [] for c in todo}
        sizes = {c: 0 for c in todo}
        span = {c: [np.inf, -np.inf] for c in todo}
        for a, b in blocks(0, col.n, block):
            rep.report(0.0, "score range")
            v = col.read(a, b)
            for c in todo:
                clo, chi, closed, _ = c
                with np.errstate(invalid="ignore"):
                    inside = v[(v >= clo) & ((v <= chi) if closed else (v < chi))]
                if inside.size == 0:
                    continue
                span[c][0] = min(span[c][0], inside.min())
                span[c][1] = max(span[c][1], inside.max())
                sizes[c] += inside.size
                if sizes[c] <= _Q_COLLECT:
                    vals[c].append(inside)
                if clo < chi:
                    hist[c] += np.bincount(bin_index(inside, clo, chi, _Q_BINS), minlength=_Q_BINS)
        for c, rs in todo.items():
            clo, chi, closed, below = c
            if span[c][0] == span[c][1]:            # one value left (ties)
                for r in rs:
                    found[r] = float(span[c][0])
                continue
            if sizes[c] <= _Q_COLLECT:
                v = np.concatenate(vals[c])
                for r in rs:
                    found[r] = float(np.partition(v, r - below)[r - below])
                continue
            edges = np.linspace(clo, chi, _Q_BINS + 1)
            cum = np.cumsum(hist[c])
            for r in rs:
                j = int(np.searchsorted(cum, r - below, side="right"))
                under = below + (int(cum[j - 1]) if j else 0)
                last = j == _Q_BINS - 1
                cells[r] = (float(edges[j]), float(edges[j + 1]), bool(closed and last), under)
    return found


#: Points apart: a point kept has at most PER_SPOT others kept within 1/SPOTS of the picture's
#: width and height of it (see :func:`spread`).
SPOTS = 32
PER_SPOT = 2


def _best(pic: Picture) -> str:
    return f"highest, at most {PER_SPOT} per spot," if pic.spread else "highest"


def spread(pic: Picture, k: int) -> Picture:
    """``pic`` with at most ``k`` of its points (given best first), chosen so that they can be
    read: best first, each kept unless :data:`PER_SPOT` points already kept lie within a spot's
    reach of it (1/SPOTS of the picture's width and height), until ``k`` are kept or all were
    seen (then PER_SPOT more each, and so on). The highest scores of a 15-million-row scatter
    all sat in one place: 500 rings made one black blob there and none elsewhere. Reach, not
    cells of a grid: where the score grows with y (the outlier map's distances), the best of
    each grid cell lay on the cell's top edge, and the points drew the grid's rows. Unchanged
    when it holds at most ``k`` points."""
    p = pic.points
    n = p["index"].size
    if n <= k:
        return pic
    x0, x1, y0, y1 = pic.extent
    u = np.nan_to_num((p["x"] - x0) / ((x1 - x0) or 1.0) * SPOTS)   # in units of the reach
    v = np.nan_to_num((p["y"] - y0) / ((y1 - y0) or 1.0) * SPOTS)
    # One point at a time in Python held the GIL ~0.5 s a picture, and the window's thread, which
    # gives the GIL up at every Qt call, waited on it. The same choice in whole-array steps:
    # ``close`` counts the kept points within reach of each point and changes only when one is
    # kept, so within a round the next point kept is the first one after the last kept whose count
    # is under the limit; those passed over in between had the same counts when their turn came.
    taken = np.zeros(n, dtype=bool)
    close = np.zeros(n, dtype=np.int64)
    kept, limit = 0, PER_SPOT
    with np.errstate(over="ignore", invalid="ignore"):   # far-off points: never within reach
        while kept < k:
            at = 0
            while kept < k:
                free = np.flatnonzero(~taken[at:] & (close[at:] < limit))
                if free.size == 0:
                    break
                i = at + int(free[0])
                taken[i] = True
                close += (u - u[i]) ** 2 + (v - v[i]) ** 2 < 1.0
                kept, at = kept + 1, i + 1
            limit += PER_SPOT
    keep = np.flatnonzero(taken)
    pts = {name: None if a is None else a[keep] for name, a in p.items()}
    return replace(pic, points=pts, spread=True)


def describe(pic: Picture, what: str = "samples", flagged: str = "flagged") -> str:
    """The status line of a binned picture: what is in view, how it is drawn."""
    bx, by = pic.bins
    if pic.all_points:
        text = f"{pic.in_view:,} of {pic.n:,} {what} in view, each drawn as a point"
    else:
        text = f"{pic.in_view:,} {what} in {bx} x {by} bins" + (f" (of {pic.n:,})" if pic.in_view != pic.n else "")
        k = pic.points["index"].size
        if pic.flagged_layer is not None:
            text += f"; {pic.n_candidates:,} {flagged}: " + (
                "all drawn as points" if k == pic.n_candidates else f"{k:,} {_best(pic)} drawn as points")
        elif k:
            text += f"; {k:,} {_best(pic)} drawn as points"
    if pic.coarse:
        text += "; coarse bins until the cloud is indexed"
    if pic.n_finite < pic.n and pic.n_finite >= 0:
        text += f"; {pic.n - pic.n_finite:,} not finite, not drawn"
    return text
