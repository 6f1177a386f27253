"""Accumulators the fits feed block by block (``robustcore._passes.Rows.reduce``).

Each has ``add(B, start, *extra)`` for one block of rows (float64, ``start`` its first row's
index) and ``merge(other)``: the same code accumulates in memory and, out of core, inside each
Dask block before the blocks are merged in a tree.

* :class:`Moments` -- count, column means, the scatter matrix (or the columns' sums of squares),
  column minima and maxima, the non-finite entries, and optionally Σ x̂x̂ᵀ of the rows scaled to
  unit length (Coherence Pursuit's matrix when no scaling or centring comes first). Blocks merge
  by the pairwise update of Chan, Golub & LeVeque (1979), stable in one pass. A block whose
  largest |value| lies outside [2^-400, 2^400] is first multiplied by a power of two (exact), and
  the sums carry that exponent: data near 1e-300 or 1e300 neither underflow nor overflow.
* :class:`RFactor` -- the triangular factor of a QR of the (scaled, centred) rows, merged by a
  QR of stacked factors (TSQR): singular values to the table's own precision.
* :class:`RowGram` -- Σ yyᵀ of some rows after a per-row transform (selected, normalised rows).
"""
from __future__ import annotations

import math
import threading

import numpy as np

from scipy.linalg.blas import dsyrk as _dsyrk

from ._passes import gil_free, scratch

__all__ = ["Moments", "RFactor", "RowGram", "syrk_lower", "gram_add", "symmetric", "column_min_max",
           "Sampled"]

# Blocks whose largest |value| is outside [1 / _POW2_RANGE, _POW2_RANGE] are rescaled first.
_POW2_RANGE = 2.0 ** 400
# Rows folded into one long row by column_min_max.
_FOLD = 32
# Moments' one-sweep path (Moments._add_ordinary): column sums of squares within
# [rows x _ORDINARY_LOW, _ORDINARY_TOP] (no square overflows: every |x| <= 2^400), at most
# _ORDINARY_CANCEL x the scatter.
_ORDINARY_LOW = 2.0 ** -800
_ORDINARY_TOP = 2.0 ** 800
_ORDINARY_CANCEL = 4.0


