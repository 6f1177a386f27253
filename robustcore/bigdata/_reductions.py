"""Block-wise statistics for tall tables: each is a function on one block of rows plus a merge,
so Dask can run the blocks anywhere and combine the results in a tree.

(The moments, scatter matrices and R factors of the fits are accumulators of
``robustcore._row_stats``, run by the engine ``robustcore._passes``.)

* exact order statistics of a table's columns (a median centre) in two passes: a sorted sketch
  per block bounds where the wanted values can be, then the few values inside those bounds are
  gathered and sorted. Exact, so results equal numpy's on data that fits in memory. (Order
  statistics of a fit's per-row results are read in slices: ``robustcore.bigdata._selection``.)
"""
from __future__ import annotations

import numpy as np

__all__ = ["tree_reduce", "sketch", "bracket", "gather", "pick", "exact_order_statistics",
           "order_statistics", "median"]

# Sorted values kept per block and column by the order-statistic sketch. The values gathered in
# the second pass number about 2 n / _SKETCH per column.
_SKETCH = 512


def tree_reduce(parts, merge, split_every: int = 8):
    """Reduce a list of Dask delayed values pairwise-ish with ``merge(*values)``."""
    from dask import delayed
    parts = list(parts)
    if not parts:
        raise ValueError("nothing to reduce: the table has no blocks")
    while len(parts) > 1:
        parts = [delayed(merge)(*parts[i:i + split_every]) if len(parts[i:i + split_every]) > 1
                 else parts[i] for i in range(0, len(parts), split_every)]
    return parts[0]


def as_float(B) -> np.ndarray:
    return np.asarray(B, dtype=np.float64)


# -- exact order statistics ---------------------------------------------------------------------

def _as_columns(B) -> np.ndarray:
    B = as_float(B)
    return B[:, None] if B.ndim == 1 else B


def sketch(B, size: int = _SKETCH):
    """(n_b, ranks, values): values[j] = the ranks[j]-th smallest of each column of the block."""
    B = _as_columns(B)
    n = B.shape[0]
    if n == 0:
        return 0, np.zeros(0, np.int64), np.zeros((0, B.shape[1]))
    ranks = np.unique(np.linspace(0, n - 1, min(size, n)).round().astype(np.int64))
    S = np.sort(B, axis=0)
    return n, ranks, S[ranks]


def bracket(sketches, ks):
    """Per column (lo, hi) such that the ks-th smallest values (0-based, all of them) lie in
    [lo, hi], from the block sketches alone.

    For a block with sketch values v_0 <= ... <= v_m at ranks r_0 < ... < r_m (and n_b rows),
    count(< x) <= r_i for the first v_i >= x (n_b if none), and count(<= x) >= r_i + 1 for the
    last v_i <= x (0 if none). Both bounds are step functions of x; summed over blocks they are
    cumulative sums over the pooled, sorted sketch values.
    """
    ks = np.atleast_1d(ks)
    k_lo, k_hi = int(ks.min()), int(ks.max())
    live = [s for s in sketches if s[0]]
    d = live[0][2].shape[1]
    lo = np.full(d, -np.inf)
    hi = np.full(d, np.inf)
    # Steps of the upper bound of count(< x): it rises by r_(i+1) - r_i once x passes v_i.
    up_base = sum(int(r[0]) for _, r, _ in live)
    up_inc = np.concatenate([np.diff(np.append(r, n)) for n, r, _ in live]).astype(np.float64)
    # Steps of the lower bound of count(<= x): it rises by r_i - r_(i-1) (r_(-1) = -1) at v_i.
    low_inc = np.concatenate([np.diff(np.concatenate(([-1], r))) for _, r, _ in live]).astype(np.float64)
    for j in range(d):
        v = np.concatenate([sv[:, j] for _, _, sv in live])
        order = np.argsort(v, kind="stable")
        v = v[order]
        up = up_base + np.concatenate(([0.0], np.cumsum(up_inc[order])))   # up[i]: x just above v[i-1]
        low = np.cumsum(low_inc[order])                                    # low[i]: x = v[i] onwards
        # upper(count < v[i]) = up[first index with value >= v[i]]
        first = np.searchsorted(v, v, side="left")
        ok = np.flatnonzero(up[first] <= k_lo)
        if ok.size:
            lo[j] = v[ok[-1]]
        last = np.searchsorted(v, v, side="right") - 1
        ok = np.flatnonzero(low[last] >= k_hi + 1)
        if ok.size:
            hi[j] = v[ok[0]]
    return lo, hi


