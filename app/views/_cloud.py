"""A scatter of samples that shows the shared selection and changes it.

``SelectViewBox`` turns left-drags into rectangle or lasso selections (or pans, in pan mode) and
left-clicks into point picks; Shift adds to the selection, Ctrl (or Alt) subtracts, no modifier
replaces. ``PointCloud`` draws the points as ONE ScatterPlotItem with shared brushes, the flagged
points and the selection as two small overlay items; its selection and hover (the point under
the mouse, found in screen pixels) are :mod:`._cloud_selection`'s. Above
:data:`POINTS_MAX` points (or when a view hands it a layered source) a cloud is binned off the GUI thread instead
(:mod:`app.views._binned`): it then draws density layers and the points worth drawing, and a
rectangle or lasso is resolved on a worker before it reaches the shared selection.
"""
from __future__ import annotations

import weakref

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QObject, QPointF, Qt, Signal
from PySide6.QtGui import QPainterPath
from PySide6.QtWidgets import QGraphicsPathItem
from shiboken6 import isValid

from . import _style as st
from ._binned import Binned, Source
from ._cloud_selection import CloudSelection
from ._density import Density
from ._map_fill import finish_all as finish_maps
from ._turns import next_turn

TOOLS = ("rect", "lasso", "pan")

# Above this many points (or with more colour groups than CHUNK_ITEMS) a cloud is drawn in
# parts, one part per turn of the event loop, starting on the turn after set_points: handing 50,000
# points to pyqtgraph at once
# held the window 50-60 ms (its per-point record array), and with the paint that followed made
# most of the freeze when a result arrived (issue 25, benchmarks/bench_views.py gaps).
PROGRESSIVE_POINTS = 20_000
CHUNK_POINTS = 10_000
# Colour groups drawn per turn (a score colouring has up to 64): making and filling 52 items in
# one turn took 17-27 ms for the escalator demo's 3,000 frames.
CHUNK_ITEMS = 16
# set_points draws up to this many points one by one, as it always did (the ranking view hands
# it brushes, one per point); beyond, it bins them in one colour. The scatter, the outlier map
# and the SPE / T² map bin from DENSITY_POINTS up, with their colours as layers (set_source).
POINTS_MAX = 200_000
# Clouds with parts still to draw, and binned clouds: an export draws them first
# (finish_pending_drawings).
_DRAWING: weakref.WeakSet[PointCloud] = weakref.WeakSet()
_BINNED: weakref.WeakSet[PointCloud] = weakref.WeakSet()


def finish_pending_drawings() -> None:
    """Draw now every part of every cloud still waiting for its turn, and every binned picture
    still to come, and every SPE / T² map's picture (before an export)."""
    for cloud in {*_DRAWING, *_BINNED}:
        try:
            if isValid(cloud):
                cloud.finish_drawing()
                continue
        except RuntimeError as exc:   # a closed view's items went first (its cut lines, its plot)
            if "already deleted" not in str(exc):
                raise
        # A cloud of a closed view, not yet collected: nothing of it is exported; drawing it
        # failed every later export of the process (seen once in a full test run).
        _DRAWING.discard(cloud)
        _BINNED.discard(cloud)
    finish_maps()


def mode_for(modifiers) -> str:
    """Selection mode for keyboard modifiers: Shift adds, Ctrl/Alt/Meta subtract."""
    m = Qt.KeyboardModifier
    if modifiers & m.ShiftModifier:
        return "add"
    if modifiers & (m.ControlModifier | m.AltModifier | m.MetaModifier):
        return "subtract"
    return "replace"


class MenuOnDemandViewBox(pg.ViewBox):
    """A ViewBox whose context menu is made when first opened: pyqtgraph builds it with every
    ViewBox (about a third of a plot's construction, which a view's first show pays per plot)."""

    def __init__(self, *args, enableMenu=True, **kwargs):
        super().__init__(*args, enableMenu=False, **kwargs)
        self.state["enableMenu"] = enableMenu

    def getMenu(self, ev):
        if self.menu is None and self.menuEnabled():
            from pyqtgraph.graphicsItems.ViewBox.ViewBoxMenu import ViewBoxMenu
            self.menu = ViewBoxMenu(self)
        return self.menu

    def getContextMenus(self, event):
        return self.getMenu(event).actions() if self.menuEnabled() else []


