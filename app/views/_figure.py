"""Figure export of a view's plots: PNG at 1–4x the screen size, or SVG, always on white.

PNG goes through pyqtgraph's ImageExporter, which renders the scene into a larger image: text
and point markers scale with it. Curves use cosmetic (one-pixel) pens that a scaled render
would leave hair-thin, so their pens are widened by the scale for the duration of the export.
SVG goes through pyqtgraph's SVGExporter with a white background rectangle. Files are written
atomically (see :mod:`app.export`).
"""
from __future__ import annotations

import json
import os
from contextlib import contextmanager
from xml.sax.saxutils import escape

import pyqtgraph as pg
from pyqtgraph.exporters import ImageExporter, SVGExporter
from PySide6.QtCore import QCoreApplication, QEvent
from PySide6.QtGui import QColor, QPen

from ..export import atomic_write_bytes
from ._cloud import finish_pending_drawings
from ._export_points import atlas_points, png_of, svg_points

FORMATS = (".png", ".svg")


def _patch_svg_close_path() -> None:
    """Let pyqtgraph's SVG exporter read paths that Qt closes with a "Z" token.

    Recent Qt writes closed subpaths as "M0,0 L10,0 ... Z"; pyqtgraph 0.14 expects every token
    to be "x,y" and fails on the whole export. The wrapper takes the Z tokens out before
    pyqtgraph rewrites the coordinates and puts them back after, at the end of the same subpaths.
    """
    import sys

    mod = sys.modules.get("pyqtgraph.exporters.SVGExporter")
    orig = getattr(mod, "correctCoordinates", None)
    if orig is None or getattr(orig, "_closes_paths", False):
        return

    def correct(node, defs, item, options):
        closed = []
        for el in node.getElementsByTagName("path"):
            d = el.getAttribute("d")
            if "Z" not in d and "z" not in d:
                continue
            flags, tokens = [], []
            for tok in d.replace("z", " Z").replace("Z", " Z ").split():
                if tok == "Z":
                    if flags:
                        flags[-1] = True
                    continue
                if tok[0] == "M" or not flags:
                    flags.append(False)
                tokens.append(tok)
            el.setAttribute("d", " ".join(tokens))
            closed.append((el, flags))
        orig(node, defs, item, options)
        for el, flags in closed:
            out, sub = [], -1
            for tok in el.getAttribute("d").split():
                if tok[0] == "M" or sub < 0:
                    if sub >= 0 and flags[sub]:
                        out.append("Z")
                    sub += 1
                out.append(tok)
            if 0 <= sub < len(flags) and flags[sub]:
                out.append("Z")
            el.setAttribute("d", " ".join(out))

    correct._closes_paths = True
    mod.correctCoordinates = correct


_patch_svg_close_path()


def check_scale(scale) -> float:
    try:
        s = float(scale)
    except (TypeError, ValueError):
        raise ValueError(f"scale must be a number in [1, 4]; got {scale!r}") from None
    if not 1.0 <= s <= 4.0:
        raise ValueError(f"scale must be a number in [1, 4] (1 = screen size); got {scale!r}")
    return s


def figure_format(path) -> str:
    ext = os.path.splitext(os.fspath(path))[1].lower()
    if ext not in FORMATS:
        raise ValueError(f"figure file must end in .png or .svg; got {os.fspath(path)!r}")
    return ext


@contextmanager
def _wider_pens(scene, scale: float):
    changed = []
    if scale != 1.0:
        for item in scene.items():
            if isinstance(item, (pg.PlotCurveItem, pg.IsocurveItem, pg.InfiniteLine)):
                old = item.opts["pen"] if isinstance(item, pg.PlotCurveItem) else item.pen
                if old is None:
                    continue
                new = QPen(old)
                new.setWidthF(max(old.widthF(), 1.0) * scale)
                changed.append((item, old))
                item.setPen(new)
    try:
        yield
    finally:
        for item, old in changed:
            item.setPen(old)


