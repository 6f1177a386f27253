"""The MCD stage of ROBPCA: the minimum covariance determinant of the k-dimensional projected
points (FastMCD, Rousseeuw & Van Driessen 1999) and its reweighting step.

FastMCD's search runs its many candidates at once, as arrays. Its first C-steps only rank
candidates, so there the distances and the h-subsets' moments come from one product each with
the points' quadratic features (x_i x_j, x_i, 1) taken about the coordinate-wise median: a
subset of more than half the points has, in every coordinate, points on both sides of the
median, so its mean cannot lie far outside its spread and the raw moments lose few digits. The
candidates kept are then concentrated to convergence with exact centred estimates.
"""
from __future__ import annotations

import numpy as np

from ._robpca_params import CRIT
from ._robpca_steps import chi2_ppf, trim_factor

__all__ = ["c_steps", "fast_mcd", "mcd_subspace", "nearest_mask", "reweighted"]

# FastMCD's settings (Rousseeuw & Van Driessen 1999): random starts, candidates kept per part,
# rows of the sample, rows of a part.
_FAST = dict(n_starts=500, n_best=10, sample=1500, part=300)


def _mean_cov(X):
    """Mean and maximum-likelihood covariance (divided by the count) of the rows of X."""
    m = X.mean(axis=0)
    Xc = X - m
    return m, Xc.T @ Xc / X.shape[0]


def _mahalanobis(XT, loc, cov):
    """Squared Mahalanobis distances of the columns of XT (k, n) (None where cov is singular)."""
    w, V = np.linalg.eigh(cov)
    if not w[0] > 1e-14 * max(w[-1], 1e-300):
        return None
    return _whitened_d2(XT, loc, w, V)


def c_steps(X, subset, max_iter: int = 100):
    """Concentration steps of the MCD (Rousseeuw & Van Driessen 1999) from the rows ``subset``
    (indices, size h) of X (n, k): the h rows closest in Mahalanobis distance to the subset's
    mean and covariance, until the determinant stops falling. Returns (subset, log det); a
    singular subset is returned as it is (its log det -inf: an exact fit)."""
    (idx, ld), = _converge(_columns(X), np.asarray(subset)[None, :], max_iter)
    return idx, ld


def _columns(X):
    """The points as columns (k, n), contiguous: with k of a few, every operation on the rows
    of an (n, k) array runs a loop of k per point (at 10,000 x 5 a centring took 5x the time
    of the same arithmetic over rows of n)."""
    return np.ascontiguousarray(np.asarray(X, dtype=np.float64).T)


def nearest_mask(d2, h, work=None):
    """Masks (b, n) of the h smallest entries of each row of d2 (b, n): one selection of each
    row's h-th value and a comparison; an argpartition only for a row whose ties at the cut
    make the set ambiguous. ``work``: a Scratch whose slot "select" holds the selection's copy
    of d2 (np.partition's own copy otherwise: the same values)."""
    if work is None:
        kth = np.partition(d2, h - 1, axis=1)[:, h - 1]
    else:
        sel = work.take("select", d2.shape, d2.dtype)
        np.copyto(sel, d2)
        sel.partition(h - 1, axis=1)
        kth = sel[:, h - 1].copy()
    M = d2 <= kth[:, None]
    # every row marks at least h entries, so a total of b h means exactly h in each (one count
    # of the whole mask: counting along rows took as long as the comparison)
    if np.count_nonzero(M) == M.shape[0] * h:
        return M
    for b in np.flatnonzero(np.count_nonzero(M, axis=1) != h):
        M[b] = False
        M[b, np.argpartition(d2[b], h - 1)[:h]] = True
    return M


def _nearest(d2, h, work=None):
    """Sorted indices (b, h) of the h smallest entries of each row of d2 (b, n) (``work``:
    nearest_mask's)."""
    b, n = d2.shape
    # (flat indices: np.nonzero of a 2-D mask took 9x as long, making both index arrays)
    return np.flatnonzero(nearest_mask(d2, h, work)).reshape(b, h) - (np.arange(b) * n)[:, None]


