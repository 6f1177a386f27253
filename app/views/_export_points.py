"""Scatter points in figure exports at a cost bounded by the picture, not by the number of points.

pyqtgraph exports a ScatterPlotItem point by point: in a PNG each point is a separate
``drawPath`` (a Python loop, about 25 µs a point: 25 s for a million), and in an SVG each point
becomes a ``<g transform>`` group that its exporter then rewrites with ``minidom``'s list
insertions and removals, quadratic in the number of groups (20,085 flagged points of a
1,000,000-row PCA: 242 s of a 293 s run, an 11 MB file).

- :func:`svg_points` gives each scatter item of a scene its own SVG writer for the export: the
  points inside the plot, mapped to the page with numpy, one ``<path>`` per style (colour, pen,
  size, symbol), linear in the number of points. An item with more than :data:`VECTOR_POINTS`
  points inside its plot is not worth drawing as vectors (the dots hide each other): it is
  painted into an image at twice the page's resolution and embedded as a PNG ``<image>``.
- :func:`atlas_points` lets an item of more than :data:`VECTOR_POINTS` points draw a PNG export
  from its pre-rendered symbols, as it draws the screen (one ``drawPixmapFragments`` call).
"""
from __future__ import annotations

import base64
from contextlib import contextmanager
from xml.dom import minidom

import numpy as np
import pyqtgraph as pg
from pyqtgraph.graphicsItems.ScatterPlotItem import Symbols
from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QRectF, Qt
from PySide6.QtGui import QColor, QImage, QPainter, QTransform
from PySide6.QtWidgets import QGraphicsItem

__all__ = ["VECTOR_POINTS", "svg_points", "atlas_points", "png_of"]

#: Points of one scatter item written as vectors at most; above, the item is an embedded image.
VECTOR_POINTS = 50_000
# Resolution of an embedded points image, in image pixels per page pixel.
RASTER_SCALE = 2.0


def _scatters(scene) -> list:
    return [it for it in scene.items() if isinstance(it, pg.ScatterPlotItem) and it.isVisible()]


def _clip_rect(item) -> QRectF | None:
    """The scene rectangle that clips ``item`` (its ViewBox's), or None."""
    flag = QGraphicsItem.GraphicsItemFlag.ItemClipsChildrenToShape
    parent = item.parentItem()
    while parent is not None:
        if parent.flags() & flag:
            return parent.mapRectToScene(parent.boundingRect())
        parent = parent.parentItem()
    return None


def _page_points(item) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(page x, page y, indices into item.data) of the visible points inside the item's plot."""
    data = item.data
    x = np.asarray(data["x"], dtype=float)
    y = np.asarray(data["y"], dtype=float)
    t = item.sceneTransform()
    px = t.m11() * x + t.m21() * y + t.dx()
    py = t.m12() * x + t.m22() * y + t.dy()
    ok = np.isfinite(px) & np.isfinite(py) & np.asarray(data["visible"], dtype=bool)
    clip = _clip_rect(item)
    if clip is not None:
        pad = 0.5 * float(np.max(np.where(data["size"] < 0, item.opts["size"], data["size"]), initial=0))
        ok &= ((px >= clip.left() - pad) & (px <= clip.right() + pad)
               & (py >= clip.top() - pad) & (py <= clip.bottom() + pad))
    idx = np.flatnonzero(ok)
    return px[idx], py[idx], idx


def _color(c: QColor) -> tuple[str, float]:
    return c.name(), round(c.alphaF(), 3)


def _style_key(symbol, size, pen, brush, scale: float) -> tuple:
    pen = pg.mkPen(pen)
    brush = pg.mkBrush(brush)
    stroke = None
    if pen.style() != Qt.PenStyle.NoPen:
        stroke = (*_color(pen.color()), max(pen.widthF(), 1.0) if pen.isCosmetic() else pen.widthF())
    fill = None if brush.style() == Qt.BrushStyle.NoBrush else _color(brush.color())
    sym = symbol if isinstance(symbol, str) else id(symbol)
    return sym, float(size) * scale, stroke, fill


def _groups(item, idx: np.ndarray) -> dict:
    """style key -> positions (into idx) of the points drawn in that style. Per-point objects
    are told apart by identity first (a million points share a handful of brushes)."""
    cols = list(item._style(["symbol", "size", "pen", "brush"], idx=idx))
    scale = 1.0
    if not item.opts["pxMode"]:
        t = item.sceneTransform()
        scale = float(np.hypot(t.m11(), t.m12()))
    symbols = {}
    codes = []
    for col in cols:
        if col.dtype == object:
            ids = np.fromiter(map(id, col), dtype=np.int64, count=col.size)
            uniq, first, inv = np.unique(ids, return_index=True, return_inverse=True)
            codes.append((inv, [col[i] for i in first]))
        else:
            uniq, inv = np.unique(col, return_inverse=True)
            codes.append((inv, list(uniq)))
    combined = np.zeros(idx.size, dtype=np.int64)
    for inv, values in codes:
        combined = combined * len(values) + inv
    uniq, first, inv = np.unique(combined, return_index=True, return_inverse=True)
    out: dict = {}
    for g, i in enumerate(first):
        key = _style_key(*(values[c[i]] for c, values in codes), scale)
        symbols[key[0]] = cols[0][i]
        members = np.flatnonzero(inv == g)
        out.setdefault(key, []).append(members)
    return {k: (np.concatenate(v), symbols[k[0]]) for k, v in out.items()}


def _f(a: np.ndarray) -> list[str]:
    return [f"{v:.2f}" for v in a.tolist()]


