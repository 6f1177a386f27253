"""Robust Subspace Studio's window and command line (PySide6 + pyqtgraph on top of robustcore)."""
# Imported first: it refuses a PySide6 release with a known crash (see _qt.py).
from . import _qt  # noqa: F401
