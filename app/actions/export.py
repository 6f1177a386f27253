"""The File menu's export callbacks: the current view as a figure, the current method's results,
and the decomposition video (written in the background on the window's ``exporter`` runner).
Each takes the window; ``*_to`` functions are the dialogs' code paths, callable from scripts."""
from __future__ import annotations

import os

from PySide6.QtWidgets import QFileDialog, QMessageBox

from ..tasks import Job

__all__ = ["export_figure_dialog", "export_figure_to", "export_results_dialog", "export_results_to",
           "export_video_dialog", "export_video_to", "video_written"]


def export_figure_dialog(w) -> None:
    if _export_refusal(w, figure=True):
        return
    base = os.path.join(w.settings.last_directory(), f"{w.state.current_method}.png")
    path, flt = QFileDialog.getSaveFileName(w, "Export figure", base,
                                            "PNG image, 2× screen resolution (*.png);;SVG drawing (*.svg)")
    if not path:
        return
    if not os.path.splitext(path)[1]:
        path += ".svg" if "svg" in flt.lower() else ".png"
    export_figure_to(w, path)


def _export_refusal(w, figure: bool) -> bool:
    """Explain (and return True) when there is nothing to export."""
    if w.state.result() is None:
        what = "Export figure" if figure else "Export results"
        w.show_error(what, f"Nothing to export yet: run {_method_title(w)} first.")
        return True
    return False


def _method_title(w) -> str:
    m = w.methods.get(w.state.current_method)
    return m.title if m is not None else w.state.current_method


def export_figure_to(w, path: str) -> str | None:
    """Write the current view to ``path`` (.png at 2x, or .svg); the dialog's code path."""
    if _export_refusal(w, figure=True):
        return None
    try:
        written = w.views.export_figure(path, scale=2.0 if path.lower().endswith(".png") else 1.0)
    except (OSError, ValueError) as exc:  # a folder we cannot write to, a view with nothing to show
        import traceback
        w.show_error("Export figure failed", str(exc), traceback.format_exc())
        return None
    w.settings.set_last_directory(path)
    w.statusBar().showMessage(f"Saved {written or path}", 8000)
    return written or path


def export_results_dialog(w) -> None:
    if _export_refusal(w, figure=False):
        return
    folder = QFileDialog.getExistingDirectory(w, "Export results into folder",
                                              w.settings.last_directory())
    if folder:
        export_results_to(w, folder)


def export_results_to(w, folder: str, overwrite: bool | None = None) -> list[str]:
    """Write the current method's scores, flags and arrays into ``folder``.

    ``overwrite=None`` asks the user before replacing existing files.
    """
    if _export_refusal(w, figure=False):
        return []
    from ..export import export_results
    res, ds = w.state.result(), w.state.dataset
    try:
        try:
            written = export_results(res, ds, folder, overwrite=bool(overwrite))
        except FileExistsError as exc:
            if overwrite is False:
                raise
            answer = QMessageBox.question(w, "Overwrite files?", f"{exc}\n\nOverwrite them?")
            if answer != QMessageBox.StandardButton.Yes:
                return []
            written = export_results(res, ds, folder, overwrite=True)
    except (OSError, ValueError) as exc:  # a folder we cannot write to, an array it cannot hold
        import traceback
        w.show_error("Export results failed", str(exc), traceback.format_exc())
        return []
    w.settings.set_last_directory(folder)
    w.statusBar().showMessage(f"Saved {len(written)} file(s) in {folder}", 8000)
    return list(written)


# -- decomposition video ------------------------------------------------------------------------
def _decomposition(w):
    """The low-rank + sparse result to export: the one the L + S view draws, else the latest
    of the methods that feed that view."""
    from robustcore.methods import methods_for_view
    view = w.views.view("decomposition")
    if view.drawn is not None:
        return view.drawn
    return next((w.state.result(m) for m in methods_for_view("decomposition")
                 if w.state.result(m) is not None), None)


def export_video_dialog(w) -> None:
    from ..video import FORMATS, check_video, has_mp4
    res, ds = _decomposition(w), w.state.dataset
    try:
        check_video("x.gif", ds, res)
    except ValueError as exc:
        w.show_error("Export video", str(exc))
        return
    kinds = ["mp4", "gif"] if has_mp4() else ["gif"]
    filters = ";;".join(f"{FORMATS[k]} (*.{k})" for k in kinds) + f";;{FORMATS['png']} (a new folder)"
    base = os.path.join(w.settings.last_directory(), f"{ds.name}-decomposition.{kinds[0]}")
    path, flt = QFileDialog.getSaveFileName(w, "Export decomposition video", base, filters)
    if not path:
        return
    if "folder" in flt:
        path = os.path.splitext(path)[0]
    elif not os.path.splitext(path)[1]:
        path += "." + kinds[0]
    export_video_to(w, path, overwrite=True)  # the dialog asked about an existing file


def export_video_to(w, path: str, overwrite: bool = False) -> Job | None:
    """Write the PCP decomposition of the current image data to ``path`` (.mp4, .gif or a
    folder of PNGs) in the background, with the L + S view's mask threshold."""
    from ..video import check_video, export_video
    res, ds = _decomposition(w), w.state.dataset
    try:
        check_video(path, ds, res)
    except ValueError as exc:
        w.show_error("Export video", str(exc))
        return None
    view = w.views.view("decomposition")
    threshold = view.threshold() if view.drawn is res else None
    w.statusBar().showMessage("Exporting video…")
    return w.exporter.submit(lambda progress: export_video(path, ds, res, threshold=threshold,
                                                           progress=progress, overwrite=overwrite),
                             tag=path)


def video_written(w, job: Job, written: list) -> None:
    w.settings.set_last_directory(job.tag)
    w.statusBar().showMessage(f"Saved {job.tag}" + (f" ({len(written)} images)" if len(written) > 1 else ""),
                              8000)
    w.videoExported.emit(list(written))
