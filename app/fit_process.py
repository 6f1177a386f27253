"""Fits and data loads in a separate worker process, driven from a worker thread of the window
(no Qt here).

Why a process: a thread keeps the window responsive only while the work lets go of Python's
GIL. Many LAPACK calls do not: measured on this project's machine, ``scipy.linalg.svd`` and
``scipy.linalg.eigh`` of a 2000 × 2000 matrix hold the GIL for their whole duration (tens of
seconds), and so do ``np.linalg.qr(..., mode="r")`` and ``np.linalg.svd(..., compute_uv=False)``
on tall matrices. Parsing a large LIBSVM file or decoding video holds it too (a 10 ms timer in
the window stalled 0.7-2.6 s while such files loaded in a thread). In a child process neither
can freeze the window, and Cancel ends the child if it does not stop by itself within
:data:`CANCEL_GRACE` seconds.

Protocol: one duplex pipe per worker; every message is one of the dataclasses below, tagged with
a job id. The window sends :class:`FitJob` or :class:`LoadJob`, then possibly :class:`Cancel`, and
:class:`Quit` at the end; the worker answers :class:`Ready` once, then :class:`Progress` reports
(and, from a streaming fit, :class:`Partial` ones: the frames finished so far) and one of
:class:`Done`, :class:`Stopped`, :class:`Failed` per job. A fit's ``spec`` is a
registry name, or a picklable :class:`~robustcore.methods.Method` (tests). Objects cross the pipe
with :mod:`multiprocessing`'s own serialisation between two processes of this program; nothing is
written to or read from files this way.
"""
from __future__ import annotations

import atexit
import itertools
import multiprocessing as mp
import os
import pickle
import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Any
from collections.abc import Callable

import numpy as np

from robustcore._progress import Cancelled

from . import bulk_pipe
from .out_of_core import LazyOffer
from .warm_up import for_result, for_window, import_here, warm_steps, window_ready, window_warming

__all__ = ["FitPool", "WorkerDied", "RemoteError", "CANCEL_GRACE", "shared_pool", "describe_error",
           "run_job", "FitJob", "LoadJob", "Loaded", "FramesSoFar", "FrameAnnouncer",
           "PARTIAL_INTERVAL"]

# After Cancel, how long a job may take to reach its next progress report before its process is
# ended. The issue asks for "stops within a second"; this leaves room for the messages.
CANCEL_GRACE = 0.4
_POLL = 0.05
_THROTTLE = 0.05
# A streaming fit sends the frames it has finished at most this often (seconds): the live L + S
# view redraws a few times a second, and each message carries only what is new.
PARTIAL_INTERVAL = 0.25
# A job running this long (seconds) gets a spare worker started beside it (FitPool._start_spare).
SPARE_AFTER = 1.0
_IDS = itertools.count(1)


# -- messages --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class FitJob:
    """Fit ``spec`` (registry name or Method) on ``dataset`` with ``params``; ``bigdata``: the
    keyword arguments of robustcore.bigdata.settings for data opened out of core; ``spill``: a
    folder where the result's large arrays go, mapped (:func:`app.mapped_tables.spill_result`)."""
    spec: Any
    dataset: Any
    params: dict
    bigdata: dict | None = None
    spill: str | None = None


@dataclass(frozen=True)
class LoadJob:
    """Load a file (``path`` with loader ``options``) or a bundled demo (``demo``).

    ``lazy``: open the file out of core (robustcore.bigdata.open_lazy). ``budget``: bytes; a
    file that should rather be read out of core under it is not loaded, and the job returns an
    :class:`app.out_of_core.LazyOffer` saying why. ``spill``: (folder, bytes): a dense table of
    at least that many bytes is moved into a file of that folder and mapped
    (:func:`app.mapped_tables.spill`)."""
    path: str | None = None
    options: dict = field(default_factory=dict)
    demo: str | None = None
    lazy: bool = False
    budget: int | None = None
    spill: tuple | None = None


@dataclass(frozen=True)
class Loaded:
    """What a :class:`LoadJob` gives back: the data set, its fingerprint (hashed off the GUI
    thread) and the process that loaded it."""
    dataset: Any
    fingerprint: str
    pid: int


@dataclass(frozen=True)
class _Run:
    job_id: int
    job: FitJob | LoadJob


@dataclass(frozen=True)
class Cancel:
    job_id: int


@dataclass(frozen=True)
class Quit:
    pass


@dataclass(frozen=True)
class Ready:
    pid: int


@dataclass(frozen=True)
class Progress:
    job_id: int
    fraction: float
    message: str


