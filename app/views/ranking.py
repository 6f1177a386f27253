"""EVSC ranking: features as bars sorted by their eigenvalue-sensitivity score with the top k
highlighted, the eigenvalue spectrum of the graph Laplacian beside it (a gap after the k-th
eigenvalue suggests k clusters), and a click on a bar showing that feature against the
next-ranked one as a scatter linked to the shared selection."""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QSpinBox

from . import _style as st
from ._cloud import PointCloud, new_plot
from ._common import describe_sample, fmt, label_codes, labelled
from ._vertices import reduce_curve
from .base import BaseView


# Above this many features the ranked scores are drawn as two filled curves (top k, the rest)
# through the vertices a plot can show (._vertices) instead of a bar each: 100,000 bars, each
# with its own brush and pen, cost seconds to make and to paint and were thinner than a pixel.
BAR_LIMIT = 2_000
STACK_MIN_HEIGHT = 170  # pixels a plot needs to be read: below twice this, the plots sit side by side
SHORT_STACK = 480       # stacked in a figure lower than this, bars and spectrum share the height evenly


# A feature pair with this few distinct points has each labelled with its count (binary features).
FEW_POINTS = 16
COUNT_ROWS = 2_000_000
# Up to this many rows a pair the probe of _few_points cannot settle is sorted exactly (0.1 s).
EXACT_COUNT_ROWS = 200_000


