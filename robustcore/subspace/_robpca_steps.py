"""The numerical stages of ROBPCA (Hubert, Rousseeuw & Vanden Branden, Technometrics 47, 2005),
each a function of plain arrays: the univariate MCD, the Stahel-Donoho outlyingness through
pairs of points, the Wilson-Hilferty cut-off of orthogonal distances and the choice of k (the
MCD of the projected points, with its reweighting step, is in :mod:`._robpca_mcd`).
robustcore.subspace.robpca strings them together.

Every MCD here is made consistent at the normal model twice, as in the MCD literature
(Rousseeuw & Leroy 1987; Croux & Haesbroeck 1999; Hubert & Debruyne 2009): the raw estimate
of the h-subset, and the reweighted estimate of the points inside its 97.5 % ellipsoid, each
divided by the share of a normal's spread that such a trimmed set keeps. Without it the score
cut-off sqrt(chi2_k(0.975)) would flag more than the 2.5 % of clean normal samples it states.
"""
from __future__ import annotations

import functools
import math
import threading

import numpy as np
from scipy import special

from ._robpca_params import CRIT
from ._robpca_rows import CentredRows, Lanes, abs_max, dense, huge_empty, no_report, single_rows

__all__ = ["unimcd", "outlyingness", "od_cutoff", "choose_k", "h_size", "pair_directions", "chi2_ppf",
           "trim_factor"]

# Directions through pairs of points (the paper's 250: all pairs when there are fewer).
MAX_DIRECTIONS = 250
# Entries of the n x directions projection matrix made at a time: 2 MB in float32, one huge
# page of fresh memory (a fresh page's first touch cost up to 1.7 ms a MB on the development
# VM, whose host takes freed memory back: benchmarks/results_robpca.md, round 11); 8 MB blocks
# of 209 directions at 10,000 x 200 before. (The float32 products' bits depend on the split,
# by about 3e-7 of the largest; no fit's answer changed on 264 arrays, round 11.)
_BLOCK_ENTRIES = 1 << 19
# Entries of the projections whose univariate MCDs are computed at a time: the sorted copy and
# the window sums of a chunk stay in cache (one chunk of the whole block took 1.5x as long at
# 10,000 x 200, most of it page faults of its fresh 16 MB arrays).
_CHUNK_ENTRIES = 1 << 17
# Fewest directions a chunk must hold for the outlyingness to run on two threads: with fewer,
# the MCDs' Python steps (which hold the GIL) outweigh their numpy work, and a second thread
# adds hand-offs only (50,000 x 10, 2 directions a chunk: the same wall time, 40 % more CPU;
# 10,000 x 200, 9-13 a chunk: 24 -> 17-19 ms of wall; benchmarks/results_robpca.md, round 12).
_THREADED_CHUNK = 8
# Smallest MCD scale, relative to the largest |projection|, the float32 outlyingness resolves.
_SINGLE_FLOOR = 1e-4
# Largest |entry| for which float32 holds the projections (its range is 1e-38 to 3e38; the
# rows' own rounding is 1e-16 of this): beyond it the outlyingness is float64.
_SINGLE_RANGE = (1e-25, 1e25)
_CHI2_1_CRIT = 2.0 * float(special.gammaincinv(0.5, CRIT))      # chi2_1(CRIT)
# The standard normal's CRIT quantile, by the special function scipy.stats.norm.ppf calls (the
# same number; the stats wrapper cost 29 us a call, twice a fit)
_NORMAL_CRIT = float(special.ndtri(CRIT))


def chi2_ppf(p, df):
    """scipy.stats.chi2.ppf for p in [0, 1], by the special function it calls (the stats
    wrapper costs about 0.1 ms a call, paid per block of the outlyingness)."""
    return 2.0 * special.gammaincinv(df / 2.0, p)


