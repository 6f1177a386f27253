"""A table's feature axis: the columns' names under their centres, as many as fit side by side.

pyqtgraph's own ticks for a table's heatmaps were numbers at the columns' edges (0 to 12 for 12
columns: one label too many, none under a column), chosen for a numeric range, and at 1280 x 800
with the four panels in one row they ran together. Here each label is a feature's name, every
k-th column's when they do not all fit, k chosen from the widest name in view so that no two
labels touch; zooming in shows more of them, down to every column. Where not even two names fit,
the columns' numbers are shown instead (0 is the first).
"""
from __future__ import annotations

import math

import pyqtgraph as pg
from PySide6.QtGui import QFont, QFontMetricsF

__all__ = ["FeatureAxis", "GAP_PX"]

#: Room between two labels (pixels).
GAP_PX = 8
# Names measured to find the widest in view: a 100,000-column table is sampled, not read whole.
_MEASURED = 400
_STEPS = (1, 2, 5)


def _nice(step: float) -> int:
    """The smallest of 1, 2, 5, 10, 20, 50... at least ``step``."""
    decade = 1
    while True:
        for s in _STEPS:
            if s * decade >= step:
                return s * decade
        decade *= 10


class FeatureAxis(pg.AxisItem):
    """A bottom axis that names the features of a table (:meth:`set_names`; None: numbers)."""

    def __init__(self, **kwargs):
        super().__init__("bottom", **kwargs)
        self.names = None
        self._numbers = False   # the last ticks are column numbers: names did not fit
        self._fill = self.style["textFillLimits"]

    def set_names(self, names) -> None:
        self.names = names
        # pyqtgraph drops every label of a level whose labels fill more than 80 % of the axis;
        # these are spaced apart already, so they all stay.
        self.setStyle(textFillLimits=self._fill if names is None else [(0, 1.0)])
        self.picture = None   # pyqtgraph's cached drawing
        self.update()

    def _metrics(self) -> QFontMetricsF:
        return QFontMetricsF(self.style.get("tickFont") or QFont())

    def tickValues(self, minVal, maxVal, size):
        if self.names is None:
            return super().tickValues(minVal, maxVal, size)
        d = len(self.names)
        lo, hi = max(0, math.ceil(minVal - 0.5)), min(d - 1, math.floor(maxVal - 0.5))
        if hi < lo or size <= 0 or maxVal <= minVal:
            return []
        fm = self._metrics()
        stride = max(1, (hi - lo + 1) // _MEASURED)
        per_column = size / (maxVal - minVal)
        for numbers in (False, True):
            label = str if numbers else (lambda j: str(self.names[j]))
            widest = max(fm.horizontalAdvance(label(j)) for j in range(lo, hi + 1, stride))
            step = _nice((widest + GAP_PX) / per_column)
            # a label reaching past the axis's ends is not drawn (pyqtgraph): such ticks are left out
            ticks = [j + 0.5 for j in range(math.ceil(lo / step) * step, hi + 1, step)
                     if abs((j + 0.5 - minVal) * per_column - size / 2) + fm.horizontalAdvance(label(j)) / 2
                     <= size / 2]
            if len(ticks) >= 2 or hi == lo:
                break
        self._numbers = numbers
        return [(float(step), ticks)]

    def tickStrings(self, values, scale, spacing):
        if self.names is None:
            return super().tickStrings(values, scale, spacing)
        return [str(int(v)) if self._numbers else str(self.names[int(v)]) for v in values]
