"""Exact order statistics and counts of one stored per-row score, in two passes over it.

The limits' calibration (:func:`robustcore._calibration.calibrate`) asks a score for a few order
statistics, then a count under a cut that depends on them, then order statistics at levels that
depend on the count, then two counts at the limit. Answered one question at a time over a
stored score (a sketch and a gather per order statistic, a pass per count) that was about seven
passes: at 30M rows 7.7 s of CPU, the stored T² read and the combined score recomputed each time.

Here one pass counts the values per bucket of their float64 bits (:func:`bucket_of`: the top
:data:`BITS` bits of an order-preserving key, so buckets are value intervals in order, each a
256th of a binade wide), which places every rank in its bucket exactly. The calibration is then
run once on answers interpolated inside the buckets, only to learn which buckets its questions
fall in; a second pass gathers the values of those buckets (and of :data:`MARGIN` neighbours on
each side: an answer computed from approximations lands a little off), and the calibration runs
on exact answers: a rank's value is found by sorting its bucket's values, a count under ``x`` is
the count of the buckets below ``x``'s plus the values of ``x``'s own bucket up to ``x``. Should
a question still fall in a bucket not gathered, it is gathered by one more pass and the
calibration starts again: the answers are exact whatever the approximations did, and equal to
what ``np.partition`` and a comparison give in memory (NaN above every number, -0.0 with 0.0).
"""
from __future__ import annotations

import numpy as np

__all__ = ["BITS", "MARGIN", "bucket_of", "ScoreSelection", "kth_of_slices"]

# Buckets are the top BITS bits of the 64-bit key: sign, exponent and 8 bits of the fraction.
BITS = 20
_SHIFT = 64 - BITS
_NAN_BUCKET = (1 << BITS) - 1           # above +inf's bucket: NaN sorts last, as np.sort puts it
_SIGN = np.uint64(1 << 63)
_HALF = 1 << (BITS - 1)                 # the bucket of +0.0
_TOP = (0x7FF << (52 - _SHIFT)) + _HALF     # +inf's bucket: NaN and inf alone at and above it
# Neighbours gathered on each side of a bucket the approximate run asked about.
MARGIN = 4


def bucket_of(v) -> np.ndarray:
    """The bucket (int64) of each value: buckets are ordered as the values; NaN in the last.

    The bucket is the top BITS bits of an order-preserving key of the float64 bits (sign
    flipped for numbers >= 0, all bits flipped for negative ones; -0.0 keyed as 0.0): for
    scores >= 0, the usual case, the bits shifted plus a constant."""
    v = np.asarray(v, dtype=np.float64)
    b = v.view(np.int64) >> _SHIFT
    if b.size and b.min() >= 0 and b.max() < _TOP - _HALF:
        b += _HALF                          # finite numbers >= 0 (+0.0 included)
        return b
    neg = b < 0
    b = np.where(neg, ~b, b + _HALF)        # negative numbers: flipped bits, below every other
    b[v == 0.0] = _HALF                     # -0.0 with 0.0
    b[np.isnan(v)] = _NAN_BUCKET
    return b


def _value_of_key(key: int) -> float:
    u = np.uint64(key)
    bits = u & ~_SIGN if u & _SIGN else ~u
    return float(np.array([bits], dtype=np.uint64).view(np.float64)[0])


def _bucket_span(b: int) -> tuple[float, float]:
    """The smallest and the largest value a bucket holds."""
    return _value_of_key(b << _SHIFT), _value_of_key(((b + 1) << _SHIFT) - 1)


# -- the two block functions (run on every block of the score, anywhere Dask runs them) --------

def _kept(v, exclude):
    v = np.asarray(v, dtype=np.float64).ravel()
    return v if exclude is None else v[~np.asarray(exclude, dtype=bool).ravel()]


def histogram_block(v, exclude=None):
    """(first bucket, counts from it) of one block's kept values."""
    b = bucket_of(_kept(v, exclude))
    if b.size == 0:
        return 0, np.zeros(0, np.int64)
    lo = int(b.min())
    return lo, np.bincount(b - lo).astype(np.int64)


def merge_histograms(*parts):
    live = [p for p in parts if p[1].size]
    if not live:
        return 0, np.zeros(0, np.int64)
    lo = min(p[0] for p in live)
    out = np.zeros(max(p[0] + p[1].size for p in live) - lo, np.int64)
    for first, counts in live:
        out[first - lo:first - lo + counts.size] += counts
    return lo, out


class Histogram:
    """:func:`histogram_block` as an accumulator of a pass that makes the values block by block
    (``Rows.map``'s ``reduce``: ``add`` each block's values, ``merge`` the blocks'), so the
    histogram pass rides on the pass that writes the scores: the same counts."""

    def __init__(self):
        self.part = (0, np.zeros(0, np.int64))

    def add(self, v) -> None:
        self.part = merge_histograms(self.part, histogram_block(v))

    def merge(self, other: Histogram) -> Histogram:
        self.part = merge_histograms(self.part, other.part)
        return self


def gather_block(v, wanted, exclude=None):
    """The kept values of one block whose buckets are in ``wanted`` (int64)."""
    v = _kept(v, exclude)
    table = np.zeros(1 << BITS, dtype=bool)
    table[wanted] = True
    return v[table[bucket_of(v)]]