@dataclass(frozen=True)
class FramesSoFar:
    """What a streaming fit has finished: rows ``0:stop`` of its ``n_frames`` per-frame results
    are final (the live L + S view draws them).

    ``store``: the Zarr store being written, where those rows can be read (then nothing else is
    sent), and ``final_store`` where it moves when the run has finished. None: the results stay
    in memory, and ``arrays`` (field -> rows) carries the rows ``start:stop`` that earlier
    messages did not.
    """
    n_frames: int
    n_features: int
    start: int
    stop: int
    store: str | None = None
    arrays: dict | None = None
    final_store: str | None = None


@dataclass(frozen=True)
class Partial:
    job_id: int
    frames: FramesSoFar


@dataclass(frozen=True)
class Done:
    job_id: int
    value: Any


@dataclass(frozen=True)
class Stopped:
    job_id: int


@dataclass(frozen=True)
class Failed:
    job_id: int
    message: str
    details: str
    value_error: bool  # bad input: the window shows the library's message as it is


class WorkerDied(RuntimeError):
    """The worker process ended without an answer (crashed, killed, out of memory)."""


# -- shared by the window and the worker ------------------------------------------------------------

def describe_error(exc: BaseException) -> str:
    """One line for the user: the library's own message for bad input, else the type too."""
    text = str(exc).strip()
    if isinstance(exc, ValueError) and text:
        return text
    name = type(exc).__name__
    return f"{name}: {text}" if text else name


class FrameAnnouncer:
    """The ``frames(start, stop, sink)`` hook a streaming fit calls (robustcore._progress), turned
    into :class:`FramesSoFar` messages for ``send``: the first at once, then at most one per
    ``interval`` seconds, each with only the rows the earlier ones did not carry."""

    # The view draws L and S, and its mask is its own threshold on S.
    FIELDS = ("low_rank", "sparse")

    def __init__(self, send: Callable[[FramesSoFar], None], interval: float = PARTIAL_INTERVAL):
        self._send, self._interval = send, float(interval)
        self._sent = 0
        self._last: float | None = None

    def __call__(self, start: int, stop: int, sink) -> None:
        now = time.monotonic()
        if self._last is not None and now - self._last < self._interval:
            return  # the next message carries these rows too
        self._last = now
        path = sink.live_path
        if path is not None:
            msg = FramesSoFar(sink.n_frames, sink.n_features, self._sent, stop, store=str(path),
                              final_store=str(sink.path))
        else:
            msg = FramesSoFar(sink.n_frames, sink.n_features, self._sent, stop,
                              arrays={f: np.array(sink.read(f, self._sent, stop)) for f in self.FIELDS})
        self._sent = stop
        self._send(msg)


# -- the worker process ----------------------------------------------------------------------------

def run_job(job, progress):
    """Do one job here, in this process (the worker's loop calls it; so does the window when
    jobs run in a thread, and then the result waits for the window's warm-up imports)."""
    return for_window(_run_here(job, progress), progress)


def _run_here(job, progress):
    if isinstance(job, FitJob):
        from robustcore.methods import get_method
        method = get_method(job.spec) if isinstance(job.spec, str) else job.spec
        if job.bigdata is None or not job.dataset.is_lazy:
            result = method.run(job.dataset, job.params, progress)
        else:
            from robustcore.bigdata import settings
            with settings(**job.bigdata):
                result = method.run(job.dataset, job.params, progress)
        if job.spill is not None:
            from .mapped_tables import spill_result
            spill_result(result, job.spill)
        return result
    import robustcore.datasets as d
    progress(0.0, "reading")
    if job.lazy:
        from robustcore.bigdata import open_lazy
        ds = open_lazy(job.path, **job.options)
        return Loaded(ds, ds.fingerprint(), os.getpid())
    if job.budget is not None and job.path is not None:
        from .out_of_core import offer_reason
        offer = offer_reason(job.path, job.budget)
        if offer is not None:
            return LazyOffer(offer.path, offer.reason, dict(job.options), offer.can_load)
    ds = d.demo(job.demo) if job.demo is not None else d.load(job.path, **job.options)
    progress(0.9, "hashing")
    fingerprint = ds.fingerprint()
    if job.spill is not None:
        from .mapped_tables import spill
        ds = spill(ds, *job.spill)
    return Loaded(ds, fingerprint, os.getpid())


