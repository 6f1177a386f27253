"""BLAS threads inside fits: a plain script against the window's one-thread setting, with one core
kept busy by another process (run by hand; reads /work/shared/data).

Each run is a fresh interpreter (``_bench.race``), because BLAS reads its thread variables when
it is loaded; the methods and conditions take turns round after round:

* ``script``: no BLAS thread variable set, as in a plain script or notebook; robustcore's rule
  (robustcore/_blas_policy.py) holds BLAS to one thread inside each fit;
* ``one-thread``: OPENBLAS_NUM_THREADS=1, what the window and the command line set;
* ``blas-default``: OPENBLAS_NUM_THREADS=<cores>, i.e. BLAS's own default thread count inside
  the fit -- what a script got from robustcore 0.1 (a set variable is the user's choice, so the
  rule leaves it alone).

Data: the escalator video as a tall-skinny matrix (pixels as rows, frames as columns), the shape
of the clip in issue 16. Prints the conditions (cores, load average, versions), the code of
every contender and, per method, the median and range of each condition's wall and CPU time
and the paired ratio to ``one-thread``.

    nice python benchmarks/bench_threads.py [--frames 24] [--repeats 5] [--no-load]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
import _bench  # noqa: E402

CONDITIONS = {
    "script": {},
    "one-thread": {"OPENBLAS_NUM_THREADS": "1"},
    "blas-default": {"OPENBLAS_NUM_THREADS": str(os.cpu_count() or 1)},
}
METHODS = {
    "PCP": "PCP(random_state=0).fit(X)",
    "PCP n_jobs=1": "PCP(random_state=0, n_jobs=1).fit(X)",
    "PCA (rank 5)": "PCA(5).fit(X)",
    "Coherence Pursuit (rank 5)": "CoherencePursuit(5).fit(X)",
}


def _data(frames):
    from _pcp_data import escalator
    X = escalator()                     # frames x pixels
    return X[:frames].T.copy()          # pixels x frames: tall and skinny


def contenders(frames):
    setup = ("import warnings\nwarnings.simplefilter('ignore')\nimport bench_threads as B\n"
             f"X = B._data({frames})\nfrom robustcore import PCA, PCP, CoherencePursuit")
    return [_bench.Contender(f"{method}, {cond}", call, setup, env=env)
            for method, call in METHODS.items() for cond, env in CONDITIONS.items()]


def _busy():
    """A process that keeps one core busy (what another program on the machine does)."""
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--frames", type=int, default=24)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--no-load", action="store_true", help="do not keep a core busy")
    args = ap.parse_args()
    print("# bench_threads\n")
    print(_bench.conditions([f"command: {' '.join(sys.argv)}",
                             f"busy process: {'none' if args.no_load else 'one core kept busy'}"]))
    cs = contenders(args.frames)
    busy = None if args.no_load else _busy()
    try:
        # "default": the thread variables removed, then each condition's own set
        runs = _bench.race(cs, args.repeats, "default", timeout=1800)
    finally:
        if busy is not None:
            busy.kill()
            busy.wait()
    print(f"\n## BLAS threads inside fits: escalator, 20800 x {args.frames} (pixels x frames), "
          f"load {_bench.load_span(runs)} over the runs\n")
    for method in METHODS:
        sub = {f"{method}, {cond}": runs[f"{method}, {cond}"] for cond in CONDITIONS}
        print("\n".join(_bench.race_table(sub, f"{method}, one-thread", extra=[
            ("BLAS in the child", lambda r: r.get("blas", "?"))])) + "\n")
    print("## The contenders' code (each run a fresh `python -c` of it)\n")
    print("\n".join(_bench.race_calls(cs)))


if __name__ == "__main__":
    main()
