"""One lane for the views' background jobs: they run one at a time, taking turns block by block.

Why (issue 33.2, measured at 2,000,000 rows): when a result arrives, four to six views bin it on
threads of their own. numpy releases the GIL inside every call those jobs make (bincount, fancy
indexing, sorting, histograms: a probe thread beside each call on 2M values never waited more
than 0.8 ms), but between two calls a job runs Python, and with several jobs one of them nearly
always holds the GIL. The GUI thread takes the GIL again at every call Qt makes into Python
(a paint, ``boundingRect``, ``heightForWidth``, a slot): each time it waited for a job to drop
it, up to Python's switch interval, and with several jobs switching among themselves no drop
was forced. py-spy during the tour of the views: over half of the GUI thread's busy samples
were waits for the GIL. With one job at a time, the GIL is free whenever that job is inside
numpy, and only one thread competes with the GUI thread for it and for the two cores.

A job takes the lane when it starts and gives it back when it ends; at every progress report
(between two blocks of rows) it lets a waiting job run one block first, so a long job (a cloud
index at 30M rows) never holds a short one (a zoom) up for long. Waits are first come, first
served. A wait ends after :data:`TURN_WAIT` seconds, and the job then runs beside the holder
(slower, never stuck): the holder may be blocked, on a file or on a lock the waiting job holds
(one that gave its turn inside a lock of its own), or between two reports for long.
"""
from __future__ import annotations

import collections
import threading
import time

__all__ = ["Lane", "LANE", "TURN_WAIT"]

#: The longest a job waits for its turn before it runs anyway (see the module docstring).
TURN_WAIT = 1.0


class Lane:
    """At most one holder; waiters served first come, first served."""

    def __init__(self):
        self._cond = threading.Condition()
        self._queue: collections.deque = collections.deque()
        self._holder = None
        self.most = 0      # the most jobs seen running at once inside the lane (tests)
        self._inside = 0

    def take(self, timeout: float | None = None, stop: threading.Event | None = None) -> bool:
        """Wait for the lane (at most ``timeout`` s, or until ``stop`` is set: a job cancelled
        while it waits); True when this thread holds it, False when the wait ended first (the
        caller then runs without it)."""
        me = threading.get_ident()
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            self._queue.append(me)
            try:
                while True:
                    ok = self._holder is None and self._queue[0] == me
                    left = None if deadline is None else deadline - time.monotonic()
                    if ok or (stop is not None and stop.is_set()) or (left is not None and left <= 0):
                        break
                    # a cancel sets ``stop`` without a notify: look again now and then
                    self._cond.wait(0.05 if left is None else min(left, 0.05))
            finally:
                self._queue.remove(me)
                self._cond.notify_all()   # the next in line may now be first
            if ok:
                self._holder = me
            self._inside += 1
            self.most = max(self.most, self._inside)
            return ok

    def enter(self, stop: threading.Event | None = None) -> bool:
        """A job's start: :meth:`take` with a wait of at most :data:`TURN_WAIT` s."""
        return self.take(TURN_WAIT, stop)

    def give(self) -> None:
        """Leave the lane (a no-op for a thread that ran without holding it)."""
        with self._cond:
            self._inside -= 1
            if self._holder == threading.get_ident():
                self._holder = None
                self._cond.notify_all()

    def turn(self, stop: threading.Event | None = None) -> None:
        """Between two blocks: when another job waits, let it go first, then wait for the lane
        again (at most :data:`TURN_WAIT` s); else go on at once."""
        with self._cond:
            if not self._queue:
                return
        self.give()
        self.take(TURN_WAIT, stop)

    def waiting(self) -> int:
        with self._cond:
            return len(self._queue)


#: The lane every background :class:`app.tasks.TaskRunner` job runs in.
LANE = Lane()