def _converge(XT, subsets, max_iter: int = 100):
    """:func:`c_steps` from each row of ``subsets`` (b, h), all at once, on the points XT
    (k, n) as columns: [(subset, log det)]."""
    b, h = subsets.shape
    idx = np.sort(subsets, axis=1)
    best = np.full(b, np.inf)
    out = [None] * b
    live = np.arange(b)
    for _ in range(max_iter):
        G = np.take(XT, idx[live], axis=1)                  # (k, a, h)
        loc = G.mean(axis=2)
        G -= loc[:, :, None]
        G = G.transpose(1, 0, 2)                            # (a, k, h)
        cov = np.matmul(G, G.transpose(0, 2, 1)) / h
        loc = loc.T
        sign, ld = np.linalg.slogdet(cov)
        ld = np.where(sign > 0, ld, -np.inf)
        w, V = np.linalg.eigh(cov)
        still = np.ones(live.size, bool)
        for j, c in enumerate(live):
            if not ld[j] < best[c] - 1e-12 * max(1.0, abs(ld[j])):
                out[c], still[j] = (idx[c].copy(), min(ld[j], best[c])), False
            elif not w[j, 0] > 1e-14 * max(w[j, -1], 1e-300):
                out[c], still[j] = (idx[c].copy(), -np.inf), False
        best[live] = ld
        live, loc, w, V = live[still], loc[still], w[still], V[still]
        if live.size == 0:
            return out
        new = _nearest(_whitened_d2(XT, loc, w, V), h)
        moved = ~(new == idx[live]).all(axis=1)
        for c in live[~moved]:
            out[c] = (idx[c].copy(), best[c])
        idx[live] = new
        live = live[moved]
        if live.size == 0:
            return out
    for c in live:
        out[c] = (idx[c].copy(), best[c])
    return out


def _mean_cov_t(G):
    """Mean (k,) and ML covariance (k, k) of the columns of G (k, m), a copy given away."""
    loc = G.mean(axis=1)
    G -= loc[:, None]
    return loc, (G @ G.T) / G.shape[1]


def _whitened_d2(XT, loc, w, V):
    """Squared Mahalanobis distances of the columns of XT (k, n) to (loc, V diag(w) V') (one
    pair: loc (k,), w (k,), V (k, k)), or to each of b pairs (loc (b, k), ...): (n,) or (b, n)."""
    Wt = np.swapaxes(V / np.sqrt(w)[..., None, :], -1, -2)     # whitening rows
    T = np.matmul(Wt, XT)
    T -= np.matmul(Wt, loc[..., None])
    np.square(T, out=T)
    return T.sum(axis=-2)


def reweighted(X, subset):
    """The reweighted MCD of X (n, k) from its h-subset: (location, covariance, weights).

    The raw covariance of the subset is made consistent by the median of the squared distances
    over chi2_k(0.5) (as scikit-learn's MinCovDet and rrcov); the points with squared distance
    below chi2_k(0.975) are kept, and their covariance is scaled by delta / P(chi2_(k+2) <=
    chi2_k(delta)), delta their share (Croux & Haesbroeck 1999)."""
    return _reweighted(_columns(X), subset)


def _reweighted(XT, subset):
    """:func:`reweighted` of the points XT (k, n) as columns."""
    k, n = XT.shape
    loc, cov = _mean_cov_t(XT[:, subset])
    d2 = _mahalanobis(XT, loc, cov)
    if d2 is None:           # exact fit: the subset's own estimate
        return loc, cov, np.isin(np.arange(n), subset)
    # the consistency factor scales every squared distance alike
    d2 *= chi2_ppf(0.5, k) / np.median(d2)
    keep = d2 < chi2_ppf(CRIT, k)
    loc, cov = _mean_cov_t(XT[:, keep])
    return loc, cov * trim_factor(keep.sum() / n, k), keep


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


