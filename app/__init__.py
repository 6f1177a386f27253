"""Robust Subspace Studio's window and command line (PySide6 + pyqtgraph on top of robustcore)."""
# One BLAS thread for everything this program computes, unless the user set a thread variable:
# set before numpy is first imported (BLAS reads it then; the fit worker process inherits it).
# The rule and its figures are robustcore._blas_policy's, which imports nothing heavy.
from robustcore._blas_policy import default_to_one_thread as _one_blas_thread

_one_blas_thread()

# Imported first among the Qt modules: it refuses a PySide6 release with a known crash (see _qt.py).
from . import _qt  # noqa: E402,F401
