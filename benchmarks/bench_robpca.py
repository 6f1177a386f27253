"""ROBPCA: robustcore's against robpy's (issue 35's speed target: at least 10x robpy, same answers).

Two tables, each a planted low-rank structure with 10 % outliers (a tight cluster off the
subspace and scattered rows far along it): 50,000 x 10 (rank 3) and 10,000 x 200 (rank 5). Every
fit runs in a fresh process, contenders interleaved run by run, once with one BLAS thread for
every contender and once with the library's default; the load average is printed with each
table. The time is the fit and every row's score and orthogonal distances and flags (ours:
``fit_row_results``, the registry's path; robpy: ``fit`` and ``plot_outlier_map(...,
return_distances=True)``), after the imports and a first fit of each contender on the table's
first 500 rows (one-time costs: scikit-learn 1.9's first input check spends about 0.05 s
finding dataframe plug-ins, which robpy's scikit-learn 1.6 does not have). Each run reports
its wall time and its CPU time (``time.process_time``: on a shared machine the wall time
also counts the time other jobs hold the cores).

robpy is not a dependency: it lives in a virtual environment of its own, given with --robpy
(``python -m venv /tmp/robpy_venv && /tmp/robpy_venv/bin/pip install robpy==0.0.6``).

"Same answers": the cosines of the principal angles between the two fitted subspaces, the
share of the planted outliers each flags beyond a cut-off, and the share of the planted
inliers each flags. The rank is given (n_components = the planted rank) so both fit the same
model; robpy's rule for k differs from the paper's (no l_k / l_1 test, no kmax).

    python benchmarks/bench_robpca.py --robpy /tmp/robpy_venv/bin/python [--repeat 2] [--blas 1,default]
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SHAPES = {"50000x10": (50_000, 10, 3), "10000x200": (10_000, 200, 5)}


def make(n, d, r, seed=0):
    """Inliers near a rank-r affine subspace (noise 0.1), 5 % in a tight cluster 6 units off it
    and 5 % scattered far along it and off it; returns X and the outlier mask."""
    rng = np.random.default_rng(seed)
    U = np.linalg.qr(rng.standard_normal((d, r)))[0]
    X = 3.0 + rng.standard_normal((n, r)) * np.linspace(3.0, 1.0, r) @ U.T + 0.1 * rng.standard_normal((n, d))
    w = rng.standard_normal(d)
    w -= U @ (U.T @ w)
    w /= np.linalg.norm(w)
    m = n // 20
    X[:m] = 3.0 + 6.0 * w + 0.1 * rng.standard_normal((m, d))
    X[m:2 * m] += 20.0 * rng.standard_normal((m, 1)) * U[:, 0] + 3.0 * rng.standard_normal((m, d)) / np.sqrt(d)
    truth = np.zeros(n, bool)
    truth[:2 * m] = True
    return X, truth


def child(who, data, out, k):
    X = np.load(data)
    if who == "ours":
        sys.path.insert(0, ROOT)
        from robustcore import ROBPCA

        def fit(A):
            m = ROBPCA(n_components=k, random_state=0)
            res = m.fit_row_results(A)
            return m.components_, np.asarray(res.outlier)
    else:
        import warnings
        warnings.filterwarnings("ignore")
        import matplotlib
        matplotlib.use("Agg")
        from robpy.pca import ROBPCA

        def fit(A):
            m = ROBPCA(n_components=k).fit(A)
            sd, od, sd_cut, od_cut = m.plot_outlier_map(A, return_distances=True)
            return np.asarray(m.components_).T, (sd > sd_cut) | (od > od_cut)
    fit(X[:500])                                   # one-time costs (module doc)
    t0, c0 = time.perf_counter(), time.process_time()
    comps, flagged = fit(X)
    took, cpu = time.perf_counter() - t0, time.process_time() - c0
    np.savez(out, comps=comps, flagged=flagged)
    print("RESULT " + json.dumps({"seconds": took, "cpu": cpu, "load": os.getloadavg()[0]}), flush=True)


def run(python, who, data, out, k, blas):
    import subprocess
    sys.path.insert(0, HERE)
    import _bench
    env = _bench.blas_env(blas)
    if who == "ours":
        env["PYTHONPATH"] = ROOT
    proc = subprocess.run([python, __file__, "--child", who, data, out, str(k)], capture_output=True,
                          text=True, env=env, timeout=3600)
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise SystemExit(f"{who} failed: {(proc.stderr or proc.stdout)[-800:]}")


def cosines(A, B):
    return np.linalg.svd(np.linalg.qr(A.T)[0].T @ np.linalg.qr(B.T)[0], compute_uv=False)


def main():
    import argparse
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--robpy", help="the Python of a virtual environment with robpy (required)")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--blas", default="1,default")
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        who, data, out, k = a.child
        return child(who, data, out, int(k))
    if not a.robpy:
        ap.error("--robpy is required: the Python of a virtual environment where robpy is installed")
    sys.path.insert(0, HERE)
    import _bench
    print(_bench.conditions())
    with tempfile.TemporaryDirectory() as tmp:
        for shape in a.shapes.split(","):
            n, d, r = SHAPES[shape]
            X, truth = make(n, d, r)
            data = os.path.join(tmp, f"{shape}.npy")
            np.save(data, X)
            for mode in _bench.blas_modes(a.blas):
                times = {"ours": [], "robpy": []}
                cpus = {"ours": [], "robpy": []}
                loads = []
                for _ in range(a.repeat):
                    for who, py in (("robpy", a.robpy), ("ours", sys.executable)):
                        res = run(py, who, data, os.path.join(tmp, f"{who}.npz"), r, mode)
                        times[who].append(res["seconds"])
                        cpus[who].append(res["cpu"])
                        loads.append(res["load"])
                ans = {w: np.load(os.path.join(tmp, f"{w}.npz")) for w in times}
                cos = cosines(ans["ours"]["comps"], ans["robpy"]["comps"])
                print(f"\n{shape} (rank {r}, 10 % outliers), {_bench.blas_label(mode)}; load at the runs "
                      f"{min(loads):.1f}-{max(loads):.1f} (1 min)")
                print("| contender | wall best / median (s) | CPU best / median (s) | outliers flagged "
                      "| inliers flagged |")
                print("|---|---|---|---|---|")
                for w in ("robpy", "ours"):
                    f = ans[w]["flagged"]
                    print(f"| {w} | {min(times[w]):.2f} / {np.median(times[w]):.2f} | {min(cpus[w]):.2f} / "
                          f"{np.median(cpus[w]):.2f} | {f[truth].mean():.1%} | {f[~truth].mean():.2%} |")
                wall = [p / q for p, q in zip(times["robpy"], times["ours"])]
                cpu = [p / q for p, q in zip(cpus["robpy"], cpus["ours"])]
                print(f"robpy / ours, run by run: wall {min(wall):.1f}-{max(wall):.1f}x, "
                      f"CPU {min(cpu):.1f}-{max(cpu):.1f}x; "
                      f"best-to-best wall {min(times['robpy']) / min(times['ours']):.1f}x, CPU "
                      f"{min(cpus['robpy']) / min(cpus['ours']):.1f}x; subspace cosines {np.round(cos, 6).tolist()}")


if __name__ == "__main__":
    main()
