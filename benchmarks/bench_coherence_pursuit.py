"""Coherence Pursuit speed and peak memory, run by hand:  python benchmarks/bench_coherence_pursuit.py

Each measurement runs in a fresh subprocess so its peak RSS (resource.getrusage) is its own.
Reference: the naive method that forms the full n x n Gram matrix (what the paper's code does),
at n = 10,000 where it still fits (800 MB). Figures are reported as ratios within this run.
The planted subspace is linear (center="none"): inliers = n/5 in a 5-dim subspace, the rest
Gaussian outliers; the most coherent n/10 samples are selected.
Options: --quick (smaller sizes), --l1-big (add the l1 run at n = 100,000: ~10 minutes),
--repeat R (runs per measurement, each its own process; best and median reported),
--blas 1,default (one BLAS thread for both contenders, then the library's default).

--tall (issue 27): instead, the tall table 1,000,000 x 50 (400 MB), 80 % of the rows near a
5-dim subspace (noise 0.01), the rest Gaussian outliers; Coherence Pursuit with its defaults
and n_components=5 against scikit-learn's PCA(n_components=5), interleaved run by run (--repeat,
at least 5), each run a fresh process timing ONE call after the data are made: "fit +
score_samples" (the scikit-learn style: scores are a second pass over X), "fit_row_results"
(fit and every per-row result in one call: the scores come from the fit's own passes) and
PCA "fit + transform"; and "floor": the BLAS products alone that the fit + score_samples
makes (C = Σ ŷŷᵀ, the coherence bounds' thin product (m = 5 directions here; the exact form
of the few rows near the cut is left out), the selected rows' Gram, the residual pass's two
thin products, the calibration rows' EᵀE, the score pass's one thin product), each by the fastest
kernel here, with the block copies the in-place ones work on and no other sweep over memory
(norms, normalising, logs, selection): a lower bound of the fit + score_samples time on one
core (measured with --blas 1 only). Extra memory = the process's peak minus its memory once the data exist
(the peak is reset there through /proc/self/clear_refs where Linux allows it).
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


TALL_CHILD = textwrap.dedent("""
    import sys, time
    import numpy as np
    sys.path.insert(0, {root!r})
    sys.path.insert(0, {here!r})
    import _bench
    from sklearn.decomposition import PCA
    from robustcore.subspace.coherence_pursuit import CoherencePursuit
    n, d, r, kind = 1_000_000, 50, 5, {kind!r}

    def products_floor(X, r):
        # Seconds of the BLAS products alone that an exact fit + score_samples must make (the
        # fastest kernel here for each, with the block copies the in-place ones work on), on the
        # row counts the fit reports; no other sweep over memory is timed.
        from scipy.linalg.blas import dgemm
        cop = CoherencePursuit(n_components=r).fit(X)          # for the row counts only
        k, n_c = cop.selected_indices_.size, cop.calibration_indices_.size
        C = np.ascontiguousarray(cop.components_)
        Cf, CT = np.asfortranarray(C), C.T
        b = 262_144 // d
        W = np.empty((b, d))

        def gram(rows):                  # numpy's syrk: faster here than scipy's
            for s in range(0, rows, b):
                B = X[s:min(s + b, rows)]
                B.T @ B

        def thin(rows):                  # T = Y Cᵀ and E = Y - T C, E made in place
            for s in range(0, rows, b):
                B = X[s:min(s + b, rows)]
                m = B.shape[0]
                W[:m] = B
                T = dgemm(1.0, Cf, W[:m].T).T
                dgemm(-1.0, CT, T.T, beta=1.0, c=W[:m].T, overwrite_c=1)

        def coords(rows):                # T = Y Cᵀ alone (SPE from |y|² - |t|²)
            for s in range(0, rows, b):
                dgemm(1.0, Cf, X[s:min(s + b, rows)].T)

        t0 = time.perf_counter()
        gram(n)                          # C = Σ ŷŷᵀ over every row
        coords(n)                        # bounds on the coherence: r = m = 5 products per row
        gram(k)                          # the selected rows' Σ ŷŷᵀ
        thin(n)                          # the residual pass
        gram(n_c)                        # the calibration rows' EᵀE
        coords(n)                        # score_samples
        return time.perf_counter() - t0
    rng = np.random.default_rng(0)
    n1 = int(0.8 * n)
    U = np.linalg.qr(rng.standard_normal((d, r)))[0]
    X = np.empty((n, d))
    for s in range(0, n, 100_000):     # made in slices: no n x d temporary before the timing
        e = min(s + 100_000, n)
        if e <= n1:
            X[s:e] = rng.standard_normal((e - s, r)) @ U.T + 0.01 * rng.standard_normal((e - s, d))
        else:
            X[s:e] = rng.standard_normal((e - s, d))
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")              # the peak (VmHWM) starts again from here
    except OSError:
        pass
    base = _bench.peak_rss_mb()
    t0 = time.perf_counter()
    if kind == "pca":
        T = PCA(n_components=r).fit(X).transform(X)
        V = None
    elif kind == "fit_score":
        cop = CoherencePursuit(n_components=r).fit(X)
        score = -cop.score_samples(X)     # score_samples is minus the outlier score
        V = cop.components_.T
    elif kind == "floor":
        dt = products_floor(X, r)
        V = None
    else:
        cop = CoherencePursuit(n_components=r)
        res = cop.fit_row_results(X)
        score = res.outlier_score
        V = cop.components_.T
    dt = time.perf_counter() - t0 if kind != "floor" else dt
    peak = _bench.peak_rss_mb()
    err = float(np.linalg.norm(U - V @ (V.T @ U)) / np.linalg.norm(U)) if V is not None else 0.0
    flagged = int(np.count_nonzero(np.asarray(score) > 1.0)) if V is not None else 0
    _bench.child_result(seconds=dt, peak_mb=peak, data_mb=base, err=err, flagged=flagged)
