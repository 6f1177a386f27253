"""The test run's watchdog: a test still running after ``RSS_TEST_WATCHDOG_SECONDS`` (480) has
every thread's stack written to the terminal, and the run ends.

pytest-timeout (pyproject.toml, 300 s) fails a test that hangs in Python and goes on to the
next. It cannot end a deadlock in C (a Qt mutex, a ``QThread.wait()``): its signal never reaches
Python there. faulthandler's timer is a C thread that needs no GIL, so CI stops within minutes
with the stacks instead of after its 90 with nothing. Loaded by tests/conftest.py, or by
``pytest -p tests.watchdog``.
"""
import faulthandler
import os
import sys

import pytest


def watchdog_seconds() -> float:
    return float(os.environ.get("RSS_TEST_WATCHDOG_SECONDS", "480"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item):
    try:
        from _pytest.faulthandler import fault_handler_stderr_fd_key
        stderr = item.config.stash[fault_handler_stderr_fd_key]   # the terminal's, not the capture's
    except (ImportError, KeyError):
        stderr = sys.__stderr__
    faulthandler.dump_traceback_later(watchdog_seconds(), exit=True, file=stderr)
    try:
        return (yield)
    finally:
        faulthandler.cancel_dump_traceback_later()
