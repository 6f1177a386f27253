"""SPE / T² map: filled contours of the reconstruction error (SPE) and of Hotelling's T² over a
plane through the subspace's centre, isolines at both control limits, the samples and the
principal axis, and a switch between flagging by SPE, by T² or by either.

The default plane holds the first component and the direction of largest residual variance:
along the component SPE does not change at all, so a point far out along it keeps a small SPE
while its T² explodes; across it SPE grows. With both maps side by side the blind spot is
visible at a glance. (The principal plane of the data is offered too; when the subspace has
rank >= 2 that plane lies inside it and SPE is zero all over it, which the map then says.)

Limits, variances and planes are the result's own (the registry's adapter put them there); the
map only evaluates them over the grid, which is recomputed for whatever range is shown, so the
colours always fill the plots.
"""
from __future__ import annotations

import threading
from functools import cache

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt

from robustcore import compare

from . import _derived as der
from . import _style as st
from ._binned import Source
from ._binning import block_rows, blocks
from ._cloud import PointCloud, new_plot
from ._density import DENSITY_POINTS
from ._common import Choice, describe_sample, fmt, labelled, title_of
from ._map_fill import BANDS, GRID, MapFill
from ._map_texts import INSIDE, OUTSIDE, RULE_FLAGS, MapTexts
from .base import BaseView



@cache
def _band_lut(n_inside: int, n_outside: int) -> np.ndarray:
    """Light blues inside the limit, light-to-deep oranges outside (print- and colour-blind-safe);
    shared, read-only."""
    inside = st.colormap("CET-L12").map(np.linspace(0.05, 0.45, n_inside), mode="byte")  # blues
    outside = st.colormap("CET-L18").map(np.linspace(0.15, 0.6, n_outside), mode="byte")  # oranges
    lut = np.vstack([inside[::-1], outside])[:, :4]
    lut.flags.writeable = False
    return lut