""")

TALL_KINDS = (("fit_score", "Coherence Pursuit fit + score_samples"),
              ("row_results", "Coherence Pursuit fit_row_results"),
              ("pca", "scikit-learn PCA(5) fit + transform"),
              ("floor", "floor: the BLAS products alone of the fit + score_samples (module doc)"))


def tall(a):
    """The --tall case (module doc): every contender once per round, rounds repeated."""
    repeat = max(a.repeat, 5)
    for mode in _bench.blas_modes(a.blas):
        print(f"\n## {_bench.blas_label(mode)}\n")
        print(f"load before: {_bench.load_average()}\n")
        # the floor's loop runs on one core: a floor for the one-thread runs only
        kinds = [(k, label) for k, label in TALL_KINDS if k != "floor" or mode == "1"]
        times = {k: _bench.Timing() for k, _ in kinds}
        last = {}
        for _ in range(repeat):
            for kind, _label in kinds:
                code = TALL_CHILD.format(root=ROOT, here=HERE, kind=kind)
                out = _bench.run_child(["-c", code], blas=mode, timeout=1800)
                if "error" in out:
                    raise SystemExit(f"{kind}: {out['error']}")
                times[kind].runs.append(out["seconds"])
                last.setdefault(kind, []).append(out)
        ref = times["pca"]
        print("| contender | best / median (runs) | time / PCA's, best (median) | peak RSS | "
              "extra memory (peak - after data) | subspace error | rows with score > 1 |")
        print("|---|--:|--:|--:|--:|--:|--:|")
        for kind, label in kinds:
            t, outs = times[kind], last[kind]
            peak = max(o["peak_mb"] for o in outs)
            extra = max(o["peak_mb"] - o["data_mb"] for o in outs)
            rel = f"{t.best / ref.best:.2f}x ({t.median / ref.median:.2f}x)"
            err = f"{outs[0]['err']:.1e}" if kind not in ("pca", "floor") else "–"
            flagged = f"{outs[0]['flagged']:,}" if kind not in ("pca", "floor") else "–"
            mem = (f"{peak:.0f} MB | {extra:.0f} MB" if kind != "floor" else "– | –")
            print(f"| {label} | {t} ({len(t.runs)}) | {rel} | {mem} | "
                  f"{err} | {flagged} |", flush=True)
        print(f"\nthe table: 1,000,000 x 50 float64 = 381 MB (400 MB); load after: {_bench.load_average()}; "
              f"BLAS in the children: {last['pca'][0]['blas']}", flush=True)


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
    ap.add_argument("--tall", action="store_true")
    a = ap.parse_args()
    if a.tall:
        print("# bench_coherence_pursuit --tall\n")
        print(_bench.conditions([f"command: {' '.join(sys.argv)}"]))
        tall(a)
        return
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
