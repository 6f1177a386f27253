"""Counts of a very large cloud made once on a fine grid, so that a view holding most of the
samples is drawn without reading them again (numpy only, no Qt).

A zoom into a small region reads only the rows near it (:mod:`app.views._cloud_index`); zoomed
back out to most of a 30,000,000-row cloud, that is every row again, seconds a time.
:class:`Pyramid` is filled while the index is built: every finite sample counted into a
:data:`FINE` x :data:`FINE` grid over the index's extent, one grid per colour layer (with the
sum of each cell's finite scores when bins show their mean score), and the :data:`TOP` best
candidates to draw as points, with their columns. A wide view is then answered from the grid:
its output bins are whole multiples of the fine cells (``m`` cells along x, ``mm`` along y),
the picture's extent snapped outwards to fine-cell edges (less than one output bin beyond the
view on each side), so each bin's count is exact for that bin's own edges, as a pass over the
rows with those edges would count it. The levels of this pyramid are made on demand by summing
blocks of cells: any zoom gets the level nearest its screen, not one of a few fixed ones.
"""
from __future__ import annotations

import numpy as np

from . import _aggregate as agg
from ..mapped_tables import release as release_mapped, trim_heap

__all__ = ["FINE", "TOP", "Pyramid"]

#: Fine cells along each axis. A view is answered here when it spans at least half as many fine
#: cells as it asks bins (a screen asks up to 480): at 1024, views wider than about a quarter
#: of the extent. 4 MB a colour layer (int32 counts), 12 more with the mean score.
FINE = 1024
#: The best candidates (flagged samples, or every sample without flags) kept with their
#: columns; a wide view whose candidates hold fewer than the points it asks for among these is
#: read from the rows instead (unless these are all of them).
TOP = 50_000
#: Rows added between two hand-backs of the mapped pages read and of the freed heap (the fine
#: counts are filled by the first picture's pass, while the window's other views arrive).
_FLUSH = 1_000_000


