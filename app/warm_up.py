"""Imports done ahead of need, off the GUI thread, without ever making the GUI thread wait for them
(no Qt here).

Python lets one thread at a time import a module: a thread that needs a module another thread is
still importing waits for that import to end. The window used to import scikit-learn and SciPy on
a warm-up thread while the first Open's data reached its views, whose first draw imports
``robustcore.compare`` (and so ``sklearn.base``): the GUI thread stood waiting for the warm-up
to finish that import, 3-5 s at load 8 (issue 33).

So the window's warm-up (:func:`warm_up`) imports what the window's own modules import from
outside app, Qt and the standard library (:func:`window_imports`, read from their source), and
while it does, every load or fit that ends waits in its own thread before its result reaches the
GUI thread (:func:`window_ready`). That is all the window process imports ahead of need. An import
holds the GIL, in stretches no switch interval splits (compiling a module's source, a C
extension's start): run while the user clicks through views, such imports froze the window
100-200 ms at a time (issue 33). So what a user asks for by name later (:data:`LATER`: sessions,
live frame stores, video export) and the estimators are imported by the thread that is about to
need them, off the GUI thread: a fit's estimator by the thread that loads the data it will fit
(the method chosen then) or else by the thread that receives its result, while the worker
process fits (:func:`for_result`); zarr by the thread that relays a live frame store;
the rest by the loader or exporter thread that opens a session or writes a video. The worker
processes import the estimators ahead (:func:`warm_steps`), with numba's start.
"""
from __future__ import annotations

import functools
import gc
import importlib
import re
import sys
import threading
from contextlib import contextmanager
from pathlib import Path
from collections.abc import Callable

from robustcore._progress import Cancelled

__all__ = ["warm_up", "warm_steps", "window_imports", "window_ready", "for_window", "for_result", "import_here",
           "importing"]

_APP = Path(__file__).resolve().parent
# The window's own imports, which need no warming: Qt and its plot library are imported on the GUI
# thread before the window shows (and must be), numpy by everything before that.
_ALREADY_THERE = {"app", "PySide6", "shiboken6", "pyqtgraph", "numpy", "__future__"}

# Imported by the window only for what a user asks for by name: a session or a live frame store
# (zarr, the data's digest), a video export (av, PIL). About 0.9 s of CPU, never imported ahead:
# each by the thread that opens a session, relays a live store or writes a video
# (tests/app/test_warm_up_order.py: an Open and a Run, then idle time, load none of them).
LATER = ("zarr", "av", "PIL", "robustcore.bigdata._digest")


