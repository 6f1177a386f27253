"""The L + S view's convergence plots: the relative residual (log scale, with the tolerance
dashed) and the rank of L per iteration, side by side in a layout of their own.

The plots are short (a strip under the pictures), so their text is fitted to the height they
get: tick labels are spaced at least 1.5 lines apart (pyqtgraph's own spacing put five decades
in 46 px at 1280 x 800, one over the other), and an axis title longer than its axis is left out,
the plot's title naming the quantity instead (it ran past the plot, over the ticks below).
"""
from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QFont, QFontMetricsF

from . import _style as st
from ._vertices import reduce_curve

__all__ = ["ConvergencePlots", "MIN_HEIGHT"]

MIN_HEIGHT = 150      # px of the strip below which its plots have room for two ticks only
_TICK_GAP = 1.5       # tick labels at least this many lines apart


def _nice_step(at_least: float, whole: bool) -> float:
    """The smallest of 1, 2, 5 x 10^k (whole numbers only when ``whole``) not below ``at_least``."""
    if not math.isfinite(at_least) or at_least <= 0:
        return 1.0
    k = math.floor(math.log10(at_least))
    for m in (1, 2, 5, 10):
        step = m * 10.0 ** k
        if step >= at_least * (1 - 1e-9):
            return max(step, 1.0) if whole else step
    return 10.0 ** (k + 1)


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def _decade_strings(axis) -> None:
    """Whole decades of ``axis`` (log mode) read as powers of ten, all alike: pyqtgraph wrote
    "1, 0.01, 0.0001, 10⁻⁶" down one axis (L + S of a 1,000,000-row table)."""
    default = axis.logTickStrings

    def strings(values, scale, spacing):
        out = default(values, scale, spacing)
        return [("1" if round(v) == 0 else f"10{str(round(v)).translate(_SUPERSCRIPT)}")
                if scale == 1 and abs(v - round(v)) < 1e-9 else s for v, s in zip(values, out)]
    axis.logTickStrings = strings


def _title_font(plot) -> QFont:
    font = QFont(plot.titleLabel.item.font())
    font.setPointSizeF(float(getattr(plot, "_rss_title", ("", "", "10pt"))[2].rstrip("pt")))
    return font


