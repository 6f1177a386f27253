"""Wall-clock bounds that mean the same on an idle laptop and on a loaded 2-core CI runner.

A test that promises "Cancel ends the fit within a second" measures, in the same run, how much
the machine stretches wall-clock time right now, and scales its bound by that: the wall time of
a fixed piece of work divided by the CPU time it used (1 on an idle machine; about the number of
runnable tasks per core under load), and the overshoot of short sleeps (how late the scheduler
wakes a waiting thread). Such tests are marked ``timing`` (``-m "not timing"`` leaves them out).
"""
from __future__ import annotations

import time

import numpy as np

__all__ = ["slowness", "budget"]


def _stretch_of_work() -> float:
    # elementwise numpy and plain Python: one thread (no BLAS), so its CPU time is this thread's
    a = np.random.default_rng(0).standard_normal(100_000)
    wall0, cpu0 = time.perf_counter(), time.thread_time()
    for _ in range(40):
        a = np.tanh(a * 1.5)
        sum(range(5000))
    wall, cpu = time.perf_counter() - wall0, time.thread_time() - cpu0
    return wall / max(cpu, 1e-4)


def _stretch_of_sleep() -> float:
    late = []
    for _ in range(10):
        t0 = time.perf_counter()
        time.sleep(0.002)
        late.append(time.perf_counter() - t0 - 0.002)
    # a wake-up up to 2 ms late is an idle machine's normal; beyond, each 10 ms late counts as one
    # more turn of waiting in the run queue
    return 1.0 + max(0.0, float(np.median(late)) - 0.002) / 0.01


def slowness() -> float:
    """How many times longer than on an idle machine wall-clock waits take now (at least 1)."""
    return max(1.0, _stretch_of_work(), _stretch_of_sleep())


def budget(seconds: float) -> float:
    """``seconds`` on an idle machine, stretched by the machine's measured slowness now."""
    return seconds * slowness()
