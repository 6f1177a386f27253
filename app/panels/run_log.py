"""Run log: one row per run (method, parameters, data set, wall time, outcome) and its warnings."""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import QHeaderView, QTreeWidget, QTreeWidgetItem

from .param_form import format_value

__all__ = ["RunLog", "LogEntry"]

COLUMNS = ("Time", "Method", "Data set", "Outcome", "Wall time", "Known outliers", "Parameters")
MAX_RUNS = 500     # lines kept; older ones are dropped, and the log's last line says how many
_PAD = 18          # pixels beside a cell's text (margins, focus frame)
_COLOURS = {"ok": None, "warning": QColor("#9a6700"), "error": QColor("#b03a2e"),
            "muted": QColor("#6b6b6b")}


@dataclass
class LogEntry:
    method: str
    params: dict
    dataset: str
    outcome: str                 # "converged", "finished", "not converged", "cancelled", "failed", ...
    seconds: float | None = None
    warnings: list = field(default_factory=list)
    detail: str = ""
    evaluation: str = ""         # how the run found the known outliers, e.g. "AUC 0.93 · AP 0.71"
    level: str = "ok"            # ok | warning | error | muted
    when: float = field(default_factory=time.time)


def format_evaluation(evaluation) -> str:
    """A run's numbers against the known outliers (a robustcore.result.Evaluation), short enough
    for a log column ("" without)."""
    if evaluation is None:
        return ""
    e = evaluation
    caught = f" · flagged {e.known_flagged:,} of {e.known:,}" if e.known_flagged is not None else ""
    return f"AUC {e.roc_auc:.3f} · AP {e.average_precision:.3f}{caught}"


def format_params(params: dict) -> str:
    return ", ".join(f"{k}={format_value(v) if v is not None else 'auto'}" for k, v in params.items())


class RunLog(QTreeWidget):
    """Newest run at the top; warnings and details are child rows.

    A new line costs the same however long the log is: columns are widened to the new line's
    own text only (sizing every column to its contents measured every row again, per line), and
    the log keeps the latest :data:`MAX_RUNS` runs, its last line saying how many older ones
    went. The user may drag the columns' widths.
    """

    def __init__(self, parent=None):
        super().__init__(parent)
        self.entries: list[LogEntry] = []
        self.dropped = 0            # runs dropped off the end (MAX_RUNS)
        self._dropped_item: QTreeWidgetItem | None = None
        self.setColumnCount(len(COLUMNS))
        self.setHeaderLabels(COLUMNS)
        self.setRootIsDecorated(True)
        self.setUniformRowHeights(True)
        self.setAlternatingRowColors(True)
        self.setWordWrap(False)
        self.setObjectName("run_log")
        h = self.header()
        h.setStretchLastSection(True)
        h.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        for i, name in enumerate(COLUMNS[:-1]):
            self.setColumnWidth(i, self._text_width(i, name, h.fontMetrics()))

    def _text_width(self, column: int, text: str, fm=None) -> int:
        fm = fm or self.fontMetrics()
        return fm.horizontalAdvance(text) + _PAD + (self.indentation() if column == 0 else 0)

    def _widen_for(self, items) -> None:
        """Widen (never narrow) the columns to fit these rows' text: only they are measured."""
        for i in range(len(COLUMNS) - 1):
            need = max(self._text_width(i, it.text(i)) for it in items)
            if need > self.columnWidth(i):
                self.setColumnWidth(i, need)

    def _drop_oldest(self) -> None:
        while len(self.entries) > MAX_RUNS:
            self.entries.pop(0)
            self.dropped += 1
            oldest = self.topLevelItemCount() - (2 if self._dropped_item is not None else 1)
            self.takeTopLevelItem(oldest)
        if self.dropped:
            if self._dropped_item is None:
                self._dropped_item = QTreeWidgetItem()
                self._dropped_item.setForeground(len(COLUMNS) - 1, QBrush(_COLOURS["muted"]))
                self.addTopLevelItem(self._dropped_item)
            self._dropped_item.setText(len(COLUMNS) - 1, f"{self.dropped} older run{'s' if self.dropped > 1 else ''} "
                                                         f"dropped: the log keeps the latest {MAX_RUNS}")

    def add(self, entry: LogEntry) -> QTreeWidgetItem:
        self.entries.append(entry)
        secs = "" if entry.seconds is None else f"{entry.seconds:.2f} s"
        params = format_params(entry.params)
        item = QTreeWidgetItem([time.strftime("%H:%M:%S", time.localtime(entry.when)), entry.method,
                                entry.dataset, entry.outcome, secs, entry.evaluation, params])
        item.setToolTip(len(COLUMNS) - 1, params)
        item.setTextAlignment(4, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        colour = _COLOURS.get(entry.level)
        if colour is not None:
            item.setForeground(3, QBrush(colour))
        for w in entry.warnings:
            child = QTreeWidgetItem(["", "", "", "warning", "", "", str(w)])
            child.setForeground(3, QBrush(_COLOURS["warning"]))
            child.setToolTip(len(COLUMNS) - 1, str(w))
            item.addChild(child)
        if entry.detail:
            child = QTreeWidgetItem(["", "", "", "", "", "", entry.detail])
            child.setToolTip(len(COLUMNS) - 1, entry.detail)
            item.addChild(child)
        self.insertTopLevelItem(0, item)
        item.setExpanded(True)
        self._widen_for([item] + [item.child(k) for k in range(item.childCount())])
        self._drop_oldest()
        self.scrollToItem(item)
        return item

    def last(self) -> LogEntry | None:
        return self.entries[-1] if self.entries else None
