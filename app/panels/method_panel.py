"""Method panel: choose a method from the registry, edit its parameters, Run / Cancel, progress.

The panel only edits and displays; the main window decides what Run does. One ``ParamForm`` is
kept per method, so switching methods back and forth keeps the user's edits.
"""
from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QComboBox, QFrame, QHBoxLayout, QLabel, QProgressBar, QPushButton,
                               QScrollArea, QSizePolicy, QStackedWidget, QToolButton, QVBoxLayout,
                               QWidget)

from .param_form import ParamForm

__all__ = ["MethodPanel"]

PROGRESS_STEPS = 1000


class MethodPanel(QWidget):
    """Signals: methodChanged(str), helpRequested(str), formCreated(str), runRequested(),
    cancelRequested(), paramsChanged(str).

    A method's form is built (and its estimator imported) the first time the method is shown,
    so opening the window does not import every estimator; ``formCreated`` lets the window fill
    a new form with the user's saved values.
    """

    methodChanged = Signal(str)
    helpRequested = Signal(str)
    formCreated = Signal(str)
    runRequested = Signal()
    cancelRequested = Signal()
    paramsChanged = Signal(str)

    def __init__(self, methods: dict, parent=None):
        super().__init__(parent)
        self.methods = dict(methods)
        self._forms: dict[str, ParamForm] = {}
        self._unavailable: dict[str, str] = {}
        self._busy = False
        self._blocker: str | None = None  # reason from outside the form (no data, no labels)
        self._shape: tuple[int, int] | None = None  # the loaded data's, which every form checks against

        self.combo = QComboBox()
        self.combo.setObjectName("method_combo")
        self.combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.combo.setMinimumContentsLength(16)
        for name, m in self.methods.items():
            self.combo.addItem(m.title, name)
            idx = self.combo.count() - 1
            self.combo.setItemData(idx, m.description, Qt.ItemDataRole.ToolTipRole)

        self.description = QLabel()
        self.description.setWordWrap(True)
        self.description.setObjectName("method_description")
        self.description.setStyleSheet("color: #555;")
        self.description.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        self.stack = QStackedWidget()
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setWidget(self.stack)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.scroll = scroll

        self.run_button = QPushButton("Run")
        self.run_button.setObjectName("run_button")
        self.run_button.setDefault(True)
        self.run_button.clicked.connect(self.runRequested)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setObjectName("cancel_button")
        self.cancel_button.setEnabled(False)
        self.cancel_button.clicked.connect(self.cancelRequested)

        self.progress = QProgressBar()
        self.progress.setRange(0, PROGRESS_STEPS)
        self.progress.setValue(0)
        self.progress.setTextVisible(True)
        self.progress.setFormat("")
        self.status = QLabel("Not run yet")
        self.status.setObjectName("run_status")
        self.status.setWordWrap(True)
        self.status.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.block_label = QLabel()
        self.block_label.setObjectName("run_blocked")
        self.block_label.setWordWrap(True)
        self.block_label.setStyleSheet("color: #b03a2e;")
        self.block_label.setVisible(False)
        # A warning about the run in flight (its result will be discarded): a line of its own,
        # so the progress messages that follow every tenth of a second never overwrite it.
        self.warning = QLabel()
        self.warning.setObjectName("run_warning")
        self.warning.setWordWrap(True)
        self.warning.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.warning.setStyleSheet("color: #9a6700;")
        self.warning.setVisible(False)

        self.help_button = QToolButton(text="Help")
        self.help_button.setObjectName("method_help_button")
        self.help_button.setToolTip("What this method does, when to use it, what its parameters mean (F1)")
        self.help_button.clicked.connect(lambda: self.method_name() and self.helpRequested.emit(self.method_name()))
        top = QHBoxLayout()
        top.addWidget(QLabel("Method"))
        top.addWidget(self.combo, 1)
        top.addWidget(self.help_button)
        buttons = QHBoxLayout()
        buttons.addWidget(self.run_button, 1)
        buttons.addWidget(self.cancel_button, 1)

        lay = QVBoxLayout(self)
        lay.addLayout(top)
        lay.addWidget(self.description)
        lay.addWidget(self.scroll, 1)
        lay.addWidget(self.block_label)
        lay.addLayout(buttons)
        lay.addWidget(self.progress)
        lay.addWidget(self.status)
        lay.addWidget(self.warning)

        self.combo.currentIndexChanged.connect(self._on_combo)
        self._on_combo()

    # -- methods and forms ----------------------------------------------------------------------
    def method_name(self) -> str | None:
        return self.combo.currentData()

    def method(self):
        name = self.method_name()
        return self.methods.get(name) if name else None

    def set_method(self, name: str) -> bool:
        idx = self.combo.findData(name)
        if idx < 0 or self.form(name) is None:
            return False
        self.combo.setCurrentIndex(idx)
        return True

    def unavailable(self) -> dict[str, str]:
        return dict(self._unavailable)

    def form(self, name: str | None = None) -> ParamForm | None:
        name = name or self.method_name()
        if name is None or name in self._unavailable:
            return None
        if name not in self._forms:
            try:
                params = self.methods[name].params()
            except (ImportError, AttributeError) as exc:  # an estimator (or its optional dependency) missing
                self._mark_unavailable(name, f"{type(exc).__name__}: {exc}")
                return None
            form = ParamForm(params)
            form.setObjectName(f"form_{name}")
            form.set_shape(self._shape)
            form.changed.connect(lambda n=name: self._on_form_changed(n))
            self._forms[name] = form
            self.stack.addWidget(form)
            self.formCreated.emit(name)
        return self._forms[name]

    def built_forms(self) -> dict[str, ParamForm]:
        return dict(self._forms)

    def _mark_unavailable(self, name: str, reason: str) -> None:
        self._unavailable[name] = reason
        idx = self.combo.findData(name)
        if idx >= 0:
            self.combo.setItemData(idx, f"Not available: {reason}", Qt.ItemDataRole.ToolTipRole)

    def set_restricted(self, reasons: dict[str, str]) -> None:
        """Grey out the methods in ``reasons`` (name -> why it cannot run on the current data),
        with the reason as their tooltip; the others are enabled again. If the chosen method is
        greyed out, the first one that can run is chosen."""
        model = self.combo.model()
        for idx in range(self.combo.count()):
            name = self.combo.itemData(idx)
            why = reasons.get(name)
            item = model.item(idx)
            item.setEnabled(why is None)
            tip = (f"Not available: {self._unavailable[name]}" if name in self._unavailable
                   else f"Not for this data: {why}" if why else self.methods[name].description)
            self.combo.setItemData(idx, tip, Qt.ItemDataRole.ToolTipRole)
        if self.method_name() in reasons:
            for idx in range(self.combo.count()):
                if self.combo.itemData(idx) not in reasons and self.set_method(self.combo.itemData(idx)):
                    break

    def set_data_shape(self, shape: tuple[int, int] | None) -> None:
        """The loaded data's (n_samples, n_features) (None: no data): every form marks the values
        this shape refuses (ParamForm.set_shape), so Run is disabled before it would fail."""
        self._shape = shape
        for form in self._forms.values():
            form.set_shape(shape)
        self._update_run_enabled()

    def reset_current(self) -> None:
        form = self.form()
        if form is not None:
            form.reset()

    def _on_combo(self, *args) -> None:
        name = self.method_name()
        m = self.methods.get(name)
        if m is None:
            self.description.setText("")
            return
        form = self.form(name)
        if form is None:
            self.description.setText(f"{m.description}\n\nNot available: {self._unavailable[name]}")
        else:
            text = m.description
            if m.needs_labels:
                text += "\nNeeds class labels."
            self.description.setText(text)
            self.stack.setCurrentWidget(form)
        self._update_run_enabled()
        self.methodChanged.emit(name)

    def _on_form_changed(self, name: str) -> None:
        if name == self.method_name():
            self._update_run_enabled()
        self.paramsChanged.emit(name)

    # -- run state --------------------------------------------------------------------------------
    def set_blocker(self, reason: str | None) -> None:
        """A reason from outside the form why Run cannot start (no data set, no labels...)."""
        self._blocker = reason
        self._update_run_enabled()

    def run_block_reason(self) -> str | None:
        """Why Run would be refused now, or None."""
        name = self.method_name()
        if name is None:
            return "no method is available"
        form = self.form(name)
        if form is None:
            return f"{self.methods[name].title} is not available: {self._unavailable[name]}"
        errors = form.errors()
        if errors:
            return next(iter(errors.values()))
        return self._blocker

    def _update_run_enabled(self) -> None:
        reason = self.run_block_reason()
        self.run_button.setEnabled(reason is None)
        if reason is not None:
            tip = reason
        elif self._busy:
            tip = "Stop the running fit and start again with the current parameters (Ctrl+R)"
        else:
            tip = "Fit the method on the current data set (Ctrl+R)"
        self.run_button.setToolTip(tip)
        # Form errors are already shown under the form; show other reasons here.
        form = self.form()
        show = reason is not None and (form is None or form.is_valid())
        self.block_label.setText(reason or "")
        self.block_label.setVisible(bool(show))

    def set_busy(self, busy: bool) -> None:
        self._busy = busy
        self.cancel_button.setEnabled(busy)
        self.run_button.setText("Restart" if busy else "Run")
        self._update_run_enabled()
        if busy:
            self.progress.setFormat("%p%")
            self.progress.setValue(0)

    def is_busy(self) -> bool:
        return self._busy

    def set_progress(self, fraction: float, message: str) -> None:
        self.progress.setFormat("%p%")
        self.progress.setValue(int(round(min(max(fraction, 0.0), 1.0) * PROGRESS_STEPS)))
        if message:
            self.status.setText(message)

    def set_warning(self, text: str | None) -> None:
        """Show ``text`` beneath the status line until it is replaced or cleared (None)."""
        self.warning.setText(text or "")
        self.warning.setVisible(bool(text))

    def set_status(self, text: str, done: bool | None = None) -> None:
        self.status.setText(text)
        if done is True:
            self.progress.setFormat("%p%")
            self.progress.setValue(PROGRESS_STEPS)
        elif done is False:
            # An empty bar without "0%": nothing is running, nothing has been done.
            self.progress.setFormat("")
            self.progress.setValue(0)