def _random_starts(S0, count, rng):
    """(loc, cov) of ``count`` random (k+1)-subsets of the rows S0, a singular one grown by
    random rows as FastMCD does (dropped if that takes every row)."""
    m, k = S0.shape
    # k + 1 distinct rows per start: the first k + 1 of a random order (all starts at once; as
    # sorted indices, by a selection and a comparison: argpartition took 3 ms at 500 x 300)
    starts = _nearest(rng.random((count, m)), k + 1)
    loc, cov = _batch_mean_cov(S0[starts])
    flat = ~_regular(cov)[1]
    for b in np.flatnonzero(flat):
        st = _start(S0, starts[b], rng)
        if st is not None:
            loc[b], cov[b] = st
            flat[b] = False
    return loc[~flat], cov[~flat]


def _part_starts(S0, parts, count, rng, work=None):
    """([_random_starts(S0[rows], count, rng) for rows in parts], inverses), with the same
    draws and the same bits, in one batch when the parts are of one size and no start is
    singular (the usual case: then every draw is one uniform matrix per part, in the parts'
    order, and one matrix of all of them is the same stream; ``inverses`` (g, count, k, k):
    the starts' inverse covariances, which the regularity test made, for the first C-step:
    :func:`_two_csteps_parts`); otherwise part by part from the same state (``inverses`` None).
    ``work``: a Scratch for the uniform draws and their selection (slots "draws" and "select";
    the same numbers)."""
    g, size = len(parts), parts[0].size
    if g > 1 and all(rows.size == size for rows in parts):
        state = rng.bit_generator.state
        k = S0.shape[1]
        shape = (g * count, size)
        draws = rng.random(shape) if work is None else rng.random(out=work.take("draws", shape, np.float64))
        order = _nearest(draws, k + 1, work)
        P = S0[np.stack(parts)]                                    # (g, size, k)
        loc, cov = _batch_mean_cov(P[np.repeat(np.arange(g), count)[:, None], order])
        _, regular, inverse = _regular(cov)
        if regular.all():
            return (list(zip(loc.reshape(g, count, k), cov.reshape(g, count, k, k))),
                    inverse.reshape(g, count, k, k))
        rng.bit_generator.state = state
    return [_random_starts(S0[rows], count, rng) for rows in parts], None


class _Features:
    """The quadratic features (x_i x_j for i <= j, x_i, 1) of m points (m, k), or of g groups
    of m points (g, m, k), for the distances of many (loc, cov) pairs and the moments of many
    subsets, each one product (per group)."""

    def __init__(self, P):
        k = P.shape[-1]
        self.k = k
        self.iu, self.ju = np.triu_indices(k)
        q = self.iu.size
        self.F = np.empty((*P.shape[:-1], q + k + 1))
        np.multiply(P[..., self.iu], P[..., self.ju], out=self.F[..., :q])
        self.F[..., q:q + k] = P
        self.F[..., -1] = 1.0
        self.pos = np.empty((k, k), dtype=np.intp)           # (i, j) -> its column
        self.pos[self.iu, self.ju] = self.pos[self.ju, self.iu] = np.arange(q)
        self.twice = np.where(self.iu == self.ju, 1.0, 2.0)

    def d2(self, loc, A, out=None):
        """Squared Mahalanobis distances (b, m) of the points to b (loc, cov) pairs, given the
        inverses A (b, k, k) of the covariances ((g, b, m) from (g, b, k) and (g, b, k, k)
        for groups); in ``out`` when given."""
        Al = np.matmul(A, loc[..., None])[..., 0]
        W = np.concatenate([A[..., self.iu, self.ju] * self.twice, -2.0 * Al,
                            np.einsum("...k,...k->...", Al, loc)[..., None]], axis=-1)
        return np.matmul(W, np.swapaxes(self.F, -1, -2), out=out)

    def moments(self, M, size):
        """Means (b, k) and ML covariances (b, k, k) of the subsets marked 1.0 in M (b, m)
        (with a leading group axis for groups)."""
        mom = M @ self.F
        mom /= size
        q = self.iu.size
        loc = mom[..., q:q + self.k]
        return loc, mom[..., self.pos] - loc[..., :, None] * loc[..., None, :]


