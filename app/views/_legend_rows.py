"""Legend rows level with their symbols. pyqtgraph centres each symbol in its row of the legend
but leaves the label at the top of its cell: where a row is taller than one line (another entry
on two lines, or the legend stretched to the height of a taller legend beside it in the
figure's row) a label stood above its symbol, level with nothing."""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QSizePolicy

_FIXED = QSizePolicy.Policy.Fixed
_PREFERRED = QSizePolicy.Policy.Preferred


def level_rows(legend, figure_layout=None) -> None:
    """Each label of ``legend`` centred on its row (its symbol's line); with the
    ``figure_layout`` it is in, the legend keeps its own height at the top of its cell, so
    legends side by side start on one line. Called again after each change of entries or
    columns (pyqtgraph lays the entries out anew then)."""
    legend.setSizePolicy(_PREFERRED, _FIXED)
    for _sample, label in legend.items:
        label.setSizePolicy(_PREFERRED, _FIXED)
        legend.layout.setAlignment(label, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
    if figure_layout is not None:
        figure_layout.setAlignment(legend, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
    legend.layout.invalidate()
