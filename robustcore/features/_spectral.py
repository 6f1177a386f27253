"""Laplacian eigenpairs and their analytic derivatives with respect to feature weights.

Conventions (shared by the dense and the kNN graph): S is symmetric with a zero diagonal,
deg = S·1, L = D - S with D = diag(deg), and the mass matrix is B = D + eps·I, where a tiny eps
keeps isolated vertices from making B singular. The pencil L q = λ B q is solved with
B-orthonormal eigenvectors (QᵀBQ = I). Because L·1_c = 0 for every connected component c
whatever eps is, the "trivial" pairs (λ = 0, one per component) are known exactly; they are
put in by hand and deflated from the iterative solver.

Derivative at w = 1 of λ_r with respect to the weight w_t of feature t, for
S_ij(w) = exp(-Σ_t w_t² (x_it - x_jt)² / (2σ²)) (eps does not depend on w):

    dλ_r/dw_t = -(1/σ²) Σ_{i<j} S_ij (x_it - x_jt)² [(q_ri - q_rj)² - λ_r (q_ri² + q_rj²)]
"""
from __future__ import annotations

import time

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from scipy.sparse.linalg import ArpackNoConvergence, LinearOperator, eigsh

from .._progress import Reporter

__all__ = ["graph_components", "mass_matrix", "smallest_eigenpairs", "derivatives_dense",
           "derivatives_edges", "DENSE_EIGH_MAX_N"]

# Below this size a full dense eigendecomposition is cheaper than Lanczos iterations.
DENSE_EIGH_MAX_N = 600

_BLOCK_ENTRIES = 1 << 22
# Operator products the sparse eigensolver may spend before the fit is refused: kNN graphs of
# 20,000 samples in 50 dimensions took 420-510; a graph of 200,000 samples in 3 dimensions
# (whose smallest eigenvalues crowd together) did not converge in 8,000 (276 s on a busy
# 2-core machine, 13-34 ms a product). A product costs time in proportion to the samples, so
# the budget shrinks with them (WORK_BUDGET sample-products), between MIN and MAX products:
# 20,000 samples get 8,000, 200,000 get 800 (10-15 s at 13-19 ms).
MAX_EIGEN_PRODUCTS = 8000
MIN_EIGEN_PRODUCTS = 800
EIGEN_WORK_BUDGET = 1.6e8


