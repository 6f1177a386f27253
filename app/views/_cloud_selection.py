"""How a :class:`._cloud.PointCloud` meets the user's pointer: the shared selection shown and
changed (rectangle, lasso, click; a binned cloud hands a region to its worker, see
:meth:`._binned.Binned.select`), and the sample under the mouse found in screen pixels, so a
tooltip always belongs to the point drawn under the cursor. A mixin of PointCloud, whose drawn
points (``x``, ``y``, ``sample_index``) it reads.
"""
from __future__ import annotations

import numpy as np
from PySide6.QtGui import QCursor
from PySide6.QtWidgets import QToolTip

from . import _geometry as geo


class CloudSelection:
    """Mixin of :class:`._cloud.PointCloud`: selection and hover."""

    def _connect_scene(self):
        sc = self.plot.scene()
        if sc is not None and sc is not self._scene:
            sc.sigMouseMoved.connect(self._on_move)
            self._scene = sc

    # -- selection ------------------------------------------------------------------------
    def selected_points(self) -> np.ndarray:
        return np.flatnonzero(np.isin(self.sample_index, self.state.selection))

    def show_selection(self, _sel=None) -> None:
        if self.binned.active:
            self.binned.mark(self.state.selection)
            return
        pts = self.selected_points()
        self.sel_item.setData(x=self.x[pts], y=self.y[pts])

    def select_rect(self, x0, y0, x1, y1, mode="replace") -> np.ndarray | None:
        """Select the samples in a rectangle; returns them (None when binned: the worker sets
        the selection later, see Binned.select)."""
        if self.binned.active:
            self.binned.select(("rect", (x0, y0, x1, y1)), mode)
            return None
        idx = self.sample_index[geo.in_rect(self.x, self.y, x0, y0, x1, y1)]
        self.state.set_selection(idx, mode)
        return idx

    def select_polygon(self, poly, mode="replace") -> np.ndarray | None:
        if self.binned.active:
            self.binned.select(("lasso", np.asarray(poly, dtype=np.float64)), mode)
            return None
        idx = self.sample_index[geo.in_polygon(self.x, self.y, poly)]
        self.state.set_selection(idx, mode)
        return idx

    def _on_region(self, kind, pts, mode):
        if kind == "rect":
            self.select_rect(pts[0, 0], pts[0, 1], pts[1, 0], pts[1, 1], mode)
        else:
            self.select_polygon(pts, mode)

    def _on_pick(self, pos, mode):
        i = self.index_at(pos.x(), pos.y())
        if i >= 0:
            self.state.set_selection([i], mode)
        elif mode == "replace":
            self.state.set_selection([], "replace")

    # -- hover ----------------------------------------------------------------------------
    def index_at(self, x: float, y: float, radius: float | None = None) -> int:
        """Sample index of the drawn point nearest data position (x, y) within ``radius`` pixels."""
        sx, sy = self.vb.viewPixelSize()
        if not (sx > 0 and sy > 0):
            return -1
        r = self.size / 2 + 4 if radius is None else radius
        j = geo.nearest_index(self.x, self.y, x, y, sx, sy, r)
        return int(self.sample_index[j]) if j >= 0 else -1

    def _on_move(self, scene_pos):
        if not self.vb.sceneBoundingRect().contains(scene_pos):
            self._set_hover(-1)
            return
        p = self.vb.mapSceneToView(scene_pos)
        self._set_hover(self.index_at(p.x(), p.y()))

    def _set_hover(self, i: int) -> None:
        if i == self.hovered:
            return
        self.hovered = i
        self.hover_text = self.describe(i) if i >= 0 else ""
        if i >= 0:
            QToolTip.showText(QCursor.pos(), self.hover_text)
        else:
            QToolTip.hideText()
        self.sigHovered.emit(i)
