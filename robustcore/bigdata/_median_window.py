"""The exact median of per-row values and their exact median absolute deviation from it, from
values seen once, slice by slice, in a sweep that makes them anyway.

The outlier map's robust OD cut-off needs the median and the MAD of OD^(2/3) = cbrt(SPE) over
every row. Found by :func:`robustcore.bigdata._selection.kth_of_slices` that is four sweeps over
the stored SPE after the distances' sweep (a histogram and a gather for each: at 30M rows 0.63 s
of CPU, cbrt and the read made again in each). Here the distances' sweep also hands each slice's
values to :class:`MedianWindow`: the first slice places value windows where the median and the
values at the MAD's distance from it should lie (its quantiles, :data:`SHARE` either side), and
every slice adds the count of its values below (between) the windows and keeps the values inside
them. Afterwards a rank is answered only when the counts PROVE it lies in a window (the values
below a window all smaller, those above all larger, whatever the exact centre turned out to be):
the answer is then the value ``np.partition`` places at that rank, to the bit. When the first
slice misled (rows in an order, NaN, too many values kept), :class:`Unproven` is raised and the
caller makes its sweeps as before.
"""
from __future__ import annotations

import numpy as np

__all__ = ["MedianWindow", "Unproven", "SHARE", "SIGMAS", "KEEP_AT_MOST"]

# Half-width of each window, as a share of the values: the first slice's quantiles 0.5 -/+ SHARE
# and SIGMAS binomial standard deviations of a median from that many values (1M: 0.005 in all,
# 3.6 % of the values of the 30M benchmark table kept; 0.01 kept 6.5 %).
SHARE = 0.003
SIGMAS = 4.0
# Values kept beyond this share of n (plus a floor) abandon the windows: memory stays small.
KEEP_AT_MOST = 1.0 / 16


class Unproven(Exception):
    """A rank the windows cannot prove: make the sweeps."""


class MedianWindow:
    """Feed :meth:`add` every slice of the n values in turn; then :meth:`kth_values` and
    :meth:`kth_deviations` answer exact order statistics or raise :class:`Unproven`."""

    def __init__(self, n: int):
        self.n = int(n)
        self.seen = 0
        self.windows = None          # (M1, M2, A1, A2, B1, B2)
        self.below = 0               # values < M1
        self.between = 0             # values in (A2, B1)
        self.near_centre, self.near_mad = [], []
        self.kept = 0
        self.failed = False

    def add(self, w) -> None:
        """The next slice of the values (float64, 1-d, in row order)."""
        w = np.asarray(w, dtype=np.float64).ravel()
        self.seen += w.size
        if self.failed or w.size == 0:
            return
        if self.windows is None:
            self.windows = self._place(w)
            if self.windows is None:
                self.failed = True
                return
        m1, m2, a1, a2, b1, b2 = self.windows
        self.below += int(np.count_nonzero(w < m1))
        centre = w[(w >= m1) & (w <= m2)]
        if a2 < b1:
            self.between += int(np.count_nonzero((w > a2) & (w < b1)))
            near = w[((w >= a1) & (w <= a2)) | ((w >= b1) & (w <= b2))]
        else:
            near = w[(w >= a1) & (w <= b2)]
        self.near_centre.append(centre)
        self.near_mad.append(near)
        self.kept += centre.size + near.size
        if self.kept > KEEP_AT_MOST * self.n + (1 << 16):
            self.failed = True
            self.near_centre, self.near_mad = [], []

    @staticmethod
    def _place(w):
        if not np.all(np.isfinite(w)):
            return None
        m = w.size
        half = SHARE + SIGMAS * 0.5 / np.sqrt(m)
        lo, hi = max(0, int((0.5 - half) * (m - 1))), min(m - 1, int(np.ceil((0.5 + half) * (m - 1))))
        part = np.partition(w, [lo, (m - 1) // 2, hi])
        m1, c0, m2 = float(part[lo]), float(part[(m - 1) // 2]), float(part[hi])
        dev = np.abs(w - c0)
        dev.partition([lo, hi])
        t_lo, t_hi = float(dev[lo]), float(dev[hi])
        # the median c in [m1, m2] and the MAD t in [t_lo, t_hi] put c - t and c + t in these
        return m1, m2, m1 - t_hi, m2 - t_lo, m1 + t_lo, m2 + t_hi

    def release(self) -> None:
        """Drops the kept values (the map's regions sweep follows: its peak without them)."""
        self.near_centre, self.near_mad = [], []
        self.failed = True

    def _ready(self):
        if self.failed or self.windows is None or self.seen != self.n:
            raise Unproven("the windows were abandoned or not fed every value")

    def kth_values(self, ks) -> np.ndarray:
        """The ks-th smallest values (0-based)."""
        self._ready()
        ks = np.asarray(ks, dtype=np.int64)
        kept = np.concatenate(self.near_centre)
        at = ks - self.below
        if at.min() < 0 or at.max() >= kept.size:
            raise Unproven("a rank outside the centre's window")
        # every value below the window is smaller than every value in it, every one above larger
        return np.partition(kept, np.unique(at))[at]

    def kth_deviations(self, centre: float, ks) -> np.ndarray:
        """The ks-th smallest of |value - centre| (as numpy computes it, float64)."""
        self._ready()
        m1, m2, a1, a2, b1, b2 = self.windows
        ks = np.asarray(ks, dtype=np.int64)
        split = a2 < b1
        if not (a2 < centre < b1 if split else a1 <= centre <= b2):
            raise Unproven("the centre outside its window")
        dev = np.abs(np.concatenate(self.near_mad) - centre)
        at = ks - (self.between if split else 0)
        if at.min() < 0 or at.max() >= dev.size:
            raise Unproven("a rank outside the deviations' windows")
        found = np.partition(dev, np.unique(at))[at]
        # |w - c| in floating point grows with w above c and shrinks with it below: values between
        # the windows lie within these deviations, values outside them beyond these
        inner = np.abs(np.array([a2, b1]) - centre).max() if split and self.between else -np.inf
        outer = np.abs(np.array([a1, b2]) - centre).min()
        if not (inner <= found.min() and found.max() <= outer):
            raise Unproven("a deviation the windows do not bound")
        return found
