"""Similarity graphs for spectral feature scoring: a dense Gaussian graph and a sparse kNN graph.

Both graphs have no self-loops (zero diagonal), so the dense form and the kNN form describe the
same kind of object and the derivative code can be checked one against the other.
"""
from __future__ import annotations

import numpy as np
from scipy.spatial import cKDTree

from .._progress import Reporter

__all__ = ["sq_distances", "dense_affinity", "median_pairwise_distance", "knn_indices",
           "knn_edges", "edge_sq_distances", "edge_affinity", "TREE_MAX_FEATURES"]

# A k-d tree beats blocked brute force only in low dimension (n = 20,000, K = 10: tree 1.3 s vs
# brute 7.2 s at d = 8, 8.0 s vs 9.3 s at d = 12, 26 s vs 9.7 s at d = 16; benchmarks/results_esfs.md).
TREE_MAX_FEATURES = 10

# Working-memory budget, in float64 entries, for one block of a blocked computation (32 MB).
_BLOCK_ENTRIES = 1 << 22
# The kNN search block is larger (128 MB): fewer, larger matrix products.
_KNN_BLOCK_ENTRIES = 1 << 24


def sq_distances(X: np.ndarray) -> np.ndarray:
    """Squared Euclidean distances (n, n) between the rows of ``X``, zero diagonal, never negative."""
    sq = np.einsum("ij,ij->i", X, X)
    D2 = X @ X.T
    D2 *= -2.0
    D2 += sq[:, None]
    D2 += sq[None, :]
    np.maximum(D2, 0.0, out=D2)
    np.fill_diagonal(D2, 0.0)
    return D2


def median_pairwise_distance(D2: np.ndarray) -> float:
    """Median of the n(n-1)/2 distances between distinct rows, given squared distances (n, n).

    Zero distances (duplicate rows) are left out so duplicates cannot drive the median to 0.
    """
    iu = np.triu_indices(D2.shape[0], k=1)
    vals = D2[iu]
    vals = vals[vals > 0]
    if vals.size == 0:
        return 0.0
    return float(np.sqrt(np.median(vals)))


def dense_affinity(D2: np.ndarray, sigma: float, *, out: np.ndarray | None = None) -> np.ndarray:
    """Gaussian similarities S_ij = exp(-D2_ij / (2 sigma^2)), S_ii = 0. May overwrite ``out``."""
    S = np.multiply(D2, -1.0 / (2.0 * sigma * sigma), out=out)
    np.exp(S, out=S)
    np.fill_diagonal(S, 0.0)
    return S


def knn_indices(X: np.ndarray, n_neighbors: int, rep: Reporter | None = None):
    """Indices (n, K) and distances (n, K) of each row's K nearest other rows.

    A k-d tree for few features, otherwise blocked brute force with BLAS, in blocks small enough
    that memory stays O(n * block). A row is never its own neighbour, even with duplicate rows.
    """
    rep = rep or Reporter(None)
    n, d = X.shape
    K = int(n_neighbors)
    if d <= TREE_MAX_FEATURES:
        rep(0.0, "kNN graph: k-d tree")
        tree = cKDTree(X)
        dist, idx = tree.query(X, k=K + 1)
        rep(0.9, "kNN graph: k-d tree")
        idx = np.asarray(idx).reshape(n, K + 1)
        dist = np.asarray(dist).reshape(n, K + 1)
        is_self = idx == np.arange(n)[:, None]
        # With duplicates the row itself may not be returned first (or at all): then drop the
        # farthest of the K + 1 so every row keeps exactly K neighbours other than itself.
        no_self = ~is_self.any(axis=1)
        is_self[no_self, K] = True
        keep = ~is_self
        idx = idx[keep].reshape(n, K)
        dist = dist[keep].reshape(n, K)
        return idx, dist
    # One product gives ||x_j||^2 - 2 x_i.x_j, which orders row i's neighbours like the distance
    # (||x_i||^2 is constant along the row): append a column of ones to X and a row ||x_j||^2.
    left = np.empty((n, d + 1))
    left[:, :d] = X
    left[:, d] = 1.0
    right = np.empty((d + 1, n))
    right[:d] = -2.0 * X.T
    right[d] = np.einsum("ij,ij->i", X, X)
    # A cheap upper bound on each row's K-th value: the K-th smallest over every 8th column. All K
    # nearest lie below it, and only ~8K candidates per row do, so the exact selection is small.
    stride = 8 if n >= 64 * K else 1
    block = max(1, min(n, _KNN_BLOCK_ENTRIES // max(n, 1)))
    idx = np.empty((n, K), dtype=np.intp)
    for start in range(0, n, block):
        rep(start / n, "kNN graph: nearest neighbours")
        stop = min(n, start + block)
        b = stop - start
        G = left[start:stop] @ right
        rows = np.arange(b)
        G[rows, start + rows] = np.inf
        sub = G[:, ::stride]
        bound = np.partition(sub, K - 1, axis=1)[:, K - 1]
        r, c = np.nonzero(G <= bound[:, None])
        order = np.lexsort((c, G[r, c], r))
        r, c = r[order], c[order]
        counts = np.bincount(r, minlength=b)
        first = np.concatenate([[0], np.cumsum(counts)[:-1]])
        keep = (np.arange(r.size) - first[r]) < K
        idx[start:stop] = c[keep].reshape(b, K)
    rep(1.0, "kNN graph: nearest neighbours")
    diff = X[:, None, :] - X[idx] if n * K * d <= _BLOCK_ENTRIES else None
    if diff is not None:
        dist = np.sqrt(np.einsum("ijk,ijk->ij", diff, diff))
    else:
        dist = np.empty((n, K))
        step = max(1, _BLOCK_ENTRIES // (K * d))
        for start in range(0, n, step):
            stop = min(n, start + step)
            diff = X[start:stop, None, :] - X[idx[start:stop]]
            dist[start:stop] = np.sqrt(np.einsum("ijk,ijk->ij", diff, diff))
    return idx, dist


def knn_edges(idx: np.ndarray, n: int):
    """Undirected edge list (i < j) of the symmetrised kNN graph (union of directed edges)."""
    K = idx.shape[1]
    a = np.repeat(np.arange(n, dtype=np.int64), K)
    b = idx.ravel().astype(np.int64)
    lo = np.minimum(a, b)
    hi = np.maximum(a, b)
    keys = np.unique(lo * n + hi)
    rows, cols = np.divmod(keys, n)
    ok = rows != cols
    return rows[ok], cols[ok]


def edge_sq_distances(X: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Squared distance of each edge (|E|,), computed from differences (no cancellation)."""
    d = X.shape[1]
    chunk = max(1, _BLOCK_ENTRIES // max(d, 1))
    out = np.empty(rows.size, dtype=np.float64)
    for start in range(0, rows.size, chunk):
        stop = min(rows.size, start + chunk)
        diff = X[rows[start:stop]] - X[cols[start:stop]]
        out[start:stop] = np.einsum("ij,ij->i", diff, diff)
    return out


def edge_affinity(edge_d2: np.ndarray, sigma: float) -> np.ndarray:
    """Gaussian weight exp(-d2 / (2 sigma^2)) of each edge."""
    return np.exp(edge_d2 * (-1.0 / (2.0 * sigma * sigma)))
