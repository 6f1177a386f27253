"""SPE / T² map: filled contours of the reconstruction error (SPE) and of Hotelling's T² over a
plane through the training mean, isolines at both control limits, the training points and the
principal axis, and a switch between flagging by SPE, by T² or by either.

Along the principal axis SPE does not change at all, so a point far out along it keeps a small
SPE while its T² explodes: with both maps side by side the blind spot is visible at a glance.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt

from robustcore import compare

from . import _derived as der
from . import _style as st
from ._cloud import PointCloud, new_plot
from ._common import Choice, describe_sample, fmt, labelled, title_of
from .base import BaseView

# Band edges in multiples of the control limit: the limit itself is an edge, so the colour
# changes exactly where the isoline is drawn.
BANDS = np.array([1 / 16, 1 / 8, 1 / 4, 1 / 2, 1, 2, 4, 8, 16])
GRID = 161


def _band_lut(n_inside: int, n_outside: int) -> np.ndarray:
    """Light blues inside the limit, light-to-deep oranges outside (print- and colour-blind-safe)."""
    inside = pg.colormap.get("CET-L12").map(np.linspace(0.05, 0.45, n_inside), mode="byte")  # blues
    outside = pg.colormap.get("CET-L18").map(np.linspace(0.15, 0.6, n_outside), mode="byte")  # oranges
    return np.vstack([inside[::-1], outside])[:, :4]


class ContourView(BaseView):
    name = "contour"
    title = "SPE / T² map"
    methods = ("residual", "pca", "coherence-pursuit")

    def __init__(self, state, parent=None):
        super().__init__(state, parent)
        self.method_box = Choice()
        self.plane_box = Choice()
        self.rule_box = Choice()
        self.rule_box.set_items([("flag by SPE", "spe"), ("flag by T²", "t2"), ("flag by either", "either")],
                                default="either")
        for text, box in (("Result", self.method_box), ("Plane", self.plane_box), ("Rule", self.rule_box)):
            self.controls.addWidget(labelled(text, box))
            self.controls.addWidget(box)
        self.controls.addStretch(1)
        self.plots = {}
        self.images = {}
        self.isolines = {}      # (map, limit name) -> IsocurveItem
        self.clouds = {}
        self.axis_lines = {}
        for col, key, ttl in ((0, "spe", "SPE (reconstruction error)"), (1, "t2", "Hotelling T²")):
            p = new_plot(self.figure.ci, row=0, col=col)
            p.setAspectLocked(True)
            img = pg.ImageItem()
            img.setZValue(-10)
            p.addItem(img)
            self.plots[key], self.images[key] = p, img
            for lim in ("spe", "t2"):
                own = lim == key
                iso = pg.IsocurveItem(level=0.0, pen=st.pen(st.LIMIT_COLOR, 2.2 if own else 1.4,
                                                           None if own else Qt.PenStyle.DashLine))
                iso.setParentItem(img)
                iso.setZValue(2)
                self.isolines[(key, lim)] = iso
            line = pg.InfiniteLine(angle=0, pen=st.pen("#333333", 1.2, Qt.PenStyle.DotLine))
            p.addItem(line, ignoreBounds=True)
            self.axis_lines[key] = line
            cloud = PointCloud(p, state, size=5)
            cloud.sigHovered.connect(lambda i, c=cloud: self._hover(c))
            self.clouds[key] = cloud
            st.style_plot(p, title=ttl)
        self.plots["t2"].setXLink(self.plots["spe"])
        self.plots["t2"].setYLink(self.plots["spe"])
        self.legend = pg.LegendItem(labelTextColor=st.AXIS_COLOR, labelTextSize="9pt", colCount=5)
        self.figure.ci.addItem(self.legend, row=1, col=0, colspan=2)
        # Key of the bands: value as a multiple of the map's own control limit.
        self.key = pg.ColorBarItem(values=(-4, 4), colorMap=pg.ColorMap(np.linspace(0, 1, 10), _band_lut(5, 5)),
                                   interactive=False, width=14, label="value ÷ limit")
        ax = self.key.getAxis("right")
        ax.setTicks([[(np.log2(b), (f"1/{int(round(1 / b))}" if b < 1 else f"{int(b)}") + "×") for b in BANDS]])
        ax.setTextPen(st.pen(st.AXIS_COLOR))
        ax.setPen(st.pen(st.AXIS_COLOR))
        self.figure.ci.addItem(self.key, row=0, col=2)
        self.limits = {}
        self.method_box.currentIndexChanged.connect(self._method_changed)
        self.plane_box.currentIndexChanged.connect(self.redraw)
        self.rule_box.currentIndexChanged.connect(self._apply_rule)

    def refresh(self):
        self.fill_method_box()
        self._method_changed()

    def set_rule(self, rule: str) -> None:
        if not self.rule_box.set_key(rule):
            raise ValueError(f"rule must be one of spe, t2, either; got {rule!r}")

    def _method_changed(self, *_):
        res, ds = self.result(), self.state.dataset
        if res is None or ds is None:
            return
        sub = der.subspace(res)
        r = sub["components"].shape[0]
        items = [("data plane" if ds.n_features == 2 else "principal plane of the data", None)]
        if ds.n_features > 2:
            k = min(r, 4)
            items += [(f"components {i + 1} & {j + 1}", (i, j)) for i in range(k) for j in range(i + 1, k)]
        self.plane_box.set_items(items)
        self.redraw()

    def redraw(self, *_):
        res, ds = self.result(), self.state.dataset
        if res is None or ds is None:
            return
        sc = der.scorer(res, ds)
        X = der.model_units(res, ds.dense())      # the units the scorer's subspace lives in
        key = self.plane_box.key()
        plane = sc.plane_ if key is None else compare.component_plane(sc.components_, *key)
        xy = compare.plane_coordinates(X, sc.mean_, plane)
        # A square window around the points (the plots keep x and y at the same scale), with a
        # margin so the limits' isolines close around the data.
        mid = (xy.min(axis=0) + xy.max(axis=0)) / 2
        half = 0.6 * max(float(np.max(xy.max(axis=0) - xy.min(axis=0))), 1e-9)
        lo, hi = mid - half, mid + half
        xs = np.linspace(lo[0], hi[0], GRID)
        ys = np.linspace(lo[1], hi[1], GRID)
        spe_g, t2_g = sc.grid(xs, ys, plane=plane)
        self.limits = {"spe": float(sc.spe_limit_), "t2": float(sc.t2_limit_)}
        self.grids = {"spe": spe_g, "t2": t2_g}
        self.grid_axes = (xs, ys)
        self.flags_by_rule = sc.flag(X)
        scores = {"spe": sc.spe(X), "t2": sc.t2(X)}
        rect = QRectF(xs[0], ys[0], xs[-1] - xs[0], ys[-1] - ys[0])
        lut = _band_lut(5, 5)
        for kname, g in self.grids.items():
            # log2 of the value in units of the limit, clipped to the band edges -> discrete bands.
            lim = self.limits[kname]
            with np.errstate(divide="ignore"):
                z = np.log2(np.maximum(g, lim * BANDS[0] / 2) / lim)
            img = self.images[kname]
            img.setImage(np.clip(z, np.log2(BANDS[0]), np.log2(BANDS[-1])), levels=(-5, 5), lut=lut)
            img.setRect(rect)
            for lname in ("spe", "t2"):
                iso = self.isolines[(kname, lname)]
                iso.setData(self.grids[lname], level=self.limits[lname])
        comp_dir = plane @ sc.components_[0]
        for kname, line in self.axis_lines.items():
            if np.linalg.norm(comp_dir) > 1e-6:
                line.setAngle(float(np.degrees(np.arctan2(comp_dir[1], comp_dir[0]))))
                line.setPos((0.0, 0.0))
                line.setVisible(True)
            else:
                line.setVisible(False)
        ax_names = ((ds.feature_names[0], ds.feature_names[1]) if key is None and ds.n_features == 2
                    else ("u (offset from mean)", "v") if key is None
                    else (f"component {key[0] + 1}", f"component {key[1] + 1}"))
        self._res_scores = scores
        for kname, cloud in self.clouds.items():
            cloud.set_points(xy[:, 0], xy[:, 1], brushes=[st.brush("#333333", 170)] * xy.shape[0])
            cloud.describe = (lambda i, r=res: describe_sample(ds, i, None)
                              + f" · SPE {fmt(scores['spe'][i])} · T² {fmt(scores['t2'][i])}")
            st.style_plot(self.plots[kname], bottom=ax_names[0] + " − mean" if key is None and ds.n_features == 2
                          else ax_names[0], left=ax_names[1] + (" − mean" if key is None and ds.n_features == 2 else ""))
        st.set_title(self.plots["spe"], f"SPE (reconstruction error), limit {fmt(self.limits['spe'])}",
                                   color=st.AXIS_COLOR, size="10pt")
        st.set_title(self.plots["t2"], f"Hotelling T², limit {fmt(self.limits['t2'])}", color=st.AXIS_COLOR, size="10pt")
        self._apply_rule()
        self.plots["spe"].getViewBox().setRange(rect, padding=0)

    def _apply_rule(self, *_):
        if not self.limits:
            return
        rule = self.rule_box.key()
        flags = np.asarray(self.flags_by_rule[rule], dtype=bool)
        n = flags.size
        inside, outside = st.brush("#1F4E79", 190), st.brush("#D55E00", 230)
        brushes = np.array([inside, outside], dtype=object)[flags.astype(np.int64)]
        for cloud in self.clouds.values():
            cloud.set_brushes(list(brushes))
            cloud.set_flags(flags)
        self.current_flags = flags
        self.legend.clear()
        self._legend_items = [pg.ScatterPlotItem(size=7, brush=inside, pen=None),
                              pg.ScatterPlotItem(size=7, brush=outside, pen=None),
                              pg.PlotDataItem(pen=st.pen(st.LIMIT_COLOR, 2.2)),
                              pg.PlotDataItem(pen=st.pen(st.LIMIT_COLOR, 1.4, Qt.PenStyle.DashLine)),
                              pg.PlotDataItem(pen=st.pen("#333333", 1.2, Qt.PenStyle.DotLine))]
        names = {"spe": "SPE", "t2": "T²", "either": "SPE or T²"}
        texts = [f"within limits ({n - int(flags.sum())})", f"flagged by {names[rule]} ({int(flags.sum())})",
                 "this map's limit", "the other map's limit", "principal axis (PC1)"]
        for it, t in zip(self._legend_items, texts):
            self.legend.addItem(it, t)
        res = self.result()
        self.set_status(f"{title_of(res.method)}: SPE limit {fmt(self.limits['spe'])}, T² limit "
                        f"{fmt(self.limits['t2'])} · {int(flags.sum())} of {n} flagged by {names[rule]} · "
                        f"SPE is constant along the principal axis: far-out points there are caught only by T².")

    def _hover(self, cloud):
        if cloud.hovered >= 0:
            self.set_status("under the mouse: " + cloud.hover_text)
