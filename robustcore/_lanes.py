"""In-memory passes over rows on several threads, with the same sums whatever their number.

A pass in memory (``robustcore._passes.Rows``) loops over cache-sized blocks of rows. Large
tables are cut into at most :data:`LANES` **lanes** of whole blocks; each lane is fed to an
accumulator of its own, and the lanes' accumulators are merged in lane order. The lanes are the
same whether one thread runs them one after the other or several run them side by side, and
wherever threads may run every product goes to numpy's BLAS (``robustcore._passes.gil_free``,
which releases the GIL), on the threads or not, so a fit gives the same numbers, to the last bit,
on a busy machine that keeps it on one thread and on an idle one that spreads it over every core.
Where only one thread may run (one core, or the user asked for one), the lanes keep scipy's
in-place kernels, 4-15 % faster there (the last bits then differ from a run on several cores,
as they do between BLAS thread counts).

How many threads: :func:`pass_threads` (every core the process may use, unless the user chose a
thread count through OMP_NUM_THREADS or a BLAS variable); a ``_threads.Governor`` per table
decides pass by pass whether the threads pay (on a machine whose other core is busy, two
threads get the CPU time of one and lose to one thread by their hand-offs).

Progress and Cancel stay on the caller's thread: the lanes count the blocks they finish, the
caller reports that count while it waits, and a Cancel (or an error in any lane) stops every
lane at its next block. The caller's numpy error state (``np.errstate``) holds inside the lanes.
"""
from __future__ import annotations

import contextvars
import math
import os
import threading
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait

# set by our own programs when they, not the user, set the variables to 1: those limit BLAS only
from ._blas_policy import DEFAULTED_VARIABLE, USER_THREAD_VARIABLES
from ._threads import Governor, available_cores

__all__ = ["LANES", "MIN_LANE_BLOCKS", "MIN_TABLE_BLOCKS", "DEFAULTED_VARIABLE", "lanes", "pass_threads", "LaneRunner",
           "both"]

# Lanes a table is cut into at most: enough for 8 cores; with fewer, a thread takes several.
LANES = 8
# Blocks a lane holds at least: a smaller table has fewer lanes.
MIN_LANE_BLOCKS = 4
# Blocks (of 2 MB) a table needs for lanes at all: below, passes of a few ms gain little from
# threads and lose to numpy's products and to BLAS threads still spinning after a caller's own
# product (ResidualScorer fit + scores on 100,000 x 50 beside scikit-learn: 1.07x its time on
# one lane, 1.34x on four).
MIN_TABLE_BLOCKS = 32
# How often the waiting caller reports progress (seconds).
_POLL = 0.05

_POOL = None
_POOL_LOCK = threading.Lock()
_IN_LANE = threading.local()


