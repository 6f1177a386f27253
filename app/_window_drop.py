"""Files dropped on the window: the first local file is opened (the others are named in the status
bar). A mixin of :class:`app.main_window.MainWindow`, which calls ``setAcceptDrops(True)``.
"""
from __future__ import annotations


class FileDrop:
    """Mixin of :class:`app.main_window.MainWindow`: drag-and-drop of data files."""

    @staticmethod
    def _dropped_paths(mime) -> list[str]:
        if not mime.hasUrls():
            return []
        return [u.toLocalFile() for u in mime.urls() if u.isLocalFile() and u.toLocalFile()]

    def dragEnterEvent(self, event) -> None:
        if self._dropped_paths(event.mimeData()):
            event.acceptProposedAction()
        else:
            event.ignore()

    def dragMoveEvent(self, event) -> None:
        self.dragEnterEvent(event)

    def dropEvent(self, event) -> None:
        paths = self._dropped_paths(event.mimeData())
        if not paths:
            event.ignore()
            return
        event.acceptProposedAction()
        if len(paths) > 1:
            self.statusBar().showMessage(f"{len(paths)} files dropped; opening the first one", 8000)
        self.data.open_path(paths[0])