class SelectViewBox(MenuOnDemandViewBox):
    """ViewBox whose left-drag selects (rectangle or lasso) instead of panning, unless tool="pan"."""

    sigRegion = Signal(str, object, str)   # kind ("rect", "lasso"), (m, 2) data points, mode
    sigPick = Signal(object, str)          # QPointF in data coordinates, mode

    def __init__(self, *args, enableMenu=True, **kwargs):
        super().__init__(*args, enableMenu=enableMenu, **kwargs)
        self.tool = "rect"
        self._trace: list[QPointF] = []
        self._outline = QGraphicsPathItem()
        self._outline.setPen(st.pen(st.SELECT_COLOR, 1.5, Qt.PenStyle.DashLine))
        self._outline.setZValue(1e6)
        self._outline.setVisible(False)  # an empty path breaks pyqtgraph's SVG export
        self.addItem(self._outline, ignoreBounds=True)

    def set_tool(self, tool: str) -> None:
        if tool not in TOOLS:
            raise ValueError(f"tool must be one of {', '.join(TOOLS)}; got {tool!r}")
        self.tool = tool

    def mouseDragEvent(self, ev, axis=None):
        if self.tool == "pan" or ev.button() != Qt.MouseButton.LeftButton:
            return super().mouseDragEvent(ev, axis)
        ev.accept()
        pos = self.mapSceneToView(ev.scenePos())
        if ev.isStart():
            self._trace = [self.mapSceneToView(ev.buttonDownScenePos())]
        self._trace.append(pos)
        path = QPainterPath()
        if self.tool == "rect":
            a = self._trace[0]
            path.addRect(min(a.x(), pos.x()), min(a.y(), pos.y()), abs(pos.x() - a.x()), abs(pos.y() - a.y()))
        else:
            path.moveTo(self._trace[0])
            for p in self._trace[1:]:
                path.lineTo(p)
            path.closeSubpath()
        self._outline.setPath(path)
        self._outline.setVisible(True)
        if ev.isFinish():
            self._outline.setVisible(False)
            self._outline.setPath(QPainterPath())
            mode = mode_for(ev.modifiers())
            if self.tool == "rect":
                a = self._trace[0]
                pts = np.array([[a.x(), a.y()], [pos.x(), pos.y()]])
            else:
                pts = np.array([[p.x(), p.y()] for p in self._trace])
            self._trace = []
            self.sigRegion.emit(self.tool, pts, mode)

    def mouseClickEvent(self, ev):
        if ev.button() == Qt.MouseButton.LeftButton:
            ev.accept()
            self.sigPick.emit(self.mapSceneToView(ev.scenePos()), mode_for(ev.modifiers()))
            return
        super().mouseClickEvent(ev)


class PassScatter(pg.ScatterPlotItem):
    """A cloud's scatter item that lets clicks through to the view box, which picks the sample
    nearest the cursor (CloudSelection._on_pick): pyqtgraph's ScatterPlotItem takes a click on
    its own points, so a click right on a point, or on a flagged point's ring, selected nothing."""

    def mouseClickEvent(self, ev):
        ev.ignore()


class GroupScatter(PassScatter):
    """A ScatterPlotItem for points that all share one symbol, size, pen and brush.

    pyqtgraph's ``updateSpots`` builds a Python tuple per point to look up each point's symbol
    in its atlas, even when every point looks the same; here the one lookup is done once and
    broadcast with numpy. Points with their own style fall back to pyqtgraph's path.
    """

    def _uniform(self, data) -> bool:
        if len(data) == 0:
            return True
        if np.any(data["size"] != -1):
            return False
        for col in ("symbol", "pen", "brush"):
            if not np.all(np.equal(data[col], None)):
                return False
        return True

    def updateSpots(self, dataSet=None):
        data = self.data if dataSet is None else dataSet
        if not (self.opts["pxMode"] and self.opts["useCache"]) or not self._uniform(data):
            return super().updateSpots(dataSet)
        mask = data["sourceRect"]["w"] == 0
        if np.any(mask):
            style = (self.opts["symbol"], self.opts["size"], self.opts["pen"], self.opts["brush"])
            (coords,) = self.fragmentAtlas[[style]]
            data["sourceRect"][mask] = coords
            self._maybeRebuildAtlas()
        self._updateMaxSpotSizes(data=data)
        self.invalidate()


