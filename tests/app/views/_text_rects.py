"""Where a figure's text is drawn, as rectangles in scene coordinates: each plot's title, its
axes' titles and tick labels as pyqtgraph lays them out for painting. Tests assert that no two
of them intersect (text that collides is text nobody can read)."""
from __future__ import annotations

import itertools

from PySide6.QtCore import QRectF
from PySide6.QtGui import QImage, QPainter


def text_rect(item) -> QRectF:
    """The scene rectangle of a QGraphicsTextItem's text (its rectangle holds its document's
    margin around the text)."""
    m = item.document().documentMargin()
    return item.mapRectToScene(item.boundingRect().adjusted(m, m, -m, -m))


def plot_texts(plot, axes=("left", "bottom")) -> list[tuple[str, QRectF]]:
    """(what, scene rectangle) of every piece of text ``plot`` shows."""
    out = []
    title = plot.titleLabel
    if title.isVisible() and title.text:
        out.append((f"title {title.text!r}", text_rect(title.item)))
    img = QImage(8, 8, QImage.Format.Format_ARGB32)
    for name in axes:
        ax = plot.getAxis(name)
        if not ax.isVisible():
            continue
        if ax.label.isVisible() and ax.labelText:
            out.append((f"{name} axis title {ax.labelText!r}", text_rect(ax.label)))
        p = QPainter(img)
        try:
            specs = ax.generateDrawSpecs(p)
        finally:
            p.end()
        if specs is None:
            continue
        for rect, _flags, text in specs[2]:
            out.append((f"{name} tick {text!r}", ax.mapRectToScene(_inked_lines(rect, text))))
    return out


def collisions(texts) -> list[tuple[str, str]]:
    """Pairs of texts whose rectangles overlap (by more than a rounding pixel)."""
    bad = []
    for (a, ra), (b, rb) in itertools.combinations(texts, 2):
        both = ra.intersected(rb)
        if both.width() > 1 and both.height() > 1:
            bad.append((a, b))
    return bad


def drawn_ticks(axis) -> list[tuple[str, QRectF]]:
    """(text, scene rectangle) of the tick labels ``axis`` draws, left to right / bottom to top."""
    img = QImage(8, 8, QImage.Format.Format_ARGB32)
    p = QPainter(img)
    try:
        specs = axis.generateDrawSpecs(p)
    finally:
        p.end()
    out = [(text, axis.mapRectToScene(_inked_lines(rect, text))) for rect, _f, text in (specs[2] if specs else [])]
    return sorted(out, key=lambda t: (t[1].left(), -t[1].top()))


def _inked_lines(rect: QRectF, text: str) -> QRectF:
    """The part of a label's rectangle its non-empty lines take ("\nCoP" is drawn on the second
    of two lines: staggered names under narrow bars)."""
    lines = text.split("\n")
    ink = [i for i, line in enumerate(lines) if line.strip()]
    if not ink or len(lines) == 1:
        return rect
    h = rect.height() / len(lines)
    return QRectF(rect.left(), rect.top() + ink[0] * h, rect.width(), (ink[-1] - ink[0] + 1) * h)


def title_outside_axis(axis) -> bool:
    """Whether ``axis``'s title runs past the axis along its length (over its neighbours)."""
    if not (axis.label.isVisible() and axis.labelText):
        return False
    r = text_rect(axis.label)
    a = axis.mapRectToScene(QRectF(0, 0, axis.width(), axis.height()))
    if axis.orientation in ("left", "right"):
        return r.top() < a.top() - 1 or r.bottom() > a.bottom() + 1
    return r.left() < a.left() - 1 or r.right() > a.right() + 1


def misaligned_legend_rows(legends, where):
    """Entries whose label's text is not level with its symbol (more than 2 px apart, centre
    to centre), and legends side by side that do not start on one line."""
    bad, tops = [], []
    for leg in legends:
        for sample, label in leg.items:
            s = sample.mapRectToScene(sample.boundingRect()).center().y()
            t = text_rect(label.item).center().y()
            if abs(s - t) > 2:
                bad.append((where, label.text, round(s), round(t)))
        if leg.items:
            tops.append(min(min(sample.mapRectToScene(sample.boundingRect()).top(), text_rect(label.item).top())
                            for sample, label in leg.items))
    if tops and max(tops) - min(tops) > 4:
        bad.append((where, "first rows of the legends", [round(t) for t in tops]))
    return bad
