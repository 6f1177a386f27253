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
from ._flag_table import Column, FlagTableModel, fit_columns
from ._latest import runner
from ._legend_rows import level_rows
from ._turns import next_turn
from .base import BaseView


TWO_LINE_FIGURE_HEIGHT = 300  # px of figure below which a second line of names costs too much plot
# A name goes on one line only where the bar is this much wider than the name as Qt measures it,
# plus _NAME_GAP px: an SVG viewer's font can be wider, and "PCA (10)CoP (12)" ran together.
_NAME_SLACK, _NAME_GAP = 1.25, 12
# Up to this many values (samples x features) the comparison is computed on the GUI thread
# (about 10 ms); above, on a worker: at 400,000 x 8 it took 75-120 ms.
SYNC_VALUES = 250_000


class ComparisonView(BaseView):
    name = "comparison"
    needs_subspace = True
    title = "Comparison"
    out_of_core = "its table lists sample names, which data opened out of core does not have"

    def __init__(self, state, parent=None):
        super().__init__(state, parent)
        # The three plots and their legends are made one per idle turn after the view (build_step),
        # or at its first drawing: together they held the GUI thread 100-130 ms (issue 33.2).
        self.angle_plot = self.error_plot = self.flag_plot = None
        self.figure.setToolTip("Angles and errors compare each method's leading directions at the smallest rank "
                               "among them, on the same samples; counts use each method's own outlier rule")
        self.model = FlagTableModel(self)
        self.table = QTableView()
        self.table.setModel(self.model)
        # By index, first samples first (Qt's own start is descending: 22,691 came first on a8a).
        self.table.horizontalHeader().setSortIndicator(0, Qt.SortOrder.AscendingOrder)
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
        # What the figure and the table show: the data set and the results compared (a change of
        # the Method panel's method alone changes neither, and drew it all again).
        self._shown_key = None
        # A large table's comparison is computed on a worker (see refresh).
        self._work = runner(self, self._computed, self._failed)
        self._wanted = None   # (key, work) being computed
        self._parts = []      # what is left to draw of a comparison computed on a worker (see _show)
        self._part_timer = next_turn(self, lambda: self._draw_parts(one=True))

    def build_step(self) -> bool:
        """One plot and its legend per idle turn (the angles, the errors, the counts)."""
        lay = self.figure.ci
        col = sum(p is not None for p in (self.angle_plot, self.error_plot, self.flag_plot))
        if col == 3:
            return False
        # The counts' axis reads in thousands, as the legends and the table do.
        plot = lay.addPlot(row=0, col=col, **({"axisItems": {"left": st.CountAxis("left")}} if col == 2 else {}))
        lay.layout.setColumnStretchFactor(col, 1)
        vb = plot.getViewBox()
        # Each legend in a row of its own under its plot: never cut off, never on the bars.
        if col == 0:
            self.angle_plot = plot
            st.style_plot(plot, title="principal angles between subspaces", left="angle (degrees)",
                          bottom="angle index")
            self.angle_legend = self.add_legend(st.legend_row(lay, row=1, col=0, columns=3), 1 / 3)
            vb.sigResized.connect(lambda _vb: self._fit_angle_ticks())
        elif col == 1:
            self.error_plot = plot
            st.style_plot(plot, title="reconstruction error (median SPE)", left="median SPE")
            self.error_legend = self.add_legend(st.legend_row(lay, row=1, col=1, columns=2), 1 / 3)
            # The names under the bars are chosen for the width the bars have now: on every
            # resize of the plot itself (a resize of the figure comes before its plots are laid
            # out again, so names chosen then were those of the previous width).
            vb.sigResized.connect(lambda _vb: self._fit_ticks())
        else:
            self.flag_plot = plot
            st.style_plot(plot, title="samples flagged", left="count")
            self.flag_legend = self.add_legend(st.legend_row(lay, row=1, col=2, columns=2), 1 / 3)
        return True

    def _plots(self) -> tuple:
        return tuple(p for p in (self.angle_plot, self.error_plot, self.flag_plot) if p is not None)

    def refresh(self):
        ds = self.state.dataset
        ms = self.available_methods()
        if ds is None or len(ms) < 2:
            return
        results = {m: self.state.result(m) for m in ms}
        key = _key(ds, results)
        if _same(key, self._shown_key) or (self._wanted is not None and _same(key, self._wanted[0])):
            return   # drawn already, or being computed
        work = _comparison_work(ds, results)
        if ds.n_samples * max(ds.n_features, 1) <= SYNC_VALUES:
            self._wanted = None
            self._work.cancel()
            self._show(key, ds, ms, work(None))
            return
        self._wanted = (key, work)
        self.set_status(f"comparing {len(ms)} methods on {ds.n_samples:,} samples…")
        self._work.submit(work, tag="comparison")

    def draw_now(self) -> None:
        """The comparison still being computed on a worker, computed and drawn now (an export)."""
        self._draw_parts()
        if self._wanted is None:
            return
        key, work = self._wanted
        self._work.cancel()
        self._wanted = None
        self._show(key, self.state.dataset, self.available_methods(), work(None))

    def _computed(self, job, got) -> None:
        if self._wanted is None:
            return
        key, _ = self._wanted
        self._wanted = None
        ds = self.state.dataset
        ms = self.available_methods()
        if ds is None or not _same(key, _key(ds, {m: self.state.result(m) for m in ms})):
            return   # another result or data set came meanwhile (its own refresh follows)
        self._show(key, ds, ms, got, at_once=False)

    def _failed(self, job, message, details) -> None:
        self._wanted = None
        self._dirty = True
        self.set_status(f"The comparison could not be computed: {message}")

    def _show(self, key, ds, ms, got, at_once: bool = True) -> None:
        """Draw what :func:`_comparison_work` computed (on this thread: bounded by the number of
        methods and of flagged samples listed, not by the data's size): the angles now, the bars
        and the table now too (``at_once``) or each in a coming turn (four methods' plots drawn
        in one turn took 80-110 ms)."""
        self.finish_building()
        self.flags, self.ranks, self.unit, self.auc = got["flags"], got["ranks"], got["unit"], got["auc"]
        self.common_rank = got["rank"]
        self.angles, self.spe, self.errors = got["angles"], got["spe"], got["median_spe"]
        self._counts = got["counts"]
        self._shown_key = key
        self._draw_angles(ms)
        self._parts = [lambda: self._draw_bars(ms, ds), lambda: self._fill_table(ms, ds, got["rows"])]
        if at_once:
            self._draw_parts()
        else:
            self._part_timer.start()

    def _draw_parts(self, one: bool = False) -> None:
        """Draw the parts still to draw (``one``: the next one, and the others in coming turns)."""
        while self._parts:
            self._parts.pop(0)()
            if one:
                if self._parts:
                    self._part_timer.start()
                return

    def drawing(self) -> bool:
        """Whether the comparison is being computed or drawn over coming turns."""
        return self._wanted is not None or bool(self._parts)

    def _method_ticks(self) -> dict:
        """Each bar plot's names of the methods under its bars, for its own width: each method
        with its own rank on one line where they fit side by side, else name and rank on two
        lines ("CoP (10)PCP (90)" ran together at 1280 x 800), else the names alone, and where
        even those do not fit (four methods under the narrow count plot: "CoROBPCA"), every
        other name on a second line."""
        names = getattr(self, "_tick_names", [])
        plots = (self.error_plot, self.flag_plot)
        if not names:
            return {p: [[]] for p in plots}
        ax = self.error_plot.getAxis("bottom")
        fm = QFontMetrics(ax.style.get("tickFont") or QFont())
        one = [f"{n} ({r})" for n, r in names]

        def room(texts):   # px a bar needs for the widest of ``texts``
            return _NAME_SLACK * max(fm.horizontalAdvance(t) for t in texts) + _NAME_GAP

        # A second line costs a line of the plots' height: in a short figure (200 %) the ranks
        # go and the names stay (the status line gives the ranks).
        tall = self.figure.height() >= TWO_LINE_FIGURE_HEIGHT
        ticks, lines, ranked = {}, 1, {}
        for p in plots:
            per_bar = p.getViewBox().width() / max(len(names), 1)
            ranked[p] = True
            # (A plot not laid out yet, of no width, is narrow: its names are chosen again when it is.)
            if per_bar >= room(one):
                labels = one
            elif tall and per_bar >= room([n for n, _ in names] + [f"({r})" for _, r in names]):
                labels, lines = [f"{n}\n({r})" for n, r in names], 2
            elif per_bar >= room([n for n, _ in names]) or not tall or len(names) < 2:
                labels, ranked[p] = [n for n, _ in names], False
            else:   # staggered: each name has the width of two bars
                labels = [f"{n}\n" if i % 2 == 0 else f"\n{n}" for i, (n, _) in enumerate(names)]
                lines, ranked[p] = 2, False
            ticks[p] = [list(enumerate(labels))]
        for p in plots:
            # Room for the lines of names and the axis label, the same under both (pyqtgraph sizes
            # the axis for one line; explicit both ways: its own height only ever grows).
            p.getAxis("bottom").setHeight((lines + 1) * fm.height() + 14)
        self.error_plot.setLabel("bottom", "method (own rank)" if ranked[self.error_plot] else "method",
                                 color=st.AXIS_COLOR)
        return ticks

    def _fit_ticks(self) -> None:
        if getattr(self, "_tick_names", None) and self.flag_plot is not None:
            for p, ticks in self._method_ticks().items():
                if p.getAxis("bottom")._tickLevels != ticks:
                    p.getAxis("bottom").setTicks(ticks)

    def _fit_angle_ticks(self) -> None:
        """Angle indices 1..n, every k-th where the plot is too narrow for all (pyqtgraph then
        drops labels that would overlap: the first and the last went)."""
        if self.angle_plot is None:
            return
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
        for leg, _share in self._legends:   # (those still there: BaseView.fit_layout)
            level_rows(leg, self.figure.ci.layout)
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

    def _draw_angles(self, ms):
        self.angle_plot.clear()
        self.angle_legend.clear()
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
        n_ang = max((a.size for a in self.angles.values()), default=1)
        self.angle_plot.setXRange(0.7, n_ang + 0.3, padding=0)

    def _draw_bars(self, ms, ds):
        for plot, leg in ((self.error_plot, self.error_legend), (self.flag_plot, self.flag_legend)):
            plot.clear()
            leg.clear()
        short = {m: der.short_title(m) for m in ms}
        k = self.common_rank
        sets = list(self.errors)
        width = 0.8 / len(sets)
        for j, kind in enumerate(sets):
            h = [self.errors[kind][m] for m in ms]
            bars = pg.BarGraphItem(x=np.arange(len(ms)) + (j - (len(sets) - 1) / 2) * width, height=h, width=width,
                                   brush=st.brush(st.category_color(j + 3)), pen=None)
            self.error_plot.addItem(bars)
            self.error_legend.addItem(bars, f"{kind} ({self._counts['sets'][kind]:,})")
        # Each method with its own rank under its bars (an axis label listing them all was
        # wider than the plot at 1280 x 800).
        self._tick_names = [(short[m], self.ranks[m]) for m in ms]
        ticks = self._method_ticks()
        self.error_plot.getAxis("bottom").setTicks(ticks[self.error_plot])
        st.set_title(self.error_plot, (f"median SPE at rank {k} ({self.unit})", f"median SPE at rank {k}"))
        nflag = [self._counts["flagged"][m] for m in ms]
        b1 = pg.BarGraphItem(x=np.arange(len(ms)) - 0.2, height=nflag, width=0.4,
                             brush=st.brush(st.category_color(5)), pen=None)
        self.flag_plot.addItem(b1)
        # (each method's own count; "all flagged" beside "unflagged by all" read as the samples
        # every method flags)
        self.flag_legend.addItem(b1, "flagged")
        if ds.outliers is not None:
            hits = [self._counts["hits"][m] for m in ms]
            b2 = pg.BarGraphItem(x=np.arange(len(ms)) + 0.2, height=hits, width=0.4,
                                 brush=st.brush(st.category_color(0)), pen=None)
            self.flag_plot.addItem(b2)
            self.flag_legend.addItem(b2, f"flagged known outliers (of {self._counts['known']:,})")
        self.flag_plot.getAxis("bottom").setTicks(ticks[self.flag_plot])
        top_err = max((v for e in self.errors.values() for v in e.values() if np.isfinite(v)), default=1.0)
        self.error_plot.setYRange(0, 1.1 * top_err, padding=0)
        self.flag_plot.setYRange(0, 1.1 * max(max(nflag), 1), padding=0)
        for p in (self.error_plot, self.flag_plot):
            p.setXRange(-0.6, len(ms) - 0.4, padding=0)
        self.fit_layout()
        txt = [self.rank_note(ms)]
        if self.auc:
            txt.append(f"against the {self._counts['known']:,} known outliers (ROC-AUC): "
                       + " > ".join(f"{short[m]} {self.auc[m]:.3f}"
                                    for m in sorted(self.auc, key=lambda m: -self.auc[m])))
        txt += ["largest angle " + ", ".join(f"{short[a]}–{short[b]} {ang.max():.0f}°"
                                             for (a, b), ang in self.angles.items())]
        txt += ["each flags by its own rule (hover the counts)", *_left_out(self)]
        txt.append(f"angles and errors in {self.unit}")
        self.set_status(" · ".join(txt))
        # Each method's rule where its flags are counted and listed.
        tip = "\n".join(f"{title_of(m)}: {self.flags[m][1]}" for m in ms)
        self.flag_plot.setToolTip(tip)

    def _fill_table(self, ms, ds, rows):
        self.rows = rows
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
            fit_columns(self.table, self.model)
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
        self._work.cancel()
        self._wanted = self._shown_key = None
        self._parts = []
        self.model.set_rows(np.zeros(0, dtype=np.int64), [])
        for plot in self._plots():
            plot.clear()


