"""L/S viewer for robust PCA: original | low-rank L | sparse S | foreground mask (|S| above a
threshold the user sets), with a frame slider and play/pause for image stacks and video, or
heatmaps of X, L and S for tables; beneath, the solver's convergence (relative residual and
rank of L per iteration), which the Convergence button hides.

Colour scales are fixed over the whole stack (X and L share one grey scale, S a symmetric
diverging one with its colour bar), so a frame's brightness never changes because its neighbours
did. The mask is drawn over the faded frame, so a few foreground pixels read as a shape. The
pictures are laid out in the rows and columns that show them largest for the space there is
(four in a row on a wide screen, two by two in a narrow window), with the colours and mask of
the exported video (:mod:`app.video`, :mod:`app.palette`).

While a streaming fit runs (Online robust PCA), the view draws the frames it has finished so far
(:meth:`DecompositionView.show_live`), labelled provisional; the slider reaches only those
frames and follows the newest while it is at the end. Each frame is final once its batch is done,
so what is drawn then is what the finished run holds. When the run ends in any way the live
pictures go (:meth:`DecompositionView.end_live`) and the view draws stored results as usual.

The pictures themselves are :class:`._pictures.PictureGrid`'s and the convergence plots
:class:`._convergence.ConvergencePlots`'; this view decides what they show (which result, which
frame, the scales) and where they go. The drawing of a run in progress is
:class:`._decomposition_live.LiveRun`'s, a part of this view.
"""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QDoubleSpinBox, QLabel, QSlider, QToolButton

from .. import palette
from . import _style as st
from ._cloud import mode_for
from ._common import Choice, fmt, labelled
from ._convergence import MIN_HEIGHT, ConvergencePlots
from ._decomposition_live import LiveRun
from ._lazy_frames import FrameGone
from ._pictures import PANELS, PictureGrid
from ._table_heatmaps import TableHeatmaps
from .base import BaseView

_MIN_PICTURE = 120    # pixels: below this a picture is useless; the convergence plots give way
_ROOMY_PICTURE = 240  # pictures at least this wide leave room for the convergence plots
_TITLE = 34           # height of a picture's title line


def scales_of(X, L, S, table: bool) -> tuple:
    """(grey levels of X and L, symmetric levels of S) from the frames given (all, or a probe of
    a stack on disk, of a run in progress, or of a table's rows in its per-column units of
    _table_heatmaps.column_units: grey 0 to 1 then). The default mask threshold is the run's own
    if it has one (``palette.mask_threshold``; frames in data units only)."""
    lo, hi = (0.0, 1.0) if table else (float(min(X.min(), L.min())), float(max(X.max(), L.max())))
    smax = float(np.percentile(np.abs(S), 99.5)) if S.size else 1.0
    if smax <= 0:
        smax = float(np.abs(S).max()) or 1.0
    return (lo, hi if hi > lo else lo + 1), (-smax, smax)


def _scales(X, L, S, table: bool, result=None) -> tuple:
    """(grey levels, levels of S, default mask threshold) of :func:`scales_of` and
    ``palette.mask_threshold`` (no Qt: a large table's are computed on a worker)."""
    gray, s = scales_of(X, L, S, table)
    return gray, s, palette.mask_threshold(S, result)


