"""The rows of a very large cloud sorted by where they lie, so that a zoom reads only the rows
near what is on screen (numpy only, no Qt).

A binned cloud (:mod:`app.views._binned`) re-counts the visible range at every zoom. Read whole,
30,000,000 rows on disk take seconds a pass; zoomed into a small region, almost none of them are
in view. :class:`CloudIndex` is built once, off the GUI thread, after the cloud's first picture:
the whole extent cut into :data:`GRID` x :data:`GRID` cells, and every finite sample's columns
(x, y, colour code, flag, score, sample index) copied in cell order (a counting sort: the
cells' sizes, then rows appended by ranges of cells, then each range sorted in memory) into
files beside the window's other results too large for memory, with plain writes and reads: the
build holds a block and a range of cells in memory, whatever the cloud's size.
A zoom then reads the cells the range touches, a contiguous run of rows per column of cells,
and :func:`app.views._aggregate.aggregate` counts them exactly as it counts the whole: the
rows read are put back in sample order first, so ties and the order of the points drawn are the
same as a full pass's. A view touching cells that hold most rows is drawn from the fine counts
made in the same passes (:mod:`app.views._cloud_pyramid`) instead of reading them all again.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from dataclasses import replace

import numpy as np

from robustcore._progress import Reporter

from . import _aggregate as agg
from ..mapped_tables import trim_heap
from ._cloud_pyramid import Pyramid

__all__ = ["INDEX_ROWS", "GRID", "CloudIndex"]

#: Clouds of at least this many samples get an index: below, a whole pass takes a few hundred
#: ms at most (2,000,000 rows: 0.36 s, see _aggregate.BLOCK) and the copy is not worth its disk.
INDEX_ROWS = 4_000_000
#: Cells along each axis: at 30,000,000 samples a cell holds about 460 on average.
GRID = 256
#: A zoom reads through the index when the cells it touches hold at most this share of the rows;
#: else one plain pass over them all costs little more.
WORTH = 0.25
#: Rows of the sorted copy sorted at once in the build's last pass (up to twice as many: a
#: bucket's cell codes, its order and one column at a time, about 26 bytes a row): with a
#: block's rows, what the build holds, whatever the cloud's size.
BUCKET_ROWS = 500_000

_FIELDS = (("x", np.float64), ("y", np.float64), ("codes", np.int32), ("flags", np.bool_),
           ("score", np.float64), ("index", np.int64))


def _small(count: int):
    """The smallest unsigned type holding 0 .. count - 1: numpy's stable sort of 16-bit keys
    is a radix sort, several times a merge sort of int64 ones."""
    return np.uint8 if count <= 1 << 8 else np.uint16 if count <= 1 << 16 else np.int64


class _Store:
    """One column of the sorted copy while it is built: in memory (``folder`` None) or a
    ``.npy`` file of ``folder`` written and read with plain writes and reads, so that no page of
    it is mapped into the window (:meth:`close` maps the finished file read-only)."""

    def __init__(self, dtype, size: int, folder: str | None, name: str):
        self.dtype = np.dtype(dtype)
        if folder is None:
            self.data, self.fh = np.zeros(size, self.dtype), None
            return
        self.path = os.path.join(folder, f"{name}.npy")
        header = np.lib.format.open_memmap(self.path, mode="w+", dtype=self.dtype, shape=(size,))
        self.offset = header.offset   # the file is made at its size (sparse); nothing is mapped
        del header
        self.data, self.fh = None, open(self.path, "r+b", buffering=0)

    def write(self, at: int, v: np.ndarray) -> None:
        v = np.ascontiguousarray(v, dtype=self.dtype)
        if self.fh is None:
            self.data[at:at + v.size] = v
            return
        self.fh.seek(self.offset + at * self.dtype.itemsize)
        view, done = memoryview(v).cast("B"), 0
        while done < view.nbytes:
            done += self.fh.write(view[done:])

    def append(self, v: np.ndarray, fill: np.ndarray, sizes: np.ndarray) -> None:
        """Write ``v`` (rows ordered by bucket, ``sizes`` of each) at each bucket's next free row."""
        at = 0
        for i in np.flatnonzero(sizes):
            m = int(sizes[i])
            self.write(int(fill[i]), v[at:at + m])
            at += m

    def read(self, a: int, b: int) -> np.ndarray:
        if self.fh is None:
            return self.data[a:b]
        out = np.empty(b - a, dtype=self.dtype)
        view, done = memoryview(out).cast("B"), 0
        self.fh.seek(self.offset + a * self.dtype.itemsize)
        while done < view.nbytes:
            got = self.fh.readinto(view[done:])
            if not got:
                raise OSError(f"the cloud index's {os.path.basename(self.path)} ended early")
            done += got
        return out

    def close(self, remove: bool = False):
        """The finished column (read-only, mapped from its file), or None when ``remove``."""
        if self.fh is None:
            return None if remove else self.data
        if not remove and hasattr(os, "posix_fadvise"):
            # Written with plain writes, its pages sit in the system's cache unmapped, the first
            # it drops under pressure (the 30M outlier map's first dense zoom read them back from
            # disk: 549 ms against 218 when written through a map): asked back ahead of the zooms.
            os.posix_fadvise(self.fh.fileno(), 0, 0, os.POSIX_FADV_WILLNEED)
        self.fh.close()
        if remove:
            try:
                os.unlink(self.path)
            except OSError:
                pass
            return None
        return np.load(self.path, mmap_mode="r")


