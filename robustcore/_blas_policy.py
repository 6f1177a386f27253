"""How many BLAS threads a fit uses, decided by robustcore rather than left to the BLAS default.

The rule, applied by every ``fit`` and ``partial_fit`` (``robustcore._base.fit_method``): inside a
fit BLAS runs on ONE thread, unless the user chose a thread count for the process through
``OPENBLAS_NUM_THREADS``, ``OMP_NUM_THREADS``, ``MKL_NUM_THREADS``, ``BLIS_NUM_THREADS`` or
``VECLIB_MAXIMUM_THREADS`` (then BLAS is left exactly as the user set it). Methods that want
several cores run their own threads over row ranges (PCP's ``n_jobs``).

Why one: these methods make many mid-sized products, where OpenBLAS's threads cost more in
hand-offs than they gain, and a thread that spin-waits for a core another process holds stalls
the whole product. From a plain script with default threads, PCP on a 25,344 x 24 clip took 43 s
while another process kept one of the two cores busy, against 0.69 s with one thread;
``benchmarks/bench_threads.py`` measures it (``benchmarks/results_threads.md``). The window and
the command line already start with one BLAS thread; this makes a script match them.

Needs threadpoolctl (a dependency); without it BLAS is left as it is.
"""
from __future__ import annotations

import contextlib
import os

__all__ = ["USER_THREAD_VARIABLES", "fit_blas_threads", "user_chose_blas_threads"]

USER_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                         "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")

_controller = None


def user_chose_blas_threads() -> bool:
    """True when the environment sets a BLAS thread count (the user's choice wins)."""
    return any(os.environ.get(v, "").strip() for v in USER_THREAD_VARIABLES)


def _blas_controller():
    # Built once: inspecting the loaded libraries costs milliseconds, limiting them microseconds.
    global _controller
    if _controller is None:
        try:
            from threadpoolctl import ThreadpoolController
            _controller = ThreadpoolController()
        except Exception:        # threadpoolctl missing or unable to inspect this process
            _controller = False
    return _controller or None


@contextlib.contextmanager
def fit_blas_threads():
    """BLAS held to one thread inside the block, unless the user chose a count (see module doc)."""
    ctl = None if user_chose_blas_threads() else _blas_controller()
    if ctl is None:
        yield
        return
    with ctl.limit(limits=1, user_api="blas"):
        yield
