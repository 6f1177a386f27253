"""Robust Subspace Studio's window and command line (PySide6 + pyqtgraph on top of robustcore)."""
# Imported first for its process-wide work-around of a PySide6 reference-count bug (see _qt.py).
from . import _qt  # noqa: F401
