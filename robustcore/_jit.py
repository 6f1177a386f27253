"""Optional compiled kernels: one place that decides whether numba's kernels are used.

numba is not a dependency (it is the ``fast`` extra). A module of kernels is imported through
:func:`kernels`, which returns it, or None when numba is missing, cannot load, or compiled
kernels are switched off with the environment variable ``ROBUSTCORE_NO_JIT=1``; every caller
keeps a numpy path that gives the same results up to rounding.

Loading numba and its cached kernels takes one to three seconds the first time in a process
(numba's import and LLVM start-up), longer than the kernels save on a fit of a few seconds.
``kernels(name, wait=False)`` therefore starts that loading on a background thread and returns
None until it is done: a method keeps going on numpy meanwhile and picks the kernels up on its
next pass. A kernel module may define ``warm_up()``, called once by the loader, so that the
cached machine code is loaded there and not in the method's first compiled call.
"""
from __future__ import annotations

import importlib
import os
import threading

__all__ = ["enabled", "kernels", "preload", "ready"]

# Every kernel module of the package (what ``preload`` starts loading).
MODULES = ("robustcore.subspace._pcp_jit", "robustcore.online._scw_jit")

_loaded: dict[str, object] = {}
_loading: dict[str, threading.Thread] = {}
_lock = threading.Lock()


def enabled() -> bool:
    """False when ``ROBUSTCORE_NO_JIT`` is set to anything but "" or "0"."""
    return os.environ.get("ROBUSTCORE_NO_JIT", "") in ("", "0")


def _load(module):
    try:
        mod = importlib.import_module(module)
        warm = getattr(mod, "warm_up", None)
        if warm is not None:
            warm()
    except Exception:       # noqa: BLE001 - numba missing, or an install that cannot load: use numpy
        mod = None
    _loaded[module] = mod


def ready(module: str):
    """The kernel module if it is already loaded in this process, else None (never loads)."""
    return _loaded.get(module)


def kernels(module: str, wait: bool = True):
    """The kernel module ``module`` (absolute name), or None if unavailable.

    ``wait=False``: None while it is still loading (the loading then runs on a background
    thread, started by the first such call).
    """
    if module in _loaded:
        return _loaded[module]
    with _lock:
        thread = _loading.get(module)
        if thread is None and module not in _loaded:
            if wait:
                _load(module)
                return _loaded[module]
            thread = threading.Thread(target=_load, args=(module,), name=f"load-{module}", daemon=True)
            _loading[module] = thread
            thread.start()
    if wait and thread is not None:
        thread.join()
    return _loaded.get(module)


def preload():
    """Start loading every kernel module in the background (a long-lived process, such as the
    window's fit worker, calls this once so its first fits find them ready)."""
    if enabled():
        for module in MODULES:
            kernels(module, wait=False)