def fitted_selection(res, d: int) -> int:
    """How many top-ranked features the fit kept (``n_features_to_select``; its default is half
    the features), from the fitted support when the estimator came back with the result."""
    support = getattr(res.estimator, "support_", None)
    if support is not None:
        return max(1, int(np.count_nonzero(support)))
    return int(res.params.get("n_features_to_select") or max(1, d // 2))


def _few_points(x: np.ndarray, y: np.ndarray, probe: int = 10_000):
    """(distinct points, their counts) of the pair, or (None, None) when there are more than
    FEW_POINTS. A strided probe of the rows answers "more" for continuous features at once; for
    a pair that may have few, each candidate is counted with one comparison pass, and the counts
    must add up to every row: a sort of a million pairs took 0.56 s of the GUI thread."""
    step = max(1, x.size // probe)
    cand = np.unique(np.column_stack([x[::step], y[::step]]), axis=0)
    if len(cand) > FEW_POINTS:
        return None, None
    n = np.array([np.count_nonzero((x == px) & (y == py)) for px, py in cand], dtype=np.int64)
    if n.sum() == x.size:
        return cand, n
    # a point the probe missed (or NaN, which equals nothing): sorted exactly where that is cheap
    if x.size > EXACT_COUNT_ROWS:
        return None, None
    pts, n = np.unique(np.column_stack([x, y]), axis=0, return_counts=True)
    return (pts, n) if len(pts) <= FEW_POINTS else (None, None)


class RankingView(BaseView):
    name = "ranking"
    title = "Feature ranking"

    def __init__(self, state, parent=None):
        super().__init__(state, parent)
        self.k_box = QSpinBox(minimum=1, maximum=1, toolTip="How many top-ranked features to highlight")
        self.controls.addWidget(labelled("Highlight top", self.k_box))
        self.controls.addWidget(self.k_box)
        lay = self.figure.ci
        self.bar_plot = lay.addPlot(row=0, col=0)
        self.spec_plot = lay.addPlot(row=1, col=0)
        self.pair_plot = new_plot(lay, row=0, col=1, rowspan=2)
        self._stacked = True
        st.style_plot(self.bar_plot, title="EVSC score by rank", left="EVSC", bottom="rank")
        st.style_plot(self.spec_plot, title="Laplacian eigenvalues", left="λ", bottom="index")
        self.bars = pg.BarGraphItem(x=[], height=[], width=0.8)
        self.bar_plot.addItem(self.bars)
        # many features: the top k and the rest as filled curves (BAR_LIMIT)
        self.top_curve = self.bar_plot.plot(pen=st.pen(st.category_color(5), 1.0), fillLevel=0.0,
                                            brush=st.brush(st.category_color(5)))
        self.rest_curve = self.bar_plot.plot(pen=st.pen("#9DB7D0", 1.0), fillLevel=0.0, brush=st.brush("#9DB7D0"))
        for curve in (self.top_curve, self.rest_curve):
            curve.setVisible(False)
        self.spectrum = self.spec_plot.plot(pen=st.pen("#444444", 1.2), symbol="o", symbolSize=7,
                                            symbolBrush=st.brush(st.category_color(0)), symbolPen=None)
        self.used = pg.ScatterPlotItem(size=11, symbol="o", brush=None, pen=st.pen(st.category_color(5), 2))
        self.spec_plot.addItem(self.used)
        self.cloud = PointCloud(self.pair_plot, state, size=6)
        self.cloud.sigHovered.connect(lambda i: i >= 0 and self.set_status("under the mouse: " + self.cloud.hover_text))
        self.figure.scene().sigMouseClicked.connect(self._clicked)
        self.k_box.valueChanged.connect(self._color_bars)
        self.ranking = np.zeros(0, dtype=np.int64)
        self.scores = np.zeros(0)
        self.pair = None
        self.counts = []   # the count labels of a pair with few distinct points (see _label_counts)
        self.chosen_rank = 0
        self.fitted_k = 0

    def fit_layout(self) -> None:
        """The spectrum goes under the bars, as wide as they are, when the figure is tall enough
        for both (in a narrow column of its own it was 109 px wide at 1280 x 800, its title
        wrapped); in a short figure (200 % scaling) it takes a third column instead."""
        super().fit_layout()
        stacked = self.figure.height() >= 2 * STACK_MIN_HEIGHT
        lay = self.figure.ci
        if stacked != self._stacked:
            for p in (self.bar_plot, self.spec_plot, self.pair_plot):
                lay.removeItem(p)
            lay.addItem(self.bar_plot, row=0, col=0)
            if stacked:
                lay.addItem(self.spec_plot, row=1, col=0)
                lay.addItem(self.pair_plot, row=0, col=1, rowspan=2)
            else:
                lay.addItem(self.spec_plot, row=0, col=1)
                lay.addItem(self.pair_plot, row=0, col=2)
            self._stacked = stacked
        stretch = (3, 2, 0) if stacked else (4, 3, 3)
        for col, k in enumerate(stretch):
            lay.layout.setColumnStretchFactor(col, k)
        # Stacked in a short figure (200 % scaling): rows of equal height, or the spectrum's
        # two fifths left it 87 px high at 960 x 540.
        rows = ((3, 2) if self.figure.height() >= SHORT_STACK else (1, 1)) if stacked else (1, 0)
        for row, k in enumerate(rows):
            lay.layout.setRowStretchFactor(row, k)

    def refresh(self):
        res, ds = self.state.result("esfs"), self.state.dataset
        if res is None or ds is None:
            return
        self.scores = np.asarray(res.feature_scores["evsc"], dtype=float)
        self.ranking = np.asarray(res.arrays["ranking"], dtype=np.int64)
        d = self.ranking.size
        self.bar_heights = self.scores[self.ranking]
        k = fitted_selection(res, d)
        self.k_box.blockSignals(True)
        self.k_box.setMaximum(d)
        self.k_box.setValue(int(min(k, d)))
        self.fitted_k = int(min(k, d))
        self.k_box.blockSignals(False)
        ax = self.bar_plot.getAxis("bottom")
        ax.setTicks([[(r, ds.feature_names[j]) for r, j in enumerate(self.ranking)]] if d <= 25 else None)
        self.bar_plot.setLabel("bottom", "feature, in ranking order" if d <= 25 else "rank", color=st.AXIS_COLOR)
        ev = np.asarray(res.arrays["eigenvalues"], dtype=float)
        self.spectrum.setData(np.arange(ev.size), ev)
        if "selected_eigenpairs" in res.arrays:
            sel = np.asarray(res.arrays["selected_eigenpairs"], dtype=np.int64)
        else:  # the trivial eigenvalue 0 first, then the n_eigenpairs summed ones
            used = int(res.params.get("n_eigenpairs") or 0)
            sel = np.arange(1, min(used + 1, ev.size))
        self.used.setData(x=sel, y=ev[sel])
        st.set_title(self.spec_plot, f"eigenvalues ({sel.size} ringed: summed)")
        self._color_bars()
        self.show_pair(0 if d > 1 else None)
        self.bar_plot.enableAutoRange()

    def clear(self):
        self.bars.setOpts(x=[], height=[])
        for curve in (self.top_curve, self.rest_curve):
            curve.setData([], [])
            curve.setVisible(False)
        self.spectrum.setData([], [])
        self.cloud.clear()
        self._label_counts(None, None)

    def _color_bars(self, *_):
        d = self.ranking.size
        k = self.k_box.value()
        many = d > BAR_LIMIT
        for curve, ranks in ((self.top_curve, np.arange(min(k, d))), (self.rest_curve, np.arange(min(k, d), d))):
            curve.setVisible(many and ranks.size > 0)
            if many and ranks.size:
                # each bar's top edge from r - 0.4 to r + 0.4, so one bar alone is still drawn
                xs = (np.repeat(ranks, 2) + np.tile([-0.4, 0.4], ranks.size)).astype(float)
                curve.setData(*reduce_curve(xs, np.repeat(self.bar_heights[ranks], 2)))
        if many:
            self.bars.setOpts(x=[], height=[])
        else:
            top, rest = st.brush(st.category_color(5)), st.brush("#9DB7D0")
            brushes = [top if r < k else rest for r in range(d)]
            pens = [st.pen("#000000", 2.0) if r == self.chosen_rank else st.pen("#FFFFFF", 0.5) for r in range(d)]
            self.bars.setOpts(x=np.arange(d), height=self.bar_heights, width=0.8, brushes=brushes, pens=pens)
        st.set_title(self.bar_plot, f"EVSC score (top {k} highlighted"
                                    + (", as the fit kept)" if k == self.fitted_k else ")"))

    def _clicked(self, ev):
        vb = self.bar_plot.getViewBox()
        if not vb.sceneBoundingRect().contains(ev.scenePos()):
            return
        p = vb.mapSceneToView(ev.scenePos())
        r = int(round(p.x()))
        # a bar far shorter than the tallest (a noise feature scores ~1e-4 of the top one) is
        # thinner than a pixel: its column up to 5 % of the tallest bar counts as the bar
        reach = max(self.bar_heights[r] * 1.02, 0.05 * float(np.max(self.bar_heights, initial=0.0))) \
            if 0 <= r < self.ranking.size else 0.0
        if 0 <= r < self.ranking.size and 0 <= p.y() <= reach + 1e-12:
            self.show_pair(r)

    def _label_counts(self, x, y) -> None:
        """Each point of a pair with at most FEW_POINTS distinct ones labelled with how many
        samples lie on it: a8a's top two 0/1 features put 22,696 samples on two dots, and the
        picture said nothing of how many were where. (Tables of at most COUNT_ROWS rows: the
        count is made on the GUI thread, a few comparison passes: _few_points.)"""
        for t in self.counts:
            self.pair_plot.removeItem(t)
        self.counts = []
        if x is None or x.size > COUNT_ROWS:
            return
        pts, n = _few_points(np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64))
        if pts is None or not np.all(np.isfinite(pts)):
            return
        mid = (pts.min(axis=0) + pts.max(axis=0)) / 2
        for (px, py), c in zip(pts, n):
            # beside the point, towards the middle of the plot (not past its edge)
            t = pg.TextItem(f"{c:,}", color=st.AXIS_COLOR, anchor=(1.15 if px > mid[0] else -0.15,
                                                                  0.0 if py > mid[1] else 1.0))
            t.setPos(float(px), float(py))
            self.pair_plot.addItem(t, ignoreBounds=True)
            self.counts.append(t)

    def show_pair(self, rank):
        """Scatter the feature at ``rank`` against the next-ranked one (the previous for the last)."""
        ds = self.state.dataset
        if rank is None or ds is None or self.ranking.size < 2:
            self.cloud.clear()
            self._label_counts(None, None)
            return
        rank = int(rank)
        other = rank + 1 if rank + 1 < self.ranking.size else rank - 1
        fa, fb = int(self.ranking[rank]), int(self.ranking[other])
        self.pair = (fa, fb)
        self.chosen_rank = rank
        X = ds.dense()
        codes, names = label_codes(ds)
        brushes = st.category_brushes(codes, len(names)) if names else None
        self.cloud.describe = lambda i: describe_sample(ds, i) + f" · {ds.feature_names[fa]} {fmt(X[i, fa])} · " \
                                                                  f"{ds.feature_names[fb]} {fmt(X[i, fb])}"
        self.cloud.set_points(X[:, fa], X[:, fb], brushes=brushes)
        self._label_counts(X[:, fa], X[:, fb])
        st.style_plot(self.pair_plot, title=f"rank {rank + 1} vs rank {other + 1}",
                      bottom=f"{ds.feature_names[fa]} (rank {rank + 1})",
                      left=f"{ds.feature_names[fb]} (rank {other + 1})")
        self.pair_plot.enableAutoRange()
        self._color_bars()
        self.set_status(f"{self.ranking.size} features ranked · top: " +
                        ", ".join(f"{ds.feature_names[j]} ({fmt(self.scores[j])})" for j in self.ranking[:3]) +
                        " · click a bar to plot that feature against the next-ranked one")