def column_min_max(B):
    """(minimum, maximum) of every column of B, as B.min(axis=0) and B.max(axis=0) give them
    (NaN included), faster: numpy reduces over axis 0 one short row (d values) at a
    time, so ``_FOLD`` rows are first viewed as one long row and reduced together."""
    b, d = B.shape
    m = b - b % _FOLD
    if m == 0 or not B.flags.c_contiguous:
        return B.min(axis=0), B.max(axis=0)
    W = B[:m].reshape(m // _FOLD, _FOLD * d)
    lo = W.min(axis=0).reshape(_FOLD, d).min(axis=0)
    hi = W.max(axis=0).reshape(_FOLD, d).max(axis=0)
    if m < b:
        np.minimum(lo, B[m:].min(axis=0), out=lo)
        np.maximum(hi, B[m:].max(axis=0), out=hi)
    return lo, hi


def syrk_lower(B, G=None):
    """G + BᵀB in the lower triangle of a Fortran-ordered (d, d) G (a new one when None; callers
    read the lower triangle). Out of core by numpy's BLAS (its syrk for BᵀB, both triangles),
    which releases the GIL (:func:`robustcore._passes.gil_free`), else scipy's dsyrk in place."""
    d = B.shape[1]
    if G is None:
        G = np.zeros((d, d), order="F")
    if B.shape[0] == 0:
        return G
    if not B.flags.c_contiguous:
        B = np.ascontiguousarray(B)
    if gil_free():
        G += B.T @ B
        return G
    # B C-ordered: B.T is Fortran-ordered and dsyrk with trans=0 forms (Bᵀ)(Bᵀ)ᵀ = BᵀB
    return _dsyrk(1.0, B.T, beta=1.0, c=G, trans=0, lower=1, overwrite_c=1)


def scale_rows(Y, inv, out):
    """Rows of Y times ``inv`` (one factor a row) into ``out``; rows whose factor is 0 come out
    +0.0 (what the einsum this replaced gave; a plain product gives -0.0 for negative entries,
    which no result reads but would change stored bits of a Gram over every row). numpy's
    broadcast multiply: 0.52 s per 30M x 50 rows against einsum's 0.62 s on this machine, the
    same products."""
    np.multiply(Y, inv[:, None], out=out)
    zero = inv == 0
    if zero.any():
        out[zero] = 0.0
    return out


def gram_add(B, G=None):
    """G + BᵀB, both triangles, by numpy's BLAS (its syrk for BᵀB), for loops that call no
    scipy BLAS: a loop that alternates between the two libraries' thread pools stalls when they
    have several threads each."""
    P = B.T @ B
    if G is None:
        return P
    G += P
    return G


def symmetric(G):
    """The full symmetric matrix from a lower triangle."""
    L = np.tril(G)
    return L + np.tril(L, -1).T


def _pow2_exponent(top: float) -> int:
    """The exponent e with top * 2^-e in [0.5, 1), or 0 when top needs no rescaling."""
    if top == 0.0 or 1.0 / _POW2_RANGE <= top <= _POW2_RANGE or not math.isfinite(top):
        return 0
    return math.frexp(top)[1]


def _pow2_exponents(tops) -> np.ndarray:
    """_pow2_exponent of each entry (an int array)."""
    tops = np.asarray(tops, dtype=np.float64)
    out = np.frexp(tops)[1].astype(np.int64)
    fine = (tops == 0) | ((tops >= 1.0 / _POW2_RANGE) & (tops <= _POW2_RANGE)) | ~np.isfinite(tops)
    out[fine] = 0
    return out


def _ordinary(B, s1, s2):
    """``(mean, scatter diagonal, zero columns)`` of block B from its column sums ``s1`` and sums
    of squares ``s2`` when its values are ordinary (the rule of :meth:`Moments._add_ordinary`),
    else None."""
    b = B.shape[0]
    if not (np.all(np.isfinite(s1)) and np.all(np.isfinite(s2))) or s2.max() > _ORDINARY_TOP:
        return None
    m = s1 / b
    M2 = s2 - s1 * m
    zero = s2 == 0.0
    ordinary = (s2 >= b * _ORDINARY_LOW) & (s2 <= _ORDINARY_CANCEL * M2)
    if not np.all(ordinary | zero):
        return None
    if zero.any() and B[:, zero].any():      # squares that underflowed are not zeros
        return None
    return m, M2, zero


class Moments:
    """See the module doc. ``shift`` (d,): a point near the data (e.g. the mean of its first
    rows), subtracted from every row before anything is summed, so that a column far from zero
    (1e6 +- 1e-3) keeps its digits: the sums are of x - shift, and the mean, shift + their
    average, is rounded once (Chan's merges of the means themselves lost 1e-6 of such a column's
    spread). ``scatter``: the full scatter matrix (else only its diagonal); ``gram``: also Σ x̂x̂ᵀ
    over the rows of nonzero length x (unshifted), with their largest and smallest lengths
    (``top_norm``, ``low_norm``, in true units); ``row_sq`` (n,), with ``gram`` in memory: every
    row's |x|², as ``np.einsum("ij,ij->i", B, B)`` makes it, written there for a later pass
    (``row_sq_ok`` False when a block was rescaled first: then the array is not to be read).

    Results: ``n``, ``S`` = Σ (x - shift) and ``M2`` (scatter about the mean), column j in units
    of 2^e_j (``e`` (d,) the columns' exponents: entry (j, k) of M2 in units of 2^(e_j + e_k)),
    ``lo`` and ``hi`` (bounds on the column minima and maxima, true units: exact over the blocks
    the two-pass path took, -/+ sqrt(Σx²) over those the one-sweep path took, see
    ``_add_ordinary``; ``fast_blocks`` counts the latter),
    ``bad`` (number of NaN or infinite entries) and ``first_bad`` ((row, column, value) of the
    first of them)."""

    def __init__(self, d: int, shift, scatter: bool = True, gram: bool = False, row_sq=None):
        self.d, self.scatter, self.gram = d, scatter, gram
        self.row_sq, self.row_sq_ok, self._start = row_sq, row_sq is not None, 0
        self.K = np.asarray(shift, dtype=np.float64)
        self.n, self.e = 0, np.zeros(d, dtype=np.int64)
        self.S = np.zeros(d)
        self.M2 = np.zeros((d, d), order="F") if scatter else np.zeros(d)
        self.lo = np.full(d, np.inf)
        self.hi = np.full(d, -np.inf)
        self.bad, self.first_bad = 0, None
        if gram:
            self.G = np.zeros((d, d), order="F")
            self.top_norm, self.low_norm = 0.0, math.inf
        self.fast_blocks = 0

    # -- one block --------------------------------------------------------------------------
    # B may come as float32 (robustcore._passes): the one-sweep path converts it as it shifts it
    converts_float32 = True

    def add(self, B, start):
        b, d = B.shape
        if b == 0:
            return
        self._start = start
        if self.scatter and self._add_ordinary_scatter(B, b):
            self.fast_blocks += 1
            return
        B = np.asarray(B, dtype=np.float64)
        if not self.scatter and self._add_ordinary(B, b):
            self.fast_blocks += 1
            return
        lo, hi = column_min_max(B)
        if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))):
            self._record_bad(B, start)
            return
        np.minimum(self.lo, lo, out=self.lo)
        np.maximum(self.hi, hi, out=self.hi)
        # max |x - K| per column, from halves: hi - K itself overflows for values near
        # float64's largest of both signs (the exponent of the half is one less).
        e = _pow2_exponents(np.maximum(hi * 0.5 - self.K * 0.5, self.K * 0.5 - lo * 0.5))
        e = np.where(e != 0, e + 1, 0)
        # every product of this loop on numpy's BLAS (gram_add)
        ones = _ones(b)
        if e.any():
            # both scaled by 2^-e before the subtraction (exact): nothing overflows or underflows
            Bk = np.subtract(np.ldexp(B, -e), np.ldexp(self.K, -e), out=scratch(b, d, 1))
            mb = (ones @ Bk) / b
            Bc = np.subtract(Bk, mb, out=scratch(b, d, 2))
        else:
            # centred at the block's rounded mean m directly (one sweep less than about the
            # shift first): x - m keeps the digits x - shift keeps, and m - shift is exact for
            # a shift near the data; the correction below restores what the rounding of m lost
            m = (ones @ B) / b
            Bc = np.subtract(B, m, out=scratch(b, d, 2))
            mb = m - self.K
        # the two-pass correction: the centred block's own sum (rounding of mb)
        delta = (ones @ Bc) / b
        if self.scatter:
            M2 = gram_add(Bc)
            M2 -= b * np.outer(delta, delta)
        else:
            M2 = np.einsum("ij,ij->j", Bc, Bc) - b * delta * delta
        self._merge(b, e, b * (mb + delta), M2)
        if self.gram:
            self._add_gram(B, _pow2_exponent(max(-float(lo.min()), float(hi.max()))))

    def _add_ordinary(self, B, b) -> bool:
        """The block's sums in one sweep, when its values are ordinary; False (nothing added)
        otherwise, and the exact path above takes it.

        With s1 = Σx and s2 = Σx² per column, the scatter is s2 - s1²/b. That difference loses
        about log2(s2 / scatter) bits, so it is used only where the squares neither overflow nor
        underflow (s2 within [b 2^-800, 2^800], or a column of zeros) and cancel little (s2 at
        most :data:`_ORDINARY_CANCEL` x the scatter: |mean| within sqrt(3) standard deviations):
        then its error is within 4x the two-pass sum's, about 1e-12 of the variance. Finite sums
        mean finite values. ``lo`` and ``hi`` get -sqrt(s2) and sqrt(s2), bounds on the column's
        extremes (used for the magnitude check, which no value under 2^400 can fail); ``e`` is 0.
        Tables of one unit centred near zero take this path; columns far from zero (pixels,
        counts, 1e6 +- 1e-3) and extreme values take the exact one."""
        ones = _ones(b)
        with np.errstate(over="ignore", invalid="ignore", under="ignore"):
            # extreme values overflow here; the exact path then takes the block
            s1 = ones @ B
            s2 = np.einsum("ij,ij->j", B, B)
        found = _ordinary(B, s1, s2)
        if found is None:
            return False
        m, M2, zero = found
        M2[zero] = 0.0
        self._merge(b, np.zeros(self.d, dtype=np.int64), b * (m - self.K), M2)
        bound = np.sqrt(s2)
        np.minimum(self.lo, -bound, out=self.lo)
        np.maximum(self.hi, bound, out=self.hi)
        if self.gram:
            self._add_gram(B, 0)
        return True

    def _add_ordinary_scatter(self, B, b) -> bool:
        """The scatter matrix's one-sweep path (the rule of :meth:`_add_ordinary`, about the
        shift): with y = x - shift, s1 = Σy and G = Σyyᵀ, the scatter is G - s1 s1ᵀ / b. The
        shift is near the data, so the diagonal cancels little (Σy² at most
        :data:`_ORDINARY_CANCEL` x the scatter, checked per column) and, by Cauchy-Schwarz, no
        entry off it cancels more. It saves the exact path's extremes and its centring at the
        block's own mean: the first pass over 5M x 50 rows took 5.6-6.2 CPU s in that path and
        3.1 s in this one (1 BLAS thread, a loaded machine). ``lo`` and ``hi`` get shift -/+ sqrt(Σy²)
        (widened by a rounding margin)."""
        ones = _ones(b)
        with np.errstate(over="ignore", invalid="ignore", under="ignore"):
            Y = np.subtract(B, self.K, out=scratch(b, self.d, 1))
            s1 = ones @ Y
            G = gram_add(Y)
        s2 = np.diagonal(G).copy()
        found = _ordinary(Y, s1, s2) if np.all(np.isfinite(G)) else None
        if found is None:
            return False
        G -= np.outer(s1, found[0])
        self._merge(b, np.zeros(self.d, dtype=np.int64), s1, G)
        bound = np.sqrt(s2) * (1.0 + 1e-9)
        np.minimum(self.lo, self.K - bound, out=self.lo)
        np.maximum(self.hi, self.K + bound, out=self.hi)
        if self.gram:
            self._add_gram(np.asarray(B, dtype=np.float64), 0)
        return True

    def _add_gram(self, B, eg):
        """Σ x̂x̂ᵀ of the block's rows of nonzero length, ``eg`` the power of two they are
        scaled by first (0: none)."""
        b, d = B.shape
        Bg = B if not eg else np.ldexp(B, -eg, out=scratch(b, d, 1))
        sq = np.einsum("ij,ij->i", Bg, Bg)
        if self.row_sq is not None:
            self.row_sq[self._start:self._start + b] = sq
            self.row_sq_ok = self.row_sq_ok and not eg
        nrm = np.sqrt(sq)
        live = nrm > 0
        if live.any():
            inv = np.zeros(b)
            inv[live] = 1.0 / nrm[live]
            Xn = scale_rows(Bg, inv, scratch(b, d, 2))
            self.G = gram_add(Xn, self.G)
            self.top_norm = max(self.top_norm, _ldexp(float(nrm.max()), eg))
            self.low_norm = min(self.low_norm, _ldexp(float(nrm[live].min()), eg))

    def _record_bad(self, B, start):
        bad = ~np.isfinite(B)
        self.bad += int(bad.sum())
        i, j = (int(v) for v in np.argwhere(bad)[0])
        if self.first_bad is None or start + i < self.first_bad[0] or \
                (start + i == self.first_bad[0] and j < self.first_bad[1]):
            self.first_bad = (start + i, j, float(B[i, j]))

    # -- merging ----------------------------------------------------------------------------
    def _rescale(self, S, M2, e, E):
        """S and M2 from exponents e to E (E >= e)."""
        if np.array_equal(e, E):
            return S, M2
        f = e - E
        return np.ldexp(S, f), np.ldexp(M2, (f[:, None] + f[None, :]) if self.scatter else 2 * f)

    def _merge(self, nb, eb, Sb, M2b):
        if nb == 0:
            return
        if self.n == 0:
            self.n, self.e, self.S = nb, np.array(eb, dtype=np.int64), np.array(Sb, dtype=np.float64)
            self.M2 = np.asfortranarray(M2b, dtype=np.float64) if self.scatter else np.array(M2b, dtype=np.float64)
            return
        E = np.maximum(self.e, eb)
        S, M2 = self._rescale(self.S, self.M2, self.e, E)
        Sb, M2b = self._rescale(Sb, M2b, eb, E)
        tot = self.n + nb
        delta = Sb / nb - S / self.n          # difference of the means (both small: shifted)
        if self.scatter:
            M2 = M2 + M2b + np.outer(delta, delta) * (self.n * nb / tot)
        else:
            M2 = M2 + M2b + delta * delta * (self.n * nb / tot)
        self.S, self.M2, self.n, self.e = S + Sb, M2, tot, E

    def merge(self, other: Moments) -> Moments:
        self._merge(other.n, other.e, other.S, other.M2)
        np.minimum(self.lo, other.lo, out=self.lo)
        np.maximum(self.hi, other.hi, out=self.hi)
        self.bad += other.bad
        if other.first_bad is not None and (self.first_bad is None or other.first_bad[:2] < self.first_bad[:2]):
            self.first_bad = other.first_bad
        if self.gram:
            self.G = self.G + other.G
            self.row_sq_ok = self.row_sq_ok and other.row_sq_ok
            self.top_norm = max(self.top_norm, other.top_norm)
            self.low_norm = min(self.low_norm, other.low_norm)
        return self

    # -- results ----------------------------------------------------------------------------
    def true_mean(self) -> np.ndarray:
        return self.K + np.ldexp(self.S / max(self.n, 1), self.e)

    def common(self):
        """(mean, scatter, E): the column means and the scatter matrix in the one unit 2^E and
        4^E (E the largest exponent; smaller columns' entries may underflow, harmlessly)."""
        E = int(self.e.max(initial=0))
        f = self.e - E
        M2 = self.M2 if self.scatter else np.diag(self.M2)
        return (np.ldexp(self.K, -E) + np.ldexp(self.S / max(self.n, 1), f),
                np.ldexp(symmetric(M2), f[:, None] + f[None, :]), E)

    def std(self) -> np.ndarray:
        """Column standard deviations (ddof 0), true units."""
        diag = np.diagonal(self.M2) if self.scatter else self.M2
        return np.ldexp(np.sqrt(np.maximum(diag, 0.0) / max(self.n, 1)), self.e)