def gather(B, lo, hi):
    """(count below lo per column, values in [lo, hi] per column) of one block."""
    B = _as_columns(B)
    below = (B < lo).sum(axis=0)
    inside = [B[(B[:, j] >= lo[j]) & (B[:, j] <= hi[j]), j] for j in range(B.shape[1])]
    return below, inside


def merge_gathered(*parts):
    below = sum(p[0] for p in parts)
    inside = [np.concatenate([p[1][j] for p in parts]) for j in range(len(parts[0][1]))]
    return below, inside


def pick(gathered, ks):
    """The ks-th smallest values (rows) of every column, from the merged gather."""
    below, inside = gathered
    ks = np.atleast_1d(ks)
    out = np.empty((ks.size, len(inside)))
    for j, vals in enumerate(inside):
        vals = np.sort(vals)
        idx = ks - int(below[j])
        if idx.min() < 0 or idx.max() >= vals.size:
            raise AssertionError("order statistic outside its bracket (a bug: the sketch bounds are wrong)")
        out[:, j] = vals[idx]
    return out


def gather_each(B, bounds):
    """gather() for several separate brackets: [(below, inside) for (lo, hi) in bounds]."""
    return [gather(B, lo, hi) for lo, hi in bounds]


def merge_gathered_each(*parts):
    return [merge_gathered(*[p[i] for p in parts]) for i in range(len(parts[0]))]


def exact_order_statistics(X, sketches, ks, progress=None, message="order statistics"):
    """The ks-th smallest values (len(ks), d) of every column of the Dask array X, given the
    sketches of its blocks (``sketch``): one more pass, gathering for each k only the values its
    own bracket cannot rule out (about 2 n / _SKETCH per column and k)."""
    from dask import delayed

    from ._dask import compute
    ks = [int(k) for k in np.atleast_1d(ks)]
    bounds = [bracket(sketches, [k]) for k in ks]
    parts = [delayed(gather_each)(b, bounds) for b in X.to_delayed().ravel()]
    g = compute(tree_reduce(parts, merge_gathered_each), progress=progress, message=message)[0]
    return np.vstack([pick(gi, [k]) for gi, k in zip(g, ks)])


def order_statistics(A, ks, progress=None, message="order statistics"):
    """Exact ks-th smallest values (0-based) of each column of a Dask array (or of a 1-D one):
    two passes (sketch, then gather within the sketch's bounds). Returns (len(ks), d)."""
    from dask import delayed

    from .._progress import Reporter
    from ._dask import compute
    rep = progress if isinstance(progress, Reporter) else Reporter(progress)
    blocks = list(A.to_delayed().ravel())
    sk = compute(*[delayed(sketch)(b) for b in blocks], progress=rep.span(0, 0.5), message=message)
    return exact_order_statistics(A, list(sk), ks, progress=rep.span(0.5, 1.0), message=message)


def median(A, progress=None):
    """Exact column medians of a 2-D Dask array, or the median of a 1-D one (numpy's
    np.median along axis 0)."""
    n = A.shape[0]
    v = order_statistics(A, [(n - 1) // 2, n // 2], progress=progress, message="median")
    m = 0.5 * (v[0] + v[1])
    return float(m[0]) if A.ndim == 1 else m
