"""Process-wide Qt and pyqtgraph set-up shared by the window, the command line and the tests.

Everything here must run before the first QApplication (high-DPI policy) or before the first
plot is built (pyqtgraph options), so callers use :func:`ensure_app` instead of creating the
application themselves.
"""
from __future__ import annotations

import gc
import sys
from contextlib import contextmanager

ORGANIZATION = "RobustSubspaceStudio"
APPLICATION = "Robust Subspace Studio"

_configured = False


def _pyside_version() -> str:
    """PySide6's version, read from its ``_config.py`` without importing it where that file says
    it: importing PySide6 installs shiboken's import hook, which reads the source of every module
    imported after it (0.7 s of CPU per command-line run that never draws)."""
    import importlib.util
    import re
    from pathlib import Path

    spec = importlib.util.find_spec("PySide6")
    for place in (spec.submodule_search_locations or []) if spec is not None else []:
        try:
            text = (Path(place) / "_config.py").read_text(encoding="utf-8")
        except OSError:
            continue
        found = re.search(r"^version\s*=\s*[\"']([^\"']+)[\"']", text, re.M)
        if found:
            return found.group(1)
    import PySide6   # (a layout this does not know: ask the package itself)

    return PySide6.__version__


def _check_pyside() -> None:
    """Refuse PySide6 6.12.0 on Python < 3.12 with a message that says how to fix it.

    That release drops a reference to None/True/False on every void Qt call and every emit with
    no receiver; CPython aborts ("deallocating None") after a few thousand redraws. pyproject.toml
    pins PySide6 below 6.12; this catches an environment that was set up by hand.
    """
    if sys.version_info >= (3, 12):
        return
    if _pyside_version().startswith("6.12.0"):
        raise RuntimeError(
            "PySide6 6.12.0 has a reference-counting bug that crashes Robust Subspace Studio on "
            f"Python {sys.version_info[0]}.{sys.version_info[1]}; install an earlier release with "
            "pip install 'PySide6-Essentials<6.12' (or use Python 3.12 or later)")


_check_pyside()


def configure_pyqtgraph() -> None:
    """Options every view assumes (row-major images: a sample reshapes to (height, width))."""
    global _configured
    if _configured:
        return
    import pyqtgraph as pg

    pg.setConfigOptions(imageAxisOrder="row-major", antialias=True)
    _configured = True


# seconds a thread may hold the GIL while another waits for it, in the window's process
GUI_SWITCH_INTERVAL = 0.0005


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
    configure_window_process()
    return app


def configure_window_process() -> None:
    """pyqtgraph's options, and a short GIL switch interval: the views bin large results on
    worker threads, partly in Python (the spread of the points worth drawing). At CPython's
    default 5 ms the GUI thread, which gives the GIL up at every Qt call, waited up to 5 ms
    each time to get it back: a 2M-row tour's worst gap was 0.9-1.1 s of wall for under 0.1 s
    of its own CPU; at 0.5 ms 0.12-0.35 s (benchmarks/results_views.md)."""
    sys.setswitchinterval(GUI_SWITCH_INTERVAL)
    configure_pyqtgraph()


def fit_to_screen(window) -> None:
    """Keep the whole of ``window``, frame included, inside its screen's available area (the
    desktop less its panels): at 1360 x 860 on a 1280 x 800 laptop the Method panel's Run and
    Cancel were past the screen's edge. Before the window is first shown its frame is not known:
    a title bar's height is kept free for it."""
    from PySide6.QtGui import QGuiApplication
    from PySide6.QtWidgets import QStyle

    screen = window.screen() or QGuiApplication.primaryScreen()
    if screen is None:
        return
    room, frame = screen.availableGeometry(), window.frameGeometry()
    side = frame.width() - window.width()
    top = max(frame.height() - window.height(), window.style().pixelMetric(QStyle.PixelMetric.PM_TitleBarHeight))
    w, h = min(window.width(), room.width() - side), min(window.height(), room.height() - top)
    if (w, h) != (window.width(), window.height()):
        window.resize(w, h)
    x = min(max(frame.x(), room.left()), room.right() + 1 - w - side)
    y = min(max(frame.y(), room.top()), room.bottom() + 1 - h - top)
    if (x, y) != (frame.x(), frame.y()):
        window.move(x, y)