def _left_out(view) -> list[str]:
    """The results there are that the comparison leaves out, and why (PCP's L of rank 0 has no
    subspace: the view compared PCA and CoP on w8a-like data without a word about PCP)."""
    out = [f"{title_of(m)} ({why})" for m in view.methods
           if (r := view.state.result(m)) is not None and (why := view.cannot_draw(r))]
    return ["not compared: " + "; ".join(out)] if out else []


def _key(ds, results) -> tuple:
    """What a comparison is of: the data set and each method's result (the objects themselves)."""
    return (ds, *results.items())


def _same(a, b) -> bool:
    return a is not None and b is not None and len(a) == len(b) and a[0] is b[0] and \
        all(x[0] == y[0] and x[1] is y[1] for x, y in zip(a[1:], b[1:]))


def _comparison_work(ds, results):
    """``work(progress)``: every number the view shows, computed from the data and ``results``
    (no Qt: runs on a worker for a large table). Its cost grows with the data; what the view
    then draws does not."""
    def work(progress):
        n = ds.n_samples
        flags = {}
        for m, r in results.items():
            got = der.outlier_flags(r)
            flags[m] = (got[0] if got else np.zeros(n, bool), got[1] if got else "flags nothing")
        # One unit for every number here: the scaling the scaled fits share, or the data's own.
        center, scale, unit = der.common_units(results.values())
        X = ds.dense()
        Xu = X if scale is None else (np.asarray(X, dtype=float) - center) / scale
        cmp = compare.common_rank_comparison(Xu, {m: r.subspace.in_units(center, scale) for m, r in results.items()},
                                             {m: f for m, (f, _) in flags.items()}, ds.outliers)
        any_flag = np.zeros(n, dtype=bool)
        for f, _ in flags.values():
            any_flag |= f
        sets = {"unflagged by all": int((~any_flag).sum())}
        known = outliers = None
        if ds.outliers is not None:
            outliers = np.asarray(ds.outliers, dtype=bool)
            known = int(outliers.sum())
            sets["known inliers"] = n - known
        counts = {"flagged": {m: int(f.sum()) for m, (f, _) in flags.items()},
                  "hits": {m: int((f & outliers).sum()) for m, (f, _) in flags.items()} if outliers is not None else {},
                  "sets": sets, "known": known}
        # The table lists the samples any method flags and the known outliers.
        rows = np.flatnonzero(any_flag if outliers is None else any_flag | outliers)
        return {**cmp, "flags": flags, "ranks": {m: der.rank(r) for m, r in results.items()}, "unit": unit,
                # The methods ranked by how well they found the known outliers (each run's evaluation).
                "auc": {m: r.evaluation.roc_auc for m, r in results.items() if r.evaluation is not None},
                "counts": counts, "rows": rows}
    return work
