"""Sample detail: for image data the selected sample as a picture beside its reconstruction,
its L and S parts (robust PCA) and its residual, the signed ones with their colour bar; for
tables the per-feature residual contributions as bars (which features make this sample an
outlier). The pictures take the rows and columns that show them largest for the space there is.

A table with more features than the plot has room for shows them in bins (:mod:`._binning`), each
bar the entry of largest magnitude of its bin, and zooming in bins the features on screen again,
down to one bar per feature.

The numbers come from :mod:`._detail_numbers`, for data in memory and out of core alike. Out of
core the sample is one row read from the file (and one row of each stored result), on a worker:
a chunk read may wait on a disk; the table is never read whole."""
from __future__ import annotations

import heapq

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, QTimer
from PySide6.QtGui import QFont, QFontMetrics
from PySide6.QtWidgets import QToolButton

from .. import palette
from . import _derived as der
from . import _style as st
from ._binning import Bins, bin_vector, bins_for, fit_picture
from ._cloud import MenuOnDemandViewBox
from ._common import Choice, fmt, labelled, title_of
from ._detail_numbers import sample_numbers
from ._latest import cancel_test, runner
from ._zoom_bins import SETTLE_MS, Extent, bins_limit
from .base import BaseView


class DetailView(BaseView):
    name = "detail"
    title = "Sample detail"

    def __init__(self, state, parent=None):
        super().__init__(state, parent)
        self.method_box = Choice()
        self.prev_button = QToolButton(text="◀", toolTip="Previous selected sample")
        self.next_button = QToolButton(text="▶", toolTip="Next selected sample")
        self.controls.addWidget(labelled("Result", self.method_box))
        self.controls.addWidget(self.method_box)
        self.controls.addWidget(self.prev_button)
        self.controls.addWidget(self.next_button)
        self.method_box.currentIndexChanged.connect(self.redraw)
        self.prev_button.clicked.connect(lambda: self._step(-1))
        self.next_button.clicked.connect(lambda: self._step(1))
        state.selectionChanged.connect(self._selection_changed)
        self._pos = 0
        self.current_sample = -1
        # Out of core: the sample is read on a worker (_detail_numbers); what was asked for last.
        self._pending = None
        self._reads = runner(self, self._read_done, self._read_failed)
        self.panels = {}
        self.images = {}
        # The picture panels and their colour bar are made the first time an image data set
        # needs them: five plots cost more than half of this view's first showing (issue 33.2).
        self.signed_bar = None
        self.bar_plot = pg.PlotItem(viewBox=MenuOnDemandViewBox())
        st.style_plot(self.bar_plot)
        self.bars = pg.BarGraphItem(x=[], height=[], width=0.8)
        self.bar_plot.addItem(self.bars)
        self.bar_extent = Extent()   # all the features, whatever the bars zoomed into
        self.bar_plot.addItem(self.bar_extent)
        self.bar_values = np.zeros(0)
        self.bar_bins: Bins | None = None   # the features the bars show, and their bins
        self.bar_top = np.zeros(0, dtype=np.int64)
        self.bar_title = ""
        self.bar_signed = False
        self.tick_step = 1
        self._bar_timer = QTimer(self, singleShot=True, interval=SETTLE_MS)
        self._bar_timer.timeout.connect(self._rebin_bars)
        self.bar_plot.getViewBox().sigXRangeChanged.connect(self._settle_bars)
        self.bar_plot.getViewBox().sigResized.connect(self._settle_bars)

    def _settle_bars(self, *_):
        # The plot outlives the view's timer while a window is torn down (views built ahead
        # are in every window): a resize then must not reach a deleted timer.
        from shiboken6 import isValid
        if isValid(self._bar_timer):
            self._bar_timer.start()

    def _make_image_panels(self):
        if self.signed_bar is not None:
            return
        for _col, key in enumerate(("original", "reconstruction", "part", "residual")):
            p = pg.PlotItem(viewBox=MenuOnDemandViewBox())
            st.style_plot(p)
            p.invertY(True)
            p.setAspectLocked(True)
            p.hideAxis("left")
            p.hideAxis("bottom")
            img = pg.ImageItem()
            p.addItem(img)
            self.panels[key], self.images[key] = p, img
            # Equal columns whatever the title lengths (a long title would widen its column).
            p.setPreferredWidth(10)
            p.titleLabel.setMinimumWidth(10)
            p.titleLabel.setPreferredWidth(10)
        self.signed_bar = st.colorbar((-1, 1), st.diverging_colormap(), label="")

    def _arrange(self, keys):
        """Lay out the shown picture panels (a hidden item would still hold its grid cell) in the
        grid that shows them largest, the colour bar of the signed ones after them; or the bar
        chart alone for tables."""
        rows, cols = (0, 0)
        if keys:
            ds = self.state.dataset
            h, w = ds.image_shape
            rows, cols = st.best_grid(len(keys), h / w, self.figure.width() - 70, self.figure.height())
        if (keys, rows, cols) == getattr(self, "_arranged", None):
            return
        lay = self.figure.ci
        if keys:
            self._make_image_panels()
        for p in (*self.panels.values(), self.bar_plot, *([self.signed_bar] if self.signed_bar else [])):
            if p in lay.items:
                lay.removeItem(p)
            p.setVisible(False)
        for k, key in enumerate(keys):
            lay.addItem(self.panels[key], row=k // cols, col=k % cols)
            self.panels[key].setVisible(True)
        if keys:
            lay.addItem(self.signed_bar, row=0, col=cols, rowspan=rows)
            self.signed_bar.setVisible(True)
        for col in range(5):
            lay.layout.setColumnStretchFactor(col, 1 if col < max(cols, 1) else 0)
        for row in range(4):
            lay.layout.setRowStretchFactor(row, 1 if row < max(rows, 1) else 0)
        if not keys:
            lay.addItem(self.bar_plot, row=0, col=0)
            self.bar_plot.setVisible(True)
        self._arranged = (keys, rows, cols)

    def _draw_bars(self, bins: Bins) -> None:
        """Bars of the features ``bins`` holds: one per feature, or per bin of features (the
        entry of largest magnitude in each, with its sign), the three largest in another colour."""
        vals = self.bar_values
        self.bar_bins = bins
        edges = bins.edges()
        width = np.diff(edges)
        heights = vals[bins.start:bins.stop] if not bins.binned else bin_vector(vals, bins, "absmax")
        hot = np.zeros(bins.count, dtype=bool)
        for j in self.bar_top:
            if bins.start <= j < bins.stop:
                hot[bins.of(j)] = True
        colours = [st.brush(st.category_color(5) if h else st.category_color(0)) for h in hot]
        self.bars.setOpts(x=edges[:-1] + (width - 1) / 2, height=heights, width=0.8 * width, brushes=colours, pen=None)
        signed = self.bar_signed
        if bins.binned:
            what = (f"the largest |S| in each bin ({bins.describe('features')})" if signed else
                    f"the largest e_j² in each bin ({bins.describe('features')})")
        else:
            what = "per feature" if signed else "per feature (sum = SPE)"
        st.style_plot(self.bar_plot, title=f"{self.bar_title} {what}",
                      bottom="feature" if not bins.binned else f"feature (bins of {bins.size:,})")

    def _rebin_bars(self) -> None:
        """After a zoom or resize: the features on screen, binned to the plot's width."""
        d = self.bar_values.size
        if d == 0 or self.bar_bins is None or not self.bar_plot.isVisible():
            return
        vb = self.bar_plot.getViewBox()
        (x0, x1), _ = vb.viewRange()
        if vb.autoRangeEnabled()[0]:   # all the features (the range may not have caught up yet)
            x0, x1 = -0.5, d - 0.5
        a = int(min(max(np.floor(x0 + 0.5), 0), d - 1))
        b = int(min(max(np.ceil(x1 + 0.5), a + 1), d))
        bins = bins_for(a, b, bins_limit(vb.width()))
        if bins != self.bar_bins:
            self._draw_bars(bins)

    def _feature_ticks(self) -> None:
        """Name the bars with every k-th feature name, k such that the names never run into
        each other ("x0x1x2…" with 30 features at 1280 px); with numbers when names are long."""
        ds = self.state.dataset
        d = self.bar_values.size
        ax = self.bar_plot.getAxis("bottom")
        if ds is None or d == 0 or ds.is_image:
            return
        names = list(ds.feature_names[:d])
        fm = QFontMetrics(ax.style.get("tickFont") or QFont())
        # The longest names are the widest (measuring all 100,000 names cost 0.2 s a resize).
        longest = heapq.nlargest(64, names, key=lambda n: len(str(n)))
        widest = max(fm.horizontalAdvance(str(n)) for n in longest) + 8
        width = self.bar_plot.getViewBox().width() or (self.figure.width() - 80)
        per_bar = max(width, 1.0) / d
        step = max(1, int(np.ceil(widest / per_bar)))
        self.tick_step = step
        ax.setTicks([[(j, str(names[j])) for j in range(0, d, step)]])

    def fit_layout(self) -> None:
        super().fit_layout()
        keys = getattr(self, "_arranged", ((), 0, 0))[0]
        if keys:
            self._arrange(keys)
        elif self.bar_values.size:
            self._feature_ticks()   # the room per bar changed: so may the names that fit

    def refresh(self):
        self.fill_method_box()
        self.redraw()

    def clear(self):
        for img in self.images.values():
            img.clear()
        # every per-bar option emptied: a binned drawing leaves widths and brushes per bar, and
        # pyqtgraph broadcast the old widths against no bars (a view drawn ahead, then new data)
        self.bars.setOpts(x=[], height=[], width=0.8, brushes=None)
        self.bar_bins = None
        self.current_sample = -1
        self._pending = None
        self._reads.cancel()

    def _selection_changed(self, sel):
        self._pos = 0
        if self.isVisible() or not self.is_stale():
            self.redraw()

    def _step(self, k):
        sel = self.state.selection
        if sel.size:
            self._pos = (self._pos + k) % sel.size
            self.redraw()

    def redraw(self, *_):
        res, ds = self.result(), self.state.dataset
        if res is None or ds is None:
            return
        self.drawn = res
        sel = self.state.selection
        self._pos = min(self._pos, max(sel.size - 1, 0))
        ask = (res, ds, sel, self._pos)
        if not ds.is_lazy:
            self._show(res, ds, sample_numbers(*ask))
            return
        # Out of core the sample is a row of the file and its results rows of their stores: a
        # chunk read each, which may wait on a disk or a network share. Read on a worker; the
        # figure keeps the sample it shows until the new one has been read.
        self._pending = ask
        self.set_status(f"{title_of(res.method)} · reading sample "
                        + (f"#{int(sel[self._pos])}" if sel.size else "to show") + " from disk…")
        self._reads.submit(lambda progress: sample_numbers(*ask, cancel_test(progress, "reading a sample")),
                           tag=ask)

    def _read_done(self, job, nums) -> None:
        if self._pending is not job.tag:   # a newer request, or the data changed meanwhile
            return
        self._pending = None
        res, ds = job.tag[:2]
        if res is self.result() and ds is self.state.dataset:
            self._show(res, ds, nums)

    def _read_failed(self, job, message, details) -> None:
        if self._pending is job.tag:
            self._pending = None
            self.set_status(f"The sample could not be read: {message}")

    def draw_now(self) -> None:
        """A sample still being read on a worker, read now (an export draws it)."""
        ask = self._pending
        if ask is None:
            return
        self._reads.cancel()
        self._pending = None
        self._show(ask[0], ask[1], sample_numbers(*ask))

    def _show(self, res, ds, nums) -> None:
        i, why = nums.i, nums.why
        self.current_sample = i
        self.parts = parts = nums.parts
        x, recon, s_part, resid = parts["original"], parts["reconstruction"], parts["part"], parts["residual"]
        is_pcp = s_part is not None
        titles = {"original": f"sample #{i}: {der.short_title(res.method)}, {ds.name}",
                  "reconstruction": "low-rank part L" if is_pcp else "reconstruction",
                  "part": "sparse part S", "residual": "residual X − L − S" if is_pcp else "residual"}
        self.titles = titles
        image = ds.is_image
        self._arrange(["original", "reconstruction"] + (["part"] if is_pcp else []) + ["residual"] if image else [])
        if image:
            shape = ds.image_shape
            lo = float(min(x.min(), recon.min()))
            hi = float(max(x.max(), recon.max()))
            dev = [np.abs(resid).max()] + ([np.abs(s_part).max()] if is_pcp else [])
            m = float(max(max(dev), 1e-12))
            div = palette.diverging_lut()
            for key, v in self.parts.items():
                if v is None:
                    self.images[key].clear()
                    continue
                signed = key in ("part", "residual")
                # A picture wider or taller than Qt draws: shown binned, placed over its pixels.
                pic, pr, pc = fit_picture(v.reshape(shape))
                self.images[key].setImage(pic, levels=(-m, m) if signed else (lo, hi if hi > lo else lo + 1),
                                          lut=div if signed else None)
                if pr.binned or pc.binned:
                    self.images[key].setRect(QRectF(0, 0, shape[1], shape[0]))
                else:
                    self.images[key].resetTransform()
                st.set_title(self.panels[key], titles[key], color=st.AXIS_COLOR, size="10pt")
                # Auto range, so the picture refits when the grid changes.
                self.panels[key].getViewBox().setDefaultPadding(0.02)
                self.panels[key].enableAutoRange()
            # The shared symmetric scale of the signed parts: yellow positive, blue negative.
            self.signed_bar.setLevels((-m, m))
            self.signed_bar.getAxis("right").setLabel("S and residual" if is_pcp else "residual",
                                                      color=st.AXIS_COLOR)
        else:
            contrib = nums.contributions
            signed = is_pcp
            vals = np.asarray(s_part if is_pcp else contrib, dtype=float)
            self.bar_values = vals
            d = vals.size
            top = np.argsort(-np.abs(vals))[:3]
            self.bar_top, self.bar_signed = top, signed
            who = f"{title_of(res.method)} — {ds.name}"
            self.bar_title = (f"{who}, sample #{i}: sparse part S" if signed else f"{who}, sample #{i}: residual e_j²")
            self.bar_extent.set_rect(QRectF(-0.5, min(0.0, float(np.nanmin(vals))), d,
                                            abs(float(np.nanmax(vals)) - min(0.0, float(np.nanmin(vals))))))
            st.style_plot(self.bar_plot, left="S entry" if signed else "e_j²")
            self._draw_bars(bins_for(0, d, bins_limit(self.bar_plot.getViewBox().width() or self.figure.width())))
            self._feature_ticks()
            self.bar_plot.enableAutoRange()
            why += " · largest: " + ", ".join(f"{ds.feature_names[j]} ({fmt(vals[j])})" for j in top)
        self.set_status(f"{title_of(res.method)} · {nums.description} · {why}")
