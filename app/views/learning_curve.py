"""Learning curve of the online SCW classifier: cumulative mistake rate and number of updates
against samples seen; SCW-I and SCW-II overlaid when both were run on the current data, and the
test accuracy when the run had a test split (``history_test_accuracy`` in the result). A history
of millions of samples is drawn through its few thousand vertices a plot can show, the same to
the pixel (:mod:`._vertices`)."""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt

from . import _style as st
from ._common import fmt
from ._vertices import reduce_curve
from .base import BaseView

MARKED_POINTS = 200   # test-accuracy evaluations drawn with a marker each, at most
VARIANT_STYLE = {"I": (st.category_color(0), Qt.PenStyle.SolidLine), "II": (st.category_color(1), Qt.PenStyle.DashLine)}


class LearningCurveView(BaseView):
    name = "learning-curve"
    title = "Learning curve"

    def __init__(self, state, parent=None):
        super().__init__(state, parent)
        self.runs = {}  # variant -> RunResult, the latest of each on the current data
        state.resultAdded.connect(self._remember)
        state.resultsCleared.connect(self.runs.clear)
        lay = self.figure.ci
        self.rate_plot = lay.addPlot(row=0, col=0)
        self.upd_plot = lay.addPlot(row=0, col=1)
        self.acc_plot = lay.addPlot(row=0, col=2)
        # "cumulative" on the axis, not in the title: at 200 % the title wrapped over two lines.
        st.style_plot(self.rate_plot, title="online mistake rate", left="cumulative mistake rate",
                      bottom="samples seen")
        st.style_plot(self.upd_plot, title="number of updates", left="updates", bottom="samples seen")
        st.style_plot(self.acc_plot, title="test accuracy", left="accuracy", bottom="samples seen")
        self.upd_plot.setXLink(self.rate_plot)
        # Beneath the plots, never on the curves.
        self.rate_legend = self.add_legend(st.legend_row(lay, row=1, col=0, colspan=3, columns=4))
        self.curves = {}

    def _remember(self, method):
        if method != "scw":
            return
        res = self.state.result("scw")
        self.runs[str(res.params.get("variant", "I"))] = res

    def figure_results(self):
        return [self.runs[k] for k in sorted(self.runs)]

    def available(self):
        return bool(self.runs) or self.state.result("scw") is not None

    def refresh(self):
        if self.state.result("scw") is not None:
            self._remember("scw")
        for plot in (self.rate_plot, self.upd_plot, self.acc_plot):
            for it in list(plot.listDataItems()):
                plot.removeItem(it)
        self.rate_legend.clear()
        self.curves = {}
        has_test = False
        parts = []
        for variant in sorted(self.runs):
            res = self.runs[variant]
            color, style = VARIANT_STYLE.get(variant, (st.category_color(len(self.curves) + 2), Qt.PenStyle.SolidLine))
            pen = st.pen(color, 2.0, style)
            rate = np.asarray(res.arrays["history_mistake_rate"], dtype=float)
            upd = np.asarray(res.arrays["history_updates"], dtype=float)
            seen = np.asarray(res.arrays.get("history_seen", np.arange(1, rate.size + 1)), dtype=float)
            eta = res.params.get("eta")
            label = f"SCW-{variant} (C = {res.params.get('C')}" + (f", η = {eta})" if eta is not None else ")")
            c1 = self.rate_plot.plot(*reduce_curve(seen, rate), pen=pen)
            self.rate_legend.addItem(c1, label)
            c2 = self.upd_plot.plot(*reduce_curve(seen, upd), pen=pen)
            self.curves[variant] = (c1, c2)
            acc = res.arrays.get("history_test_accuracy")
            if acc is not None:
                has_test = True
                acc = np.asarray(acc, dtype=float)
                at = np.asarray(res.arrays.get("history_test_seen", np.linspace(seen[0], seen[-1], acc.size)), float)
                at, acc_drawn = reduce_curve(at, acc)
                # a marker per evaluation while they can be told apart
                marks = dict(symbol="o", symbolSize=5, symbolBrush=st.brush(color), symbolPen=None) \
                    if at.size <= MARKED_POINTS else {}
                self.acc_plot.plot(at, acc_drawn, pen=pen, **marks)
            parts.append(f"SCW-{variant}: final mistake rate {fmt(rate[-1])}, {int(upd[-1])} updates over "
                         f"{int(seen[-1])} samples" + ("" if acc is None else f", test accuracy {fmt(acc[-1])}"))
        base = [self.runs[v].arrays.get("history_majority_rate") for v in sorted(self.runs)]
        if base and base[-1] is not None:
            # the learner that always predicts the class seen most so far: SCW must beat it
            base = np.asarray(base[-1], dtype=float)
            c = self.rate_plot.plot(*reduce_curve(np.arange(1, base.size + 1), base),
                                    pen=st.pen("#555555", 1.5, Qt.PenStyle.DashLine),
                                    name="majority class so far")
            self.rate_legend.addItem(c, "majority class so far")
            parts.append(f"majority class: mistake rate {fmt(base[-1])}")
            last = self.runs[sorted(self.runs)[-1]]
            top = last.learning.majority_test_accuracy if last.learning is not None else None
            at = last.arrays.get("history_test_seen")
            if top is not None and at is not None and len(at):
                # held out, the baseline is the training stream's majority class: a flat line
                self.acc_plot.plot([float(at[0]), float(at[-1])], [float(top)] * 2,
                                   pen=st.pen("#555555", 1.5, Qt.PenStyle.DashLine), name="majority class")
                parts[-1] += f", test accuracy {fmt(top)}"
        self.acc_plot.setVisible(has_test)
        self.fit_layout()
        self.rate_plot.enableAutoRange()
        self.upd_plot.enableAutoRange()
        self.set_status(" · ".join(parts) + ("" if has_test else " · no test split: test accuracy not shown"))

    def clear(self):
        self.runs.clear()
        for plot in (self.rate_plot, self.upd_plot, self.acc_plot):
            for it in list(plot.listDataItems()):
                plot.removeItem(it)
