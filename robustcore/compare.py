"""Numbers the result views show but the fits do not produce directly.

Principal angles between fitted subspaces, the subspace of a robust-PCA low-rank part,
reconstructions and per-feature residuals of chosen samples, and a flag rule for scores that
come without a control limit. The views call these once when a result arrives; paint code never
computes.
"""
from __future__ import annotations

import numpy as np
from scipy.linalg import subspace_angles

from ._outlier import flags_above, robust_threshold  # noqa: F401  (their home is _outlier)
from ._residual import residual_sq
from .linalg import fix_signs

__all__ = ["principal_angles", "lowrank_subspace", "reconstruct", "residual_contributions",
           "robust_threshold", "flags_above", "reconstruction_errors", "plane_coordinates", "principal_plane",
           "component_plane", "residual_direction", "spe_t2_grid", "common_rank_comparison"]


def principal_angles(A, B) -> np.ndarray:
    """Principal angles in degrees, ascending, between the row spaces of A (r1, d) and B (r2, d).

    Returns min(r1, r2) angles; 0 means a shared direction, 90 an orthogonal one.
    """
    A = np.atleast_2d(np.asarray(A, dtype=np.float64))
    B = np.atleast_2d(np.asarray(B, dtype=np.float64))
    if A.shape[1] != B.shape[1]:
        raise ValueError(f"subspaces must live in the same space; got {A.shape[1]} and {B.shape[1]} features")
    # scipy returns them descending, in radians, for column spaces.
    ang = subspace_angles(A.T, B.T)
    return np.sort(np.degrees(ang))


def lowrank_subspace(L, n_components=None, tol=1e-6) -> dict:
    """Affine subspace of a low-rank matrix L (n, d): PCA of L.

    Parameters
    ----------
    L : (n, d) array, e.g. PCP's low-rank part.
    n_components : int or None
        Number of directions to keep; None keeps the numerical rank of the centred L
        (singular values above ``tol`` times the largest), at least 1. The singular values
        come from an eigendecomposition of a Gram matrix, accurate to about sqrt(machine
        epsilon) relative to the largest: hence the default ``tol`` of 1e-6, not 1e-12.

    Returns
    -------
    dict with ``components`` (r, d) orthonormal rows (sign-fixed), ``mean`` (d,),
    ``projection`` (n, r) coordinates of the rows of L, ``singular_values`` (r,).
    """
    L = np.asarray(L, dtype=np.float64)
    mean = L.mean(axis=0)
    Z = L - mean
    n, d = Z.shape
    # The Gram route is much cheaper than an SVD of Z when one side is small (video: n << d).
    if n <= d:
        G = Z @ Z.T
        w, U = np.linalg.eigh(G)
        w, U = w[::-1], U[:, ::-1]
        s = np.sqrt(np.clip(w, 0, None))
        rank = int(np.sum(s > tol * max(s[0], 1e-300))) if s.size else 0
        r = max(1, rank) if n_components is None else int(min(n_components, min(n, d)))
        r = min(r, max(rank, 1))
        V = (U[:, :r].T @ Z) / np.where(s[:r] > 0, s[:r], 1.0)[:, None]
    else:
        C = Z.T @ Z
        w, V = np.linalg.eigh(C)
        w, V = w[::-1], V[:, ::-1]
        s = np.sqrt(np.clip(w, 0, None))
        rank = int(np.sum(s > tol * max(s[0], 1e-300))) if s.size else 0
        r = max(1, rank) if n_components is None else int(min(n_components, min(n, d)))
        r = min(r, max(rank, 1))
        V = V[:, :r].T
    comps = fix_signs(V)
    return {"components": comps, "mean": mean, "projection": Z @ comps.T, "singular_values": s[:r].copy()}


def reconstruct(X, components, mean) -> np.ndarray:
    """Orthogonal projection of the rows of X (m, d) onto the affine subspace mean + span(components)."""
    X = np.atleast_2d(np.asarray(X, dtype=np.float64))
    C = np.atleast_2d(np.asarray(components, dtype=np.float64))
    Z = X - mean
    return mean + (Z @ C.T) @ C


def residual_contributions(X, components, mean) -> np.ndarray:
    """Per-feature squared residuals e_j² (m, d) of the rows of X; each row sums to its SPE."""
    X = np.atleast_2d(np.asarray(X, dtype=np.float64))
    return (X - reconstruct(X, components, mean)) ** 2


def reconstruction_errors(X, components, mean) -> np.ndarray:
    """SPE of every row of X against the subspace: ||x - x_hat||² (n,), from the explicit
    residual (robustcore._residual: exact where the residual is far smaller than the row)."""
    X = np.asarray(X, dtype=np.float64)
    return residual_sq(X, components, np.asarray(mean, dtype=np.float64))


def principal_plane(X) -> np.ndarray:
    """The plane (2, d) orthonormal rows) where rows of X (n, d) vary most about their mean:
    the feature axes themselves for 2-D data."""
    n, d = X.shape
    if d == 2:
        return np.eye(2)
    Zc = X - X.mean(axis=0)
    if n >= d:
        _, V = np.linalg.eigh(Zc.T @ Zc)
        plane = V[:, ::-1][:, :2].T
    else:
        plane = np.linalg.svd(Zc, full_matrices=False)[2][:2]
    return fix_signs(plane)