# ``from a.b import c, d as e`` or ``import a.b`` at the start of a line (``from .x``, the app's
# own, does not match); read with a pattern, not a parser: parsing the app's 75 files cost 1.6 s
# at load 10, scanning them 0.1 s.
_IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+(\w[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#]+)"
                     r"|import[ \t]+(\w[\w.]*))", re.M)


@functools.lru_cache(maxsize=1)
def window_imports() -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Each ``from module import names`` (``names`` empty for ``import module``) written in the
    window's modules (the app package but its command line), at module level or inside a
    function, whose module is outside app, Qt, pyqtgraph, numpy and the standard library."""
    seen: dict[str, set[str]] = {}
    for path in sorted(_APP.rglob("*.py")):
        if "cli" in path.relative_to(_APP).parts:
            continue
        for m in _IMPORT.finditer(path.read_text(encoding="utf-8")):
            module = m.group(1) or m.group(3)
            top = module.partition(".")[0]
            if top in _ALREADY_THERE or top in sys.stdlib_module_names:
                continue
            names = (m.group(2) or "").strip("()").replace("\n", " ").split(",")
            seen.setdefault(module, set()).update(n.split()[0] for n in names if n.split())
    return tuple((m, tuple(sorted(n))) for m, n in sorted(seen.items()))


def _import_as_written(module: str, names: tuple[str, ...]) -> None:
    """What ``from module import names`` loads: the module, then each name as an attribute
    (a package's lazy ``__getattr__`` loads its submodule) or else as a submodule."""
    try:
        mod = importlib.import_module(module)
        for name in names:
            if not hasattr(mod, name):
                importlib.import_module(f"{module}.{name}")
    except ImportError:  # an optional library: the part of the window that needs it says so
        pass


class _Gate:
    """Closed while a window's warm-up imports the window's modules (counted: one per window)."""

    def __init__(self):
        self._cond = threading.Condition()
        self._warming = 0

    @contextmanager
    def closed(self):
        with self._cond:
            self._warming += 1
        try:
            yield
        finally:
            with self._cond:
                self._warming -= 1
                self._cond.notify_all()

    def is_closed(self) -> bool:
        with self._cond:
            return self._warming > 0

    def wait(self, should_stop: Callable[[], bool], poll: float = 0.05) -> None:
        with self._cond:
            while self._warming:
                if should_stop():
                    raise Cancelled("cancelled while the window was starting")
                self._cond.wait(poll)


_GATE = _Gate()
_running = [0]   # warm-ups importing now (a list: changed under the lock)
_running_lock = threading.Lock()


@contextmanager
def _importing():
    with _running_lock:
        _running[0] += 1
    try:
        yield
    finally:
        with _running_lock:
            _running[0] -= 1


def importing() -> bool:
    """True while a warm-up is importing: what it makes is not yet out of the cycle collector's
    sight, so a full collection now would walk all of it (app._qt.MainThreadGarbage waits)."""
    return _running[0] > 0


def window_ready(should_stop: Callable[[], bool] = lambda: False) -> None:
    """Return once no warm-up is importing what the window's GUI thread imports; for the thread
    that is about to hand a load's or a fit's result to the GUI thread (Cancelled if
    ``should_stop()`` turns true first). At once in a process with no window warming."""
    _GATE.wait(should_stop)


def window_warming() -> bool:
    """True while a window's warm-up imports its modules (work that can wait should)."""
    return _GATE.is_closed()


def for_window(value, progress):
    """``value``, once :func:`window_ready`: the last step of a job function whose result goes to
    the GUI thread. ``progress`` is the job's callback (robustcore's protocol: False cancels)."""
    window_ready(lambda: progress(1.0, "starting up") is False)
    return value


def _later(module: str) -> bool:
    return any(module == m or module.startswith(m + ".") for m in LATER)


def _estimator(method) -> None:
    """Import ``method``'s estimator class (a registry Method); one the user cannot use here is
    reported when they pick it."""
    try:
        method.factory()
    except (ImportError, AttributeError):
        pass


def warm_steps(loaders: bool = True, jit: bool = True) -> list:
    """One import per step, for a worker process between its jobs: every registry estimator,
    robustcore.anomaly, (with ``loaders``) the data loaders and (with ``jit``) the start of
    numba's loading."""
    from robustcore.methods import METHODS

    steps = [functools.partial(_estimator, m) for m in METHODS.values()]
    mods = ("robustcore.anomaly", "robustcore.datasets") if loaders else ("robustcore.anomaly",)
    steps += [functools.partial(importlib.import_module, mod) for mod in mods]
    if not jit:
        return steps
    # numba's 1-3 s start-up on a background thread, not in the first fit
    return steps + [lambda: importlib.import_module("robustcore._jit").preload()]


def import_here(module: str) -> None:
    """Import ``module`` on the calling thread (not the GUI thread) before what it hands the GUI
    thread needs it; its objects then leave the cycle collector's sight (see :func:`warm_up`)."""
    if module in sys.modules:
        return
    with _importing():
        try:
            importlib.import_module(module)
        except ImportError:   # an optional library: the part of the window that needs it says so
            pass
    gc.freeze()


def for_result(spec) -> None:
    """Import the estimator a fit of ``spec`` (a registry name or Method) returns, on the thread
    that will receive the result, while the worker process fits: the result's unpickling needs its
    class. A first PCA run's estimator modules cost 85 ms of CPU, in stretches of up to 17 ms
    holding the GIL (compiling robustcore.subspace._base)."""
    from robustcore.methods import get_method
    try:
        method = get_method(spec) if isinstance(spec, str) else spec
    except ValueError:   # an unknown name: the fit says so
        return
    with _importing():
        _estimator(method)
    gc.freeze()


def warm_up(should_stop: Callable[[], bool] = lambda: False) -> None:
    """The window process's warm-up, on a thread of its own: the window's imports a first Open
    draws with (results wait for them: :func:`window_ready`), but for :data:`LATER`. Nothing
    else is imported ahead in the window process (see the module's docstring). numba is left
    alone here: the window's fits run in worker processes, and numba compiling on a thread beside
    Qt's ended one CI run in a segmentation fault.

    What these imports made lives as long as the process: it is moved out of the cycle
    collector's sight (``gc.freeze``) at the end, or every full collection on the GUI thread
    (app._qt.MainThreadGarbage) would walk it again: 0.24 s of CPU each with these modules
    loaded, 5 microseconds once frozen. (Cycles that were garbage at that moment are never
    collected: a few kB.)"""
    with _GATE.closed(), _importing():
        for module, names in window_imports():
            if _later(module):
                continue
            if should_stop():
                return
            _import_as_written(module, names)
        gc.freeze()
