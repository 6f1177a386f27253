"""The L + S view's pictures: original | low-rank L | sparse S | foreground mask, with the colour
bar of S, laid out in rows and columns; one frame of an image stack, or a table as heatmaps.

Colours and mask are those of the exported video (:mod:`app.palette`): X and L share one grey
scale, S a symmetric diverging one, and the mask is drawn over the faded frame.

A table's heatmaps are drawn from bins (:mod:`._binning`, :mod:`._zoom_bins`): an overview of
the whole table, and above it, once the user zooms in, the region on screen binned again (down
to single samples). Each image is placed by its bins in sample and feature coordinates, so a
click or the mouse names the samples of the bin under it.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt

from .. import palette
from . import _style as st
from ._binning import fit_picture
from ._cloud import MenuOnDemandViewBox
from ._common import fmt
from ._feature_axis import FeatureAxis
from ._zoom_bins import Extent

__all__ = ["PANELS", "PictureGrid"]

PANELS = (("original", "original X"), ("low_rank", "low-rank L (background)"),
          ("sparse", "sparse S (foreground)"), ("mask", "mask |S| > threshold"))


#: Pictures (frames) larger than this along a side are binned: beyond any screen, within Qt.
PICTURE_LIMIT = 4096
#: How a bin of a table becomes one pixel of each panel (said under the pictures).
BIN_RULE = ("X, L: bin means; S: each bin's largest |S|; mask: the share of a bin's entries above the "
            "threshold")
#: The least colour of a bin with any entry in the mask: one entry in a bin of 500 stays visible.
MASK_FLOOR = 1 / 3


class _ClickImage(pg.ImageItem):
    """An ImageItem that reports left clicks and the mouse's position, in the plot's
    coordinates (samples and features for a table, whatever its bins)."""

    def __init__(self, on_click, on_hover=None, *a, **k):
        super().__init__(*a, **k)
        self._on_click, self._on_hover = on_click, on_hover
        self.setAcceptHoverEvents(on_hover is not None)

    def mouseClickEvent(self, ev):
        if ev.button() == Qt.MouseButton.LeftButton:
            ev.accept()
            self._on_click(self.mapToParent(ev.pos()), ev.modifiers())

    def hoverEvent(self, ev):
        if self._on_hover is not None and not ev.isExit() and self.image is not None:
            self._on_hover(self.mapToParent(ev.pos()))


class PictureGrid:
    """The four pictures in ``layout`` (a pyqtgraph GraphicsLayout); ``on_click(pos, modifiers)``
    is called for a left click on any of them."""

    def __init__(self, layout, on_click, on_hover=None, ahead: bool = False):
        """``ahead``: only the first picture now, the rest in :meth:`build_step` (each picture and
        colour bar is tens of milliseconds of the GUI thread)."""
        self.layout = layout
        # The figure's own layout has margins already: none twice (18 px of a short figure).
        layout.setContentsMargins(0, 0, 0, 0)
        self._on_click, self._on_hover = on_click, on_hover
        self.panels = {}
        self.images = {}     # a frame, or the overview of a whole table
        self.zoomed = {}     # a table's region on screen binned again (hidden when not zoomed)
        self.extents = {}
        self.sel_markers = {}
        self.tiles = {}      # "whole" / "zoomed" -> (Region, {"X", "L", "S": binned values})
        self.s_bar = self.gray_bar = None
        self.grid = None
        self.image = True
        self.build_step()
        if not ahead:
            while self.build_step():
                pass

    def build_step(self) -> bool:
        """Make the next picture or colour bar (True: one was made)."""
        if len(self.panels) < len(PANELS):
            self._add_panel(*PANELS[len(self.panels)])
            return True
        if self.s_bar is None:
            # The scale of S, beside the pictures.
            self.s_bar = st.colorbar((-1, 1), st.diverging_colormap(), label="S")
            return True
        if self.gray_bar is None:
            # A table's X and L are grey on each column's range of L: their key, beside S's
            # (frames of images need none: their grey is the picture's own).
            self.gray_bar = st.colorbar((0, 1), pg.ColorMap([0.0, 1.0], [(0, 0, 0), (255, 255, 255)]),
                                        label="X, L ÷ column range of L")
            return True
        return False

    def _add_panel(self, key: str, ttl: str) -> None:
        p = pg.PlotItem(viewBox=MenuOnDemandViewBox(),
                        axisItems={"bottom": FeatureAxis(), "left": st.CountAxis("left")})
        # Equal columns whatever the title lengths (a long title would widen its column), and
        # rows that share the height by their stretch, not by what their axes take.
        p.setPreferredWidth(10)
        p.setPreferredHeight(10)
        p.titleLabel.setMinimumWidth(10)
        p.titleLabel.setPreferredWidth(10)
        st.style_plot(p, title=ttl)
        img = _ClickImage(self._on_click, self._on_hover)
        p.addItem(img)
        zoom = _ClickImage(self._on_click, self._on_hover)
        zoom.setVisible(False)
        zoom.setZValue(1)
        p.addItem(zoom)
        extent = Extent()
        extent.setVisible(False)
        p.addItem(extent)
        self.panels[key], self.images[key], self.zoomed[key], self.extents[key] = p, img, zoom, extent

    def arrange(self, rows: int, cols: int) -> None:
        """Put the four pictures in ``rows`` x ``cols`` cells and the S colour bar after them."""
        if self.grid == (rows, cols):
            return
        for p in (*self.panels.values(), self.s_bar, self.gray_bar):
            if p in self.layout.items:
                self.layout.removeItem(p)
        for k, p in enumerate(self.panels.values()):
            self.layout.addItem(p, row=k // cols, col=k % cols)
        if not self.image:
            self.layout.addItem(self.gray_bar, row=0, col=cols, rowspan=rows)
        self.gray_bar.setVisible(not self.image)
        self.layout.addItem(self.s_bar, row=0, col=cols + (not self.image), rowspan=rows)
        for c in range(len(PANELS) + 2):
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

    def set_features(self, names) -> None:
        """The names a table's feature axis shows (None: pictures, numbers)."""
        for p in self.panels.values():
            p.getAxis("bottom").set_names(names)

    def set_mode(self, image: bool) -> None:
        """Pictures (aspect kept, no axes) or heatmaps of a table (shared axes, see _share_axes)."""
        if image != self.image:
            self.grid = None   # the grey key comes or goes: arrange again
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
        for item in (*self.zoomed.values(), *self.extents.values()):
            item.setVisible(False)
        self.tiles = {}
        m = np.abs(s_i) > threshold
        # A picture taller or wider than Qt draws is shown binned (never seen on real videos).
        _set_picture(self.images["original"], x.reshape(shape), levels=gray_levels)
        _set_picture(self.images["low_rank"], l_i.reshape(shape), levels=gray_levels)
        _set_picture(self.images["sparse"], s_i.reshape(shape), levels=s_levels, lut=palette.diverging_lut())
        _set_picture(self.images["mask"], palette.mask_overlay(x, gray_levels, m).reshape(*shape, 3),
                     levels=None, lut=None)
        st.set_title(self.panels["mask"], f"mask |S| > {fmt(threshold)}" + (" (provisional)" if provisional else ""))
        return float(m.mean())

    def draw_tables(self, region, tiles, gray_levels, s_levels, threshold, whole: bool) -> None:
        """Heatmaps of a table's ``region`` (:class:`._zoom_bins.Region`) from its binned values
        ``tiles`` ({"X", "L", "S"}); ``whole``: the overview of the whole table (drawn first,
        kept under any zoomed region), else the region on screen, drawn above it."""
        self.tiles["whole" if whole else "zoomed"] = (region, tiles)
        if whole:
            self.tiles.pop("zoomed", None)
            extent = QRectF(0, 0, region.cols.stop, region.rows.stop)
            for e in self.extents.values():
                e.set_rect(extent)
                e.setVisible(True)
        items = self.images if whole else self.zoomed
        rows, cols = region.rows, region.cols
        # Bins placed where their samples are; the last bin is drawn full size (under a pixel
        # past the table's end when zoomed out, exact when every row is its own bin).
        rect = QRectF(cols.start, rows.start, cols.count * cols.size, rows.count * rows.size)
        self.gray_bar.setLevels(tuple(float(v) for v in gray_levels))
        for key, data, lev in (("original", tiles["X"], gray_levels), ("low_rank", tiles["L"], gray_levels),
                               ("sparse", tiles["S"], s_levels)):
            items[key].setImage(data, levels=lev, lut=palette.diverging_lut() if key == "sparse" else None)
            items[key].setRect(rect)
        items["mask"].setImage(binned_mask(tiles, gray_levels, threshold), levels=None, lut=None)
        items["mask"].setRect(rect)
        for z in self.zoomed.values():
            z.setVisible(not whole)
        self.table_titles(threshold)

    def table_titles(self, threshold) -> None:
        """Titles of a table's panels: what each shows and, when binned, how."""
        region = self.shown_region()
        binned = region is not None and (region.rows.binned or region.cols.binned)
        counted = all(t.get("M") is not None for _, t in self.tiles.values())
        # Short when binned: four titles share the width (the status line says it in full).
        if binned:
            titles = {"original": "X on L's column ranges, means", "low_rank": "low-rank L, 0 → 1, means",
                      "sparse": "S ÷ column range, largest |S|",
                      "mask": f"|S| > {fmt(threshold)}: " + ("share per bin" if counted else "any in bin")}
        else:
            titles = {"original": "X, each column on L's range", "low_rank": "low-rank L, each column 0 → 1",
                      "sparse": "sparse S ÷ column range", "mask": f"|S| > {fmt(threshold)} column ranges"}
        for key, text in titles.items():
            st.set_title(self.panels[key], text)
        self.s_bar.getAxis("right").setLabel("S ÷ column range of L", color=st.AXIS_COLOR)
        rows = "sample" if region is None or not region.rows.binned else f"sample (bins of {region.rows.size:,})"
        cols = "feature" if region is None or not region.cols.binned else f"feature (bins of {region.cols.size:,})"
        for p in self.panels.values():
            st.style_plot(p, left=rows, bottom=cols)
        self._share_axes()   # (a label shown is an axis shown: pyqtgraph's setLabel)

    def shown_region(self):
        """The region of the table drawn on top: the zoomed one, else the whole table (None: no
        table is drawn)."""
        top = self.tiles.get("zoomed") or self.tiles.get("whole")
        return top[0] if top else None

    def redraw_masks(self, gray_levels, threshold) -> None:
        """The mask panels of the drawn tables (their tiles' "M" already counted at
        ``threshold``, see :func:`binned_mask`)."""
        for which, (_region, tiles) in self.tiles.items():
            item = (self.images if which == "whole" else self.zoomed)["mask"]
            item.setImage(binned_mask(tiles, gray_levels, threshold), levels=None, lut=None)
        self.table_titles(threshold)

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
        for img in (*self.images.values(), *self.zoomed.values()):
            img.clear()
        for item in (*self.zoomed.values(), *self.extents.values()):
            item.setVisible(False)
        self.tiles = {}

    def clear_results(self) -> None:
        """Only the frame's own picture stays (a run's frame that is gone has no L, S or mask)."""
        for key in ("low_rank", "sparse", "mask"):
            self.images[key].clear()


