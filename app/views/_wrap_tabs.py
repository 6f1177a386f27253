"""A tab bar whose tabs wrap onto a second (third…) row instead of scrolling.

A single row of ten view names is about 1000 px wide; at 1280 x 800 with both side panels open the
view area is about 720 px, so Qt's bar scrolled and "Summary" and "Known outliers" hid behind
arrows. Here every visible name keeps its full width and the rows grow instead: each row costs one
line of height, while a list down the side would take ~130 px of the width that the figures need.
Qt's own layout of the tabs is not used: this bar places, paints and hit-tests its tabs itself.
"""
from __future__ import annotations

from PySide6.QtCore import QRect, QSize, Qt
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QStyle, QStyleOptionTab, QStylePainter, QTabBar

__all__ = ["WrapTabBar"]

PAD_X = 14  # room beside a name for the style's tab frame: 7 px a side keeps eight names on one row at 960 px


class WrapTabBar(QTabBar):
    """Tabs laid out left to right, wrapping to the width of the tab widget that holds the bar."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setUsesScrollButtons(False)
        self.setExpanding(False)
        self.setElideMode(Qt.TextElideMode.ElideNone)
        self._hover = -1
        self.setMouseTracking(True)

    # -- layout --------------------------------------------------------------------------------
    def _avail(self) -> int:
        p = self.parentWidget()
        return max(p.width() if p is not None else self.width(), 50)

    def _row_height(self) -> int:
        # The style's own tab height (its frame and padding), not less: the text must not be cut.
        natural = super().tabSizeHint(0).height() if self.count() else 0
        return max(self.fontMetrics().height() + 9, natural)

    def _natural(self, i: int) -> int:
        return self.fontMetrics().horizontalAdvance(self.tabText(i)) + PAD_X

    def name_rects(self, width: int | None = None) -> dict[int, QRect]:
        """Where each visible tab is drawn (tab index -> rectangle in this bar)."""
        width = self._avail() if width is None else width
        h, x, y, out = self._row_height(), 0, 0, {}
        for i in range(self.count()):
            if not self.isTabVisible(i):
                continue
            w = min(self._natural(i), width)
            if x > 0 and x + w > width:
                x, y = 0, y + h
            out[i] = QRect(x, y, w, h)
            x += w
        return out

    def rows(self, width: int | None = None) -> int:
        rects = self.name_rects(width)
        return 1 + max((r.top() // self._row_height() for r in rects.values()), default=0)

    def sizeHint(self) -> QSize:
        return QSize(self._avail(), self.rows() * self._row_height())

    def minimumSizeHint(self) -> QSize:
        # One row: the rows needed at the current width are the size hint's business. A minimum
        # from the width of a holder not laid out yet (100 px: ten rows) would stretch the window.
        return QSize(50, self._row_height())

    def tabLayoutChange(self) -> None:
        super().tabLayoutChange()
        self.updateGeometry()
        self.update()

    def relayout(self) -> None:
        """The holder was resized or tabs were shown or hidden: the number of rows may change
        (Qt tells the bar of neither), so the tab widget is asked to lay it out again."""
        if self.height() != self.sizeHint().height():
            self.updateGeometry()
        self.update()

    # -- mouse -----------------------------------------------------------------------------------
    def _index_at(self, pos) -> int:
        return next((i for i, r in self.name_rects().items() if r.contains(pos)), -1)

    def mousePressEvent(self, event) -> None:
        if event.button() == Qt.MouseButton.LeftButton:
            i = self._index_at(event.position().toPoint())
            if i >= 0 and self.isTabEnabled(i):
                self.setCurrentIndex(i)
            event.accept()
            return
        super().mousePressEvent(event)

    def mouseMoveEvent(self, event) -> None:
        i = self._index_at(event.position().toPoint())
        if i != self._hover:
            self._hover = i
            self.update()
        event.accept()

    def mouseReleaseEvent(self, event) -> None:
        event.accept()

    def leaveEvent(self, event) -> None:
        self._hover = -1
        self.update()
        super().leaveEvent(event)

    # -- painting ------------------------------------------------------------------------------------
    def paintEvent(self, event) -> None:
        painter = QStylePainter(self)
        opt = QStyleOptionTab()
        for i, rect in self.name_rects().items():
            self.initStyleOption(opt, i)
            opt.rect = rect
            opt.position = QStyleOptionTab.TabPosition.OnlyOneTab
            opt.selectedPosition = QStyleOptionTab.SelectedPosition.NotAdjacent
            opt.state &= ~QStyle.StateFlag.State_MouseOver
            if i == self._hover:
                opt.state |= QStyle.StateFlag.State_MouseOver
            painter.drawControl(QStyle.ControlElement.CE_TabBarTabShape, opt)
            # The name is drawn here, centred in the whole tab: the style's label would keep its
            # own wider margins and clip the ends of the name.
            painter.setPen(self.palette().color(self.foregroundRole()) if self.isTabEnabled(i)
                           else self.palette().color(QPalette.ColorGroup.Disabled, QPalette.ColorRole.WindowText))
            painter.drawText(rect, Qt.AlignmentFlag.AlignCenter, self.tabText(i))
