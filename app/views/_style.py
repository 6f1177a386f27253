"""Colours, pens and plot styling shared by every view (one place, so figures look alike).

Category colours are the Okabe–Ito palette (distinguishable with the common colour-vision
deficiencies), continued with Paul Tol's muted colours for data sets with more than eight classes.
Sequential scores use cividis, signed maps a colour-blind-safe diverging map. Brushes and pens
are made once and shared: a 100,000-point scatter then holds references, not 100,000 objects.
"""
from __future__ import annotations

from functools import cache

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFont

CATEGORY_COLORS = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442",
                   "#332288", "#882255", "#44AA99", "#999933", "#AA4499", "#DDCC77", "#117733"]
NEUTRAL = "#7F7F7F"
FLAG_COLOR = "#000000"
# The flagged samples' own density layer, when too many to draw as points (app/views/_binned.py).
FLAG_LAYER_COLOR = "#C0143C"
SELECT_COLOR = "#E4007C"
LIMIT_COLOR = "#000000"
AXIS_COLOR = "#202020"
SEQUENTIAL = "cividis"
N_LEVELS = 64


def category_color(i: int) -> str:
    return CATEGORY_COLORS[i % len(CATEGORY_COLORS)]


@cache
def brush(color: str, alpha: int = 220):
    c = QColor(color)
    c.setAlpha(alpha)
    return pg.mkBrush(c)


@cache
def pen(color: str, width: float = 1.0, style=None):
    p = pg.mkPen(color, width=width)
    if style is not None:
        p.setStyle(style)
    return p


@cache
@cache
def colormap(name: str = SEQUENTIAL) -> pg.ColorMap:
    """The colour map ``name``, shared: read it, do not change it. pyqtgraph reads the map's file
    and builds it anew at every call (about 20 ms, in a view's construction on the GUI thread)."""
    return pg.colormap.get(name)


@cache
def level_brushes(name: str = SEQUENTIAL, n: int = N_LEVELS, alpha: int = 230) -> tuple:
    """``n`` shared brushes sampling a colour map from its low to its high end."""
    cols = colormap(name).map(np.linspace(0.0, 1.0, n), mode="qcolor")
    out = []
    for c in cols:
        c = QColor(c)
        c.setAlpha(alpha)
        out.append(pg.mkBrush(c))
    return tuple(out)


def category_brushes(codes: np.ndarray, n_categories: int) -> list:
    table = np.empty(max(n_categories, 1) + 1, dtype=object)
    for i in range(max(n_categories, 1)):
        table[i] = brush(category_color(i))
    table[-1] = brush(NEUTRAL)  # code -1: no label
    return list(table[np.asarray(codes, dtype=np.int64)])


def value_levels(values: np.ndarray, lo: float | None = None, hi: float | None = None, n: int = N_LEVELS):
    """Bin index 0..n-1 of each value between lo and hi (default: 1st and 99th percentiles)."""
    v = np.asarray(values, dtype=np.float64)
    if lo is None or hi is None:
        q = np.percentile(v, [1, 99]) if v.size else np.array([0.0, 1.0])
        lo = q[0] if lo is None else lo
        hi = q[1] if hi is None else hi
    span = hi - lo if hi > lo else 1.0
    return np.clip(((v - lo) / span * (n - 1)).round().astype(np.int64), 0, n - 1), (lo, hi)


def _unit_scale(axis) -> None:
    axis.autoSIPrefixScale = 1.0
    axis.labelUnitPrefix = ""
    axis._updateLabel()


def plain_numbers(axis: pg.AxisItem) -> pg.AxisItem:
    """Tick labels are the data's own numbers, always: no SI prefix, no hidden scale factor.

    pyqtgraph's ``enableAutoSIPrefix(False)`` is not enough: it recomputes the scale from the
    axis range *at that moment*. Called while the range was still the previous plot's (say
    0 to 0.9, a component), it froze a factor 1000 that nothing undid, with no "(x0.001)" shown
    since the prefix is off: SPE values up to 42 were labelled 0 to 42,000 until a later redraw.
    Here the scale is pinned to 1 for good, whatever the range was or becomes.
    """
    axis.autoSIPrefix = False
    axis.updateAutoSIPrefix = lambda: _unit_scale(axis)
    _unit_scale(axis)
    return axis