def _serve(conn) -> None:
    """Child process main loop: say it is ready, import the estimators while no job is waiting
    (one module at a time, so a job sent early, such as the first data load, starts at once),
    then run jobs until told to quit."""
    from . import mapped_tables
    mapped_tables.PRIVATE_WRITES = True   # a fit's writes into a mapped table stay its own
    try:
        conn.send(Ready(os.getpid()))
    except (EOFError, OSError):
        return
    pending = warm_steps(loaders=False)
    while True:
        try:
            while pending and not conn.poll():
                pending.pop(0)()
            msg = bulk_pipe.recv(conn)
        except (EOFError, OSError):
            return
        if isinstance(msg, Quit):
            return
        if not isinstance(msg, _Run):
            continue  # a late Cancel for a job that already ended
        try:
            reply = Done(msg.job_id, run_job(msg.job, _ChildProgress(conn, msg.job_id)))
        except Cancelled:
            reply = Stopped(msg.job_id)
        except Exception as exc:  # noqa: BLE001 - any failure goes back to the window as a message
            reply = Failed(msg.job_id, describe_error(exc), traceback.format_exc(), isinstance(exc, ValueError))
        try:
            try:
                bulk_pipe.send(conn, reply)
            except (TypeError, AttributeError, pickle.PicklingError):
                if not isinstance(reply, Done) or not hasattr(reply.value, "estimator"):
                    raise
                # A fitted estimator may hold something that cannot be sent (a closure); the
                # result's arrays and numbers are what matters, so send it without the estimator.
                reply.value.estimator = None
                bulk_pipe.send(conn, reply)
        except (EOFError, OSError):
            return


class _ChildProgress:
    """The child's progress callback (see :func:`_check`), with the ``frames`` hook of streaming
    fits, whose finished frames go to the window as :class:`Partial` messages."""

    def __init__(self, conn, job_id: int):
        self._conn, self._job_id, self._last = conn, job_id, [0.0]
        self.frames = FrameAnnouncer(lambda f: self._send(Partial(job_id, f)))

    def __call__(self, fraction, message=""):
        try:
            return _check(self._conn, self._job_id, fraction, message, self._last)
        except (EOFError, OSError):  # the window has gone: stop quietly
            raise SystemExit(0) from None

    def _send(self, msg) -> None:
        try:
            bulk_pipe.send(self._conn, msg)
        except (EOFError, OSError):
            raise SystemExit(0) from None


def _check(conn, job_id, fraction, message, last) -> bool:
    """The child's progress callback: read control messages, forward progress (throttled)."""
    while conn.poll():
        m = bulk_pipe.recv(conn)
        if isinstance(m, Cancel) and m.job_id == job_id:
            return False
        if isinstance(m, Quit):
            raise SystemExit(0)
    now = time.monotonic()
    if now - last[0] >= _THROTTLE:
        last[0] = now
        conn.send(Progress(job_id, float(fraction), str(message)))
    return True


# -- the window's side -----------------------------------------------------------------------------

class _Worker:
    def __init__(self, ctx):
        self.conn, child = ctx.Pipe(duplex=True)
        self.proc = ctx.Process(target=_serve, args=(child,), daemon=True, name="robust-studio-worker")
        self.proc.start()
        child.close()
        self.ready = False
        self.pid = self.proc.pid

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
                    msg = bulk_pipe.recv(self.conn)
                except (EOFError, OSError):
                    self.proc.join(1.0)
                    raise WorkerDied(_died(self)) from None
                if isinstance(msg, Ready):
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
            self.conn.send(Quit())
        except (OSError, ValueError):  # the pipe is already closed: the process is ending anyway
            pass
        self.proc.join(0.5)
        if self.proc.is_alive():
            self.kill()
        else:
            self.conn.close()


def _died(w: _Worker) -> str:
    return (f"the worker process ended unexpectedly (exit code {w.proc.exitcode}); if the data is "
            f"large, it may have run out of memory")