def lanes(n: int, step: int) -> list[tuple[int, int]]:
    """(start, stop) row ranges of the lanes of n rows in blocks of ``step`` rows: whole blocks,
    as equal as they can be, in order."""
    nblocks = max(1, math.ceil(n / step))
    k = 1 if nblocks < MIN_TABLE_BLOCKS else max(1, min(LANES, nblocks // MIN_LANE_BLOCKS))
    edges = [min(n, round(nblocks * i / k) * step) for i in range(k + 1)]
    return [(lo, hi) for lo, hi in zip(edges[:-1], edges[1:]) if hi > lo]


def pass_threads(environ=None) -> int:
    """Threads for the passes: every available core, or the smallest count the user set in
    OMP_NUM_THREADS or a BLAS thread variable (the usual way to ask a numerical library for one
    core); a count our own programs set by default is not the user's."""
    env = os.environ if environ is None else environ
    cores = available_cores()
    if env.get(DEFAULTED_VARIABLE):
        return cores
    chosen = []
    for var in USER_THREAD_VARIABLES:
        try:
            value = int(str(env.get(var, "")).strip())
        except ValueError:
            continue
        if value >= 1:
            chosen.append(value)
    return max(1, min([cores] + chosen))


def _forget_pool_in_child():
    # a forked child has none of the parent's threads, but would keep its executor, which then
    # thinks it has workers and never starts any: the first pass would wait forever
    global _POOL, _POOL_LOCK
    _POOL, _POOL_LOCK = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_in_child)


def _pool(workers: int) -> ThreadPoolExecutor:
    global _POOL
    with _POOL_LOCK:
        if _POOL is None or _POOL._max_workers < workers:
            # the smaller pool is dropped, not shut down (a pass may still be submitting to it);
            # its idle threads end once it is collected
            _POOL = ThreadPoolExecutor(workers, thread_name_prefix="robustcore-lane")
        return _POOL


def both(first, second):
    """``(first(), second())`` of two independent calls: the first on a lane thread while the
    caller makes the second when the process has a core to spare (:func:`pass_threads` > 1, no
    other task running: ``_threads.busy_elsewhere``; not inside a lane), else one after the
    other. The same results either way. For the few-millisecond sweeps between two threaded
    passes (two order statistics of a million values), which otherwise leave a core idle."""
    from ._threads import busy_elsewhere
    jobs = pass_threads()
    # (one sample of the load: a busy machine's three cost a millisecond of sleeps a call)
    if jobs < 2 or getattr(_IN_LANE, "on", False) or busy_elsewhere(1) >= jobs - 1:
        return first(), second()

    def marked(call):
        # calls nested inside either side run on its own thread (no third thread on two cores)
        before = getattr(_IN_LANE, "on", False)
        _IN_LANE.on = True
        try:
            return call()
        finally:
            _IN_LANE.on = before
    future = _pool(jobs).submit(contextvars.copy_context().run, marked, first)
    try:
        b = marked(second)
    finally:
        a = future.result()
    return a, b


class _Stop(Exception):
    """A lane stopped because another failed or the caller cancelled."""


class LaneRunner:
    """Runs the lanes of a table's passes, threaded when the governor says the threads pay."""

    def __init__(self, jobs: int | None = None, *, adaptive: bool = True):
        self.jobs = pass_threads() if jobs is None else int(jobs)
        self.governor = Governor(max(1, self.jobs), adaptive=adaptive)
        # numpy's products wherever threads may run, on them or not (the same bits either way);
        # where they never can, scipy's in-place kernels (4-15 % faster on one thread)
        self.numpy_products = self.jobs > 1

    def run(self, work, ranges, step, rep, message):
        """``[work(lo, hi, tick) for each lane]``, in lane order. ``work`` calls ``tick()``
        after each block; progress goes to ``rep(fraction, message)`` (which may cancel)."""
        total = sum(math.ceil((hi - lo) / step) for lo, hi in ranges)
        every = max(1, total // 20)
        jobs = min(self.jobs, len(ranges))
        nested = getattr(_IN_LANE, "on", False)
        threaded = jobs > 1 and not nested and self.governor.threaded()
        with self.governor.measure(threaded):
            if not threaded:
                done = [0]

                def tick():
                    done[0] += 1
                    if done[0] % every == 0:
                        rep(done[0] / total, message)
                out = [work(lo, hi, tick) for lo, hi in ranges]
            else:
                out = self._threaded(work, ranges, jobs, total, rep, message)
        rep(1.0, message)
        return out

    def _threaded(self, work, ranges, jobs, total, rep, message):
        pool = _pool(jobs)
        stop = threading.Event()
        done = [0]
        lock = threading.Lock()

        def tick():
            with lock:
                done[0] += 1
            if stop.is_set():
                raise _Stop()

        def lane(lo, hi):
            _IN_LANE.on = True
            try:
                return work(lo, hi, tick)
            finally:
                _IN_LANE.on = False
        # each lane in a copy of the caller's context (np.errstate lives there)
        futures = [pool.submit(contextvars.copy_context().run, lane, lo, hi) for lo, hi in ranges]
        try:
            pending = set(futures)
            while pending:
                finished, pending = wait(pending, timeout=_POLL, return_when=FIRST_EXCEPTION)
                if any(f.exception() is not None for f in finished):
                    break
                rep(done[0] / total, message)
        except BaseException:
            stop.set()
            wait(futures)
            raise
        stop.set()
        wait(futures)
        errors = [f.exception() for f in futures if f.exception() is not None]
        real = [e for e in errors if not isinstance(e, _Stop)]
        if real:
            raise real[0]
        return [f.result() for f in futures]

