"""The methods' own worker threads: how many, over which rows, and whether they pay right now.

numpy releases the GIL inside its products and elementwise loops, so a pass over the data cut
into row ranges runs on several cores from plain Python threads. How many BLAS threads run
beside them is decided in one place, :mod:`robustcore._blas_policy` (one inside every fit unless
the user chose otherwise; PCP's exception is stated there).
"""
from __future__ import annotations

import contextlib
import os
import time

import numpy as np

__all__ = ["PLAIN_PRODUCTS", "Governor", "RowSplit", "resolve_n_jobs"]


def available_cores() -> int:
    """Cores this process may run on (its affinity mask where the OS has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def resolve_n_jobs(n_jobs) -> int:
    """``None`` -> every available core; a positive int is used as given."""
    return available_cores() if n_jobs is None else int(n_jobs)


def _own_running_threads() -> int:
    """This process's threads running or runnable right now (at least 1: the caller). BLAS
    threads that spin-wait after a product count here, not as another program's load."""
    try:
        count = 0
        for tid in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{tid}/stat", encoding="ascii", errors="replace") as fh:
                # the state follows the command name, which is in parentheses
                if fh.read().rsplit(")", 1)[1].split()[0] == "R":
                    count += 1
        return max(1, count)
    except (OSError, IndexError):
        return 1


def _running_elsewhere() -> int:
    with open("/proc/loadavg", encoding="ascii") as fh:
        running = int(fh.read().split()[3].split("/")[0])
    return max(0, running - _own_running_threads())


def busy_elsewhere(samples: int = 3) -> float:
    """Tasks of other processes running or waiting to run on this machine right now (the
    fourth field of /proc/loadavg, an instantaneous count, less this process's runnable
    threads; the least of ``samples`` reads 0.5 ms apart, as a short-lived task seen once made
    a fresh fit run on one thread in about one start of eight on an idle machine), or the
    one-minute load average where there is no /proc; 0.0 when neither is known."""
    try:
        least = _running_elsewhere()
        for _ in range(samples - 1):
            if least == 0:
                break
            time.sleep(0.0005)
            least = min(least, _running_elsewhere())
        return float(least)
    except (OSError, ValueError, IndexError):
        pass
    try:
        return float(os.getloadavg()[0])
    except (AttributeError, OSError):
        return 0.0


class Governor:
    """Decides, pass by pass, whether a method's threaded passes run on its threads or on one.

    Threads pay only when the cores are free: on a machine where another job keeps a core busy
    (or where the scheduler shares cores between users' groups), two threads get the CPU time of
    one and then lose to a single thread by their synchronisation. So:

    * the first pass is threaded unless the machine is already busy (``busy_elsewhere`` at
      least ``jobs - 1`` tasks, i.e. no core is left for a second thread);
    * every threaded pass measures the CPU time the process received per second of wall time;
      below ``min_gain`` cores (of ``jobs`` asked for) the next passes run on one thread;
    * on one thread, a pass is tried threaded again after ``probe_every`` passes, and after
      twice as many after each failed try (a failed try costs about one pass at one-thread
      speed, so a long fit on a busy machine pays for a handful of them), so a machine that
      quietens is used again.

    ``threaded()`` says how to run the next pass; wrap that pass in ``measure(threaded)``.
    With ``jobs == 1`` everything runs on one thread; with ``adaptive=False`` every pass runs on
    ``jobs`` threads (a count the user asked for).
    """

    def __init__(self, jobs, *, adaptive=True, min_gain=None, probe_every=4):
        self.jobs = int(jobs)
        self.adaptive = bool(adaptive)
        # 2 threads must deliver 1.4 cores (3: 1.8, ...) to beat one thread's lack of overhead
        self.min_gain = 1.0 + 0.4 * (self.jobs - 1) if min_gain is None else float(min_gain)
        self.probe_every = int(probe_every)
        self._wait = self.probe_every       # one-thread passes before the next threaded try
        self._serial_passes = 0
        self._use = self.jobs > 1 and busy_elsewhere() < self.jobs - 1
        self.history = []          # (threaded, cores received) per measured pass

    def threaded(self) -> bool:
        if self.jobs == 1:
            return False
        if self._use or not self.adaptive:
            return True
        return self._serial_passes >= self._wait

    @contextlib.contextmanager
    def measure(self, threaded):
        """Time one pass run threaded (or not) and update the decision."""
        w0, c0 = time.perf_counter(), time.process_time()
        yield
        self.record(threaded, time.perf_counter() - w0, time.process_time() - c0)

    def record(self, threaded, wall, cpu):
        """Account for one pass: ``wall`` seconds, ``cpu`` seconds of the process's CPU time."""
        if self.jobs == 1:
            return
        if threaded:
            cores = cpu / wall if wall > 0 else float(self.jobs)
            self.history.append((True, cores))
            # too short to measure (timer resolution): keep the current choice
            if wall >= 2e-3:
                was_probe = not self._use
                self._use = cores >= self.min_gain
                if self._use:
                    self._wait = self.probe_every
                elif was_probe:
                    self._wait *= 2
            self._serial_passes = 0
        else:
            self.history.append((False, cpu / wall if wall > 0 else 1.0))
            self._serial_passes += 1


class RowSplit:
    """Products with a tall matrix whose rows are cut into ranges, one range per thread.

    ``dot(A, B[, out])`` is ``A @ B`` and ``tdot(A, B)`` is ``A.T @ B`` for ``A`` with ``n`` rows;
    each thread multiplies its own rows (numpy releases the GIL in the product) and the
    partial sums of ``tdot`` are added at the end. ``pool`` is a
    ``concurrent.futures.Executor``; with ``pool=None`` both are the plain products.
    """

    def __init__(self, n, ranges, pool=None):
        self.n = n
        self.ranges = [slice(lo, hi) for lo, hi in ranges]
        self.pool = pool

    def _map(self, fn):
        if self.pool is None or len(self.ranges) == 1:
            return [fn(r) for r in self.ranges]
        return [f.result() for f in [self.pool.submit(fn, r) for r in self.ranges]]

    def dot(self, A, B, out=None):
        if self.pool is None or A.shape[0] != self.n:
            return np.matmul(A, B, out=out)
        if out is None:
            out = np.empty((A.shape[0], B.shape[1]), dtype=np.result_type(A, B))
        self._map(lambda r: np.matmul(A[r], B, out=out[r]))
        return out

    def over_columns(self, fn, count):
        """``[fn(cols) ...]`` for slices cutting ``range(count)`` into one equal range per
        thread (the columns of a short-and-wide matrix, whose rows cannot be split)."""
        if self.pool is None or len(self.ranges) == 1:
            return [fn(slice(0, count))]
        edges = np.linspace(0, count, len(self.ranges) + 1).round().astype(int).tolist()
        cuts = [slice(lo, hi) for lo, hi in zip(edges[:-1], edges[1:])]
        return [f.result() for f in [self.pool.submit(fn, c) for c in cuts]]

    def tdot(self, A, B):
        if self.pool is None or A.shape[0] != self.n:
            return A.T @ B
        parts = self._map(lambda r: A[r].T @ B[r])
        total = parts[0]
        for part in parts[1:]:
            total += part
        return total


# numpy's own products, in the same interface (no pool: nothing is split).
PLAIN_PRODUCTS = RowSplit(0, [])
