"""The File menu's callbacks: the dialogs that choose a file, a folder or a session, and the
out-of-core settings. Each takes the window; the work is the data controller's
(:class:`app.data_controller.DataController`)."""
from __future__ import annotations

import os

from PySide6.QtWidgets import QFileDialog

__all__ = ["file_filter", "supported_formats", "open_dialog", "open_with_options_dialog", "open_with_options",
           "reload_with_options", "open_folder_dialog", "open_session_dialog", "save_session_dialog",
           "save_session_as_dialog", "toggle_reopen_last", "out_of_core_settings_dialog"]


def _datasets_api():
    """robustcore.datasets, imported when first needed (it pulls in scipy and the loaders)."""
    import robustcore.datasets as d
    return d


def supported_formats() -> list[tuple[str, list[str]]]:
    return [(str(label), [str(p) for p in pats]) for label, pats in _datasets_api().formats()]


def file_filter(formats=None) -> str:
    """The Open dialog's filter: every supported pattern first, then one entry per format."""
    formats = supported_formats() if formats is None else formats
    every = sorted({p for _, pats in formats for p in pats})
    parts = [f"All supported data ({' '.join(every)})"]
    parts += [f"{label} ({' '.join(pats)})" for label, pats in formats]
    parts.append("All files (*)")
    return ";;".join(parts)


def open_dialog(w) -> None:
    path, _ = QFileDialog.getOpenFileName(w, "Open data", w.settings.last_directory(), file_filter())
    if path:
        w.data.open_path(path)


def open_with_options_dialog(w) -> None:
    path, _ = QFileDialog.getOpenFileName(w, "Open data with options", w.settings.last_directory(), file_filter())
    if path:
        open_with_options(w, path)


def open_with_options(w, path: str, values: dict | None = None):
    """Show the loader's options for ``path`` (non-blocking); Load reads the file with them."""
    from ..panels.load_options import LoadOptionsDialog
    d = _datasets_api()
    try:
        loader = d.LOADERS[d.detect_format(path)]
    except d.LoadError as exc:  # unknown format, missing file...
        w.show_error(f"Could not open {os.path.basename(path)}", str(exc))
        return None
    dlg = LoadOptionsDialog(loader, path, values, w)
    dlg.setObjectName("load_options_dialog")
    dlg.accepted.connect(lambda: w.data.open_path(path, format=loader.name, **dlg.options()))
    dlg.open()
    w.options_dialog = dlg
    return dlg


def reload_with_options(w) -> None:
    """The Data panel's Load options…: the current file's loader options, to load it again."""
    ds = w.state.dataset
    if ds is not None and ds.provenance.path:
        open_with_options(w, ds.provenance.path, ds.provenance.options)


def open_folder_dialog(w) -> None:
    path = QFileDialog.getExistingDirectory(w, "Open a folder of images", w.settings.last_directory())
    if path:
        w.data.open_path(path)


def open_session_dialog(w) -> None:
    path, _ = QFileDialog.getOpenFileName(w, "Open session", w.settings.last_directory(),
                                          "Session (*.json);;All files (*)")
    if path:
        w.data.open_session(path)


def save_session_dialog(w, as_new: bool = False) -> None:
    """Save to the session last saved or opened (ask for a name the first time, or with as_new)."""
    from ..session import SESSION_SUFFIX
    if w.state.dataset is None:
        w.show_error("Save session", "Nothing to save yet: load a data set first.")
        return
    path = None if as_new else w.data.session_path
    if not path:
        base = os.path.join(w.settings.last_directory(), f"{w.state.dataset.name}{SESSION_SUFFIX}")
        path, _ = QFileDialog.getSaveFileName(w, "Save session", base, "Session (*.json)")
    if not path:
        return
    try:
        w.data.save_session(path)
    except Exception as exc:  # noqa: BLE001 - any failure to save is shown, the window stays
        import traceback
        w.show_error("Save session failed", str(exc), traceback.format_exc())
        return
    w.statusBar().showMessage(f"Saved session {path}", 8000)


def save_session_as_dialog(w) -> None:
    save_session_dialog(w, as_new=True)


def toggle_reopen_last(w) -> None:
    w.settings.set_reopen_last(w.act_reopen_last.isChecked())


def out_of_core_settings_dialog(w):
    """Memory budget and Dask scheduler (non-blocking); the Data panel shows the new values."""
    from ..panels.out_of_core_dialogs import OutOfCoreSettingsDialog
    dlg = OutOfCoreSettingsDialog(w.settings.memory_budget(), w.settings.scheduler(), w)
    dlg.setObjectName("out_of_core_settings")

    def apply():
        w.settings.set_memory_budget(dlg.budget)
        w.settings.set_scheduler(dlg.scheduler)
        w.data.show_out_of_core()
    dlg.accepted.connect(apply)
    dlg.open()
    w.out_of_core_dialog = dlg
    return dlg