def binned_mask(tiles, gray_levels, threshold) -> np.ndarray:
    """(rows, cols, 3) uint8: the mask over the faded bin means of X. With ``tiles["M"]`` (the
    share of each bin's entries above the threshold) a bin takes that much of the mask colour,
    at least MASK_FLOOR when it holds any (a bin of one sample: all or nothing, as unbinned);
    without it (a table too large to count again), a bin is in the mask when its largest |S|
    is, that is when any of its entries is."""
    share = tiles.get("M")
    if share is None:
        return palette.mask_overlay(tiles["X"], gray_levels, np.abs(tiles["S"]) > threshold)
    faded = palette.mask_overlay(tiles["X"], gray_levels, np.zeros(tiles["X"].shape, dtype=bool)).astype(float)
    f = np.where(share > 0, MASK_FLOOR + (1 - MASK_FLOOR) * share, 0.0)[..., None]
    return np.rint((1 - f) * faded + f * np.asarray(palette.MASK_RGB, dtype=float)).astype(np.uint8)


def _set_picture(item, img, **kw) -> None:
    """Draw a picture, binned to at most Qt's size along each side when it is larger."""
    small, rows, cols = fit_picture(img, PICTURE_LIMIT)
    item.setImage(small, **kw)
    if rows.binned or cols.binned:
        item.setRect(QRectF(0, 0, img.shape[1], img.shape[0]))
    else:
        item.resetTransform()