def product_budget(n: int) -> int:
    """Operator products the sparse eigensolver may spend on a graph of ``n`` samples."""
    return int(min(MAX_EIGEN_PRODUCTS, max(MIN_EIGEN_PRODUCTS, EIGEN_WORK_BUDGET // max(n, 1))))


def graph_components(S) -> tuple[int, np.ndarray]:
    """Number of connected components and the component label (n,) of each vertex."""
    n = S.shape[0]
    if not sp.issparse(S):
        if np.count_nonzero(S) == n * (n - 1):
            return 1, np.zeros(n, dtype=np.intp)
        S = sp.csr_matrix(S)
    c, labels = connected_components(S, directed=False)
    return int(c), labels.astype(np.intp)


def mass_matrix(degrees: np.ndarray) -> np.ndarray:
    """Diagonal of B = D + eps·I, eps = 1e-12 x the largest degree (guards isolated vertices)."""
    top = float(degrees.max()) if degrees.size else 0.0
    eps = 1e-12 * top if top > 0 else 1e-300
    return degrees + eps


def _trivial_vectors(B: np.ndarray, labels: np.ndarray, n_comp: int) -> np.ndarray:
    """B-orthonormal null vectors of L: the indicator of each component over sqrt(its volume)."""
    vol = np.bincount(labels, weights=B, minlength=n_comp)
    Q0 = np.zeros((B.size, n_comp))
    Q0[np.arange(B.size), labels] = 1.0 / np.sqrt(vol[labels])
    return Q0


def smallest_eigenpairs(S, degrees: np.ndarray, labels: np.ndarray, n_comp: int, n_wanted: int,
                        *, rng: np.random.Generator, rep: Reporter | None = None,
                        solver: str = "auto"):
    """Trivial pairs plus the ``n_wanted`` smallest non-trivial pairs of L q = λ B q.

    Parameters
    ----------
    S : (n, n) ndarray or sparse matrix, symmetric, zero diagonal.
    degrees : (n,) row sums of S.
    labels, n_comp : connected components of the graph (from :func:`graph_components`).
    n_wanted : number of non-trivial pairs; n_comp + n_wanted <= n.
    solver : "auto", "dense" (full eigendecomposition) or "lanczos" (ARPACK on a deflated operator).

    Returns
    -------
    lam : (n_comp + n_wanted,) ascending; the first n_comp are exactly 0.
    Q : (n, n_comp + n_wanted) B-orthonormal eigenvectors.
    B : (n,) diagonal of the mass matrix.
    converged : bool
    """
    rep = rep or Reporter(None)
    n = S.shape[0]
    B = mass_matrix(degrees)
    bis = 1.0 / np.sqrt(B)
    ratio = degrees / B
    Q0 = _trivial_vectors(B, labels, n_comp)
    if n_wanted <= 0:
        return np.zeros(n_comp), Q0, B, True
    if solver == "auto":
        solver = "dense" if (n <= DENSE_EIGH_MAX_N or n_comp + n_wanted + 2 >= n // 2) else "lanczos"
    converged = True
    if solver == "dense":
        rep(0.0, "eigensolver: dense")
        Sd = S.toarray() if sp.issparse(S) else S
        N = -(Sd * bis[:, None]) * bis[None, :]
        N[np.diag_indices(n)] += ratio
        N = 0.5 * (N + N.T)
        mu, Z = sla.eigh(N, subset_by_index=[n_comp, n_comp + n_wanted - 1], driver="evr")
        lam = np.maximum(mu, 0.0)
        rep(1.0, "eigensolver: dense")
    else:
        z0 = 1.0 / (bis * np.sqrt(np.bincount(labels, weights=B, minlength=n_comp)[labels]))
        Ssp = S

        def project(v):
            coef = np.bincount(labels, weights=z0 * v, minlength=n_comp)
            return v - z0 * coef[labels]

        count = [0]
        t0 = time.perf_counter()
        budget = product_budget(n)

        def apply(v):
            v = np.ravel(v)
            u = project(v)
            Nu = ratio * u - bis * (Ssp @ (bis * u))
            count[0] += 1
            if count[0] > budget:
                per = (time.perf_counter() - t0) / count[0]
                raise ValueError(
                    f"the eigensolver did not converge within {budget:,} products with the "
                    f"{n:,} x {n:,} graph ({per * 1e3:.0f} ms each): its smallest eigenvalues lie too close "
                    f"together (a large graph of few features). Fit a random subset of the samples "
                    f"(e.g. 20,000), pass n_eigenpairs=1, or a larger n_neighbors")
            if count[0] % 10 == 0:
                # The fraction of the product budget spent, and the time the rest would take at
                # the rate so far: an upper bound (ARPACK usually stops well before).
                per = (time.perf_counter() - t0) / count[0]
                left = (budget - count[0]) * per
                rep(count[0] / budget, f"eigensolver: {count[0]:,} of at most "
                    f"{budget:,} products (at most {left:.0f} s left)")
            # 2I - N maps the smallest λ to the largest values; deflated directions sit at 0.
            return project(2.0 * u - Nu)

        op = LinearOperator((n, n), matvec=apply, dtype=np.float64)
        v0 = project(rng.standard_normal(n))
        ncv = min(n - 1, max(2 * n_wanted + 1, n_wanted + 20))
        try:
            mu, Z = eigsh(op, k=n_wanted, which="LA", v0=v0, ncv=ncv, maxiter=max(1000, 10 * n))
        except ArpackNoConvergence as exc:
            mu, Z = exc.eigenvalues, exc.eigenvectors
            if mu.size < n_wanted:
                raise RuntimeError(f"the eigensolver did not converge ({mu.size} of {n_wanted} "
                                   f"eigenpairs found); try graph='dense', fewer n_eigenpairs, "
                                   f"or a larger sigma") from None
            converged = False
        order = np.argsort(-mu)[:n_wanted]
        lam = np.maximum(2.0 - mu[order], 0.0)
        Z = Z[:, order]
        rep(1.0, "eigensolver: done")
    Q = Z * bis[:, None]
    lam_all = np.concatenate([np.zeros(n_comp), lam])
    Q_all = np.concatenate([Q0, Q], axis=1)
    return lam_all, Q_all, B, converged


def derivatives_dense(Xc: np.ndarray, S: np.ndarray, lam: np.ndarray, Q: np.ndarray,
                      sigma: float) -> np.ndarray:
    """dλ_r/dw_t (k, d) for a dense graph, vectorised (O(k n² d) as matrix products).

    Xc is (n, d) data (centre the columns first: pairwise differences do not change, and the
    expanded squares below lose less precision), S (n, n) the graph, lam (k,), Q (n, k).
    """
    n, d = Xc.shape
    k = Q.shape[1]
    X2 = Xc * Xc
    s = S.sum(axis=1)
    # T1[i, t] = Σ_j S_ij (x_it - x_jt)², expanded into products with S.
    T1 = X2 * s[:, None] - 2.0 * Xc * (S @ Xc) + S @ X2
    A = (Q * Q).T @ T1
    B1 = (Q * (S @ Q)).T @ X2
    B2 = np.empty((k, d))
    per = max(1, _BLOCK_ENTRIES // max(n * d, 1))
    for r0 in range(0, k, per):
        r1 = min(k, r0 + per)
        Y = (Q[:, r0:r1, None] * Xc[:, None, :]).reshape(n, (r1 - r0) * d)
        SY = S @ Y
        B2[r0:r1] = np.einsum("ij,ij->j", Y, SY).reshape(r1 - r0, d)
    return -((1.0 - lam)[:, None] * A - 2.0 * B1 + 2.0 * B2) / (sigma * sigma)


def derivatives_edges(Xc: np.ndarray, rows: np.ndarray, cols: np.ndarray, weights: np.ndarray,
                      lam: np.ndarray, Q: np.ndarray, sigma: float,
                      rep: Reporter | None = None) -> np.ndarray:
    """dλ_r/dw_t (k, d) summed over an undirected edge list (i < j) with weights S_ij.

    One (d x |E|)(|E| x k) product, done in chunks of edges so memory stays O(chunk · d).
    """
    rep = rep or Reporter(None)
    d = Xc.shape[1]
    k = Q.shape[1]
    acc = np.zeros((d, k))
    m = rows.size
    chunk = max(1, _BLOCK_ENTRIES // max(d + 3 * k, 1))
    for start in range(0, m, chunk):
        rep(start / max(m, 1), "derivatives")
        stop = min(m, start + chunk)
        a = rows[start:stop]
        b = cols[start:stop]
        diff = Xc[a] - Xc[b]
        diff *= diff
        qa = Q[a]
        qb = Q[b]
        M = (qa - qb) ** 2 - lam[None, :] * (qa * qa + qb * qb)
        M *= weights[start:stop, None]
        acc += diff.T @ M
    rep(1.0, "derivatives")
    return -acc.T / (sigma * sigma)


def support_fraction(Q: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Share of the samples each B-normalised eigenvector (column of Q) effectively lives on.

    With weights p_i = B_i q_i² (they sum to 1 for qᵀBq = 1) this is 1 / (n Σ_i p_i²), the
    inverse participation ratio over n: 1 for a vector spread evenly, about m/n for one
    concentrated on m samples, and about p for the two-valued vector that splits off a cluster
    holding a share p of the samples. Returns (k,) values in (0, 1].
    """
    n = Q.shape[0]
    p = B[:, None] * Q * Q
    total = p.sum(axis=0)
    return total * total / (n * np.maximum((p * p).sum(axis=0), np.finfo(float).tiny))


def choose_eigenpairs(lam: np.ndarray, support: np.ndarray, n_comp: int, k, min_support: float,
                      k_max: int):
    """Positions (in ``lam``) of the eigenpairs that EVSC sums, and whether the choice fell back.

    Candidates are the non-trivial pairs (after the n_comp zeros) whose eigenvector spreads over
    at least ``min_support`` of the samples: a vector concentrated on a handful of outlying
    samples describes those samples, not a cluster structure. ``k`` an int takes the k smallest
    candidates; ``k == "auto"`` takes the first j <= k_max candidates where the ratio
    λ_{j+1} / λ_j (the relative eigengap) is largest, the usual estimate of the number of
    well-separated groups minus one. With no candidate at all, the smallest non-trivial pairs
    are used (``fell_back`` True) so the caller can warn.
    """
    nontrivial = np.arange(n_comp, lam.size)
    cand = nontrivial[support[nontrivial] >= min_support]
    fell_back = cand.size == 0
    if fell_back:
        cand = nontrivial
    if k == "auto":
        v = lam[cand[: k_max + 1]]
        if v.size < 2:
            k = 1
        else:
            ratio = v[1:] / np.maximum(v[:-1], np.finfo(float).tiny)
            k = int(np.argmax(ratio)) + 1
    return cand[:k], fell_back
