"""ESFS speed and memory, run by hand: ``python benchmarks/bench_esfs.py [--quick]``.

Cases (each in its own subprocess so its peak RSS is its own):

* ``knn``: ESFS(graph="knn") at n = 20,000, d = 50 (target: < 30 s, < 2 GB peak RSS), against
  scikit-learn's brute-force ``kneighbors_graph`` on the same data as a same-run reference.
* ``dense``: ESFS(graph="dense") at n = 3000, d = 50 against a reference that loops over the
  features and builds an n x n matrix per feature (target: >= 5x). Two ratios: the derivative
  step alone (same graph and eigenpairs), and the whole fit against a naive pipeline
  (full generalised ``eigh(L, D)`` + the per-feature loop).
* ``auto``: dense vs kNN fit time at a few n (one input to graph="auto"'s choice).

``--quality`` instead ranks the features of real labelled data sets from /work/shared/data (USPS
digit pairs, iris, ODDS cardio) with several graphs and settings, and prints the mean F statistic
of the top 10% of features over the mean F of all features (labels judge, ESFS never sees them).

Synthetic data: 4 Gaussian clusters planted in features 0..9, the other features noise; each
case also reports how many of the 10 top-ranked features are informative (10 = perfect).
``knn-noise`` runs the kNN case on pure noise (no spectral gap: the eigensolver's worst case).
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _bench  # noqa: E402


N_INFORMATIVE = 10


def make_data(n, d, seed=0, structured=True):
    """4 clusters whose centres differ (by +-3) in features 0..9 only; the rest is noise."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    if structured:
        centres = 3.0 * rng.choice([-1.0, 1.0], size=(4, N_INFORMATIVE))
        g = rng.integers(0, 4, n)
        X[:, :N_INFORMATIVE] += centres[g]
    return X


def informative_in_top(est):
    """How many of the 10 top-ranked features are informative ones (0..9)."""
    return int(np.sum(est.ranking_[:N_INFORMATIVE] < N_INFORMATIVE))


def peak_rss_mb():
    return _bench.peak_rss_mb()


def loop_derivatives(Xc, S, lam, Q, sigma):
    """Reference: one n x n matrix G_t = S ∘ (x_t - x_tᵀ)² per feature t."""
    n, d = Xc.shape
    out = np.empty((Q.shape[1], d))
    for t in range(d):
        x = Xc[:, t]
        G = S * (x[:, None] - x[None, :]) ** 2
        g1 = G.sum(axis=1)
        GQ = G @ Q
        # Σ_{i<j} G_ij [(1-λ)(q_i² + q_j²) - 2 q_i q_j] = (1-λ) Σ_i q_i² g1_i - qᵀ G q
        out[:, t] = -((1.0 - lam) * ((Q * Q).T @ g1) - np.einsum("ir,ir->r", Q, GQ)) / sigma**2
    return out


def case_knn(n, d, structured=True):
    from robustcore.features.esfs import ESFS
    X = make_data(n, d, structured=structured)
    t0 = time.perf_counter()
    est = ESFS(graph="knn", random_state=0).fit(X)
    t_fit = time.perf_counter() - t0
    rss = peak_rss_mb()
    from sklearn.neighbors import NearestNeighbors
    Z = (X - X.mean(0)) / X.std(0)
    t0 = time.perf_counter()
    NearestNeighbors(n_neighbors=10, algorithm="brute").fit(Z).kneighbors_graph(mode="distance")
    t_ref = time.perf_counter() - t0
    return dict(case="knn", n=n, d=d, fit_s=t_fit, peak_rss_mb=rss, sklearn_knn_graph_s=t_ref,
                top=informative_in_top(est), eigenvalues=est.eigenvalues_[:6].tolist(),
                components=est.n_graph_components_)


