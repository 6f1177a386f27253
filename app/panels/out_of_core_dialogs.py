"""The window's out-of-core dialogs: the offer to open a file out of core, and the settings
(memory budget, Dask scheduler address). Both are non-blocking; the window acts on their signals."""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (QDialog, QDialogButtonBox, QFormLayout, QLabel, QLineEdit, QMessageBox,
                               QVBoxLayout)

from ..out_of_core import check_scheduler, format_bytes, parse_size

__all__ = ["offer_out_of_core", "OutOfCoreSettingsDialog"]


def offer_out_of_core(parent, offer, on_open, on_load, budget: int) -> QMessageBox:
    """"Open out of core" (and why), "Load into memory" when the loaders can read the file at
    all, or Cancel. Shown window-modal and returned at once."""
    import os
    name = os.path.basename(offer.path.rstrip(os.sep)) or offer.path
    box = QMessageBox(QMessageBox.Icon.Question, "Open out of core?", f"<b>{name}</b> is best opened out of core.",
                      QMessageBox.StandardButton.NoButton, parent)
    box.setObjectName("lazy_offer")
    box.setInformativeText(
        f"{offer.reason}\n\nOut of core, PCA, SPE/T² scoring and Coherence Pursuit (tables) or online "
        f"robust PCA (videos) run chunk by chunk within the memory budget ({format_bytes(budget)}; "
        f"Data panel → Out-of-core settings); methods that need the data in memory are unavailable.")
    open_button = box.addButton("Open out of core", QMessageBox.ButtonRole.AcceptRole)
    open_button.setObjectName("lazy_open_button")
    load_button = None
    if on_load is not None:
        load_button = box.addButton("Load into memory", QMessageBox.ButtonRole.DestructiveRole)
        load_button.setObjectName("lazy_load_button")
        load_button.setToolTip("Load the whole file into memory anyway (it may not fit)")
    box.addButton(QMessageBox.StandardButton.Cancel)
    box.setDefaultButton(open_button)

    def done(_result):
        clicked = box.clickedButton()
        if clicked is open_button:
            on_open()
        elif load_button is not None and clicked is load_button:
            on_load()
    box.finished.connect(done)
    box.setWindowModality(Qt.WindowModality.WindowModal)
    box.open()
    return box


class OutOfCoreSettingsDialog(QDialog):
    """Memory budget and scheduler address, checked as they are typed: OK is enabled only when
    both are valid, and the message under each field says what is wrong. After OK, ``budget``
    (bytes) and ``scheduler`` (address or None) hold the values."""

    def __init__(self, budget: int, scheduler: str | None, parent=None):
        super().__init__(parent)
        self.setWindowTitle("Out-of-core settings")
        self.budget, self.scheduler = int(budget), scheduler
        self.budget_edit = QLineEdit(format_bytes(budget))
        self.budget_edit.setObjectName("budget_edit")
        self.budget_edit.setToolTip("Memory one data set may take; larger files are offered out of core, and "
                                    "out-of-core results larger than this are written to disk (e.g. 512 MB, 4 GB)")
        self.scheduler_edit = QLineEdit(scheduler or "")
        self.scheduler_edit.setObjectName("scheduler_edit")
        self.scheduler_edit.setPlaceholderText("empty: this machine's threads")
        self.scheduler_edit.setToolTip("Address of a running dask.distributed scheduler, e.g. tcp://10.0.0.5:8786")
        self.budget_error = QLabel()
        self.scheduler_error = QLabel()
        for lab in (self.budget_error, self.scheduler_error):
            lab.setStyleSheet("color: #b03a2e;")
            lab.setWordWrap(True)
        form = QFormLayout()
        form.addRow("Memory budget", self.budget_edit)
        form.addRow("", self.budget_error)
        form.addRow("Dask scheduler", self.scheduler_edit)
        form.addRow("", self.scheduler_error)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        lay = QVBoxLayout(self)
        lay.addLayout(form)
        lay.addWidget(self.buttons)
        self.budget_edit.textChanged.connect(self._check)
        self.scheduler_edit.textChanged.connect(self._check)
        self._check()

    def _check(self) -> bool:
        ok = True
        for attr, parse, edit, lab in (("budget", parse_size, self.budget_edit, self.budget_error),
                                       ("scheduler", check_scheduler, self.scheduler_edit, self.scheduler_error)):
            try:
                setattr(self, attr, parse(edit.text()))
                lab.setText("")
            except ValueError as exc:
                lab.setText(str(exc))
                ok = False
            lab.setVisible(bool(lab.text()))
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(ok)
        return ok

    def accept(self) -> None:
        if self._check():
            super().accept()
