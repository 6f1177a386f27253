"""The refusal of PySide6 6.12.0 on Python < 3.12 (app/_qt.py) reads the installed version
without importing PySide6, so a command-line run that never draws does not pay for Qt."""
import subprocess
import sys

import pytest

from app import _qt


def test_the_version_read_from_the_package_files_is_the_imported_ones():
    import PySide6

    assert _qt._pyside_version() == PySide6.__version__


def test_importing_app_leaves_pyside6_unimported():
    code = "import sys, app; print('PySide6' in sys.modules, 'shiboken6' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="the refusal applies below Python 3.12 only")
def test_the_crashing_release_is_refused_with_how_to_fix_it(monkeypatch):
    monkeypatch.setattr(_qt, "_pyside_version", lambda: "6.12.0")
    with pytest.raises(RuntimeError, match=r"6\.12\.0.*PySide6-Essentials<6\.12"):
        _qt._check_pyside()
    monkeypatch.setattr(_qt, "_pyside_version", lambda: "6.11.3")
    _qt._check_pyside()
