"""The window's export slots: figure, results and the decomposition video (a part of
:class:`app.main_window.MainWindow`, kept apart so the window's file holds its wiring)."""
from __future__ import annotations

import os

from PySide6.QtWidgets import QFileDialog, QMessageBox

from .tasks import Job


class ExportSlots:
    """Mixed into MainWindow: needs ``state``, ``views``, ``settings``, ``methods``,
    ``exporter`` (a TaskRunner), ``_show_error`` and the ``videoExported`` signal."""

    def export_figure_dialog(self) -> None:
        if self._export_refusal(figure=True):
            return
        base = os.path.join(self.settings.last_directory(), f"{self.state.current_method}.png")
        path, flt = QFileDialog.getSaveFileName(self, "Export figure", base,
                                                "PNG image, 2× screen resolution (*.png);;SVG drawing (*.svg)")
        if not path:
            return
        if not os.path.splitext(path)[1]:
            path += ".svg" if "svg" in flt.lower() else ".png"
        self.export_figure_to(path)

    def _export_refusal(self, figure: bool) -> bool:
        """Explain (and return True) when there is nothing to export."""
        if self.state.result() is None:
            what = "Export figure" if figure else "Export results"
            self._show_error(what, f"Nothing to export yet: run {self._method_title()} first.")
            return True
        return False

    def _method_title(self) -> str:
        m = self.methods.get(self.state.current_method)
        return m.title if m is not None else self.state.current_method

    def export_figure_to(self, path: str) -> str | None:
        """Write the current view to ``path`` (.png at 2x, or .svg); the dialog's code path."""
        if self._export_refusal(figure=True):
            return None
        try:
            written = self.views.export_figure(path, scale=2.0 if path.lower().endswith(".png") else 1.0)
        except (OSError, ValueError) as exc:  # a folder we cannot write to, a view with nothing to show
            import traceback
            self._show_error("Export figure failed", str(exc), traceback.format_exc())
            return None
        self.settings.set_last_directory(path)
        self.statusBar().showMessage(f"Saved {written or path}", 8000)
        return written or path

    def export_results_dialog(self) -> None:
        if self._export_refusal(figure=False):
            return
        folder = QFileDialog.getExistingDirectory(self, "Export results into folder",
                                                  self.settings.last_directory())
        if folder:
            self.export_results_to(folder)

    def export_results_to(self, folder: str, overwrite: bool | None = None) -> list[str]:
        """Write the current method's scores, flags and arrays into ``folder``.

        ``overwrite=None`` asks the user before replacing existing files.
        """
        if self._export_refusal(figure=False):
            return []
        from .export import export_results
        res, ds = self.state.result(), self.state.dataset
        try:
            try:
                written = export_results(res, ds, folder, overwrite=bool(overwrite))
            except FileExistsError as exc:
                if overwrite is False:
                    raise
                answer = QMessageBox.question(self, "Overwrite files?", f"{exc}\n\nOverwrite them?")
                if answer != QMessageBox.StandardButton.Yes:
                    return []
                written = export_results(res, ds, folder, overwrite=True)
        except (OSError, ValueError) as exc:  # a folder we cannot write to, an array it cannot hold
            import traceback
            self._show_error("Export results failed", str(exc), traceback.format_exc())
            return []
        self.settings.set_last_directory(folder)
        self.statusBar().showMessage(f"Saved {len(written)} file(s) in {folder}", 8000)
        return list(written)

    # decomposition video ----------------------------------------------------------------------
    def _decomposition(self):
        """The low-rank + sparse result to export: the one the L + S view draws, else the latest
        of the methods that feed that view."""
        from robustcore.methods import methods_for_view
        view = self.views.view("decomposition")
        if view.drawn is not None:
            return view.drawn
        return next((self.state.result(m) for m in methods_for_view("decomposition")
                     if self.state.result(m) is not None), None)

    def export_video_dialog(self) -> None:
        from .video import FORMATS, check_video, has_mp4
        res, ds = self._decomposition(), self.state.dataset
        try:
            check_video("x.gif", ds, res)
        except ValueError as exc:
            self._show_error("Export video", str(exc))
            return
        kinds = ["mp4", "gif"] if has_mp4() else ["gif"]
        filters = ";;".join(f"{FORMATS[k]} (*.{k})" for k in kinds) + f";;{FORMATS['png']} (a new folder)"
        base = os.path.join(self.settings.last_directory(), f"{ds.name}-decomposition.{kinds[0]}")
        path, flt = QFileDialog.getSaveFileName(self, "Export decomposition video", base, filters)
        if not path:
            return
        if "folder" in flt:
            path = os.path.splitext(path)[0]
        elif not os.path.splitext(path)[1]:
            path += "." + kinds[0]
        self.export_video_to(path, overwrite=True)  # the dialog asked about an existing file

    def export_video_to(self, path: str, overwrite: bool = False) -> Job | None:
        """Write the PCP decomposition of the current image data to ``path`` (.mp4, .gif or a
        folder of PNGs) in the background, with the L + S view's mask threshold."""
        from .video import check_video, export_video
        res, ds = self._decomposition(), self.state.dataset
        try:
            check_video(path, ds, res)
        except ValueError as exc:
            self._show_error("Export video", str(exc))
            return None
        view = self.views.view("decomposition")
        threshold = view.threshold() if view.drawn is res else None
        self.statusBar().showMessage("Exporting video…")
        return self.exporter.submit(lambda progress: export_video(path, ds, res, threshold=threshold,
                                                                  progress=progress, overwrite=overwrite),
                                    tag=path)

    def _on_video_written(self, job: Job, written: list) -> None:
        self.settings.set_last_directory(job.tag)
        self.statusBar().showMessage(f"Saved {job.tag}" + (f" ({len(written)} images)" if len(written) > 1 else ""),
                                     8000)
        self.videoExported.emit(list(written))
