"""What every result view has: the state it draws, a figure (one GraphicsLayoutWidget, the part
that figure export writes), a row of controls above it and a status line below it."""
from __future__ import annotations

from PySide6.QtWidgets import QHBoxLayout, QLabel, QVBoxLayout, QWidget

from . import _style as st
from ._common import title_of


class BaseView(QWidget):
    """Subclasses set ``name`` (the CLI's view name) and ``title``, and implement
    :meth:`available` (is there anything to draw?) and :meth:`refresh` (draw it)."""

    name = ""
    title = ""
    methods: tuple = ()  # results this view draws, in order of preference

    def __init__(self, state, parent=None):
        super().__init__(parent)
        self.state = state
        self.figure = st.figure_widget()
        self.controls = QHBoxLayout()
        self.controls.setContentsMargins(4, 2, 4, 0)
        self.status = QLabel(" ")
        self.status.setWordWrap(True)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(2)
        lay.addLayout(self.controls)
        lay.addWidget(self.figure, 1)
        lay.addWidget(self.status)
        self._dirty = True

    @classmethod
    def available_in(cls, state) -> bool:
        """Whether ``state`` holds anything this kind of view draws (no view needs to exist)."""
        return any(state.result(m) is not None for m in cls.methods)

    def available(self) -> bool:
        return self.available_in(self.state)

    def available_methods(self) -> list[str]:
        return [m for m in self.methods if self.state.result(m) is not None]

    def result(self):
        """The result picked in the view's method box (``None`` for views that draw several)."""
        box = getattr(self, "method_box", None)
        key = box.key() if box is not None else None
        return self.state.result(key) if key else None

    def fill_method_box(self, first_by_default: bool = True) -> None:
        """Offer the methods with a result, preferring the one chosen in the method panel."""
        avail = self.available_methods()
        cur = self.state.current_method
        default = cur if cur in avail else (avail[0] if first_by_default and avail else None)
        self.method_box.set_items([(title_of(m), m) for m in avail], default=default)

    def refresh(self) -> None:  # pragma: no cover - every view overrides it
        raise NotImplementedError

    def figure_results(self) -> list:
        """The results this view is drawing (what a figure export records as its provenance)."""
        pick = getattr(self, "result", None)
        if callable(pick) and pick() is not None:
            return [pick()]
        return [self.state.result(m) for m in self.available_methods()]

    def set_status(self, text: str) -> None:
        self.status.setText(text or " ")
