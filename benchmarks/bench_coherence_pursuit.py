"""Coherence Pursuit speed and peak memory, run by hand:  python benchmarks/bench_coherence_pursuit.py

Each measurement runs in a fresh subprocess so its peak RSS (resource.getrusage) is its own.
Reference: the naive method that forms the full n x n Gram matrix (what the paper's code does),
at n = 10,000 where it still fits (800 MB). Figures are reported as ratios within this run.
The planted subspace is linear (center="none"): inliers = n/5 in a 5-dim subspace, the rest
Gaussian outliers; the most coherent n/10 samples are selected.
Options: --quick (smaller sizes), --no-l1 (skip the slow l1 run at n = 100,000).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = textwrap.dedent("""
    import json, resource, sys, time
    import numpy as np
    sys.path.insert(0, {root!r})
    from robustcore.subspace.coherence_pursuit import CoherencePursuit
    n, d, r, kind, norm = {n}, {d}, {r}, {kind!r}, {norm}
    rng = np.random.default_rng(0)
    n1 = n // 5
    U = np.linalg.qr(rng.standard_normal((d, r)))[0]
    X = np.vstack([rng.standard_normal((n1, r)) @ U.T, rng.standard_normal((n - n1, d))])
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    t0 = time.perf_counter()
    if kind == "cop":
        cop = CoherencePursuit(n_components=r, norm=norm, n_inliers=n1 // 2, center="none").fit(X)
        V = cop.components_.T
        err = float(np.linalg.norm(U - V @ (V.T @ U)) / np.linalg.norm(U))
    else:
        # Naive reference: full Gram of the normalised rows, then the same selection and SVD.
        Xn = X / np.linalg.norm(X, axis=1, keepdims=True)
        G = Xn @ Xn.T
        np.fill_diagonal(G, 0.0)
        p = np.abs(G).sum(axis=1) if norm == 1 else (G * G).sum(axis=1)
        sel = np.argsort(-p)[: n1 // 2]
        V = np.linalg.svd(Xn[sel], full_matrices=False)[2][:r].T
        err = float(np.linalg.norm(U - V @ (V.T @ U)) / np.linalg.norm(U))
    dt = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(dict(seconds=dt, peak_mb=peak, data_mb=base, err=err)))
""")


def run(n, d, r, kind, norm):
    code = CHILD.format(root=ROOT, n=n, d=d, r=r, kind=kind, norm=norm)
    # One BLAS thread by default: on a shared machine multi-threaded OpenBLAS spins and the
    # timings become noise. Set OPENBLAS_NUM_THREADS yourself to measure otherwise.
    env = dict(os.environ, OPENBLAS_NUM_THREADS=os.environ.get("OPENBLAS_NUM_THREADS", "1"))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    quick = "--quick" in sys.argv
    d, r = 100, 5
    big = 20_000 if quick else 100_000
    mid = 4_000 if quick else 10_000
    rows = []
    for label, n, kind, norm in [
        ("CoP l2 (d x d shortcut)", big, "cop", 2),
        ("CoP l2 (d x d shortcut)", mid, "cop", 2),
        ("CoP l1 (chunked Gram)", mid, "cop", 1),
        ("naive full Gram l2", mid, "naive", 2),
        ("naive full Gram l1", mid, "naive", 1),
    ] + ([] if ("--no-l1" in sys.argv) else [("CoP l1 (chunked Gram)", big, "cop", 1)]):
        res = run(n, d, r, kind, norm)
        res.update(label=label, n=n)
        rows.append(res)
        print(f"{label:26s} n={n:>7d} d={d}: {res['seconds']:7.2f} s, peak RSS {res['peak_mb']:7.0f} MB "
              f"(after data {res['data_mb']:5.0f} MB), subspace error {res['err']:.1e}", flush=True)
    by = {(x["label"], x["n"]): x for x in rows}
    naive2, naive1 = by[("naive full Gram l2", mid)], by[("naive full Gram l1", mid)]
    cop2, cop1 = by[("CoP l2 (d x d shortcut)", mid)], by[("CoP l1 (chunked Gram)", mid)]
    print(f"\nAt n = {mid}: time ratio naive/CoP  l2 {naive2['seconds'] / cop2['seconds']:.1f}x, "
          f"l1 {naive1['seconds'] / cop1['seconds']:.2f}x")
    print(f"             extra memory (peak - data) naive/CoP  l2 "
          f"{(naive2['peak_mb'] - naive2['data_mb']) / max(cop2['peak_mb'] - cop2['data_mb'], 1):.1f}x, l1 "
          f"{(naive1['peak_mb'] - naive1['data_mb']) / max(cop1['peak_mb'] - cop1['data_mb'], 1):.1f}x")


if __name__ == "__main__":
    main()
