"""The outlier map (Hubert, Rousseeuw & Vanden Branden 2005): each sample's score distance (how
far ALONG the subspace, SD² = T²) against its orthogonal distance (how far OFF it, OD² = SPE),
with both cut-offs and the four regions named. SPE alone cannot see a good-leverage point (far
along the subspace, close to it); the map shows it. Known outliers are drawn in their own colour,
the method's flags ringed, the selection shared with every view; the samples farthest outside
the regular region are named beside their points, as in the paper's figures (_point_names).

The dashed lines are the map's 97.5 % cut-offs, which name the regions. The rings follow the
method's own rule, often the calibrated SPE/T² limits instead: those are drawn as lines of their
own, solid, and the legend says where they are (the first rings used to start well past the
dashed line with nothing saying why).

The distances and cut-offs are the result's own (``score_distance``, ``orthogonal_distance``,
``map_region`` and the summary's "SD cut-off" / "OD cut-off", computed by the registry's
adapter): the view draws, it does not fit. Above DENSITY_POINTS samples the map is binned off
the GUI thread like the scatter (app/views/_binned.py); the region counts are the result's own.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt

from robustcore.outlier_map import REGIONS

from . import _aggregate as agg
from . import _derived as der
from . import _style as st
from ._binned import Source, add_flag_entries, layer_entries
from ._cloud import PointCloud, new_plot
from ._density import DENSITY_POINTS
from ._common import Choice, describe_sample, fmt, labelled, sample_id, title_of
from ._point_names import MAX_NAMED, PointNames, most_outlying
from .base import BaseView

NEED = ("score_distance", "orthogonal_distance", "map_region")


class _DistanceAxis(pg.AxisItem):
    """An axis of distances: no tick below 0 (the view reaches under OD = 0 only to hold the
    lower regions' names; a "-1" there read as a distance)."""

    def tickValues(self, minVal, maxVal, size):
        return [(spacing, [v for v in values if v >= -1e-9 * spacing])
                for spacing, values in super().tickValues(minVal, maxVal, size)]


def flag_limits(result, sd, od, flags, block: int = 1 << 20) -> dict[str, float]:
    """Where the flags' own boundary lies on the map: {"sd": √(T² limit), "od": √(SPE limit)}
    (one or both) when the flags are exactly the samples beyond those lines (SD² = T², OD² =
    SPE); {} when they follow another rule (a contamination share, a score of another kind).
    The limits are taken as recorded (PCA and Coherence Pursuit calibrate them in place), else
    times the calibration's factor: ROBPCA keeps the paper's cut-offs as its limits and flags
    beyond that multiple of them (its calibrated cut-offs), which drew no line at all.
    The columns may be stored (a mapped or chunked array): read ``block`` rows at a time."""
    lim = getattr(result, "limits", None)
    if lim is None or flags is None:
        return {}
    scales = [1.0] + ([float(lim.factor)] if float(lim.factor) not in (0.0, 1.0) else [])
    rules = {(s, keys): True for s in scales for keys in (("od", "sd"), ("od",), ("sd",))}
    for i in range(0, len(flags), block):
        f = np.asarray(flags[i:i + block], dtype=bool)
        sd2 = np.asarray(sd[i:i + block], dtype=float) ** 2
        od2 = np.asarray(od[i:i + block], dtype=float) ** 2
        for s in scales:
            beyond = {"sd": sd2 > s * lim.t2, "od": od2 > s * lim.spe}
            for (at, keys), holds in rules.items():
                if at == s and holds:
                    rules[at, keys] = np.array_equal(np.logical_or.reduce([beyond[k] for k in keys]), f)
        if not any(rules.values()):
            return {}
    s, keys = next(k for k, holds in rules.items() if holds)
    return {k: float(np.sqrt(s * (lim.t2 if k == "sd" else lim.spe))) for k in keys}


class OutlierMapView(BaseView):
    name = "outlier-map"
    needs_subspace = True
    title = "Outlier map"

    def __init__(self, state, parent=None):
        super().__init__(state, parent)
        self.method_box = Choice()
        self.controls.addWidget(labelled("Result", self.method_box))
        self.controls.addWidget(self.method_box)
        self.method_box.currentIndexChanged.connect(self.redraw)
        self.plot = self.legend = self.cloud = self.names = None
        self.cut_lines, self.flag_lines, self.region_labels = {}, {}, {}
        self._framing = self._framed_range = None   # (SD, OD, upper names shown) framed to, see _place
        self._swatches = []
        self._binned_text = ""   # binned: the status after what the picture shows
        # The figure's parts, one per idle turn (build_step): built in one turn, the view was the
        # longest stop of a result's arrival (about 80 ms of the GUI thread; issue 33.2).
        self._parts = [self._add_plot, self._add_lines, self._add_region_labels, *[self._add_names] * 3]

    def build_step(self) -> bool:
        if not self._parts:
            return False
        self._parts.pop(0)()
        return True

    def _add_plot(self) -> None:
        self.plot = new_plot(self.figure.ci, row=0, col=0,
                             axisItems={"left": _DistanceAxis("left"), "bottom": _DistanceAxis("bottom")})
        self.legend = self.add_legend(st.legend_row(self.figure.ci, row=1, col=0))
        self.cloud = PointCloud(self.plot, self.state, size=6)
        self.plot.getViewBox().sigResized.connect(self._on_plot_resized)
        self.cloud.binned.drawn.connect(self._on_picture)
        self.cloud.sigFailed.connect(lambda why: self.set_status(f"The outlier map could not be binned: {why}"))

    def _add_lines(self) -> None:
        self.cut_lines = {
            "sd": pg.InfiniteLine(angle=90, movable=False, pen=st.pen(st.FLAG_COLOR, 1.2, Qt.PenStyle.DashLine)),
            "od": pg.InfiniteLine(angle=0, movable=False, pen=st.pen(st.FLAG_COLOR, 1.2, Qt.PenStyle.DashLine)),
        }
        # The rings' boundary where it is not the cut-offs (see flag_limits): solid.
        self.flag_lines = {
            "sd": pg.InfiniteLine(angle=90, movable=False, pen=st.pen(st.LIMIT_COLOR, 1.0)),
            "od": pg.InfiniteLine(angle=0, movable=False, pen=st.pen(st.LIMIT_COLOR, 1.0)),
        }
        for line in (*self.cut_lines.values(), *self.flag_lines.values()):
            line.setVisible(False)
            self.plot.addItem(line)

    def _add_region_labels(self) -> None:
        # On a light backing: the labels of the lower regions sit over the densest points.
        self.region_labels = {r: pg.TextItem(r, color=st.AXIS_COLOR, anchor=(0, 0),
                                             fill=pg.mkBrush(255, 255, 255, 210)) for r in REGIONS}
        for t in self.region_labels.values():
            t.setZValue(20)   # over the points
            self.plot.addItem(t)
        self.names = PointNames(self.plot, avoid=lambda: list(self.region_labels.values()))

    def _add_names(self) -> None:
        self.names.add_items(min(4, MAX_NAMED - len(self.names.items)))   # 4, 4, 2

    @classmethod
    def missing(cls, state, method=None):
        why = super().missing(state, method)
        if why is not None or method is None:
            return why
        res = state.result(method)
        if any(k not in res.arrays for k in NEED):
            return res.no_outlier_map or res.no_limits or "this result has no outlier map"
        return None

    def available_methods(self) -> list[str]:
        return [m for m in super().available_methods() if self.missing(self.state, m) is None]

    def refresh(self):
        self.finish_building()
        self.fill_method_box()
        self.redraw()

    def redraw(self, *_):
        res, ds = self.result(), self.state.dataset
        if res is None or ds is None:
            return
        self.finish_building()
        a, om = res.arrays, res.outlier_map
        if om is None or any(k not in a for k in NEED):
            self.drawn = None
            self.cloud.clear()
            self.names.clear()
            self.set_status(f"{title_of(res.method)}: no outlier map: "
                            f"{res.no_outlier_map or res.no_limits or 'no distances in this result'}")
            return
        if len(a["score_distance"]) > DENSITY_POINTS:
            return self._redraw_binned(res, ds)
        sd = np.asarray(a["score_distance"], dtype=float)
        od = np.asarray(a["orthogonal_distance"], dtype=float)
        region = np.asarray(a["map_region"], dtype=int)
        sd_cut, od_cut = om.sd_cutoff, om.od_cutoff
        legend = []
        if ds.outliers is not None:
            codes = ds.outliers.astype(np.int64)
            brushes = st.category_brushes(codes, 2)
            legend = [(st.category_color(0), "inlier"), (st.category_color(1), "known outlier")]
        else:
            brushes = [st.brush("#333333", 170)] * sd.size
        got = der.outlier_flags(res)
        flags, rule = (got if got is not None else (None, ""))
        self.cloud.set_points(sd, od, brushes=brushes, flags=flags)
        self.cloud.describe = lambda i: describe_sample(ds, i, None) + " · " + der.map_place(res, i)
        self.drawn = res
        m = der.short_title(res.method)
        st.style_plot(self.plot, title=f"{title_of(res.method)} — outlier map of {ds.name}",
                      bottom=f"score distance, along the {m} subspace (SD² = T²)",
                      left="orthogonal distance")
        counts = {r: int(np.sum(region == i)) for i, r in enumerate(REGIONS)}
        limits = flag_limits(res, sd, od, flags)
        self._place(om, float(sd.max(initial=0.0)), float(od.max(initial=0.0)), counts, limits)
        named = most_outlying(sd, od, sd_cut, od_cut, region)
        self.names.set(named, [sample_id(ds, int(i)) for i in named], sd, od)
        self.legend.clear()
        for color, text in legend:
            self.legend.addItem(pg.ScatterPlotItem(symbol="o", size=8, brush=st.brush(color), pen=None), text)
        if flags is not None:
            self.legend.addItem(self.cloud.flag_item, f"ringed: {rule}{self._where(om, limits)}")
        self._add_cut_entry()
        self.fit_layout()
        truth = ""
        if ds.outliers is not None:
            k = ds.outliers.astype(bool)
            truth = (" · known outliers by region: "
                     + ", ".join(f"{r} {int(np.sum(k & (region == i))):,}" for i, r in enumerate(REGIONS)))
        naming = (f" · named: the {len(named)} farthest outside the regular region where a name fits"
                  + (" (row numbers from 0)" if all(sample_id(ds, int(i)) == str(i) for i in named) else "")
                  if len(named) else "")
        self.set_status(f"{title_of(res.method)}: SD² = T², OD² = SPE; cut-offs SD {fmt(sd_cut)}, OD {fmt(od_cut)} "
                        f"(97.5 %); " + ", ".join(f"{counts[r]:,} {r}" for r in REGIONS) + truth + naming)

    def _add_cut_entry(self) -> None:
        self._cut_sample = pg.PlotDataItem(pen=self.cut_lines["sd"].pen)
        self.legend.addItem(self._cut_sample, "dashed: cut-offs (97.5 %) of the regions")

    def _shown_limits(self, om, limits: dict) -> dict:
        """The flags' lines worth drawing: not where a cut-off line is already."""
        cut = {"sd": om.sd_cutoff, "od": om.od_cutoff}
        return {k: v for k, v in limits.items() if not np.isclose(v, cut[k], rtol=1e-6)}

    def _where(self, om, limits: dict) -> str:
        """Where the rings' boundary is, in the map's own units, for the legend."""
        if not limits:
            return ""
        shown = self._shown_limits(om, limits)
        where = " or ".join(f"{k.upper()} > {fmt(limits[k])}" for k in ("od", "sd") if k in limits)
        return f": {where}" + (" (solid lines)" if shown else " (the dashed lines)")

    def _place(self, om, sd_max: float, od_max: float, counts: dict, limits: dict | None = None) -> None:
        """Cut-off lines, the flags' own lines (``limits``, see :func:`flag_limits`), region
        names and the range, for distances up to sd_max and od_max."""
        sd_cut, od_cut = om.sd_cutoff, om.od_cutoff
        self.cut_lines["sd"].setPos(sd_cut)
        self.cut_lines["sd"].setVisible(True)
        self.cut_lines["od"].setPos(od_cut)
        self.cut_lines["od"].setVisible(od_cut > 0)
        shown = self._shown_limits(om, limits or {})
        for k, line in self.flag_lines.items():
            line.setVisible(k in shown)
            line.setPos(shown.get(k, 0.0))
        # Region names in the corner of each quadrant, inside the data's range; a flags' line
        # just past the data is kept in view (one far past it would squeeze the samples: the
        # legend says where it is).
        near = {k: v for k, v in shown.items() if v <= 1.25 * (sd_max if k == "sd" else od_max)}
        x_hi = max(sd_max, sd_cut, near.get("sd", 0.0)) * 1.05
        # Headroom above the OD cut-off for the upper regions' names, clear of the lower ones'.
        y_hi = max(max(od_max, near.get("od", 0.0)) * 1.05, od_cut * 1.2)
        # The left regions' names start at the left edge, the right regions' end at the right
        # edge: put at the cut-off, a long left name ran under the right one when the SD cut-off
        # lies near the axis ("orthogonal outlier (0" under "bad leverage (0)").
        # The lower regions' names hang below OD = 0, in a strip no sample can be in: under the
        # cut-off they covered the regular samples, a thin band when the flagged spread far
        # above it ("regular (28,967,478)" over the band at 30M rows).
        for r, t in self.region_labels.items():
            t.setText(f"{r} ({counts[r]:,})")
        at = {"regular": ((0.0, 0.0), (0, 0)), "good leverage": ((x_hi, 0.0), (1, 0)),
              "orthogonal outlier": ((0.0, y_hi), (0, 0)), "bad leverage": ((x_hi, y_hi), (1, 0))}
        # The upper regions' names lie in a strip above the largest OD, the same way (_frame):
        # hung from the top of the data's range, "bad leverage (6)" covered the farthest sample
        # (octane's sample 26, the one a user looks for first).
        for r, t in self.region_labels.items():
            pos, anchor = at[r]
            t.setAnchor(anchor)
            t.setPos(*pos)
            t.setVisible(od_cut > 0 or r in ("regular", "good leverage"))
        self._framing = (x_hi, y_hi, od_cut > 0)
        self._frame()

    def _frame(self) -> None:
        x_hi, y_hi, upper = self._framing
        strip = self._label_strip(y_hi, 2 if upper else 1)
        top = y_hi + strip if upper else y_hi
        for r in ("orthogonal outlier", "bad leverage"):
            t = self.region_labels[r]
            t.setPos(t.pos().x(), top)
        vb = self.plot.getViewBox()
        vb.setRange(xRange=(0, x_hi), yRange=(-strip, top), padding=0.02)
        self._framed_range = vb.viewRange()

    def _on_plot_resized(self, *_) -> None:
        # The strip under OD = 0 follows the plot's height, unless the user moved the view.
        if self._framing is not None and np.allclose(self.plot.getViewBox().viewRange(), self._framed_range):
            self._frame()

    def _label_strip(self, y_hi: float, strips: int = 1) -> float:
        """The height of a strip a region name fits in, in OD units, for a view showing OD from
        0 to ``y_hi`` plus ``strips`` such strips (under OD = 0, and above ``y_hi``), at the
        plot's height now, or a typical one."""
        text = max(t.boundingRect().height() for t in self.region_labels.values()) + 2
        height = self.plot.getViewBox().height()
        height = height if height > 4 * text else 400.0
        return y_hi * text / (height - strips * text)

    def _redraw_binned(self, res, ds):
        """A large map: columns handed to the cloud unread; known outliers per region counted
        on the worker with the columns; range, legend and status when the picture comes."""
        a, om = res.arrays, res.outlier_map
        self.names.clear()   # (the samples are not read here: see _point_names)
        flags = res.flags.get("outlier")   # as stored: read by blocks on the worker
        self._rule = der.outlier_rule(res) if flags is not None else ""
        score = res.sample_scores.get(res.primary_score) if res.primary_score else None
        truth = ds.outliers

        def make():
            facts = {"known": None, "limits": flag_limits(res, a["score_distance"], a["orthogonal_distance"], flags)}
            if truth is not None:
                k = np.asarray(truth, dtype=bool)
                facts["known"] = np.bincount(np.asarray(a["map_region"])[k], minlength=len(REGIONS))
            return {"x": a["score_distance"], "y": a["orthogonal_distance"],
                    "codes": None if truth is None else np.asarray(truth, dtype=np.int64),
                    "flags": flags, "score": score, "facts": facts}

        if truth is not None:
            colors, self._names = [st.category_color(0), st.category_color(1)], ["inlier", "known outlier"]
        else:
            colors, self._names = ["#333333"], ["samples"]
        self.cloud.frame = lambda pic: self._place(om, pic.extent[1], pic.extent[3], dict(om.counts),
                                                   self._facts()["limits"])
        self.cloud.describe = lambda i: describe_sample(ds, i, None) + " · " + der.map_place(res, i)
        self.cloud.set_source(Source(make=make, n=len(a["score_distance"]), colors=colors))
        self.drawn = res
        m = der.short_title(res.method)
        st.style_plot(self.plot, title=f"{title_of(res.method)} — outlier map of {ds.name}",
                      bottom=f"score distance, along the {m} subspace (SD² = T²)", left="orthogonal distance")
        self.legend.clear()
        self._binned_text = (f"cut-offs SD {fmt(om.sd_cutoff)}, OD {fmt(om.od_cutoff)} (97.5 %); "
                             + ", ".join(f"{om.counts[r]:,} {r}" for r in REGIONS))
        n = len(a["score_distance"])
        self.set_status(f"{title_of(res.method)}: {n:,} samples: binning them off the window's thread ...")

    def _on_picture(self, pic, _levels):
        res, b = self.drawn, self.cloud.binned
        if res is None or not b.active:
            return
        self.legend.clear()
        self._swatches = []
        for color, text in layer_entries(pic, b.source.colors, self._names):
            self._swatches.append(pg.ScatterPlotItem(symbol="o", size=8, brush=st.brush(color), pen=None))
            self.legend.addItem(self._swatches[-1], text)
        facts = self._facts()
        rule = (self._rule + self._where(res.outlier_map, facts["limits"])) if self._rule else "flagged"
        self._swatches += add_flag_entries(self.legend, self.cloud, pic, rule)
        self._add_cut_entry()
        self.fit_layout()
        known = facts["known"]
        truth = ("" if known is None else " · known outliers by region: "
                 + ", ".join(f"{r} {int(known[i]):,}" for i, r in enumerate(REGIONS)))
        self.set_status(f"{title_of(res.method)}: {agg.describe(pic, 'samples', self._rule or 'flagged')} · "
                        f"SD² = T², OD² = SPE; {self._binned_text}{truth}")

    def _facts(self) -> dict:
        """What the binned map's columns told besides the points (see _redraw_binned's make)."""
        b = self.cloud.binned
        facts = b.columns.facts() if b.columns is not None else None
        return facts or {"known": None, "limits": {}}

    def clear(self):
        if self.cloud is not None:
            self.cloud.clear()
        if self.names is not None:
            self.names.clear()
        self.drawn = None