def _two_csteps(feat, loc, cov, hs):
    """Two C-steps of every (loc, cov) pair on the points of ``feat``, all at once: (loc, cov,
    log det, masks of the subsets), candidates whose h-subset is singular (an exact fit on
    these points) dropped."""
    M, A, ld = None, np.linalg.inv(cov), None
    for _ in range(2):
        M = nearest_mask(feat.d2(loc, A), hs).astype(np.float64)
        loc, cov = feat.moments(M, hs)
        ld, keep, A = _regular(cov)
        loc, cov, M, ld, A = loc[keep], cov[keep], M[keep], ld[keep], A[keep]
        if loc.shape[0] == 0:
            break
    return loc, cov, ld, M


def _two_csteps_parts(P0, starts, hp, inverses=None, work=None):
    """:func:`_two_csteps` of each part's starts on its own points, the g parts (g, m, k) of
    one size at once (one product per step for all: the parts' many small arrays cost more
    in calls than in arithmetic): [(loc, cov, log det)] per part, singular ones dropped.
    ``inverses``: the starts' inverse covariances (g, count, k, k) when every part has
    ``count`` starts (:func:`_part_starts`: its regularity test made them; inverting them
    again here took 0.2 ms for 500 5 x 5 matrices). ``work``: a Scratch for the distances, their
    selection and the subsets' masks (slots "d2", "select", "mask"; the same numbers)."""
    g, m, k = P0.shape
    counts = [st[0].shape[0] for st in starts]
    c = max(counts)
    if c == 0:
        return [(st[0], st[1], np.zeros(0)) for st in starts]
    loc = np.zeros((g, c, k))
    cov = np.broadcast_to(np.eye(k), (g, c, k, k)).copy()
    valid = np.zeros((g, c), bool)
    for p, (lp, cp) in enumerate(starts):
        loc[p, :counts[p]], cov[p, :counts[p]], valid[p, :counts[p]] = lp, cp, True
    feat = _Features(P0)
    A = inverses if inverses is not None and min(counts) == c else np.linalg.inv(cov)
    ld = None
    for _ in range(2):
        if work is None:
            d2 = feat.d2(loc, A).reshape(g * c, -1)
            M = nearest_mask(d2, hp).astype(np.float64).reshape(g, c, -1)
        else:
            d2 = feat.d2(loc, A, out=work.take("d2", (g, c, m), np.float64)).reshape(g * c, -1)
            M = work.take("mask", (g, c, m), np.float64)
            np.copyto(M.reshape(g * c, -1), nearest_mask(d2, hp, work))
        loc, cov = feat.moments(M, hp)
        ld, keep, A = _regular(cov.reshape(g * c, k, k))
        valid &= keep.reshape(g, c)
        ld, A = ld.reshape(g, c), A.reshape(g, c, k, k)
    return [(loc[p][valid[p]], cov[p][valid[p]], ld[p][valid[p]]) for p in range(g)]


def _regular(cov):
    """For covariances (b, k, k): their log determinants, whether each is regular (smallest
    eigenvalue above 1e-12 times the largest) and their inverses. The eigenvalues (the cost
    of this step in batches of small matrices) only where the inverse cannot tell: the
    smallest eigenvalue is at least 1 / |inverse|_F and the largest at most the trace."""
    ld, keep, A = _cholesky_inverse(cov) if cov.shape[0] >= _CHOLESKY_BATCH else (None, None, None)
    if ld is None:
        sign, ld = np.linalg.slogdet(cov)
        keep = sign > 0
        A = np.zeros_like(cov)
        try:
            A[keep] = np.linalg.inv(cov[keep])
        except np.linalg.LinAlgError:
            keep[:] = False
    unsure = ~keep | ~(1e-12 * np.einsum("bii->b", cov) * np.sqrt(np.einsum("bij,bij->b", A, A)) < 1.0)
    if unsure.any():
        w = np.linalg.eigvalsh(cov[unsure])
        keep[unsure] = w[:, 0] > 1e-12 * np.maximum(w[:, -1], 1e-300)
        redo = np.flatnonzero(unsure)[keep[unsure]]
        if redo.size:
            A[redo] = np.linalg.inv(cov[redo])
            ld[redo] = np.log(w[keep[unsure]]).sum(axis=1)
    return ld, keep, A