def trim_factor(delta, k: int):
    """Consistency factor of a covariance of the share ``delta`` of a k-variate normal sample
    inside its chi2_k(delta) ellipsoid: delta / P(chi2_(k+2) <= chi2_k(delta)) (Croux &
    Haesbroeck 1999); 1 where delta is 1 (nothing trimmed) or 0 (nothing kept)."""
    delta = np.asarray(delta, dtype=np.float64)
    # (k = 1, every univariate MCD's: chi2_1's quantile is 2 erfinv(delta)², the same to 2e-14
    # and 100x faster than the incomplete gamma's inverse: 4 us against 0.43 ms for the 250
    # directions of an outlyingness)
    q = 2.0 * np.square(special.erfinv(delta)) if k == 1 else chi2_ppf(delta, k)
    inner = special.chdtr(k + 2, q)
    return np.divide(delta, inner, out=np.ones_like(delta), where=(delta < 1.0) & (inner > 0.0))


@functools.lru_cache(maxsize=64)
def _trim_factor_1(h: int, n: int) -> float:
    """trim_factor(h / n, 1), the raw univariate MCD's factor: the same for every direction
    (its special functions cost more than the rest of a direction's scale)."""
    return float(trim_factor(h / n, 1))


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


class Scratch:
    """Arrays reused from one call to the next (slot -> a flat buffer grown as needed), for a
    loop of calls on blocks of one size: a fresh array costs its page faults every time the
    allocator hands back memory it had returned to the system (at 10,000 x 200 the
    outlyingness's chunks touched 3 MB of fresh memory; each MB costs 0.3-1.5 ms of CPU in
    faults on the development machine, benchmarks/results_robpca.md).

    ``arena``: bytes of one block, 2 MB-aligned (``huge_empty``), that the slots are cut from
    while they fit, so that the chunks' 2.8 MB at 10,000 x 200 fault as two huge pages rather
    than some 700 small ones; a slot that does not fit gets an array of its own. Or a uint8
    array to cut them from: memory touched already (``CentredRows.spare_bytes``)."""

    def __init__(self, arena: int | np.ndarray = 0):
        self._bufs = {}
        if isinstance(arena, np.ndarray):
            self._arena = arena
        else:
            self._arena = huge_empty((arena,), np.uint8) if arena > 0 else None
        self._used = 0

    def take(self, slot, shape, dtype):
        """A C-contiguous array of ``shape`` and ``dtype``, its contents undefined (valid until
        the next ``take`` of the same slot)."""
        dtype = np.dtype(dtype)
        # (math.prod: np.prod of a tuple makes an array first, 5 us a call, 100 calls a fit)
        size = math.prod(shape) * dtype.itemsize
        buf = self._bufs.get(slot)
        if buf is None or buf.size < size:
            buf = self._bufs[slot] = self._new(size)
        return buf[:size].view(dtype).reshape(shape)

    def _new(self, size):
        start = -(-self._used // 64) * 64          # (cache-line aligned, as numpy's own)
        if self._arena is not None and start + size <= self._arena.size:
            self._used = start + size
            return self._arena[start:start + size]
        return np.empty(size, dtype=np.uint8)


def unimcd_scratch(m: int, n: int, h: int, dtype) -> int:
    """Bytes of the Scratch slots unimcd_rows takes for ``m`` rows of ``n`` values of
    ``dtype`` (an arena of this size holds them all)."""
    item = np.dtype(dtype).itemsize
    t = max(n - h, 0)
    wide = 0 if item == 8 else m * n * 8            # (float64 values sort in place: no slot 1)
    return m * n * item + wide + m * t * 16 + m * (t + 1) * 24 + 5 * 64


def unimcd_rows(R, h: int, work: Scratch | None = None):
    """Univariate reweighted MCD of every ROW of ``R`` (m, n): (location (m,), scale (m,));
    ``work``: a Scratch for the temporaries (the same numbers either way).

    The raw estimate is the mean and variance of the h consecutive order statistics with the
    least variance (Rousseeuw & Leroy 1987, p. 171-172); the reweighted one those of the points
    whose squared standardized distance is below chi2_1(0.975), which in sorted order are again
    consecutive. Window i + 1 is window i less its first value plus the one after its end, so
    the sums of all n - h + 1 windows are the first window's plus running sums of those
    differences over the n - h values of each tail (the first window's sum of squares, the
    same for all, is left out of the search). Values are taken about the median, so that the
    difference of two large sums does not cancel the variance of a row far from 0."""
    m, n = R.shape
    if h >= n:
        return R.mean(axis=1), R.std(axis=1, ddof=1) if n > 1 else np.zeros(m)
    t = n - h
    # (one sort of each row measured faster than numpy's partition at the two ranks plus
    # sorts of the two tails: 122 against 188 ms for 40 x 50,000)
    work = work or Scratch()
    Q = work.take(0, R.shape, R.dtype)
    Q[...] = R
    Q.sort(axis=1)                                  # (np.sort: a copy sorted in place, as here)
    centre = Q[:, n // 2].astype(np.float64)
    S = np.subtract(Q, centre[:, None], dtype=np.float64,
                    out=Q if Q.dtype == np.float64 else work.take(1, R.shape, np.float64))
    del Q
    low, high = S[:, :t], S[:, h:]
    # s1[:, i]: sum of window i = S[:, i:i + h]; s2[:, i]: its sum of squares less window 0's.
    # Both running sums in one cumsum, as the real and imaginary parts of complex numbers:
    # the same additions in the same order (so the same bits), two chains per step (a running
    # sum waits on its previous value; 0.85 of the time of two cumsums at 13 x 2,500)
    steps = work.take(2, (m, t), np.complex128)
    pair = steps.view(np.float64).reshape(m, t, 2)
    np.subtract(high, low, out=pair[:, :, 0])
    np.add(high, low, out=pair[:, :, 1])
    pair[:, :, 1] *= pair[:, :, 0]                  # high² - low²
    sums = work.take(3, (m, t + 1), np.complex128)
    np.cumsum(steps, axis=1, out=sums[:, 1:])
    both = sums.view(np.float64).reshape(m, t + 1, 2)
    s1, s2 = both[:, :, 0], both[:, :, 1]
    s1[:, 0] = S[:, :h].sum(axis=1)
    s2[:, 0] = 0.0
    s1[:, 1:] += s1[:, :1]
    # h x the window's variance, less window 0's sum of squares
    crit = np.square(s1, out=work.take(4, s1.shape, np.float64))
    crit /= -h
    crit += s2
    best = np.argmin(crit, axis=1)
    rows = np.arange(m)
    # the raw estimate from the best window's sums (values about the median: the window holds
    # it, so its mean is within its spread and the difference keeps its digits)
    loc = s1[rows, best] / h
    raw_var = (np.vecdot(S[:, :h], S[:, :h]) + s2[rows, best]) / h - loc * loc
    raw_var *= _trim_factor_1(h, n)
    var = np.zeros(m)
    cnt = np.zeros(m)
    cut = np.sqrt(_CHI2_1_CRIT * np.maximum(raw_var, 0.0))
    # (Python floats and the arrays' own methods in the loop: a numpy scalar's arithmetic and
    # the module functions' dispatch cost more than the sums at 10,000 values)
    below, above = (loc - cut).tolist(), (loc + cut).tolist()
    for i in np.flatnonzero(raw_var > 0.0).tolist():         # h equal values: an exact fit, scale 0
        row = S[i]
        # the reweighting keeps the values strictly inside (mu - cut, mu + cut)
        lo, hi = row.searchsorted(below[i], "right"), row.searchsorted(above[i], "left")
        if hi - lo < 2:
            continue
        kept = row[lo:hi]
        mu = float(kept.sum()) / kept.size
        loc[i] = mu
        var[i] = max(float(kept @ kept) / kept.size - mu * mu, 0.0)
        cnt[i] = kept.size
    scale = np.where(cnt > 0, np.sqrt(var * trim_factor(cnt / n, 1)), 0.0)
    loc += centre
    return loc, scale


def pair_directions(X, rng, max_directions: int = MAX_DIRECTIONS, size=None) -> np.ndarray:
    """Unit directions (m, r) through pairs of rows of ``X`` (n, r): every pair when there are
    at most ``max_directions`` of them, else that many pairs of distinct rows drawn with
    ``rng``; pairs of equal rows give no direction and are dropped (``size``: abs_max(X),
    when the caller has it)."""
    n = X.shape[0]
    if n * (n - 1) // 2 <= max_directions:
        i, j = np.triu_indices(n, 1)
    else:
        i = rng.integers(0, n, max_directions)
        j = (i + rng.integers(1, n, max_directions)) % n      # another row, uniformly
    B = X[i] - X[j]
    norm = np.linalg.norm(B, axis=1)
    keep = norm > 1e-12 * max(abs_max(X) if size is None else size, 1e-300)
    return B[keep] / norm[keep, None]


def outlyingness(X, h: int, rng, rep=None, single: bool = True) -> np.ndarray:
    """Stahel-Donoho outlyingness of every row of ``X`` (n, r; an array or
    robustcore.subspace._robpca_rows.CentredRows): the largest, over directions
    through pairs of points, of |projection - univariate MCD location| / MCD scale.
    Directions along which h points project onto one value (scale 0) are skipped: they say
    nothing about spread. ``rep`` (a robustcore._progress.Reporter) hears of every block.

    ``single``: the projections and their sorts in float32 (half the time of both at
    10,000 x 200; the window sums are float64). The outlyingness only ranks the rows to pick
    the h least outlying, and float32's relative error (about 1e-6 after the product) moves a
    row across that cut only when two rows' outlyingness agree to about that. When some
    direction's MCD scale is below ``_SINGLE_FLOOR`` of the largest projection, where
    float32 cannot tell a tiny spread from none, the whole computation is redone in float64,
    and rows whose largest |entry| is outside ``_SINGLE_RANGE`` are float64 throughout."""
    # the largest |entry| from the float32 copy when there is one (half the bytes to read;
    # an entry beyond float32's range becomes inf or 0 there, and fails the range test)
    with np.errstate(over="ignore"):    # an overflow is the range test's to catch, not an error
        X32, size = single_rows(X) if single else (None, 0.0)
    single = single and _SINGLE_RANGE[0] < size < _SINGLE_RANGE[1]
    if not single:
        _float64_only(X)
        X = dense(X)
        size, X32 = abs_max(X), None
    A = pair_directions(X, rng, size=size)
    if A.shape[0] == 0:
        return np.zeros(X.shape[0])
    # |projection| <= |row| <= size sqrt(r)
    big = max(size * np.sqrt(X.shape[1]), 1e-300)
    # (the rows' block buffers, memory a read touched already, as the MCDs' scratch)
    rows = X if isinstance(X, CentredRows) and X.spare_bytes() is not None else None
    lanes = X.lanes() if isinstance(X, CentredRows) else Lanes()
    if single:
        out = _outlyingness(X32, A.astype(np.float32), h, _SINGLE_FLOOR * big, rep, rows, lanes)
        if out is not None:
            return out
        rep = None      # (its fraction would start again; the redo is the rare case)
        _float64_only(X)
    return _outlyingness(dense(X), A, h, 1e-12 * big, rep, rows, lanes)


def _float64_only(X):
    """Where float32 cannot hold the rows (an entry out of its range) or resolve a direction's
    spread, no later stage uses their float32 copy either (CentredRows.scatter)."""
    if isinstance(X, CentredRows):
        X.rows32 = None


def _mcd_work(m: int, n: int, h: int, dtype, spare):
    """(chunk, Scratch) for the univariate MCDs of chunks of at most ``m`` rows of ``n`` values:
    the Scratch cut from ``spare`` (bytes touched already, or None) when chunks of at least half
    that many rows fit in it (each row's MCD is its own, so the chunk's size changes no number;
    at 10,000 x 200 a chunk of 9 rows fits the rows' 2 MB block buffer, 13 do not, and the
    2.8 MB arena of 13 was two fresh huge pages), else an arena of its own."""
    if spare is not None:
        fit = m
        while fit > 1 and unimcd_scratch(fit, n, h, dtype) > spare.size:
            fit -= 1
        if 2 * fit >= m and unimcd_scratch(fit, n, h, dtype) <= spare.size:
            return fit, Scratch(spare)
    return m, Scratch(unimcd_scratch(m, n, h, dtype))


class _Unresolved(Exception):
    """A float32 direction's MCD scale below the floor: the outlyingness is redone in float64."""


def _outlyingness(X, A, h: int, tiny: float, rep, rows=None, runner=None):
    """outlyingness over the directions A (m, r) in X's precision; directions whose scale is
    at most ``tiny`` are skipped, or, for float32, give None (the caller redoes it in float64)
    unless the scale is exactly 0. ``rows``: the CentredRows whose block buffers the chunks'
    MCDs may use (_mcd_work), or None.

    The blocks of directions run on the threads of ``runner`` (a ``_robpca_rows.Lanes``, by
    default a new one: two threads when the user's script leaves the process its cores, one
    under ``OPENBLAS_NUM_THREADS=1``; one whenever a chunk holds fewer than
    ``_THREADED_CHUNK`` directions), each thread keeping the largest values of the blocks it
    took: the same numbers on one thread or two (each direction's MCD is its own, and the
    maximum over directions is exact)."""
    n = X.shape[0]
    step = max(1, _BLOCK_ENTRIES // max(n, 1))
    m_chunk = min(max(1, _CHUNK_ENTRIES // max(n, 1)), A.shape[0])
    # (per thread, one buffer for every block of projections and one Scratch for every chunk's
    # MCD: the memory of one block is the next one's, already faulted in; each Scratch is cut
    # from a block buffer of the rows, the first the one their reads made, a second kept by
    # the rows for the helper's share of their later reads)
    lent, lock = [], threading.Lock()

    def start():
        spare = None
        if rows is not None:
            with lock:
                buf = rows._take_buffer(rows.rows_per_block())
                lent.append(buf)
            spare = buf.reshape(-1).view(np.uint8)
        Ybuf = huge_empty((min(step, A.shape[0]), n), X.dtype)
        return (np.zeros(n), Ybuf, *_mcd_work(m_chunk, n, h, X.dtype, spare))

    def block(state, i):
        out, Ybuf, chunk, work = state
        As = A[i * step:(i + 1) * step]
        Y = np.matmul(As, X.T, out=Ybuf[:As.shape[0]])          # (directions, n): rows contiguous
        for c in range(0, Y.shape[0], chunk):
            _chunk_outlyingness(Y[c:c + chunk], h, tiny, work, out)

    if m_chunk < _THREADED_CHUNK:
        runner = Lanes(1)
    try:
        states = (runner or Lanes()).run(start, block, -(-A.shape[0] // step), rep or no_report, "outlyingness")
    except _Unresolved:
        return None
    finally:
        for buf in lent:
            rows._give_buffer(buf)
    out = states[0][0]
    for state in states[1:]:
        np.maximum(out, state[0], out=out)
    return out


def _chunk_outlyingness(Z, h, tiny, work, out):
    """Fold the outlyingness of the projections Z (directions, n), overwritten, into ``out``
    (n,): the largest |z - MCD location| / MCD scale over its directions (_outlyingness)."""
    loc, scale = unimcd_rows(Z, h, work)
    ok = scale > tiny
    if not ok.all():
        if Z.dtype != np.float64 and np.any(scale[~ok] > 0.0):
            raise _Unresolved()
        Z, loc, scale = Z[ok], loc[ok], scale[ok]
    if Z.shape[0]:
        Z -= loc[:, None].astype(Z.dtype)
        Z /= scale[:, None].astype(Z.dtype)
        np.abs(Z, out=Z)
        np.maximum(out, Z.max(axis=0), out=out)


def od_cutoff(od, h: int) -> float:
    """The cut-off of orthogonal distances: OD^(2/3) is about normal (Wilson-Hilferty), so
    (mu + sigma z_0.975)^(3/2) with mu and sigma the univariate MCD of OD^(2/3) over h."""
    loc, scale = unimcd(np.asarray(od, dtype=np.float64) ** (2.0 / 3.0), h)
    return float(max(loc + scale * _NORMAL_CRIT, 0.0) ** 1.5)


def choose_k(eigenvalues, kmax: int, share: float = 0.8, ratio: float = 1e-3, total=None) -> int:
    """The paper's rule for k from the eigenvalues (descending) of the h least outlying points:
    the smallest k whose components explain at least ``share`` of their total variance, among
    those whose eigenvalue is at least ``ratio`` times the first; at most ``kmax``. ``total``:
    the sum of all the eigenvalues (the covariance's trace) when only the leading ones (at
    least ``kmax``) are given."""
    ev = np.asarray(eigenvalues, dtype=np.float64)
    usable = max(1, int(np.sum(ev >= ratio * ev[0])))
    cap = max(1, min(kmax, usable))
    cum = np.cumsum(ev[:cap]) / (ev.sum() if total is None else total)
    reach = np.flatnonzero(cum >= share)
    return int(reach[0] + 1) if reach.size else cap
