"""Heatmaps of any size: a (rows x cols) array reduced to a grid whose size depends on the
screen, not on the data (the idea of Datashader and of napari's multiscale images).

Qt cannot draw an image taller or wider than 32,767 pixels (an L + S heatmap drawn one image row
per sample of a 33,000-row table crashed the window), and a picture of a million rows drawn into
600 pixels shows one row in 1,600 chosen by the painter. Here consecutive rows (and columns) are
gathered in bins of equal size, the last one shorter when the size does not divide the count,
and each bin shows one number: the mean (X, L) or the entry of largest magnitude with its sign
(S: a single gross error stays visible, where a mean would dilute it by the bin's size).

Arrays are read a block of whole row bins at a time, so a memmap or a chunked on-disk array
(Zarr) is never read whole; a cancel test between blocks lets a newer request stop an older
one. No Qt here: the views call it on the GUI thread or from a worker.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from robustcore._progress import Cancelled

__all__ = ["QT_MAX_PIXELS", "MAX_BINS", "Bins", "bins_for", "bin_array", "bin_vector", "fit_picture",
           "Cancelled", "AGGREGATES", "column_extremes", "blocks", "block_rows"]

#: Qt's raster engine draws nothing (or crashes) beyond this many pixels along an axis.
QT_MAX_PIXELS = 32_767
#: The most bins along one axis, whatever the screen: more than any screen shows.
MAX_BINS = 2048
#: Values read at once (one block of whole row bins): bounds the memory of a pass.
BLOCK_VALUES = 4_000_000

#: How the entries of a bin become its value.
AGGREGATES = ("mean", "absmax")


@dataclass(frozen=True)
class Bins:
    """Indices ``start .. stop-1`` in runs of ``size`` (the last run shorter when ``size`` does
    not divide their number). ``size == 1``: every index is its own bin (nothing binned)."""

    start: int
    stop: int
    size: int

    @property
    def length(self) -> int:
        return self.stop - self.start

    @property
    def count(self) -> int:
        return -(-self.length // self.size)

    @property
    def binned(self) -> bool:
        return self.size > 1

    @property
    def last(self) -> int:
        """How many indices the last bin holds."""
        return self.length - (self.count - 1) * self.size

    def edges(self) -> np.ndarray:
        """First index of every bin, then ``stop``: bin b holds ``edges[b]:edges[b+1]``."""
        return np.r_[np.arange(self.start, self.stop, self.size), self.stop].astype(np.int64)

    def of(self, i: float) -> int:
        """The bin holding index ``i`` (clipped to the bins)."""
        return int(min(max((int(np.floor(i)) - self.start) // self.size, 0), self.count - 1))

    def span(self, b: int) -> tuple[int, int]:
        """The indices ``lo:hi`` bin ``b`` holds."""
        lo = self.start + b * self.size
        return lo, min(lo + self.size, self.stop)

    def describe(self, noun: str) -> str:
        """'33,000 samples in 825 bins of 40' (with the last bin's size when it is shorter)."""
        head = f"{self.length:,} {noun}"
        if not self.binned:
            return head
        tail = f" (the last of {self.last:,})" if self.last != self.size else ""
        return f"{head} in {self.count:,} bins of {self.size:,}{tail}"


def bins_for(start: int, stop: int, limit: int = MAX_BINS) -> Bins:
    """The smallest bins that put ``start .. stop-1`` in at most ``limit`` bins (never above
    Qt's limit)."""
    start, stop = int(start), int(stop)
    if stop <= start:
        raise ValueError(f"an empty range of indices ({start}:{stop}) cannot be binned")
    limit = int(min(max(limit, 1), QT_MAX_PIXELS))
    return Bins(start, stop, -(-(stop - start) // limit))


def block_rows(a, width: int) -> int:
    """Rows read at once: about BLOCK_VALUES values, a whole number of the array's own row
    chunks when it is chunked on disk (a chunk is then read once)."""
    rows = max(1, BLOCK_VALUES // max(width, 1))
    chunks = getattr(a, "chunks", None)
    if isinstance(chunks, tuple) and chunks and isinstance(chunks[0], (int, np.integer)) and chunks[0] > 0:
        rows = max(int(chunks[0]), rows - rows % int(chunks[0]))
    return rows


def blocks(start: int, stop: int, step: int, cancelled=None):
    """``(a, b)``: ``start:stop`` in runs of ``step`` rows, the last one shorter; ``cancelled()``,
    when given, is asked before each and True raises :class:`Cancelled` (a newer request
    replaced this one)."""
    for a in range(start, stop, step):
        if cancelled is not None and cancelled():
            raise Cancelled()
        yield a, min(a + step, stop)


def bin_array(a, rows: Bins, cols: Bins, how: str = "mean", cancelled=None) -> np.ndarray:
    """``a[rows, cols]`` reduced to a (rows.count, cols.count) float64 grid.

    Parameters
    ----------
    a : anything indexed ``a[r0:r1, c0:c1]`` into an array: numpy, memmap, Zarr, h5py.
    rows, cols : the bins of each axis (their ranges must lie inside ``a``).
    how : "mean" (the mean of the bin's entries) or "absmax" (the entry of largest magnitude,
        with its sign; the positive one on a tie).
    cancelled : optional callable, asked between blocks (see :func:`blocks`).
    """
    if how not in AGGREGATES:
        raise ValueError(f"how must be one of {', '.join(AGGREGATES)}; got {how!r}")
    shape = tuple(a.shape) if hasattr(a, "shape") else np.shape(a)
    if len(shape) != 2 or rows.stop > shape[0] or cols.stop > shape[1] or rows.start < 0 or cols.start < 0:
        raise ValueError(f"bins of rows {rows.start}:{rows.stop} and columns {cols.start}:{cols.stop} do not fit "
                         f"an array of shape {shape}")
    col_starts = cols.edges()[:-1] - cols.start
    row_edges = rows.edges()

    def across(ufunc, block):
        # Columns one to a bin need no reduction (reduceat over single columns is 7x slower).
        return ufunc.reduceat(block, col_starts, axis=1) if cols.binned else block
    mean = how == "mean"
    # Running per-bin sums, or running maxima and minima: a block may end inside a bin.
    acc = ([np.zeros((rows.count, cols.count))] if mean else
           [np.full((rows.count, cols.count), -np.inf), np.full((rows.count, cols.count), np.inf)])
    step = block_rows(a, cols.length)
    for r0, r1 in blocks(rows.start, rows.stop, step, cancelled):
        block = np.asarray(a[r0:r1, cols.start:cols.stop], dtype=np.float64)
        b0, b1 = rows.of(r0), rows.of(r1 - 1) + 1
        # Where each bin this block touches begins inside it (the first one at its top).
        starts = np.maximum(row_edges[b0:b1] - r0, 0)
        if mean:
            part = np.add.reduceat(across(np.add, block), starts, axis=0)
            acc[0][b0:b1] += part
        else:
            hi = np.maximum.reduceat(across(np.maximum, block), starts, axis=0)
            lo = np.minimum.reduceat(across(np.minimum, block), starts, axis=0)
            np.maximum(acc[0][b0:b1], hi, out=acc[0][b0:b1])
            np.minimum(acc[1][b0:b1], lo, out=acc[1][b0:b1])
    if mean:
        return acc[0] / (np.diff(row_edges)[:, None] * np.diff(cols.edges())[None, :])
    hi, lo = acc
    return np.where(-lo > hi, lo, hi)


def bin_vector(v, bins: Bins, how: str = "absmax") -> np.ndarray:
    """``v[bins]`` (a 1-D array) reduced per bin, as :func:`bin_array` reduces columns."""
    v = np.asarray(v, dtype=np.float64).reshape(1, -1)
    return bin_array(v, Bins(0, 1, 1), bins, how)[0]


def fit_picture(img: np.ndarray, limit: int = MAX_BINS) -> tuple[np.ndarray, Bins, Bins]:
    """A picture (h, w) or (h, w, channels) at most ``limit`` pixels along each side: the mean
    of each bin of pixels (the picture itself when it fits). Returns it with the bins of its
    rows and columns (their ``binned`` says whether it was reduced)."""
    img = np.asarray(img)
    h, w = img.shape[:2]
    rows, cols = bins_for(0, h, limit), bins_for(0, w, limit)
    if not (rows.binned or cols.binned):
        return img, rows, cols
    if img.ndim == 2:
        return bin_array(img, rows, cols), rows, cols
    planes = [bin_array(img[..., c], rows, cols) for c in range(img.shape[2])]
    return np.stack(planes, axis=-1).astype(img.dtype, copy=False), rows, cols


def column_extremes(a, cancelled=None) -> tuple[np.ndarray, np.ndarray]:
    """Each column's (min, max) of a (n, d) array read in blocks of rows (NaNs ignored)."""
    n, d = (tuple(a.shape) if hasattr(a, "shape") else np.shape(a))
    lo, hi = np.full(d, np.inf), np.full(d, -np.inf)
    step = block_rows(a, d)
    for r0, r1 in blocks(0, n, step, cancelled):
        block = np.asarray(a[r0:r1], dtype=np.float64)
        with warnings.catch_warnings():   # a column all NaN in this block
            warnings.simplefilter("ignore", RuntimeWarning)
            lo = np.fmin(lo, np.nanmin(block, axis=0))
            hi = np.fmax(hi, np.nanmax(block, axis=0))
    return lo, hi
