"""Isolines by marching squares in numpy (app.views._isolines), and the SPE / T² map drawing the
isolines its worker made: checked against pyqtgraph's own cell-by-cell isocurve (another way of
computing the same lines) and against closed forms."""
import threading

import numpy as np
import pyqtgraph as pg
import pytest

from app.views import _map_fill
from app.views._isolines import segments

from .conftest import make_state


def _reference(z, xs, ys, level):
    """pyqtgraph's isocurve of the same grid, its segments in the plot's coordinates (it indexes
    pixel centres at i + 0.5)."""
    lines = np.array(pg.functions.isocurve(z.T, level, connected=False), dtype=float).reshape(-1, 2, 2) - 0.5
    idx = np.arange(xs.size), np.arange(ys.size)
    return np.interp(lines[..., 0], idx[0], xs).ravel(), np.interp(lines[..., 1], idx[1], ys).ravel()


def _sorted_segments(x, y):
    """Segments as rows (x0, y0, x1, y1) with their end points in a fixed order, rows sorted."""
    seg = np.c_[x[0::2], y[0::2], x[1::2], y[1::2]]
    swap = (seg[:, 0] > seg[:, 2]) | ((seg[:, 0] == seg[:, 2]) & (seg[:, 1] > seg[:, 3]))
    seg[swap] = seg[swap][:, [2, 3, 0, 1]]
    return seg[np.lexsort(seg.T[::-1])]


@pytest.mark.parametrize("level", [0.05, 0.4, 1.2])
def test_segments_are_pyqtgraphs_isocurve(level):
    xs, ys = np.linspace(-3, 3, 121), np.linspace(-2, 2.5, 97)
    X, Y = np.meshgrid(xs, ys)
    z = X ** 2 / 2 + Y ** 2 / 3 + 0.6 * np.sin(3 * X) * np.cos(2 * Y)   # several rings and saddles
    ours = _sorted_segments(*segments(z, xs, ys, level))
    ref = _sorted_segments(*_reference(z, xs, ys, level))
    assert ours.shape == ref.shape and ours.shape[0] > 50
    np.testing.assert_allclose(ours, ref, atol=1e-12)


def test_a_circle_is_found_on_its_radius():
    xs = ys = np.linspace(-2, 2, 201)
    X, Y = np.meshgrid(xs, ys)
    x, y = segments(np.hypot(X, Y), xs, ys, 1.3)   # a cone: linear along each edge near the line
    r = np.hypot(x, y)
    np.testing.assert_allclose(r, 1.3, atol=2e-4)
    # the segments go all the way round
    angles = np.sort(np.arctan2(y, x))
    assert np.max(np.diff(angles)) < 0.05 and angles[0] < -3.1 and angles[-1] > 3.1


def test_a_saddle_cell_is_cut_twice_as_its_centre_says():
    xs = ys = np.array([0.0, 1.0])
    # a and c above, b and d below; the centre (mean 0.5) is above: a and c connect
    x, y = segments(np.array([[1.0, 0.0], [0.0, 1.0]]), xs, ys, 0.4)
    seg = _sorted_segments(x, y)
    # each segment fences off one corner that is below: b = (1, 0) and d = (0, 1)
    assert seg.shape == (2, 4)
    np.testing.assert_allclose(seg, [[0.0, 0.6, 0.4, 1.0], [0.6, 0.0, 1.0, 0.4]])


def test_no_line_where_the_grid_does_not_reach_the_level_or_is_not_finite():
    xs = ys = np.linspace(0, 1, 5)
    assert segments(np.zeros((5, 5)), xs, ys, 1.0)[0].size == 0
    z = np.full((5, 5), np.nan)
    assert segments(z, xs, ys, 0.0)[0].size == 0
    with pytest.raises(ValueError, match="is not"):
        segments(np.zeros((4, 5)), xs, ys, 0.0)


@pytest.mark.slow
def test_the_maps_slot_draws_isolines_made_off_the_gui_thread(views_for, qtbot, monkeypatch):
    made_on = []
    original = _map_fill.map_picture

    def spy(*args):
        made_on.append(threading.current_thread() is threading.main_thread())
        return original(*args)

    monkeypatch.setattr(_map_fill, "map_picture", spy)
    state = make_state("gaussian-2d", ("residual", {"n_components": 1}))
    v = views_for(state).show_view("contour")
    received = []
    v.fills["spe"].drawn.connect(received.append)
    qtbot.waitUntil(lambda: bool(received) and not v.fills["spe"].busy(), timeout=10_000)
    assert made_on and not any(made_on)   # every picture was made on a worker
    pic = received[-1]
    # What the slot drew is what the worker made ...
    for lim in ("spe", "t2"):
        x, y = v.isolines[("spe", lim)].getData()
        np.testing.assert_array_equal(x, pic.lines[lim][0])
        np.testing.assert_array_equal(y, pic.lines[lim][1])
    # ... and is pyqtgraph's isocurve of the estimator's own grid over the range shown.
    est = state.result("residual").estimator
    spe_g, t2_g = est.grid(pic.xs, pic.ys)
    for lim, g, level in (("spe", spe_g, est.spe_limit_), ("t2", t2_g, est.t2_limit_)):
        drawn = _sorted_segments(*v.isolines[("spe", lim)].getData())
        ref = _sorted_segments(*_reference(g, pic.xs, pic.ys, level))
        assert drawn.shape == ref.shape and drawn.shape[0] > 10
        np.testing.assert_allclose(drawn, ref, rtol=1e-9, atol=1e-12)
    (x0, x1), (y0, y1) = v.plots["spe"].getViewBox().viewRange()
    assert pic.rng == pytest.approx((x0, x1, y0, y1))


def test_an_export_after_a_map_view_was_closed_draws_the_others(qtbot):
    """A map still to come whose view was closed is dropped (an export of another view once
    raised 'Internal C++ object already deleted')."""
    from shiboken6 import delete

    from app.views import ResultViews
    from app.views._cloud import finish_pending_drawings
    state = make_state("gaussian-2d", ("residual", {"n_components": 1}))
    views = ResultViews(state)   # not qtbot's: this test deletes it
    views.resize(1100, 720)
    views.show()
    v = views.show_view("contour")
    v.fills["spe"].request(v.model, v.plane, v.limits, (-1.0, 1.0, -1.0, 1.0))
    delete(views)
    finish_pending_drawings()   # nothing left to draw into, and no error
    assert not _map_fill._PENDING