def case_dense(n, d):
    import scipy.linalg as sla
    from robustcore.features import _graph, _spectral
    from robustcore.features.esfs import ESFS
    X = make_data(n, d)
    t0 = time.perf_counter()
    est = ESFS(graph="dense", random_state=0).fit(X)
    t_fit = time.perf_counter() - t0
    rss = peak_rss_mb()
    Xc = (X - X.mean(0)) / X.std(0)
    sel = est.selected_eigenpairs_
    lam, Q = est.eigenvalues_[sel], est.eigenvectors_[:, sel]
    S = _graph.dense_affinity(_graph.sq_distances(Xc), est.sigma_)
    t0 = time.perf_counter()
    fast = _spectral.derivatives_dense(Xc, S, lam, Q, est.sigma_)
    t_fast = time.perf_counter() - t0
    t0 = time.perf_counter()
    slow = loop_derivatives(Xc, S, lam, Q, est.sigma_)
    t_loop = time.perf_counter() - t0
    err = float(np.abs(fast - slow).max() / np.abs(slow).max())
    # naive whole pipeline: graph, full generalised eigendecomposition, per-feature loop
    t0 = time.perf_counter()
    S2 = np.exp(-_graph.sq_distances(Xc) / (2 * est.sigma_**2))
    np.fill_diagonal(S2, 0.0)
    deg = S2.sum(1)
    w, V = sla.eigh(np.diag(deg) - S2, np.diag(deg))
    k = len(sel)
    loop_derivatives(Xc, S2, w[1:k + 1], V[:, 1:k + 1], est.sigma_)
    t_naive = time.perf_counter() - t0
    return dict(case="dense", n=n, d=d, fit_s=t_fit, peak_rss_mb=rss, deriv_vectorised_s=t_fast,
                deriv_loop_s=t_loop, deriv_rel_diff=err, naive_pipeline_s=t_naive,
                top=informative_in_top(est))


def case_auto(n, d):
    from robustcore.features.esfs import ESFS
    X = make_data(n, d)
    out = dict(case="auto", n=n, d=d)
    for g in ("dense", "knn"):
        t0 = time.perf_counter()
        est = ESFS(graph=g, random_state=0).fit(X)
        out[f"{g}_s"] = time.perf_counter() - t0
        out[f"{g}_top"] = informative_in_top(est)
    out["peak_rss_mb"] = peak_rss_mb()
    return out


SHARED = "/work/shared/data"


def _real_sets():
    import bz2
    import csv
    import scipy.io
    rows, lab = [], []
    with bz2.open(f"{SHARED}/usps/usps.t.bz2", "rt") as fh:
        for line in fh:
            parts = line.split()
            v = np.zeros(256)
            for tok in parts[1:]:
                i, x = tok.split(":")
                v[int(i) - 1] = float(x)
            rows.append(v)
            lab.append(int(parts[0]) - 1)
    U, UL = np.array(rows), np.array(lab)
    sets = {}
    for a, b in [(1, 8), (3, 5), (0, 6), (4, 9)]:
        m = (UL == a) | (UL == b)
        sets[f"USPS {a} v {b}"] = (U[m], UL[m])
    sets["USPS all 10"] = (U, UL)
    with open(f"{SHARED}/iris/iris.csv") as fh:
        r = list(csv.reader(fh))[1:]
    sets["iris"] = (np.array([[float(v) for v in x[:4]] for x in r]), np.array([x[4] for x in r]))
    m = scipy.io.loadmat(f"{SHARED}/odds/cardio.mat")
    sets["cardio"] = (m["X"].astype(float), m["y"].ravel())
    return sets


def _anova_f(X, y):
    cls = np.unique(y)
    mean = X.mean(0)
    between = sum((y == c).sum() * (X[y == c].mean(0) - mean) ** 2 for c in cls) / (len(cls) - 1)
    within = sum(((X[y == c] - X[y == c].mean(0)) ** 2).sum(0) for c in cls) / (len(y) - len(cls))
    return between / (within + 1e-12)