class DecompositionView(LiveRun, BaseView):
    name = "decomposition"
    title = "L + S"

    def __init__(self, state, parent=None):
        super().__init__(state, parent)
        self.play_button = QToolButton(text="Play", checkable=True, toolTip="Play the frames in time order")
        self.frame_slider = QSlider(Qt.Orientation.Horizontal)
        self.frame_slider.setMinimumWidth(240)
        self.frame_label = QLabel("")
        self._init_live()
        self.threshold_box = QDoubleSpinBox(decimals=3, maximum=1e12, singleStep=1.0, keyboardTracking=False,
                                            toolTip="Pixels with |S| above this value form the foreground mask")
        self.method_box = Choice()
        self.controls.addWidget(labelled("Result", self.method_box))
        self.controls.addWidget(self.method_box)
        self.method_box.currentIndexChanged.connect(lambda _i: self._draw_result())
        self.controls.addWidget(self.play_button)
        self.frame_caption = labelled("Frame", self.frame_slider)
        self.controls.addWidget(self.frame_caption)
        self.controls.addWidget(self.frame_slider, 1)
        self.controls.addWidget(self.frame_label)
        self.controls.addWidget(labelled("Mask threshold |S| >", self.threshold_box))
        self.controls.addWidget(self.threshold_box)
        self.conv_button = QToolButton(text="Convergence", checkable=True, checked=False,
                                       toolTip="Show the solver's convergence beneath the pictures")
        self._conv_chosen = False  # the user pressed the button: their choice stands
        self.controls.addWidget(self.conv_button)
        self.controls.addWidget(self.live_label)
        self.timer = QTimer(self, interval=100)
        self.timer.timeout.connect(self._next_frame)
        self.play_button.toggled.connect(self._toggle_play)
        self.frame_slider.valueChanged.connect(self._show_frame)
        self.threshold_box.valueChanged.connect(lambda _v: self._show_frame())
        self.conv_button.toggled.connect(self._conv_toggled)
        state.selectionChanged.connect(self._follow_selection)
        self.mode = None
        self._res = None
        self.order = np.zeros(0, dtype=np.int64)
        lay = self.figure.ci
        self.pics = lay.addLayout(row=0, col=0)
        # The first picture now, the others, the colour bars and the convergence plots one per
        # idle turn after the view (build_step), or at its first drawing: all at once they held
        # the GUI thread 220-290 ms (issue 33.2).
        self.pictures = PictureGrid(self.pics, self._image_clicked, self._hovered, ahead=True)
        self.panels, self.images = self.pictures.panels, self.pictures.images
        # A table's heatmaps follow the zoom of the (linked) panels: the first one's range.
        self.tables = TableHeatmaps(self.pictures, self.panels[PANELS[0][0]].getViewBox(), self.threshold,
                                    self._table_status, self)
        self.zoom = self.tables.zoom
        # The convergence plots live in a layout of their own: as cells of the picture grid,
        # their different axis widths made the picture columns unequal.
        self.bottom = self.convergence = None

    @property
    def s_bar(self):
        return self.pictures.s_bar

    def build_step(self) -> bool:
        if self.pictures.build_step():
            return True
        if self.convergence is None:
            self.bottom = self.figure.ci.addLayout(row=1, col=0)
            self.convergence = ConvergencePlots(self.bottom, ahead=True)
            return True
        if self.convergence.build_step():
            return True
        if self.pictures.grid is None:
            # Laid out for the data set's kind now, not in the turn of the first drawing.
            ds = self.state.dataset
            self.pictures.set_mode(ds is None or ds.is_image)
            self.fit_layout()   # (arranges the pictures)
            return True
        return False

    # -- layout ---------------------------------------------------------------------------------

    def _conv_toggled(self, _on) -> None:
        self._conv_chosen = True
        self.fit_layout()

    def fit_layout(self) -> None:
        super().fit_layout()
        if self.convergence is None or self.pictures.gray_bar is None:
            return   # still being built (build_step)
        w, h = self.figure.width(), self.figure.height()
        ds = self.state.dataset
        hw = (ds.image_shape[0] / ds.image_shape[1] if self.mode == "image" and ds is not None and ds.is_image
              else 0.75)
        conv_h = max(MIN_HEIGHT, min(200.0, 0.28 * h))   # (the pictures give way below)
        if not self._conv_chosen:
            # Convergence is shown by default only where the pictures stay large beside it.
            rows, cols = st.best_grid(len(PANELS), hw, w - 70, h - conv_h, title=_TITLE)
            big = min((w - 70) / cols, ((h - conv_h) / rows - _TITLE) / max(hw, 1e-6)) >= _ROOMY_PICTURE
            self.conv_button.blockSignals(True)
            self.conv_button.setChecked(big)
            self.conv_button.blockSignals(False)
        show_conv = self.conv_button.isChecked() and self._res is not None
        rows, cols = st.best_grid(len(PANELS), hw, w - 70, h - (conv_h if show_conv else 0), title=_TITLE)
        # Convergence gives way when the pictures would be too small to see anything.
        pic = min((w - 70) / cols, ((h - conv_h) / rows - _TITLE) / max(hw, 1e-6))
        if show_conv and pic < _MIN_PICTURE:
            show_conv = False
            rows, cols = st.best_grid(len(PANELS), hw, w - 70, h, title=_TITLE)
        self.pictures.arrange(rows, cols)
        top, bottom = self.figure.ci.layout.getContentsMargins()[1::2]
        self.pictures.balance_rows(h - top - bottom - (conv_h + self.figure.ci.layout.verticalSpacing()
                                                       if show_conv else 0))
        # A hidden item would still hold its row: take the convergence plots out of the layout.
        lay = self.figure.ci
        if show_conv and self.bottom not in lay.items:
            lay.addItem(self.bottom, row=1, col=0)
        elif not show_conv and self.bottom in lay.items:
            lay.removeItem(self.bottom)
        self.bottom.setVisible(show_conv)
        if show_conv:
            self.bottom.setMaximumHeight(conv_h)
            self.bottom.setMinimumHeight(conv_h)
        lay.layout.setRowStretchFactor(1, 0)

    # -- data -----------------------------------------------------------------------------
    def refresh(self):
        if self._live is not None:
            self._dirty = True   # stored results are drawn again when the run ends
            return
        self.fill_method_box()
        self._draw_result()

    def _set_scales(self, X, L, S, result=None) -> None:
        """The scales of :func:`scales_of` set on the view."""
        ds = self.state.dataset
        self._apply_scales(_scales(X, L, S, ds is not None and not ds.is_image, result))

    def _apply_scales(self, scales) -> None:
        """Grey levels, levels of S and the mask's default threshold (see :func:`_scales`)."""
        self.gray_levels, self.s_levels, threshold = scales
        self.threshold_box.blockSignals(True)
        self.threshold_box.setSingleStep(self.s_levels[1] / 100)
        self.threshold_box.setValue(threshold)
        self.threshold_box.blockSignals(False)
        self.s_bar.setLevels(self.s_levels)

    def _set_order(self, order) -> None:
        """Slider position k shows sample ``order[k]``."""
        self.order = np.asarray(order, dtype=np.int64)
        self.position = np.empty(self.order.size, dtype=np.int64)
        self.position[self.order] = np.arange(self.order.size)

    def _frame_stack(self, ds):
        """The original frames: in memory, or read one at a time from a source on disk."""
        if ds.is_lazy:
            from ._lazy_frames import FrameRows
            return FrameRows(ds.source.frame, ds.n_samples)
        return ds.dense()

    def _draw_result(self):
        res, ds = self.result(), self.state.dataset
        if res is None or ds is None:
            return
        self._res = res
        if ds.is_lazy and ds.is_image:   # frames on disk, results maybe in a Zarr store
            from ._lazy_frames import lazy_stacks
            self.X, self.L, self.S, probe = lazy_stacks(ds, res)
            X, L, S = (np.stack([a[i] for i in probe]) for a in (self.X, self.L, self.S))
        elif not ds.is_image:
            # Each column on its own range, S in units of it (one column of large numbers drew
            # the rest black); binned from these (see _table_heatmaps), never copied whole.
            # The scales come from rows of the table (a table's S is per column: no run's own
            # threshold), computed with them, on a worker for a large table.
            table = (ds.source.array if ds.is_lazy else ds.dense(), res.arrays["low_rank"], res.arrays["sparse"])
            self.tables.open(table, lambda scales: self._show_result(res, ds, scales), self.set_status,
                             lambda X, L, S: _scales(X, L, S, True))
            return
        else:
            X, L, S = ds.dense(), np.asarray(res.arrays["low_rank"]), np.asarray(res.arrays["sparse"])
            self.X, self.L, self.S = X, L, S
        self._show_result(res, ds, _scales(X, L, S, False, res))

    def draw_now(self) -> None:
        """A table's overview still being made on a worker, made now (an export draws it)."""
        self.tables.finish()

    def _show_result(self, res, ds, scales) -> None:
        """Draw ``res`` once its frames (or a table's rows that set its scales) are in, with
        the ``scales`` of :func:`_scales`."""
        if res is not self.result() or ds is not self.state.dataset:
            return   # another result or data set came meanwhile
        if not ds.is_image:
            self.X, self.L, self.S = self.tables.X, self.tables.L, self.tables.S
        self._apply_scales(scales)
        self.mode = "image" if ds.is_image else "table"
        if self.mode == "image":
            self.zoom.cancel()
        n = ds.n_samples
        self._set_order(np.argsort(ds.frame_order, kind="stable") if ds.frame_order is not None
                        else np.arange(n))
        # (converged None: a streaming fit, one point per batch of frames)
        conv = res.decomposition.converged if res.decomposition is not None else None
        self.convergence.show(res.arrays["history_residual"], res.arrays["history_rank"], res.params.get("tol"),
                              conv)
        self.pictures.set_mode(self.mode == "image")
        self.pictures.set_features(None if ds.is_image else ds.feature_names)
        self._show_frame_controls(self.mode == "image")
        self.panels["mask"].setVisible(True)
        self.frame_slider.blockSignals(True)
        self.frame_slider.setRange(0, n - 1)
        sel = self.state.selection
        self.frame_slider.setValue(int(self.position[sel[0]]) if sel.size else 0)
        self.frame_slider.blockSignals(False)
        if self.mode == "table":
            self.tables.draw(self.gray_levels, self.s_levels)
            self.pictures.mark_rows(self.state.selection)
        self._show_frame()
        self.drawn = res
        self.fit_layout()
        self.pictures.autorange()

    def clear(self):
        self.zoom.cancel()
        self.tables.cancel()
        self.end_live()
        self.pause()
        self._res = None
        self.pictures.clear()
        if self.convergence is not None:
            self.convergence.clear()

    # -- frames ---------------------------------------------------------------------------
    def _show_frame_controls(self, on: bool) -> None:
        """The frame slider, Play and the frame's name: for image stacks and videos only (a
        table's L + S is drawn whole, with nothing to step through)."""
        for w in (self.play_button, self.frame_caption, self.frame_slider, self.frame_label):
            w.setVisible(on)
            w.setEnabled(on)

    @property
    def current_sample(self) -> int:
        return int(self.order[self.frame_slider.value()]) if self.order.size else -1

    def set_frame(self, k: int) -> None:
        """Show the k-th frame in time order."""
        self.frame_slider.setValue(int(k))

    def threshold(self) -> float:
        return float(self.threshold_box.value())

    def set_threshold(self, t: float) -> None:
        self.threshold_box.setValue(float(t))

    def mask_of(self, i: int) -> np.ndarray:
        return np.abs(self.S[i]) > self.threshold()

    def _show_frame(self, *_):
        if self._res is None and self._live is None:
            return
        i = self.current_sample
        ds = self.state.dataset
        name = f"frame {i}" if ds.sample_ids is None else ds.sample_ids[i]
        live = self._live is not None
        of = self._live.n_done if live else len(self.order)   # the live label says "of N processed"
        self.frame_label.setText(f"{name} ({self.frame_slider.value() + 1} of {of})")
        if self.mode != "image":
            self.tables.redraw_masks()
            self._table_status()
            return
        shape = ds.image_shape
        try:
            x, s_i, l_i = self.X[i], self.S[i], self.L[i]   # one read each when the stacks are on disk
        except FrameGone as exc:   # cancelled a moment ago: the view drops the run when that reaches it
            self.pictures.clear_results()
            self.set_status(str(exc))
            return
        frac = self.pictures.draw_frame(shape, x, l_i, s_i, self.gray_levels, self.s_levels, self.threshold(),
                                        provisional=live)
        sel = "selected" if i in set(self.state.selection.tolist()) else "click a picture to select this frame"
        head = (f"provisional: {self._live_title} is running, frame {self.frame_slider.value() + 1} of "
                f"{self._live.n_done} processed so far ({self._live.n_frames} in all)" if live else
                f"frame {self.frame_slider.value() + 1} of {len(self.order)}")
        self.set_status(f"{head} · sample #{i} · mask: {100 * frac:.1f}% of pixels · "
                        f"‖S‖₁ of this frame {fmt(np.abs(s_i).sum())} · {sel}")

    def _table_status(self) -> None:
        text = self.tables.status()
        if text:
            self.set_status(text)

    def _image_clicked(self, pos, modifiers):
        mode = mode_for(modifiers)
        if self.mode == "image":
            self.state.set_selection([self.current_sample], mode)
            return
        rows = self.tables.rows_at(pos)   # a bin selects the samples it holds
        if rows is not None:
            self.state.set_selection(rows, mode)

    def _hovered(self, pos) -> None:
        if self.mode != "table":
            return
        text = self.tables.describe_at(pos, self.state.dataset)
        if text:
            self.set_status(text)

    def _follow_selection(self, sel):
        if self._res is None and self._live is None:
            return
        if self._live is not None:
            sel = sel[sel < self._live.n_done]   # frames not processed yet cannot be shown
        if self.mode == "table":
            self.pictures.mark_rows(self.state.selection)
            return
        if sel.size and not self.timer.isActive() and self.current_sample not in set(sel.tolist()):
            self.frame_slider.setValue(int(self.position[sel[0]]))
        else:
            self._show_frame()

    # -- playback -------------------------------------------------------------------------
    def play(self):
        self.play_button.setChecked(True)

    def pause(self):
        self.play_button.setChecked(False)

    def _toggle_play(self, on):
        if on:
            self.timer.start()
            self.play_button.setText("Pause")
        else:
            self.timer.stop()
            self.play_button.setText("Play")

    def _next_frame(self):
        n = self.frame_slider.maximum() + 1
        self.frame_slider.setValue((self.frame_slider.value() + 1) % max(n, 1))
