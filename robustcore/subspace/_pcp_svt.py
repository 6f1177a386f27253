"""Singular value thresholding for PCP's low-rank step: the singular triplets of A above tau.

Two routes, chosen each iteration by a flop count tuned for numpy/OpenBLAS (:func:`_choose_route`):
"gram" (one syrk on the smaller side and a small symmetric eigensolver, only the wanted
eigenvectors back-transformed) and "randomized" (a warm-started range finder, grown and recomputed
whenever every computed value survives the threshold, so the threshold is never truncated). The
module notes of :mod:`robustcore.subspace.pcp` say when each pays.
"""
from __future__ import annotations

import numpy as np

from ..linalg import as_generator, eigh_above, gram_svd, randomized_svd

__all__ = ["svd_threshold"]


_OVERSAMPLE = 10


def svd_threshold(A, tau, *, sv=10, method="auto", init=None, random_state=None, products=None,
                  return_basis=False, sketch=None, settled=False):
    """Singular triplets of ``A`` (m, n) whose singular values exceed ``tau``.

    Parameters
    ----------
    A : ndarray (m, n)
    tau : float >= 0
    sv : int
        Predicted number of triplets above ``tau`` (sizes the partial SVD; grown as needed).
    method : "auto", "full", "gram" or "randomized"
    init : ndarray (n, j) or None
        Warm start for the randomized route (previous right singular vectors, transposed).
    random_state : numpy.random.Generator or seed
    products : how products with the tall side of A are computed in the randomized route
        (see :func:`robustcore.linalg.randomized_svd`); None means numpy's.
    settled : bool
        ``init`` spans the wanted subspace up to the change of A since it was computed (the
        caller's rank did not change over its last iterations): the randomized route then
        skips the power step (one product pair with A instead of two).
    return_basis : bool
        Also return the randomized route's whole right basis (every Ritz vector, including
        the oversampled ones below ``tau``; None for the other routes): the best warm start
        for the next call on a slightly changed A.

    Returns
    -------
    U : (m, r), s : (r,), Vt : (r, n), all singular values ``s > tau`` (descending), the
    route used, and (with ``return_basis``) the right basis (j, n) or None.
    """
    out = _svd_threshold(A, tau, sv, method, init, random_state, products, sketch, settled)
    return out[:5] if return_basis else out[:4]


def _svd_threshold(A, tau, sv, method, init, random_state, products, sketch, settled=False):
    m, n = A.shape
    small = min(m, n)
    sv = int(min(max(sv, 1), small))
    route = _choose_route(m, n, sv, warm=init is not None) if method == "auto" else method
    if route == "full":
        U, s, Vt = np.linalg.svd(A, full_matrices=False)
        r = int(np.count_nonzero(s > tau))
        return U[:, :r], s[:r], Vt[:r], route, None, s
    if route == "gram":
        U, s, Vt = gram_svd(A, threshold=tau)
        return U, s, Vt, route, None, s
    rng = as_generator(random_state)
    warm = init is not None and init.shape[1] > 0
    n_power = (0 if settled else 1) if warm else 2
    while True:
        if sv >= small or (method == "auto" and _choose_route(m, n, sv, warm=True) == "gram"):
            U, s, Vt = gram_svd(A, threshold=tau)
            return U, s, Vt, "gram", None, s
        # sv wanted + oversampling, all of them returned (the oversampled ones are the warm start)
        ell = min(sv + _OVERSAMPLE, small)
        U, s, Vt = randomized_svd(A, ell, n_oversamples=0, n_power_iter=n_power, init=init,
                                  random_state=rng, products=products, sketch=sketch)
        r = int(np.count_nonzero(s[:sv] > tau))
        if r < sv:
            return U[:, :r], s[:r], Vt[:r], route, Vt, s
        # Every computed value survived: the threshold may be truncated; grow and recompute,
        # warm-started from what was just found (the added directions are random: one power
        # step again).
        init = Vt.T
        n_power = 1
        sv = min(small, sv + max(1, round(0.05 * small)))


def _choose_route(n, d, sv, warm):
    """Gram (syrk + eigh) or randomized subspace iteration, by a flop count tuned on numpy."""
    small, big = min(n, d), max(n, d)
    if small <= 64:
        return "gram"
    ell = sv + _OVERSAMPLE
    if ell >= small // 2:
        return "gram"
    q = 1 if warm else 2
    cost_gram = big * small * small + _EIGH_WEIGHT * small ** 3
    # skinny products re-read A from memory each time: they run well below GEMM speed
    cost_rand = _SKINNY_WEIGHT * ((2 * q + 2) * 2 * big * small * ell + (2 * q + 2) * big * ell * ell)
    return "gram" if cost_gram <= cost_rand else "randomized"


_EIGH_WEIGHT = 4.0   # LAPACK eigh runs at a fraction of GEMM speed (tridiagonal reduction)
_SKINNY_WEIGHT = 2.5


def _gram_eig(A, tau, G=None):
    """Eigenpairs of the smaller Gram matrix of A with singular value > tau.

    ``G`` is that Gram matrix if already known (only its lower triangle is read).
    Returns ("right", V (d, k), sigma) when d <= n (Gram = A^T A) or ("left", U (n, k), sigma).
    An exact dense eigensolver is used (``eigh_above``: every eigenvalue, only the wanted
    vectors back-transformed): a warm-started subspace step with Rayleigh-Ritz was tried and
    rejected, as it misses eigenvalues just above the threshold (MNIST: rank 244 instead of
    251) for a saving of under 10 %.
    """
    n, d = A.shape
    right = d <= n
    own = G is not None           # the sweep's Gram matrix is ours to overwrite
    if G is None:
        G = A.T @ A if right else A @ A.T
    t2 = tau * tau
    w, E = eigh_above(G, t2, overwrite=own)
    w, E = w[::-1], E[:, ::-1]
    sig = np.sqrt(w)
    keep = sig > tau
    return ("right" if right else "left"), E[:, keep], sig[keep]
