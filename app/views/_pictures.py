"""The L + S view's pictures: original | low-rank L | sparse S | foreground mask, with the colour
bar of S, laid out in rows and columns; one frame of an image stack, or a table as heatmaps.

Colours and mask are those of the exported video (:mod:`app.palette`): X and L share one grey
scale, S a symmetric diverging one, and the mask is drawn over the faded frame.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt

from .. import palette
from . import _style as st
from ._common import fmt

__all__ = ["PANELS", "PictureGrid"]

PANELS = (("original", "original X"), ("low_rank", "low-rank L (background)"),
          ("sparse", "sparse S (foreground)"), ("mask", "mask |S| > threshold"))


class _ClickImage(pg.ImageItem):
    """An ImageItem that reports left clicks (position in image pixels, keyboard modifiers)."""

    def __init__(self, on_click, *a, **k):
        super().__init__(*a, **k)
        self._on_click = on_click

    def mouseClickEvent(self, ev):
        if ev.button() == Qt.MouseButton.LeftButton:
            ev.accept()
            self._on_click(ev.pos(), ev.modifiers())


class PictureGrid:
    """The four pictures in ``layout`` (a pyqtgraph GraphicsLayout); ``on_click(pos, modifiers)``
    is called for a left click on any of them."""

    def __init__(self, layout, on_click):
        self.layout = layout
        # The figure's own layout has margins already: none twice (18 px of a short figure).
        layout.setContentsMargins(0, 0, 0, 0)
        self.panels = {}
        self.images = {}
        self.sel_markers = {}
        for key, ttl in PANELS:
            p = pg.PlotItem()
            # Equal columns whatever the title lengths (a long title would widen its column), and
            # rows that share the height by their stretch, not by what their axes take.
            p.setPreferredWidth(10)
            p.setPreferredHeight(10)
            p.titleLabel.setMinimumWidth(10)
            p.titleLabel.setPreferredWidth(10)
            st.style_plot(p, title=ttl)
            img = _ClickImage(on_click)
            p.addItem(img)
            self.panels[key], self.images[key] = p, img
        # The scale of S, beside the pictures.
        self.s_bar = st.colorbar((-1, 1), st.diverging_colormap(), label="S")
        self.grid = None
        self.image = True

    def arrange(self, rows: int, cols: int) -> None:
        """Put the four pictures in ``rows`` x ``cols`` cells and the S colour bar after them."""
        if self.grid == (rows, cols):
            return
        for p in (*self.panels.values(), self.s_bar):
            if p in self.layout.items:
                self.layout.removeItem(p)
        for k, p in enumerate(self.panels.values()):
            self.layout.addItem(p, row=k // cols, col=k % cols)
        self.layout.addItem(self.s_bar, row=0, col=cols, rowspan=rows)
        for c in range(len(PANELS) + 1):
            self.layout.layout.setColumnStretchFactor(c, 1 if c < cols else 0)
        for r in range(len(PANELS)):
            self.layout.layout.setRowStretchFactor(r, 1 if r < rows else 0)
        self.grid = (rows, cols)
        self._share_axes()

    def _share_axes(self) -> None:
        """Heatmaps of a table share their axes (samples down, features across; the views move
        together): the feature axis only under the lowest panel of each column, the sample axis
        on every panel (the columns stay equal). Each panel repeating the feature axis left the
        four heatmaps of a 2,000-row table 82 px high at 960 x 540 (200 % scaling)."""
        if self.grid is None:
            return
        rows, cols = self.grid
        n = len(self.panels)
        for k, p in enumerate(self.panels.values()):
            if self.image:
                continue
            p.showAxis("bottom", k + cols >= n)

    def balance_rows(self, height: float) -> None:
        """Rows of heatmaps whose data areas are equally high in ``height`` pixels: the lowest
        row also holds the feature axis, so it gets that much more height. Computed from what
        the titles and axes ask for, not from the layout's current geometry (stale until the
        next layout pass)."""
        rows, cols = self.grid or (1, 1)
        lay = self.layout.layout
        if self.image or rows < 2:
            for r in range(len(self.panels)):
                lay.setRowPreferredHeight(r, -1)
            return
        panels = list(self.panels.values())
        chrome = []
        for r in range(rows):
            row = panels[r * cols:(r + 1) * cols]
            title = max(p.titleLabel.maximumHeight() if p.titleLabel.isVisible() else 0 for p in row)
            axis = max((p.getAxis("bottom").maximumHeight() for p in row if p.getAxis("bottom").isVisible()),
                       default=0)
            chrome.append(min(title, 40) + min(axis, 80))
        data = (height - (rows - 1) * lay.verticalSpacing() - sum(chrome)) / rows
        if data <= 0:
            return
        for r, c in enumerate(chrome):
            lay.setRowPreferredHeight(r, data + c)

    def set_mode(self, image: bool) -> None:
        """Pictures (aspect kept, no axes) or heatmaps of a table (shared axes, see _share_axes)."""
        self.image = image
        first = self.panels[PANELS[0][0]]
        for p in self.panels.values():
            p.invertY(True)
            p.setAspectLocked(image)
            for ax in ("left", "bottom"):
                p.showAxis(ax, not image)
            if p is not first:
                p.setXLink(None if image else first)
                p.setYLink(None if image else first)
        self._share_axes()

    def set_titles(self, provisional: bool = False) -> None:
        """The panels' own titles; a run in progress marks L and S provisional."""
        for key, ttl in PANELS:
            if key != "mask" or not provisional:
                st.set_title(self.panels[key], ttl + (" (provisional)" if provisional and key != "original" else ""))

    def autorange(self) -> None:
        for p in self.panels.values():
            # Auto range (not a one-off autoRange): the pictures refit when the grid changes.
            p.getViewBox().setDefaultPadding(0.02)
            p.enableAutoRange()

    def draw_frame(self, shape, x, l_i, s_i, gray_levels, s_levels, threshold, provisional=False) -> float:
        """One frame (flattened rows of ``shape``); returns the share of its pixels in the mask."""
        if self.s_bar.getAxis("right").labelText != "S":
            self.set_titles(provisional)
            self.s_bar.getAxis("right").setLabel("S", color=st.AXIS_COLOR)
        self.images["original"].setImage(x.reshape(shape), levels=gray_levels)
        self.images["low_rank"].setImage(l_i.reshape(shape), levels=gray_levels)
        self.images["sparse"].setImage(s_i.reshape(shape), levels=s_levels, lut=palette.diverging_lut())
        m = np.abs(s_i) > threshold
        self.images["mask"].setImage(palette.mask_overlay(x, gray_levels, m).reshape(*shape, 3),
                                     levels=None, lut=None)
        st.set_title(self.panels["mask"], f"mask |S| > {fmt(threshold)}" + (" (provisional)" if provisional else ""))
        return float(m.mean())

    def draw_tables(self, X, L, S, gray_levels, s_levels, threshold, selection) -> float:
        """Heatmaps of a whole table (samples as rows); returns the share of entries in the mask."""
        for key, data, lev in (("original", X, gray_levels), ("low_rank", L, gray_levels), ("sparse", S, s_levels)):
            self.images[key].setImage(data, levels=lev, lut=palette.diverging_lut() if key == "sparse" else None)
        mask = np.abs(S) > threshold
        self.images["mask"].setImage(palette.mask_overlay(X, gray_levels, mask), levels=None, lut=None)
        st.set_title(self.panels["mask"], f"|S| > {fmt(threshold)} column ranges")
        st.set_title(self.panels["original"], "X, each column on L's range")
        st.set_title(self.panels["low_rank"], "low-rank L, each column 0 → 1")
        st.set_title(self.panels["sparse"], "sparse S ÷ column range")
        self.s_bar.getAxis("right").setLabel("S ÷ column range of L", color=st.AXIS_COLOR)
        for p in self.panels.values():
            st.style_plot(p, left="sample", bottom="feature")
        self.mark_rows(selection)
        return float(mask.mean())

    def mark_rows(self, selection) -> None:
        """Triangles beside the selected rows of the heatmaps."""
        for key, p in self.panels.items():
            mk = self.sel_markers.get(key)
            if mk is None:
                mk = pg.ScatterPlotItem(symbol="t2", size=9, brush=st.brush(st.SELECT_COLOR), pen=None)
                p.addItem(mk)
                self.sel_markers[key] = mk
            mk.setData(x=np.full(selection.size, -1.0), y=selection + 0.5)

    def clear(self) -> None:
        for img in self.images.values():
            img.clear()

    def clear_results(self) -> None:
        """Only the frame's own picture stays (a run's frame that is gone has no L, S or mask)."""
        for key in ("low_rank", "sparse", "mask"):
            self.images[key].clear()
