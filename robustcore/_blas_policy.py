"""How many BLAS threads robustcore's numerics use: the one module that decides it.

**The rule.** Inside every ``fit`` and ``partial_fit`` (``robustcore._base.fit_protocol``), and in
the scoring pass of a fitted subspace model (``transform``, ``score_samples``, ``predict``...:
``SubspaceModel._row_pass``), BLAS runs on ONE thread, unless the user chose a thread count
for the process through one of :data:`USER_THREAD_VARIABLES` (``OPENBLAS_NUM_THREADS``,
``OMP_NUM_THREADS``, ``MKL_NUM_THREADS``, ``BLIS_NUM_THREADS``, ``VECLIB_MAXIMUM_THREADS``): then
BLAS is left exactly as the user set it, in every method, PCP included. Nothing in robustcore
overrides a variable the user set.

**PCP's exception.** PCP is the one method that uses several cores by itself: it runs its own
threads over ranges of rows (its ``n_jobs``), and a BLAS that starts threads inside each of their
products would oversubscribe the cores. Under the rule BLAS already runs on one thread inside the fit, so PCP's
threads need no limit of their own. When the user chose more than one BLAS thread
(:func:`blas_threads` > 1 inside the fit), PCP with ``n_jobs=None`` runs on ONE thread of its own
and leaves the cores to BLAS, as the user asked; an ``n_jobs`` the user gave is used as given
(both choices are the user's; their threads then multiply).

**The process default.** A program of ours (the window, the command line, the test suite) calls
:func:`default_to_one_thread` before numpy is first imported, so that everything it computes
outside fits (views, exports) also runs on one BLAS thread unless the user set a variable. This
module imports nothing heavy, so that call can come first.

Why one thread: these methods make many mid-sized products, where OpenBLAS's threads cost more
in hand-offs than they gain, and a thread that spin-waits for a core another process holds stalls
the whole product, so that one busy core elsewhere can make a fit many times slower.
``benchmarks/bench_threads.py`` measures both settings (``benchmarks/results_threads.md``).

**robustcore's own pass threads.** The passes over the rows of a large in-memory table run in
lanes on threads of their own (:mod:`robustcore._lanes`), each product on one BLAS thread. They
use every core unless the user set one of the variables above (or OMP_NUM_THREADS) to a count:
``OPENBLAS_NUM_THREADS=1`` then means one core for everything. :func:`default_to_one_thread`
marks the count it sets as ours (:data:`DEFAULTED_VARIABLE`), so in the window and the command
line BLAS stays on one thread while the passes use the cores.

One threadpoolctl controller is built per process, on first use (:func:`blas_controller`, as
scikit-learn's ``_get_threadpool_controller``): inspecting the loaded libraries costs
milliseconds, limiting them microseconds. threadpoolctl is a dependency; without it BLAS is left
as it is. No other module of robustcore touches BLAS threads (``tests/robustcore/test_blas_policy.py``
checks that).
"""
from __future__ import annotations

import contextlib
import os
import sys

__all__ = ["USER_THREAD_VARIABLES", "blas_controller", "blas_is_threaded", "blas_threads",
           "default_to_one_thread", "fit_blas_threads", "fits_on_one_blas_thread", "user_chose_blas_threads"]

#: The environment variables through which a user chooses BLAS's thread count.
USER_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                         "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")

# Set beside them by default_to_one_thread (read by robustcore._lanes.pass_threads).
DEFAULTED_VARIABLE = "ROBUSTCORE_THREADS_DEFAULTED"

_controller = None


def user_chose_blas_threads(environ=None) -> bool:
    """True when the environment sets a BLAS thread count (the user's choice wins)."""
    env = os.environ if environ is None else environ
    return any(str(env.get(v, "")).strip() for v in USER_THREAD_VARIABLES)