def _marker_path(px: np.ndarray, py: np.ndarray, symbol, size: float) -> str:
    """SVG path data of one marker per point (circles as two arcs, other symbols as polygons)."""
    if size <= 0 or px.size == 0:
        return ""
    if isinstance(symbol, str) and symbol == "o":
        r = size / 2
        return "".join(f"M{x},{y}a{r:.2f},{r:.2f} 0 1,0 {size:.2f},0a{r:.2f},{r:.2f} 0 1,0 {-size:.2f},0"
                       for x, y in zip(_f(px - r), _f(py)))
    path = Symbols[symbol] if isinstance(symbol, str) else symbol
    if not hasattr(path, "toSubpathPolygons"):
        path = list(Symbols.values())[int(symbol) % len(Symbols)]
    polys = [np.array([[p.x(), p.y()] for p in poly]) * size for poly in path.toSubpathPolygons()]
    parts = []
    for x, y in zip(px.tolist(), py.tolist()):
        for poly in polys:
            pts = " ".join(f"{x + a:.2f},{y + b:.2f}" for a, b in poly)
            parts.append(f"M{pts}Z")
    return "".join(parts)


def _vector_group(doc, item, px, py, idx):
    g = doc.createElement("g")
    for (_, size, stroke, fill), (members, symbol) in _groups(item, idx).items():
        d = _marker_path(px[members], py[members], symbol, size)
        if not d:
            continue
        el = doc.createElement("path")
        el.setAttribute("d", d)
        # overlapping markers of one path all filled (Qt's groups around it say "evenodd")
        el.setAttribute("fill-rule", "nonzero")
        if fill is None:
            el.setAttribute("fill", "none")
        else:
            el.setAttribute("fill", fill[0])
            if fill[1] < 1:
                el.setAttribute("fill-opacity", str(fill[1]))
        if stroke is None:
            el.setAttribute("stroke", "none")
        else:
            el.setAttribute("stroke", stroke[0])
            el.setAttribute("stroke-width", f"{stroke[2]:.2f}")
            if stroke[1] < 1:
                el.setAttribute("stroke-opacity", str(stroke[1]))
        g.appendChild(el)
    return g


def raster_png(item, rect: QRectF, scale: float = RASTER_SCALE) -> bytes:
    """PNG of ``item`` alone over the scene rectangle ``rect`` at ``scale`` image pixels per
    scene pixel, transparent around its points (drawn from its pre-rendered symbols)."""
    w, h = max(1, int(np.ceil(rect.width() * scale))), max(1, int(np.ceil(rect.height() * scale)))
    img = QImage(w, h, QImage.Format.Format_ARGB32_Premultiplied)
    img.fill(Qt.GlobalColor.transparent)
    p = QPainter(img)
    try:
        p.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        page = QTransform(scale, 0, 0, scale, -rect.x() * scale, -rect.y() * scale)
        p.setTransform(item.sceneTransform() * page)
        opts = item._exportOpts
        item._exportOpts = False   # the atlas path: one call for every point
        try:
            item.paint(p, pg.QtWidgets.QStyleOptionGraphicsItem(), None)
        finally:
            item._exportOpts = opts
    finally:
        p.end()
    return png_of(img)


def png_of(img: QImage) -> bytes:
    """The PNG file of a QImage, as bytes."""
    ba = QByteArray()
    buf = QBuffer(ba)
    buf.open(QIODevice.OpenModeFlag.WriteOnly)
    img.save(buf, "PNG")
    buf.close()
    return bytes(ba.data())


def _raster_group(doc, item, rect: QRectF):
    g = doc.createElement("g")
    el = doc.createElement("image")
    for k, v in (("x", rect.x()), ("y", rect.y()), ("width", rect.width()), ("height", rect.height())):
        el.setAttribute(k, f"{v:.2f}")
    el.setAttribute("preserveAspectRatio", "none")
    el.setAttribute("xlink:href", "data:image/png;base64," + base64.b64encode(raster_png(item, rect)).decode("ascii"))
    g.appendChild(el)
    return g


def item_svg(item, nodes: dict, limit: int = VECTOR_POINTS):
    """The (group, defs) pyqtgraph's SVG exporter asks an item for (``generateSvg``): vectors up
    to ``limit`` points inside the plot, an embedded image above."""
    doc = minidom.Document()
    px, py, idx = _page_points(item)
    if idx.size > limit:
        rect = _clip_rect(item) or item.mapRectToScene(item.boundingRect())
        g = _raster_group(doc, item, rect)
    else:
        g = _vector_group(doc, item, px, py, idx)
    k = 1
    while f"ScatterPoints_{k}" in nodes:
        k += 1
    name = f"ScatterPoints_{k}"
    nodes[name] = g
    g.setAttribute("id", name)
    return g, []


@contextmanager
def svg_points(scene, limit: int = VECTOR_POINTS):
    """During an SVG export of ``scene``, its scatter items are written by :func:`item_svg`."""
    items = _scatters(scene)
    for it in items:
        it.generateSvg = lambda nodes, it=it: item_svg(it, nodes, limit)
    try:
        yield
    finally:
        for it in items:
            it.__dict__.pop("generateSvg", None)


@contextmanager
def atlas_points(scene, limit: int = VECTOR_POINTS):
    """During a PNG export of ``scene``, scatter items of more than ``limit`` points ignore the
    exporter's export mode, so they draw from their symbol atlas (markers at screen size)."""
    big = [it for it in _scatters(scene) if len(it.data) > limit]
    for it in big:
        it.setExportMode = lambda export, opts=None: None
    try:
        yield
    finally:
        for it in big:
            it.__dict__.pop("setExportMode", None)