def quality():
    import warnings
    from robustcore.features.esfs import ESFS
    settings = [("dense", 0.5, 1), ("dense", 0.5, 2), ("dense", 1.0, 1), ("dense", 1.0, 2),
                ("knn", 1.0, 1), ("knn", 1.0, 2)]
    print("data | " + " | ".join(f"{g} scale {sc} k{k}" for g, sc, k in settings))
    for name, (X, y) in _real_sets().items():
        F = _anova_f(X, y)
        top = max(2, X.shape[1] // 10)
        cells = []
        for g, sc, k in settings:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est = ESFS(graph=g, sigma_scale=sc, n_eigenpairs=k, random_state=0).fit(X)
            cells.append(f"{F[est.ranking_[:top]].mean() / F.mean():.2f}")
        print(f"{name} ({X.shape[0]} x {X.shape[1]}) | " + " | ".join(cells), flush=True)


def run_sub(case, n, d, blas, repeat):
    """Run a case ``repeat`` times, each in a fresh process; every "*_s" field becomes a Timing
    (best and median), the other fields are the first run's."""
    runs = []
    for _ in range(repeat):
        res = _bench.run_child([os.path.abspath(__file__), "--one", case, str(n), str(d)], blas=blas,
                               timeout=3600)
        if "error" in res:
            raise RuntimeError(f"case {case} n={n} failed: {res['error']}")
        runs.append(res)
    out = dict(runs[0])
    for key in runs[0]:
        if key.endswith("_s"):
            out[key] = _bench.Timing([r[key] for r in runs])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--one", nargs=3, metavar=("CASE", "N", "D"))
    ap.add_argument("--quick", action="store_true", help="smaller sizes for a smoke run")
    ap.add_argument("--quality", action="store_true", help="ranking quality on real data sets")
    ap.add_argument("--repeat", type=int, default=3, help="runs per case, each its own process")
    ap.add_argument("--blas", default="1,default", help="BLAS threads: 1, default, or both")
    args = ap.parse_args()
    if args.quality:
        quality()
        return
    if args.one:
        case, n, d = args.one[0], int(args.one[1]), int(args.one[2])
        res = {"knn": case_knn, "knn-noise": lambda n, d: case_knn(n, d, structured=False),
               "dense": case_dense, "auto": case_auto}[case](n, d)
        _bench.child_result(**res)
        return
    big, mid = (4000, 1000) if args.quick else (20000, 3000)
    print("# bench_esfs (times: best / median of the runs, each run its own process)\n")
    print(_bench.conditions([f"command: {' '.join(sys.argv)}"]))
    for blas in _bench.blas_modes(args.blas):
        print(f"\n## {_bench.blas_label(blas)}\n")
        for case in ("knn", "knn-noise"):
            r = run_sub(case, big, 50, blas, args.repeat)
            print(f"- {case} n={r['n']} d={r['d']}: fit {r['fit_s']} (target < 30 s), peak RSS "
                  f"{r['peak_rss_mb']:.0f} MB (target < 2048); sklearn brute kNN graph alone "
                  f"{r['sklearn_knn_graph_s']} -> fit / reference = "
                  f"{r['fit_s'].best / r['sklearn_knn_graph_s'].best:.2f}; informative in top 10: {r['top']}, "
                  f"components {r['components']}", flush=True)
        r = run_sub("dense", mid, 50, blas, args.repeat)
        print(f"- dense n={r['n']} d={r['d']}: fit {r['fit_s']}, peak RSS {r['peak_rss_mb']:.0f} MB; "
              f"derivatives vectorised {r['deriv_vectorised_s']} vs per-feature loop "
              f"{r['deriv_loop_s']} -> {_bench.ratio(r['deriv_loop_s'], r['deriv_vectorised_s'])} "
              f"(max rel diff {r['deriv_rel_diff']:.1e}); whole fit vs naive pipeline "
              f"{r['naive_pipeline_s']} -> {_bench.ratio(r['naive_pipeline_s'], r['fit_s'])}; "
              f"informative in top 10: {r['top']}", flush=True)
        for n in ((500, 1000) if args.quick else (1000, 3000, 6000)):
            r = run_sub("auto", n, 50, blas, args.repeat)
            print(f"- auto n={n} d=50: dense {r['dense_s']} (top {r['dense_top']}), knn "
                  f"{r['knn_s']} (top {r['knn_top']}) -> dense / knn = "
                  f"{r['dense_s'].best / r['knn_s'].best:.2f}; peak RSS {r['peak_rss_mb']:.0f} MB", flush=True)
        print(f"\n(load after: {_bench.load_average()})")


if __name__ == "__main__":
    main()
