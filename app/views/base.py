"""What every result view has: the state it draws, a figure (one GraphicsLayoutWidget, the part
that figure export writes), a row of controls above it and a status line below it.

Which methods feed a view is the registry's declaration (:func:`robustcore.methods.methods_for_view`),
never a list of the view's own. A view follows the method the user is looking at: when the
Method panel's method changes, or a new result of it arrives, the view's result chooser moves to
that method's latest result (if the view can draw it). The user may pick another result in the
chooser; it stays until one of those two events. ``drawn`` is the result the figure shows, so
the title, the chooser and the legend can be checked against it.
"""
from __future__ import annotations

import traceback

from PySide6.QtCore import QEvent, Qt
from PySide6.QtWidgets import QLabel, QSizePolicy, QVBoxLayout, QWidget
from shiboken6 import isValid

from robustcore.methods import methods_for_view, view_requirement

from . import _style as st
from ._common import title_of
from ._flow import FlowLayout
from ._legend_rows import level_rows


class BaseView(QWidget):
    """Subclasses set ``name`` (the CLI's view name) and ``title``, and implement
    :meth:`refresh` (draw what the state holds); :meth:`missing` says what the view lacks."""

    name = ""
    title = ""
    methods: tuple = ()  # results this view draws: set from the registry for every subclass
    # Why the view cannot draw data opened out of core (None: it can). The window and the
    # command line both give this reason.
    out_of_core: str | None = None
    # Whether the view draws a result's subspace (a result without one cannot be drawn here).
    needs_subspace = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.name:
            cls.methods = methods_for_view(cls.name)

    def __init__(self, state, parent=None):
        super().__init__(parent)
        self.state = state
        self.figure = st.figure_widget()
        self.controls = FlowLayout()
        self.controls.setContentsMargins(4, 2, 4, 0)
        self.status = QLabel(" ")
        self.status.setWordWrap(True)
        # A long status wraps instead of widening the window.
        self.status.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(2)
        lay.addLayout(self.controls)
        lay.addWidget(self.figure, 1)
        lay.addWidget(self.status)
        self.drawn = None  # the result the figure shows (None: nothing, or several)
        self._dirty = True
        self._legends = []  # (legend, share of the figure's width it may use)
        # The figure changes size without the view doing so (controls wrapping onto more rows).
        self.figure.installEventFilter(self)

    # -- layout -------------------------------------------------------------------------------
    def add_legend(self, legend, share: float = 1.0):
        """Register a legend whose columns follow the figure's width (see _style.fit_legend)."""
        self._legends.append((legend, share))
        return legend

    def fit_layout(self) -> None:
        """Adapt the figure to its size: legend columns and rows level with their symbols here;
        views with pictures also choose how many per row. Called on every resize and after
        every redraw."""
        w = max(self.figure.width() - 30, 100)
        self._legends = [(legend, share) for legend, share in self._legends if isValid(legend)]
        for legend, share in self._legends:
            st.fit_legend(legend, share * w)
        if not self._legends:
            return
        # Only where the figure is too narrow for its legends' entries on one line each do they
        # wrap: every line costs the plots above some height. (Their least width is stale
        # until their layout is invalidated.)
        lay = self.figure.ci.layout
        lay.invalidate()
        if self._narrowest() > self.figure.width():
            for legend, share in self._legends:
                st.wrap_legend(legend, share * w)
            lay.invalidate()
        for legend, _share in self._legends:   # each label level with its symbol (_legend_rows)
            level_rows(legend)
        if self.figure.ci.geometry() != self.figure.range:
            # Qt had widened the layout to its former least width: it stays so unless set again
            self.figure.ci.setGeometry(self.figure.range)

    def _narrowest(self) -> float:
        """The least width the figure's items can be laid out in."""
        return self.figure.ci.effectiveSizeHint(Qt.SizeHint.MinimumSize).width()

    def eventFilter(self, obj, event) -> bool:
        if obj is self.figure and event.type() == QEvent.Type.Resize:
            # An exception leaving an event filter does not reach Python: PySide6 6.11 stores it
            # for later and crashed doing so (gdb: PepException_GetArgs, while a tab was shown in
            # a new data set's clearing). The layout is a matter of looks: say what failed, go on.
            try:
                self.fit_layout()
            except Exception:  # noqa: BLE001 - see above
                traceback.print_exc()
        return super().eventFilter(obj, event)

    # -- what there is to draw ------------------------------------------------------------------
    @classmethod
    def missing(cls, state, method: str | None = None) -> str | None:
        """Why this view has nothing to draw for ``state`` (None: it has), or nothing for the
        result of ``method``."""
        if state.dataset is None:
            return "no data set is loaded"
        if cls.out_of_core is not None and state.dataset.is_lazy:
            return f"not available for data opened out of core: {cls.out_of_core}"
        if method is not None:
            if method not in cls.methods:
                return f"{method} does not feed this view"
            if state.result(method) is None:
                return f"{method} has no result"
            return cls.cannot_draw(state.result(method))
        usable = [m for m in cls.methods if state.result(m) is not None and cls.cannot_draw(state.result(m)) is None]
        return view_requirement(cls.name, usable)

    @classmethod
    def cannot_draw(cls, result) -> str | None:
        """Why this view can draw no meaningful picture of ``result`` (None: it can)."""
        if cls.needs_subspace and result.subspace is None:
            d = result.decomposition
            why = (f"{result.no_outlier_map}" if result.no_outlier_map else "the result has no subspace")
            if d is not None and d.degenerate:
                why += f" ({d.degenerate})"
            return why
        return None

    @classmethod
    def available_in(cls, state) -> bool:
        """Whether ``state`` holds anything this kind of view draws (no view needs to exist)."""
        return cls.missing(state) is None

    @classmethod
    def could_draw(cls, state, method: str) -> bool:
        """Whether this view will have something to draw once ``method``'s result comes (that
        result unknown yet): worth building ahead (ResultViews.prepare)."""
        ds = state.dataset
        if ds is None or (cls.out_of_core is not None and ds.is_lazy):
            return False
        have = {m for m in cls.methods if state.result(m) is not None} | {method}
        return view_requirement(cls.name, have) is None

    def available(self) -> bool:
        return self.available_in(self.state)

    def available_methods(self) -> list[str]:
        return [m for m in self.methods
                if self.state.result(m) is not None and self.cannot_draw(self.state.result(m)) is None]

    # -- invalidation ---------------------------------------------------------------------------
    def invalidate(self) -> None:
        """The state changed in a way this view draws: redraw at the next :meth:`ensure_fresh`."""
        self._dirty = True

    def is_stale(self) -> bool:
        return self._dirty

    def ensure_fresh(self, strict: bool = True) -> None:
        """Redraw if invalidated. From signal handlers (``strict=False``) a failure is shown in
        the status line instead of escaping into Qt's event loop (where it would be lost)."""
        self.finish_building()
        if not (self._dirty and self.available()):
            return
        self._dirty = False
        try:
            self.refresh()
        except Exception as exc:  # noqa: BLE001 - any drawing bug: keep the window alive, say so
            self._dirty = True
            if strict:
                raise
            traceback.print_exc()
            self.set_status(f"This view could not be drawn: {type(exc).__name__}: {exc}")

    # -- the result chooser ---------------------------------------------------------------------
    def result(self):
        """The result picked in the view's method box (``None`` for views that draw several)."""
        box = getattr(self, "method_box", None)
        key = box.key() if box is not None else None
        return self.state.result(key) if key else None

    def fill_method_box(self) -> None:
        """Offer the methods with a result; select the Method panel's method when this view draws
        it (the view follows what the user is looking at), else keep the choice."""
        avail = self.available_methods()
        cur = self.state.current_method
        kept = self.method_box.key()
        target = cur if cur in avail else kept if kept in avail else (avail[0] if avail else None)
        self.method_box.set_items([(title_of(m), m) for m in avail], default=target, keep=False)

    def build_step(self) -> bool:
        """Do one deferred piece of the view's construction, if any is left (True: one was
        done). ResultViews calls it in idle turns after building the view, so neither the
        construction nor the first drawing pays for it."""
        return False

    def finish_building(self) -> None:
        """Do every deferred piece of the construction left (before drawing or being read)."""
        while self.build_step():
            pass

    def refresh(self) -> None:  # pragma: no cover - every view overrides it
        raise NotImplementedError

    def figure_results(self) -> list:
        """The results this view is drawing (what a figure export records as its provenance)."""
        if self.drawn is not None:
            return [self.drawn]
        return [self.state.result(m) for m in self.available_methods()]

    def set_status(self, text: str) -> None:
        self.status.setText(text or " ")