@contextmanager
def _scaled_legends(scene, scale: float):
    """pyqtgraph's legends ignore the view's transformations (so that zooming leaves them be),
    which a render at ``scale`` is too: their text stayed at screen size in a 2x figure."""
    flag = pg.QtWidgets.QGraphicsItem.GraphicsItemFlag.ItemIgnoresTransformations
    changed = []
    if scale != 1.0:
        for item in scene.items():
            if isinstance(item, pg.LegendItem) and item.flags() & flag:
                item.setFlag(flag, False)
                changed.append(item)
    try:
        yield
    finally:
        for item in changed:
            item.setFlag(flag, True)


def settle(widget) -> None:
    """Lay ``widget``'s figure out as a screen would show it, before an export renders it.

    A pyqtgraph axis learns the width of its tick labels only when it is painted; until then it
    keeps a default of 30 px. A view never painted (a tab never shown, a figure drawn for the
    command line) was exported with that default: its plot sat about 20 px right of where the
    screen shows it. So the figure is painted off the screen (``grab``) and the layout requests
    that painting posts are run, until the axes stop changing (three paints at most: new widths
    can change the ticks).

    First the picture is completed now, on this thread: a command line has no event loop to wait
    on, and the window's export must not write a half-drawn view. Every cloud still drawing its
    points in parts is finished (:func:`~app.views._cloud.finish_pending_drawings`), then the
    view that holds the figure, if it has a ``draw_now()``, is asked for what it would otherwise
    draw later (an aggregation made off the GUI thread, a re-binning after a zoom): ``draw_now``
    must return only once the scene shows the final picture of what is on screen."""
    finish_pending_drawings()   # a large cloud draws its points over several event-loop turns
    holder = widget.parentWidget()   # the view (the comparison's figure sits in a splitter of it)
    while holder is not None and not callable(getattr(holder, "draw_now", None)):
        holder = holder.parentWidget()
    if holder is not None:
        holder.draw_now()
    axes = [it for it in widget.scene().items() if isinstance(it, pg.AxisItem)]
    for _ in range(3):
        before = [(a.textWidth, a.textHeight) for a in axes]
        widget.grab()
        QCoreApplication.sendPostedEvents(None, QEvent.Type.LayoutRequest)
        if [(a.textWidth, a.textHeight) for a in axes] == before:
            return


def png_bytes(widget, scale: float = 1.0, metadata: dict | None = None) -> bytes:
    """PNG of a GraphicsView-based widget's scene at ``scale`` times its on-screen size.

    ``metadata`` (JSON-able) goes into a text chunk under the key "Comment".
    """
    scale = check_scale(scale)
    settle(widget)
    scene = widget.scene()
    exp = ImageExporter(scene)
    w = max(1, widget.width())
    exp.parameters()["width"] = int(round(w * scale))
    exp.parameters()["background"] = QColor("white")
    with _wider_pens(scene, scale), _scaled_legends(scene, scale), atlas_points(scene):
        img = exp.export(toBytes=True)
    if metadata is not None:
        img.setText("Comment", json.dumps(metadata, sort_keys=True, ensure_ascii=True))
    return png_of(img)


def svg_bytes(widget, metadata: dict | None = None) -> bytes:
    """SVG of the widget's scene on a white page; ``metadata`` goes into a <metadata> element."""
    settle(widget)
    exp = SVGExporter(widget.scene())
    exp.parameters()["background"] = QColor("white")
    with svg_points(widget.scene()):
        data = exp.export(toBytes=True)
    if metadata is None:
        return data
    svg = data.decode("utf-8")
    start = svg.find("<svg")
    close = svg.find(">", start)
    if start < 0 or close < 0:
        return data
    text = escape(json.dumps(metadata, sort_keys=True, ensure_ascii=False))
    meta = f'\n<metadata id="robust-studio-provenance">{text}</metadata>'
    return (svg[:close + 1] + meta + svg[close + 1:]).encode("utf-8")


def export_widget(widget, path, scale: float = 1.0, overwrite: bool = True, metadata: dict | None = None) -> str:
    """Write ``widget``'s figure to ``path`` (.png at ``scale``, or .svg); returns the path.

    ``metadata``: what produced the figure, stored in the file (PNG text chunk "Comment",
    SVG ``<metadata id="robust-studio-provenance">``).
    """
    ext = figure_format(path)
    scale = check_scale(scale)
    data = png_bytes(widget, scale, metadata) if ext == ".png" else svg_bytes(widget, metadata)
    return atomic_write_bytes(path, data, overwrite=overwrite)