class Pyramid:
    """Fine counts of a cloud over ``extent`` = (x0, x1, y0, y1), which holds every finite
    sample. ``n_codes`` colour layers, then the flagged layer when ``flags``; ``mean_score``:
    also the sum and number of finite scores per cell. Fill with :meth:`add`, then :meth:`done`."""

    def __init__(self, extent, n_codes: int = 1, flags: bool = False, score: bool = False,
                 mean_score: bool = False, fine: int = FINE, top: int = TOP):
        self.extent = tuple(float(v) for v in extent)
        self.fine, self.n_codes = int(fine), int(n_codes)
        self.has_flags, self.has_score = bool(flags), bool(score)
        self.n_layers = self.n_codes + (1 if flags else 0)
        size = self.n_layers * self.fine * self.fine
        # Counted into as each batch comes (np.add.at, as fast as a bincount of a batch here),
        # in the grids' own types: a cell never holds 2**31 samples. Gathered first and counted
        # by bincounts of 1M cells, the counts were int64 and each count made a whole grid more
        # (at 30M rows, 16 MB a layer, 144 MB at once with the mean score; issue 33.2).
        self.counts = np.zeros(size, dtype=np.int32)
        self.sums = np.zeros(size) if mean_score and score else None
        self.sizes = np.zeros(size, dtype=np.int32) if self.sums is not None else None
        self._held = 0
        self._top = agg._Top(top)
        self.n_candidates = 0
        self.usable = True

    def _fine(self, v: np.ndarray, lo: float, hi: float) -> np.ndarray:
        return agg.bin_index(np.clip(v, lo, hi), lo, hi, self.fine)

    def add(self, x, y, index, codes=None, flags=None, score=None) -> None:
        """A batch of finite samples: their x, y, sample index and, as the cloud has them, codes
        (0 .. n_codes-1), flags and scores."""
        x0, x1, y0, y1 = self.extent
        fx, fy = self._fine(x, x0, x1), self._fine(y, y0, y1)
        code = np.zeros(x.size, dtype=np.int64) if codes is None else np.asarray(codes, dtype=np.int64)
        if not self.usable or (code.size and (code.min() < 0 or code.max() >= self.n_codes)):
            self.usable = False   # codes beyond the layers counted: every view is read from the rows
            return
        layer = np.where(flags, self.n_codes, code) if flags is not None else code
        cell = (layer * self.fine + fx) * self.fine + fy
        np.add.at(self.counts, cell, np.ones(cell.size, dtype=np.int32))
        if self.sums is not None:
            ok = np.isfinite(score)
            np.add.at(self.sums, cell[ok], score[ok])
            np.add.at(self.sizes, cell[ok], np.ones(int(ok.sum()), dtype=np.int32))
        self._held += cell.size
        if self._held >= _FLUSH:
            self._flush()
        cand = np.flatnonzero(flags) if flags is not None else np.arange(x.size)
        self.n_candidates += cand.size
        if cand.size:
            self._top.add(np.asarray(index)[cand], agg._rank_key(None if score is None else score[cand], cand.size),
                          x=x[cand], y=y[cand], code=code[cand], fx=fx[cand], fy=fy[cand],
                          **({} if flags is None else {"flag": np.asarray(flags)[cand]}),
                          **({} if score is None else {"score": score[cand]}))

    def _flush(self) -> None:
        # The pass filling these reads every row of the cloud's columns; the pages of those
        # mapped from files (a large result's arrays) are given back as it goes, not all held
        # until the window's drawing is done (issue 33.2: the window's memory at 30M rows); so
        # is the heap freed meanwhile (the pass's blocks, which glibc keeps in this worker's arena).
        release_mapped()
        trim_heap()
        self._held = 0

    def done(self) -> None:
        """Shape the grids (layers, fine, fine) once every sample is added."""
        self._flush()
        shape = (self.n_layers, self.fine, self.fine)
        # sums over blocks of cells are int64 (see _blocks)
        self.counts = self.counts.reshape(shape)
        if self.sums is not None:
            self.sums, self.sizes = self.sums.reshape(shape), self.sizes.reshape(shape)
        self.best, self.best_cols = self._top.kept()
        self._top = None
        trim_heap()   # the pass's blocks, freed in its worker's own arena

    def edge(self, axis: int, k) -> np.ndarray:
        """Position of fine-cell edge ``k`` along ``axis`` (0: x, 1: y), as np.linspace places it
        (so bins whose edges these are count as ``np.histogram2d`` with them does)."""
        lo, hi = self.extent[2 * axis:2 * axis + 2]
        k = np.asarray(k, dtype=np.float64)
        out = k * ((hi - lo) / self.fine) + lo
        return np.where(k == self.fine, hi, out)

    def snap(self, rng, bins, coarse: bool = False) -> tuple | None:
        """(i0, m, nbx, j0, mm, nby): the fine cells a view of ``rng`` covers, from i0 in
        ``nbx`` output bins of ``m`` cells along x (j0, mm, nby along y); None when the view
        spans fewer than half as many fine cells as ``bins`` asks (it is read from the rows),
        unless ``coarse`` (then one bin per fine cell at the least)."""
        x0, x1, y0, y1 = (float(v) for v in rng)
        if not np.isfinite([x0, x1, y0, y1]).all():
            return None
        out = []
        for axis, (a, b), nb in ((0, agg.padded(min(x0, x1), max(x0, x1)), bins[0]),
                                 (1, agg.padded(min(y0, y1), max(y0, y1)), bins[1])):
            lo, hi = self.extent[2 * axis:2 * axis + 2]
            w = (hi - lo) / self.fine
            i0 = int(np.clip(np.floor((a - lo) / w), 0, self.fine))
            i1 = int(np.clip(np.ceil((b - lo) / w), 0, self.fine))
            span = i1 - i0
            if span <= 0 or (2 * span < int(nb) and not coarse):
                return None
            m = max(1, int(round(span / int(nb))))
            out += [i0, m, -(-span // m)]
        return tuple(out)

    def picture(self, rng, *, bins, n: int, n_finite: int, n_codes: int, flags: bool, score: bool, top_k: int,
                max_points: int, mean_score: bool, coarse: bool = False) -> agg.Picture | None:
        """The picture of the view ``rng`` from the fine counts (see the module's docstring),
        or None when this view must be read from the rows: narrow, few enough samples in view
        to draw each, too few of the kept candidates in view, or other layers than were counted.
        ``coarse``: a narrow view only (None for a wide one), in bins of whole fine cells, and
        its points the kept candidates in it (a first answer while its rows are read:
        ``Picture.coarse``)."""
        if (not self.usable or n_codes != self.n_codes or bool(flags) != self.has_flags or bool(score) != self.has_score
                or (mean_score and score and self.sums is None)):
            return None
        snapped = self.snap(rng, bins)
        narrow = snapped is None
        if coarse:   # cheap enough for the window's own thread: a narrow view spans few fine cells
            snapped = self.snap(rng, bins, coarse=True) if narrow else None
        if snapped is None:
            return None
        i0, m, nbx, j0, mm, nby = snapped
        counts = self._blocks(self.counts, i0, m, nbx, j0, mm, nby)
        totals = counts.reshape(self.n_layers, -1).sum(axis=1)
        in_view = int(totals.sum())
        if in_view <= max_points and not narrow:
            return None
        mean = None
        if mean_score and score:
            with np.errstate(invalid="ignore", divide="ignore"):
                mean = (self._blocks(self.sums, i0, m, nbx, j0, mm, nby)
                        / self._blocks(self.sizes, i0, m, nbx, j0, mm, nby))
        n_cand = int(totals[self.n_codes]) if flags else in_view
        c = self.best_cols
        inside = np.flatnonzero((c["fx"] >= i0) & (c["fx"] < i0 + m * nbx)
                                & (c["fy"] >= j0) & (c["fy"] < j0 + mm * nby))
        if inside.size < min(top_k, n_cand) and self.best.size < self.n_candidates and not narrow:
            return None   # the view's best may lie among the candidates not kept
        pick = inside[:top_k]
        points = {"index": self.best[pick], "x": c["x"][pick], "y": c["y"][pick], "code": c["code"][pick],
                  "flag": c["flag"][pick] if flags else np.zeros(pick.size, dtype=bool),
                  "score": c["score"][pick] if score else None}
        ext = (float(self.edge(0, i0)), float(self.edge(0, i0 + m * nbx)),
               float(self.edge(1, j0)), float(self.edge(1, j0 + mm * nby)))
        return agg.Picture(extent=ext, counts=counts, layer_totals=totals, n=n, n_finite=n_finite, in_view=in_view,
                           points=points, all_points=False, n_candidates=n_cand,
                           flagged_layer=self.n_codes if flags else None, bins=(nbx, nby), mean=mean, coarse=narrow)

    def _blocks(self, grid: np.ndarray, i0: int, m: int, nbx: int, j0: int, mm: int, nby: int) -> np.ndarray:
        """Sums of ``grid``'s blocks of m x mm fine cells from (i0, j0): (layers, nbx, nby);
        cells past the grid's edge count nothing."""
        sub = grid[:, i0:i0 + m * nbx, j0:j0 + mm * nby]
        full = np.zeros((grid.shape[0], m * nbx, mm * nby), dtype=grid.dtype)
        full[:, :sub.shape[1], :sub.shape[2]] = sub
        return full.reshape(grid.shape[0], nbx, m, nby, mm).sum(axis=(2, 4), dtype=grid.dtype if grid.dtype.kind == "f"
                                                                else np.int64)
