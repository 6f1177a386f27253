"""A form generated from a method's ``Param`` declarations (robustcore._params).

One editor per parameter: a check box for ``bool``, a drop-down for ``choices``, a line edit for
numbers and free text. Numbers are typed, not spun, so that any value can be entered and an
invalid one is *shown* as invalid (red frame, reason under the form) instead of being silently
clamped. ``allow_none`` parameters accept an empty field, which means "automatic" (the
placeholder says what automatic does). Parameters marked ``advanced`` sit in a folded section.
"""
from __future__ import annotations

from typing import Any
from collections.abc import Iterable

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QCheckBox, QComboBox, QFormLayout, QHBoxLayout, QLabel, QLineEdit,
                               QPushButton, QSizePolicy, QToolButton, QVBoxLayout, QWidget)

from robustcore._params import param_message, shape_errors

__all__ = ["ParamForm", "format_value", "pretty_name"]

_INVALID_STYLE = "QLineEdit { border: 1px solid #c0392b; border-radius: 2px; background: #fdecea; }"


def pretty_name(name: str) -> str:
    """``n_components`` -> ``n components`` (the exact name stays in the tooltip)."""
    return name.replace("_", " ")


def format_value(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _tooltip(p, shape=None, values=None) -> str:
    """The parameter's help; with data loaded (``shape``), also what their shape allows."""
    default = "automatic" if p.default is None else format_value(p.default)
    text = (f"<b>{p.name}</b><br>{p.help}<br><br>Allowed: {p.allowed()}<br>"
            f"Default: {default}")
    bound = None if shape is None else p.shape_allowed(*shape, values)
    if bound is not None:
        # bounds that need the values themselves (a rank) are checked when Run reads them
        text += (f"<br>For the loaded data ({shape[0]:,} × {shape[1]:,}): {bound}. Limits that "
                 f"depend on the values, not the shape, are checked at Run.")
    return text


def _same(a, b) -> bool:
    # findData would treat 1 == True; parameters keep bools and numbers apart.
    return type(a) is type(b) and a == b


class _Field:
    """One parameter's editor and how to read it back."""

    def __init__(self, p, on_change):
        self.p = p
        if p.kind is bool and p.choices is None and not p.allow_none:
            self.widget = QCheckBox()
            self.widget.toggled.connect(on_change)
        elif p.choices is not None or p.kind is bool:
            # A bool that may be None ("automatic") needs three states: a drop-down, not a check box.
            choices = p.choices if p.choices is not None else (True, False)
            self.widget = QComboBox()
            if p.allow_none:
                self.widget.addItem(f"{p.none_label}", None)
            for c in choices:
                self.widget.addItem(format_value(c), c)
            self.widget.currentIndexChanged.connect(on_change)
        else:
            self.widget = QLineEdit()
            self.widget.setClearButtonEnabled(False)
            if p.allow_none:
                self.widget.setPlaceholderText(p.none_label)
            self.widget.textChanged.connect(on_change)
        self.widget.setToolTip(_tooltip(p))
        self.widget.setObjectName(f"param_{p.name}")
        self.widget.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)

    def set(self, value) -> None:
        w = self.widget
        if isinstance(w, QCheckBox):
            w.setChecked(bool(value))
        elif isinstance(w, QComboBox):
            idx = w.findData(value)
            if idx < 0:  # e.g. a stored value that is no longer a choice
                idx = next((i for i in range(w.count()) if _same(w.itemData(i), self.p.default)), 0)
            w.setCurrentIndex(max(idx, 0))
        else:
            w.setText(format_value(value))

    def read(self):
        """The validated value; raises ValueError in the library's style."""
        w = self.widget
        if isinstance(w, QCheckBox):
            return self.p.validate(w.isChecked())
        if isinstance(w, QComboBox):
            return self.p.validate(w.currentData())
        text = w.text()
        if not text.strip() and not self.p.allow_none and self.p.kind in (int, float):
            raise ValueError(param_message(self.p.name, self.p.allowed(), None, got="an empty field"))
        return self.p.parse(text)

    def mark(self, error: str | None, shape=None, values=None) -> None:
        if isinstance(self.widget, QLineEdit):
            self.widget.setStyleSheet(_INVALID_STYLE if error else "")
        self.widget.setToolTip(_tooltip(self.p, shape, values)
                               + (f"<br><br><b>Invalid:</b> {error}" if error else ""))


