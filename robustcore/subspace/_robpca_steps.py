"""The numerical stages of ROBPCA (Hubert, Rousseeuw & Vanden Branden, Technometrics 47, 2005),
each a function of plain arrays: the univariate MCD, the Stahel-Donoho outlyingness through
pairs of points, the Wilson-Hilferty cut-off of orthogonal distances, the choice of k and the
MCD of the projected points with its reweighting step. robustcore.subspace.robpca strings
them together.

Every MCD here is made consistent at the normal model twice, as in the MCD literature
(Rousseeuw & Leroy 1987; Croux & Haesbroeck 1999; Hubert & Debruyne 2009): the raw estimate
of the h-subset, and the reweighted estimate of the points inside its 97.5 % ellipsoid, each
divided by the share of a normal's spread that such a trimmed set keeps. Without it the score
cut-off sqrt(chi2_k(0.975)) would flag more than the 2.5 % of clean normal samples it states.
"""
from __future__ import annotations

import numpy as np
from scipy import stats

from ._robpca_params import CRIT

__all__ = ["unimcd", "outlyingness", "od_cutoff", "choose_k", "h_size", "mcd_subspace", "pair_directions"]

# Directions through pairs of points (the paper's 250: all pairs when there are fewer).
MAX_DIRECTIONS = 250
# Entries of the n x directions projection matrix sorted at a time (a block stays in cache-
# friendly tens of MB whatever n).
_BLOCK_ENTRIES = 1 << 21