class FitPool:
    """Keeps one warm worker process and runs fits and loads in it (or in fresh ones when it is
    busy); once a job has run :data:`SPARE_AFTER` seconds, a spare is started so the next job
    does not wait for one.

    :meth:`run` and :meth:`load` are called from a worker *thread* of the window (see
    :mod:`app.tasks`) and block until the job ends; they honour the thread's ``progress``
    callback for cancellation. ``last_pid`` is the process that ran the latest job.
    """

    def __init__(self, start: bool = True):
        self._ctx = mp.get_context("spawn")
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []
        self._busy: set[_Worker] = set()
        self._closed = False
        self.last_pid: int | None = None
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
                raise RuntimeError("the worker pool is closed")
            while self._idle:
                w = self._idle.pop(0)
                if w.alive():
                    self._busy.add(w)
                    break
                w.kill()
            else:
                w = _Worker(self._ctx)
                self._busy.add(w)
            return w

    def _start_spare(self) -> None:
        """Start a spare worker beside a job that has run :data:`SPARE_AFTER` seconds: a Restart
        during a long fit then waits for no worker process to start. Not sooner: a starting
        process (its imports) took a core at the Run click, and at the arrival of a short fit's
        result, from the GUI thread and the worker (the largest stops of a 20,000- and a
        2,000,000-row arrival). Nor while the window's warm-up imports, for the same reason; the
        spare then starts when the worker is released."""
        with self._lock:
            if not self._closed and not self._idle and not window_warming():
                self._idle.append(_Worker(self._ctx))

    def _release(self, w: _Worker, reusable: bool) -> None:
        spare = None
        with self._lock:
            self._busy.discard(w)
            keep = reusable and not self._closed and w.alive()
            if keep and self._idle and not self._idle[0].ready:
                spare = self._idle.pop(0)  # a spare still starting: the worker that just ran is warm
            keep = keep and not self._idle
            if keep:
                self._idle.append(w)
        if spare is not None:
            spare.kill()
        if not keep:
            w.kill() if not reusable else w.quit()
        if not self._closed:
            self.warm()

    def run(self, spec, dataset, params: dict, progress):
        """Fit ``spec`` (registry name or Method) on ``dataset`` in a worker process.

        ``progress(fraction, message)`` is the caller's callback; when it returns False the fit
        is cancelled: politely first, and by ending the process after :data:`CANCEL_GRACE` s.
        If it has a method ``partial``, a streaming fit's :class:`FramesSoFar` go to it.
        Returns the RunResult; raises Cancelled, ValueError (with the library's message) or
        another exception carrying the worker's message.
        """
        return self.submit(FitJob(spec, dataset, params), progress)

    def load(self, job: LoadJob, progress) -> Loaded:
        """Load data in a worker process (see :meth:`run` for progress and cancellation). A
        loader that reports no progress is ended :data:`CANCEL_GRACE` s after Cancel."""
        return self.submit(job, progress)

    def submit(self, job: FitJob | LoadJob, progress):
        job_id = next(_IDS)
        w = self._acquire()
        reusable = False
        cancelled = [False]
        last = [0.0, "Starting the worker process…"]

        def should_stop() -> bool:
            if not cancelled[0] and progress(last[0], last[1]) is False:
                cancelled[0] = True
            return cancelled[0]

        try:
            if not w.ready:
                w.wait_ready(should_stop)
            last[1] = "Sending the data to the worker…" if isinstance(job, FitJob) else "Loading…"
            if should_stop():
                raise Cancelled("cancelled")
            self.last_pid = w.pid
            bulk_pipe.send(w.conn, _Run(job_id, job))
            spare_at = time.monotonic() + SPARE_AFTER
            if isinstance(job, FitJob):
                for_result(job.spec)   # while the worker fits: unpickling the result needs it
            deadline = None
            while True:
                if spare_at is not None and time.monotonic() >= spare_at:
                    spare_at = None
                    self._start_spare()
                if w.conn.poll(_POLL):
                    try:
                        msg = bulk_pipe.recv(w.conn)
                    except (EOFError, OSError):
                        w.proc.join(1.0)
                        raise WorkerDied(_died(w)) from None
                    if getattr(msg, "job_id", None) != job_id:
                        continue  # a late message of an earlier, cancelled job
                    if isinstance(msg, Progress):
                        last[0], last[1] = msg.fraction, msg.message
                    elif isinstance(msg, Partial):
                        on_partial = getattr(progress, "partial", None)
                        if on_partial is not None and not cancelled[0]:
                            if msg.frames.store is not None:
                                import_here("zarr")   # the live view opens the store with it
                            on_partial(msg.frames)
                    elif isinstance(msg, Done):
                        reusable = True
                        window_ready(should_stop)  # the GUI thread gets it with nothing to wait for
                        return msg.value
                    elif isinstance(msg, Stopped):
                        reusable = True
                        raise Cancelled("cancelled")
                    elif isinstance(msg, Failed):
                        reusable = True
                        raise _remote_error(msg)
                elif not w.alive():
                    raise WorkerDied(_died(w))
                if deadline is None and should_stop():
                    w.conn.send(Cancel(job_id))
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


def _remote_error(msg: Failed) -> Exception:
    # Bad parameters or data stay ValueErrors with the library's own message (the window shows
    # them as they are); anything else keeps the worker's traceback for the Details section.
    exc = ValueError(msg.message) if msg.value_error else RemoteError(msg.message, msg.details)
    exc.remote_traceback = msg.details
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
