"""SPE / T² speed, run by hand:  python benchmarks/bench_residual.py [--quick] [--blas 1,default]

1) Fitting + scoring 100,000 x 50 (issue 14's target: no slower than 1.2x scikit-learn):
   ours = ``ResidualScorer().fit(X)`` (PCA, the rank rule, the SPE and T² control limits)
   then ``scores(X)`` (SPE and T² of every row); reference = scikit-learn's ``PCA`` with its
   default solver and the same number of components, ``fit``, then the reconstruction error
   |x - inverse_transform(transform(x))|² of every row (no limits, no T²).
2) Scoring 1,000,000 x 50 (spe + t2) with a fitted ResidualScorer vs a straightforward numpy
   reference (whole-array Z = X - m, T = Z U', E = Z - T U, row sums).
3) The contour grid: 1000 x 1000 = 1e6 points of a 50-feature model, ResidualScorer.grid
   (closed form in the plane) vs building the 1e6 x 50 points and scoring them.

Every run is a fresh process running the contender's code (printed with the results), the
contenders interleaved round after round (``_bench.race``); medians and ranges over runs, and
paired ratios (one per round). Each BLAS setting (``--blas 1,default``) is a race of its own.
The SPE of every contender is summed after the clock and compared (same numbers checked).
"""
from __future__ import annotations

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
import _bench  # noqa: E402

SPECTRUM = "np.sqrt(np.linspace(10, 0.1, 50))"


def fit_contenders(n=100_000, d=50):
    import numpy as np

    from robustcore.anomaly import ResidualScorer
    setup = ("import numpy as np\n"
             f"X = np.random.default_rng(0).standard_normal(({n}, {d})) * {SPECTRUM}")
    # the rank ResidualScorer's default rule picks here, told to scikit-learn
    k = ResidualScorer().fit(np.random.default_rng(0).standard_normal((n, d))
                             * np.sqrt(np.linspace(10, 0.1, d))).components_.shape[0]
    ours = _bench.Contender(
        "ours", "sc = ResidualScorer().fit(X)\nspe, t2 = sc.scores(X)",
        setup + "\nfrom robustcore.anomaly import ResidualScorer",
        "report['check'] = float(spe.sum())")
    sk = _bench.Contender(
        "sklearn", "pca = PCA(n_components=k).fit(X)\nR = X - pca.inverse_transform(pca.transform(X))\n"
                   "spe = np.einsum('ij,ij->i', R, R)",
        setup + f"\nfrom sklearn.decomposition import PCA\nk = {k}",
        "report['check'] = float(spe.sum()); report['solver'] = pca._fit_svd_solver")
    return [ours, sk], k


def score_contenders(n, d=50, p=3):
    setup = ("import numpy as np\nfrom robustcore.anomaly import ResidualScorer\n"
             "rng = np.random.default_rng(0)\n"
             f"Xtr = rng.standard_normal((2000, {d})) * {SPECTRUM}\n"
             f"X = rng.standard_normal(({n}, {d})) * {SPECTRUM}\n"
             f"sc = ResidualScorer(n_components={p}).fit(Xtr)\n"
             "U, m, lam = sc.components_, sc.mean_, sc.variances_")
    after = "report['check'] = float(spe.sum())"
    return [
        _bench.Contender("numpy reference", "Z = X - m\nT = Z @ U.T\nE = Z - T @ U\n"
                         "spe, t2 = (E**2).sum(axis=1), (T**2 / lam).sum(axis=1)", setup, after),
        _bench.Contender("ours: spe(X) then t2(X)", "spe, t2 = sc.spe(X), sc.t2(X)", setup, after),
        _bench.Contender("ours: scores(X)", "spe, t2 = sc.scores(X)", setup, after),
    ]


def grid_contenders(g, d=50, p=3):
    setup = ("import numpy as np\nfrom robustcore.anomaly import ResidualScorer\n"
             f"Xtr = np.random.default_rng(0).standard_normal((2000, {d})) * {SPECTRUM}\n"
             f"sc = ResidualScorer(n_components={p}).fit(Xtr)\n"
             "U, m, lam = sc.components_, sc.mean_, sc.variances_\n"
             f"xs, ys = np.linspace(-8, 8, {g}), np.linspace(-6, 6, {g})")
    # the plane holds two of the model's axes: SPE there is rounding (1e-25); T² is compared
    after = "report['check'] = float(t2.sum())"
    return [
        _bench.Contender("grid: numpy reference (build the points, score them)",
                         "u, v = sc.plane_\n"
                         f"pts = (m + xs[None, :, None] * u + ys[:, None, None] * v).reshape(-1, {d})\n"
                         "Z = pts - m\nT = Z @ U.T\nE = Z - T @ U\n"
                         "spe, t2 = (E**2).sum(axis=1), (T**2 / lam).sum(axis=1)", setup, after),
        _bench.Contender("grid: ours, grid() in closed form", "spe, t2 = sc.grid(xs, ys)", setup, after),
    ]


def same_numbers(runs):
    sums = [r["check"] for rs in runs.values() for r in rs if "check" in r]
    return max(sums) / min(sums) - 1 if sums else float("nan")


def section(title, cs, ref, a, mode):
    runs = _bench.race(cs, a.repeat, mode, timeout=1800)
    return [f"### {title} (load {_bench.load_span(runs)} over the runs)", "",
            *_bench.race_table(runs, ref), "",
            f"Same numbers: the sums over rows of SPE (T² on the grid) differ by {same_numbers(runs):.1e} "
            "(relative) across contenders and runs.", ""]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="200,000 rows in the scoring case")
    ap.add_argument("--repeat", type=int, default=5, help="rounds (fresh processes per contender)")
    ap.add_argument("--blas", default="1,default")
    a = ap.parse_args()
    n_score = 200_000 if a.quick else 1_000_000
    g = 1000 if n_score >= 1_000_000 else 450
    fit_cs, k = fit_contenders()
    parts = [(f"Fit + score 100,000 x 50 (ResidualScorer's default rank rule: {k} components); "
              "target ours / sklearn <= 1.2", fit_cs, "sklearn"),
             (f"Scoring {n_score:,} x 50 (p = 3): contender / numpy reference", score_contenders(n_score),
              "numpy reference"),
             (f"Contour grid {g} x {g} points: contender / reference", grid_contenders(g),
              "grid: numpy reference (build the points, score them)")]
    print("# bench_residual\n")
    print(_bench.conditions([f"command: {' '.join(sys.argv)}"]))
    modes = _bench.blas_modes(a.blas)
    for mode in modes:
        print(f"\n## {_bench.blas_label(mode)}\n")
        for title, cs, ref in parts:
            print("\n".join(section(title, cs, ref, a, mode)), flush=True)
    print("## The contenders' code (each run a fresh `python -c` of it)\n")
    for _, cs, _ in parts:
        print("\n".join(_bench.race_calls(cs)))


if __name__ == "__main__":
    main()