def h_size(n: int, alpha: float, k: int) -> int:
    """The size of every h-subset: max(floor(alpha n), floor((n + k + 1) / 2)), at most n (k
    is the rank asked for, or kmax when the rule chooses it)."""
    return int(min(n, max(int(np.floor(alpha * n)), (n + k + 1) // 2)))


def unimcd(Y, h: int):
    """Univariate reweighted MCD of every column of ``Y`` (n, m), with h-subsets of size ``h``:
    (location (m,), scale (m,)), consistent at the normal (:func:`unimcd_rows` does the work)."""
    Y = np.asarray(Y, dtype=np.float64)
    if Y.ndim == 1:
        loc, scale = unimcd_rows(Y[None, :], h)
        return float(loc[0]), float(scale[0])
    return unimcd_rows(np.ascontiguousarray(Y.T), h)


def _sums(low, c1, c2, lo, hi):
    """Count, sum and sum of squares of the sorted rows ``low`` (with running sums c1, c2 that
    start at 0) strictly between lo and hi, per row."""
    rows = np.arange(low.shape[0])
    a = np.count_nonzero(low <= lo[:, None], axis=1)
    b = np.count_nonzero(low < hi[:, None], axis=1)
    return b - a, c1[rows, b] - c1[rows, a], c2[rows, b] - c2[rows, a]


def _running(S):
    """Running sums of the rows of S and of their squares, each with a leading 0 column."""
    m, t = S.shape
    c1 = np.zeros((m, t + 1))
    np.cumsum(S, axis=1, out=c1[:, 1:])
    c2 = np.zeros((m, t + 1))
    np.cumsum(np.square(S), axis=1, out=c2[:, 1:])
    return c1, c2


def unimcd_rows(R, h: int):
    """Univariate reweighted MCD of every ROW of ``R`` (m, n): (location (m,), scale (m,)).

    The raw estimate is the mean and variance of the h consecutive order statistics with the
    least variance (Rousseeuw & Leroy 1987, p. 171-172); the reweighted one those of the points
    whose squared standardized distance is below chi2_1(0.975), which in sorted order are again
    consecutive. Every window of h consecutive order statistics holds the middle 2h - n of them,
    so the windows' sums are running sums over the n - h smallest and the n - h largest values
    plus the middle's sum. Values are taken about the median, so that the difference of two
    large sums does not cancel the variance of a row far from 0."""
    m, n = R.shape
    if h >= n:
        return R.mean(axis=1), R.std(axis=1, ddof=1) if n > 1 else np.zeros(m)
    t = n - h
    # (one sort of each row measured faster than numpy's partition at the two ranks plus
    # sorts of the two tails: 122 against 188 ms for 40 x 50,000)
    S = np.sort(R, axis=1)
    centre = S[:, n // 2].copy()
    S -= centre[:, None]
    low, midc, high = S[:, :t], S[:, t:h], S[:, h:]
    m1 = midc.sum(axis=1)
    m2 = np.einsum("ij,ij->i", midc, midc)
    l1, l2 = _running(low)
    h1, h2 = _running(high)
    # window i: low[i:] + the middle + high[:i]; h x its variance = s2 - s1² / h
    s1 = np.subtract(l1[:, -1:] + m1[:, None], l1)
    s1 += h1
    s2 = np.subtract(l2[:, -1:] + m2[:, None], l2)
    s2 += h2
    sq = np.square(s1)
    sq /= h
    s2 -= sq
    best = np.argmin(s2, axis=1)
    rows = np.arange(m)
    raw_loc = s1[rows, best] / h
    q = h / n
    raw_var = np.maximum(s2[rows, best], 0.0) / h * (q / stats.chi2.cdf(stats.chi2.ppf(q, 1), 3))
    cut = np.sqrt(stats.chi2.ppf(CRIT, 1) * raw_var)
    lo, hi = raw_loc - cut, raw_loc + cut
    # the whole middle is kept when the cut-offs fall in the tails (the middle lies between
    # the largest of the low tail and the smallest of the high one); else count it directly
    whole = (lo < low[:, -1]) & (hi > high[:, 0])
    cl, sl, ql = _sums(low, l1, l2, lo, hi)
    ch, sh, qh = _sums(high, h1, h2, lo, hi)
    cnt = cl + ch + midc.shape[1]
    t1, t2 = sl + sh + m1, ql + qh + m2
    for i in np.flatnonzero(~whole):
        inside = midc[i][(midc[i] > lo[i]) & (midc[i] < hi[i])]
        cnt[i] = cl[i] + ch[i] + inside.size
        t1[i] = sl[i] + sh[i] + inside.sum()
        t2[i] = ql[i] + qh[i] + inside @ inside
    ok = (cnt > 1) & (raw_var > 0)
    safe = np.where(ok, cnt, 1)
    new_loc = t1 / safe
    new_var = np.maximum(t2 - t1 * new_loc, 0.0) / safe
    delta = cnt / n
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = np.where(delta < 1.0, delta / stats.chi2.cdf(stats.chi2.ppf(delta, 1), 3), 1.0)
    # a row whose h-subset has no spread keeps its raw location, scale 0 (an exact fit)
    loc = np.where(ok, new_loc, raw_loc) + centre
    scale = np.where(ok, np.sqrt(new_var * factor), 0.0)
    return loc, scale


def abs_max(X) -> float:
    """The largest |entry| of X (0 for an empty X), without an |X| temporary: at 10,000 x 200
    a fresh 16 MB array to read once cost more than the two reductions (page faults)."""
    return float(max(X.max(initial=0.0), -X.min(initial=0.0)))


def pair_directions(X, rng, max_directions: int = MAX_DIRECTIONS) -> np.ndarray:
    """Unit directions (m, r) through pairs of rows of ``X`` (n, r): every pair when there are
    at most ``max_directions`` of them, else that many pairs of distinct rows drawn with
    ``rng``; pairs of equal rows give no direction and are dropped."""
    n = X.shape[0]
    if n * (n - 1) // 2 <= max_directions:
        i, j = np.triu_indices(n, 1)
    else:
        i = rng.integers(0, n, max_directions)
        j = (i + rng.integers(1, n, max_directions)) % n      # another row, uniformly
    B = X[i] - X[j]
    norm = np.linalg.norm(B, axis=1)
    keep = norm > 1e-12 * max(abs_max(X), 1e-300)
    return B[keep] / norm[keep, None]


def outlyingness(X, h: int, rng, rep=None) -> np.ndarray:
    """Stahel-Donoho outlyingness of every row of ``X`` (n, r): the largest, over directions
    through pairs of points, of |projection - univariate MCD location| / MCD scale.
    Directions along which h points project onto one value (scale 0) are skipped: they say
    nothing about spread. ``rep`` (a robustcore._progress.Reporter) hears of every block."""
    n = X.shape[0]
    A = pair_directions(X, rng)
    out = np.zeros(n)
    if A.shape[0] == 0:
        return out
    step = max(1, _BLOCK_ENTRIES // max(n, 1))
    big = abs_max(X) * np.sqrt(X.shape[1])    # |projection| <= |row|
    for s in range(0, A.shape[0], step):
        Y = A[s:s + step] @ X.T                          # (directions, n): rows contiguous
        loc, scale = unimcd_rows(Y, h)
        ok = scale > 1e-12 * max(big, 1e-300)
        if ok.any():
            Z = Y if ok.all() else Y[ok]
            Z -= loc[ok, None]
            Z /= scale[ok, None]
            np.abs(Z, out=Z)
            np.maximum(out, Z.max(axis=0), out=out)
        if rep is not None:
            rep(min(1.0, (s + step) / A.shape[0]), "outlyingness")
    return out


def od_cutoff(od, h: int) -> float:
    """The cut-off of orthogonal distances: OD^(2/3) is about normal (Wilson-Hilferty), so
    (mu + sigma z_0.975)^(3/2) with mu and sigma the univariate MCD of OD^(2/3) over h."""
    loc, scale = unimcd(np.asarray(od, dtype=np.float64) ** (2.0 / 3.0), h)
    return float(max(loc + scale * stats.norm.ppf(CRIT), 0.0) ** 1.5)


def choose_k(eigenvalues, kmax: int, share: float = 0.8, ratio: float = 1e-3) -> int:
    """The paper's rule for k from the eigenvalues (descending) of the h least outlying points:
    the smallest k whose components explain at least ``share`` of their total variance, among
    those whose eigenvalue is at least ``ratio`` times the first; at most ``kmax``."""
    ev = np.asarray(eigenvalues, dtype=np.float64)
    usable = max(1, int(np.sum(ev >= ratio * ev[0])))
    cap = max(1, min(kmax, usable))
    cum = np.cumsum(ev[:cap]) / ev.sum()
    reach = np.flatnonzero(cum >= share)
    return int(reach[0] + 1) if reach.size else cap


def _mean_cov(X):
    """Mean and maximum-likelihood covariance (divided by the count) of the rows of X."""
    m = X.mean(axis=0)
    Xc = X - m
    return m, Xc.T @ Xc / X.shape[0]


def _logdet(C) -> float:
    sign, val = np.linalg.slogdet(C)
    return float(val) if sign > 0 else -np.inf


def _mahalanobis(X, loc, cov):
    """Squared Mahalanobis distances of the rows of X (inf where cov is singular)."""
    w, V = np.linalg.eigh(cov)
    if not w[0] > 1e-14 * max(w[-1], 1e-300):
        return None
    T = (X - loc) @ V
    return np.einsum("ij,ij,j->i", T, T, 1.0 / w)


def c_steps(X, subset, max_iter: int = 100):
    """Concentration steps of the MCD (Rousseeuw & Van Driessen 1999) from the rows ``subset``
    (indices, size h) of X (n, k): the h rows closest in Mahalanobis distance to the subset's
    mean and covariance, until the determinant stops falling. Returns (subset, log det) ; a
    singular subset is returned as it is (its log det -inf: an exact fit)."""
    h = subset.size
    idx = np.sort(subset)
    best = np.inf
    for _ in range(max_iter):
        loc, cov = _mean_cov(X[idx])
        ld = _logdet(cov)
        if not ld < best - 1e-12 * max(1.0, abs(ld)):
            return idx, min(ld, best)
        best = ld
        d2 = _mahalanobis(X, loc, cov)
        if d2 is None:
            return idx, -np.inf
        new = np.sort(np.argpartition(d2, h - 1)[:h])
        if np.array_equal(new, idx):
            return idx, ld
        idx = new
    return idx, best


def reweighted(X, subset):
    """The reweighted MCD of X (n, k) from its h-subset: (location, covariance, weights).

    The raw covariance of the subset is made consistent by the median of the squared distances
    over chi2_k(0.5) (as scikit-learn's MinCovDet and rrcov); the points with squared distance
    below chi2_k(0.975) are kept, and their covariance is scaled by delta / P(chi2_(k+2) <=
    chi2_k(delta)), delta their share (Croux & Haesbroeck 1999)."""
    n, k = X.shape
    loc, cov = _mean_cov(X[subset])
    d2 = _mahalanobis(X, loc, cov)
    if d2 is None:           # exact fit: the subset's own estimate
        return loc, cov, np.isin(np.arange(n), subset)
    cov = cov * (np.median(d2) / stats.chi2.ppf(0.5, k))
    d2 = _mahalanobis(X, loc, cov)
    keep = d2 < stats.chi2.ppf(CRIT, k)
    loc, cov = _mean_cov(X[keep])
    delta = keep.sum() / n
    if delta < 1.0:
        cov = cov * (delta / stats.chi2.cdf(stats.chi2.ppf(delta, k), k + 2))
    return loc, cov, keep


def _start(X, idx, rng):
    """A (k+1)-subset start of FastMCD, grown by random rows while its covariance is singular
    (Rousseeuw & Van Driessen 1999): (mean, covariance) or None if all rows are needed."""
    n, k = X.shape
    order = None
    while True:
        loc, cov = _mean_cov(X[idx])
        w = np.linalg.eigvalsh(cov)
        if w[0] > 1e-12 * max(w[-1], 1e-300):
            return loc, cov
        if idx.size >= n:
            return None
        if order is None:
            order = rng.permutation(np.setdiff1d(np.arange(n), idx))
        idx = np.append(idx, order[idx.size - k - 1])


def _batch_mean_cov(G):
    """Means (b, k) and ML covariances (b, k, k) of b groups of rows G (b, g, k)."""
    loc = G.mean(axis=1)
    D = G - loc[:, None, :]
    return loc, np.matmul(D.transpose(0, 2, 1), D) / G.shape[1]


def _batch_d2(S, loc, cov):
    """Squared Mahalanobis distances (b, m) of the rows of S (m, k) to b (loc, cov) pairs
    (S centred by the caller: the expansion below then cancels nothing large)."""
    A = np.linalg.inv(cov)
    SA = np.matmul(S[None], A)                                  # (b, m, k)
    Al = np.matmul(A, loc[:, :, None])[:, :, 0]                 # (b, k)
    return (np.einsum("bmk,mk->bm", SA, S, optimize=True) - 2.0 * (Al @ S.T)
            + np.einsum("bk,bk->b", Al, loc)[:, None])


def _two_csteps(S0, loc, cov, hs):
    """Two C-steps of every (loc, cov) pair on the rows S0, all at once: (loc, cov, log det,
    subsets), candidates whose h-subset is singular (an exact fit on these rows) dropped."""
    for _ in range(2):
        sub = np.argpartition(_batch_d2(S0, loc, cov), hs - 1, axis=1)[:, :hs]
        loc, cov = _batch_mean_cov(S0[sub])
        sign, ld = np.linalg.slogdet(cov)
        keep = sign > 0
        loc, cov, ld, sub = loc[keep], cov[keep], ld[keep], sub[keep]
        if loc.shape[0] == 0:
            break
    return loc, cov, ld, sub


def _random_starts(S0, count, rng):
    """(loc, cov) of ``count`` random (k+1)-subsets of the rows S0, a singular one grown by
    random rows as FastMCD does (dropped if that takes every row)."""
    m, k = S0.shape
    # k + 1 distinct rows per start: the first k + 1 of a random order (all starts at once)
    starts = np.argpartition(rng.random((count, m)), k, axis=1)[:, :k + 1]
    loc, cov = _batch_mean_cov(S0[starts])
    w = np.linalg.eigvalsh(cov)
    flat = ~(w[:, 0] > 1e-12 * np.maximum(w[:, -1], 1e-300))
    for b in np.flatnonzero(flat):
        st = _start(S0, starts[b], rng)
        if st is not None:
            loc[b], cov[b] = st
            flat[b] = False
    return loc[~flat], cov[~flat]


def fast_mcd(X, h: int, rng, n_starts: int = 500, n_best: int = 10, sample: int = 1500, part: int = 300):
    """FastMCD's search (Rousseeuw & Van Driessen 1999): ``n_starts`` random (k+1)-subsets with
    two C-steps each (all at once, as arrays), the ``n_best`` lowest determinants iterated to
    convergence. Beyond 2 ``part`` rows the starts are shared among up to five disjoint parts of
    ``part`` rows of a random sample of ``sample`` rows, the best ``n_best`` of each part get
    two C-steps on the whole sample (the paper's nested scheme), and only the best subset of the
    sample is carried to all rows. Returns (subset, log det), or (None, inf) when no start
    gives a subset with a positive determinant."""
    n, k = X.shape
    S = X if n <= sample else X[rng.choice(n, sample, replace=False)]
    m = S.shape[0]
    S0 = S - S.mean(axis=0)
    hs = min(m, max(k + 1, int(np.ceil(h * m / n))))
    groups = max(1, min(5, m // part)) if m > 2 * part else 1
    if groups == 1:
        loc, cov, ld, sub = _two_csteps(S0, *_random_starts(S0, n_starts, rng), hs)
    else:
        cands = []
        for rows in np.array_split(rng.permutation(m), groups):
            P0 = S0[rows]
            hp = min(rows.size, max(k + 1, int(np.ceil(h * rows.size / n))))
            lp, cp, ldp, _ = _two_csteps(P0, *_random_starts(P0, n_starts // groups, rng), hp)
            top = np.argsort(ldp)[:n_best]
            cands.append((lp[top], cp[top]))
        loc = np.concatenate([c[0] for c in cands])
        cov = np.concatenate([c[1] for c in cands])
        if loc.shape[0] == 0:
            return None, np.inf
        loc, cov, ld, sub = _two_csteps(S0, loc, cov, hs)
    if loc.shape[0] == 0:
        return None, np.inf
    best, best_ld = None, np.inf
    for b in np.argsort(ld)[:n_best]:
        sub_b, ld_b = c_steps(S, sub[b])
        if ld_b < best_ld:
            best, best_ld = sub_b, ld_b
    if S is X or best is None:
        return best, best_ld
    # only the best subset of the sample is carried to all rows (FastMCD's last stage)
    d2 = _mahalanobis(X, *_mean_cov(S[best]))
    if d2 is None:
        return None, np.inf
    return c_steps(X, np.argpartition(d2, h - 1)[:h])


def mcd_subspace(X2, eigenvalues, h: int, rng, search: bool = True):
    """The MCD stage of ROBPCA on the projected points X2 (n, k), centred on the reweighted
    centre and rotated to the eigenvectors of the reweighted covariance (its ``eigenvalues``):
    C-steps from the h points nearest in that metric (the paper's start), and, with
    ``search``, FastMCD from random subsets (:func:`fast_mcd`); the subset of smaller determinant
    is reweighted (:func:`reweighted`). Returns (location, covariance, weights)."""
    n, k = X2.shape
    ev = np.maximum(np.asarray(eigenvalues[:k], dtype=np.float64), 1e-300)
    start = np.argpartition(np.einsum("ij,ij,j->i", X2, X2, 1.0 / ev), h - 1)[:h]
    subset, ld = c_steps(X2, start)
    if search and h < n and np.isfinite(ld):
        other, ld_other = fast_mcd(X2, h, rng)
        if other is not None and ld_other < ld:
            subset = other
    return reweighted(X2, subset)
