"""Optional compiled SCW kernels (numba): the plain sequential algorithm, one example at a time.

Imported only when numba is installed (it is not a dependency); :mod:`._scw_stream` falls back to
its numpy engines otherwise. The kernels implement exactly the textbook loop and the same update
trigger as the numpy engines, so the two paths agree up to floating-point rounding (the tests
check both against the same reference). Each call processes rows ``start:stop`` so the caller
can report progress and honour cancellation between chunks.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ._scw_steps import binary_step_core, multiclass_step_core

__all__ = ["full_pass", "diag_dense_pass", "diag_sparse_pass"]

_bstep = njit(cache=True, nogil=True)(binary_step_core)
_mstep = njit(cache=True, nogil=True)(multiclass_step_core)


@njit(cache=True, nogil=True)
def _margin(q, r, yb, multiclass):
    """Signed margin and competing class (multi-class) from the scores q of one example."""
    if not multiclass:
        return yb * q[0], -1
    best = -np.inf
    s = -1
    for c in range(q.shape[0]):
        if c != r and q[c] > best:
            best = q[c]
            s = c
    return q[r] - best, s


@njit(cache=True, nogil=True)
def _step(m, v, phi, C, squared, multiclass):
    if multiclass:
        return _mstep(m, v, phi, C, squared)
    return _bstep(m, v, phi, C, squared)


@njit(cache=True, nogil=True)
def full_pass(X, yf, yi, mean, cov, phi, C, squared, multiclass, scores, vs, updated, start, stop):
    d = X.shape[1]
    K = mean.shape[0]
    thr = phi * phi * (2.0 if multiclass else 1.0)
    g = np.empty(d)
    for i in range(start, stop):
        x = X[i]
        # g = Sigma x, accumulated column by column (Sigma is symmetric) so the inner loop is
        # contiguous.
        for a in range(d):
            g[a] = 0.0
        for b in range(d):
            xb = x[b]
            if xb != 0.0:
                row = cov[b]
                for a in range(d):
                    g[a] += row[a] * xb
        v = 0.0
        for a in range(d):
            v += x[a] * g[a]
        for c in range(K):
            acc = 0.0
            mc = mean[c]
            for a in range(d):
                acc += mc[a] * x[a]
            scores[i, c] = acc
        vs[i] = v
        r = yi[i]
        m, s = _margin(scores[i], r, yf[i], multiclass)
        if not (v > 0.0 and thr * v > m * abs(m)):
            continue
        alpha, beta = _step(m, v, phi, C, squared, multiclass)
        if multiclass:
            for a in range(d):
                mean[r, a] += alpha * g[a]
                mean[s, a] -= alpha * g[a]
        else:
            ay = alpha * yf[i]
            for a in range(d):
                mean[0, a] += ay * g[a]
        for a in range(d):
            ga = g[a]
            row = cov[a]
            for b in range(d):
                # beta * (g_a g_b) keeps Sigma exactly symmetric.
                row[b] -= beta * (ga * g[b])
        updated[i] = True


@njit(cache=True, nogil=True, inline="always")
def _diag_update(mean, sdiag, a, xa, alpha, beta, r, s, yb, multiclass):
    """One coordinate of the diagonal-covariance update (shared by the dense and sparse passes)."""
    ga = sdiag[a] * xa
    if multiclass:
        mean[r, a] += alpha * ga
        mean[s, a] -= alpha * ga
    else:
        mean[0, a] += alpha * yb * ga
    sdiag[a] -= beta * (ga * ga)


@njit(cache=True, nogil=True)
def diag_dense_pass(X, yf, yi, mean, sdiag, phi, C, squared, multiclass, scores, vs, updated, start, stop):
    d = X.shape[1]
    K = mean.shape[0]
    thr = phi * phi * (2.0 if multiclass else 1.0)
    for i in range(start, stop):
        x = X[i]
        v = 0.0
        for a in range(d):
            v += sdiag[a] * x[a] * x[a]
        for c in range(K):
            acc = 0.0
            for a in range(d):
                acc += mean[c, a] * x[a]
            scores[i, c] = acc
        vs[i] = v
        r = yi[i]
        m, s = _margin(scores[i], r, yf[i], multiclass)
        if not (v > 0.0 and thr * v > m * abs(m)):
            continue
        alpha, beta = _step(m, v, phi, C, squared, multiclass)
        for a in range(d):
            _diag_update(mean, sdiag, a, x[a], alpha, beta, r, s, yf[i], multiclass)
        updated[i] = True


@njit(cache=True, nogil=True)
def diag_sparse_pass(indptr, indices, data, yf, yi, mean, sdiag, phi, C, squared, multiclass,
                     scores, vs, updated, start, stop):
    K = mean.shape[0]
    thr = phi * phi * (2.0 if multiclass else 1.0)
    for i in range(start, stop):
        p0 = indptr[i]
        p1 = indptr[i + 1]
        if p0 == p1:
            continue
        v = 0.0
        for p in range(p0, p1):
            xa = data[p]
            v += sdiag[indices[p]] * xa * xa
        for c in range(K):
            acc = 0.0
            for p in range(p0, p1):
                acc += mean[c, indices[p]] * data[p]
            scores[i, c] = acc
        vs[i] = v
        r = yi[i]
        m, s = _margin(scores[i], r, yf[i], multiclass)
        if not (v > 0.0 and thr * v > m * abs(m)):
            continue
        alpha, beta = _step(m, v, phi, C, squared, multiclass)
        for p in range(p0, p1):
            _diag_update(mean, sdiag, indices[p], data[p], alpha, beta, r, s, yf[i], multiclass)
        updated[i] = True