class CloudIndex:
    """``cols`` ({"x", "y"[, "codes", "flags", "score"]}, as :class:`app.views._binned.Source`
    makes them) sorted into the cells of ``extent`` = (x0, x1, y0, y1), which holds every finite
    sample. ``folder``: where the sorted copy is written (removed with the index); None keeps it
    in memory. ``n_codes`` and ``mean_score`` as the cloud's pictures ask them (for the fine
    counts; ``pyramid``: their keyword arguments, e.g. a smaller grid, False for none, or a
    :class:`Pyramid` of this extent filled already)."""

    def __init__(self, cols: dict, extent, folder: str | None = None, grid: int = GRID, report=None,
                 block: int = agg.BLOCK, n_codes: int = 1, mean_score: bool = False, pyramid=None,
                 bucket_rows: int | None = None):
        bucket_rows = BUCKET_ROWS if bucket_rows is None else bucket_rows
        x, y = agg._col(cols["x"]), agg._col(cols["y"])
        src = {"codes": agg._col(cols.get("codes"), np.int64), "flags": agg._col(cols.get("flags"), bool),
               "score": agg._col(cols.get("score"))}
        self.n = x.n
        self.grid = int(grid)
        self.extent = tuple(float(v) for v in extent)
        self.has = {k: v is not None for k, v in src.items()}
        rep = Reporter(report)
        g = self.grid
        # Pass 1: how many finite samples each cell holds; summed from fine counts filled already
        # when their cells split these evenly (edge 4k of 1024 cells is edge k of 256 to the bit:
        # k * (w / 256) and 4k * (w / 1024) round the same product), without reading the rows.
        counts = self._from_fine(pyramid)
        for a, b in agg.released_blocks(self.n if counts is None else 0, block):
            rep.report(0.5 * a / max(self.n, 1), "indexing the cloud")
            cell, _ = self._cells(x.read(a, b), y.read(a, b))
            counts = np.bincount(cell, minlength=g * g) + (0 if counts is None else counts)
        counts = np.zeros(g * g, dtype=np.int64) if counts is None else counts
        self.offsets = np.r_[0, np.cumsum(counts)].astype(np.int64)
        self.n_finite = int(self.offsets[-1])
        self.folder = None
        if folder is not None:
            os.makedirs(folder, exist_ok=True)
            self.folder = tempfile.mkdtemp(prefix="cloud-index-", dir=folder)
            weakref.finalize(self, shutil.rmtree, self.folder, ignore_errors=True)
        # Written by plain writes, not through a memory map: every page of the copy written
        # through one stayed counted in the window's memory until it was handed back, and so did
        # every page of the columns read (issue 33.2: +340-435 MB while the index was built).
        stores = {name: _Store(dtype, max(self.n_finite, 1), self.folder, name)
                  for name, dtype in _FIELDS if name not in self.has or self.has[name]}
        # Each row's cell, kept beside the copy for pass 3's sort (2 bytes a row at GRID 256).
        stores["cell"] = _Store(_small(g * g), max(self.n_finite, 1), self.folder, "cell")
        # A Pyramid already filled (with the cloud's first picture) is used as it is.
        own = pyramid is not False and not isinstance(pyramid, Pyramid)
        self.pyramid = pyramid if isinstance(pyramid, Pyramid) else None if not own else Pyramid(
            self.extent, n_codes=n_codes, flags=self.has["flags"], score=self.has["score"], mean_score=mean_score,
            **(pyramid or {}))
        try:
            self._fill(stores, x, y, src, own, block, bucket_rows, rep)
            if own:
                self.pyramid.done()
            stores.pop("cell").close(remove=True)
            self.cols = {name: st.close() for name, st in stores.items()}
            trim_heap()   # the build's blocks, freed in this worker's own arena
        except BaseException:
            for st in stores.values():
                st.close(remove=True)
            raise

    def _fill(self, stores: dict, x, y, src: dict, own: bool, block: int, bucket_rows: int, rep) -> None:
        """Passes 2 and 3 of the build, into ``stores`` (see __init__)."""
        # Pass 2: each block's finite rows appended, in sample order, to the stretch of the
        # copy that their range of cells will fill (a "bucket"); pass 3 sorts each bucket by cell.
        # Written straight to their cells' places instead, every block touches a page of every
        # cell of every column; appended, each write is a run of rows.
        bounds = self._buckets(bucket_rows)
        bucket_of = np.repeat(np.arange(bounds.size - 1, dtype=_small(bounds.size - 1)), np.diff(bounds))
        fill = self.offsets[bounds[:-1]].copy()
        for a, b in agg.released_blocks(self.n, block):
            rep.report(0.5 + 0.25 * a / max(self.n, 1), "indexing the cloud")
            xb, yb = x.read(a, b), y.read(a, b)
            cell, ok = self._cells(xb, yb)
            rows = np.flatnonzero(ok)
            values = {"x": xb[ok], "y": yb[ok], "index": rows + a, "cell": cell}
            del xb, yb
            for name in ("codes", "flags", "score"):
                if self.has[name]:
                    values[name] = src[name].read(a, b)[rows]
            bkt = bucket_of[cell]
            order = np.argsort(bkt, kind="stable")
            sizes = np.bincount(bkt, minlength=fill.size)
            for name, v in values.items():
                stores[name].append(v[order], fill, sizes)
            fill += sizes
            if own:
                self.pyramid.add(values["x"], values["y"], values["index"], values.get("codes"), values.get("flags"),
                                 values.get("score"))
        # Pass 3: each bucket sorted by cell, in memory, and written back in place. The sort is
        # stable, so a cell's rows stay in sample order, as a zoom's reading expects; a bucket of
        # one cell is in that order already.
        for i, (c0, c1) in enumerate(zip(bounds[:-1], bounds[1:])):
            rep.report(0.75 + 0.25 * i / max(bounds.size - 1, 1), "indexing the cloud")
            a, b = int(self.offsets[c0]), int(self.offsets[c1])
            if b - a < 2 or c1 - c0 < 2:
                continue
            order = np.argsort(stores["cell"].read(a, b), kind="stable")
            for name, st in stores.items():
                if name != "cell":
                    st.write(a, st.read(a, b)[order])
            del order
            trim_heap()   # a bucket's blocks: glibc keeps freed ones of up to 32 MB in this thread's arena

    def _from_fine(self, fine) -> np.ndarray | None:
        """The cells' counts (cell = i * grid + j) from a filled Pyramid of the same extent whose
        fine cells split the grid's evenly, or None."""
        if (not isinstance(fine, Pyramid) or not fine.usable or fine.extent != self.extent
                or fine.fine % self.grid or fine.counts.ndim != 3):
            return None
        k, g = fine.fine // self.grid, self.grid
        return fine.counts.sum(axis=0, dtype=np.int64).reshape(g, k, g, k).sum(axis=(1, 3)).ravel()

    def _buckets(self, bucket_rows: int) -> np.ndarray:
        """Cell bounds (0 = c_0 < c_1 < ... = GRID²) cutting the sorted copy into stretches of
        at most 2 x ``bucket_rows`` rows, or of one cell holding more (sorted already): what
        pass 3 holds in memory at once, whatever the cloud's size."""
        step = max(int(bucket_rows), 1)
        cuts = np.searchsorted(self.offsets, np.arange(1, self.n_finite // step + 1) * step, side="left")
        big = np.flatnonzero(np.diff(self.offsets) > step)
        cells = self.offsets.size - 1
        return np.unique(np.r_[0, np.clip(cuts, 0, cells), big, big + 1, cells]).astype(np.int64)

    def _cells(self, xb: np.ndarray, yb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Cell of each finite (x, y) of a block, and which rows are finite."""
        x0, x1, y0, y1 = self.extent
        ok = np.isfinite(xb) & np.isfinite(yb)
        xs, ys = np.clip(xb[ok], x0, x1), np.clip(yb[ok], y0, y1)
        return agg.bin_index(xs, x0, x1, self.grid) * self.grid + agg.bin_index(ys, y0, y1, self.grid), ok

    def _runs(self, rng) -> list[tuple[int, int]]:
        """Row runs (a, b) of the sorted copy whose cells the range touches."""
        x0, x1, y0, y1 = self.extent
        rx0, rx1, ry0, ry1 = (float(v) for v in rng)
        if not np.isfinite([rx0, rx1, ry0, ry1]).all():
            return []
        # The range as aggregate() counts it (padded when degenerate); bin_index is monotone, so
        # every sample within it lies in a cell from the one of its low edge to the one of its high.
        rx0, rx1 = agg.padded(min(rx0, rx1), max(rx0, rx1))
        ry0, ry1 = agg.padded(min(ry0, ry1), max(ry0, ry1))
        if rx1 < x0 or rx0 > x1 or ry1 < y0 or ry0 > y1:
            return []
        g = self.grid
        cx0, cx1 = (int(c) for c in agg.bin_index(np.clip(np.array([rx0, rx1]), x0, x1), x0, x1, g))
        cy0, cy1 = (int(c) for c in agg.bin_index(np.clip(np.array([ry0, ry1]), y0, y1), y0, y1, g))
        return [(int(self.offsets[i * g + cy0]), int(self.offsets[i * g + cy1 + 1])) for i in range(cx0, cx1 + 1)]

    def rows_for(self, rng) -> int:
        """How many rows a zoom to ``rng`` would read through the index."""
        return sum(b - a for a, b in self._runs(rng))

    def worth(self, rng) -> bool:
        return self.rows_for(rng) <= WORTH * max(self.n, 1)

    def picture(self, rng, **kwargs) -> agg.Picture | None:
        """The picture of the range ``rng`` (keyword arguments as :func:`app.views._aggregate.aggregate`
        takes them, but the columns; bins, n_codes, top_k, max_points and mean_score given): read
        from the cells it touches when they hold few rows, else from the fine counts when the view
        is wide enough for them; None when neither answers (then one pass over every row does)."""
        if self.worth(rng):
            return self.aggregate(rng, **kwargs)
        if self.pyramid is None:
            return None
        how = {k: v for k, v in kwargs.items() if k != "report"}
        return self.pyramid.picture(rng, n=self.n, n_finite=self.n_finite, flags=self.has["flags"],
                                    score=self.has["score"], **how)

    def aggregate(self, rng, **kwargs) -> agg.Picture:
        """:func:`app.views._aggregate.aggregate` of the whole cloud for the range ``rng``
        (the same keyword arguments but the columns), reading only the cells it touches."""
        runs = [(a, b) for a, b in self._runs(rng) if b > a]
        xs, ys = self._read("x", runs), self._read("y", runs)
        x0, x1 = agg.padded(min(rng[0], rng[1]), max(rng[0], rng[1]))
        y0, y1 = agg.padded(min(rng[2], rng[3]), max(rng[2], rng[3]))
        # Only the rows in view are counted (the cells read reach past the range). They stay in
        # cell order: given each row's sample index, aggregate()'s counts, ties and points do
        # not depend on the rows' order, and sorting millions of rows back by sample cost more
        # than counting them (0.6 s at 2M rows).
        keep = np.flatnonzero((xs >= x0) & (xs <= x1) & (ys >= y0) & (ys <= y1))
        part = {"x": xs[keep], "y": ys[keep]}
        del xs, ys
        for name in self.cols:
            if name not in part:
                part[name] = self._read(name, runs)[keep]
        pic = agg.aggregate(part["x"], part["y"], rng=rng, codes=part.get("codes"), flags=part.get("flags"),
                            score=part.get("score"), ids=part["index"], **kwargs)
        return replace(pic, n=self.n, n_finite=self.n_finite)

    def select(self, region, cap: int, report=None) -> agg.Chosen:
        """:func:`app.views._aggregate.select` of the whole cloud (its scores ranking a region
        holding more than ``cap``), reading only the cells of the region's bounding box."""
        runs = [(a, b) for a, b in self._runs(agg.bounds(region)) if b > a]
        part = {name: self._read(name, runs) for name in ("x", "y", "score", "index") if name in self.cols}
        return agg.select(part["x"], part["y"], region, score=part.get("score"), cap=cap, report=report,
                          ids=part["index"])

    def _read(self, name: str, runs) -> np.ndarray:
        """The rows ``runs`` of one column, end to end. A copy on disk is read with plain reads:
        through its memory map, every page read stayed mapped, counted in the window's memory."""
        col = self.cols[name]
        out = np.empty(sum(b - a for a, b in runs), dtype=col.dtype)
        if not isinstance(col, np.memmap):
            at = 0
            for a, b in runs:
                out[at:at + b - a] = col[a:b]
                at += b - a
            return out
        size = col.dtype.itemsize
        view = memoryview(out).cast("B")
        at = 0
        with open(col.filename, "rb", buffering=0) as fh:
            for a, b in runs:
                fh.seek(col.offset + a * size)
                end = at + (b - a) * size
                while at < end:
                    got = fh.readinto(view[at:end])
                    if not got:
                        raise OSError(f"the cloud index's {name} file ended early")
                    at += got
        return out