class ParamForm(QWidget):
    """Editors for a tuple of ``Param`` declarations.

    Signals
    -------
    changed()                any edit (valid or not).
    validityChanged(bool)    the form became valid / invalid.

    With a data shape set (:meth:`set_shape`), values the shape refuses are marked too, by the
    declarations' own shape rules (``Param.shape_rule``, the rules the fits apply).
    """

    changed = Signal()
    validityChanged = Signal(bool)

    def __init__(self, params: Iterable, parent=None):
        super().__init__(parent)
        self.params = tuple(p for p in params if not p.scriptable_only)
        self._fields: dict[str, _Field] = {}
        self._valid = True
        self._loading = False
        self._shape: tuple[int, int] | None = None

        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.setSpacing(6)
        basic = QFormLayout()
        advanced = QFormLayout()
        for lay in (basic, advanced):
            lay.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
            lay.setLabelAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            lay.setContentsMargins(0, 0, 0, 0)
        for p in self.params:
            f = _Field(p, self._on_edit)
            self._fields[p.name] = f
            label = QLabel(pretty_name(p.name))
            label.setToolTip(_tooltip(p))
            label.setBuddy(f.widget)
            (advanced if p.advanced else basic).addRow(label, f.widget)
        outer.addLayout(basic)
        self.advanced_box = None
        self.advanced_toggle = None
        if advanced.rowCount():
            self.advanced_toggle = QToolButton(text="Advanced", checkable=True)
            self.advanced_toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
            self.advanced_toggle.setArrowType(Qt.ArrowType.RightArrow)
            self.advanced_toggle.setAutoRaise(True)
            self.advanced_box = QWidget()
            self.advanced_box.setLayout(advanced)
            self.advanced_box.setVisible(False)
            self.advanced_toggle.toggled.connect(self._toggle_advanced)
            outer.addWidget(self.advanced_toggle)
            outer.addWidget(self.advanced_box)
        self.error_label = QLabel()
        self.error_label.setObjectName("param_errors")
        self.error_label.setWordWrap(True)
        self.error_label.setStyleSheet("color: #b03a2e;")
        self.error_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error_label.setVisible(False)
        outer.addWidget(self.error_label)
        self.reset_button = QPushButton("Reset to defaults")
        self.reset_button.setObjectName("reset_button")
        self.reset_button.setToolTip("Put every parameter of this method back to its default")
        self.reset_button.clicked.connect(self.reset)
        row = QHBoxLayout()
        row.addStretch(1)
        row.addWidget(self.reset_button)
        outer.addLayout(row)
        outer.addStretch(1)
        self.reset()

    # -- public API ----------------------------------------------------------------------------
    def names(self) -> list[str]:
        return list(self._fields)

    def editor(self, name: str) -> QWidget:
        return self._fields[name].widget

    def set_text(self, name: str, text: str) -> None:
        """Type ``text`` into a line-edit parameter (what a user does; used by tests and scripts)."""
        w = self._fields[name].widget
        if not isinstance(w, QLineEdit):
            raise TypeError(f"{name} is not a text field")
        w.setText(text)

    def defaults(self) -> dict:
        return {p.name: p.default for p in self.params}

    def set_shape(self, shape: tuple[int, int] | None) -> None:
        """The loaded data's (n_samples, n_features), or None without data: values the shape
        refuses are then marked as invalid, as any other."""
        shape = None if shape is None else (int(shape[0]), int(shape[1]))
        if shape != self._shape:
            self._shape = shape
            self._on_edit()

    def shape(self) -> tuple[int, int] | None:
        return self._shape

    def reset(self) -> None:
        """Back to the declared defaults."""
        self.set_values(self.defaults())

    def set_values(self, values: dict) -> None:
        """Show the given values (unknown names are ignored; missing ones keep their editor)."""
        self._loading = True
        try:
            for name, v in values.items():
                if name in self._fields:
                    self._fields[name].set(v)
        finally:
            self._loading = False
        self._on_edit()

    def errors(self) -> dict[str, str]:
        """name -> reason, for every editor whose content is not a valid value, or (with a
        shape set) a value the data's shape refuses."""
        out, values = self._read_all()
        if self._shape is not None:
            for name, why in shape_errors(self.params, values, *self._shape).items():
                out.setdefault(name, why)
        return out

    def _read_all(self) -> tuple[dict[str, str], dict]:
        """(name -> reason for editors that do not read, name -> value for those that do)."""
        errors, values = {}, {}
        for name, f in self._fields.items():
            try:
                values[name] = f.read()
            except ValueError as exc:
                errors[name] = str(exc)
        return errors, values

    def is_valid(self) -> bool:
        return not self.errors()

    def values(self) -> dict:
        """Validated values of all parameters; raises ValueError with the first reason."""
        out = {}
        for name, f in self._fields.items():
            out[name] = f.read()
        return out

    def changed_from_defaults(self) -> dict:
        try:
            vals = self.values()
        except ValueError:
            return {}
        return {k: v for k, v in vals.items() if v != self.defaults()[k]}

    # -- internals -------------------------------------------------------------------------------
    def _toggle_advanced(self, on: bool) -> None:
        self.advanced_box.setVisible(on)
        self.advanced_toggle.setArrowType(Qt.ArrowType.DownArrow if on else Qt.ArrowType.RightArrow)

    def _on_edit(self, *args) -> None:
        if self._loading:
            return
        errors = self.errors()
        values = self._read_all()[1]
        for name, f in self._fields.items():
            f.mark(errors.get(name), self._shape, values)
        if errors:
            self.error_label.setText("\n".join(errors.values()))
            # An invalid advanced value must not hide in a folded section.
            if self.advanced_toggle is not None and any(
                    self._fields[n].p.advanced for n in errors):
                self.advanced_toggle.setChecked(True)
        self.error_label.setVisible(bool(errors))
        valid = not errors
        if valid != self._valid:
            self._valid = valid
            self.validityChanged.emit(valid)
        self.changed.emit()
