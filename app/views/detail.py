"""Sample detail: for image data the selected sample as a picture beside its reconstruction,
its L and S parts (robust PCA) and its residual, the signed ones with their colour bar; for
tables the per-feature residual contributions as bars (which features make this sample an
outlier). The pictures take the rows and columns that show them largest for the space there is."""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtGui import QFont, QFontMetrics
from PySide6.QtWidgets import QToolButton

from .. import palette
from . import _derived as der
from . import _style as st
from ._common import Choice, describe_sample, fmt, labelled, title_of
from .base import BaseView


class DetailView(BaseView):
    name = "detail"
    out_of_core = ("it reconstructs samples from the whole data set (or the whole low-rank part) read "
                   "into memory")
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
        self.panels = {}
        self.images = {}
        for col, key in enumerate(("original", "reconstruction", "part", "residual")):
            p = pg.PlotItem()
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
        self.bar_plot = pg.PlotItem()
        st.style_plot(self.bar_plot)
        self.bars = pg.BarGraphItem(x=[], height=[], width=0.8)
        self.bar_plot.addItem(self.bars)
        self.bar_values = np.zeros(0)
        self.tick_step = 1

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
        for p in (*self.panels.values(), self.bar_plot, self.signed_bar):
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
        widest = max(fm.horizontalAdvance(str(n)) for n in names) + 8
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
        self.bars.setOpts(x=[], height=[])
        self.current_sample = -1

    def _selection_changed(self, sel):
        self._pos = 0
        if self.isVisible() or not self.is_stale():
            self.redraw()

    def _step(self, k):
        sel = self.state.selection
        if sel.size:
            self._pos = (self._pos + k) % sel.size
            self.redraw()

    def _pick_sample(self, res, ds):
        sel = self.state.selection
        if sel.size:
            self._pos = min(self._pos, sel.size - 1)
            return int(sel[self._pos]), f"{self._pos + 1} of {sel.size} selected"
        fl = der.outlier_flags(res)
        score = "spe" if "spe" in res.sample_scores else res.primary_score
        s = np.asarray(res.sample_scores[score], dtype=float) if score else None
        if fl is not None and fl[0].any():
            cand = np.flatnonzero(fl[0])
            i = int(cand[np.argmax(s[cand])]) if s is not None else int(cand[0])
            return i, "nothing selected: showing the flagged sample with the highest " + (score or "score")
        if s is not None:
            return int(np.argmax(s)), f"nothing selected: showing the highest {score}"
        return 0, "nothing selected: showing sample 0"

    def redraw(self, *_):
        res, ds = self.result(), self.state.dataset
        if res is None or ds is None:
            return
        self.drawn = res
        i, why = self._pick_sample(res, ds)
        self.current_sample = i
        x = der.dense_rows(ds, [i])[0]   # only the row shown, of sparse data too
        recon = der.reconstruction(res, ds, [i])[0]
        is_pcp = "sparse" in res.arrays
        s_part = np.asarray(res.arrays["sparse"])[i] if is_pcp else None
        resid = x - recon - (s_part if is_pcp else 0.0)
        self.parts = {"original": x, "reconstruction": recon, "part": s_part, "residual": resid}
        # The figure says whose sample it is (an exported picture has no window around it).
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
                self.images[key].setImage(v.reshape(shape), levels=(-m, m) if signed else (lo, hi if hi > lo else lo + 1),
                                          lut=div if signed else None)
                st.set_title(self.panels[key], titles[key], color=st.AXIS_COLOR, size="10pt")
                # Auto range, so the picture refits when the grid changes.
                self.panels[key].getViewBox().setDefaultPadding(0.02)
                self.panels[key].enableAutoRange()
            # The shared symmetric scale of the signed parts: yellow positive, blue negative.
            self.signed_bar.setLevels((-m, m))
            self.signed_bar.getAxis("right").setLabel("S and residual" if is_pcp else "residual",
                                                      color=st.AXIS_COLOR)
        else:
            contrib = der.contributions(res, ds, i)
            signed = is_pcp
            vals = np.asarray(s_part if is_pcp else contrib, dtype=float)
            self.bar_values = vals
            d = vals.size
            top = np.argsort(-np.abs(vals))[:3]
            colours = [st.brush(st.category_color(5) if j in set(top.tolist()) else st.category_color(0)) for j in range(d)]
            self.bars.setOpts(x=np.arange(d), height=vals, width=0.8, brushes=colours, pen=None)
            self._feature_ticks()
            who = f"{title_of(res.method)} — {ds.name}"
            st.style_plot(self.bar_plot, title=(f"{who}, sample #{i}: sparse part S per feature" if signed else
                                                f"{who}, sample #{i}: residual e_j² per feature (sum = SPE)"),
                          left="S entry" if signed else "e_j²", bottom="feature")
            self.bar_plot.enableAutoRange()
            why += " · largest: " + ", ".join(f"{ds.feature_names[j]} ({fmt(vals[j])})" for j in top)
        fl = der.outlier_flags(res)
        self.set_status(f"{title_of(res.method)} · " + describe_sample(ds, i, res, fl[0] if fl else None)
                        + " · " + why)