# Fewest covariances for which _regular takes their inverses and log determinants from one
# batched Cholesky factorisation (below that, numpy's LU routines' per-call cost is the smaller).
_CHOLESKY_BATCH = 100


def _cholesky_inverse(cov):
    """(log determinants, all True, inverses) of the covariances (b, k, k) from their Cholesky
    factors L (cov = L Lᵀ): log det = 2 sum log diag L, inverse = L⁻ᵀ L⁻¹ with L⁻¹ by
    forward substitution, a row at a time for all b at once. For 500 5 x 5 matrices 0.17 ms
    against 0.27 ms for numpy's slogdet and inv (LU, matrix by matrix); the same numbers to
    rounding (5e-16 relative). (None, None, None) when some matrix is not numerically positive
    definite: the caller's LU route then decides each."""
    try:
        L = np.linalg.cholesky(cov)
    except np.linalg.LinAlgError:
        return None, None, None
    k = cov.shape[-1]
    diag = np.diagonal(L, axis1=-2, axis2=-1)
    with np.errstate(divide="ignore"):      # (a zero pivot: log det -inf, caught by the bound)
        ld = 2.0 * np.log(diag).sum(axis=-1)
        inv_diag = 1.0 / diag
    Li = np.zeros_like(L)
    for i in range(k):
        Li[:, i, i] = inv_diag[:, i]
        if i:
            Li[:, i, :i] = np.einsum("bp,bpj->bj", L[:, i, :i], Li[:, :i, :i])
            Li[:, i, :i] *= -inv_diag[:, i, None]
    return ld, np.ones(cov.shape[0], bool), np.matmul(Li.transpose(0, 2, 1), Li)


def fast_mcd(X, h: int, rng, **settings):
    """FastMCD's search (Rousseeuw & Van Driessen 1999): ``n_starts`` random (k+1)-subsets with
    two C-steps each (all at once, as arrays), the ``n_best`` lowest determinants iterated to
    convergence. Beyond 2 ``part`` rows the starts are shared among up to five disjoint parts of
    ``part`` rows of a random sample of ``sample`` rows, the best ``n_best`` of each part get
    two C-steps on the whole sample (the paper's nested scheme), and only the best subset of the
    sample is carried to all rows (``settings`` replace those of ``_FAST``). Returns (subset,
    log det), or (None, inf) when no start gives a subset with a positive determinant."""
    XT = _columns(X)
    done, a, b = _search(XT, h, rng, **{**_FAST, **settings})
    return (a, b) if done else _converge(XT, a[None, :])[0]


