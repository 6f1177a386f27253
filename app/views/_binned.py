"""A cloud too large to draw point by point, binned off the GUI thread (the Datashader model).

The samples in the visible range are counted into a screen-sized grid per colour layer on a
worker thread (:mod:`app.views._aggregate`, through :class:`app.tasks.TaskRunner`: a new
request cancels the one in flight between two blocks, and only the newest answer is drawn).
What reaches the GUI thread is bounded by the screen: the counts, and the samples worth
drawing one by one (every one in view once few enough are; else the highest-scoring flagged).
Zooming or panning asks again once the view has settled (:mod:`._latest`), so at any zoom the
picture is exact for what is on screen. A rectangle or lasso is resolved on a worker too.

``Source.make()`` runs on the worker (once per source, its columns are then kept): whatever
costs O(n) to prepare (label codes, casting flags) is done there, never on the GUI thread. The
columns may be numpy arrays or arrays on disk (:class:`robustcore.bigdata.StoredRows`): they
are read a block at a time.
"""
from __future__ import annotations

import sys
import threading
from dataclasses import dataclass, field
from collections.abc import Callable

import numpy as np
from PySide6.QtCore import QObject, Signal

from . import _aggregate as agg
from ._density import DENSITY_POINTS, bins_for
from ._latest import runner, settle_timer

__all__ = ["Source", "Binned", "layer_entries", "flag_entries", "add_flag_entries", "POINTS_IN_VIEW", "FLAG_POINTS",
           "TOP_FLAGGED", "SELECT_CAP"]

#: At most this many samples in view: every one is drawn as a point (zoomed in far enough, a
#: binned cloud shows what an unbinned one of that size would).
POINTS_IN_VIEW = DENSITY_POINTS
#: Flagged samples in view up to this many are all drawn as points; beyond, they are a density
#: layer of their own colour and only the :data:`TOP_FLAGGED` highest-scoring are points. Seen
#: at 300,000 samples with 6,087 flagged: all 6,087 as points made a black blob that hid the
#: known outliers' layer beneath it.
FLAG_POINTS = 2_000
TOP_FLAGGED = 500
#: A selection holds at most this many samples (the highest-scoring of a larger region).
SELECT_CAP = 200_000
#: The percentiles of the score that bound its colour map.
LEVELS = (1, 99)


@dataclass
class Source:
    """What a binned cloud draws.

    ``make()`` -> {"x", "y"[, "codes", "flags", "score"]} per-row columns (array-likes or
    :class:`app.views._aggregate.Column`), run on a worker; ``colors[k]`` the colour of code k
    (one entry None: one layer in the colour map); ``by_score``: bins show their mean ``score``
    and points their own, in the colour map from the score's 1st to 99th percentile (computed
    on the worker)."""

    make: Callable[[], dict]
    n: int
    colors: list = field(default_factory=lambda: [None])
    by_score: bool = False
    what: str = "samples"
    flagged: str = "flagged"


@dataclass
class Frame:
    """Where a cloud lies, measured before its first picture: the view is framed on ``extent``
    (room for bins, as a picture's), then its first picture counts exactly what is on screen."""

    extent: tuple
    n_finite: int


