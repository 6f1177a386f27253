"""Central area: one tab per view; placeholder shows the numeric summary of the latest fit."""
from __future__ import annotations

from PySide6.QtWidgets import QPlainTextEdit, QTabWidget


class ResultViews(QTabWidget):
    def __init__(self, state, parent=None):
        super().__init__(parent)
        self.state = state
        self.summary = QPlainTextEdit(readOnly=True)
        self.addTab(self.summary, "Summary")
        state.resultAdded.connect(self._show)
        state.resultsCleared.connect(self.summary.clear)

    def _show(self, method: str) -> None:
        res = self.state.result(method)
        if res is None:
            return
        lines = [f"{res.method}  ({res.elapsed:.2f} s)"]
        lines += [f"  {k}: {v}" for k, v in res.summary.items()]
        lines += [f"  warning: {w}" for w in res.warnings]
        self.summary.setPlainText("\n".join(lines))
