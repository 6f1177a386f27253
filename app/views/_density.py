"""Many points drawn honestly: counts per screen bin instead of a million overlapping dots, one
image per colour layer, with the flagged samples drawn on top as points.

Above :data:`DENSITY_POINTS` samples a scatter's individual dots cost more GUI time than a
frame has and hide each other; a random subsample would be quick but drops exactly the rare
points (outliers) a user looks for. The counts keep every sample in view (they sum to the
samples in view), and the flagged ones are never binned away: beyond a few tens of thousands
they get a density layer of their own colour and their highest scores are drawn as points.
The counts are made off the GUI thread (:mod:`app.views._aggregate`, :mod:`app.views._binned`);
this module only turns them into images.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF
from PySide6.QtGui import QColor

from . import _style as st

__all__ = ["DENSITY_POINTS", "DENSITY_BINS", "Density"]

#: Above this many samples a cloud is drawn as its density plus the points worth drawing, made
#: off the GUI thread, instead of point by point. pyqtgraph's per-point path costs the GUI thread
#: in proportion to the points: 44 + 35 ms (set and draw + paint) at 20,000 points, 89 + 48 at
#: 50,000 (benchmarks/results_views.md, load 4.2), and a 20,000-point scatter's paint was the
#: largest stop of a 20,000-row result's tour of the views (50-100 ms); a binned picture costs a
#: fixed few ms and at most FLAG_POINTS symbols whatever n. 10,000 points paint in ~11 ms against
#: ~16 ms for 20,000 and ~9 ms for 5,000 (offscreen, 900 x 600): below it the saving is small and
#: the user keeps every point.
DENSITY_POINTS = 10_000
#: Bins along each axis when the plot has no size yet (an export before the view is shown).
DENSITY_BINS = 300
# Screen pixels per bin along each axis, and the bounds of the grid.
_PX_PER_BIN = 2.5
_BINS_RANGE = (32, 480)


def bins_for(vb) -> tuple[int, int]:
    """A grid sized by the screen: about one bin per 2.5 pixels of the plot."""
    w, h = vb.width(), vb.height()
    if not (w > 10 and h > 10):
        return DENSITY_BINS, DENSITY_BINS
    lo, hi = _BINS_RANGE
    return (int(np.clip(round(w / _PX_PER_BIN), lo, hi)), int(np.clip(round(h / _PX_PER_BIN), lo, hi)))


class Density:
    """The density images of one plot. ``counts`` (bins_x, bins_y) are the samples per bin of all
    layers together, ``extent`` (x0, x1, y0, y1) the range they cover, ``n_binned`` how many
    samples they hold, ``layers`` the layers drawn (index, colour or None for the colour map,
    samples), bottom to top."""

    def __init__(self, plot: pg.PlotItem, bins: int = DENSITY_BINS):
        self.plot = plot
        self.bins = int(bins)
        self.images: list[pg.ImageItem] = []
        self.counts = np.zeros((0, 0), dtype=np.int64)
        self.extent = (0.0, 1.0, 0.0, 1.0)
        self.n_binned = 0
        self.layers: list = []
        self.cmap = st.colormap()
        self._active = False

    @property
    def active(self) -> bool:
        return self._active

    def _image(self, i: int) -> pg.ImageItem:
        while len(self.images) <= i:
            im = pg.ImageItem(axisOrder="col-major")
            im.setVisible(False)
            self.plot.addItem(im)
            self.images.append(im)
        return self.images[i]

    def show(self, counts: np.ndarray, extent, colors, unseen=(), on_top=None, mean=None, levels=None) -> None:
        """Draw layered ``counts`` (layers, bx, by) over ``extent``; ``colors[k]`` is layer k's
        colour, None for the sequential colour map (with one layer, the counts' colour bar).
        Larger layers are drawn first, so rare classes lie on top, and layer ``on_top`` (the
        flagged samples) above all; empty bins are transparent. Layers in ``unseen`` are
        counted but not drawn (their samples are all drawn as points). With ``mean`` (layers,
        bx, by) and its colour ``levels`` (lo, hi), a colour-map layer shows each bin's mean
        score in the colour map and its count in the opacity."""
        counts = np.asarray(counts)
        self.counts = counts.sum(axis=0)
        self.extent = tuple(float(v) for v in extent)
        self.n_binned = int(self.counts.sum())
        totals = counts.reshape(counts.shape[0], -1).sum(axis=1)
        order = [int(k) for k in np.argsort(-totals, kind="stable") if totals[k] > 0 and k not in unseen]
        order.sort(key=lambda k: k == on_top)   # stable: by size, then the flagged layer last
        top = max(1.0, float(np.log10(max(int(counts.max(initial=1)), 1))))
        x0, x1, y0, y1 = self.extent
        self.layers = []
        reach = spread_reach(self.counts > 0)   # lone bins drawn larger (see spread_reach)
        for j, k in enumerate(order):
            im = self._image(j)
            c = counts[k]
            # Log scale: a bin of 1 sample is still visible beside one of 10^5.
            level = spread(np.where(c > 0, 1.0 + np.log10(np.maximum(c, 1)) / top * 254.0, 0.0).astype(np.float32),
                           reach)
            if colors[k] is None and mean is not None and levels is not None:
                im.setLookupTable(None)
                mk = mean[k] if not reach else spread(np.nan_to_num(mean[k], nan=-np.inf), reach)
                im.setImage(self._by_mean(mk, levels, level), autoLevels=False, levels=(0, 255))
            else:
                im.setImage(level, levels=(0.0, 255.0), lut=_lut(colors[k], self.cmap, k == on_top), autoLevels=False)
            im.setRect(QRectF(x0, y0, x1 - x0, y1 - y0))
            im.setZValue(0.5 + 1e-3 * j)   # under the points and the selection
            im.setVisible(True)
            self.layers.append((k, colors[k], int(totals[k])))
        for im in self.images[len(order):]:
            im.setVisible(False)
        self._active = True

    def _by_mean(self, mean, levels, level) -> np.ndarray:
        lo, hi = levels
        with np.errstate(invalid="ignore"):
            idx = np.nan_to_num((mean - lo) / (hi - lo if hi > lo else 1.0) * 255.0, nan=0.0)
        rgba = np.empty(mean.shape + (4,), dtype=np.uint8)
        rgba[..., :3] = self.cmap.getLookupTable(0.0, 1.0, 256, alpha=False)[np.clip(idx, 0, 255).astype(np.intp)]
        rgba[..., 3] = np.where(level > 0, 110 + level * (145 / 255), 0).astype(np.uint8)
        return rgba

    def log_range(self) -> tuple[float, float]:
        """(0, log10 of the fullest bin): what the colour bar spans."""
        top = int(self.counts.max()) if self.counts.size else 1
        return 0.0, max(1.0, float(np.log10(max(top, 1))))

    def hide(self) -> None:
        for im in self.images:
            im.setVisible(False)
        self.counts = np.zeros((0, 0), dtype=np.int64)
        self.n_binned = 0
        self.layers = []
        self._active = False


#: Spread lone bins by at most this many bins each way (:func:`spread_reach`).
SPREAD_MAX = 2
#: Spread while fewer than this share of the filled bins touch another filled bin.
SPREAD_SHARE = 0.5


def spread_reach(filled: np.ndarray) -> int:
    """How many bins each way to spread a picture whose filled bins are ``filled`` (Datashader's
    dynspread): 0 when at least :data:`SPREAD_SHARE` of them touch another filled bin; else the
    least reach (at most :data:`SPREAD_MAX`) at which that share would. Samples on a few
    distinct values (PCP's rank-1 subspace of a8a: 22,696 samples on three score distances and
    whole-number scores) filled a few dozen lone bins of 2.5 px, dashes too small to see: the
    picture of 22,696 samples looked empty."""
    n = int(np.count_nonzero(filled))
    if n == 0:
        return 0
    p = 1 + 2 * SPREAD_MAX
    cum = np.pad(filled.astype(np.int32), p).cumsum(0).cumsum(1)
    h, w = filled.shape
    for reach in range(SPREAD_MAX + 1):
        r = max(1, 2 * reach)   # two bins spread by ``reach`` each touch within 2 * reach
        a0, a1, b0, b1 = p + r, p + r + h, p - r - 1, p - r - 1 + h
        c0, c1, d0, d1 = p + r, p + r + w, p - r - 1, p - r - 1 + w
        box = cum[a0:a1, c0:c1] - cum[b0:b1, c0:c1] - cum[a0:a1, d0:d1] + cum[b0:b1, d0:d1]   # filled within r
        if np.count_nonzero(filled & (box > 1)) >= SPREAD_SHARE * n:
            return reach
    return SPREAD_MAX


def spread(level: np.ndarray, reach: int) -> np.ndarray:
    """Each bin the largest of ``level`` within ``reach`` bins (the image only: the counts, the
    legends and the selections keep the samples' own bins)."""
    for _ in range(reach):
        out = level.copy()
        np.maximum(out[1:], level[:-1], out=out[1:])
        np.maximum(out[:-1], level[1:], out=out[:-1])
        tall = out.copy()
        np.maximum(out[:, 1:], tall[:, :-1], out=out[:, 1:])
        np.maximum(out[:, :-1], tall[:, 1:], out=out[:, :-1])
        level = out
    return level


def _lut(color, cmap, veil: bool = False) -> np.ndarray:
    """256 RGBA entries: 0 transparent; the colour map, or ``color`` from light to full
    (``veil``: never opaque, so the layers beneath show through the flagged samples')."""
    if color is None:
        lut = cmap.getLookupTable(0.0, 1.0, 256, alpha=True)
    else:
        q = QColor(color)
        lut = np.empty((256, 4), dtype=np.uint8)
        lut[:, :3] = (q.red(), q.green(), q.blue())
        # Even a one-sample bin is clearly there; the fullest is opaque.
        lut[:, 3] = (np.linspace(110, 255, 256).astype(np.uint8) if not veil
                     else np.linspace(60, 170, 256).astype(np.uint8))
    lut[0, 3] = 0
    return lut
