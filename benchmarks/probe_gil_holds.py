"""Which calls of the views' binning jobs hold Python's GIL (issue 33.2)?

    python benchmarks/probe_gil_holds.py [rows]

A probe thread sleeps 0.1 ms in a loop; while the main thread makes one call on ``rows`` values
(2,000,000 by default), the probe's largest wait for the GIL is its wall time minus its CPU time,
minus its time waiting for a core (``/proc/self/task/<tid>/schedstat``), minus the sleep. A call
that releases the GIL leaves the probe waiting well under a millisecond, whatever the call's own
duration; one that holds it makes the probe wait about as long as the call. Python's switch
interval is set to 0.5 ms here, so Python code in the main thread shows as waits of ~0.5 ms.
The first rows are references that hold the GIL (a C loop over a list, an array from a list).
Linux only (schedstat). A diagnosis: the figures depend on the machine, the ratios matter.
"""
from __future__ import annotations

import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

import _bench  # noqa: E402


def _run_delay() -> float:
    with open(f"/proc/self/task/{threading.get_native_id()}/schedstat") as f:
        return int(f.read().split()[1]) / 1e9


def probe(calls: dict, repeat: int = 3) -> list:
    """[(name, call seconds, the probe's largest GIL wait in seconds)] per call, the largest
    wait of ``repeat`` runs."""
    waits, go, stop = [], threading.Event(), threading.Event()

    def loop():
        while not stop.is_set():
            if not go.wait(0.05):
                continue
            t, c, r = time.perf_counter(), time.thread_time(), _run_delay()
            time.sleep(1e-4)
            w = time.perf_counter() - t - (time.thread_time() - c) - (_run_delay() - r) - 1e-4
            if go.is_set():
                waits.append(w)

    th = threading.Thread(target=loop, daemon=True)
    th.start()
    out = []
    try:
        for name, fn in calls.items():
            fn()
            worst, took = 0.0, np.inf
            for _ in range(repeat):
                waits.clear()
                go.set()
                time.sleep(0.002)
                t = time.perf_counter()
                fn()
                took = min(took, time.perf_counter() - t)
                time.sleep(0.002)
                go.clear()
                worst = max([worst] + waits)
            out.append((name, took, worst))
    finally:
        stop.set()
        th.join()
    return out


def calls_of(n: int) -> dict:
    """The calls the binning jobs make (app.views._aggregate, _binning, _map_fill, contour), on
    ``n`` values, and two references that hold the GIL."""
    rng = np.random.default_rng(0)
    v = rng.random(n)
    idx = rng.integers(0, n, n)
    mask = rng.random(n) < 0.5
    cells = idx % 270_000   # 3 layers x 300 x 300 bins
    buckets = rng.integers(0, 1 << 20, n)
    table = rng.random((n, 20))
    basis = rng.random((20, 2))
    as_list = list(range(n // 2))
    return {
        "reference: sum over a list (holds)": lambda: sum(as_list),
        "reference: np.array(list) (holds)": lambda: np.array(as_list),
        "np.bincount into 270,000 bins": lambda: np.bincount(cells, minlength=270_000),
        "np.bincount with weights": lambda: np.bincount(cells, weights=v, minlength=270_000),
        "np.bincount into 2^20 bins (Ranks)": lambda: np.bincount(buckets, minlength=1 << 20),
        "np.add.at": lambda: np.add.at(np.zeros(270_000), cells[:100_000], 1.0),
        "v[mask]": lambda: v[mask],
        "v[idx] (fancy)": lambda: v[idx],
        "np.flatnonzero": lambda: np.flatnonzero(mask),
        "np.where": lambda: np.where(mask, v, 0.0),
        "astype(intp)": lambda: (v * 100).astype(np.intp),
        "np.concatenate": lambda: np.concatenate([v[: n // 2], v[n // 2:]]),
        "np.partition": lambda: np.partition(v, 1000),
        "np.sort": lambda: np.sort(v),
        "np.argsort": lambda: np.argsort(v),
        "np.lexsort": lambda: np.lexsort((idx, v)),
        "np.unique": lambda: np.unique(idx % 1000),
        "np.cumsum": lambda: np.cumsum(v),
        "np.histogram, 300 bins": lambda: np.histogram(v, bins=300, range=(0, 1)),
        "np.histogram2d, 300 x 300": lambda: np.histogram2d(v, v[::-1], bins=300),
        "np.percentile": lambda: np.percentile(v, [1, 99]),
        "rows x 20 @ 20 x 2 (BLAS)": lambda: table @ basis,
    }


def main(n: int = 2_000_000) -> list:
    sys.setswitchinterval(5e-4)
    rows = probe(calls_of(n))
    lines = ["# probe_gil_holds\n",
             _bench.conditions([f"{n:,} values per call; probe: 0.1 ms sleeps on another thread"]) + "\n",
             "| call | call (best of 3) | the probe's largest wait for the GIL |", "|---|--:|--:|"]
    lines += [f"| {name} | {took * 1000:.1f} ms | {worst * 1000:.1f} ms |" for name, took, worst in rows]
    print("\n".join(lines) + f"\n\nload average at the end: {_bench.load_average()}")
    return rows


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2_000_000)
