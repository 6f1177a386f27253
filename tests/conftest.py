import gc
import os
from pathlib import Path

import pytest

from robustcore._blas_policy import default_to_one_thread
from tests import watchdog

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# Qt's offscreen screen is 800 x 800 by default, and the window keeps itself inside its screen
# (app._qt.fit_to_screen): the GUI tests size their windows (1280 x 800 and up) on a screen of a
# desktop's size instead. tests/app/test_window_start.py sets small screens of its own.
if os.environ["QT_QPA_PLATFORM"].strip() == "offscreen":
    os.environ["QT_QPA_PLATFORM"] = f"offscreen:configfile={Path(__file__).with_name('offscreen_screen.json')}"
# One BLAS thread (before numpy loads), as the window has: on a busy 2-core machine multi-threaded
# OpenBLAS spin-waits on small products (a 0.02 s SVD took seconds), and the GUI tests need the
# main thread to get the CPU.
default_to_one_thread()

# a hook: a test that hangs past pytest-timeout's reach ends the run with every thread's stack
pytest_runtest_protocol = watchdog.pytest_runtest_protocol


def pytest_collection_modifyitems(config, items):
    """Mark the tests that need a Qt application (``-m "not gui"`` runs the others)."""
    for item in items:
        if {"qtbot", "qapp"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.gui)


_APP_TESTS = Path(__file__).parent / "app"


@pytest.fixture(autouse=True)
def _cycles_collected_on_the_main_thread(request):
    """In the GUI tests (tests/app) Python's cycle collector never runs by itself, from the first
    of them on: a collection started by whichever thread allocates (a Dask or distributed thread
    a test left running, a lane of a pass) destroyed a Qt widget on that thread and deadlocked in
    shiboken's GIL handling. After each test its garbage is collected here, on the main (GUI)
    thread, as app._qt.MainThreadGarbage does in the window. The other tests run with automatic
    collection, switched back on once everything the GUI tests left has been collected here."""
    gui = Path(request.path).is_relative_to(_APP_TESTS)
    if gui:
        gc.disable()
    elif not gc.isenabled():
        gc.collect()
        gc.enable()
    yield
    if gui:
        # everything, not only the generations due: a Qt object left in an older generation
        # would wait there for the first thread that happens to collect
        gc.collect()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """The GUI tests' collector is off before ANY of their fixtures is set up: a module-scoped
    fixture (set up before the autouse one above) ran a Dask pass whose thread collected a
    window's menu and deadlocked in shiboken."""
    if Path(str(item.path)).is_relative_to(_APP_TESTS):
        gc.disable()