class _Columns:
    """The source's columns, made once by whichever worker needs them first."""

    def __init__(self, source: Source):
        self.source = source
        self._lock = threading.Lock()
        self._cols = None
        self._levels = None
        self._ranks = None  # the score's percentiles, their first pass done while measuring the extent
        self.index = None   # a CloudIndex once built (large clouds, after the first picture)
        # The fine counts of a large cloud (a Pyramid), filled by its first picture's pass: wide
        # views are drawn from them, narrow ones coarsely at first, until the index is built.
        self.fine = None
        self.n_finite = -1

    def get(self) -> dict:
        with self._lock:
            if self._cols is None:
                self._cols = self.source.make()
            return self._cols

    def facts(self):
        """What ``make`` returned under "facts" (None until the columns are made)."""
        with self._lock:
            return None if self._cols is None else self._cols.get("facts")

    def wants_levels(self) -> bool:
        return self.source.by_score and self._levels is None and self.get().get("score") is not None

    def measure(self, report) -> Frame:
        """The extent of the finite samples (and the first pass of the score's percentiles)."""
        cols = self.get()
        ranks = agg.Ranks(LEVELS) if self.wants_levels() else None
        x0, x1, y0, y1, n_finite = agg.extent(cols["x"], cols["y"], report=report, score=cols.get("score"),
                                              ranks=ranks)
        if ranks is not None:
            self._ranks = ranks   # counted as it went: later passes only read it
        return Frame(agg.padded(x0, x1) + agg.padded(y0, y1), n_finite)

    def gather(self):
        """A second pass of the score's percentiles for a pass over every row, when still wanted."""
        return self._ranks.gather() if self._ranks is not None and self._levels is None else None

    def new_fine(self, frame: Frame, rng):
        """An empty Pyramid over ``frame``'s extent for a pass over ``rng``, when that range
        holds the extent whole (every finite sample is then in view and added to it)."""
        from ._cloud_pyramid import Pyramid
        x0, x1, y0, y1 = frame.extent
        if rng is None or not (rng[0] <= x0 and rng[1] >= x1 and rng[2] <= y0 and rng[3] >= y1):
            return None
        cols = self.get()
        return Pyramid(frame.extent, n_codes=len(self.source.colors), flags=cols.get("flags") is not None,
                       score=cols.get("score") is not None, mean_score=self.source.by_score)

    def from_fine(self, rng, how: dict, coarse: bool = False):
        """The picture of ``rng`` from the fine counts (:meth:`Pyramid.picture`), or None."""
        fine = self.fine
        if fine is None or rng is None:
            return None
        kw = {k: v for k, v in how.items() if k != "report"}
        return fine.picture(rng, n=self.source.n, n_finite=self.n_finite, flags=fine.has_flags, score=fine.has_score,
                            coarse=coarse, **kw)

    def levels(self, report, gathered=None) -> tuple[float, float] | None:
        """The score's colour range (1st to 99th percentile), from a second pass ``gathered``
        over every row when one was made, else by passes of its own."""
        cols = self.get()
        if not self.source.by_score or cols.get("score") is None:
            return None
        with self._lock:
            if self._levels is None:
                if gathered is not None:
                    lo, hi = self._ranks.result(gathered, cols["score"], report)
                else:
                    lo, hi = agg.quantiles(cols["score"], LEVELS, report=report)
                self._levels = (float(lo), float(hi)) if np.isfinite(lo) else (0.0, 1.0)
                self._ranks = None   # its histogram (8 MB) is done with
            return self._levels


