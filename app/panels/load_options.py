"""Dialog for a loader's options (label column, delimiter, variable names...), built from the
loader's ``Param`` declarations with the same form as the methods' parameters."""
from __future__ import annotations

import os

from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QVBoxLayout

from .param_form import ParamForm

__all__ = ["LoadOptionsDialog"]


class LoadOptionsDialog(QDialog):
    """Edit the options of ``loader`` for ``path``; :meth:`options` gives the changed ones."""

    def __init__(self, loader, path: str, values: dict | None = None, parent=None):
        super().__init__(parent)
        self.setWindowTitle(f"Load options — {os.path.basename(path) or path}")
        self.loader = loader
        self.form = ParamForm(loader.options)
        if values:
            self.form.set_values({k: v for k, v in values.items() if k in self.form.names()})
        head = QLabel(f"<b>{loader.label}</b> file:<br>{path}")
        head.setWordWrap(True)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok
                                        | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Load")
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        self.form.validityChanged.connect(
            lambda ok: self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(ok))
        lay = QVBoxLayout(self)
        lay.addWidget(head)
        lay.addWidget(self.form, 1)
        lay.addWidget(self.buttons)
        self.resize(460, self.sizeHint().height())

    def options(self) -> dict:
        """Options that differ from the loader's defaults (what ``load(path, **options)`` needs)."""
        return self.form.changed_from_defaults()
