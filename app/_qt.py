"""Process-wide Qt and pyqtgraph set-up shared by the window, the command line and the tests.

Everything here must run before the first QApplication (high-DPI policy) or before the first
plot is built (pyqtgraph options), so callers use :func:`ensure_app` instead of creating the
application themselves.
"""
from __future__ import annotations

import sys

ORGANIZATION = "RobustSubspaceStudio"
APPLICATION = "Robust Subspace Studio"

_configured = False


def _pin_bool_refcounts() -> None:
    """Work around a PySide6 6.12 reference-count bug on Python < 3.12.

    ``SignalInstance.emit()`` on a signal with no receivers returns ``True`` without a new
    reference, so every such emit steals one reference from the ``True`` singleton. A few hundred
    of them (routine in a GUI session) drive its count to zero and CPython aborts with
    "bool_dealloc: deallocating True or False" at exit or mid-session. From Python 3.12 the bool
    singletons are immortal and this is harmless; before that, give them a reference count no
    session can exhaust. (Reproduce: emit an unconnected ``Signal(int)`` 1000 times.)
    """
    if sys.version_info >= (3, 12) or getattr(sys, "_rss_bools_pinned", False):
        return
    import ctypes

    for obj in (True, False):
        ctypes.c_ssize_t.from_address(id(obj)).value += 1 << 40
    sys._rss_bools_pinned = True


_pin_bool_refcounts()


def configure_pyqtgraph() -> None:
    """Options every view assumes (row-major images: a sample reshapes to (height, width))."""
    global _configured
    if _configured:
        return
    import pyqtgraph as pg

    pg.setConfigOptions(imageAxisOrder="row-major", antialias=True)
    _configured = True


def ensure_app(argv: list[str] | None = None):
    """Return the running QApplication, creating it (high-DPI aware) if there is none."""
    from PySide6.QtCore import QCoreApplication, Qt
    from PySide6.QtGui import QGuiApplication
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance()
    if app is None:
        # Qt 6 scales by the screen's device pixel ratio already; pass fractional factors
        # (e.g. 1.25 or 1.5 on laptops) through instead of rounding them, so text stays crisp.
        QGuiApplication.setHighDpiScaleFactorRoundingPolicy(
            Qt.HighDpiScaleFactorRoundingPolicy.PassThrough)
        QCoreApplication.setOrganizationName(ORGANIZATION)
        QCoreApplication.setApplicationName(APPLICATION)
        app = QApplication(list(argv) if argv is not None else sys.argv[:1])
    configure_pyqtgraph()
    return app
