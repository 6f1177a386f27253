"""ROBPCA's stages, this checkout against another, in fresh processes interleaved round by round:
what a change saved in the stage it touched, below the spread of whole fresh-process fits.

Each process (one BLAS thread) makes issue 35's 10,000 x 200 table (benchmarks/bench_robpca.py's
``make``), fits its first 500 rows once (the benchmark's warm-up), then times ``--fits`` fits of
``fit_row_results`` and reports the median CPU of the whole fit, of the affine span
(``_affine_span``), of the outlyingness (``outlyingness``), of the MCD stage (``mcd_subspace``)
and of the fit outside the stages
(``_stages``: the input checks, the offset, the row results). The summary gives each checkout's
median (range) over the rounds and the paired difference (other - this) per round.

    /work/tools/bench python benchmarks/pair_robpca_stages.py --against DIR [--rounds 8] [--fits 25]

(DIR: a checkout of another commit, e.g. ``git archive main | tar -x -C DIR``.)
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import _bench  # noqa: E402

PARTS = ("fit", "_affine_span", "outlyingness", "mcd_subspace", "outside")

CHILD = r'''
import sys, time, json, numpy as np
sys.path.insert(0, {bench!r})
from bench_robpca import make
from robustcore import ROBPCA
import robustcore.subspace.robpca as R
X, _ = make(10000, 200, 5)
ROBPCA(n_components=5, random_state=0, scale="none").fit_row_results(X[:500])
spent = {{}}
def wrap(name):
    fn = getattr(R, name)
    def call(*a, **k):
        c = time.process_time()
        try:
            return fn(*a, **k)
        finally:
            spent[name] = spent.get(name, 0.0) + time.process_time() - c
    setattr(R, name, call)
for name in ("_affine_span", "outlyingness", "mcd_subspace", "_stages"):
    wrap(name)
res = {{p: [] for p in {parts!r}}}
for _ in range({fits}):
    spent.clear()
    c = time.process_time()
    ROBPCA(n_components=5, random_state=0, scale="none").fit_row_results(X)
    t = time.process_time() - c
    res["fit"].append(t)
    res["_affine_span"].append(spent["_affine_span"])
    res["outlyingness"].append(spent["outlyingness"])
    res["mcd_subspace"].append(spent["mcd_subspace"])
    res["outside"].append(t - spent["_stages"])
print("RESULT " + json.dumps({{p: float(np.median(v)) * 1e3 for p, v in res.items()}}))
'''


def run(checkout, fits):
    env = _bench.blas_env("1", dict(os.environ, PYTHONPATH=checkout))
    out = subprocess.run([sys.executable, "-c", CHILD.format(bench=HERE, parts=PARTS, fits=fits)], env=env,
                         capture_output=True, text=True, cwd="/tmp", timeout=900)
    for line in out.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError(out.stderr[-2000:])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--against", required=True, metavar="DIR")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--fits", type=int, default=25)
    a = ap.parse_args()
    print("\n".join(_bench.conditions()))
    this = os.path.dirname(HERE)
    got = {"this": [], "other": []}
    for r in range(a.rounds):
        for name, checkout in (("other", a.against), ("this", this)):
            got[name].append(run(checkout, a.fits))
        print(f"round {r + 1}: load {_bench.load_average()}", file=sys.stderr)
    print(f"\n| part | {a.against}, ms | this checkout, ms | paired difference, median (range) |")
    print("|---|--:|--:|--:|")
    for p in PARTS:
        x = np.array([g[p] for g in got["other"]])
        y = np.array([g[p] for g in got["this"]])
        d = x - y
        print(f"| {p} | {np.median(x):.2f} ({x.min():.2f}-{x.max():.2f}) | {np.median(y):.2f} "
              f"({y.min():.2f}-{y.max():.2f}) | {np.median(d):.2f} ({d.min():.2f}-{d.max():.2f}) |")


if __name__ == "__main__":
    main()