def colorbar(values, cmap, label: str, **kwargs) -> pg.ColorBarItem:
    """A non-interactive colour bar whose axis reads like every other axis."""
    bar = pg.ColorBarItem(values=(float(values[0]), float(values[1])), colorMap=cmap, interactive=False,
                          width=14, **kwargs)
    for side in ("left", "bottom", "right", "top"):
        plain_numbers(bar.getAxis(side))
    ax = bar.getAxis("right")
    ax.setTextPen(pen(AXIS_COLOR))
    ax.setPen(pen(AXIS_COLOR))
    font = QFont()
    font.setPointSize(9)
    ax.setTickFont(font)
    if label:
        ax.setLabel(label, color=AXIS_COLOR)
    return bar


class DownLegend(pg.LegendItem):
    """A legend whose entries fill each column top to bottom before the next (pyqtgraph's fill
    each row first). The SPE / T² map's long entries (the flagged samples, the points drawn) come
    first and its short ones (the lines) last: row by row, a long and a short entry shared each
    column, and at 690 px (its width at 1280 x 800, a 1,000,000-row map) the six entries stood in
    one column of six rows; down the columns, the long ones share a column and the short ones
    the next: two columns of three rows."""

    def _addItemToLayout(self, sample, label):
        self._place()

    def setColumnCount(self, columnCount):
        self.columnCount = columnCount
        self._place()
        self.updateSize()

    def _place(self) -> None:
        for i in range(self.layout.count() - 1, -1, -1):
            self.layout.removeAt(i)
        self.rowCount = legend_rows(len(self.items), self.columnCount)
        for k, (sample, label) in enumerate(self.items):
            r, c = k % self.rowCount, k // self.rowCount
            self.layout.addItem(sample, r, 2 * c, alignment=Qt.AlignmentFlag.AlignVCenter)
            self.layout.addItem(label, r, 2 * c + 1)


