"""Names of the most outlying samples beside their points, as in the outlier map of Hubert,
Rousseeuw & Vanden Branden (2005), whose figures name them: without them, which of octane's
samples lie far off the subspace was found only by hovering each point.

At most ``MAX_NAMED`` names, the farthest first. A name is hidden where it would cover a name
shown before it, another text of the plot (the region names) or another sample's point, or leave
the plot; which are shown is decided again whenever the view's transform changes (a zoom, a
resize), from the texts' and points' places on the screen.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF

from . import _style as st

MAX_NAMED = 10
POINT = 5.0   # px: a ringed point reaches this far from its centre (marker 6, ring 11)


def most_outlying(sd, od, sd_cut: float, od_cut: float, region, n: int = MAX_NAMED) -> np.ndarray:
    """Indices of at most ``n`` samples outside the regular region, the farthest first: by the
    larger of SD and OD in units of their cut-offs (ROBPCA's outlier score; OD counts only when
    it has a cut-off)."""
    out = np.flatnonzero(np.asarray(region) != 0)
    if out.size == 0:
        return out
    far = np.asarray(sd, dtype=float)[out] / sd_cut if sd_cut > 0 else np.zeros(out.size)
    if od_cut > 0:
        far = np.maximum(far, np.asarray(od, dtype=float)[out] / od_cut)
    return out[np.argsort(-far, kind="stable")[:n]]


class PointNames:
    """The names' text items on ``plot``; ``avoid()`` gives the other texts they must not cover."""

    def __init__(self, plot, avoid):
        self.plot, self._avoid = plot, avoid
        self.items: list[pg.TextItem] = []
        self.indices = np.zeros(0, dtype=np.int64)
        self._points = (np.zeros(0), np.zeros(0))
        plot.getViewBox().sigTransformChanged.connect(self.declutter)

    def set(self, indices, texts, x=None, y=None) -> None:
        """Name the samples ``indices`` with ``texts``, in that order of priority; (x, y) are
        every sample's point (the named ones' places, and the points a name must not cover)."""
        self.indices = np.asarray(indices, dtype=np.int64)
        self._points = (np.zeros(0), np.zeros(0)) if x is None else (np.asarray(x, float), np.asarray(y, float))
        xs, ys = self._points[0][self.indices], self._points[1][self.indices]
        self.add_items(len(texts) - len(self.items))
        for t, x, y, text in zip(self.items, xs, ys, texts):
            t.setText(str(text))
            t.setPos(float(x), float(y))
        for t in self.items[len(texts):]:
            t.setVisible(False)
        self.declutter()

    def add_items(self, k: int) -> None:
        """``k`` more text items (the view makes them a few per idle turn, ahead of its first
        drawing: its building is spread over turns, see outlier_map.build_step)."""
        for _ in range(max(k, 0)):
            # just above and right of the point, clear of its marker
            t = pg.TextItem("", color=st.AXIS_COLOR, anchor=(-0.15, 0.9))
            t.setZValue(15)   # over the points, under the region names
            t.setVisible(False)
            self.plot.addItem(t)
            self.items.append(t)

    def clear(self) -> None:
        self.set([], [])

    def shown(self) -> list[str]:
        return [t.textItem.toPlainText() for t in self.items[:len(self.indices)] if t.isVisible()]

    def declutter(self, *_) -> None:
        vb = self.plot.getViewBox()
        inside = vb.sceneBoundingRect()
        taken = []
        for t in self._avoid():
            if t.isVisible():
                taken.append(_inked(t))
        px, py = self._on_screen()
        for i, t in zip(self.indices, self.items):
            t.setVisible(True)    # (a hidden text item does not follow the view's transform)
            r = _inked(t)
            covered = (px >= r.left() - POINT) & (px <= r.right() + POINT) & \
                      (py >= r.top() - POINT) & (py <= r.bottom() + POINT)
            covered[i] = False
            show = inside.contains(r) and not any(r.intersects(o) for o in taken) and not covered.any()
            t.setVisible(show)
            if show:
                taken.append(r)

    def _on_screen(self) -> tuple[np.ndarray, np.ndarray]:
        """Every point's place in the scene (the view's transform is affine: one product)."""
        x, y = self._points
        if not len(self.indices):
            return x, y
        tr = self.plot.getViewBox().childGroup.sceneTransform()
        return (tr.m11() * x + tr.m21() * y + tr.dx(), tr.m12() * x + tr.m22() * y + tr.dy())


def _inked(t) -> QRectF:
    """Where a text item's letters are on the screen: its scene rectangle less the text
    document's margin (4 px), which is empty (octane's sample 26 lost its name to 1 px of the
    margins of its name and of "bad leverage (6)" above it)."""
    t.updateTransform(force=True)
    m = t.textItem.document().documentMargin() - 1
    return t.sceneBoundingRect().adjusted(m, m, -m, -m)
