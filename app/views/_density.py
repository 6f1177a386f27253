"""Many points drawn honestly: a 2-D histogram (counts per screen bin, log colour scale) instead
of a million overlapping dots, with the flagged samples drawn on top as points.

Above :data:`DENSITY_POINTS` samples a scatter's individual dots cost seconds to paint and hide
each other; a random subsample would be quick but drops exactly the rare points (outliers) a
user looks for. The histogram keeps every sample (its counts sum to the number of finite
points), and the flagged ones are never binned away: :class:`PointCloud` draws them as filled
points above the image.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF

from . import _style as st

__all__ = ["DENSITY_POINTS", "DENSITY_BINS", "Density"]

#: Above this many points a scatter draws a density image instead of dots.
DENSITY_POINTS = 200_000
#: Bins along each axis of the density image.
DENSITY_BINS = 300


class Density:
    """The density image of one plot; ``counts`` (bins_x, bins_y) and ``extent`` (x0, x1, y0, y1)
    are what is drawn, ``n_binned`` how many samples the image holds."""

    def __init__(self, plot: pg.PlotItem, bins: int = DENSITY_BINS):
        self.plot = plot
        self.bins = int(bins)
        self.image = pg.ImageItem(axisOrder="col-major")
        self.image.setZValue(0.5)   # under the flagged points and the selection
        self.image.setVisible(False)
        plot.addItem(self.image)
        self.counts = np.zeros((0, 0), dtype=np.int64)
        self.extent = (0.0, 1.0, 0.0, 1.0)
        self.n_binned = 0
        self.cmap = st.colormap()

    @property
    def active(self) -> bool:
        return self.image.isVisible()

    def show(self, x: np.ndarray, y: np.ndarray) -> None:
        ok = np.isfinite(x) & np.isfinite(y)
        xs, ys = x[ok], y[ok]
        if xs.size == 0:
            self.hide()
            return
        x0, x1 = float(xs.min()), float(xs.max())
        y0, y1 = float(ys.min()), float(ys.max())
        x1 = x1 if x1 > x0 else x0 + 1.0
        y1 = y1 if y1 > y0 else y0 + 1.0
        counts, _, _ = np.histogram2d(xs, ys, bins=self.bins, range=[[x0, x1], [y0, y1]])
        self.counts = counts.astype(np.int64)
        self.extent = (x0, x1, y0, y1)
        self.n_binned = int(self.counts.sum())
        # Log colour scale: a bin of 1 sample is still visible beside one of 10^5; empty bins
        # are transparent so the plot's background shows where there are no samples.
        top = max(1.0, np.log10(self.counts.max()) if self.counts.size else 1.0)
        lut = self.cmap.getLookupTable(0.0, 1.0, 256, alpha=True)
        lut[0, 3] = 0
        level = np.where(self.counts > 0, 1.0 + np.log10(np.maximum(self.counts, 1)) / top * 254.0, 0.0)
        self.image.setImage(level.astype(np.float32), levels=(0.0, 255.0), lut=lut, autoLevels=False)
        self.image.setRect(QRectF(x0, y0, x1 - x0, y1 - y0))
        self.image.setVisible(True)

    def log_range(self) -> tuple[float, float]:
        """(0, log10 of the fullest bin): what the colour bar spans."""
        top = int(self.counts.max()) if self.counts.size else 1
        return 0.0, max(1.0, float(np.log10(max(top, 1))))

    def hide(self) -> None:
        self.image.setVisible(False)
        self.counts = np.zeros((0, 0), dtype=np.int64)
        self.n_binned = 0
