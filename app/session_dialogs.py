"""The window's side of reopening a session whose data file moved, changed or lies outside the
session's folder: say what is wrong and let the user point to the file, or confirm the one the
session names (either is verified by its sha256 before use)."""
from __future__ import annotations

import os
from collections.abc import Callable

from PySide6.QtWidgets import QFileDialog, QMessageBox

from .session import DataMismatchError, DataNeedsConfirmation, SessionError

__all__ = ["locate_box", "ask_to_locate", "offer_data"]


def _can_locate(error: SessionError) -> bool:
    ref = getattr(error, "ref", None)
    return ref is not None and bool(ref.path) and not ref.demo


def _title(error: SessionError) -> str:
    if isinstance(error, DataNeedsConfirmation):
        return "Open the session's data file?"
    return "Session data has changed" if isinstance(error, DataMismatchError) else "Session data not found"


def locate_box(parent, error: SessionError) -> tuple[QMessageBox, object]:
    """The message box (not shown) and its "Locate…" button (None when there is no file to find).

    For a data file outside the session's folder the box also has a "Use this file" button
    (object name ``session_use_file``) that confirms the file the session names.
    """
    box = QMessageBox(QMessageBox.Icon.Warning, _title(error), str(error), QMessageBox.StandardButton.Cancel, parent)
    box.setObjectName("session_locate_box")
    button = None
    if _can_locate(error):
        box.setInformativeText("Point to the data file the session was made from; it is checked "
                               "against the saved sha256 before anything is computed.")
        if isinstance(error, DataNeedsConfirmation) and error.path:
            use = box.addButton("Use this file", QMessageBox.ButtonRole.YesRole)
            use.setObjectName("session_use_file")
            use.setToolTip(error.path)
            box.setDefaultButton(use)
        button = box.addButton("Locate the data file…", QMessageBox.ButtonRole.AcceptRole)
        if not isinstance(error, DataNeedsConfirmation):
            box.setDefaultButton(button)
    return box, button


def _start_folder(error: SessionError, fallback: str) -> str:
    ref = error.ref
    folder = os.path.dirname(ref.path) if ref is not None and ref.path else ""
    return folder if folder and os.path.isdir(folder) else fallback


def ask_to_locate(parent, error: SessionError, file_filter: str = "All files (*)") -> str | None:
    """Show why the session's data cannot be used; return the file the user picks, or None."""
    box, button = locate_box(parent, error)
    box.exec()
    if button is None or box.clickedButton() is not button:
        return None
    path, _ = QFileDialog.getOpenFileName(parent, f"Locate {os.path.basename(error.ref.path)}",
                                          _start_folder(error, os.path.expanduser("~")), file_filter)
    return path or None


def offer_data(parent, error: SessionError, reopen: Callable[[str], object], start: str = "",
               file_filter: str = "All files (*)") -> QMessageBox:
    """Non-blocking: show why the session's data cannot be used and call ``reopen(data_path)`` with
    the file the user confirms or locates. Returns the (open) box."""
    box, locate = locate_box(parent, error)

    def clicked(button):
        if button.objectName() == "session_use_file":
            reopen(error.path)
        elif locate is not None and button is locate:
            found, _ = QFileDialog.getOpenFileName(parent, "Locate the session's data file",
                                                   _start_folder(error, start), file_filter)
            if found:
                reopen(found)

    box.buttonClicked.connect(clicked)
    box.open()
    return box
