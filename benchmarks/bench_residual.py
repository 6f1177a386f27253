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

Each BLAS setting runs in its own process (one BLAS thread for every contender, then the
library's default); each timing is the best and the median of ``--repeat`` runs, the
contenders taking turns; ratios are within one run.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
import _bench  # noqa: E402
from robustcore.anomaly import ResidualScorer  # noqa: E402


def interleaved(fns, repeat):
    """{name: Timing} with the functions taking turns, ``repeat`` runs each (one warm-up)."""
    out = {name: _bench.Timing() for name in fns}
    for name, fn in fns.items():
        out[name].result = fn()
    for _ in range(repeat):
        for name, fn in fns.items():
            out[name].runs.extend(_bench.timed(fn, 1).runs)
    return out


def fit_and_score(repeat, n=100_000, d=50):
    from sklearn.decomposition import PCA as SkPCA
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, d)) * np.sqrt(np.linspace(10, 0.1, d))

    def ours():
        sc = ResidualScorer().fit(X)
        spe, t2 = sc.scores(X)
        return sc, spe

    k = ours()[0].components_.shape[0]

    def sklearn():
        pca = SkPCA(n_components=k).fit(X)
        R = X - pca.inverse_transform(pca.transform(X))
        return pca, np.einsum("ij,ij->i", R, R)

    t = interleaved({"ours": ours, "sklearn": sklearn}, repeat)
    (sc, spe), (pca, err) = t["ours"].result, t["sklearn"].result
    assert np.allclose(spe, err, rtol=1e-6, atol=1e-9 * err.max())
    return [f"## Fit + score {n:,} x {d} (ResidualScorer default rank rule: {k} components)", "",
            "| contender | best / median | ours / sklearn (best, median) |", "|---|--:|--:|",
            f"| ours: ResidualScorer().fit(X) incl. SPE and T² limits, then scores(X) | {t['ours']} | "
            f"{t['ours'].best / t['sklearn'].best:.2f} ({t['ours'].median / t['sklearn'].median:.2f}) |",
            f"| scikit-learn {__import__('sklearn').__version__} PCA(n_components={k}) (solver "
            f"'{pca._fit_svd_solver}'), fit + reconstruction error | {t['sklearn']} | 1.00 |", "",
            "Target: ours / sklearn <= 1.2. Same SPE as scikit-learn's reconstruction error (checked)."]


def scoring(repeat, n, d=50, p=3):
    rng = np.random.default_rng(0)
    spectrum = np.linspace(10, 0.1, d)
    Xtr = rng.standard_normal((2000, d)) * np.sqrt(spectrum)
    X = rng.standard_normal((n, d)) * np.sqrt(spectrum)
    sc = ResidualScorer(n_components=p).fit(Xtr)
    U, m, lam = sc.components_, sc.mean_, sc.variances_

    def reference():
        Z = X - m
        T = Z @ U.T
        E = Z - T @ U
        return (E**2).sum(axis=1), (T**2 / lam).sum(axis=1)

    t = interleaved({"reference": reference, "separate": lambda: (sc.spe(X), sc.t2(X)),
                     "one pass": lambda: sc.scores(X)}, repeat)
    spe_r, t2_r = t["reference"].result
    spe_o, t2_o = t["separate"].result
    assert np.allclose(spe_o, spe_r, rtol=1e-9) and np.allclose(t2_o, t2_r, rtol=1e-9)
    lines = [f"## Scoring {n:,} x {d} (p = {p})", "", "| contender | best / median | reference / ours (best, median) |",
             "|---|--:|--:|", f"| numpy reference (whole arrays) | {t['reference']} | 1.0x |"]
    for name, label in (("separate", "ours: spe(X) then t2(X)"), ("one pass", "ours: scores(X), both in one pass")):
        lines.append(f"| {label} | {t[name]} | {_bench.ratio(t['reference'], t[name])} |")

    g = 1000 if n >= 1_000_000 else 450
    xs, ys = np.linspace(-8, 8, g), np.linspace(-6, 6, g)

    def grid_ref():
        u, v = sc.plane_
        pts = (m + xs[None, :, None] * u + ys[:, None, None] * v).reshape(-1, d)
        Z = pts - m
        T = Z @ U.T
        E = Z - T @ U
        return (E**2).sum(axis=1).reshape(g, g), (T**2 / lam).sum(axis=1).reshape(g, g)

    tg = interleaved({"reference": grid_ref, "ours": lambda: sc.grid(xs, ys)}, repeat)
    a_ref, b_ref = tg["reference"].result
    a, b = tg["ours"].result
    assert np.allclose(a, a_ref, rtol=1e-8, atol=1e-9) and np.allclose(b, b_ref, rtol=1e-8, atol=1e-9)
    lines += [f"| contour grid {g} x {g} points: reference (build the points, score them) | {tg['reference']} | 1.0x |",
              f"| contour grid: ours, grid() in closed form | {tg['ours']} | {_bench.ratio(tg['reference'], tg['ours'])} |"]
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="200,000 rows in the scoring case")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--blas", default="1,default")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        lines = fit_and_score(a.repeat) + [""] + scoring(a.repeat, 200_000 if a.quick else 1_000_000)
        _bench.child_result(lines=lines, load=_bench.load_average())
        return
    print("# bench_residual\n")
    print(_bench.conditions([f"command: {' '.join(sys.argv)}"]))
    for mode in _bench.blas_modes(a.blas):
        r = _bench.run_child([__file__, "--child", "--repeat", str(a.repeat)] + (["--quick"] if a.quick else []),
                             blas=mode, timeout=3600)
        print(f"\n# {_bench.blas_label(mode)} ({r.get('blas', '')}; load after: {r.get('load', '?')})\n")
        print("\n".join(r.get("lines") or [r.get("error", "no output")]), flush=True)


if __name__ == "__main__":
    main()