def collect_due(thresholds=None) -> None:
    """Collect, on the calling thread, the generations automatic collection would have collected
    by now: each whose count passed its threshold (``gc.get_threshold()``), oldest such one."""
    thresholds = gc.get_threshold() if thresholds is None else thresholds
    counts = gc.get_count()
    generation = -1
    for g in range(3):
        if counts[g] <= thresholds[g]:
            break
        generation = g
    if generation >= 0:
        gc.collect(generation)


@contextmanager
def collected_on_this_thread():
    """No automatic collection inside the block; what it left collected here at its end.

    For Qt work on a thread beside others that allocate (the command line draws its figures
    while a Dask client's threads may still run): a collection they start would destroy this
    block's widgets on their thread (see :class:`MainThreadGarbage`)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.collect()
        if was_enabled:
            gc.enable()


class MainThreadGarbage:
    """Python's cycle collector run from the GUI thread only, on a timer.

    Left automatic, the collector runs in whichever thread happens to allocate when a threshold
    is crossed: a Dask reader or a lane of a pass (robustcore._lanes). If the garbage holds a Qt
    widget, its C++ destructor then runs off the GUI thread. In the test suite that deadlocked
    a Dask thread in shiboken's GIL handling while it destroyed a QMenu. So automatic collection
    is switched off, and every ``interval_ms`` the generations whose counts passed their
    thresholds are collected here. pyqtgraph's GarbageCollector does the same. :meth:`stop`
    gives back the setting :meth:`start` found (a process that had switched automatic
    collection off itself, such as the test suite, keeps it off).
    """

    def __init__(self, interval_ms: int = 500):
        from PySide6.QtCore import QTimer
        self._thresholds = gc.get_threshold()
        self.timer = QTimer(interval=interval_ms)
        self.timer.timeout.connect(self.collect)
        self.start()

    def start(self) -> None:
        self._was_enabled = gc.isenabled()
        gc.disable()
        self.timer.start()

    def collect(self) -> None:
        # No collection while a warm-up imports: a full one walked every object its imports had
        # made so far (0.24 s of CPU on the GUI thread with scikit-learn half loaded), and the
        # younger ones every object made since the last tick, most of them the imports' own
        # (40-70 ms each during the first Open, issue 33.4). Those objects live as long as the
        # process: the warm-up freezes them when it ends, and the collections due run then.
        warm = sys.modules.get("app.warm_up")
        if warm is None or not warm.importing():
            collect_due(self._thresholds)

    def stop(self) -> None:
        """The setting :meth:`start` found again (the last window has closed)."""
        self.timer.stop()
        if self._was_enabled:
            gc.enable()


# One collector for every window, made once and never deleted: deleting its QTimer just after
# automatic collection came back let a collection start inside that QTimer's disconnection,
# destroy other widgets there, and deadlock on a Qt mutex (seen in the test suite).
_garbage: MainThreadGarbage | None = None
_holders = 0


def hold_main_thread_garbage() -> None:
    """A window opens: cycles are collected on the GUI thread from now on (counted)."""
    global _garbage, _holders
    _holders += 1
    if _holders == 1:
        if _garbage is None:
            _garbage = MainThreadGarbage()
        else:
            _garbage.start()


def release_main_thread_garbage() -> None:
    """A window closed; with the last one, automatic collection is as the first found it."""
    global _holders
    _holders = max(0, _holders - 1)
    if _holders == 0 and _garbage is not None:
        _garbage.stop()
