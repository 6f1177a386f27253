"""The one way a view redraws what is on screen off the GUI thread: once the view has settled
(no move for :data:`SETTLE_MS`), the latest request runs as a job of :class:`app.tasks.TaskRunner`
(a new job cancels the one in flight, which stops at its next block; only the newest answer is
delivered). Used by the heatmaps that follow the zoom (:mod:`._zoom_bins`) and by binned clouds
(:mod:`._binned`)."""
from __future__ import annotations

from PySide6.QtCore import QTimer

from robustcore._progress import Cancelled

__all__ = ["SETTLE_MS", "Cancelled", "settle_timer", "cancel_test", "runner"]

#: Wait for a zoom or pan to stop this long (ms) before asking again: a wheel zoom is a burst.
SETTLE_MS = 120


def settle_timer(parent, slot) -> QTimer:
    """A single-shot timer of :data:`SETTLE_MS` calling ``slot``: ``start()`` it at every move."""
    timer = QTimer(parent)
    timer.setSingleShot(True)
    timer.setInterval(SETTLE_MS)
    timer.timeout.connect(slot)
    return timer


def runner(parent, finished, failed=None, lane: bool = True):
    """A :class:`app.tasks.TaskRunner` for a view's work, ``finished(job, result)`` and
    ``failed(job, message, details)`` connected (progress is not shown: reports are throttled
    to two a second). Its threads run below the GUI thread's priority (``background``), its jobs
    one at a time with every other view's (:mod:`app.lane`) unless ``lane`` is False."""
    from ..tasks import TaskRunner   # here, not at import: app.tasks reaches the fit machinery
    r = TaskRunner(parent, throttle=0.5, background=True, lane=lane)
    r.finished.connect(finished)
    if failed is not None:
        r.failed.connect(failed)
    return r


def cancel_test(progress, message: str):
    """``cancelled()`` for block-by-block code run as a TaskRunner job: True once a newer job
    replaced this one (``progress`` None: never, the work runs on the GUI thread)."""
    if progress is None:
        return lambda: False
    return lambda: progress(0.0, message) is False