def fits_on_one_blas_thread(environ=None) -> bool:
    """Whether BLAS runs on one thread inside fits (the rule: unless the user chose a count, or
    every count chosen is 1), told from the environment alone: no library is inspected (the
    first inspection costs milliseconds). False whenever a variable asks for more."""
    env = os.environ if environ is None else environ
    return all(str(env.get(v, "")).strip() in ("", "1") for v in USER_THREAD_VARIABLES)


def default_to_one_thread(environ=None) -> bool:
    """Set every variable of :data:`USER_THREAD_VARIABLES` to 1 unless the user set one.

    For programs of ours, best called before numpy is imported (BLAS reads the variables when it
    loads); child processes inherit the setting. When numpy was imported already (a script that
    imports numpy before the window, a test runner's plugin), the BLAS libraries loaded so far
    are also limited to one thread now. Returns whether anything was set.
    """
    env = os.environ if environ is None else environ
    if user_chose_blas_threads(env):
        return False
    for var in USER_THREAD_VARIABLES:
        env[var] = "1"
    # ours, not the user's: robustcore's own pass threads still use every core (_lanes)
    env[DEFAULTED_VARIABLE] = "1"
    if environ is None and "numpy" in sys.modules:
        try:
            # a controller of its own: the cached one is built once every library is loaded
            from threadpoolctl import ThreadpoolController
            ThreadpoolController().limit(limits=1, user_api="blas")
        except Exception:        # noqa: BLE001 - threadpoolctl missing or unable to inspect this process
            pass
    return True


def blas_controller():
    """The process's one ``threadpoolctl.ThreadpoolController``, or None without threadpoolctl
    (or when it cannot inspect this process)."""
    global _controller
    if _controller is None:
        try:
            _controller = _known_libraries_controller()
        except Exception:        # noqa: BLE001 - threadpoolctl missing or unable to inspect this process
            _controller = False
    return _controller or None


def _known_libraries_controller():
    """threadpoolctl's controller of this process's libraries, built from the files whose name
    threadpoolctl recognises only. Its own listing (Linux: /proc/self/maps) resolves the path of
    every loaded file before looking at its name: 7.7-8.3 ms for the ~210 files of a process
    that has imported scikit-learn (3.1-3.4 ms this way), paid by the first fit of every fresh
    process at the default threads, between its threaded passes. The kernel's map already names each file by
    its resolved path, so filtering by threadpoolctl's own file-name prefixes first finds the
    same libraries. Elsewhere, or if threadpoolctl's internals differ, its plain controller."""
    import threadpoolctl

    class Known(threadpoolctl.ThreadpoolController):
        def _find_libraries_with_linux(self):
            prefixes = tuple(p for c in threadpoolctl._ALL_CONTROLLERS for p in c.filename_prefixes)
            with open("/proc/self/maps", "rb") as fh:
                paths = set(self._PATH_RE.findall(fh.read()))
            for path in paths:
                path = path.decode("utf-8")
                if os.path.basename(path).lower().startswith(prefixes):
                    self._make_controller_from_path(path)
    try:
        return Known()
    except Exception:        # noqa: BLE001 - another threadpoolctl version: its own listing
        return threadpoolctl.ThreadpoolController()


def blas_threads() -> int | None:
    """The largest thread count of the BLAS libraries loaded in this process right now, or None
    when it cannot be known (no threadpoolctl, no BLAS found)."""
    ctl = blas_controller()
    if ctl is None:
        return None
    counts = [lib.num_threads for lib in ctl.lib_controllers if lib.user_api == "blas"]
    return max(counts) if counts else None


def blas_is_threaded() -> bool:
    """Whether BLAS runs on more than one thread here (inside a fit: the user chose so). A method
    that would run threads of its own (PCP's ``n_jobs=None``) then runs one (PCP's exception)."""
    n = blas_threads()
    return n is not None and n > 1


@contextlib.contextmanager
def fit_blas_threads():
    """BLAS held to one thread inside the block, unless the user chose a count (see the rule)."""
    ctl = None if user_chose_blas_threads() else blas_controller()
    if ctl is None:
        yield
        return
    with ctl.limit(limits=1, user_api="blas"):
        yield
