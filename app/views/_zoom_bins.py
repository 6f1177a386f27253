"""Heatmaps that follow the zoom: after a plot's visible range (or size) settles, the rows and
columns on screen are binned again (:mod:`._binning`) to the pixels there are, so that at enough
zoom every sample has its own row. Large regions are binned off the GUI thread the way every view
does it (:mod:`._latest`): a newer request cancels an older one between blocks, and only the
latest answer is drawn."""
from __future__ import annotations

import math
from dataclasses import dataclass

import pyqtgraph as pg
from PySide6.QtCore import QObject, QRectF, Signal

from ._binning import MAX_BINS, Bins, bins_for
from ._latest import SETTLE_MS, cancel_test, runner, settle_timer

__all__ = ["Region", "ZoomBins", "Extent", "bins_limit", "SETTLE_MS", "SYNC_VALUES"]

#: Regions of at most this many values are binned on the GUI thread (about 30 ms); larger ones
#: on a worker thread.
SYNC_VALUES = 1_500_000
#: Never fewer bins than this along an axis: small tables are drawn whole whatever the plot size.
MIN_BINS = 512


def bins_limit(pixels: float) -> int:
    """Bins along an axis ``pixels`` long: two per pixel (the painter then averages pairs, never
    drops rows), at least MIN_BINS, at most MAX_BINS."""
    return int(min(max(2 * math.ceil(pixels), MIN_BINS), MAX_BINS))


@dataclass(frozen=True)
class Region:
    """The rows and columns of a table drawn in one image, and the bins of each."""

    rows: Bins
    cols: Bins

    @property
    def values(self) -> int:
        return self.rows.length * self.cols.length


class ZoomBins(QObject):
    """Bins the region of a (n, d) table a ViewBox shows.

    ``compute(region, cancelled) -> payload`` bins (no Qt; ``cancelled()`` says a newer request
    replaced this one); ``draw(region, payload)`` draws it on the GUI thread. ``drawn`` is
    emitted with the region after each draw (tests wait on it).
    """

    drawn = Signal(object)

    def __init__(self, viewbox, compute, draw, parent=None):
        super().__init__(parent)
        self.viewbox, self.compute, self._draw = viewbox, compute, draw
        self.shape = None
        self.region: Region | None = None    # what is drawn
        self.error = ""                      # why the last region could not be binned
        self._runner = runner(self, self._arrived, self._failed)
        self._timer = settle_timer(self, self.update)
        viewbox.sigRangeChanged.connect(self._changed)
        viewbox.sigResized.connect(self._changed)

    def set_table(self, shape) -> None:
        """A new table (or none): what is drawn is forgotten, pending work cancelled."""
        self.shape = None if shape is None else (int(shape[0]), int(shape[1]))
        self._runner.cancel()
        self.region = None

    def _changed(self, *_):
        if self.shape is not None:
            self._timer.start()

    def wanted(self) -> Region | None:
        """The region on screen now, clipped to the table, binned to the plot's pixels."""
        if self.shape is None:
            return None
        if all(self.viewbox.autoRangeEnabled()):
            return self.whole()   # the range may not have caught up with the table yet
        n, d = self.shape
        (x0, x1), (y0, y1) = self.viewbox.viewRange()
        r0, r1 = _clip(y0, y1, n)
        c0, c1 = _clip(x0, x1, d)
        return Region(bins_for(r0, r1, bins_limit(self.viewbox.height())),
                      bins_for(c0, c1, bins_limit(self.viewbox.width())))

    def whole(self) -> Region:
        """The whole table, binned to the plot's pixels (what is drawn first)."""
        n, d = self.shape
        return Region(bins_for(0, n, bins_limit(self.viewbox.height())),
                      bins_for(0, d, bins_limit(self.viewbox.width())))

    def draw_now(self, region: Region | None = None) -> None:
        """Bin ``region`` (default: the one on screen) on this thread and draw it."""
        region = region or self.wanted()
        if region is None:
            return
        self._runner.cancel()
        self._show(region, self.compute(region, cancel_test(None, "")))

    def update(self) -> None:
        """Bin what is on screen if it is not what is drawn: here when small, else on a worker."""
        region = self.wanted()
        if region is None or region == self.region:
            return
        if region.values <= SYNC_VALUES:
            self.draw_now(region)
            return
        compute = self.compute   # held: the view may be closed while the job runs

        def work(progress):
            return region, compute(region, cancel_test(progress, "binning the zoomed region"))

        self._runner.submit(work, tag="zoom")

    def _arrived(self, job, result) -> None:
        self._show(*result)   # the runner delivers only the latest request's answer

    def _failed(self, job, message, details) -> None:
        self.error = message

    def show(self, region: Region, payload) -> None:
        """Draw ``payload`` binned elsewhere for ``region`` (pending work is cancelled)."""
        self._runner.cancel()
        self._show(region, payload)

    def _show(self, region: Region, payload) -> None:
        self.region = region
        self._draw(region, payload)
        self.drawn.emit(region)

    def cancel(self) -> None:
        """Stop pending work (the view is cleared or closed)."""
        self._timer.stop()
        self.set_table(None)


def _clip(lo: float, hi: float, n: int) -> tuple[int, int]:
    """Whole indices ``a:b`` of ``0:n`` that the range lo..hi touches (at least one)."""
    a = int(min(max(math.floor(lo), 0), n - 1))
    b = int(min(max(math.ceil(hi), a + 1), n))
    return a, b


class Extent(pg.GraphicsObject):
    """Nothing drawn: holds a plot's whole data extent, so auto range shows all of it while the
    images or bars hold only the region zoomed into."""

    def __init__(self):
        super().__init__()
        self.rect = QRectF()

    def set_rect(self, rect: QRectF) -> None:
        self.prepareGeometryChange()
        self.rect = QRectF(rect)

    def boundingRect(self):
        return self.rect

    def paint(self, *_):
        pass
