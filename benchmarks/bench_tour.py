"""Several methods in a row on one table, every view shown after each (issue 33.2, the views the
``bench_views.py arrival`` tour does not reach: the comparison, the L + S view of a table):
how long the window stops answering.

    QT_QPA_PLATFORM=offscreen python benchmarks/bench_tour.py [--rows 40000,400000] [--ref DIR] [--repeat 1]

On a rows x 8 table (rank 3 plus noise, the first 1 % of rows gross outliers), PCA, PCP, ROBPCA
and Coherence Pursuit are run one after the other in one window (1280 x 800); after each result
every visible tab is chosen in turn, 0.7 s apart. Per method: the largest gap of a 10 ms timer
from Run until the last tab was shown (the fits run in the worker process: the window is idle
meanwhile), and the most CPU the GUI thread spent between two ticks (its own work: on a loaded
machine the wall gap also holds the time others had the core). Each case is a new process;
``--ref DIR`` runs the same tour on the code of another checkout first (the reference: main
before a change), the same table and load.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
METHODS = ("pca", "pcp", "robpca", "coherence-pursuit")


def tour(rows: int, root: str) -> dict:
    """In this process, on the code of checkout ``root``: the tour on a ``rows`` x 8 table;
    method -> (gap s, GUI CPU s, fit s)."""
    # That checkout's bench_views, which puts that checkout first on the path (its app).
    sys.path.insert(0, os.path.join(root, "benchmarks"))
    import bench_views as bv
    from app._qt import ensure_app
    from app.main_window import MainWindow
    from app.settings import Settings
    ensure_app()
    rng = np.random.default_rng(0)
    X = rng.normal(size=(rows, 3)) @ rng.normal(size=(3, 8)) + 0.1 * rng.normal(size=(rows, 8))
    X[: rows // 100] += 3 * rng.normal(size=(rows // 100, 8))
    tmp = tempfile.mkdtemp()
    path = os.path.join(tmp, "tour.npy")
    np.save(path, X)
    w = MainWindow(settings=Settings(os.path.join(tmp, "s.ini")))
    w.resize(1280, 800)
    w.show()
    bv._settle(400)
    w.open_path(path)
    bv._wait(w.datasetLoaded, settle_ms=500)
    views = w.views
    out = {}
    for method in METHODS:
        meter = bv.GapMeter()
        meter.start()
        t0 = time.perf_counter()
        w.method_panel.set_method(method)
        w.run()
        bv._wait(w.runFinished, timeout_ms=900_000)
        fit = time.perf_counter() - t0
        for i in range(views.count()):
            if views.isTabVisible(i):
                views.setCurrentIndex(i)
                bv._settle(700)
        gap = meter.stop()
        out[method] = (gap, meter.cpu, fit)
    w.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default="40000")
    ap.add_argument("--ref", default=None, help="a checkout whose code is the reference")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)   # the child process
    ap.add_argument("--code", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one is not None:
        got = tour(a.one, a.code)
        import app
        print("RESULT " + json.dumps({"code": os.path.dirname(os.path.dirname(app.__file__)), **got}), flush=True)
        return
    sys.path.insert(0, HERE)
    import _bench
    ours = os.path.dirname(HERE)
    codes = ([("reference", os.path.abspath(a.ref))] if a.ref else []) + [("ours", ours)]
    print("# bench_tour\n")
    print(_bench.conditions([f"code: {', '.join(f'{n} {p}' for n, p in codes)}"]) + "\n")
    print("| rows | code | run | " + " | ".join(f"{m}: gap / GUI CPU" for m in METHODS) + " | load |")
    print("|--:|---|--:|" + "--:|" * len(METHODS) + "---|")
    for rows in (int(r) for r in a.rows.split(",")):
        for k in range(a.repeat):
            for name, root in codes:
                env = {**os.environ, "PYTHONPATH": root, "QT_QPA_PLATFORM": "offscreen"}
                proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--one", str(rows), "--code", root],
                                      env=env,
                                      capture_output=True, text=True, timeout=1800, cwd=root)
                line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")), None)
                if line is None:
                    print(f"| {rows:,} | {name} | {k + 1} | failed (exit {proc.returncode}): "
                          f"{proc.stderr.strip().splitlines()[-1:]} |", flush=True)
                    continue
                got = json.loads(line[7:])
                if os.path.realpath(got["code"]) != os.path.realpath(root):
                    raise SystemExit(f"the {name} tour ran the code of {got['code']}, not of {root}")
                cells = " | ".join(f"{1000 * got[m][0]:.0f} / {1000 * got[m][1]:.0f} ms" for m in METHODS)
                print(f"| {rows:,} | {name} | {k + 1} | {cells} | {_bench.load_average()} |", flush=True)


if __name__ == "__main__":
    main()
