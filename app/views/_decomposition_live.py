"""The L + S view's drawing of a run in progress (Online robust PCA): the frames a streaming fit
has finished, labelled provisional, until the run ends in any way. A part of
:class:`.decomposition.DecompositionView`, which uses its widgets (slider, pictures, live label) and
its frame drawing; kept apart because a run in progress has a life of its own (it starts, follows
the newest frame, and goes), while the rest of the view draws stored results.
"""
from __future__ import annotations

import numpy as np
from PySide6.QtWidgets import QLabel

from ._lazy_frames import FrameGone, LiveFrames


class LiveRun:
    """Mixin of :class:`.decomposition.DecompositionView`: ``show_live`` and ``end_live``."""

    def _init_live(self) -> None:
        # Says that the pictures are a run in progress (hidden otherwise).
        self.live_label = QLabel("", objectName="live_label", visible=False)
        self.live_label.setStyleSheet("QLabel { background: #fff3cd; color: #664d03; border: 1px solid #e0c060;"
                                      " border-radius: 3px; padding: 1px 6px; }")
        font = self.live_label.font()
        font.setBold(True)   # in the font, not the style sheet: the size hint then fits the text
        self.live_label.setFont(font)
        self._live: LiveFrames | None = None
        self._live_key = None
        self._live_title = ""

    @property
    def live(self) -> bool:
        """Whether the pictures are a run in progress (provisional)."""
        return self._live is not None

    @property
    def live_key(self):
        """The ``key`` of the run drawn live (None: none)."""
        return self._live_key

    def available(self) -> bool:
        return self._live is not None or super().available()

    def figure_results(self) -> list:
        if self._live is not None:
            raise ValueError(f"the L + S view shows {self._live_title} while it runs (provisional frames); "
                             f"export its figure when the run is done")
        return super().figure_results()

    def show_live(self, key, title: str, frames) -> None:
        """Draw the frames a streaming run has finished (``frames``: an
        :class:`app.fit_process.FramesSoFar`), labelled provisional. ``key`` tells runs apart: a
        new one starts over. Only image stacks are drawn live (tables wait for the result)."""
        ds = self.state.dataset
        if ds is None or not ds.is_image or frames.n_frames != ds.n_samples or frames.stop < 1:
            return
        new = self._live is None or self._live_key != key
        if new:
            self.pause()
            self.zoom.cancel()
            self._live, self._live_key, self._live_title = LiveFrames(frames.n_frames, frames.n_features), key, title
        at_end = new or self.frame_slider.value() >= self.frame_slider.maximum()
        try:
            self._live.update(frames)
        except FrameGone:   # a late message of a run cancelled a moment ago: nothing to draw
            if new:
                self._live = self._live_key = None
            return
        if new:
            self._start_live(ds)
        n = self._live.n_done
        self.frame_slider.blockSignals(True)
        self.frame_slider.setRange(0, n - 1)
        if at_end:   # following the newest frame, unless the user went back to look at one
            self.frame_slider.setValue(n - 1)
        self.frame_slider.blockSignals(False)
        self.live_label.setText(f"PROVISIONAL · frames 1–{n:,} of {self._live.n_frames:,} processed")
        self.live_label.setToolTip(f"{title} is running: the pictures show the frames it has finished. Each is "
                                   f"final once its batch is done; the result is complete when the run is.")
        self._show_frame()

    def _start_live(self, ds) -> None:
        self._res = None
        self.drawn = None          # no stored result is drawn
        self._dirty = True         # ... and the stored ones are drawn again when the run ends
        self.mode = "image"
        self.X = self._frame_stack(ds)
        self.L, self.S = self._live.rows("low_rank"), self._live.rows("sparse")
        probe = np.unique(np.linspace(0, self._live.n_done - 1, min(self._live.n_done, 32)).astype(np.int64))
        self._set_scales(*(np.stack([a[i] for i in probe]) for a in (self.X, self.L, self.S)))
        # Rows are processed in row order, and that is the order the slider follows here.
        self._set_order(np.arange(ds.n_samples))
        self.convergence.clear()
        self.method_box.setEnabled(False)
        self.conv_button.setEnabled(False)   # a streaming run's history comes with its result
        self._show_frame_controls(True)
        self.pictures.set_titles(provisional=True)
        self.pictures.set_mode(image=True)
        self.live_label.setVisible(True)
        self.fit_layout()
        self.pictures.autorange()

    def end_live(self) -> None:
        """The run ended (finished, failed, cancelled or replaced): its provisional pictures go.
        The view draws stored results at its next refresh; it is left empty until then."""
        if self._live is None:
            return
        self._live = self._live_key = None
        self.pause()
        self.live_label.setVisible(False)
        self.live_label.setText("")
        self.method_box.setEnabled(True)
        self.conv_button.setEnabled(True)
        self.pictures.set_titles()
        self.pictures.clear()
        self.frame_label.setText("")
        self.set_status(" ")
        self.invalidate()
