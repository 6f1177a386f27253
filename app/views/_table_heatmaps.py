"""A table's X, L and S as the L + S view draws them: each column in its own units, binned to the
panels' pixels (:mod:`._binning`), the zoomed region binned again (:mod:`._zoom_bins`), the mask
counted per bin, and what a bin under the mouse holds. The view keeps the frames of images and
videos; this keeps tables of any size (in memory or on disk: nothing is copied whole)."""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import QObject

from ..mapped_tables import release as release_mapped
from ._binning import bin_array, block_rows, blocks, column_extremes
from ._common import describe_sample, fmt
from ._latest import cancel_test, runner
from ._pictures import BIN_RULE
from ._zoom_bins import SYNC_VALUES, ZoomBins

__all__ = ["column_units", "ColumnScaled", "Above", "probe_rows", "TableHeatmaps", "EXACT_SHARE"]


#: A column of L that varies by less than this share of X's range in that column is shown on X's
#: range: divided by L's range, its S read beyond ±100 and set the colour scale of every column.
#: PCP on a8a's 0/1 columns left L varying by 1e-13 to 4e-8 of X's range (rounding) in 117 of 123
#: columns and by 0.1-0.5 % in 4 more: S's scale reached ±1.5e9, then ±750, and S was blank but
#: for specks. (A gross entry 100 times a column's spread is the price: that column is then
#: drawn on X's range, its other entries in a narrow band of grey.)
FLAT = 0.01


