"""Isolines of a grid as line segments, by marching squares in numpy (no Qt: run on a worker).

pyqtgraph's ``isocurve`` walks the grid cell by cell in Python: about 80 ms for one 161 x 161
grid, four per SPE / T² map, on the GUI thread at every zoom (issue 33). Here every cell is
handled at once with array operations (about a millisecond for the same grid), and the answer
is the segments' end points in the plot's coordinates, drawn as one item with
``connect="pairs"``: what crosses to the GUI thread is a few hundred vertices.

Each cell of four neighbouring grid values is cut by the line where the linear interpolation
along its edges meets ``level``: two edges crossed give one segment; four (a saddle) give two,
joined as the cell's centre value (the mean of its corners) says.
"""
from __future__ import annotations

import numpy as np

__all__ = ["segments"]


def segments(z: np.ndarray, xs: np.ndarray, ys: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """End points ``(x, y)`` of the segments of ``z``'s isoline at ``level``: ``z[j, i]`` is the
    value at ``(xs[i], ys[j])``; consecutive pairs of points are one segment each (2 k points for
    k segments). Cells with a value that is not finite are skipped."""
    z = np.asarray(z, dtype=np.float64)
    xs, ys = np.asarray(xs, dtype=np.float64), np.asarray(ys, dtype=np.float64)
    if z.ndim != 2 or z.shape != (ys.size, xs.size):
        raise ValueError(f"the grid's shape {z.shape} is not (len(ys), len(xs)) = ({ys.size}, {xs.size})")
    if min(z.shape) < 2 or not np.isfinite(level):
        return np.zeros(0), np.zeros(0)
    # Corners of every cell: a (x_i, y_j), b (x_i+1, y_j), c (x_i+1, y_j+1), d (x_i, y_j+1).
    a, b, c, d = z[:-1, :-1], z[:-1, 1:], z[1:, 1:], z[1:, :-1]
    ok = np.isfinite(a) & np.isfinite(b) & np.isfinite(c) & np.isfinite(d)
    up = [v >= level for v in (a, b, c, d)]
    x0, x1 = xs[:-1][None, :], xs[1:][None, :]
    y0, y1 = ys[:-1][:, None], ys[1:][:, None]

    def cut(p, q, p0, p1):
        # where the line from value p (at p0) to value q (at p1) reaches level
        # (only read where the edge is crossed: there p and q lie on either side of level)
        with np.errstate(divide="ignore", invalid="ignore"):
            return p0 + (level - p) / (q - p) * (p1 - p0)

    shape = a.shape
    # The four edges in turn: bottom (a-b), right (b-c), top (d-c), left (a-d); (x, y) of each cut.
    cuts = [(cut(a, b, x0, x1), np.broadcast_to(y0, shape)),
            (np.broadcast_to(x1, shape), cut(b, c, y0, y1)),
            (cut(d, c, x0, x1), np.broadcast_to(y1, shape)),
            (np.broadcast_to(x0, shape), cut(a, d, y0, y1))]
    edges = [(up[0] != up[1]) & ok, (up[1] != up[2]) & ok, (up[3] != up[2]) & ok, (up[0] != up[3]) & ok]
    crossed = np.stack(edges, axis=-1)
    px = np.stack([np.broadcast_to(cx, shape) for cx, _ in cuts], axis=-1)
    py = np.stack([np.broadcast_to(cy, shape) for _, cy in cuts], axis=-1)
    # (a sum of the four bool planes: summing the stack along its last axis cost 50 ms)
    count = edges[0].astype(np.int8) + edges[1] + edges[2] + edges[3]

    # Two edges crossed: one segment between them (in edge order).
    two = count == 2
    ex = px[two][crossed[two]].reshape(-1, 2)
    ey = py[two][crossed[two]].reshape(-1, 2)
    # A saddle (all four crossed: a and c on one side, b and d on the other): when the centre is
    # on a's side, a and c connect through the middle and the cuts fence off b and d.
    four = count == 4
    centre_up = (a + b + c + d)[four] / 4 >= level
    joined = centre_up == up[0][four]
    sx, sy = px[four], py[four]
    # fencing b: bottom-right, d: top-left; fencing a: bottom-left, c: top-right
    j = joined[:, None]
    first = np.where(j, sx[:, [0, 1]], sx[:, [0, 3]]), np.where(j, sy[:, [0, 1]], sy[:, [0, 3]])
    second = np.where(j, sx[:, [2, 3]], sx[:, [2, 1]]), np.where(j, sy[:, [2, 3]], sy[:, [2, 1]])
    x = np.concatenate([ex.ravel(), first[0].ravel(), second[0].ravel()])
    y = np.concatenate([ey.ravel(), first[1].ravel(), second[1].ravel()])
    return x, y
