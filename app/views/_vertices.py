"""Curves with millions of points reduced to the vertices a screen can show, exact to the pixel.

A ROC or precision-recall curve of a million scores, a learning curve over a million samples
seen, a ranking of 100,000 features: each has one vertex per point, and pyqtgraph draws (and an
export writes) every one of them, although a plot a few thousand pixels wide cannot show more
than a few per pixel column. :func:`reduce_curve` keeps, in each of ``columns`` equal slices of
the x range, the first and the last point and the lowest and the highest (the "M4" reduction of
Jugel et al., VLDB 2014): the polyline through them covers, in every column, the same vertical
extent as the full curve and enters and leaves it at the same points, so drawn at up to
``columns`` pixels wide it differs from the full curve by less than one pixel. A curve with
fewer points than four per column is returned as it is (every corner kept).

No Qt here: the reduction can run where the data are (a worker process) as well as in a view.
"""
from __future__ import annotations

import numpy as np

__all__ = ["COLUMNS", "reduce_curve", "reduced_indices"]

#: Pixel columns a reduced curve is exact for: a 1000-pixel figure exported at scale 4.
COLUMNS = 4096
# Points reduced at once: the work arrays of a chunk stay a few tens of MB whatever n is.
_CHUNK = 1 << 21


def _m4(c: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Indices (sorted) of the first, last, lowest and highest point of each run of equal
    column numbers ``c`` (non-decreasing). NaN y values are never a column's lowest or highest."""
    n = c.size
    starts = np.flatnonzero(np.r_[True, c[1:] != c[:-1]])
    ends = np.r_[starts[1:], n] - 1
    keep = [starts, ends]
    counts = ends - starts + 1
    group = np.repeat(np.arange(starts.size), counts)
    for reduce in (np.fmin, np.fmax):
        best = reduce.reduceat(y, starts)
        hit = np.flatnonzero(y == best[group])          # NaN == NaN is False: all-NaN columns add nothing
        g = group[hit]
        keep.append(hit[np.r_[True, g[1:] != g[:-1]]])  # the first of the column's equal extremes
    return np.unique(np.concatenate(keep))


def reduced_indices(x, y, columns: int = COLUMNS, x_range=None) -> np.ndarray:
    """Indices of the points :func:`reduce_curve` keeps (sorted; ``x`` must be non-decreasing).

    ``x_range`` (lo, hi): the x extent the columns divide (default: the data's own); points
    outside it share the first or last column.
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"x and y must be 1-D arrays of one length; got shapes {x.shape} and {y.shape}")
    columns = int(columns)
    if columns < 1:
        raise ValueError(f"columns must be a positive number of pixel columns; got {columns}")
    n = x.size
    if n <= 4 * columns:
        return np.arange(n)
    finite = x[np.isfinite(x)]
    if finite.size == 0:
        return np.arange(n)
    lo, hi = (float(finite[0]), float(finite[-1])) if x_range is None else map(float, x_range)
    if np.any(finite[1:] < finite[:-1]):
        raise ValueError("reduce_curve needs x in non-decreasing order (sort the curve by x first)")
    width = hi - lo if hi > lo else 1.0
    kept = []
    for s0 in range(0, n, _CHUNK):
        xs = x[s0:s0 + _CHUNK]
        c = np.floor((xs - lo) * (columns / width))
        c = np.clip(np.nan_to_num(c, nan=-1.0), -1, columns).astype(np.int64)
        # a column cut by a chunk's end is reduced twice; the second pass below merges it
        kept.append(s0 + _m4(c, y[s0:s0 + _CHUNK]))
    idx = np.concatenate(kept)
    if len(kept) > 1:
        c = np.clip(np.nan_to_num(np.floor((x[idx] - lo) * (columns / width)), nan=-1.0), -1, columns)
        idx = idx[_m4(c.astype(np.int64), y[idx])]
    return idx


def reduce_curve(x, y, columns: int = COLUMNS, x_range=None) -> tuple[np.ndarray, np.ndarray]:
    """``(x, y)`` of a curve (x non-decreasing) reduced to at most ``4 * columns`` vertices that
    draw it within one pixel at up to ``columns`` pixels wide (module doc)."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    idx = reduced_indices(x, y, columns, x_range)
    if idx.size == x.size:
        return x, y
    return x[idx], y[idx]
