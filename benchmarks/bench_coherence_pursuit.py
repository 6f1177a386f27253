"""Coherence Pursuit speed and peak memory, run by hand:  python benchmarks/bench_coherence_pursuit.py

Each measurement runs in a fresh subprocess so its peak RSS (resource.getrusage) is its own.
Reference: the naive method that forms the full n x n Gram matrix (what the paper's code does),
at n = 10,000 where it still fits (800 MB). Figures are reported as ratios within this run.
The planted subspace is linear (center="none"): inliers = n/5 in a 5-dim subspace, the rest
Gaussian outliers; the most coherent n/10 samples are selected.
Options: --quick (smaller sizes), --l1-big (add the l1 run at n = 100,000: ~10 minutes),
--repeat R (runs per measurement, each its own process; best and median reported),
--blas 1,default (one BLAS thread for both contenders, then the library's default).
"""
from __future__ import annotations

import argparse
import os
import sys
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import _bench  # noqa: E402

CHILD = textwrap.dedent("""
    import sys, time
    import numpy as np
    sys.path.insert(0, {root!r})
    sys.path.insert(0, {here!r})
    import _bench
    from robustcore.subspace.coherence_pursuit import CoherencePursuit
    n, d, r, kind, norm = {n}, {d}, {r}, {kind!r}, {norm}
    rng = np.random.default_rng(0)
    n1 = n // 5
    U = np.linalg.qr(rng.standard_normal((d, r)))[0]
    X = np.vstack([rng.standard_normal((n1, r)) @ U.T, rng.standard_normal((n - n1, d))])
    base = _bench.peak_rss_mb()
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
    peak = _bench.peak_rss_mb()
    _bench.child_result(seconds=dt, peak_mb=peak, data_mb=base, err=err)
""")


def run(n, d, r, kind, norm, blas, repeat):
    """Best/median seconds and the first run's memory of ``repeat`` fresh processes."""
    code = CHILD.format(root=ROOT, here=HERE, n=n, d=d, r=r, kind=kind, norm=norm)
    t = _bench.Timing()
    first = None
    for _ in range(repeat):
        out = _bench.run_child(["-c", code], blas=blas, timeout=3600)
        if "error" in out:
            raise SystemExit(f"{kind} n={n} norm={norm}: {out['error']}")
        t.runs.append(out["seconds"])
        first = first or out
    return t, first


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--l1-big", action="store_true")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--blas", default="1,default")
    a = ap.parse_args()
    d, r = 100, 5
    big = 20_000 if a.quick else 100_000
    mid = 4_000 if a.quick else 10_000
    print("# bench_coherence_pursuit\n")
    print(_bench.conditions([f"command: {' '.join(sys.argv)}"]))
    cases = [
        ("CoP l2 (d x d shortcut)", big, "cop", 2),
        ("CoP l2 (d x d shortcut)", mid, "cop", 2),
        ("CoP l1 (chunked Gram)", mid, "cop", 1),
        ("naive full Gram l2", mid, "naive", 2),
        ("naive full Gram l1", mid, "naive", 1),
    ] + ([("CoP l1 (chunked Gram)", big, "cop", 1)] if a.l1_big else [])
    for mode in _bench.blas_modes(a.blas):
        print(f"\n## {_bench.blas_label(mode)}\n")
        print("| method | n | best / median | peak RSS | extra memory (peak - after data) | subspace error |")
        print("|---|--:|--:|--:|--:|--:|")
        by = {}
        for label, n, kind, norm in cases:
            t, res = run(n, d, r, kind, norm, mode, a.repeat)
            by[(label, n)] = (t, res)
            print(f"| {label} | {n:,} | {t} ({len(t.runs)} runs) | {res['peak_mb']:.0f} MB | "
                  f"{res['peak_mb'] - res['data_mb']:.0f} MB | {res['err']:.1e} |", flush=True)
        (n2, m2), (n1, m1) = by[("naive full Gram l2", mid)], by[("naive full Gram l1", mid)]
        (c2, k2), (c1, k1) = by[("CoP l2 (d x d shortcut)", mid)], by[("CoP l1 (chunked Gram)", mid)]

        def extra(x):
            return max(x["peak_mb"] - x["data_mb"], 1)
        print(f"\nAt n = {mid:,} (load after: {_bench.load_average()}): time naive / CoP, l2 "
              f"{_bench.ratio(n2, c2)}, l1 {_bench.ratio(n1, c1)}; extra memory naive / CoP, "
              f"l2 {extra(m2) / extra(k2):.1f}x, l1 {extra(m1) / extra(k1):.1f}x", flush=True)


if __name__ == "__main__":
    main()
