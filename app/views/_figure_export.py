"""What :class:`.result_views.ResultViews` writes to files: a view's figure (PNG or SVG, with the
provenance of the results it draws) and a result's scores, flags and arrays. A mixin of
ResultViews, which gives it ``view``, ``current_view_name`` and ``state``.
"""
from __future__ import annotations

from contextlib import contextmanager

from PySide6.QtCore import QCoreApplication, QEvent

from ..export import export_results as _export_results
from ..export import provenance_header
from ._figure import export_widget


class FigureExport:
    """Mixin of :class:`.result_views.ResultViews`: ``export_figure`` and ``export_results``."""

    def export_figure(self, path, scale: float = 1.0, view: str | None = None, overwrite: bool = True,
                      provenance: bool = True) -> str:
        """Write the figure of ``view`` (default: the current one) to a .png (``scale`` 1–4) or .svg.

        With ``provenance`` the file records what produced it (method, parameters, data, versions):
        a PNG text chunk "Comment" or an SVG ``<metadata>`` element, as JSON.
        """
        name = view or self.current_view_name()
        if name is None:
            raise ValueError("no result view is showing; choose a view to export")
        v = self.view(name)
        why = v.missing(self.state)
        if why is not None:
            raise ValueError(f"the {name!r} view has nothing to show yet: {why}")
        v.ensure_fresh()
        meta = self.figure_provenance(name) if provenance else None
        with self._laid_out(v):
            return export_widget(v.figure, path, scale=scale, overwrite=overwrite, metadata=meta)

    @contextmanager
    def _laid_out(self, v):
        """A view never shown keeps Qt's default 640 x 480 and a figure whose layout never ran
        (legend over the title, labels adrift): bring it to the front for the export, laid out
        at the size the views have, and put the shown view back. No event loop pass runs in
        between, so the screen never shows the switch."""
        shown = self.currentWidget()
        if v.isVisible() or not self.isVisible() or shown is v:
            yield
            return
        self.blockSignals(True)
        try:
            self.setCurrentWidget(v)
            QCoreApplication.sendPostedEvents(None, QEvent.Type.LayoutRequest)
            v.fit_layout()
            QCoreApplication.sendPostedEvents(None, QEvent.Type.LayoutRequest)
            yield
        finally:
            self.setCurrentWidget(shown)
            self.blockSignals(False)

    def figure_provenance(self, name: str) -> dict:
        """JSON-able record of the results a view draws, as :func:`app.export.provenance_header`."""
        ds = self.state.dataset
        heads = [provenance_header(r, ds) for r in self.view(name).figure_results() if r is not None]
        if len(heads) == 1:
            return dict(heads[0], view=name)
        return {"view": name, "results": heads}

    def export_results(self, path, method: str | None = None, overwrite: bool = False) -> list[str]:
        """Write the scores, flags and arrays of ``method`` (default: the current one)."""
        res = self.state.result(method)
        if res is None:
            raise ValueError(f"no result of {method or self.state.current_method!r} to export; run it first")
        return _export_results(res, self.state.dataset, path, overwrite=overwrite)
