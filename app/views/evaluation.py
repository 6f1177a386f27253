"""How well each method found the outliers the data set is known to have: ROC and
precision-recall curves of every outlier method that ran on the current data, overlaid, each
legend entry with its number (ROC-AUC, average precision), methods listed best first.

Each curve is drawn from the score the registry names as the method's outlier score
(:attr:`robustcore.methods.Method.outlier_score`), the one its summary is evaluated on, so the
legend's numbers are the summary's numbers. A curve has up to one vertex per sample; what is
drawn is its reduction to a few thousand vertices, the same to the pixel (:mod:`._vertices`),
and the legend's numbers are computed from every sample.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt

from robustcore.evaluation import outlier_curves, outlier_metrics
from robustcore.methods import METHODS

from . import _style as st
from ._common import title_of
from ._vertices import reduce_curve
from .base import BaseView


def _score(res):
    m = METHODS.get(res.method)
    key = m.outlier_score if m is not None else None
    s = res.sample_scores.get(key) if key else None
    return None if s is None else np.asarray(s, dtype=float)


class EvaluationView(BaseView):
    name = "evaluation"
    title = "Known outliers"

    def __init__(self, state, parent=None):
        super().__init__(state, parent)
        lay = self.figure.ci
        self.roc_plot = lay.addPlot(row=0, col=0)
        self.pr_plot = lay.addPlot(row=0, col=1)
        self.legend = self.add_legend(st.legend_row(lay, row=1, col=0, colspan=2, columns=3))
        self.metrics = {}   # method -> outlier_metrics of its drawn curve
        self.order = []     # methods, best ROC-AUC first

    @classmethod
    def could_draw(cls, state, method):
        return state.dataset is not None and state.dataset.outliers is not None and super().could_draw(state, method)

    @classmethod
    def missing(cls, state, method=None):
        if state.dataset is not None and state.dataset.outliers is None:
            return ("the data set has no known outliers (mark a label as the outlier truth in Load "
                    "options, or load a file whose 0/1 y marks them)")
        why = super().missing(state, method)
        if why is not None:
            return why
        truth = np.asarray(state.dataset.outliers, dtype=bool)
        if truth.all() or not truth.any():
            return "the known outliers are all or none of the samples: nothing to evaluate"
        return None

    def refresh(self):
        ds = self.state.dataset
        truth = np.asarray(ds.outliers, dtype=bool)
        for plot in (self.roc_plot, self.pr_plot):
            plot.clear()
        self.legend.clear()
        self.metrics, curves = {}, {}
        for m in self.available_methods():
            s = _score(self.state.result(m))
            if s is None or s.shape != truth.shape or not np.all(np.isfinite(s)):
                continue
            self.metrics[m] = outlier_metrics(truth, s)
            c = outlier_curves(truth, s)
            curves[m] = {"roc": reduce_curve(c["fpr"], c["tpr"], x_range=(0, 1)),
                         "pr": reduce_curve(c["recall"], c["precision"], x_range=(0, 1))}
        self.order = sorted(self.metrics, key=lambda m: -self.metrics[m]["roc_auc"])
        frac = truth.mean()
        chance = st.pen(st.NEUTRAL, 1.0, Qt.PenStyle.DotLine)
        self.roc_plot.plot([0, 1], [0, 1], pen=chance)
        self.pr_plot.plot([0, 1], [frac, frac], pen=chance)
        for k, m in enumerate(self.order):
            c, mt = curves[m], self.metrics[m]
            pen = st.pen(st.category_color(list(METHODS).index(m) if m in METHODS else k), 2.0)
            item = self.roc_plot.plot(*c["roc"], pen=pen)
            self.pr_plot.plot(*c["pr"], pen=pen)
            self.legend.addItem(item, f"{title_of(m)}: AUC {mt['roc_auc']:.3f}, AP {mt['average_precision']:.3f}")
        self.legend.addItem(pg.PlotDataItem([0, 1], [0, 0], pen=chance), f"chance (AP {frac:.3f})")
        n_out = int(truth.sum())
        st.style_plot(self.roc_plot, title=f"ROC — {n_out} known outliers in {ds.name}",
                      left="true positive rate", bottom="false positive rate (inliers flagged)")
        st.style_plot(self.pr_plot, title="precision–recall", left="precision", bottom="recall")
        for plot in (self.roc_plot, self.pr_plot):
            plot.getViewBox().setRange(xRange=(0, 1), yRange=(0, 1.02), padding=0.01)
            # The rates' ends, 0 and 1, are labelled: pyqtgraph hid them as reaching past the axis.
            plot.getAxis("bottom").setStyle(hideOverlappingLabels=False)
        self.fit_layout()
        ranked = " > ".join(f"{title_of(m)} {self.metrics[m]['roc_auc']:.3f}" for m in self.order)
        self.set_status(f"Ranked by ROC-AUC against {n_out} known outliers of {truth.size}: {ranked} "
                        f"(0.5 = chance; average precision's chance level is {frac:.3f})")

    def figure_results(self):
        return [self.state.result(m) for m in self.order]

    def clear(self):
        for plot in (self.roc_plot, self.pr_plot):
            plot.clear()
        self.legend.clear()