def new_plot(layout, row=None, col=None, rowspan=1, colspan=1, **kwargs) -> pg.PlotItem:
    """A PlotItem with a SelectViewBox, added to a GraphicsLayout."""
    vb = SelectViewBox()
    plot = pg.PlotItem(viewBox=vb, **kwargs)
    layout.addItem(plot, row=row, col=col, rowspan=rowspan, colspan=colspan)
    st.style_plot(plot)
    return plot


class PointCloud(CloudSelection, QObject):
    """Samples drawn in one plot, linked to ``state``'s selection.

    Points are drawn as one ScatterPlotItem per distinct brush (a colour group), each with a
    single shared brush: pyqtgraph then never walks the points in Python, so building,
    recolouring (regrouping with numpy) and painting stay fast at 100,000 points. Higher groups
    are drawn on top (for a score colouring: the highest scores last).

    ``sample_index`` maps each drawn point to its sample (identity by default); ``describe(i)``
    gives the tooltip text of sample i. Selection and hover are
    :class:`._cloud_selection.CloudSelection`'s.
    """

    sigHovered = Signal(int)  # sample index under the mouse, -1 when none
    sigFailed = Signal(str)   # a binned picture could not be made (the one-line reason)

    def __init__(self, plot: pg.PlotItem, state, size: float = 6.0, parent=None):
        # Qt's child of its plot by default: it goes with its view, and with it its timers and
        # its binning workers (:class:`app.tasks.TaskRunner` cancels its jobs when deleted). Owned
        # by Python, a closed view's cloud lived on with its plot deleted (stop 46's export drew one).
        super().__init__(plot if parent is None else parent)
        self.plot = plot
        self.vb = plot.getViewBox()
        self.state = state
        self.size = float(size)
        self.x = np.zeros(0)
        self.y = np.zeros(0)
        self.sample_index = np.zeros(0, dtype=np.int64)
        self.codes = np.zeros(0, dtype=np.int64)   # colour group of each point
        self.table = [st.brush(st.category_color(0))]  # brush of each group
        self._zrank = [0]                                # drawing rank of each group (_z_ranks)
        self.sizes = None
        self.flags = None
        self.hovered = -1
        self.hover_text = ""
        self.describe = lambda i: f"sample {i}"
        self.groups: list = []      # every point item made so far (per part and colour group)
        self._items: dict = {}      # (part, group) -> item
        self._pending: list = []    # parts still to draw (sample indices)
        self._part_timer = next_turn(self, self._next_part)
        self._perm = np.zeros(0, dtype=np.int64)
        self.flag_item = PassScatter(pxMode=True, size=self.size + 5, symbol="o", brush=None,
                                     pen=st.pen(st.FLAG_COLOR, 1.3), name="flagged")
        self.sel_item = PassScatter(pxMode=True, size=self.size + 10, symbol="o", brush=None,
                                    pen=st.pen(st.SELECT_COLOR, 2.5), name="selected")
        self.flag_item.setZValue(5)
        self.sel_item.setZValue(10)
        for it in (self.flag_item, self.sel_item):
            plot.addItem(it)
        self.density = Density(plot)   # the layers of a binned cloud
        self.binned = Binned(self)
        self._plain = None   # (x, y) of a large cloud set with set_points (binned, one colour)
        if isinstance(self.vb, SelectViewBox):
            self.vb.sigRegion.connect(self._on_region)
            self.vb.sigPick.connect(self._on_pick)
        self._scene = None
        self._connect_scene()
        state.selectionChanged.connect(self.show_selection)

    # -- data -----------------------------------------------------------------------------
    def set_points(self, x, y, brushes=None, sizes=None, sample_index=None, flags=None) -> None:
        """Draw points (x, y); ``brushes`` one shared QBrush per point (or None: one colour).

        More than POINTS_MAX are binned (in one colour: see :meth:`set_source` for layers)."""
        if len(x) > POINTS_MAX and sample_index is None:
            fl = flags
            self.set_source(Source(make=lambda: {"x": x, "y": y, "flags": fl}, n=len(x)))
            self._plain = (x, y)
            return
        self._leave_binned()
        x = np.asarray(x, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        self.x, self.y = x, y
        self.sample_index = (np.arange(x.size, dtype=np.int64) if sample_index is None
                             else np.asarray(sample_index, dtype=np.int64))
        self.sizes = None if sizes is None or np.isscalar(sizes) else np.asarray(sizes, dtype=float)
        self._group(brushes)
        self._draw()
        self.set_flags(flags)
        self.show_selection(self.state.selection)
        self._connect_scene()

    def set_source(self, source: Source) -> None:
        """Draw a large cloud binned (see :mod:`app.views._binned`): the picture comes on a
        later turn, from a worker; zooming re-bins what is on screen."""
        self._plain = None
        self._pending = []
        _DRAWING.discard(self)
        self._show_points(np.zeros(0), np.zeros(0), np.zeros(0, dtype=np.int64), None, None)
        self.flags = None
        self.flag_item.setData(x=[], y=[])
        self.sel_item.setData(x=[], y=[])
        self.density.hide()
        _BINNED.add(self)
        self.binned.start(source)
        self._connect_scene()

    def _leave_binned(self) -> None:
        if self.binned.active:
            self.binned.stop()
            self.density.hide()
        self._plain = None
        _BINNED.discard(self)

    def draw_picture(self, pic, levels) -> None:
        """Draw a binned picture (called by :class:`Binned` when it arrives): the density
        layers, and the points worth drawing."""
        src = self.binned.source
        colors = list(src.colors) + ([st.FLAG_LAYER_COLOR] if pic.flagged_layer is not None else [])
        # Every flagged sample a point: no layer of their own beneath them.
        unseen = ((pic.flagged_layer,) if pic.flagged_layer is not None
                  and pic.n_candidates <= len(pic.points["index"]) else ())
        if pic.all_points:
            self.density.hide()
        else:
            self.density.show(pic.counts, pic.extent, colors, unseen, on_top=pic.flagged_layer, mean=pic.mean,
                              levels=levels)
        P = pic.points
        if src.by_score and levels is not None and P["score"] is not None:
            lv, _ = st.value_levels(P["score"], *levels)
            brushes = list(np.array(st.level_brushes(), dtype=object)[lv])
        elif len(src.colors) > 1:
            table = np.array([st.brush(c) for c in src.colors], dtype=object)
            brushes = list(table[P["code"]])
        else:
            brushes = None
        by_class = brushes is not None and not src.by_score
        flags = P["flag"] if pic.flagged_layer is not None else None
        if pic.all_points or flags is None:
            # every sample in view (or the highest scores, in their score colours): flagged ringed
            self._show_points(P["x"], P["y"], P["index"], brushes, flags, filled=False)
        else:   # the highest-scoring flagged: filled points over the layers, nothing else
            self._show_points(P["x"], P["y"], P["index"], brushes, flags, groups=False, by_class=by_class)
        self.binned.mark(self.state.selection)

    def _show_points(self, x, y, index, brushes, flags, groups: bool = True, filled: bool = True,
                     by_class: bool = False) -> None:
        self.x = np.asarray(x, dtype=np.float64)
        self.y = np.asarray(y, dtype=np.float64)
        self.sample_index = np.asarray(index, dtype=np.int64)
        self.sizes = None
        self._group(brushes)
        if groups:
            self._draw()
        else:
            self._pending = []
            for it in self.groups:
                it.setData(x=[], y=[])
        self._set_flag_points(flags, filled=filled and not groups, by_class=by_class)

    def frame(self, pic) -> None:
        """Frame the view on where a binned cloud lies (``pic.extent``: a picture or a Frame; views
        may replace this)."""
        x0, x1, y0, y1 = pic.extent
        self.vb.setRange(xRange=(x0, x1), yRange=(y0, y1), padding=0.02)

    def binned_failed(self, message: str) -> None:
        self.density.hide()
        self.hover_text = ""
        self.sigFailed.emit(message)

    def _group(self, brushes) -> None:
        n = self.x.size
        if brushes is None:
            self.codes = np.zeros(n, dtype=np.int64)
            self.table = [st.brush(st.category_color(0))]
            self._zrank = [0]
            return
        brushes = list(brushes)
        if len(brushes) != n:
            raise ValueError(f"brushes must have one entry per point ({n}); got {len(brushes)}")
        # Group by brush identity: the palette's brushes are shared objects, so a few groups.
        ids = np.fromiter(map(id, brushes), dtype=np.int64, count=n)
        _, first, codes = np.unique(ids, return_index=True, return_inverse=True)
        self.table = [brushes[i] for i in first]
        self.codes = codes.astype(np.int64)
        # Draw groups in palette order where known, so "highest score level on top" holds.
        order = _palette_order(self.table)
        rank = np.empty(len(order), dtype=np.int64)
        rank[order] = np.arange(len(order))
        self.table = [self.table[i] for i in order]
        self.codes = rank[self.codes]
        self._zrank = _z_ranks(self.table, np.bincount(self.codes, minlength=len(self.table)))

    def _draw(self) -> None:
        self._pending = []
        n, k = self.x.size, len(self.table)
        order = np.argsort(self.codes, kind="stable")
        bounds = np.searchsorted(self.codes[order], np.arange(k + 1))
        # Colour groups low to high, at most CHUNK_POINTS points and CHUNK_ITEMS items per turn
        # of the event loop; a group larger than CHUNK_POINTS in parts of its own (one item
        # each: every item costs pyqtgraph a fixed ~0.3 ms per setData and ~0.2 ms per paint,
        # and making one ~0.3 ms, so no finer).
        batches, batch, count = [], [], 0
        for g in range(k):
            sel = order[bounds[g]:bounds[g + 1]]
            for part, start in enumerate(range(0, max(sel.size, 1), CHUNK_POINTS)):
                piece = sel[start:start + CHUNK_POINTS]
                batch.append((part, g, piece))
                count += piece.size
                if count >= CHUNK_POINTS or len(batch) >= CHUNK_ITEMS:
                    batches.append(batch)
                    batch, count = [], 0
        if batch:
            batches.append(batch)
        used = {(part, g) for b in batches for part, g, _ in b}
        for key, it in self._items.items():
            if key in used:
                it.setVisible(False)   # until its part is drawn: never old points in new colours
            else:
                it.setData(x=[], y=[])
        if n <= PROGRESSIVE_POINTS and len(batches) <= 1:
            for b in batches:
                self._draw_batch(b)
            return
        # Even the first part waits for the next turn: the turn that calls this (a new result
        # drawn) has the view's axes, legend and colour bar to do (issue 25).
        self._pending = batches
        _DRAWING.add(self)
        self._part_timer.start()

    def _item(self, part: int, group: int) -> GroupScatter:
        it = self._items.get((part, group))
        if it is None:
            it = GroupScatter(pxMode=True, size=self.size, pen=None, symbol="o")
            self.plot.addItem(it)
            self.groups.append(it)
            self._items[(part, group)] = it
        return it

    def _draw_batch(self, batch) -> None:
        for part, g, sel in batch:
            if sel.size == 0 and (part, g) not in self._items:
                continue
            size = self.size if self.sizes is None else self.sizes[sel]
            it = self._item(part, g)
            it.setZValue(1 + self._zrank[g] * 1e-3 + part * 1e-6)   # see _z_ranks
            it.setData(x=self.x[sel], y=self.y[sel], brush=self.table[g], pen=None, size=size)
            it.setVisible(True)

    def _next_part(self) -> None:
        if not self._pending:   # drawn meanwhile (an export), or replaced by clear()
            return
        if not isValid(self.vb):   # its window was deleted before the parts were all drawn
            self._pending = []
            _DRAWING.discard(self)
            return
        self._draw_batch(self._pending.pop(0))
        if self._pending:
            self._part_timer.start()
        else:
            _DRAWING.discard(self)

    def drawing(self) -> bool:
        """Whether parts of the points are still to be drawn (on coming turns of the event loop),
        or a binned picture is still to come."""
        return bool(self._pending) or self.binned.busy()

    def finish_drawing(self) -> None:
        """Draw the parts still pending now (before an export or a count); a binned picture
        still to come is made in this thread."""
        if self.binned.busy():
            self.binned.finish()
        drew = bool(self._pending)
        while self._pending:
            self._draw_batch(self._pending.pop(0))
        _DRAWING.discard(self)
        if drew:
            self.vb.updateAutoRange()   # frame what is drawn now, not the parts drawn before

    def points(self) -> tuple[np.ndarray, np.ndarray]:
        return self.x, self.y

    def point_brushes(self) -> list:
        """The brush each point is drawn with (shared objects)."""
        table = np.empty(len(self.table), dtype=object)
        table[:] = self.table
        return list(table[self.codes])

    def drawn_count(self) -> int:
        """Points drawn once the drawing is finished (pending parts are drawn first)."""
        self.finish_drawing()
        return int(sum(it.getData()[0].size for it in self.groups if it.isVisible()))

    def set_brushes(self, brushes) -> None:
        """Recolour every point at once (one shared brush per point; a binned cloud set with
        set_points keeps its one colour)."""
        if self.binned.active:
            return
        self._group(brushes)
        self._draw()

    def set_sizes(self, sizes) -> None:
        if self.binned.active:
            return
        self.sizes = None if sizes is None or np.isscalar(sizes) else np.asarray(sizes, dtype=float)
        self._draw()

    def set_flags(self, flags) -> None:
        if self._plain is not None:   # binned from set_points: bin again with these flags
            self.set_points(*self._plain, flags=flags)
            return
        if self.binned.active:
            return
        self._set_flag_points(flags)

    def _set_flag_points(self, flags, filled: bool = False, by_class: bool = False) -> None:
        self.flags = None if flags is None else np.asarray(flags, dtype=bool)
        if self.flags is None or self.flags.size != self.x.size:
            self.flag_item.setData(x=[], y=[])
            return
        # Over a density image the flagged samples are the points: filled, so none hides in a bin.
        dense = filled
        if dense and by_class:
            # Coloured by class, a flagged sample keeps its class's colour inside a dark ring, and
            # the rarer classes are drawn last: black dots covered a small cluster whole, and with
            # it every known outlier among them (w8a-like data, 348 of 750 flagged were class 1).
            at = np.flatnonzero(self.flags)
            at = at[np.argsort(np.asarray(self._zrank)[self.codes[at]], kind="stable")]
            self.flag_item.setBrush(st.brush(st.NEUTRAL))   # the legend's swatch: a ringed point
            self.flag_item.setData(x=self.x[at], y=self.y[at], size=5,
                                   brush=[self.table[c] for c in self.codes[at]], pen=st.pen(st.FLAG_COLOR, 0.9))
            return
        self.flag_item.setData(x=self.x[self.flags], y=self.y[self.flags], size=4 if dense else self.size + 5,
                               brush=st.brush(st.FLAG_COLOR) if dense else None,
                               pen=None if dense else st.pen(st.FLAG_COLOR, 1.3))

    def clear(self) -> None:
        self._leave_binned()
        self._pending = []
        self.x = np.zeros(0)
        self.y = np.zeros(0)
        self.sample_index = np.zeros(0, dtype=np.int64)
        self.codes = np.zeros(0, dtype=np.int64)
        for it in (*self.groups, self.flag_item, self.sel_item):
            it.setData(x=[], y=[])
        self.density.hide()

def _palette_order(table) -> list[int]:
    """Order of brushes: the category palette first (in palette order), then score levels low
    to high, then anything else in the order met."""
    known = {}
    for i, c in enumerate(st.CATEGORY_COLORS):
        known[id(st.brush(c))] = (0, i)
    for i, b in enumerate(st.level_brushes()):
        known[id(b)] = (1, i)
    return sorted(range(len(table)), key=lambda j: known.get(id(table[j]), (2, j)))


def _z_ranks(table, sizes) -> list[int]:
    """Drawing rank of each colour group (higher on top): categories by size, the smallest on
    top (a rare class is never buried under a common one: w8a's 1,479 known outliers vanished
    under 48,270 inliers); score levels in level order (the highest scores on top)."""
    cats = {id(st.brush(c)) for c in st.CATEGORY_COLORS} | {id(st.brush(st.NEUTRAL))}
    if all(id(b) in cats for b in table):
        order = np.argsort(-np.asarray(sizes), kind="stable")
        rank = np.empty(len(table), dtype=np.int64)
        rank[order] = np.arange(len(table))
        return rank.tolist()
    return list(range(len(table)))
