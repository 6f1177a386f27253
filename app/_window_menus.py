"""The window's menus whose entries come from elsewhere and may change: recent files (from the
settings, rebuilt when the list changes), the demos, the docks' show/hide toggles and the Help
examples. The fixed actions are :mod:`app.actions`'; :func:`app.actions.build_menus` calls these
to fill its placeholders. A mixin of :class:`app.main_window.MainWindow`.
"""
from __future__ import annotations

import os

from PySide6.QtGui import QAction

from .actions import help as help_actions


def demo_list() -> dict:
    """Demo name -> its one-line description."""
    import robustcore.datasets as d
    return dict(d.demos())


class ListMenus:
    """Mixin of :class:`app.main_window.MainWindow`: the menus listing files, demos, docks, examples."""

    def _build_recent_menu(self, menu) -> None:
        self.recent_menu = menu.addMenu("Open &recent")
        self.recent_menu.setObjectName("menu_recent")
        self._rebuild_recent_menu()

    def _rebuild_recent_menu(self) -> None:
        self.recent_menu.clear()
        files = self.settings.recent_files()
        for i, path in enumerate(files):
            label = f"&{i + 1}  {os.path.basename(path) or path}" if i < 9 else os.path.basename(path)
            act = self.recent_menu.addAction(label)
            act.setToolTip(path)
            act.setStatusTip(path)
            act.triggered.connect(lambda checked=False, p=path: self.data.open_recent(p))
        if files:
            self.recent_menu.addSeparator()
            clear = self.recent_menu.addAction("Clear list")
            clear.triggered.connect(self.data.clear_recent)
        self.recent_menu.setToolTipsVisible(True)
        self.recent_menu.setEnabled(bool(files))

    def _build_demos_menu(self, menu) -> None:
        self.demos_menu = menu
        self.demo_actions: dict[str, QAction] = {}
        for name, desc in demo_list().items():
            act = QAction(f"{name}  —  {desc}", self)
            act.setToolTip(desc)
            act.setStatusTip(desc)
            act.setObjectName(f"demo_{name}")
            act.triggered.connect(lambda checked=False, n=name: self.data.load_demo(n))
            menu.addAction(act)
            self.demo_actions[name] = act

    def _build_dock_toggles(self, menu) -> None:
        for dock in (self.dataset_dock, self.method_dock, self.log_dock):
            menu.addAction(dock.toggleViewAction())

    def _build_examples_menu(self, menu) -> None:
        from .examples import EXAMPLES
        sub = menu.addMenu("&Examples")
        sub.setObjectName("menu_examples")
        sub.setToolTipsVisible(True)
        self.example_actions: dict[str, QAction] = {}
        for ex in EXAMPLES:
            act = sub.addAction(ex.title)
            act.setToolTip(ex.blurb)
            act.setStatusTip(ex.blurb)
            act.triggered.connect(lambda checked=False, e=ex: help_actions.open_example(self, e))
            self.example_actions[ex.key] = act