class ContourView(MapTexts, BaseView):
    name = "contour"
    out_of_core = "it draws every sample in the plane of the map, and the out-of-core fit keeps no such plane"
    title = "SPE / T² map"

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
        self.limits = {}
        self.model = None
        self.plane = None
        self.current_flags = None
        self._binned_xy = None   # (coordinates on the worker, n) for a binned map, see _redraw_binned
        self._layered = False    # whether the legend names a flagged density, see _fill_legend
        self._framed = False
        self.plots = {}
        self.images = {}
        self.isolines = {}      # (map, limit name) -> the limit's isoline: segments (connect="pairs")
        self.fills = {}         # map -> its MapFill (grids and isolines made on a worker)
        self.clouds = {}
        self.axis_lines = {}
        self.flat_notes = {}
        # The SPE map, the T² map linked to it, and the key in idle turns after the view
        # (build_step): each plot is tens of milliseconds of the GUI thread (issue 33.2).
        self.key = self.legend = None   # made in build_step or at the first refresh, see _finish_figure
        self.method_box.currentIndexChanged.connect(self._method_changed)
        self.plane_box.currentIndexChanged.connect(self.redraw)
        self.rule_box.currentIndexChanged.connect(self._apply_rule)

    @classmethod
    def missing(cls, state, method=None):
        why = super().missing(state, method)
        if why is not None or method is None:
            return why
        return der.map_model(state.result(method))[1] or None

    def _finish_figure(self, one_part: bool = False) -> None:
        """The key of the bands, then the legend (``one_part``: only the next of the two), made in
        idle turns after the plots (build_step) or else in the turn of the first drawing, not
        with the plots: the view's construction was the largest freeze of its first showing
        (issue 33.2), and key and legend together were still the longest idle turn (~90 ms)."""
        if self.key is None:
            # Key of the bands: the value as a multiple of each map's own control limit.
            self.key = st.colorbar((-4, 4), pg.ColorMap(np.linspace(0, 1, 10), _band_lut(5, 5)),
                                   label="value as a multiple of its limit")
            ax = self.key.getAxis("right")
            ax.setTicks([[(np.log2(b), (f"1/{int(round(1 / b))}" if b < 1 else f"{int(b)}") + "×")
                          for b in BANDS]])
            self.figure.ci.addItem(self.key, row=0, col=2)
            if one_part:
                return
        if self.legend is None:
            self.legend = self.add_legend(st.legend_row(self.figure.ci, row=1, col=0, colspan=3, columns=5,
                                                        down=True))

    def build_step(self) -> bool:
        if "spe" not in self.plots:
            self._add_map(0, "spe")
            return True
        if "t2" not in self.plots:
            self._add_map(1, "t2")
            self.plots["t2"].setXLink(self.plots["spe"])
            self.plots["t2"].setYLink(self.plots["spe"])
            return True
        if self.legend is not None:
            return False
        if self.key is None and _band_lut.cache_info().currsize == 0:
            _band_lut(5, 5)   # reads two colour maps' files (~40 ms): a turn of its own
            return True
        self._finish_figure(one_part=True)
        return True

    def _add_map(self, col: int, key: str) -> None:
        """The plot of one map (column ``col``): its bands, isolines, axis line, note and samples."""
        state = self.state
        p = new_plot(self.figure.ci, row=0, col=col)
        p.setAspectLocked(True)
        img = pg.ImageItem()
        img.setZValue(-10)
        p.addItem(img, ignoreBounds=True)
        self.plots[key], self.images[key] = p, img
        for lim in ("spe", "t2"):
            own = lim == key
            iso = pg.PlotCurveItem(connect="pairs", pen=st.pen(st.LIMIT_COLOR, 2.2 if own else 1.4,
                                                               None if own else Qt.PenStyle.DashLine))
            iso.setZValue(-5)   # over the bands, under the samples
            p.addItem(iso, ignoreBounds=True)
            self.isolines[(key, lim)] = iso
        self.fills[key] = MapFill(key, lambda pic, k=key: self._draw_map(k, pic), self)
        line = pg.InfiniteLine(angle=0, pen=st.pen("#333333", 1.2, Qt.PenStyle.DotLine))
        p.addItem(line, ignoreBounds=True)
        self.axis_lines[key] = line
        note = pg.TextItem("", color=st.AXIS_COLOR, anchor=(0.5, 0.5), fill=st.brush("#FFFFFF", 220))
        note.setZValue(20)
        p.addItem(note, ignoreBounds=True)
        note.setVisible(False)
        self.flat_notes[key] = note
        cloud = PointCloud(p, state, size=5)
        cloud.sigHovered.connect(lambda i, c=cloud: self._hover(c))
        self.clouds[key] = cloud
        st.style_plot(p)
        p.getViewBox().sigRangeChanged.connect(lambda *_a, k=key: self._fill(k))

    def refresh(self):
        self.finish_building()
        self.fill_method_box()
        self._method_changed()

    def set_rule(self, rule: str) -> None:
        if not self.rule_box.set_key(rule):
            raise ValueError(f"rule must be one of spe, t2, either; got {rule!r}")

    def _method_changed(self, *_):
        res, ds = self.result(), self.state.dataset
        if res is None or ds is None:
            return
        model, why = der.map_model(res)
        if model is None:
            self._show_nothing(res, why)
            return
        r = model["components"].shape[0]
        if ds.n_features == 2:
            items = [("data plane", "data")]
        else:
            items = [(f"component {i + 1} & largest residual", ("residual", i)) for i in range(min(r, 4))]
            items.append(("principal plane of the data", "data"))
        self.plane_box.set_items(items, default=items[0][1])
        self.redraw()

    def _show_nothing(self, res, why):
        self.model, self.drawn, self.limits, self._binned_xy = None, res, {}, None
        for fill in self.fills.values():
            fill.cancel()
        for img in self.images.values():
            img.clear()
        for cloud in self.clouds.values():
            cloud.clear()
        for iso in self.isolines.values():
            iso.setData([], [])
        self.legend.clear()
        self.set_status(f"{title_of(res.method)}: no SPE/T² map: {why}. Choose a smaller rank "
                        f"(n_components) so that a residual is left.")

    def plane_axes(self, key) -> tuple[np.ndarray, tuple[str, str]]:
        """The (2, d) plane for a plane key and the names of its axes."""
        m, ds = self.model, self.state.dataset
        if key == "data":
            if ds.n_features == 2:
                return np.eye(2), (f"{ds.feature_names[0]} − centre", f"{ds.feature_names[1]} − centre")
            return m["data_plane"], ("principal axis 1 of the data", "principal axis 2 of the data")
        i = key[1]
        return (np.vstack([m["components"][i], m["residual_direction"]]),
                (f"component {i + 1}", "largest residual"))

    def redraw(self, *_):
        res, ds = self.result(), self.state.dataset
        if res is None or ds is None:
            return
        model, why = der.map_model(res)
        if model is None:
            self._show_nothing(res, why)
            return
        self.model = model
        key = self.plane_box.key() or "data"
        self.plane, names = self.plane_axes(key)
        self.limits = {"spe": model["spe_limit"], "t2": model["t2_limit"]}
        scores = {k: np.asarray(res.sample_scores[k], dtype=float) for k in ("spe", "t2")}
        self.drawn = res
        for kname, cloud in self.clouds.items():
            cloud.describe = (lambda i: describe_sample(ds, i, None)
                              + f" · SPE {fmt(scores['spe'][i])} · T² {fmt(scores['t2'][i])}")
            st.style_plot(self.plots[kname], bottom=names[0], left=names[1])
        self._draw_axis_lines(model)
        if ds.n_samples > DENSITY_POINTS:
            self._redraw_binned(res, ds, model)
            return
        self._binned_xy = None
        X = der.model_units(res, ds.dense())  # the units the result's subspace lives in
        xy = compare.plane_coordinates(X, model["mean"], self.plane)
        for cloud in self.clouds.values():
            cloud.set_points(xy[:, 0], xy[:, 1], brushes=[st.brush("#333333", 170)] * xy.shape[0])
        self._frame(xy.min(axis=0), xy.max(axis=0))
        self._apply_rule()

    def _draw_axis_lines(self, model) -> None:
        comp_dir = self.plane @ model["components"][0]
        for line in self.axis_lines.values():
            if np.linalg.norm(comp_dir) > 1e-6:
                line.setAngle(float(np.degrees(np.arctan2(comp_dir[1], comp_dir[0]))))
                line.setPos((0.0, 0.0))
                line.setVisible(True)
            else:
                line.setVisible(False)

    def _frame(self, lo, hi) -> None:
        """A square window around the points (corners ``lo``, ``hi``), with a margin so the limits'
        isolines close around the data; the maps themselves fill whatever range the plots show
        (see _fill)."""
        lo, hi = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
        mid = (lo + hi) / 2
        half = 0.6 * max(float(np.max(hi - lo)), 1e-9)
        self.plots["spe"].getViewBox().setRange(QRectF(mid[0] - half, mid[1] - half, 2 * half, 2 * half),
                                                padding=0)
        for kname in self.plots:
            self._fill(kname)

    def _redraw_binned(self, res, ds, model) -> None:
        """Many samples: their plane coordinates are computed on the worker that bins them (once,
        shared by both maps and every rule), never on the GUI thread; the view is framed when the
        first picture comes (issue 33: 1.3 s of the GUI thread at 2,000,000 rows)."""
        plane, mean, lock, held = self.plane, model["mean"], threading.Lock(), {}

        def coordinates():
            with lock:
                if "xy" not in held:
                    # by blocks: no centred n x d copy (320 MB at 2,000,000 x 20)
                    X = ds.dense()
                    xy = np.empty((2, X.shape[0]))
                    for a, b in blocks(0, X.shape[0], block_rows(X, X.shape[1])):
                        xy[:, a:b] = compare.plane_coordinates(der.model_units(res, X[a:b]), mean, plane).T
                    held["xy"] = (xy[0], xy[1])
                return held["xy"]

        self._binned_xy, self._framed = (coordinates, ds.n_samples), False
        for cloud in self.clouds.values():
            cloud.frame = self._frame_binned
        self._apply_rule()

    def _frame_binned(self, pic) -> None:
        # once per map drawn: a new rule re-bins, and must not undo the user's zoom
        if not self._framed:
            self._framed = True
            self._frame(pic.extent[0::2], pic.extent[1::2])

    def _bin(self, flags_of) -> None:
        """Hand both clouds the binned source, flagged by ``flags_of()`` (run on the worker)."""
        coordinates, n = self._binned_xy

        def make():
            x, y = coordinates()
            return {"x": x, "y": y, "flags": flags_of()}

        for cloud in self.clouds.values():
            cloud.set_source(Source(make=make, n=n, colors=[INSIDE]))

    def _fill(self, kname: str) -> None:
        """Ask for the map over the plot's visible range (no white margins, whatever the shape
        of the plot, after any zoom or pan); it is made on a worker (:mod:`._map_fill`) and
        drawn by :meth:`_draw_map`."""
        if self.model is None or self.plane is None:
            return
        (x0, x1), (y0, y1) = self.plots[kname].getViewBox().viewRange()
        if not (x1 > x0 and y1 > y0):
            return
        self.fills[kname].request(self.model, self.plane, self.limits, (x0, x1, y0, y1))

    def _draw_map(self, kname: str, pic) -> None:
        """Put a map's finished picture on screen: the bands and the isolines' vertices."""
        from shiboken6 import isValid
        if not isValid(self.images[kname]):
            return   # the view was closed while its picture was made
        x0, x1, y0, y1 = pic.rng
        # Each image pixel centred on its grid point, as the isolines' vertices are placed.
        dx, dy = (x1 - x0) / (GRID - 1), (y1 - y0) / (GRID - 1)
        img = self.images[kname]
        # Row-major images (app._qt): the (ys, xs) grid is drawn as it is.
        img.setImage(pic.image, levels=(-5, 5), lut=_band_lut(5, 5))
        img.setRect(QRectF(x0 - dx / 2, y0 - dy / 2, x1 - x0 + dx, y1 - y0 + dy))
        for lname in ("spe", "t2"):
            self.isolines[(kname, lname)].setData(*pic.lines[lname])
        lim = self.limits.get(kname)
        flat = kname == "spe" and lim is not None and float(pic.grids["spe"].max()) <= 1e-12 * lim
        note = self.flat_notes[kname]
        note.setVisible(flat)
        if flat:
            note.setText("SPE is 0 on this whole plane:\nthe plane lies inside the fitted subspace.\n"
                         "Choose a plane with the largest residual direction.")
            note.setPos((x0 + x1) / 2, (y0 + y1) / 2)
        self.grids = pic.grids
        self.grid_axes = (pic.xs, pic.ys)

    def finish_drawing(self) -> None:
        """Make and draw now what is still to come (the maps, the binned clouds): an export, a test."""
        for cloud in self.clouds.values():
            cloud.finish_drawing()   # first: a binned cloud's first picture frames the maps
        for fill in self.fills.values():
            fill.finish()

    def _apply_rule(self, *_):
        res = self.drawn
        if not self.limits or res is None:
            return
        rule = self.rule_box.key()
        flags = np.asarray(res.flags[RULE_FLAGS[rule]], dtype=bool)
        if self._binned_xy is not None:
            self._bin(lambda: flags)
        else:
            brushes = np.array([st.brush(INSIDE, 190), st.brush(OUTSIDE, 230)], dtype=object)[flags.astype(np.int64)]
            for cloud in self.clouds.values():
                cloud.set_brushes(list(brushes))
                cloud.set_flags(flags)
        self.current_flags = flags
        self._fill_legend()
        st.set_title(self.plots["spe"], f"{title_of(res.method)}: SPE (reconstruction error), limit "
                                        f"{fmt(self.limits['spe'])}")
        st.set_title(self.plots["t2"], f"Hotelling T², limit {fmt(self.limits['t2'])}")
        self._update_status()

    def _hover(self, cloud):
        if cloud.hovered >= 0:
            self.set_status("under the mouse: " + cloud.hover_text)