def _search(XT, h, rng, n_starts, n_best, sample, part, work=None):
    """fast_mcd up to its last stage on the points XT (k, n) as columns: (True, subset, log
    det) when that is the answer, or (False, the h points to concentrate from, None).
    ``work``: a Scratch for the parts' largest temporaries (:func:`mcd_subspace`)."""
    k, n = XT.shape
    ST = XT if n <= sample else XT[:, rng.choice(n, sample, replace=False)]
    S = ST.T
    m = S.shape[0]
    S0 = S - np.median(S, axis=0)
    hs = min(m, max(k + 1, int(np.ceil(h * m / n))))
    groups = max(1, min(5, m // part)) if m > 2 * part else 1
    feat = _Features(S0)
    if groups == 1:
        loc, cov, ld, M = _two_csteps(feat, *_random_starts(S0, n_starts, rng), hs)
    else:
        parts = np.array_split(rng.permutation(m), groups)
        # (every part's starts drawn first, in the parts' order: the C-steps draw nothing)
        starts, inverses = _part_starts(S0, parts, n_starts // groups, rng, work)
        cands = []
        if len({rows.size for rows in parts}) == 1:
            hp = min(parts[0].size, max(k + 1, int(np.ceil(h * parts[0].size / n))))
            for lp, cp, ldp in _two_csteps_parts(S0[np.stack(parts)], starts, hp, inverses, work):
                top = np.argsort(ldp)[:n_best]
                cands.append((lp[top], cp[top]))
        else:
            for rows, (l0, c0) in zip(parts, starts):
                hp = min(rows.size, max(k + 1, int(np.ceil(h * rows.size / n))))
                lp, cp, ldp, _ = _two_csteps(_Features(S0[rows]), l0, c0, hp)
                top = np.argsort(ldp)[:n_best]
                cands.append((lp[top], cp[top]))
        loc = np.concatenate([c[0] for c in cands])
        if loc.shape[0] == 0:
            return True, None, np.inf
        cov = np.concatenate([c[1] for c in cands])
        loc, cov, ld, M = _two_csteps(feat, loc, cov, hs)
    if loc.shape[0] == 0:
        return True, None, np.inf
    top = np.argsort(ld)[:n_best]
    subsets = np.stack([np.flatnonzero(M[b]) for b in top])
    best, best_ld = None, np.inf
    for sub_b, ld_b in _converge(np.ascontiguousarray(ST), subsets):
        if ld_b < best_ld:
            best, best_ld = sub_b, ld_b
    if ST is XT or best is None:
        return True, best, best_ld
    # only the best subset of the sample is carried to all rows (FastMCD's last stage)
    d2 = _mahalanobis(XT, *_mean_cov_t(ST[:, best]))
    if d2 is None:
        return True, None, np.inf
    return False, np.argpartition(d2, h - 1)[:h], None


def mcd_subspace(X2T, eigenvalues, h: int, rng, search: bool = True, work=None):
    """The MCD stage of ROBPCA on the projected points X2T (k, n) (as columns, see
    :func:`_columns`), centred on the reweighted centre and rotated to the eigenvectors of the
    reweighted covariance (its ``eigenvalues``): C-steps from the h points nearest in that
    metric (the paper's start), and, with ``search``, FastMCD from random subsets
    (:func:`fast_mcd`); the subset of smaller determinant is reweighted (:func:`reweighted`).
    Returns (location, covariance, weights).

    ``work``: a Scratch (robustcore.subspace._robpca_steps) for the search's largest
    temporaries, the parts' uniform draws, distances, selections and masks (about 5 MB at
    10,000 rows), the same numbers either way: cut from memory the fit touched already (the
    rows' float32 copy, robpca._stages), a process's first fit no longer faults in fresh
    pages for them (about 300-500 small faults, 1 ms, at 10,000 x 200)."""
    k, n = X2T.shape
    ev = np.maximum(np.asarray(eigenvalues[:k], dtype=np.float64), 1e-300)
    W = X2T / np.sqrt(ev)[:, None]
    start = np.argpartition(np.einsum("kn,kn->n", W, W), h - 1)[:h]
    del W
    if not (search and h < n):
        return _reweighted(X2T, _converge(X2T, start[None, :])[0][0])
    done, other, ld_other = _search(X2T, h, rng, **_FAST, work=work)
    if done:
        (subset, ld), = _converge(X2T, start[None, :])
    else:
        (subset, ld), (other, ld_other) = _converge(X2T, np.stack([start, other]))
    # (FastMCD's subset is not wanted when the paper's start ends in an exact fit)
    if other is not None and np.isfinite(ld) and ld_other < ld:
        subset = other
    return _reweighted(X2T, subset)
