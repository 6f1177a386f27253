"""The one worker mechanism: every fit (and every file load) runs on its own QThread.

For fits, the window's job function hands the work to a worker *process* and relays its
progress (:mod:`app.fit_process`): LAPACK calls that hold the GIL cannot freeze the window, and a
fit that does not answer Cancel is ended. The thread side below is the same for every job.

A job is a plain callable ``fn(progress) -> result`` where ``progress(fraction, message)`` is the
robustcore progress protocol: it returns ``False`` once the job is cancelled, which makes the
estimator's :class:`~robustcore._progress.Reporter` raise ``Cancelled`` at its next report.

Guarantees the window relies on:

* the callable runs off the GUI thread; progress reaches the GUI at most every ``throttle``
  seconds (the last report of a job is never lost, it is delivered with the result);
* a streaming fit's finished frames (:class:`app.fit_process.FramesSoFar`, already throttled
  where they are produced) reach the GUI as :attr:`TaskRunner.partial`, before the result;
* starting a job cancels the one in flight; only the newest job's signals are forwarded, so a
  late result of an older job can never be mistaken for the current one;
* :meth:`TaskRunner.cancel` returns at once: the runner is idle immediately and the old thread
  winds down in the background (within one progress report of the estimator);
* an exception in the job becomes :attr:`TaskRunner.failed` with a one-line message and the
  traceback as details; the thread always ends normally;
* a runner made with ``background=True`` (the views' own work) runs its jobs' threads at a
  lower OS priority than the GUI thread (:data:`BACKGROUND_NICE`, Linux), and its jobs in
  :data:`app.lane.LANE` (unless ``lane=False``): one such job at a time, taking turns at every
  progress report;
* :meth:`TaskRunner.shutdown` cancels and joins every thread; a runner deleted by Qt (a closed
  view's, with its parent) cancels its jobs as it goes. Threads are also kept referenced in a
  module-level set until the GUI thread has joined them, so a ``QThread`` object is never
  destroyed while its thread runs (nor by the last reference dropped in its own thread),
  whatever happens to the runner or the window.
"""
from __future__ import annotations

import atexit
import functools
import itertools
import os
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Any
from collections.abc import Callable

from PySide6.QtCore import QObject, Qt, QThread, Signal

from robustcore._progress import Cancelled

from .fit_process import FrameAnnouncer, describe_error
from .lane import LANE

__all__ = ["Job", "TaskRunner", "describe_error"]

_SEQ = itertools.count(1)
#: How much lower than the GUI thread's a background job's thread runs (a nice increment). At
#: 2,000,000 rows the views bin the result on two or three such threads at once; at the same
#: priority the GUI thread waited for a core in 30-50 ms of a 125-150 ms gap of its timer
#: (schedstat's run delay; benchmarks/results_views.md). Lower, it gets a core when it wakes, and
#: the work still has every core the GUI thread does not use.
BACKGROUND_NICE = 10


