"""The L + S view's convergence plots: the relative residual (log scale, with the tolerance
dashed) and the rank of L per iteration, side by side in a layout of their own."""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt

from . import _style as st

__all__ = ["ConvergencePlots"]


class ConvergencePlots:
    """Two plots in ``layout`` (a pyqtgraph GraphicsLayout): residual and rank per iteration."""

    def __init__(self, layout):
        self.layout = layout
        self.res_plot = layout.addPlot(row=0, col=0)
        self.rank_plot = layout.addPlot(row=0, col=1)
        layout.layout.setColumnStretchFactor(0, 1)
        layout.layout.setColumnStretchFactor(1, 1)
        st.style_plot(self.res_plot, title="convergence: ‖X − L − S‖F / ‖X‖F", left="relative residual",
                      bottom="iteration")
        self.res_plot.setLogMode(y=True)
        st.style_plot(self.rank_plot, title="rank of L per iteration", left="rank", bottom="iteration")
        self.residual_curve = self.res_plot.plot(pen=st.pen(st.category_color(0), 1.8), symbol="o", symbolSize=4,
                                                 symbolBrush=st.brush(st.category_color(0)), symbolPen=None)
        self.tol_line = pg.InfiniteLine(angle=0, pen=st.pen("#555555", 1.2, Qt.PenStyle.DashLine))
        self.res_plot.addItem(self.tol_line, ignoreBounds=True)
        self.rank_curve = self.rank_plot.plot(pen=st.pen(st.category_color(1), 1.8), stepMode=None, symbol="o",
                                              symbolSize=4, symbolBrush=st.brush(st.category_color(1)), symbolPen=None)

    def show(self, residuals, ranks, tol, converged) -> None:
        """Draw one run's history; ``converged`` None means a streaming fit (one point per batch)."""
        it = np.arange(1, len(residuals) + 1)
        self.residual_curve.setData(it, np.maximum(np.asarray(residuals, float), 1e-300))
        self.rank_curve.setData(it, np.asarray(ranks, float))
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
            st.set_title(self.res_plot, f"{what}: no convergence curve")
            st.set_title(self.rank_plot, f"rank of L ({what})")
            return
        for plot in (self.res_plot, self.rank_plot):
            plot.enableAutoRange()
            plot.getAxis("bottom").setTicks(None)
            plot.setLabel("bottom", "batch" if converged is None else "iteration", color=st.AXIS_COLOR)
        self.rank_plot.getAxis("left").setTicks(None)
        self.res_plot.getAxis("left").setTicks(None)
        st.set_title(self.rank_plot, "rank of L per iteration" if converged is not None else "rank of L per batch")
        if converged is None:
            st.set_title(self.res_plot, f"residual per batch ({len(residuals)} batches)")
        else:
            st.set_title(self.res_plot, f"convergence ({'converged' if converged else 'stopped at max_iter'} "
                                        f"after {len(residuals)} iterations; dashed: tol)")

    def clear(self) -> None:
        self.residual_curve.setData([], [])
        self.rank_curve.setData([], [])