def plane_coordinates(X, mean, plane) -> np.ndarray:
    """Coordinates (n, 2) of the rows of X in the plane ``mean + span(plane)`` (plane: (2, d) orthonormal)."""
    X = np.atleast_2d(np.asarray(X, dtype=np.float64))
    return (X - mean) @ np.asarray(plane, dtype=np.float64).T


def component_plane(components, i: int, j: int) -> np.ndarray:
    """The (2, d) plane spanned by components i and j (orthonormal rows of ``components``)."""
    C = np.atleast_2d(np.asarray(components, dtype=np.float64))
    return C[[i, j]].copy()


def residual_direction(X, components, mean) -> np.ndarray:
    """Unit direction (d,) of largest variance of the residuals of X's rows off the subspace
    ``mean + span(components)``; orthogonal to every component (sign fixed).

    With a component, it spans a plane on which SPE varies (along it) and T² too (along the
    component). Returns zeros when X lies in the subspace exactly.
    """
    X = np.atleast_2d(np.asarray(X, dtype=np.float64))
    C = np.atleast_2d(np.asarray(components, dtype=np.float64))
    Z = X - mean
    E = Z - (Z @ C.T) @ C
    n, d = E.shape
    # Through the smaller Gram matrix (video frames: n << d; tables: d << n).
    if n < d:
        w, U = np.linalg.eigh(E @ E.T)
        v = E.T @ U[:, -1]
    else:
        w, V = np.linalg.eigh(E.T @ E)
        v = V[:, -1]
    v -= C.T @ (C @ v)  # rounding: keep it exactly off the subspace
    norm = np.linalg.norm(v)
    if not norm > 1e-12 * max(np.linalg.norm(E), 1e-300):
        return np.zeros(d)
    return fix_signs((v / norm)[None, :])[0]


def spe_t2_grid(components, mean, variances, plane, xs, ys):
    """SPE and T² on the grid ``mean + x u + y v`` (x in xs, y in ys; plane = rows u, v).

    Both are quadratic forms in (x, y), evaluated in closed form: O(len(xs) * len(ys)) work
    whatever the dimension. ``mean`` only locates the grid (offsets are from it). Returns
    ``(spe, t2)``, each (len(ys), len(xs)).
    """
    xs = np.asarray(xs, dtype=np.float64).ravel()
    ys = np.asarray(ys, dtype=np.float64).ravel()
    C = np.atleast_2d(np.asarray(components, dtype=np.float64))
    P = np.asarray(plane, dtype=np.float64)
    var = np.asarray(variances, dtype=np.float64)
    if P.shape != (2, C.shape[1]):
        raise ValueError(f"plane must have shape (2, {C.shape[1]}); got {P.shape}")
    A = P @ C.T                      # (2, k): scores of u and v
    R = P - A @ C                    # residuals of u and v
    x = xs[None, :]
    y = ys[:, None]
    spe = x * x * (R[0] @ R[0]) + 2.0 * x * y * (R[0] @ R[1]) + y * y * (R[1] @ R[1])
    t2 = np.zeros((ys.size, xs.size))
    for j in range(C.shape[0]):
        t = x * A[0, j] + y * A[1, j]
        t2 += t * t / var[j]
    return np.maximum(spe, 0.0), t2


def common_rank_comparison(X, subspaces: dict, flags: dict, outliers=None) -> dict:
    """Compare subspaces like with like: each by its ``rank`` leading directions, the smallest
    rank among them, on the same samples.

    A larger subspace reconstructs every sample better by construction, so comparing the median
    SPE of a rank-2 PCA with that of a rank-152 L says nothing about robustness.

    Parameters
    ----------
    X : (n, d) data, or name -> (n, d) the data in the units of that method's subspace (a fit on
        scaled features measures scaled data).
    subspaces : name -> (components (r, d) orthonormal rows, leading first; mean (d,)).
    flags : name -> (n,) bool, the samples each method flags as outliers.
    outliers : (n,) bool or None, known outliers.

    Returns
    -------
    dict with ``rank`` (int), ``angles`` {(a, b): degrees (rank,)}, ``spe`` {name: (n,)} at that
    rank, and ``median_spe`` {set name: {name: float}} over the samples no method flags
    ("unflagged by all") and, with ``outliers``, over the known inliers.
    """
    names = list(subspaces)
    k = min(np.atleast_2d(c).shape[0] for c, _ in subspaces.values())
    lead = {m: (np.atleast_2d(c)[:k], mu) for m, (c, mu) in subspaces.items()}
    angles = {(a, b): principal_angles(lead[a][0], lead[b][0])
              for i, a in enumerate(names) for b in names[i + 1:]}
    data = X if isinstance(X, dict) else {m: X for m in names}
    spe = {m: reconstruction_errors(data[m], c, mu) for m, (c, mu) in lead.items()}
    n = np.asarray(data[names[0]]).shape[0]
    any_flag = np.zeros(n, dtype=bool)
    for f in flags.values():
        any_flag |= np.asarray(f, dtype=bool)
    sets = {"unflagged by all": ~any_flag}
    if outliers is not None:
        sets["known inliers"] = ~np.asarray(outliers, dtype=bool)
    median = {s: {m: float(np.median(spe[m][rows])) if rows.any() else float("nan") for m in names}
              for s, rows in sets.items()}
    return {"rank": k, "angles": angles, "spe": spe, "median_spe": median}
