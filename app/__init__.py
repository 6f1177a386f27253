"""Robust Subspace Studio's window and command line (PySide6 + pyqtgraph on top of robustcore)."""
import os as _os

# One BLAS thread unless the user chose otherwise, set before numpy is first imported (the fit
# worker process inherits it). Measured on the 2-core development machine, nearly idle: PCP on
# the escalator video took 2.8 s with one OpenBLAS thread and 8.4 s with two, MNIST-3000 4.1 s vs
# 7.4 s -- its many mid-sized products lose more to thread hand-offs than they gain. Coherence
# Pursuit at 100,000 x 100 gains a little from two (0.7 s vs 0.9 s); PCP is the one that matters,
# and it now uses the cores through its own threads over row ranges (n_jobs), 2.6 s on MNIST-3000.
_BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
if not any(_os.environ.get(v) for v in _BLAS_THREADS):
    for _var in _BLAS_THREADS:
        _os.environ[_var] = "1"

# Imported first: it refuses a PySide6 release with a known crash (see _qt.py).
from . import _qt  # noqa: E402,F401