def column_units(X, L) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(lo, span, flat) per column: the display units of a table whose columns differ in unit.
    Each column is shown on the range of its low-rank part (L's min -> 0, max -> 1; X in the
    same units, beyond 0..1 where it holds what S took out), and S divided by that range. L's
    range, not X's: one gross entry of X set its column's range and drew the rest of the column
    black. A column L varies in by under FLAT of X's range (``flat``) is shown on X's range. Read in
    blocks (X and L may be on disk)."""
    lo, hi = column_extremes(L)
    xlo, xhi = column_extremes(X)
    flat = ~(hi - lo > FLAT * (xhi - xlo))
    lo = np.where(flat, xlo, lo)
    span = np.where(flat, xhi, hi) - lo
    return lo, np.where(span > 0, span, 1.0), flat


class ColumnScaled:
    """``(a - lo) / span`` column by column, computed for the rows and columns read (a table
    of any size, in memory or on disk, is never copied whole)."""

    def __init__(self, a, lo, span, shift: bool = True):
        self.a, self.lo, self.span = a, (lo if shift else np.zeros_like(lo)), span
        self.shape = tuple(int(v) for v in a.shape)
        self.chunks = getattr(a, "chunks", None)

    def __getitem__(self, key):
        rows, cols = key if isinstance(key, tuple) else (key, slice(None))
        block = np.asarray(self.a[rows, cols], dtype=np.float64)
        return (block - self.lo[cols]) / self.span[cols]


class Above:
    """``|S| > t`` as 0.0 / 1.0, computed for the rows and columns read (binned by its mean:
    the share of each bin in the mask)."""

    def __init__(self, S, t: float):
        self.S, self.t, self.shape, self.chunks = S, float(t), S.shape, getattr(S, "chunks", None)

    def __getitem__(self, key):
        return (np.abs(self.S[key]) > self.t).astype(np.float64)


#: Values of S read to set the colour scale and the default threshold of a large table.
PROBE_VALUES = 2_000_000
#: The mask's share of entries is counted exactly up to this many entries (else on the probe).
EXACT_SHARE = 50_000_000
#: A table of more entries than this is loaded (units, probe, scales, overview) on a worker: at
#: 40,000 x 8 loading and scaling it on the GUI thread took 50-70 ms of a first drawing.
LOAD_SYNC_VALUES = 100_000


def probe_rows(n: int, d: int) -> np.ndarray:
    """Rows whose values set a table's scales: all of them when they are few, else evenly
    spaced runs of consecutive rows (blocks on disk are read whole anyway)."""
    if n * d <= PROBE_VALUES:
        return np.arange(n)
    runs = int(min(64, max(1, PROBE_VALUES // max(d, 1))))
    per = max(1, PROBE_VALUES // (runs * max(d, 1)))
    starts = np.linspace(0, n - per, runs).astype(np.int64)
    return np.unique((starts[:, None] + np.arange(per)[None, :]).ravel())


class TableHeatmaps(QObject):
    """The heatmaps of one table in ``pictures`` (a :class:`._pictures.PictureGrid`), following
    the zoom of ``viewbox``; ``threshold()`` is the mask's threshold, ``on_drawn()`` is called
    after each draw (the view then says what is shown)."""

    def __init__(self, pictures, viewbox, threshold, on_drawn, parent=None):
        super().__init__(parent)
        self.pictures, self.threshold, self.on_drawn = pictures, threshold, on_drawn
        self.zoom = ZoomBins(viewbox, self.bin_region, self._draw_region, self)
        self.X = self.L = self.S = None
        self.flat = 0   # columns of the table L does not vary in (shown on X's range)
        self.levels = ((0.0, 1.0), (-1.0, 1.0))
        self._share = None
        self._t = 0.0   # the threshold, read on the GUI thread for the pool's binning
        # A new threshold's masks and share, counted on a worker when the table is large
        # (the spin box recounted up to 50 million entries on the GUI thread).
        self._counts = runner(self, self._counted)
        # A large table's units, probe and overview, made on a worker (see load_later).
        self._loads = runner(self, self._loaded, self._load_failed)
        self._load_work = None   # (work, then) of the table being loaded
        self._overview = None    # (region, tiles) made with the table, drawn by draw()
        self._now = False        # counting on this thread whatever the cost (finish)

    @staticmethod
    def large(shape) -> bool:
        """Whether a table of ``shape`` is loaded off the GUI thread (load_later)."""
        return int(shape[0]) * int(shape[1]) > LOAD_SYNC_VALUES

    def load(self, X, L, S):
        """A new table (arrays of any kind, see :func:`._binning.bin_array`), on this thread
        (see :meth:`load_later`); returns the rows of X, L and S (in display units) that set the
        colour scales (:func:`probe_rows`)."""
        self._loads.cancel()
        self._load_work = self._overview = None
        lo, span, flat = column_units(X, L)
        self.flat = int(flat.sum())
        self.X, self.L = ColumnScaled(X, lo, span), ColumnScaled(L, lo, span)
        self.S = ColumnScaled(S, lo, span, shift=False)
        self._probe = probe_rows(*self.S.shape)
        self._share = None
        return tuple(a[self._probe] for a in (self.X, self.L, self.S))

    def open(self, table, then, say, summary=None) -> None:
        """Load ``table`` (X, L, S) and call ``then(summary(*probes))`` (see :meth:`load`;
        ``summary`` None: the probes themselves): at once, or once a worker has made them for a
        large table (``say`` tells the user meanwhile)."""
        summary = summary or (lambda *probes: probes)
        if not self.large(table[2].shape):
            then(summary(*self.load(*table)))
            return
        say(f"binning {table[2].shape[0]:,} samples × {table[2].shape[1]:,} features…")
        self.load_later(*table, then, summary)

    def load_later(self, X, L, S, then, summary=None) -> None:
        """:meth:`load` and the binning of the overview for a large table, on a worker: reading
        every entry of a 2,000,000 x 20 table held the GUI thread for seconds (issue 33.2).
        ``then(summary(*probes))`` runs on the GUI thread once they are made (it draws, see
        :meth:`draw`), ``summary`` (no Qt) on the worker; :meth:`finish` makes them at once (an
        export)."""
        summary = summary or (lambda *probes: probes)
        self.zoom.set_table(S.shape)
        region = self.zoom.whole()
        self.X = self.L = self.S = None

        def work(progress):
            cancelled = cancel_test(progress, "binning the table")
            lo, span, flat = column_units(X, L)
            scaled = (ColumnScaled(X, lo, span), ColumnScaled(L, lo, span), ColumnScaled(S, lo, span, shift=False))
            probe = probe_rows(*scaled[2].shape)
            tiles = {"X": bin_array(scaled[0], region.rows, region.cols, "mean", cancelled),
                     "L": bin_array(scaled[1], region.rows, region.cols, "mean", cancelled),
                     "S": bin_array(scaled[2], region.rows, region.cols, "absmax", cancelled)}
            return scaled, int(flat.sum()), probe, summary(*(a[probe] for a in scaled)), (region, tiles)

        self._load_work = (work, then)
        self._loads.submit(work, tag="table")

    def loading(self) -> bool:
        return self._load_work is not None

    def cancel(self) -> None:
        """Forget the table being loaded (the view is cleared)."""
        self._loads.cancel()
        self._load_work = self._overview = None

    def finish(self) -> None:
        """Make and draw the table being loaded, and count the masks drawn, now, on this thread
        (an export: a 1,000,000-row table's mask was exported uncounted, "any in bin", one
        orange block)."""
        self._now = True
        try:
            if self._load_work is not None:
                self._loads.cancel()
                self._loaded(None, self._load_work[0](None))
            if self.S is not None and any(t.get("t") != self.threshold() for _, t in self.pictures.tiles.values()):
                self._counts.cancel()
                self.redraw_masks()
        finally:
            self._now = False

    def _loaded(self, job, result) -> None:
        if self._load_work is None:
            return
        then = self._load_work[1]
        self._load_work = None
        (self.X, self.L, self.S), self.flat, self._probe, probes, self._overview = result
        self._share = None
        release_mapped()   # the pages of a mapped table the worker read
        then(probes)

    def _load_failed(self, job, message, details) -> None:
        self._load_work = None
        self.zoom.error = message
        self.on_drawn()

    def draw(self, gray_levels, s_levels) -> None:
        """The overview of the whole table, binned to the panel's size (on this thread: an
        exported figure is drawn at once; a large table's was binned with it, see load_later);
        zooming in bins what is on screen (see _zoom_bins)."""
        self.levels = (gray_levels, s_levels)
        self._t = self.threshold()
        overview, self._overview = self._overview, None
        self.zoom.set_table(self.S.shape)
        if overview is not None:
            self.zoom.show(*overview)
        else:
            self.zoom.draw_now(self.zoom.whole())

    def bin_region(self, region, cancelled):
        """X and L as bin means, S as each bin's entry of largest |S| (no Qt: may run on a pool
        thread). The overview already drawn is reused when the whole table is asked for again.
        None while the table is being loaded (a resize meanwhile asks; the load draws it)."""
        X, L, S = self.X, self.L, self.S
        if X is None:
            return None
        kept = self.pictures.tiles.get("whole")
        if kept is not None and kept[0] == region:
            if kept[1].get("t") == self._t:
                return kept[1]
            tiles = dict(kept[1])   # the overview, its mask counted again here (off the GUI thread)
            self.count_mask(region, tiles, self._t, cancelled)
            return tiles
        tiles = {"X": bin_array(X, region.rows, region.cols, "mean", cancelled),
                 "L": bin_array(L, region.rows, region.cols, "mean", cancelled),
                 "S": bin_array(S, region.rows, region.cols, "absmax", cancelled)}
        self.count_mask(region, tiles, self._t, cancelled)
        return tiles

    def count_mask(self, region, tiles, t, cancelled=None) -> None:
        """``tiles["M"]``: the share of each bin's entries with |S| above ``t`` (None when the
        region is too large to count again at every threshold: the mask is then a bin's
        largest |S|); ``tiles["t"]`` the threshold it was counted at."""
        if not (region.rows.binned or region.cols.binned):
            tiles["M"] = (np.abs(tiles["S"]) > t).astype(float)
        elif region.values <= EXACT_SHARE:
            tiles["M"] = bin_array(Above(self.S, t), region.rows, region.cols, "mean", cancelled)
        else:
            tiles["M"] = None
        tiles["t"] = t

    def _draw_region(self, region, tiles) -> None:
        if self.S is None or tiles is None:
            return
        n, d = self.S.shape
        whole = (region.rows.start, region.rows.stop, region.cols.start, region.cols.stop) == (0, n, 0, d)
        t = self.threshold()
        stale = tiles.get("t") != t   # binned before the threshold changed
        if stale and (region.values <= SYNC_VALUES or self._now):
            self.count_mask(region, tiles, t)
            stale = False
        self.pictures.draw_tables(region, tiles, *self.levels, t, whole)
        if stale:
            self.count_later(t, [(region, tiles)])
        self.on_drawn()

    def redraw_masks(self) -> None:
        """The masks of what is drawn, at the threshold now set: counted here when that is
        cheap, else on a worker (the masks drawn stay until the new ones are counted)."""
        if self.S is None:
            return   # a table being loaded: its masks are counted when it is drawn
        t = self._t = self.threshold()
        stale = [(region, tiles) for region, tiles in self.pictures.tiles.values() if tiles.get("t") != t]
        if self._now or sum(r.values for r, _ in stale) + self._share_cost(t) <= SYNC_VALUES:
            for region, tiles in stale:
                self.count_mask(region, tiles, t)
            self.pictures.redraw_masks(self.levels[0], t)
            return
        self.count_later(t, stale)

    def count_later(self, t: float, stale=()) -> None:
        """Count on a worker the masks of ``stale`` (region, tiles) and the share at ``t``."""
        count_mask, count_share = self.count_mask, self._count_share

        def work(progress):
            cancelled = cancel_test(progress, "counting the mask")
            masks = []
            for region, tiles in stale:
                new = {"S": tiles["S"]}
                count_mask(region, new, t, cancelled)
                masks.append((tiles, new["M"]))
            return t, masks, count_share(t, cancelled)

        self._counts.submit(work, tag="mask")

    def _counted(self, job, result) -> None:
        t, masks, share = result
        if self.S is None or t != self.threshold():
            return   # a newer threshold's count is on its way
        for tiles, m in masks:
            tiles["M"], tiles["t"] = m, t
        self._share = (t, share)
        if masks:
            self.pictures.redraw_masks(self.levels[0], t)
        self.on_drawn()

    def _share_cost(self, t: float) -> int:
        """Entries read to count the share at ``t`` (0 when known)."""
        if self._share is not None and self._share[0] == t:
            return 0
        n, d = self.S.shape
        return self._probe.size * d if n * d > EXACT_SHARE else n * d

    def _count_share(self, t: float, cancelled=None) -> tuple[float, bool]:
        """(share of the table's entries with |S| above ``t``, exact): over all entries of a
        table up to EXACT_SHARE of them, else over the rows that set the scales (no Qt)."""
        S = self.S
        n, d = S.shape
        if n * d > EXACT_SHARE:
            return float(np.mean(np.abs(S[self._probe]) > t)), False
        hits = sum(int(np.count_nonzero(np.abs(S[a:b]) > t)) for a, b in blocks(0, n, block_rows(S, d), cancelled))
        return hits / max(n * d, 1), True

    def mask_share(self) -> tuple[float, bool] | None:
        """(share of the table's entries in the mask, exact), or None while a worker counts it."""
        t = self.threshold()
        if self._share is not None and self._share[0] == t:
            return self._share[1]
        if self._share_cost(t) > SYNC_VALUES:
            if not self._counts.is_busy():
                self.count_later(t)
            return None
        self._share = (t, self._count_share(t))
        return self._share[1]

    def status(self) -> str:
        """What is shown, how it is binned, and the mask's share ("" before a table is drawn)."""
        region = self.pictures.shown_region()
        if region is None or self.S is None:
            return ""
        n, d = self.S.shape
        share = self.mask_share()
        binned = region.rows.binned or region.cols.binned
        shown = (f"{region.rows.describe('samples')} × {region.cols.describe('features')}"
                 + ("" if region.rows.length == n and region.cols.length == d else
                    f" shown (rows {region.rows.start:,}–{region.rows.stop - 1:,} of {n:,})"))
        how = f" · {BIN_RULE}; zoom in to see single samples" if binned else ""
        mask = ("counting…" if share is None else
                f"{'' if share[1] else 'about '}{100 * share[0]:.1f}% of entries")
        flat = (f" · L varies by under {FLAT:.0%} of X's range in {self.flat:,} of {d:,} features: "
                "those are shown on X's range" if self.flat else "")
        return (f"{shown}{how}{flat} · mask: {mask} · click a "
                f"row to select its sample{'s' if region.rows.binned else ''} (Shift adds, Ctrl subtracts)")

    def bin_at(self, pos):
        """((region, tiles), row bin, column bin) under the plot position ``pos`` (None outside)."""
        row, col = int(np.floor(pos.y())), int(np.floor(pos.x()))
        for which in ("zoomed", "whole"):
            kept = self.pictures.tiles.get(which)
            if kept is None:
                continue
            region = kept[0]
            if region.rows.start <= row < region.rows.stop and region.cols.start <= col < region.cols.stop:
                return kept, region.rows.of(row), region.cols.of(col)
        return None

    def rows_at(self, pos):
        """The samples of the bin under ``pos`` (None outside the table)."""
        at = self.bin_at(pos)
        if at is None:
            return None
        (region, _), b, _c = at
        return np.arange(*region.rows.span(b))

    def describe_at(self, pos, dataset) -> str:
        """The samples, features and values of the bin under ``pos`` ("" outside)."""
        at = self.bin_at(pos)
        if at is None:
            return ""
        (region, tiles), b, c = at
        (r0, r1), (c0, c1) = region.rows.span(b), region.cols.span(c)
        names = dataset.feature_names
        who = (describe_sample(dataset, r0) if r1 - r0 == 1 else
               f"samples #{r0:,}–#{r1 - 1:,} (a bin of {r1 - r0:,})")
        what = names[c0] if c1 - c0 == 1 else f"features {names[c0]}–{names[c1 - 1]} (a bin of {c1 - c0:,})"
        x, l_, s_ = (float(tiles[k][b, c]) for k in ("X", "L", "S"))
        mean = " (means)" if r1 - r0 > 1 or c1 - c0 > 1 else ""
        return (f"under the mouse: {who} · {what} · X {fmt(x)}, L {fmt(l_)}{mean}, "
                f"S {fmt(s_)}{' (largest |S|)' if mean else ''}")
