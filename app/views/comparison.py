"""Comparison of PCA, Coherence Pursuit and robust PCA (PCP) fitted on the same data: principal
angles between their subspaces, the reconstruction error of the samples each treats as inliers
(and of the known inliers, when the data set has ground truth), and which samples each flags, in
a table the user can sort and click (a click selects the sample in every view)."""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QItemSelection, QItemSelectionModel, Qt
from PySide6.QtWidgets import QAbstractItemView, QSplitter, QTableWidget, QTableWidgetItem

from robustcore import compare

from . import _derived as der
from . import _style as st
from ._common import fmt, title_of
from .base import BaseView

METHODS = ("pca", "coherence-pursuit", "pcp")
SHORT = {"pca": "PCA", "coherence-pursuit": "CoP", "pcp": "PCP"}


class _Item(QTableWidgetItem):
    """A table cell that sorts by its number, not its text."""

    def __init__(self, value, text=None):
        super().__init__(text if text is not None else (fmt(value) if isinstance(value, float) else str(value)))
        self.value = value
        self.setFlags(self.flags() & ~Qt.ItemFlag.ItemIsEditable)

    def __lt__(self, other):
        try:
            return self.value < other.value
        except TypeError:
            return str(self.value) < str(other.value)


class ComparisonView(BaseView):
    name = "comparison"
    title = "Comparison"
    methods = METHODS

    def __init__(self, state, parent=None):
        super().__init__(state, parent)
        lay = self.figure.ci
        self.angle_plot = lay.addPlot(row=0, col=0)
        self.error_plot = lay.addPlot(row=0, col=1)
        self.flag_plot = lay.addPlot(row=0, col=2)
        st.style_plot(self.angle_plot, title="principal angles between subspaces", left="angle (degrees)",
                      bottom="angle index")
        st.style_plot(self.error_plot, title="reconstruction error (median SPE)", left="median SPE")
        st.style_plot(self.flag_plot, title="samples flagged", left="count")
        self.angle_legend = self.angle_plot.addLegend(offset=(10, 10), labelTextColor=st.AXIS_COLOR,
                                                      brush=st.brush("#FFFFFF", 210), pen=st.pen("#BBBBBB"))
        self.error_legend = self.error_plot.addLegend(offset=(10, 10), labelTextColor=st.AXIS_COLOR,
                                                      brush=st.brush("#FFFFFF", 210), pen=st.pen("#BBBBBB"))
        self.flag_legend = self.flag_plot.addLegend(offset=(10, 10), labelTextColor=st.AXIS_COLOR,
                                                    brush=st.brush("#FFFFFF", 210), pen=st.pen("#BBBBBB"))
        self.table = QTableWidget()
        self.table.setSortingEnabled(True)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.table.itemSelectionChanged.connect(self._table_selected)
        # The figure and the table share the height; the user drags the split.
        lay_ = self.layout()
        lay_.removeWidget(self.figure)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.figure)
        split.addWidget(self.table)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        lay_.insertWidget(1, split, 1)
        state.selectionChanged.connect(self._show_selection)
        self._updating = False
        self.angles = {}
        self.errors = {}
        self.flags = {}
        self.rows = np.zeros(0, dtype=np.int64)

    @classmethod
    def available_in(cls, state) -> bool:
        return sum(state.result(m) is not None for m in cls.methods) >= 2

    def refresh(self):
        ds = self.state.dataset
        ms = self.available_methods()
        if ds is None or len(ms) < 2:
            return
        X = ds.dense()
        subs = {m: der.subspace(self.state.result(m)) for m in ms}
        self.flags = {}
        for m in ms:
            got = der.outlier_flags(self.state.result(m), ds)
            self.flags[m] = (got[0] if got else np.zeros(ds.n_samples, bool), got[1] if got else "")
        # Numbers (robustcore), once per refresh.
        self.angles = {(a, b): compare.principal_angles(subs[a]["components"], subs[b]["components"])
                       for i, a in enumerate(ms) for b in ms[i + 1:]}
        self.spe = {m: compare.reconstruction_errors(der.model_units(self.state.result(m), X),
                                                     subs[m]["components"], subs[m]["mean"]) for m in ms}
        self.errors = {m: {"own inliers": float(np.median(self.spe[m][~self.flags[m][0]]))
                           if (~self.flags[m][0]).any() else float("nan")} for m in ms}
        if ds.outliers is not None and (~ds.outliers).any():
            for m in ms:
                self.errors[m]["known inliers"] = float(np.median(self.spe[m][~ds.outliers]))
        self._draw(ms, subs, ds)
        self._fill_table(ms, ds)

    def _draw(self, ms, subs, ds):
        for plot, leg in ((self.angle_plot, self.angle_legend), (self.error_plot, self.error_legend),
                          (self.flag_plot, self.flag_legend)):
            plot.clear()
            leg.clear()
        for k, ((a, b), ang) in enumerate(self.angles.items()):
            c = st.category_color(k)
            self.angle_plot.plot(np.arange(1, ang.size + 1), ang, pen=st.pen(c, 2), symbol="o", symbolSize=6,
                                 symbolBrush=st.brush(c), symbolPen=None, name=f"{title_of(a)} vs {title_of(b)}")
        self.angle_plot.setYRange(0, 90)
        kinds = list(next(iter(self.errors.values())).keys())
        width = 0.8 / len(kinds)
        ticks = [(i, f"{SHORT[m]} (r = {subs[m]['components'].shape[0]})") for i, m in enumerate(ms)]
        for j, kind in enumerate(kinds):
            h = [self.errors[m][kind] for m in ms]
            bars = pg.BarGraphItem(x=np.arange(len(ms)) + (j - (len(kinds) - 1) / 2) * width, height=h, width=width,
                                   brush=st.brush(st.category_color(j + 3)), pen=None)
            self.error_plot.addItem(bars)
            self.error_legend.addItem(bars, f"on {kind}")
        self.error_plot.getAxis("bottom").setTicks([ticks])
        nflag = [int(self.flags[m][0].sum()) for m in ms]
        b1 = pg.BarGraphItem(x=np.arange(len(ms)) - 0.2, height=nflag, width=0.4,
                             brush=st.brush(st.category_color(5)), pen=None)
        self.flag_plot.addItem(b1)
        self.flag_legend.addItem(b1, "flagged")
        if ds.outliers is not None:
            hits = [int((self.flags[m][0] & ds.outliers).sum()) for m in ms]
            b2 = pg.BarGraphItem(x=np.arange(len(ms)) + 0.2, height=hits, width=0.4,
                                 brush=st.brush(st.category_color(0)), pen=None)
            self.flag_plot.addItem(b2)
            self.flag_legend.addItem(b2, f"of them known outliers (of {int(ds.outliers.sum())})")
        self.flag_plot.getAxis("bottom").setTicks([[(i, SHORT[m]) for i, m in enumerate(ms)]])
        # Headroom above the bars keeps the legends off the data.
        top_err = max((v for e in self.errors.values() for v in e.values() if np.isfinite(v)), default=1.0)
        self.error_plot.setYRange(0, 1.45 * top_err, padding=0)
        self.flag_plot.setYRange(0, 1.45 * max(max(nflag), 1), padding=0)
        for p in (self.error_plot, self.flag_plot):
            p.setXRange(-0.6, len(ms) - 0.4, padding=0)
        n_ang = max((a.size for a in self.angles.values()), default=1)
        self.angle_plot.getAxis("bottom").setTicks([[(k, str(k)) for k in range(1, n_ang + 1)]] if n_ang <= 12 else None)
        self.angle_plot.setXRange(0.7, n_ang + 0.3, padding=0)
        txt = [f"{title_of(a)} vs {title_of(b)}: largest angle {ang.max():.1f}°" for (a, b), ang in self.angles.items()]
        txt += [f"{title_of(m)} flags {n} ({self.flags[m][1]})" for m, n in zip(ms, nflag)]
        self.set_status(" · ".join(txt))

    def _fill_table(self, ms, ds):
        any_flag = np.zeros(ds.n_samples, dtype=bool)
        for m in ms:
            any_flag |= self.flags[m][0]
        if ds.outliers is not None:
            any_flag |= ds.outliers
        self.rows = np.flatnonzero(any_flag)
        cols = ["index", "id"] + (["label"] if ds.labels is not None else []) + \
               (["known outlier"] if ds.outliers is not None else []) + \
               [f"flagged by {title_of(m)}" for m in ms] + [f"SPE {title_of(m)}" for m in ms]
        self._updating = True
        self.table.setSortingEnabled(False)
        self.table.clear()
        self.table.setColumnCount(len(cols))
        self.table.setHorizontalHeaderLabels(cols)
        self.table.setRowCount(self.rows.size)
        for r, i in enumerate(self.rows):
            cells = [_Item(int(i)), _Item(ds.sample_ids[i])]
            if ds.labels is not None:
                cells.append(_Item(str(ds.labels[i])))
            if ds.outliers is not None:
                cells.append(_Item(int(ds.outliers[i]), "yes" if ds.outliers[i] else ""))
            cells += [_Item(int(self.flags[m][0][i]), "✓" if self.flags[m][0][i] else "") for m in ms]
            cells += [_Item(float(self.spe[m][i])) for m in ms]
            for c, it in enumerate(cells):
                self.table.setItem(r, c, it)
        self.table.setSortingEnabled(True)
        self.table.resizeColumnsToContents()
        self._updating = False
        self._show_selection(self.state.selection)

    def table_samples(self) -> list[int]:
        """Sample index of each table row, in the order shown (after any sorting)."""
        return [self.table.item(r, 0).value for r in range(self.table.rowCount())]

    def _table_selected(self):
        if self._updating:
            return
        rows = sorted({it.row() for it in self.table.selectedItems()})
        idx = [self.table.item(r, 0).value for r in rows]
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
            wanted = set(np.asarray(sel).tolist())
            self.table.clearSelection()
            model = self.table.selectionModel()
            selection = QItemSelection()
            for r in range(self.table.rowCount()):
                if self.table.item(r, 0).value in wanted:
                    selection.select(self.table.model().index(r, 0),
                                     self.table.model().index(r, self.table.columnCount() - 1))
            model.select(selection, QItemSelectionModel.SelectionFlag.Select)
        finally:
            self._updating = False

    def clear(self):
        self.table.clear()
        self.table.setRowCount(0)
        for plot in (self.angle_plot, self.error_plot, self.flag_plot):
            plot.clear()