class ConvergencePlots:
    """Two plots in ``layout`` (a pyqtgraph GraphicsLayout): residual and rank per iteration."""

    def __init__(self, layout, ahead: bool = False):
        """``ahead``: the rank's plot in :meth:`build_step`, not now (each plot is tens of
        milliseconds of the GUI thread)."""
        self.layout = layout
        self._left: dict = {}
        self._titles: dict = {}   # plot -> its titles, longest first (_fit_title)
        self.res_plot = self._add_plot(0, "relative residual ‖X − L − S‖F / ‖X‖F", "residual")
        self.res_plot.setLogMode(y=True)
        _decade_strings(self.res_plot.getAxis("left"))
        self.residual_curve = self.res_plot.plot(pen=st.pen(st.category_color(0), 1.8), symbol="o", symbolSize=4,
                                                 symbolBrush=st.brush(st.category_color(0)), symbolPen=None)
        self.tol_line = pg.InfiniteLine(angle=0, pen=st.pen("#555555", 1.2, Qt.PenStyle.DashLine))
        self.res_plot.addItem(self.tol_line, ignoreBounds=True)
        self.rank_plot = self.rank_curve = None
        if not ahead:
            self.build_step()

    def build_step(self) -> bool:
        """Make the rank's plot, if not made yet (True: it was made now)."""
        if self.rank_plot is not None:
            return False
        self.rank_plot = self._add_plot(1, "rank of L per iteration", "rank")
        self.rank_curve = self.rank_plot.plot(pen=st.pen(st.category_color(1), 1.8), stepMode=None, symbol="o",
                                              symbolSize=4, symbolBrush=st.brush(st.category_color(1)), symbolPen=None)
        return True

    def _add_plot(self, col: int, title: str, left: str):
        plot = self.layout.addPlot(row=0, col=col)
        self.layout.layout.setColumnStretchFactor(col, 1)
        st.style_plot(plot, title=title, left=left, bottom="iteration")
        self._left[plot] = left
        vb = plot.getViewBox()
        vb.sigResized.connect(lambda _vb, p=plot: self._fit_text(p))
        vb.sigYRangeChanged.connect(lambda _vb, _r, p=plot: self._fit_text(p))
        return plot

    def show(self, residuals, ranks, tol, converged) -> None:
        """Draw one run's history; ``converged`` None means a streaming fit (one point per batch)."""
        self.build_step()
        it = np.arange(1, len(residuals) + 1)
        # a streaming fit has a point per batch: thousands on a tall table (._vertices)
        self.residual_curve.setData(*reduce_curve(it, np.maximum(np.asarray(residuals, float), 1e-300)))
        self.rank_curve.setData(*reduce_curve(it, np.asarray(ranks, float)))
        if tol:
            self.tol_line.setPos(np.log10(tol))
            self.tol_line.setVisible(True)
        else:
            self.tol_line.setVisible(False)
        n = len(residuals)
        if n <= 1:
            # One point has no curve, and auto-range would centre it in -15…15 iterations.
            for plot in (self.res_plot, self.rank_plot):
                plot.disableAutoRange()
                plot.setXRange(0.5, 1.5, padding=0)
            if n == 1:
                r = float(np.asarray(ranks, float)[0]) if len(ranks) else 0.0
                self.rank_plot.setYRange(max(0.0, r - 1), r + 1, padding=0)
                self.rank_plot.getAxis("left").setTicks([[(k, str(k)) for k in range(int(max(0, r - 1)), int(r) + 2)]])
                v = np.log10(max(float(residuals[0]), 1e-300))
                self.res_plot.setYRange(v - 0.5, v + 0.5, padding=0)
                # One tick, at the point (log axis: positions are log10 values).
                self.res_plot.getAxis("left").setTicks([[(v, f"{float(residuals[0]):.3g}")]])
            what = "one batch" if converged is None else "one iteration"
            for plot in (self.res_plot, self.rank_plot):   # one step: no fractional steps on the axis
                plot.getAxis("bottom").setTicks([[(1, "1")]])
                plot.setLabel("bottom", "batch" if converged is None else "iteration", color=st.AXIS_COLOR)
            self._titles = {self.res_plot: [f"{what}: no convergence curve", "no curve"],
                            self.rank_plot: [f"rank of L ({what})", "rank of L"]}
            for plot in (self.res_plot, self.rank_plot):
                self._fit_title(plot)
            return
        for plot in (self.res_plot, self.rank_plot):
            plot.enableAutoRange()
            plot.getAxis("bottom").setTicks(None)
            plot.setLabel("bottom", "batch" if converged is None else "iteration", color=st.AXIS_COLOR)
        self.rank_plot.getAxis("left").setTicks(None)
        self.res_plot.getAxis("left").setTicks(None)
        step = "iteration" if converged is not None else "batch"
        self._titles = {self.rank_plot: [f"rank of L per {step}", "rank of L"]}
        if converged is None:
            self._titles[self.res_plot] = [f"relative residual per batch ({n} batches)", f"residual, {n} batches"]
        else:
            done = "converged" if converged else "not converged"
            self._titles[self.res_plot] = [f"relative residual: {done} in {n} iterations (dashed: tol)",
                                           f"residual: {done} in {n} iterations", f"{done} in {n} iterations"]
        for plot in (self.res_plot, self.rank_plot):
            self._fit_title(plot)

    def _fit_title(self, plot) -> None:
        """The longest of the plot's titles that fits over its view box on one line (a title
        wider than that overflowed the axis column, over the top tick label; the shortest
        wraps)."""
        titles = self._titles.get(plot)
        w = plot.getViewBox().width()
        if not titles:
            return
        fm = QFontMetricsF(_title_font(plot))
        text = next((t for t in titles if fm.horizontalAdvance(t) + 6 <= w), titles[-1])
        if getattr(plot, "_rss_title", (None,))[0] != (text,):
            st.set_title(plot, text)

    def _fit_text(self, plot) -> None:
        """Space the left axis's ticks for the plot's height, and show its title only if it fits."""
        self._fit_title(plot)
        vb, ax = plot.getViewBox(), plot.getAxis("left")
        h = vb.height()
        if h <= 1:
            return
        line = QFontMetricsF(ax.style.get("tickFont") or ax.font()).height()
        lo, hi = vb.viewRange()[1]
        step = _nice_step(_TICK_GAP * line * (hi - lo) / h, whole=True)   # log axis: whole decades
        if ax._tickSpacing != [(step, 0)]:
            ax.setTickSpacing(levels=[(step, 0)])
        label = QFontMetricsF(ax.label.font()).horizontalAdvance(self._left[plot])
        fits = label + 8 <= h
        if fits != ax.label.isVisible():
            ax.showLabel(fits)

    def clear(self) -> None:
        self.build_step()
        self.residual_curve.setData([], [])
        self.rank_curve.setData([], [])
