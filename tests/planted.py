"""Data with planted structure, the ground truth the tests check methods against.

One generator per model, so a test says which model it plants instead of restating the draws.
Each draws from ``numpy.random.default_rng(seed)`` in a fixed order: the same arguments give the
same array on every machine.
"""
from __future__ import annotations

import numpy as np

__all__ = ["subspace_with_outliers", "low_rank_plus_sparse"]


def subspace_with_outliers(n_in: int = 3000, n_out: int = 150, d: int = 20, r: int = 2, *,
                           noise: float = 0.05, spread=(3.0, 1.5), radius: float = 2.0, seed: int = 0):
    """Gaussian inliers near an r-dimensional linear subspace, and outliers off it.

    Inliers: N(0, diag(spread)²) coordinates on an orthonormal basis ``U`` (d, r), plus isotropic
    noise of standard deviation ``noise``. Outliers: uniform directions at distance ``radius``
    from the origin (so almost all their length is off the subspace when d >> r).

    Returns ``X`` (n_in + n_out, d), inliers first; ``is_out`` (bool, n_in + n_out); ``U`` (d, r).
    """
    rng = np.random.default_rng(seed)
    U = np.linalg.qr(rng.standard_normal((d, r)))[0]
    inl = rng.standard_normal((n_in, r)) * np.asarray(spread, float)[:r] @ U.T + noise * rng.standard_normal((n_in, d))
    out = rng.standard_normal((n_out, d))
    out *= radius / np.linalg.norm(out, axis=1, keepdims=True)
    X = np.vstack([inl, out])
    return X, np.r_[np.zeros(n_in, bool), np.ones(n_out, bool)], U


def low_rank_plus_sparse(m: int, n: int, r: int, frac: float, seed: int = 0):
    """The model of Candès, Li, Ma & Wright (JACM 2011), Table I: L0 = A Bᵀ with N(0, 1/max(m, n))
    entries of A (m, r) and B (n, r), and S0 of ±1 on a uniformly drawn support of
    round(frac · m · n) entries. Returns ``L0, S0``, both (m, n)."""
    rng = np.random.default_rng(seed)
    big = max(m, n)
    L0 = rng.normal(0, np.sqrt(1 / big), (m, r)) @ rng.normal(0, np.sqrt(1 / big), (n, r)).T
    k = int(round(frac * m * n))
    S0 = np.zeros(m * n)
    S0[rng.choice(m * n, k, replace=False)] = rng.choice([-1.0, 1.0], k)
    return L0, S0.reshape(m, n)
