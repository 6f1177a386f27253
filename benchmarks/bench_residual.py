"""SPE / T² scoring speed, run by hand:  python benchmarks/bench_residual.py [--quick]

1) Scoring 1,000,000 x 50 samples (spe + t2) with ResidualScorer vs a straightforward numpy
   reference (whole-array Z = X - m, T = Z U', E = Z - T U, row sums).
2) The contour grid: 1000 x 1000 = 1e6 points of a 50-feature model, ResidualScorer.grid (closed
   form in the plane) vs building the 1e6 x 50 points and scoring them.
Best of 3 runs each; ratios are within this run. BLAS threads: as set in the environment.
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from robustcore.anomaly import ResidualScorer  # noqa: E402


def best(f, repeat=3):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = f()
        times.append(time.perf_counter() - t0)
    return min(times), out


def main():
    n = 200_000 if "--quick" in sys.argv else 1_000_000
    d, p = 50, 3
    rng = np.random.default_rng(0)
    spectrum = np.linspace(10, 0.1, d)
    Xtr = rng.standard_normal((2000, d)) * np.sqrt(spectrum)
    X = rng.standard_normal((n, d)) * np.sqrt(spectrum)
    sc = ResidualScorer(n_components=p).fit(Xtr)
    U, m, lam = sc.components_, sc.mean_, sc.variances_

    def ours():
        return sc.spe(X), sc.t2(X)

    def both_one_pass():
        return sc.scores(X)

    def reference():
        Z = X - m
        T = Z @ U.T
        E = Z - T @ U
        return (E**2).sum(axis=1), (T**2 / lam).sum(axis=1)

    t_ref, (spe_r, t2_r) = best(reference)
    t_ours, (spe_o, t2_o) = best(ours)
    t_one, _ = best(both_one_pass)
    assert np.allclose(spe_o, spe_r, rtol=1e-9) and np.allclose(t2_o, t2_r, rtol=1e-9)
    print(f"scoring {n} x {d}: reference {t_ref:.3f} s; spe()+t2() {t_ours:.3f} s "
          f"(ratio {t_ref / t_ours:.2f}x); one pass for both {t_one:.3f} s (ratio {t_ref / t_one:.2f}x)")

    g = 1000 if n == 1_000_000 else 450
    xs = np.linspace(-8, 8, g)
    ys = np.linspace(-6, 6, g)

    def grid_ours():
        return sc.grid(xs, ys)

    def grid_ref():
        u, v = sc.plane_
        pts = m + xs[None, :, None] * u + ys[:, None, None] * v
        pts = pts.reshape(-1, d)
        Z = pts - m
        T = Z @ U.T
        E = Z - T @ U
        return (E**2).sum(axis=1).reshape(g, g), (T**2 / lam).sum(axis=1).reshape(g, g)

    tg_ref, (a_ref, b_ref) = best(grid_ref)
    tg, (a, b) = best(grid_ours)
    assert np.allclose(a, a_ref, rtol=1e-8, atol=1e-9) and np.allclose(b, b_ref, rtol=1e-8, atol=1e-9)
    print(f"grid {g} x {g} = {g * g} points, d = {d}: reference {tg_ref:.3f} s; grid() {tg:.4f} s "
          f"(ratio {tg_ref / tg:.0f}x)")


if __name__ == "__main__":
    main()