class Binned(QObject):
    """The binned mode of one :class:`app.views._cloud.PointCloud`.

    Signals: ``drawn(Picture, levels)`` once a picture is drawn (``levels``: the score colour
    range, or None); ``chosen(Chosen)`` once a region is resolved (before the selection is set).
    """

    drawn = Signal(object, object)
    chosen = Signal(object)

    def __init__(self, cloud):
        super().__init__(cloud)
        self.cloud = cloud
        self.vb = cloud.vb
        self.bins = runner(self, self._on_picture, self._on_failed)
        self.picks = runner(self, self._on_chosen, self._on_failed)
        self.marks = runner(self, self._on_marks)
        # Beside the lane (app.lane): an index takes 16-18 s to build at 30M rows, and a zoom made
        # meanwhile is a pass over every row; taking turns with the build, that pass's exact
        # picture came after 11-14 s instead of 1.3-5.7 s.
        self.indexer = runner(self, self._on_indexed, self._on_index_failed, lane=False)
        self.timer = settle_timer(self, self.request)
        self.source: Source | None = None
        self.columns: _Columns | None = None
        self.picture = None
        self.levels = None
        self.last_chosen = None
        self.error = ""
        self.index_error = ""   # why the zoom index could not be built (zooms then read every row)
        self._framing = False
        self._pending = None   # the request in flight: (function, whether it frames the view)
        self._to_index = None  # the Frame of a cloud to index once its first picture is drawn
        self.vb.sigRangeChanged.connect(self._on_range)

    # -- state ---------------------------------------------------------------------------------
    @property
    def active(self) -> bool:
        return self.source is not None

    def busy(self) -> bool:
        """Whether a picture is still to come (a request in flight or waiting for the view to rest)."""
        return self.active and (self.bins.is_busy() or self.timer.isActive() or self.picture is None)

    def start(self, source: Source) -> None:
        self.stop()
        self.source, self.columns = source, _Columns(source)
        self.request(full=True)

    def stop(self) -> None:
        self.timer.stop()
        for r in (self.bins, self.picks, self.marks, self.indexer):
            r.cancel()
        self.source = self.columns = self.picture = self.levels = None
        self._pending = self._to_index = None

    # -- pictures ------------------------------------------------------------------------------
    def _on_range(self, *_):
        if self.active and self.picture is not None and not self._framing:
            self.timer.start()

    def _gone(self) -> bool:
        """The plot was deleted (its view closed, an export's views dropped) while a timer or a
        job still pointed here: nothing to bin or draw for."""
        from shiboken6 import isValid
        return not isValid(self.vb)

    def request(self, full: bool = False, frame: Frame | None = None) -> None:
        """Bin the visible range (``full``: every sample, and frame the view on them; ``frame``:
        the view was just framed on it, and a cloud to index fills its fine counts on the way)."""
        if not self.active or self._gone():
            return
        self.timer.stop()
        (x0, x1), (y0, y1) = self.vb.viewRange()
        rng = None if full else (x0, x1, y0, y1)
        bins = bins_for(self.vb)
        columns = self.columns
        how = dict(bins=bins, n_codes=len(columns.source.colors), top_k=max(FLAG_POINTS, TOP_FLAGGED),
                   max_points=POINTS_IN_VIEW, mean_score=columns.source.by_score)
        if not full and columns.index is None:
            # Not indexed yet: a view too narrow for the fine counts would wait for a pass over
            # every row (seconds at 30M); the fine counts draw it coarsely now (a few ms).
            coarse = columns.from_fine(rng, how, coarse=True)
            if coarse is not None:
                # its points as the fine counts kept them (spreading them is the worker's part)
                coarse.points = {k: None if v is None else v[:TOP_FLAGGED] for k, v in coarse.points.items()}
                self._show(coarse, columns._levels)
        fill = frame is not None and self._indexes(frame)

        def work(progress):
            if full:   # first where the cloud lies; the view is framed on it, then counted
                return columns.measure(progress), None, True
            cols = columns.get()
            index = columns.index
            # through the index: only the rows near the range, or a wide view's fine counts
            pic = index.picture(rng, report=progress, **how) if index is not None else columns.from_fine(rng, how)
            gathered = None
            if pic is None:
                gathered = columns.gather()   # the score's percentiles on the way, when still wanted
                fine = columns.new_fine(frame, rng) if fill else None
                pic = agg.aggregate(cols["x"], cols["y"], rng=rng, codes=cols.get("codes"), flags=cols.get("flags"),
                                    score=cols.get("score"), gather=gathered, fine=fine, report=progress, **how)
                if fine is not None:
                    fine.done()
                    columns.fine, columns.n_finite = fine, frame.n_finite
            # (Binned._finished, not self's: a job holds nothing of the view it bins for)
            return Binned._finished(pic, cols.get("score") is not None), columns.levels(progress, gathered), full

        self._pending = work
        self.bins.submit(work, tag="bins")

    @staticmethod
    def _finished(pic, has_score: bool):
        """``pic`` with the points worth drawing when not all of them are (the highest, spread)."""
        if not pic.all_points and (pic.flagged_layer is None or pic.n_candidates > FLAG_POINTS):
            # without flags the highest scores are the points worth drawing; without scores, none
            keep = 0 if pic.flagged_layer is None and not has_score else TOP_FLAGGED
            pic = agg.spread(pic, keep) if keep else pic
            pic.points = {k: None if v is None else v[:keep] for k, v in pic.points.items()}
        return pic

    def finish(self) -> None:
        """Draw the picture still to come now, in this thread (an export, a count)."""
        for _ in range(3):   # the full picture, then the view's own range once framed
            if not self.busy():
                return
            if self.timer.isActive() or self._pending is None:
                self.request(full=self.picture is None)
            work = self._pending
            self.bins.cancel()
            self._draw(*work(None))

    def _on_picture(self, job, result) -> None:
        if not self._gone():
            self._draw(*result)

    def _on_failed(self, job, message, details) -> None:
        self.error = message
        self.cloud.binned_failed(message)

    def _draw(self, pic, levels, framed) -> None:
        self._pending = None
        if framed:   # a Frame: nothing to draw yet
            self._framing = True
            try:
                self.cloud.frame(pic)
            finally:
                self._framing = False
            # One pass counts exactly what is on screen (the framed range is wider than the data);
            # a cloud to index is indexed after it (the pass fills the fine counts the index uses).
            self._to_index = pic if self._indexes(pic) else None
            self.request(frame=pic)
            return
        self._show(pic, levels)
        if self._to_index is not None:
            frame, self._to_index = self._to_index, None
            self._index(frame)

    def _show(self, pic, levels) -> None:
        self.picture, self.levels = pic, levels
        self.cloud.draw_picture(pic, levels)
        self.drawn.emit(pic, levels)

    def _indexes(self, frame) -> bool:
        """Whether this cloud is worth an index (:mod:`app.views._cloud_index`): very large, and
        in a window on screen (a figure drawn offscreen, the command line's, is never zoomed: at
        30M rows the index cost it 27 s of CPU and 650 MB of resident pages)."""
        from . import _cloud_index as ci
        if self.columns is None or self.columns.source.n < ci.INDEX_ROWS or frame.n_finite <= 0:
            return False
        from PySide6.QtCore import Qt
        view = self.vb.getViewWidget()
        return view is not None and not view.window().testAttribute(Qt.WidgetAttribute.WA_DontShowOnScreen)

    def _index(self, frame) -> None:
        """Sort a very large cloud's rows by where they lie, on a worker, so that a zoom reads
        only those near the range."""
        from . import _cloud_index as ci
        columns, extent = self.columns, frame.extent

        def work(progress):
            from ..out_of_core import working_dir
            columns.index = ci.CloudIndex(columns.get(), extent, folder=working_dir(), report=progress,
                                          n_codes=len(columns.source.colors), mean_score=columns.source.by_score,
                                          pyramid=columns.fine)

        self.indexer.submit(work, tag="index")

    def _on_indexed(self, job, result) -> None:
        # A view drawn coarsely, or waiting on a pass over every row: the index answers it now.
        if self.active and not self._gone() and self.picture is not None and (
                self.picture.coarse or self.bins.is_busy()):
            self.request()

    def _on_index_failed(self, job, message, details) -> None:
        # Not fatal: every zoom and selection still answers exactly from a pass over the rows.
        self.index_error = message
        print(f"robust-studio: the cloud's zoom index could not be built ({message}); "
              "zooms read every row instead", file=sys.stderr)
        self._on_indexed(job, None)

    # -- selection -----------------------------------------------------------------------------
    def select(self, region, mode: str) -> None:
        """Resolve ``region`` ("rect", corners) or ("lasso", vertices) on a worker, then set the
        shared selection (``mode``: replace, add, subtract)."""
        if not self.active:
            return
        columns = self.columns

        def work(progress):
            cols = columns.get()
            index = columns.index   # once built: only the rows near the region are read
            if index is not None and index.worth(agg.bounds(region)):
                return index.select(region, SELECT_CAP, report=progress), mode
            return agg.select(cols["x"], cols["y"], region, score=cols.get("score"), cap=SELECT_CAP,
                              report=progress), mode

        self.picks.submit(work, tag="select")

    def _on_chosen(self, job, result) -> None:
        chosen, mode = result
        self.last_chosen = chosen
        self.chosen.emit(chosen)
        self.cloud.state.set_selection(chosen.index, mode)

    def mark(self, selection: np.ndarray) -> None:
        """Find where the selected samples lie (on a worker) and ring them."""
        if not self.active:
            return
        idx = np.asarray(selection, dtype=np.int64)[:SELECT_CAP]
        columns = self.columns

        def work(progress):
            cols = columns.get()
            return idx, agg.take(cols["x"], idx), agg.take(cols["y"], idx)

        if idx.size == 0:
            self.marks.cancel()
            self._on_marks(None, (idx, np.zeros(0), np.zeros(0)))
            return
        self.marks.submit(work, tag="mark")

    def _on_marks(self, job, result) -> None:
        if self._gone():
            return
        idx, x, y = result
        self.cloud.sel_item.setData(x=x, y=y)


