"""Makes the ROBPCA test data of this folder; run by hand, once, OUTSIDE the project's environment:

    python -m venv /tmp/robpy_venv && /tmp/robpy_venv/bin/pip install robpy==0.0.6 rdata
    /tmp/robpy_venv/bin/python tests/robustcore/subspace/data/make_robpca_reference.py OCTANE_RDA

OCTANE_RDA is ``data/octane.rda`` of the GitHub repository cran/rrcov (version 1.7-7). robpy and
rdata are used here only: neither is a dependency of the project, and the tests read the
archives this script writes (numbers only, ``allow_pickle=False``).

robpy's ROBPCA draws its 250 directions without a usable seed (``random_seed`` reseeds the same
generator for every direction, so a seeded run has one direction; unseeded runs differ), so it is
run ``RUNS`` times and every run is kept: the tests judge agreement against the spread of
robpy's own runs.
"""
from __future__ import annotations

import pathlib
import sys
import warnings

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
RUNS = 6


def planted(seed=7):
    """300 x 10: 240 inliers near a 2-dimensional affine subspace, 30 orthogonal outliers (off
    it) and 30 bad leverage points (off it and far along it), in that order."""
    rng = np.random.default_rng(seed)
    d, r = 10, 2
    U = np.linalg.qr(rng.standard_normal((d, r)))[0]
    centre = rng.standard_normal(d) * 5
    inl = centre + (rng.standard_normal((240, r)) * [4.0, 3.0]) @ U.T + 0.2 * rng.standard_normal((240, d))
    W = np.linalg.qr(np.c_[U, rng.standard_normal((d, 1))])[0][:, r]     # a direction off the subspace
    orth = centre + (rng.standard_normal((30, r)) * [4.0, 3.0]) @ U.T + 6.0 * W + 0.2 * rng.standard_normal((30, d))
    lev = centre + 20.0 * U[:, 0] + 8.0 * W + 0.2 * rng.standard_normal((30, d))
    return np.vstack([inl, orth, lev]), U, centre


def robpy_runs(X):
    from robpy.pca import ROBPCA
    import matplotlib
    matplotlib.use("Agg")
    out = {}
    for i in range(RUNS):
        m = ROBPCA().fit(X)
        sd, od, sd_cut, od_cut = m.plot_outlier_map(X, return_distances=True)
        out[f"run{i}_components"] = np.asarray(m.components_.T)       # (k, d)
        out[f"run{i}_location"] = np.asarray(m.location_)
        out[f"run{i}_eigenvalues"] = np.asarray(m.explained_variance_)
        out[f"run{i}_sd"], out[f"run{i}_od"] = sd, od
        out[f"run{i}_cutoffs"] = np.array([sd_cut, od_cut])
    return out


def main(octane_rda):
    warnings.filterwarnings("ignore")
    import rdata
    from robpy.datasets import load_glass
    octane = rdata.read_rda(octane_rda)["octane"]
    np.savez_compressed(HERE / "octane.npz", X=octane.iloc[:, 1:].to_numpy(np.float64),
                        y=octane["y"].to_numpy(np.float64))
    glass = np.asarray(load_glass().data, dtype=np.float64)
    np.savez_compressed(HERE / "glass.npz", X=glass)
    X, U, centre = planted()
    np.savez_compressed(HERE / "robpca_robpy_reference.npz",
                        **{f"glass_{k}": v for k, v in robpy_runs(glass).items()},
                        **{f"planted_{k}": v for k, v in robpy_runs(X).items()},
                        planted_X=X, planted_U=U, planted_centre=centre)


if __name__ == "__main__":
    main(sys.argv[1])
