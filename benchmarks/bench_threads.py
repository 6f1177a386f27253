"""BLAS threads inside fits: a plain script against the window's one-thread setting, with one core
kept busy by another process (run by hand; reads /work/shared/data).

Each condition runs in a fresh interpreter, because BLAS reads its thread variables when it is
loaded:

* ``script``: no BLAS thread variable set, as in a plain script or notebook; robustcore's rule
  (robustcore/_blas_policy.py) holds BLAS to one thread inside each fit;
* ``one-thread``: OPENBLAS_NUM_THREADS=1, what the window and the command line set;
* ``blas-default``: OPENBLAS_NUM_THREADS=<cores>, i.e. BLAS's own default thread count inside
  the fit -- what a script got from robustcore 0.1 (a set variable is the user's choice, so the
  rule leaves it alone).

Data: the escalator video as a tall-skinny matrix (pixels as rows, frames as columns), the shape
of the clip in issue 16. Prints the conditions (cores, load average, versions) and, per method,
the best and median of the repeats and the ratio to ``one-thread``.

    nice python benchmarks/bench_threads.py [--frames 24] [--repeats 5] [--no-load]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

CONDITIONS = {
    "script": {},
    "one-thread": {"OPENBLAS_NUM_THREADS": "1"},
    "blas-default": {"OPENBLAS_NUM_THREADS": str(os.cpu_count() or 1)},
}
THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
               "VECLIB_MAXIMUM_THREADS")
# Stop repeating a method once its runs have taken this long (the slow condition can take
# tens of seconds per fit).
BUDGET_S = 90.0


def _data(frames):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from _pcp_data import escalator
    X = escalator()                     # frames x pixels
    return X[:frames].T.copy()          # pixels x frames: tall and skinny


def _methods():
    from robustcore import PCA, PCP, CoherencePursuit
    return {
        "PCP": lambda: PCP(random_state=0),
        "PCP n_jobs=1": lambda: PCP(random_state=0, n_jobs=1),
        "PCA (rank 5)": lambda: PCA(5),
        "Coherence Pursuit (rank 5)": lambda: CoherencePursuit(5),
    }


def child(frames, repeats):
    import warnings

    import numpy as np
    import threadpoolctl
    warnings.simplefilter("ignore")
    X = _data(frames)
    out = {"blas": [(i["internal_api"], i.get("version"), i["num_threads"])
                    for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"],
           "numpy": np.__version__, "times": {}}
    for name, make in _methods().items():
        times = []
        spent = 0.0
        for _ in range(repeats):
            t0 = time.perf_counter()
            make().fit(X)
            dt = time.perf_counter() - t0
            times.append(dt)
            spent += dt
            if spent > BUDGET_S:
                break
        out["times"][name] = times
    print(json.dumps(out))


def _busy():
    """A process that keeps one core busy (what another program on the machine does)."""
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--frames", type=int, default=24)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--no-load", action="store_true", help="do not keep a core busy")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args.frames, args.repeats)

    import numpy
    import scipy
    import sklearn
    import threadpoolctl

    import robustcore
    busy = None if args.no_load else _busy()
    results = {}
    try:
        time.sleep(1.0)
        load_before = os.getloadavg()
        for cond, env_extra in CONDITIONS.items():
            env = {k: v for k, v in os.environ.items() if k not in THREAD_VARS}
            env.update(env_extra)
            proc = subprocess.run([sys.executable, __file__, "--child", "--frames", str(args.frames),
                                   "--repeats", str(args.repeats)], env=env, capture_output=True,
                                  text=True, check=True)
            results[cond] = json.loads(proc.stdout.strip().splitlines()[-1])
        load_after = os.getloadavg()
    finally:
        if busy is not None:
            busy.kill()
            busy.wait()

    print(f"## BLAS threads inside fits: escalator, 20800 x {args.frames} (pixels x frames)\n")
    print(f"cores: {os.cpu_count()} (affinity {len(os.sched_getaffinity(0))}); "
          f"busy process: {'none' if args.no_load else 'one core kept busy'}; "
          f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f}")
    print(f"python {sys.version.split()[0]}, numpy {numpy.__version__}, scipy {scipy.__version__}, "
          f"scikit-learn {sklearn.__version__}, threadpoolctl {threadpoolctl.__version__}, "
          f"robustcore {robustcore.__version__}")
    for cond, res in results.items():
        print(f"- {cond}: env {CONDITIONS[cond] or 'no thread variable'}; BLAS at start {res['blas']}")
    print()
    print("| method | condition | runs | best (s) | median (s) | median / one-thread |")
    print("|---|---|---:|---:|---:|---:|")
    for name in results["one-thread"]["times"]:
        ref = statistics.median(results["one-thread"]["times"][name])
        for cond, res in results.items():
            t = res["times"][name]
            med = statistics.median(t)
            print(f"| {name} | {cond} | {len(t)} | {min(t):.3f} | {med:.3f} | {med / ref:.2f} |")


if __name__ == "__main__":
    main()
