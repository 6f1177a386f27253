"""The SPE / T² maps' grids and isolines, made off the GUI thread.

At every change of a map's visible range both quadratic forms are evaluated over a
:data:`GRID` x :data:`GRID` grid of that range and their isolines at the control limits found
(:mod:`._isolines`) as a job of the views' worker mechanism (:mod:`._latest`); the GUI thread
only puts the finished image and the segments' vertices on screen. One job at a time per map:
ranges that change while one runs (a pan) are asked for once it ends, the newest only.
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np
from PySide6.QtCore import QObject, Signal

from ._isolines import segments
from ._latest import runner

__all__ = ["GRID", "BANDS", "MapPicture", "map_picture", "MapFill", "finish_all"]

#: Grid points along each side of a map.
GRID = 161
# Band edges in multiples of the control limit: the limit itself is an edge, so the colour
# changes exactly where the isoline is drawn.
BANDS = np.array([1 / 16, 1 / 8, 1 / 4, 1 / 2, 1, 2, 4, 8, 16])

# Maps with a picture still to come: an export draws them first (finish_all).
_PENDING: weakref.WeakSet[MapFill] = weakref.WeakSet()


@dataclass(frozen=True)
class MapPicture:
    """One map's picture of ``rng`` = (x0, x1, y0, y1): the grids of both maps (their values at
    ``xs`` x ``ys``), the image of this map's bands and the isolines of both limits as
    segment end points (``lines[name] = (x, y)``)."""

    rng: tuple
    xs: np.ndarray
    ys: np.ndarray
    grids: dict
    image: np.ndarray
    lines: dict


def map_picture(model: dict, plane: np.ndarray, limits: dict, key: str, rng) -> MapPicture:
    """The picture of map ``key`` ("spe" or "t2") over ``rng`` (no Qt: run on a worker)."""
    from robustcore import compare  # here: the window's first draws need none of scikit-learn's imports
    x0, x1, y0, y1 = rng
    xs, ys = np.linspace(x0, x1, GRID), np.linspace(y0, y1, GRID)
    spe_g, t2_g = compare.spe_t2_grid(model["components"], model["mean"], model["variances"], plane, xs, ys)
    grids = {"spe": spe_g, "t2": t2_g}
    lim = limits[key]
    # log2 of the value in units of the limit, clipped to the band edges -> discrete bands.
    with np.errstate(divide="ignore"):
        z = np.log2(np.maximum(grids[key], lim * BANDS[0] / 2) / lim)
    image = np.clip(z, np.log2(BANDS[0]), np.log2(BANDS[-1]))
    lines = {name: segments(grids[name], xs, ys, limits[name]) for name in ("spe", "t2")}
    return MapPicture(tuple(float(v) for v in rng), xs, ys, grids, image, lines)


class MapFill(QObject):
    """Makes map ``key``'s picture of the range asked for on a worker; ``draw(MapPicture)`` is
    called on the GUI thread with the newest one. ``drawn`` is emitted after each draw."""

    drawn = Signal(object)

    def __init__(self, key: str, draw, parent=None):
        super().__init__(parent)
        self.key, self._draw = key, draw
        self._runner = runner(self, self._arrived)
        self._wanted = None   # (model, plane, limits, rng) still to make
        self._inflight = None  # the same, being made
        self.picture: MapPicture | None = None

    def request(self, model, plane, limits, rng) -> None:
        self._wanted = (model, plane, dict(limits), tuple(rng))
        _PENDING.add(self)
        if not self._runner.is_busy():
            self._start()

    def _start(self) -> None:
        args, key = self._wanted, self.key
        self._wanted, self._inflight = None, args
        self._runner.submit(lambda progress: map_picture(*args[:3], key, args[3]), tag="map")

    def _arrived(self, job, pic) -> None:
        from shiboken6 import isValid
        if self._wanted is not None:
            self._start()   # the range moved on while this one was made: only the newest is drawn
            return
        _PENDING.discard(self)
        if isValid(self):
            self._show(pic)

    def _show(self, pic: MapPicture) -> None:
        self.picture = pic
        self._draw(pic)
        self.drawn.emit(pic)

    def busy(self) -> bool:
        return self._wanted is not None or self._runner.is_busy()

    def finish(self) -> None:
        """Make and draw the newest picture asked for now, in this thread (an export, a test)."""
        if self._wanted is None and not self._runner.is_busy():
            return
        args = self._wanted or self._inflight
        self._runner.cancel()
        self._wanted = None
        _PENDING.discard(self)
        self._show(map_picture(*args[:3], self.key, args[3]))

    def cancel(self) -> None:
        self._runner.cancel()
        self._wanted = None
        _PENDING.discard(self)


def finish_all() -> None:
    """Draw every map picture still to come (before an export); maps whose view was deleted
    meanwhile are dropped."""
    from shiboken6 import isValid
    for fill in list(_PENDING):
        if isValid(fill):
            fill.finish()
        else:
            _PENDING.discard(fill)
