"""Comparison of the subspace methods fitted on the same data (the registry's "comparison"
methods: PCA, Coherence Pursuit, robust PCA): principal angles between their subspaces, the
reconstruction error of the same samples, and which samples each flags, in a table the user can
sort and click (a click selects the sample in every view).

Like with like: a subspace of higher rank reconstructs every sample better by construction, so
angles and errors compare each method's leading directions at the smallest rank among them, on
the samples no method flags (and on the known inliers, when the data set has ground truth). The
view says which rank that is and each method's own rank (PCP's is the rank of L).
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QItemSelectionModel, Qt
from PySide6.QtGui import QFont, QFontMetrics
from PySide6.QtWidgets import QAbstractItemView, QSplitter, QTableView

from robustcore import compare

from . import _derived as der
from . import _style as st
from ._common import fmt, sample_id, title_of
from ._flag_table import Column, FlagTableModel
from .base import BaseView


TWO_LINE_FIGURE_HEIGHT = 300  # px of figure below which a second line of names costs too much plot
# A name goes on one line only where the bar is this much wider than the name as Qt measures it,
# plus _NAME_GAP px: an SVG viewer's font can be wider, and "PCA (10)CoP (12)" ran together.
_NAME_SLACK, _NAME_GAP = 1.25, 12


class ComparisonView(BaseView):
    name = "comparison"
    needs_subspace = True
    title = "Comparison"
    out_of_core = "its table lists sample names, which data opened out of core does not have"

    def __init__(self, state, parent=None):
        super().__init__(state, parent)
        lay = self.figure.ci
        self.angle_plot = lay.addPlot(row=0, col=0)
        self.error_plot = lay.addPlot(row=0, col=1)
        self.flag_plot = lay.addPlot(row=0, col=2)
        for col in range(3):
            lay.layout.setColumnStretchFactor(col, 1)
        st.style_plot(self.angle_plot, title="principal angles between subspaces", left="angle (degrees)",
                      bottom="angle index")
        st.style_plot(self.error_plot, title="reconstruction error (median SPE)", left="median SPE")
        st.style_plot(self.flag_plot, title="samples flagged", left="count")
        # Each legend in a row of its own under its plot: never cut off, never on the bars.
        self.angle_legend = self.add_legend(st.legend_row(lay, row=1, col=0, columns=3), 1 / 3)
        self.figure.setToolTip("Angles and errors compare each method's leading directions at the smallest rank "
                               "among them, on the same samples; counts use each method's own outlier rule")
        self.error_legend = self.add_legend(st.legend_row(lay, row=1, col=1, columns=2), 1 / 3)
        self.flag_legend = self.add_legend(st.legend_row(lay, row=1, col=2, columns=2), 1 / 3)
        self.model = FlagTableModel(self)
        self.table = QTableView()
        self.table.setModel(self.model)
        self.table.setSortingEnabled(True)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.table.selectionModel().selectionChanged.connect(self._table_selected)
        # The figure and the table share the height; the user drags the split.
        lay_ = self.layout()
        lay_.removeWidget(self.figure)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.figure)
        split.addWidget(self.table)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        split.setChildrenCollapsible(False)
        # The table keeps room for a header and four rows, the figure for readable plots; the
        # user drags the split for more of either.
        rows = self.table.verticalHeader().defaultSectionSize()
        self.table.setMinimumHeight(self.table.horizontalHeader().sizeHint().height() + 3 * rows)
        self.figure.setMinimumHeight(260)
        self.splitter = split
        self._split_done = False
        lay_.insertWidget(1, split, 1)
        state.selectionChanged.connect(self._show_selection)
        self._updating = False
        self.angles = {}
        self.errors = {}
        self.flags = {}
        self.auc = {}
        self.unit = "data units"
        self.rows = np.zeros(0, dtype=np.int64)
        # The names under the bars are chosen for the width the bars have now: on every resize
        # of the plot itself (a resize of the figure comes before its plots are laid out again,
        # so names chosen then were those of the previous width).
        self.error_plot.getViewBox().sigResized.connect(lambda _vb: self._fit_ticks())
        self.angle_plot.getViewBox().sigResized.connect(lambda _vb: self._fit_angle_ticks())

    def refresh(self):
        ds = self.state.dataset
        ms = self.available_methods()
        if ds is None or len(ms) < 2:
            return
        results = {m: self.state.result(m) for m in ms}
        self.flags = {}
        for m, r in results.items():
            got = der.outlier_flags(r)
            self.flags[m] = (got[0] if got else np.zeros(ds.n_samples, bool), got[1] if got else "flags nothing")
        self.ranks = {m: der.rank(r) for m, r in results.items()}
        X = ds.dense()
        # One unit for every number here: the scaling the scaled fits share, or the data's own.
        center, scale, self.unit = der.common_units(results.values())
        Xu = X if scale is None else (np.asarray(X, dtype=float) - center) / scale
        cmp = compare.common_rank_comparison(Xu, {m: r.subspace.in_units(center, scale) for m, r in results.items()},
                                             {m: f for m, (f, _) in self.flags.items()}, ds.outliers)
        # The methods ranked by how well they found the known outliers (each run's evaluation).
        self.auc = {m: r.evaluation.roc_auc for m, r in results.items() if r.evaluation is not None}
        self.common_rank = cmp["rank"]
        self.angles, self.spe, self.errors = cmp["angles"], cmp["spe"], cmp["median_spe"]
        self._draw(ms, ds)
        self._fill_table(ms, ds)

    def _method_ticks(self) -> list:
        """Each method with its own rank under its bars: on one line where the names fit side by
        side, else name and rank on two lines ("CoP (10)PCP (90)" ran together at 1280 x 800)."""
        names = getattr(self, "_tick_names", [])
        if not names:
            return [[]]
        ax = self.error_plot.getAxis("bottom")
        fm = QFontMetrics(ax.style.get("tickFont") or QFont())
        one = [f"{n} ({r})" for n, r in names]
        vb = self.error_plot.getViewBox()
        per_bar = vb.width() / max(len(names), 1)
        # (A plot not laid out yet, of no width, is narrow: its names are chosen again when it is.)
        narrow = per_bar < _NAME_SLACK * max(fm.horizontalAdvance(t) for t in one) + _NAME_GAP
        # A second line costs a line of the plots' height: in a short figure (200 %) the ranks
        # go and the names stay (the status line gives the ranks).
        two_lines = narrow and self.figure.height() >= TWO_LINE_FIGURE_HEIGHT
        for p in (self.error_plot, self.flag_plot):
            # Room for two lines of names and the axis label (pyqtgraph sizes the axis for one).
            # (Explicit both ways: pyqtgraph's own height only ever grows with the text seen.)
            p.getAxis("bottom").setHeight((3 if two_lines else 2) * fm.height() + 14)
        self.error_plot.setLabel("bottom", "method" if narrow and not two_lines else "method (own rank)",
                                 color=st.AXIS_COLOR)
        return [[(i, f"{n}\n({r})" if two_lines else n if narrow else t)
                 for i, ((n, r), t) in enumerate(zip(names, one))]]

    def _fit_ticks(self) -> None:
        if getattr(self, "_tick_names", None):
            ticks = self._method_ticks()
            for p in (self.error_plot, self.flag_plot):
                if p.getAxis("bottom")._tickLevels != ticks:
                    p.getAxis("bottom").setTicks(ticks)

    def _fit_angle_ticks(self) -> None:
        """Angle indices 1..n, every k-th where the plot is too narrow for all (pyqtgraph then
        drops labels that would overlap: the first and the last went)."""
        n = max((a.size for a in self.angles.values()), default=0)
        ax = self.angle_plot.getAxis("bottom")
        if n == 0 or n > 12:
            ax.setTicks(None)
            return
        fm = QFontMetrics(ax.style.get("tickFont") or QFont())
        room = self.angle_plot.getViewBox().width() / n
        k = next((k for k in (1, 2, 3, 4, 6, 12) if k * room >= fm.horizontalAdvance(str(n)) + _NAME_GAP), 12)
        ticks = [[(i, str(i)) for i in (range(1, n + 1) if k == 1 else range(k, n + 1, k))]]
        if ax._tickLevels != ticks:
            ax.setTicks(ticks)

    def fit_layout(self) -> None:
        super().fit_layout()
        self._fit_ticks()
        self._fit_angle_ticks()
        total = self.splitter.height()
        if not self._split_done and total > 0 and self.isVisible():
            # Three fifths to the plots, the rest to the table, until the user drags the split;
            # in a short view (200 %) seven tenths, or the bar plots fall under 90 px.
            fig = max(self.figure.minimumHeight(), int((0.6 if total >= 600 else 0.7) * total))
            self.splitter.setSizes([fig, max(total - fig, self.table.minimumHeight())])
            self._split_done = True

    def rank_note(self, ms) -> str:
        """Each method's own rank and the rank compared, in words."""
        def own(m):
            r = self.ranks[m]
            return f"{der.short_title(m)} {r}" + (" (rank of L)" if m == "pcp" else "")
        return f"compared at rank {self.common_rank} (own ranks: " + ", ".join(own(m) for m in ms) + ")"

    def _draw(self, ms, ds):
        for plot, leg in ((self.angle_plot, self.angle_legend), (self.error_plot, self.error_legend),
                          (self.flag_plot, self.flag_legend)):
            plot.clear()
            leg.clear()
        short = {m: der.short_title(m) for m in ms}
        k = self.common_rank
        for j, ((a, b), ang) in enumerate(self.angles.items()):
            c = st.category_color(j)
            item = self.angle_plot.plot(np.arange(1, ang.size + 1), ang, pen=st.pen(c, 2), symbol="o", symbolSize=6,
                                        symbolBrush=st.brush(c), symbolPen=None)
            self.angle_legend.addItem(item, f"{short[a]}–{short[b]}")
        self.angle_plot.setYRange(0, 90)
        # (the unit is in the status line too: a narrow plot drops it from its title)
        st.set_title(self.angle_plot, (f"angles at rank {k} ({self.unit})", f"angles at rank {k}"))
        sets = list(self.errors)
        width = 0.8 / len(sets)
        for j, kind in enumerate(sets):
            h = [self.errors[kind][m] for m in ms]
            bars = pg.BarGraphItem(x=np.arange(len(ms)) + (j - (len(sets) - 1) / 2) * width, height=h, width=width,
                                   brush=st.brush(st.category_color(j + 3)), pen=None)
            self.error_plot.addItem(bars)
            self.error_legend.addItem(bars, f"{kind} ({int(self._set_size(kind, ds))})")
        # Each method with its own rank under its bars (an axis label listing them all was
        # wider than the plot at 1280 x 800).
        self._tick_names = [(short[m], self.ranks[m]) for m in ms]
        ticks = self._method_ticks()
        self.error_plot.getAxis("bottom").setTicks(ticks)
        st.set_title(self.error_plot, (f"median SPE at rank {k} ({self.unit})", f"median SPE at rank {k}"))
        nflag = [int(self.flags[m][0].sum()) for m in ms]
        b1 = pg.BarGraphItem(x=np.arange(len(ms)) - 0.2, height=nflag, width=0.4,
                             brush=st.brush(st.category_color(5)), pen=None)
        self.flag_plot.addItem(b1)
        self.flag_legend.addItem(b1, "all flagged")
        if ds.outliers is not None:
            hits = [int((self.flags[m][0] & ds.outliers).sum()) for m in ms]
            b2 = pg.BarGraphItem(x=np.arange(len(ms)) + 0.2, height=hits, width=0.4,
                                 brush=st.brush(st.category_color(0)), pen=None)
            self.flag_plot.addItem(b2)
            self.flag_legend.addItem(b2, f"flagged known outliers (of {int(ds.outliers.sum())})")
        self.flag_plot.getAxis("bottom").setTicks(ticks)
        top_err = max((v for e in self.errors.values() for v in e.values() if np.isfinite(v)), default=1.0)
        self.error_plot.setYRange(0, 1.1 * top_err, padding=0)
        self.flag_plot.setYRange(0, 1.1 * max(max(nflag), 1), padding=0)
        for p in (self.error_plot, self.flag_plot):
            p.setXRange(-0.6, len(ms) - 0.4, padding=0)
        n_ang = max((a.size for a in self.angles.values()), default=1)
        self.angle_plot.setXRange(0.7, n_ang + 0.3, padding=0)
        self.fit_layout()
        txt = [self.rank_note(ms)]
        if self.auc:
            txt.append(f"against the {int(ds.outliers.sum())} known outliers (ROC-AUC): "
                       + " > ".join(f"{short[m]} {self.auc[m]:.3f}"
                                    for m in sorted(self.auc, key=lambda m: -self.auc[m])))
        txt += ["largest angle " + ", ".join(f"{short[a]}–{short[b]} {ang.max():.0f}°"
                                             for (a, b), ang in self.angles.items())]
        txt += ["each flags by its own rule (hover the counts)"]
        txt.append(f"angles and errors in {self.unit}")
        self.set_status(" · ".join(txt))
        # Each method's rule where its flags are counted and listed.
        tip = "\n".join(f"{title_of(m)}: {self.flags[m][1]}" for m in ms)
        self.flag_plot.setToolTip(tip)

    def _set_size(self, kind, ds) -> int:
        if kind == "known inliers":
            return int((~ds.outliers).sum())
        any_flag = np.zeros(ds.n_samples, dtype=bool)
        for f, _ in self.flags.values():
            any_flag |= f
        return int((~any_flag).sum())

    def _fill_table(self, ms, ds):
        any_flag = np.zeros(ds.n_samples, dtype=bool)
        for m in ms:
            any_flag |= self.flags[m][0]
        if ds.outliers is not None:
            any_flag |= ds.outliers
        self.rows = np.flatnonzero(any_flag)
        rows = self.rows
        ids = getattr(ds, "sample_ids", None)
        # The id column sorts as text, like the ids it shows (an index without names too).
        cols = [Column("index", lambda: rows, lambda i: str(i)),
                Column("id", lambda: (rows if ids is None else np.asarray(ids)[rows]).astype(str),
                       lambda i: sample_id(ds, i))]
        if ds.labels is not None:
            cols.append(Column("label", lambda: np.asarray(ds.labels)[rows].astype(str), lambda i: str(ds.labels[i])))
        if ds.outliers is not None:
            cols.append(Column("known outlier", lambda: ds.outliers[rows].astype(np.int8),
                               lambda i: "yes" if ds.outliers[i] else ""))
        for m in ms:
            f = self.flags[m][0]
            cols.append(Column(f"flagged by {der.short_title(m)}", lambda f=f: f[rows].astype(np.int8),
                               lambda i, f=f: "✓" if f[i] else "", tip=f"{title_of(m)}: {self.flags[m][1]}"))
        for m in ms:
            e = np.asarray(self.spe[m])
            cols.append(Column(f"SPE {der.short_title(m)} (rank {self.common_rank})", lambda e=e: e[rows],
                               lambda i, e=e: fmt(float(e[i]))))
        header = self.table.horizontalHeader()
        section, order = header.sortIndicatorSection(), header.sortIndicatorOrder()
        self._updating = True
        try:
            self.model.set_rows(rows, cols)
            if 0 <= section < len(cols):   # the sort the user chose outlives a refresh
                self.model.sort(section, order)
            # Sized from the rows Qt measures (the header's resize precision), not all of them.
            self.table.resizeColumnsToContents()
        finally:
            self._updating = False
        self._show_selection(self.state.selection)

    def table_samples(self) -> np.ndarray:
        """Sample index of each table row, in the order shown (after any sorting)."""
        return self.model.shown()

    def _table_selected(self, *_):
        if self._updating:
            return
        idx = self.model.samples_in(self.table.selectionModel().selection())
        self._updating = True
        try:
            self.state.set_selection(idx, "replace")
        finally:
            self._updating = False

    def _show_selection(self, sel):
        if self._updating:
            return
        self._updating = True
        try:
            selection = self.model.selection_of(self.model.positions_of(sel))
            self.table.selectionModel().select(selection, QItemSelectionModel.SelectionFlag.ClearAndSelect)
        finally:
            self._updating = False

    def clear(self):
        self.model.set_rows(np.zeros(0, dtype=np.int64), [])
        for plot in (self.angle_plot, self.error_plot, self.flag_plot):
            plot.clear()