def legend_rows(n: int, columns: int) -> int:
    """How many rows ``n`` entries take in ``columns`` columns."""
    return max(1, -(-n // max(columns, 1)))


def legend_row(layout, row: int, col: int, colspan: int = 1, columns: int = 4, down: bool = False) -> pg.LegendItem:
    """A legend in its own row of the figure (beneath the plots): never on the data. Its number
    of columns follows the width it gets (see :func:`fit_legend`); ``down``: its entries fill
    each column before the next (:class:`DownLegend`)."""
    leg = (DownLegend if down else pg.LegendItem)(labelTextColor=AXIS_COLOR, labelTextSize="9pt", colCount=columns)
    leg.max_columns = columns
    layout.addItem(leg, row=row, col=col, colspan=colspan)
    return leg


def fit_legend(legend: pg.LegendItem, width: float) -> None:
    """As many columns as fit in ``width`` pixels (at most the legend's own maximum): a legend
    wider than its plot would widen the figure beyond the window and cut plots off. When one
    long entry keeps the legend in fewer columns, it is put on two lines (after its colon, else
    at its middle space) if that gives more: at 960 x 540 (200 %) the SPE/T² map's five entries
    stood in one column, and the plots above them were squeezed to 21 px (issue 25's tour)."""
    if not legend.items:
        return
    for _, lab in legend.items:   # back to one line: the width may have grown
        if getattr(lab, "one_line", None) is not None:
            lab.setText(lab.one_line)
            lab.one_line = None
    best = _legend_columns(legend, width)
    if best < min(len(legend.items), getattr(legend, "max_columns", len(legend.items))):
        wrapped = []
        for _, lab in legend.items:
            text = lab.text
            if "<br>" in text or _label_width(lab) <= width / 2:
                continue
            cut = text.find(": ")
            if cut < 0:
                spaces = [i for i, c in enumerate(text) if c == " "]
                if not spaces:
                    continue
                cut = min(spaces, key=lambda i: abs(i - len(text) / 2)) - 1
            lab.one_line = text
            lab.setText(text[:cut + 1] + "<br>" + text[cut + 2:])
            wrapped.append(lab)
        more = _legend_columns(legend, width) if wrapped else best
        if more > best:
            best = more
        else:
            for lab in wrapped:
                lab.setText(lab.one_line)
                lab.one_line = None
    legend.setColumnCount(best)


def wrap_legend(legend: pg.LegendItem, width: float) -> None:
    """Entries still wider than ``width`` go on as many lines (of about equal length, broken at
    spaces) as they need (undone by the next :func:`fit_legend`). For a figure too narrow for its
    legends in one column: one long entry ("flagged known outliers (of 50)") set its legend's
    width, and the figure's, past the window's edge, and the plot on the right was cut off (the
    comparison view at 800 px). Only then: each line costs the plots above some height."""
    if legend.columnCount > 1:
        return
    for sample, lab in legend.items:
        room = width - sample.width() - 10
        if _label_width(lab) <= room:
            continue
        text = lab.one_line if getattr(lab, "one_line", None) is not None else lab.text
        words = text.replace("<br>", " ").split(" ")
        for lines in range(2, len(words) + 1):
            lab.setText("<br>".join(_balanced(words, lines)))
            if _label_width(lab) <= room:
                break
        lab.one_line = text


def _balanced(words: list[str], lines: int) -> list[str]:
    """``words`` in ``lines`` lines of about equal length (greedy, by characters)."""
    target = (sum(map(len, words)) + len(words) - 1) / lines
    out, line = [], ""
    for i, w in enumerate(words):
        left = len(words) - i   # words not yet placed, this one included
        if line and (len(line) + 1 + len(w) > target and len(out) < lines - 1 or left < lines - len(out)):
            out.append(line)
            line = w
        else:
            line = f"{line} {w}" if line else w
    out.append(line)
    return out


def _label_width(lab) -> float:
    return lab.item.boundingRect().width()   # up to date at once (the widget's after layout)


def _legend_columns(legend: pg.LegendItem, width: float) -> int:
    widths = [s.width() + _label_width(lab) + 10 for s, lab in legend.items]
    for k in range(min(len(widths), getattr(legend, "max_columns", len(widths))), 0, -1):
        if isinstance(legend, DownLegend):   # column c holds entries c * rows to (c + 1) * rows
            rows = legend_rows(len(widths), k)
            columns = [widths[c:c + rows] for c in range(0, len(widths), rows)]
        else:
            columns = [widths[c::k] for c in range(k)]
        if sum(max(col) for col in columns) <= width:
            return k
    return 1


def diverging_colormap() -> pg.ColorMap:
    """The signed map of :mod:`app.palette` (what the exported video uses too)."""
    from .. import palette
    lut = palette.diverging_lut()
    return pg.ColorMap(np.linspace(0.0, 1.0, len(lut)), lut)


def best_grid(n: int, image_hw: float, width: float, height: float, title: float = 22.0) -> tuple[int, int]:
    """(rows, cols) that show ``n`` pictures of height/width ratio ``image_hw`` largest in a
    ``width`` x ``height`` area (each picture with a title line above it)."""
    best, size = (1, n), -1.0
    for cols in range(1, n + 1):
        rows = -(-n // cols)
        w = min(width / cols, (height / rows - title) / max(image_hw, 1e-6))
        if w > size + 0.5:
            best, size = (rows, cols), w
    return best


def style_plot(plot: pg.PlotItem, title: str | None = None, left: str | None = None,
               bottom: str | None = None) -> pg.PlotItem:
    """Dark axes and text on white, the way a printed figure wants them."""
    font = QFont()
    font.setPointSize(9)
    for name in ("left", "bottom", "right", "top"):
        ax = plot.getAxis(name)
        ax.setPen(pen(AXIS_COLOR))
        ax.setTextPen(pen(AXIS_COLOR))
        ax.setTickFont(font)
        plain_numbers(ax)  # "(x0.001)" beside a label reads as part of the unit
    _let_title_shrink(plot.titleLabel)
    if title:
        set_title(plot, title)
    if left:
        plot.setLabel("left", left, color=AXIS_COLOR)
    if bottom:
        plot.setLabel("bottom", bottom, color=AXIS_COLOR)
    return plot


def _let_title_shrink(label) -> None:
    """Stop a title's text width from being its plot's minimum width.

    pyqtgraph's LabelItem re-imposes its text width as minimum and preferred width on every
    resize, so side-by-side plots with long titles overflow a narrow window and the last plot is
    cut off. Keep the text's height, drop its width: the column decides, the text stays centred.
    """
    if getattr(label, "_rss_shrinks", False):
        return
    base = type(label).updateMin

    def update_min():
        base(label)
        height = label._sizeHint[Qt.SizeHint.MinimumSize][1]
        label.setMinimumWidth(10)
        label._sizeHint[Qt.SizeHint.MinimumSize] = (10, height)
        label._sizeHint[Qt.SizeHint.PreferredSize] = (10, height)
        label.updateGeometry()

    label.updateMin = update_min
    label._rss_shrinks = True
    update_min()


def set_title(plot: pg.PlotItem, text, color: str = AXIS_COLOR, size: str = "10pt") -> None:
    """Set a plot title that never widens its column (see ``_let_title_shrink``) and wraps onto
    more lines when the plot is narrower than the text (never cut off). ``text`` may be a tuple
    of titles, longest first: the longest that fits on one line is shown (else the last, wrapped)."""
    _let_title_shrink(plot.titleLabel)
    titles = (text,) if isinstance(text, str) else tuple(text)
    plot._rss_title = (titles, color, size)
    if not getattr(plot, "_rss_title_fits", False):
        plot.geometryChanged.connect(lambda p=plot: fit_title(p))
        plot._rss_title_fits = True
    plot.setTitle(titles[0], color=color, size=size)
    plot._rss_title_shown = titles[0]
    fit_title(plot)


def fit_title(plot: pg.PlotItem) -> None:
    """The longest of the plot's titles that fits on one line, else the shortest broken into
    lines no wider than the plot (at spaces)."""
    spec = getattr(plot, "_rss_title", None)
    if spec is None:
        return
    titles, color, size = spec
    # The title is centred over the view box's column, not the whole plot: the axes' widths are
    # not its room ("samples flagged" ran off the window's edge over a 122 px plot).
    axes = sum(plot.getAxis(side).width() for side in ("left", "right") if plot.getAxis(side).isVisible())
    avail = plot.width() - axes - 6
    if avail <= 20:
        return
    from PySide6.QtGui import QFontMetricsF
    font = QFont(plot.titleLabel.item.font())
    font.setPointSizeF(float(size.rstrip("pt")))
    fm = QFontMetricsF(font)
    text = next((t for t in titles if fm.horizontalAdvance(t) <= avail), titles[-1])
    lines, cur = [], ""
    for word in text.split(" "):
        trial = f"{cur} {word}" if cur else word
        if cur and fm.horizontalAdvance(trial) > avail:
            lines.append(cur)
            cur = word
        else:
            cur = trial
    lines.append(cur)
    html = "<br>".join(lines)
    if html != getattr(plot, "_rss_title_shown", None):
        plot._rss_title_shown = html
        plot.setTitle(html, color=color, size=size)


def figure_widget() -> pg.GraphicsLayoutWidget:
    w = pg.GraphicsLayoutWidget()
    w.setBackground("w")
    w.ci.setSpacing(6)
    return w


class CountAxis(pg.AxisItem):
    """An axis of counts or row numbers written as counts are elsewhere: "500,000" and
    "1,000,000", where pyqtgraph wrote "500000" and "1e+06" (the rows of L + S at 1,000,000
    rows, the comparison's flagged counts)."""

    def tickStrings(self, values, scale, spacing):
        if spacing >= 1 and all(float(v).is_integer() for v in values):
            return [f"{int(v):,}" for v in values]
        return super().tickStrings(values, scale, spacing)
