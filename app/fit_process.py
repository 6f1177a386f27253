"""Fits in a separate worker process, driven from a worker thread of the window (no Qt here).

Why a process: a thread keeps the window responsive only while the fit lets go of Python's GIL.
Many LAPACK calls do not: measured on this project's machine, ``scipy.linalg.svd`` and
``scipy.linalg.eigh`` of a 2000 × 2000 matrix hold the GIL for their whole duration (tens of
seconds), and so do ``np.linalg.qr(..., mode="r")`` and ``np.linalg.svd(..., compute_uv=False)``
on tall matrices. A fit in such a call would freeze the window and could not be cancelled until
the call returned. In a child process it can do neither: the window only relays messages, and
Cancel ends the child if it does not stop by itself within :data:`CANCEL_GRACE` seconds.

Protocol (one duplex pipe per worker, messages are tuples tagged with a job id):
parent -> child ``("run", job_id, method_spec, dataset, params)``, ``("cancel", job_id)``,
``("quit",)``; child -> parent ``("ready",)``, ``("progress", job_id, fraction, message)``,
``("done", job_id, RunResult)``, ``("cancelled", job_id)``, ``("error", job_id, message, details, is_value_error)``.
``method_spec`` is a registry name, or a picklable :class:`~robustcore.methods.Method` (tests).
Objects cross the pipe with :mod:`multiprocessing`'s own serialisation between two processes of
this program; nothing is written to or read from files this way.
"""
from __future__ import annotations

import atexit
import itertools
import multiprocessing as mp
import pickle
import threading
import time
import traceback

from robustcore._progress import Cancelled

__all__ = ["FitPool", "WorkerDied", "RemoteError", "CANCEL_GRACE", "shared_pool"]

# After Cancel, how long a fit may take to reach its next progress report before its process is
# ended. The issue asks for "stops within a second"; this leaves room for the messages.
CANCEL_GRACE = 0.4
_POLL = 0.05
_THROTTLE = 0.05
_IDS = itertools.count(1)


class WorkerDied(RuntimeError):
    """The worker process ended without an answer (crashed, killed, out of memory)."""


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    if isinstance(exc, ValueError) and text:
        return text
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _serve(conn) -> None:
    """Child process main loop: import the estimators once, then run jobs until told to quit."""
    import importlib

    from robustcore.methods import METHODS, get_method
    for m in METHODS.values():  # warm: the first Run should not pay for scipy.stats & co.
        try:
            m.factory()
        except Exception:  # noqa: BLE001 - reported when that method is run
            pass
    for mod in ("robustcore.anomaly",):
        try:
            importlib.import_module(mod)
        except Exception:  # noqa: BLE001
            pass
    from robustcore import _jit
    _jit.preload()   # numba's 1-3 s start-up on a background thread, not in the first fit
    try:
        conn.send(("ready",))
    except (EOFError, OSError):
        return
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg[0] == "quit":
            return
        if msg[0] != "run":
            continue  # a late "cancel" for a job that already ended
        _, job_id, spec, dataset, params = msg
        last = [0.0]

        def progress(fraction, message="", job_id=job_id, last=last):
            try:
                return _check(conn, job_id, fraction, message, last)
            except (EOFError, OSError):  # the window has gone: stop quietly
                raise SystemExit(0) from None

        try:
            method = get_method(spec) if isinstance(spec, str) else spec
            result = method.run(dataset, params, progress)
        except Cancelled:
            reply = ("cancelled", job_id)
        except Exception as exc:  # noqa: BLE001 - everything goes back to the window
            reply = ("error", job_id, _describe(exc), traceback.format_exc(), isinstance(exc, ValueError))
        else:
            reply = ("done", job_id, result)
        try:
            try:
                conn.send(reply)
            except (TypeError, AttributeError, pickle.PicklingError):
                if reply[0] != "done":
                    raise
                # A fitted estimator may hold something that cannot be sent (a closure); the
                # result's arrays and numbers are what matters, so send it without the estimator.
                reply[2].estimator = None
                conn.send(reply)
        except (EOFError, OSError):
            return


def _check(conn, job_id, fraction, message, last) -> bool:
    """The child's progress callback: read control messages, forward progress (throttled)."""
    while conn.poll():
        m = conn.recv()
        if m[0] == "cancel" and m[1] == job_id:
            return False
        if m[0] == "quit":
            raise SystemExit(0)
    now = time.monotonic()
    if now - last[0] >= _THROTTLE:
        last[0] = now
        conn.send(("progress", job_id, float(fraction), str(message)))
    return True


class _Worker:
    def __init__(self, ctx):
        self.conn, child = ctx.Pipe(duplex=True)
        self.proc = ctx.Process(target=_serve, args=(child,), daemon=True, name="robust-studio-fit")
        self.proc.start()
        child.close()
        self.ready = False

    def alive(self) -> bool:
        return self.proc.is_alive()

    def wait_ready(self, should_stop) -> None:
        while not self.ready:
            if should_stop():
                raise Cancelled("cancelled while the worker process was starting")
            if not self.alive():
                raise WorkerDied(f"the worker process ended while starting (exit code {self.proc.exitcode})")
            if self.conn.poll(_POLL):
                try:
                    msg = self.conn.recv()
                except (EOFError, OSError):
                    self.proc.join(1.0)
                    raise WorkerDied(_died(self)) from None
                if msg[0] == "ready":
                    self.ready = True

    def kill(self) -> None:
        try:
            self.proc.terminate()
            self.proc.join(1.0)
            if self.proc.is_alive():
                self.proc.kill()
                self.proc.join(1.0)
        finally:
            self.conn.close()

    def quit(self) -> None:
        try:
            self.conn.send(("quit",))
        except (OSError, ValueError):
            pass
        self.proc.join(0.5)
        if self.proc.is_alive():
            self.kill()
        else:
            self.conn.close()


