"""A layout that places widgets left to right and wraps to a new row when the width runs out.

A view's controls (choosers, tool buttons, sliders) then never squeeze each other: at 1280 px
they sit on one row, in a narrow window or at 200 % scaling on two or three, and every widget
keeps its full size hint, so no combo box shows a cut-off choice. Widgets with a horizontal
stretch (a slider) take the rest of their row.
"""
from __future__ import annotations

from PySide6.QtCore import QPoint, QRect, QSize, Qt
from PySide6.QtWidgets import QLayout, QWidgetItem


class FlowLayout(QLayout):
    def __init__(self, parent=None, spacing: int = 6):
        super().__init__(parent)
        self._items = []
        self._stretch = {}  # item -> True for items that take the rest of their row
        self.setSpacing(spacing)

    # -- QLayout's interface ------------------------------------------------------------------
    def addItem(self, item) -> None:
        self._items.append(item)

    def addWidget(self, widget, stretch: int = 0) -> None:  # noqa: N802 - Qt's name
        self.addChildWidget(widget)
        item = QWidgetItem(widget)
        self._items.append(item)
        if stretch:
            self._stretch[id(item)] = True
        self.invalidate()

    def addStretch(self, _stretch: int = 0) -> None:  # noqa: N802 - rows are left-aligned anyway
        return None

    def count(self) -> int:
        return len(self._items)

    def itemAt(self, index: int):  # noqa: N802
        return self._items[index] if 0 <= index < len(self._items) else None

    def takeAt(self, index: int):  # noqa: N802
        if 0 <= index < len(self._items):
            item = self._items.pop(index)
            self._stretch.pop(id(item), None)
            return item
        return None

    def expandingDirections(self):  # noqa: N802
        return Qt.Orientation(0)

    def hasHeightForWidth(self) -> bool:  # noqa: N802
        return True

    def heightForWidth(self, width: int) -> int:  # noqa: N802
        return self._place(QRect(0, 0, width, 0), apply=False)

    def setGeometry(self, rect: QRect) -> None:  # noqa: N802
        super().setGeometry(rect)
        self._place(rect, apply=True)

    def sizeHint(self) -> QSize:  # noqa: N802
        w = sum(self._hint(i).width() for i in self._visible()) + self.spacing() * max(len(self._visible()) - 1, 0)
        m = self.contentsMargins()
        return QSize(w + m.left() + m.right(), self.minimumSize().height())

    def minimumSize(self) -> QSize:  # noqa: N802
        size = QSize()
        for item in self._visible():
            size = size.expandedTo(self._hint(item))
        m = self.contentsMargins()
        return size + QSize(m.left() + m.right(), m.top() + m.bottom())

    # -- placing ------------------------------------------------------------------------------
    def _visible(self):
        return [i for i in self._items if not (i.widget() is not None and i.widget().isHidden())]

    @staticmethod
    def _hint(item) -> QSize:
        # A widget is never given less than its size hint: that is what keeps texts whole.
        return item.sizeHint().expandedTo(item.minimumSize())

    def rows(self, width: int) -> list[list]:
        """The items of each row for a given width."""
        m = self.contentsMargins()
        avail = width - m.left() - m.right()
        rows, row, used = [], [], 0
        for item in self._visible():
            w = self._hint(item).width()
            need = w if not row else used + self.spacing() + w
            if row and need > avail:
                # A label moves to the next row with the widget it names (its buddy).
                carry = [row.pop()] if len(row) > 1 and self._is_label_of_next(row[-1], item) else []
                rows.append(row)
                row = carry + [item]
                used = sum(self._hint(i).width() for i in row) + self.spacing() * (len(row) - 1)
            else:
                row.append(item)
                used = need
        if row:
            rows.append(row)
        return rows

    @staticmethod
    def _is_label_of_next(item, nxt) -> bool:
        w = item.widget()
        return w is not None and hasattr(w, "buddy") and w.buddy() is not None and w.buddy() is nxt.widget()

    def _place(self, rect: QRect, apply: bool) -> int:
        m = self.contentsMargins()
        y = rect.y() + m.top()
        for row in self.rows(rect.width()):
            hints = [self._hint(i) for i in row]
            h = max(s.height() for s in hints)
            used = sum(s.width() for s in hints) + self.spacing() * (len(row) - 1)
            extra = max(rect.width() - m.left() - m.right() - used, 0)
            stretchers = [i for i in row if id(i) in self._stretch]
            x = rect.x() + m.left()
            for item, s in zip(row, hints):
                w = s.width() + (extra // len(stretchers) if item in stretchers else 0)
                if apply:  # centred in its row
                    item.setGeometry(QRect(QPoint(x, y + (h - s.height()) // 2), QSize(w, s.height())))
                x += w + self.spacing()
            y += h + self.spacing()
        return y - self.spacing() - rect.y() + m.bottom()