def layer_entries(pic, colors, names) -> list:
    """(colour, "name (count in view)") of each colour layer of a binned picture in view (the
    flagged samples are a layer of their own: the others are counted "unflagged")."""
    what = "unflagged in view" if pic.flagged_layer is not None else "in view"
    return [(c, f"{nm} ({int(pic.layer_totals[i]):,} {what})")
            for i, (c, nm) in enumerate(zip(colors, names)) if pic.layer_totals[i] > 0]


def flag_entries(pic, rule: str) -> list:
    """("flag layer" or "flag points", text): what the legend says of the flagged samples."""
    f = pic.flagged_layer
    if f is None:
        return []
    total, k = int(pic.layer_totals[f]), pic.points["index"].size
    if pic.all_points:
        return [("flag points", f"ringed: {rule} ({total:,} in view)")]
    if k >= pic.n_candidates:
        return [("flag points", f"drawn: {rule} ({total:,} in view)")]
    best = f"{k:,} of the highest, at most {agg.PER_SPOT} per spot" if pic.spread else f"the {k:,} highest"
    return [("flag layer", f"{rule}: {total:,} in view, binned"), ("flag points", f"drawn: {best}")]


def add_flag_entries(legend, cloud, pic, rule: str) -> list:
    """Add :func:`flag_entries` to ``legend`` (the cloud's own flag item for points, a swatch of
    the flagged layer's colour for the layer); returns the swatches made (keep them alive)."""
    import pyqtgraph as pg

    from . import _style as st
    made = []
    for what, text in flag_entries(pic, rule):
        if what == "flag layer":
            made.append(pg.ScatterPlotItem(size=8, brush=st.brush(st.FLAG_LAYER_COLOR), pen=None))
            legend.addItem(made[-1], text)
        else:
            legend.addItem(cloud.flag_item, text)
    return made