def concat(*parts):
    return np.concatenate(parts) if parts else np.zeros(0)


class _Missing(Exception):
    """A question fell in buckets that were not gathered."""

    def __init__(self, buckets):
        super().__init__(f"{len(buckets)} buckets not gathered")
        self.buckets = buckets


class ScoreSelection:
    """Exact ``kth(ks)`` and ``count_le(cut)`` of one score held in blocks, for
    :func:`robustcore._calibration.calibrate` and its like (see the module doc).

    ``histogram()`` and ``gather(buckets)`` are the two passes, supplied by the caller (each
    returns what :func:`merge_histograms` and :func:`concat` make of its blocks).
    """

    def __init__(self, histogram, gather):
        self._gather = gather
        self.first, self.counts = histogram()
        self.below = np.concatenate(([0], np.cumsum(self.counts)))   # values in buckets before each
        self.n = int(self.below[-1])
        self.passes = 1
        self._sorted = {}            # bucket -> its values, sorted

    # -- where things are -----------------------------------------------------------------
    def _rank_bucket(self, k: int) -> int:
        if not 0 <= k < self.n:
            raise IndexError(f"rank {k} outside 0..{self.n - 1}")
        return int(np.searchsorted(self.below, k, side="right")) - 1 + self.first

    def _count(self, b: int) -> int:
        i = b - self.first
        return int(self.counts[i]) if 0 <= i < self.counts.size else 0

    def _before(self, b: int) -> int:
        return int(self.below[min(max(b - self.first, 0), self.counts.size)])

    # -- exact answers ---------------------------------------------------------------------
    def _values(self, b: int) -> np.ndarray:
        if b not in self._sorted:
            raise _Missing([b])
        return self._sorted[b]

    def kth(self, ks) -> np.ndarray:
        ks = np.atleast_1d(np.asarray(ks, dtype=np.int64))
        out, missing = np.empty(ks.size), []
        for i, k in enumerate(ks.tolist()):
            b = self._rank_bucket(k)
            if b in self._sorted:
                out[i] = self._sorted[b][k - self._before(b)]
            else:
                missing.append(b)
        if missing:
            raise _Missing(missing)
        return out

    def count_le(self, cut) -> int:
        cut = float(cut)
        if np.isnan(cut):
            return 0
        b = int(bucket_of(np.array([cut]))[0])
        if self._count(b) == 0:
            return self._before(b)
        return self._before(b) + int(np.searchsorted(self._values(b), cut, side="right"))

    # -- approximate answers, to learn which buckets the questions need -----------------------
    def _approx(self, asked: set):
        def kth(ks):
            out = []
            for k in np.atleast_1d(ks).tolist():
                b = self._rank_bucket(int(k))
                asked.add(b)
                lo, hi = _bucket_span(b)
                t = (k - self._before(b) + 0.5) / self._count(b)
                out.append(lo + t * (hi - lo) if np.isfinite(lo) and np.isfinite(hi) else lo)
            return np.array(out)

        def count_le(cut):
            cut = float(cut)
            if np.isnan(cut):
                return 0
            b = int(bucket_of(np.array([cut]))[0])
            asked.add(b)
            lo, hi = _bucket_span(b)
            t = (cut - lo) / (hi - lo) if hi > lo else 1.0
            return self._before(b) + int(round(min(max(t, 0.0), 1.0) * self._count(b)))
        return kth, count_le

    def _fetch(self, buckets) -> None:
        want = sorted({int(b) for b in buckets if self._count(int(b)) and int(b) not in self._sorted})
        if not want:
            return
        wanted = np.asarray(want, dtype=np.int64)
        values = np.sort(self._gather(wanted))
        self.passes += 1
        bounds = np.searchsorted(bucket_of(values), wanted, side="left")
        ends = np.append(bounds[1:], values.size)
        for b, s, e in zip(want, bounds.tolist(), ends.tolist()):
            self._sorted[b] = values[s:e]

    def run(self, fn):
        """``fn(kth, count_le, n)`` on exact answers (see the class doc), in as few passes as
        the approximate run foresees."""
        asked: set = set()
        try:
            fn(*self._approx(asked), self.n)
        except Exception:  # noqa: BLE001 - approximations may fail where exact answers do not
            pass
        near = {b + j for b in asked for j in range(-MARGIN, MARGIN + 1)}
        self._fetch(near)
        while True:
            try:
                return fn(self.kth, self.count_le, self.n)
            except _Missing as miss:
                self._fetch({b + j for b in miss.buckets for j in range(-MARGIN, MARGIN + 1)})


def kth_of_slices(slices, ks) -> np.ndarray:
    """Exact ks-th smallest kept values (0-based, ranks among the kept values) of a score made
    slice by slice: ``slices()`` yields (values, exclude or None) on each call. Two sweeps
    (histogram, gather), more only when an answer falls outside the buckets gathered; the
    values np.partition places there."""
    def histogram():
        part = (0, np.zeros(0, np.int64))
        for v, e in slices():
            part = merge_histograms(part, histogram_block(v, e))
        return part

    def gather(wanted):
        return concat(*[gather_block(v, wanted, e) for v, e in slices()])
    return ScoreSelection(histogram, gather).run(lambda kth, count_le, n: kth(ks))
