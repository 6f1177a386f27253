import os

import pytest

from robustcore._blas_policy import default_to_one_thread

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# One BLAS thread (before numpy loads), as the window has: on a busy 2-core machine multi-threaded
# OpenBLAS spin-waits on small products (a 0.02 s SVD took seconds), and the GUI tests need the
# main thread to get the CPU.
default_to_one_thread()


def pytest_collection_modifyitems(config, items):
    """Mark the tests that need a Qt application (``-m "not gui"`` runs the others)."""
    for item in items:
        if {"qtbot", "qapp"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.gui)
