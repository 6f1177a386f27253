"""Scatter projection: samples on two axes of a fitted subspace (or on their scores), coloured by
label, by ground truth or by a score, sized by a score, flagged points ringed, selection shown.

Above DENSITY_POINTS samples the cloud is binned off the GUI thread (app/views/_binned.py): one
density layer per colour (rare ones on top), the flagged samples a layer of their own beyond a
few tens of thousands with their highest scores as points, the status saying what is shown."""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QButtonGroup, QToolButton

from . import _aggregate as agg
from . import _derived as der
from . import _style as st
from ._binned import Source, add_flag_entries, layer_entries
from ._cloud import PointCloud, new_plot
from ._density import DENSITY_POINTS
from ._common import Choice, describe_sample, label_codes, labelled, title_of
from .base import BaseView


class ScatterView(BaseView):
    name = "scatter"
    needs_subspace = True
    title = "Scatter"

    def __init__(self, state, parent=None):
        super().__init__(state, parent)
        self.method_box = Choice()
        self.x_box = Choice()
        self.y_box = Choice()
        self.color_box = Choice()
        self.size_box = Choice()
        self.flag_box = Choice()
        for text, box in (("Result", self.method_box), ("x", self.x_box), ("y", self.y_box),
                          ("Colour", self.color_box), ("Size", self.size_box), ("Ring", self.flag_box)):
            self.controls.addWidget(labelled(text, box))
            self.controls.addWidget(box)
        self.tool_buttons = {}
        group = QButtonGroup(self)
        for tool, text, tip in (("rect", "Rectangle", "Drag to select a rectangle"),
                                ("lasso", "Lasso", "Drag to draw around points"),
                                ("pan", "Pan", "Drag to move the view")):
            b = QToolButton(text=text, checkable=True, toolTip=tip + " (Shift adds, Ctrl subtracts)")
            group.addButton(b)
            self.controls.addWidget(b)
            self.tool_buttons[tool] = b
            b.toggled.connect(lambda on, t=tool: on and self.set_tool(t))

        self.plot = self.legend = self.cloud = None   # made in an idle turn: see build_step
        self.colorbar = None   # the bar in the figure (None: none shown)
        # The one bar this view uses, made in an idle turn after the plot (build_step: 10-15 ms)
        # rather than with it or in the turn a result is drawn; see _add_colorbar.
        self._bar = None
        self._legend_samples = []
        self.tool_buttons["rect"].setChecked(True)
        self.method_box.currentIndexChanged.connect(self._method_changed)
        for box in (self.x_box, self.y_box, self.color_box, self.size_box, self.flag_box):
            box.currentIndexChanged.connect(self.redraw)
        state.selectionChanged.connect(self._on_selection)
        self._flags = None
        self._flag_rule = ""
        self._legend_entries = []
        self._layer_names = []     # binned: the name of each colour layer
        self._score_name = None    # binned: the score the points are coloured by

    def _add_plot(self) -> None:
        """The plot, its legend and cloud: the first of the view's parts made in idle turns
        (build_step), not with the view (a plot is ~25 ms of the GUI thread; issue 33.2)."""
        self.plot = new_plot(self.figure.ci, row=0, col=0)
        # Beneath the plot, never on the data.
        self.legend = self.add_legend(st.legend_row(self.figure.ci, row=1, col=0))
        self.cloud = PointCloud(self.plot, self.state, size=6)
        self.cloud.sigHovered.connect(self._on_hover)
        self.cloud.binned.drawn.connect(self._on_picture)
        self.cloud.binned.chosen.connect(lambda _c: self._update_status())
        self.cloud.sigFailed.connect(lambda why: self.set_status(f"The scatter could not be binned: {why}"))
        self.set_tool(next(t for t, b in self.tool_buttons.items() if b.isChecked()))

    # -- controls -------------------------------------------------------------------------
    def set_tool(self, tool: str) -> None:
        if self.plot is not None:
            self.plot.getViewBox().set_tool(tool)
        if not self.tool_buttons[tool].isChecked():
            self.tool_buttons[tool].setChecked(True)

    def refresh(self) -> None:
        self.finish_building()
        self.fill_method_box()
        self._method_changed()

    def _method_changed(self, *_):
        self.finish_building()
        res = self.result()
        ds = self.state.dataset
        if res is None or ds is None:
            self.cloud.clear()
            self.drawn = None
            return
        sub = der.subspace(res)
        r = sub["projection"].shape[1]
        axes = [(f"component {k + 1}", ("comp", k)) for k in range(r)]
        axes += [(f"score: {s}", ("score", s)) for s in res.sample_scores]
        self.x_box.set_items(axes, default=("comp", 0))
        ydef = ("comp", 1) if r > 1 else ("score", res.primary_score)
        self.y_box.set_items(axes, default=ydef)
        colours = []
        if ds.labels is not None:
            colours.append(("label", ("label", None)))
        if ds.outliers is not None:
            colours.append(("known outlier", ("truth", None)))
        colours += [(f"score: {s}", ("score", s)) for s in res.sample_scores]
        colours.append(("one colour", ("none", None)))
        self.color_box.set_items(colours)
        self.size_box.set_items([("fixed", None)] + [(f"score: {s}", s) for s in res.sample_scores])
        flag_items = [("method's outliers", ("outlier", None))] if "outlier" in res.flags else []
        flag_items += [(f"flag: {f}", ("flag", f)) for f in res.flags if f != "outlier"]
        if ds.outliers is not None:
            flag_items.append(("known outliers", ("truth", None)))
        flag_items.append(("none", ("none", None)))
        # A new result rings its own outliers first, whatever was ringed before.
        self.flag_box.set_items(flag_items, default=flag_items[0][1], keep=False)
        self.redraw()

    # -- drawing --------------------------------------------------------------------------
    def _axis_values(self, key, res, sub, column=False):
        """(values, axis label); ``column``: as a column read by blocks (nothing read now)."""
        kind, k = key
        if kind == "comp":
            label = f"component {k + 1} ({sub['source']})"
            return (agg.Column(sub["projection"], k) if column else sub["projection"][:, k]), label
        return (res.sample_scores[k] if column else np.asarray(res.sample_scores[k], dtype=float)), k

    def _flag_source(self):
        """(per-row flags as stored, unread; what they mean) of the ring chooser's choice."""
        res, ds = self.result(), self.state.dataset
        kind, k = self.flag_box.key() or ("none", None)
        if kind == "outlier":
            return (res.flags["outlier"], der.outlier_rule(res)) if "outlier" in res.flags else (None, "")
        if kind == "flag":
            return res.flags[k], k
        if kind == "truth":
            return ds.outliers, "known outlier"
        return None, ""

    def current_flags(self):
        res, ds = self.result(), self.state.dataset
        kind, k = self.flag_box.key() or ("none", None)
        if kind == "outlier":
            got = der.outlier_flags(res)
            return (got[0], got[1]) if got else (None, "")
        if kind == "flag":
            return np.asarray(res.flags[k], dtype=bool), k
        if kind == "truth":
            return ds.outliers, "known outlier"
        return None, ""

    def redraw(self, *_):
        res, ds = self.result(), self.state.dataset
        if res is None or ds is None or self.x_box.key() is None:
            return
        self.finish_building()
        sub = der.subspace(res)
        if ds.n_samples > DENSITY_POINTS:
            return self._redraw_binned(res, ds, sub)
        x, xl = self._axis_values(self.x_box.key(), res, sub)
        y, yl = self._axis_values(self.y_box.key(), res, sub)
        brushes, legend = self._brushes(res, ds)
        sizes = self._sizes(res)
        flags, flag_rule = self.current_flags()
        self._flags, self._flag_rule, self._legend_entries = flags, flag_rule, legend
        self.cloud.describe = lambda i: describe_sample(ds, i, res, flags)
        self.cloud.set_points(x, y, brushes=brushes, sizes=sizes, flags=flags)
        self.size_box.setEnabled(True)
        self.size_box.setToolTip("")
        st.style_plot(self.plot, title=f"{title_of(res.method)} — {ds.name}", left=yl, bottom=xl)
        self.drawn = res
        self._fill_legend()
        self.plot.enableAutoRange()
        # Now, not at the next paint: a figure exported before the view is painted (the CLI, a
        # hidden tab) must frame the points drawn, not the previous range.
        self.plot.getViewBox().updateAutoRange()
        self._update_status()

    def _redraw_binned(self, res, ds, sub):
        """The large cloud: its columns and colours handed to the cloud, unread; the legend,
        colour bar and status follow when the picture comes (_on_picture)."""
        x, xl = self._axis_values(self.x_box.key(), res, sub, column=True)
        y, yl = self._axis_values(self.y_box.key(), res, sub, column=True)
        flags, rule = self._flag_source()
        kind, k = self.color_box.key() or ("none", None)
        score = res.sample_scores.get(res.primary_score) if res.primary_score else None
        self._remove_colorbar()
        if kind == "label":
            classes = [str(c) for c in (ds.class_names or [])]   # label_codes' classes, in order

            def codes():   # on the worker: no label goes to the neutral layer after the classes
                c, _ = label_codes(ds)
                return np.where(c < 0, len(classes), c)
            colors = [st.category_color(i) for i in range(len(classes))] + [st.NEUTRAL]
            names = classes + ["no label"]
        elif kind == "truth":
            def codes():
                return np.asarray(ds.outliers, dtype=np.int64)
            colors = [st.category_color(0), st.category_color(1)]
            names = ["inlier", "known outlier"]
        else:   # the colour map, of the counts or of the bins' mean score: named, so it is counted
            codes, names = None, ["samples"]
            colors = [None]
        if kind == "score":
            score = res.sample_scores[k]

        def make():
            return {"x": x, "y": y, "codes": None if codes is None else codes(), "flags": flags, "score": score}

        self._flags, self._flag_rule = flags, rule
        self._layer_names = names
        self._score_name = k if kind == "score" else None
        self._legend_entries = []
        self.cloud.describe = lambda i: describe_sample(ds, i, res, flags)
        self.cloud.set_source(Source(make=make, n=ds.n_samples, colors=colors, by_score=kind == "score"))
        self.size_box.setEnabled(False)
        self.size_box.setToolTip("Too many samples to size one by one: they are binned")
        st.style_plot(self.plot, title=f"{title_of(res.method)} — {ds.name}", left=yl, bottom=xl)
        self.drawn = res
        self._fill_legend()
        self._update_status()

    def _on_picture(self, pic, levels):
        """A binned picture was drawn: legend, colour bar and status say what it shows."""
        self._remove_colorbar()
        if self._score_name is not None and levels is not None:
            self._add_colorbar(self._score_name + (" (bins: mean)" if self.cloud.density.active else ""), *levels)
        elif self.cloud.density.active and self.cloud.binned.source.colors == [None]:
            self._add_colorbar("samples per bin (log10)", *self.cloud.density.log_range())
        self._legend_entries = layer_entries(pic, self.cloud.binned.source.colors, self._layer_names)
        self._fill_legend()
        self._update_status()

    def _brushes(self, res, ds):
        kind, k = self.color_box.key() or ("none", None)
        n = ds.n_samples
        self._remove_colorbar()
        if kind == "label":
            codes, names = label_codes(ds)
            return st.category_brushes(codes, len(names)), [(st.category_color(i), nm) for i, nm in enumerate(names)]
        if kind == "truth":
            codes = ds.outliers.astype(np.int64)
            return st.category_brushes(codes, 2), [(st.category_color(0), "inlier"),
                                                   (st.category_color(1), "known outlier")]
        if kind == "score":
            levels, (lo, hi) = st.value_levels(res.sample_scores[k])
            table = np.array(st.level_brushes(), dtype=object)
            self._add_colorbar(k, lo, hi)
            return list(table[levels]), []
        return [st.brush(st.category_color(0))] * n, []

    def _sizes(self, res):
        k = self.size_box.key()
        if k is None:
            return None
        lv, _ = st.value_levels(res.sample_scores[k], n=11)
        return 4.0 + lv.astype(float)  # 4 to 14 pixels, 1st to 99th percentile of the score

    def build_step(self) -> bool:
        if self.plot is None:
            self._add_plot()
            return True
        if self._bar is not None:
            return False
        self._bar = st.colorbar((0.0, 1.0), st.colormap(), label=" ")
        return True

    def _add_colorbar(self, name, lo, hi):
        # One bar, given new levels and a new label: a new ColorBarItem at every redraw cost
        # 10-20 ms of the turn a result is drawn in (issue 25).
        self.finish_building()
        self._bar.setLevels(values=(float(lo), float(hi)))
        self._bar.getAxis("right").setLabel(name, color=st.AXIS_COLOR)
        self.colorbar = self._bar
        self.figure.ci.addItem(self.colorbar, row=0, col=1)

    def _remove_colorbar(self):
        if self.colorbar is not None:
            self.figure.ci.removeItem(self.colorbar)
            self.colorbar = None

    def _fill_legend(self):
        self.legend.clear()
        self._legend_samples = []
        for color, text in self._legend_entries:
            # (the colour map's layer: the bar beside gives its colours; a neutral swatch here)
            item = pg.ScatterPlotItem(size=8, brush=st.brush(st.NEUTRAL if color is None else color), pen=None,
                                      symbol="o")
            self._legend_samples.append(item)
            self.legend.addItem(item, text)
        pic = self.cloud.binned.picture if self.cloud.binned.active else None
        if pic is not None:
            self._legend_samples += add_flag_entries(self.legend, self.cloud, pic, self._flag_rule or "flagged")
        elif self._flags is not None and not self.cloud.binned.active:
            self.legend.addItem(self.cloud.flag_item, f"ringed: {self._flag_rule} ({int(np.sum(self._flags)):,})")
        n_sel = self.state.selection.size
        if n_sel:  # no "selected" entry while nothing is
            self.legend.addItem(self.cloud.sel_item, f"selected ({n_sel:,})")
        self.fit_layout()

    def legend_texts(self) -> list[str]:
        """The legend's entries as the user reads them."""
        return [label.text for _, label in self.legend.items]

    def _on_selection(self, _sel):
        if self.cloud is None:   # not built yet: nothing shows the selection
            return
        if self.drawn is not None:
            self._fill_legend()
        self._update_status()

    def _on_hover(self, i):
        self._update_status()

    def _update_status(self):
        b = self.cloud.binned
        if b.active:
            lead = (agg.describe(b.picture, "samples", self._flag_rule or "flagged") if b.picture is not None
                    else f"{b.source.n:,} samples: binning them off the window's thread ...")
            sel = f"{self.state.selection.size:,} selected"
            c = b.last_chosen
            if c is not None and not c.complete:
                sel += f" (the highest-scoring of {c.count:,} in the region)"
            parts = [lead, sel]
        else:
            parts = [f"{self.cloud.x.size:,} points", f"{self.state.selection.size} selected"]
        if self.cloud.hovered >= 0:
            parts.append("under the mouse: " + self.cloud.hover_text)
        self.set_status(" · ".join(parts))