def lower_this_thread(increment: int = BACKGROUND_NICE) -> None:
    """Lower the calling thread's OS priority by ``increment`` (Linux, where a thread has a nice
    value of its own; elsewhere nothing: the call would change the whole process's)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + int(increment)))
    except OSError:   # not allowed here: the job runs as it is
        pass
# Every QThread started here, until the GUI thread has joined it (see module docstring).
_LIVE: set[_JobThread] = set()
_LIVE_LOCK = threading.Lock()


class _Reaper(QObject):
    """Joins each ended job thread in the GUI thread, then lets it go. Freed from its own thread
    at the end of ``run()`` (its runner gone, nothing else holding it), a QThread is destroyed
    while still running, which aborts the process."""

    def reap(self, job: Job) -> None:
        with _LIVE_LOCK:
            th = next((t for t in _LIVE if t.job is job), None)
        if th is None:
            return
        th.wait()
        with _LIVE_LOCK:
            _LIVE.discard(th)
        th.deleteLater()


_REAPER: _Reaper | None = None


def _reaper() -> _Reaper:
    """The one reaper, made in the GUI thread by the first submit."""
    global _REAPER
    if _REAPER is None:
        _REAPER = _Reaper()
    return _REAPER


def _cancel_all(threads: dict) -> None:
    """Cancel every job of a runner being deleted (``threads``: its own dict, not the runner,
    so that this connection does not keep it alive)."""
    for th in list(threads.values()):
        th.job.cancel_event.set()


@dataclass(eq=False)
class Job:
    """One submitted job and what it was submitted with.

    ``tag`` is whatever the caller needs to judge the result when it arrives (the window uses
    the typed records of :mod:`app.jobs`). ``status`` moves from "running" to one of "done",
    "failed", "cancelled". ``elapsed`` is the wall time of the callable in seconds.
    """

    seq: int
    tag: Any = None
    status: str = "running"
    elapsed: float = 0.0
    fraction: float = 0.0
    message: str = ""
    submitted: float = field(default_factory=time.perf_counter)
    cancel_event: threading.Event = field(default_factory=threading.Event, repr=False)

    @property
    def cancel_requested(self) -> bool:
        return self.cancel_event.is_set()


class _JobSignals(QObject):
    """Lives in the GUI thread; the worker emits on it and queued connections carry the call."""

    progress = Signal(object, float, str)
    partial = Signal(object, object)
    done = Signal(object, object)
    error = Signal(object, str, str)
    stopped = Signal(object)
    ended = Signal(object)


class _Progress:
    """What a job callable gets as ``progress``: ``progress(fraction, message)``; ``partial(frames)``
    relays a streaming fit's :class:`~app.fit_process.FramesSoFar` to the GUI (FitPool calls it);
    ``frames`` is the hook such a fit calls when it runs in this process (robustcore._progress)."""

    def __init__(self, thread: _JobThread):
        self._thread = thread
        self.frames = FrameAnnouncer(self.partial)

    def __call__(self, fraction, message=""):
        return self._thread._progress(fraction, message)

    def partial(self, frames) -> None:
        job = self._thread.job
        if not job.cancel_event.is_set():
            self._thread.signals.partial.emit(job, frames)


class _JobThread(QThread):
    def __init__(self, job: Job, fn: Callable[[Callable], Any], throttle: float, background: bool = False,
                 lane: bool = False):
        super().__init__()
        self.job = job
        self.fn = fn
        self.throttle = throttle
        self.background = background
        self.lane = lane
        self.signals = _JobSignals()

    def _progress(self, fraction, message=""):
        job = self.job
        if job.cancel_event.is_set():
            return False
        if self.lane and threading.get_ident() == self._ident:
            LANE.turn(job.cancel_event)   # between two blocks: a waiting job goes first
            if job.cancel_event.is_set():
                return False
        job.fraction = float(fraction)
        job.message = str(message)
        now = time.monotonic()
        if now - self._last >= self.throttle:
            self._last = now
            self.signals.progress.emit(job, job.fraction, job.message)
        return True

    def run(self) -> None:
        job = self.job
        self._last = 0.0
        self._ident = threading.get_ident()
        if self.background:
            lower_this_thread()
        if self.lane:
            LANE.enter(job.cancel_event)
        t0 = time.perf_counter()
        try:
            if job.cancel_event.is_set():   # cancelled while it waited for the lane
                raise Cancelled()
            result = self.fn(_Progress(self))
        except Cancelled:
            job.elapsed = time.perf_counter() - t0
            job.status = "cancelled"
            self.signals.stopped.emit(job)
        except Exception as exc:  # noqa: BLE001 - any failure of the job reaches the user as a message
            job.elapsed = time.perf_counter() - t0
            job.status = "failed"
            remote = getattr(exc, "remote_traceback", None)  # raised in a worker process
            message = str(exc) if remote and not isinstance(exc, ValueError) else describe_error(exc)
            self.signals.error.emit(job, message, remote or traceback.format_exc())
        else:
            job.elapsed = time.perf_counter() - t0
            if job.cancel_event.is_set():
                job.status = "cancelled"
                self.signals.stopped.emit(job)
            else:
                job.status = "done"
                self.signals.done.emit(job, result)
        finally:
            if self.lane:
                LANE.give()
            self.fn = None   # what the job read (a view's columns) is not kept until the reaping
            self.signals.ended.emit(job)


class TaskRunner(QObject):
    """Runs one job at a time off the GUI thread (a new job cancels the previous one).

    Signals (all delivered in the GUI thread, and only for the current job)
    -------
    started(Job)
    progress(Job, float, str)     fraction in [0, 1] and status text, throttled.
    partial(Job, FramesSoFar)     frames a streaming fit has finished (before finished).
    finished(Job, object)         the callable's return value.
    failed(Job, str, str)         one-line message and the traceback.
    cancelled(Job)                the job stopped after :meth:`cancel` (or was superseded).
    busyChanged(bool)
    """

    started = Signal(object)
    progress = Signal(object, float, str)
    partial = Signal(object, object)
    finished = Signal(object, object)
    failed = Signal(object, str, str)
    cancelled = Signal(object)
    busyChanged = Signal(bool)

    def __init__(self, parent=None, throttle: float = 0.05, background: bool = False, lane: bool = True):
        super().__init__(parent)
        self.throttle = float(throttle)
        self.background = bool(background)
        self.lane = self.background and bool(lane)
        self._current: Job | None = None
        self._threads: dict[int, _JobThread] = {}
        self._busy = False
        self._closed = False
        self.destroyed.connect(functools.partial(_cancel_all, self._threads))

    # -- queries ----------------------------------------------------------------------------
    @property
    def current(self) -> Job | None:
        """The newest job while it runs and has not been cancelled, else None."""
        return self._current

    def is_busy(self) -> bool:
        return self._busy

    def live_threads(self) -> int:
        """Threads of this runner still running (cancelled ones may still be winding down)."""
        return sum(1 for t in self._threads.values() if t.isRunning())

    # -- control ----------------------------------------------------------------------------
    def submit(self, fn: Callable[[Callable], Any], tag: Any = None) -> Job:
        """Start ``fn(progress)`` on a new thread, cancelling the job in flight."""
        if self._closed:
            raise RuntimeError("this TaskRunner has been shut down")
        self.cancel()
        job = Job(seq=next(_SEQ), tag=tag)
        th = _JobThread(job, fn, self.throttle, self.background, self.lane)
        q = Qt.ConnectionType.QueuedConnection
        sig = th.signals
        # Bound slots of this GUI-thread object with queued connections: every call below runs
        # in the GUI thread, in the order the worker emitted.
        sig.progress.connect(self._on_progress, q)
        sig.partial.connect(self._on_partial, q)
        sig.done.connect(self._on_done, q)
        sig.error.connect(self._on_error, q)
        sig.stopped.connect(self._on_stopped, q)
        sig.ended.connect(self._reap, q)
        sig.ended.connect(_reaper().reap, q)
        self._threads[job.seq] = th
        with _LIVE_LOCK:
            _LIVE.add(th)
        self._current = job
        self._set_busy(True)
        self.started.emit(job)
        th.start()
        return job

    def cancel(self) -> Job | None:
        """Ask the current job to stop; the runner is idle at once. Returns that job."""
        job = self._current
        if job is None:
            return None
        job.cancel_event.set()
        self._current = None
        self._set_busy(False)
        return job

    def shutdown(self, timeout: float = 5.0) -> bool:
        """Cancel everything and join the threads; True when all have ended within ``timeout``."""
        self._closed = True
        self.cancel()
        for th in list(self._threads.values()):
            th.job.cancel_event.set()
        deadline = time.monotonic() + timeout
        ok = True
        for th in list(self._threads.values()):
            left = max(0, int((deadline - time.monotonic()) * 1000))
            if not th.wait(left):
                ok = False
        return ok

    # -- from the worker (GUI thread, queued) -------------------------------------------------
    def _set_busy(self, busy: bool) -> None:
        if busy != self._busy:
            self._busy = busy
            self.busyChanged.emit(busy)

    def _is_current(self, job: Job) -> bool:
        return self._current is job

    def _on_progress(self, job: Job, fraction: float, message: str) -> None:
        if self._is_current(job):
            self.progress.emit(job, fraction, message)

    def _on_partial(self, job: Job, frames) -> None:
        if self._is_current(job):
            self.partial.emit(job, frames)

    def _on_done(self, job: Job, result) -> None:
        if self._is_current(job):
            self._current = None
            self._set_busy(False)
            self.finished.emit(job, result)

    def _on_error(self, job: Job, message: str, details: str) -> None:
        if self._is_current(job):
            self._current = None
            self._set_busy(False)
            self.failed.emit(job, message, details)

    def _on_stopped(self, job: Job) -> None:
        if self._is_current(job):
            self._current = None
            self._set_busy(False)
        # Reported even for a superseded job: the log records that it stopped and when.
        self.cancelled.emit(job)

    def _reap(self, job: Job) -> None:
        self._threads.pop(job.seq, None)   # joined and deleted by the _Reaper


@atexit.register
def _join_live_threads() -> None:
    # Last line of defence at interpreter exit: stop and join any thread still running so Qt
    # never destroys a running QThread ("QThread: Destroyed while thread is still running").
    with _LIVE_LOCK:
        threads = list(_LIVE)
    for th in threads:
        th.job.cancel_event.set()
    for th in threads:
        try:
            th.wait(30_000)
        except RuntimeError:  # the C++ object is already gone, so is its thread
            pass
