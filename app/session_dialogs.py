"""The window's side of reopening a session whose data file moved or changed: say what is wrong
and let the user point to the file (the new file is verified by its sha256 before use)."""
from __future__ import annotations

import os

from PySide6.QtWidgets import QFileDialog, QMessageBox

from .session import DataMismatchError, SessionError

__all__ = ["locate_box", "ask_to_locate"]


def _can_locate(error: SessionError) -> bool:
    ref = getattr(error, "ref", None)
    return ref is not None and bool(ref.path) and not ref.demo


def locate_box(parent, error: SessionError) -> tuple[QMessageBox, object]:
    """The message box (not shown) and its "Locate…" button (None when there is no file to find)."""
    title = "Session data has changed" if isinstance(error, DataMismatchError) else "Session data not found"
    box = QMessageBox(QMessageBox.Icon.Warning, title, str(error), QMessageBox.StandardButton.Cancel, parent)
    box.setObjectName("session_locate_box")
    button = None
    if _can_locate(error):
        box.setInformativeText("Point to the data file the session was made from; it is checked "
                               "against the saved sha256 before anything is computed.")
        button = box.addButton("Locate the data file…", QMessageBox.ButtonRole.AcceptRole)
        box.setDefaultButton(button)
    return box, button


def ask_to_locate(parent, error: SessionError, file_filter: str = "All files (*)") -> str | None:
    """Show why the session's data cannot be used; return the file the user picks, or None."""
    box, button = locate_box(parent, error)
    box.exec()
    if button is None or box.clickedButton() is not button:
        return None
    ref = error.ref
    start = os.path.dirname(ref.path) if os.path.isdir(os.path.dirname(ref.path)) else os.path.expanduser("~")
    path, _ = QFileDialog.getOpenFileName(parent, f"Locate {os.path.basename(ref.path)}", start, file_filter)
    return path or None