def _died(w: "_Worker") -> str:
    return (f"the worker process ended unexpectedly (exit code {w.proc.exitcode}); if the data is "
            f"large, it may have run out of memory")


class FitPool:
    """Keeps one warm worker process and runs fits in it (or in fresh ones when it is busy).

    :meth:`run` is called from a worker *thread* of the window (see :mod:`app.tasks`) and blocks
    until the fit ends; it honours the thread's ``progress`` callback for cancellation.
    """

    def __init__(self, start: bool = True):
        self._ctx = mp.get_context("spawn")
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []
        self._busy: set[_Worker] = set()
        self._closed = False
        if start:
            self.warm()

    def warm(self) -> None:
        """Start a spare worker now (it imports the estimators in the background)."""
        with self._lock:
            if self._closed or any(w.alive() for w in self._idle):
                return
            self._idle.append(_Worker(self._ctx))

    def _acquire(self) -> _Worker:
        with self._lock:
            if self._closed:
                raise RuntimeError("the fit pool is closed")
            while self._idle:
                w = self._idle.pop(0)
                if w.alive():
                    self._busy.add(w)
                    return w
                w.kill()
            w = _Worker(self._ctx)
            self._busy.add(w)
            return w

    def _release(self, w: _Worker, reusable: bool) -> None:
        with self._lock:
            self._busy.discard(w)
            keep = reusable and not self._closed and w.alive() and not self._idle
            if keep:
                self._idle.append(w)
        if not keep:
            w.kill() if not reusable else w.quit()
        if not self._closed:
            self.warm()

    def run(self, spec, dataset, params: dict, progress):
        """Fit ``spec`` (registry name or Method) on ``dataset`` in a worker process.

        ``progress(fraction, message)`` is the caller's callback; when it returns False the fit
        is cancelled: politely first, and by ending the process after :data:`CANCEL_GRACE` s.
        Returns the RunResult; raises Cancelled, ValueError (with the library's message) or
        another exception carrying the worker's message.
        """
        job_id = next(_IDS)
        w = self._acquire()
        reusable = False
        cancelled = [False]

        def should_stop() -> bool:
            if not cancelled[0] and progress(last[0], last[1]) is False:
                cancelled[0] = True
            return cancelled[0]

        last = [0.0, "Starting the worker process…"]
        try:
            if not w.ready:
                w.wait_ready(should_stop)
            last[1] = "Sending the data to the worker…"
            if should_stop():
                raise Cancelled("cancelled")
            w.conn.send(("run", job_id, spec, dataset, params))
            deadline = None
            while True:
                if w.conn.poll(_POLL):
                    try:
                        msg = w.conn.recv()
                    except (EOFError, OSError):
                        w.proc.join(1.0)
                        raise WorkerDied(_died(w)) from None
                    kind = msg[0]
                    if kind == "progress" and msg[1] == job_id:
                        last[0], last[1] = msg[2], msg[3]
                    elif kind == "done" and msg[1] == job_id:
                        reusable = True
                        return msg[2]
                    elif kind == "cancelled" and msg[1] == job_id:
                        reusable = True
                        raise Cancelled("cancelled")
                    elif kind == "error" and msg[1] == job_id:
                        reusable = True
                        raise _remote_error(msg[2], msg[3], msg[4])
                elif not w.alive():
                    raise WorkerDied(_died(w))
                if deadline is None and should_stop():
                    w.conn.send(("cancel", job_id))
                    deadline = time.monotonic() + CANCEL_GRACE
                elif deadline is not None and time.monotonic() > deadline:
                    raise Cancelled("cancelled (worker process ended)")
        finally:
            self._release(w, reusable)

    def close(self) -> None:
        """End every worker process (idle ones politely, busy ones at once)."""
        with self._lock:
            self._closed = True
            idle, busy = list(self._idle), list(self._busy)
            self._idle.clear()
        for w in idle:
            w.quit()
        for w in busy:
            w.kill()


class RemoteError(Exception):
    """An unexpected exception raised in the worker process; ``details`` is its traceback."""

    def __init__(self, message: str, details: str):
        super().__init__(message)
        self.details = details


def _remote_error(message: str, details: str, value_error: bool) -> Exception:
    # Bad parameters or data stay ValueErrors with the library's own message (the window shows
    # them as they are); anything else keeps the worker's traceback for the Details section.
    exc = ValueError(message) if value_error else RemoteError(message, details)
    exc.remote_traceback = details
    return exc


_SHARED: FitPool | None = None
_SHARED_LOCK = threading.Lock()


def shared_pool() -> FitPool:
    """The process-wide pool every window uses (workers are ended when Python exits)."""
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None or _SHARED._closed:
            _SHARED = FitPool(start=False)
            atexit.register(_SHARED.close)
        return _SHARED