_ONES = threading.local()


def _ones(b):
    """A vector of b ones (per thread, reused): the column sums as one BLAS product."""
    v = getattr(_ONES, "v", None)
    if v is None or v.size < b:
        v = _ONES.v = np.ones(max(b, 1))
    return v[:b]


class RFactor:
    """R of a QR of the rows ``(B - centre) / scale - mean`` (TSQR): see the module doc."""

    def __init__(self, d, centre, scale, mean, keep=None):
        self.d = d
        self.centre, self.scale, self.mean = centre, scale, mean
        self.R = np.zeros((0, d))

    def add(self, B, start, *extra):
        Z = np.subtract(B, self.centre, out=scratch(B.shape[0], self.d, 1))
        Z /= self.scale
        Z -= self.mean
        self.R = np.linalg.qr(np.vstack([self.R, Z]), mode="r")

    def merge(self, other: RFactor) -> RFactor:
        self.R = np.linalg.qr(np.vstack([self.R, other.R]), mode="r")
        return self


class Sampled:
    """The accumulator ``make()`` and, beside it, copies of the rows whose index is a multiple
    of ``stride`` (a sample of the table taken in the same pass; out of core only, in memory the
    scan takes a view of those rows)."""

    def __init__(self, make, stride):
        self.inner, self.stride, self.parts = make(), stride, []

    def add(self, B, start, *extra):
        self.inner.add(B, start, *extra)
        idx = np.arange((-start) % self.stride, B.shape[0], self.stride)
        if idx.size:
            self.parts.append(B[idx])        # fancy indexing: a copy

    def merge(self, other: Sampled) -> Sampled:
        self.inner = self.inner.merge(other.inner)
        self.parts += other.parts
        return self

    def rows(self, d) -> np.ndarray:
        return np.vstack(self.parts) if self.parts else np.zeros((0, d))


class RowGram:
    """Σ yyᵀ (lower triangle) of ``y = transform(B, start, *extra)`` over the blocks (rows the
    transform leaves out are simply not returned)."""

    def __init__(self, d, transform):
        self.transform = transform
        self.G = np.zeros((d, d), order="F")
        self.count = 0

    def add(self, B, start, *extra):
        Y = self.transform(B, start, *extra)
        self.count += Y.shape[0]
        self.G = gram_add(Y, self.G)

    def merge(self, other: RowGram) -> RowGram:
        self.G = self.G + other.G
        self.count += other.count
        return self


def _ldexp(x: float, e: int) -> float:
    """x * 2**e, infinity where that overflows (a norm of rows near float64's largest value:
    the magnitude check that follows then refuses them by name; math.ldexp raises instead)."""
    try:
        return math.ldexp(x, e)
    except OverflowError:
        return math.inf
