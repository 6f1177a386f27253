"""The comparison view's table of flagged samples as a model over numpy arrays: a cell's text is
made only when Qt shows it, sorting is one stable argsort of a column, and a selection maps to
rows through an inverse permutation, so nothing here loops over the rows in Python (a table
item per cell took over 300 s at a million rows, issue 33)."""
from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Callable

import numpy as np
from PySide6.QtCore import QAbstractTableModel, QItemSelection, QModelIndex, Qt
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QStyle

__all__ = ["Column", "FlagTableModel", "fit_columns"]

# The table's columns are sized to the texts of this many of its first rows and as many spread
# over it (see fit_columns).
FIT_ROWS = 32


@dataclass
class Column:
    """One column: its header, the values it sorts by (one per sample of the table, in the
    table's sample order), the text of one value, and the header's tooltip."""
    name: str
    values: Callable[[], np.ndarray]   # made when first sorted by: ids as text cost a pass over n
    text: Callable[[int], str]         # sample index -> cell text
    tip: str | None = None


class FlagTableModel(QAbstractTableModel):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.set_rows(np.zeros(0, dtype=np.int64), [])

    def set_rows(self, samples: np.ndarray, columns: list[Column]) -> None:
        """Show these samples (ascending sample indices) in their own order."""
        self.beginResetModel()
        self.samples = np.asarray(samples, dtype=np.int64)
        self.columns = columns
        self._values: dict[int, np.ndarray] = {}
        self.order = np.arange(self.samples.size)          # table position -> row of `samples`
        self.where = self.order.copy()                      # row of `samples` -> table position
        self.endResetModel()

    def shown(self) -> np.ndarray:
        """The sample index of each row, in the order shown."""
        return self.samples[self.order]

    def rowCount(self, parent=QModelIndex()):
        return 0 if parent.isValid() else self.samples.size

    def columnCount(self, parent=QModelIndex()):
        return 0 if parent.isValid() else len(self.columns)

    def flags(self, index):
        return Qt.ItemFlag.ItemIsSelectable | Qt.ItemFlag.ItemIsEnabled

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        if role != Qt.ItemDataRole.DisplayRole or not index.isValid():
            return None
        return self.columns[index.column()].text(int(self.samples[self.order[index.row()]]))

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):
        if orientation == Qt.Orientation.Horizontal and 0 <= section < len(self.columns):
            if role == Qt.ItemDataRole.DisplayRole:
                return self.columns[section].name
            if role == Qt.ItemDataRole.ToolTipRole:
                return self.columns[section].tip
            return None
        return super().headerData(section, orientation, role)

    def column_values(self, column: int) -> np.ndarray:
        if column not in self._values:
            self._values[column] = np.asarray(self.columns[column].values())
        return self._values[column]

    def sort(self, column, order=Qt.SortOrder.AscendingOrder):
        """Stable by value, starting from the order shown (ties keep the previous sort's order);
        descending keeps ties in that order too."""
        if not 0 <= column < len(self.columns) or self.samples.size == 0:
            return
        v = self.column_values(column)[self.order]
        if order == Qt.SortOrder.DescendingOrder:
            step = v.size - 1 - np.argsort(v[::-1], kind="stable")[::-1]
        else:
            step = np.argsort(v, kind="stable")
        self.layoutAboutToBeChanged.emit()
        before = self.order
        self.order = before[step]
        self.where = np.empty_like(self.order)
        self.where[self.order] = np.arange(self.order.size)
        # The selection and the current cell move with their samples: one index per row Qt
        # holds on to (the selection's), never one per row of the table.
        held = self.persistentIndexList()
        if held:
            moved = self.where[before[[i.row() for i in held]]]
            self.changePersistentIndexList(held, [self.index(int(r), i.column()) for r, i in zip(moved, held)])
        self.layoutChanged.emit()

    def positions_of(self, samples) -> np.ndarray:
        """Table positions (ascending) of those of these samples the table lists: a binary
        search per sample, so the cost follows the selection, not the table."""
        s = np.asarray(samples, dtype=np.int64).ravel()
        if s.size == 0 or self.samples.size == 0:
            return np.zeros(0, dtype=np.int64)
        k = np.minimum(np.searchsorted(self.samples, s), self.samples.size - 1)
        return np.sort(self.where[k[self.samples[k] == s]])

    def selection_of(self, positions: np.ndarray) -> QItemSelection:
        """Whole rows at these ascending positions, each run of consecutive rows one range."""
        sel = QItemSelection()
        if positions.size == 0 or not self.columns:
            return sel
        cut = np.flatnonzero(np.diff(positions) != 1) + 1
        last = len(self.columns) - 1
        for top, bottom in zip(positions[np.r_[0, cut]], positions[np.r_[cut - 1, positions.size - 1]]):
            sel.select(self.index(int(top), 0), self.index(int(bottom), last))
        return sel

    def samples_in(self, selection: QItemSelection) -> np.ndarray:
        """The samples of the rows a selection covers: a slice per range."""
        parts = [self.order[r.top():r.bottom() + 1] for r in selection]
        if not parts:
            return np.zeros(0, dtype=np.int64)
        return self.samples[np.unique(np.concatenate(parts))]


def fit_columns(table, model) -> None:
    """Each column of ``table`` (a view of ``model``) as wide as its header and the widest text
    of some rows (the first ones shown and rows spread over the table). Qt's
    resizeColumnsToContents asked the model for ten roles of a thousand rows per column: 150-450
    ms of the GUI thread at every refresh of the comparison."""
    header = table.horizontalHeader()
    fm = QFontMetrics(table.font())
    shown = model.shown()
    pick = np.unique(np.r_[np.arange(min(FIT_ROWS, shown.size)),
                           np.linspace(0, shown.size - 1, min(FIT_ROWS, shown.size)).astype(np.int64)])
    pad = 2 * (table.style().pixelMetric(QStyle.PixelMetric.PM_FocusFrameHMargin, None, table) + 1) + 6
    for c, col in enumerate(model.columns):
        widest = max((fm.horizontalAdvance(col.text(int(i))) for i in shown[pick]), default=0)
        header.resizeSection(c, max(header.sectionSizeHint(c), widest + pad))
