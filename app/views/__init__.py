"""Result views. ``ResultViews`` is the central widget of the main window; ``render_view`` draws
one view offscreen into a PNG or SVG file (for the command line)."""
import sys as _sys


def _pin_none_refcount() -> None:
    # PySide6 6.12 on Python < 3.12 returns None from every void method (QGraphicsItem.update,
    # setPen, QWidget.update, ...) without a new reference, so each call steals one from None.
    # A view redraw makes hundreds of such calls; None starts with a few thousand references,
    # and CPython aborts with "none_dealloc: deallocating None" after a few redraws. From 3.12
    # None is immortal and this is harmless; before that, give it a count no session exhausts.
    # (app/_qt.py does the same for True/False; this belongs beside it.)
    if _sys.version_info >= (3, 12) or getattr(_sys, "_rss_none_pinned", False):
        return
    import ctypes

    ctypes.c_ssize_t.from_address(id(None)).value += 1 << 40
    _sys._rss_none_pinned = True


_pin_none_refcount()

from .result_views import VIEW_NAMES, ResultViews, render_view  # noqa: E402

__all__ = ["ResultViews", "render_view", "VIEW_NAMES"]
