"""Zooming a very large cloud before its index is built, and zooms superseding each other: the
window answers at once from the fine counts its first picture filled (coarse bins, said so),
then draws the exact picture of what is on screen, down to single samples."""
import threading
import time

import numpy as np

from app.views import _geometry as geo
from robustcore._progress import Cancelled, Reporter

from .test_binned_cloud import _planted, _rest, _scatter, _state


def _held_index(monkeypatch, tmp_path):
    """Index very large clouds from 1,000 samples, and hold every build until ``release`` is set."""
    import app.out_of_core as ooc
    import app.views._cloud_index as ci
    monkeypatch.setattr(ci, "INDEX_ROWS", 1_000)
    monkeypatch.setattr(ooc, "_working", str(tmp_path))
    release = threading.Event()
    real = ci.CloudIndex.__init__

    def held(self, *a, **kw):
        release.wait(60)
        real(self, *a, **kw)

    monkeypatch.setattr(ci.CloudIndex, "__init__", held)
    return release


def _exact(v, proj):
    (x0, x1), (y0, y1) = v.plot.getViewBox().viewRange()
    return geo.in_rect(proj[:, 0], proj[:, 1], x0, y0, x1, y1)


def test_a_zoom_before_the_index_answers_coarsely_at_once_then_exactly(views_for, qtbot, monkeypatch, tmp_path):
    release = _held_index(monkeypatch, tmp_path)
    X, known = _planted(40_000, seed=3)
    state, res = _state(X, outliers=known)
    v = _scatter(views_for, state)
    _rest(qtbot, v.cloud)
    b = v.cloud.binned
    assert b.columns.index is None and b.columns.fine is not None   # filled by the first picture
    proj = np.asarray(res.arrays["projection"])
    drawn = []
    b.drawn.connect(lambda pic, levels: drawn.append(pic))
    # wide: drawn from the fine counts, exact for its bins, with no pass over the rows
    vb = v.plot.getViewBox()
    x0, x1, y0, y1 = b.picture.extent
    vb.setRange(xRange=(x0, x0 + 0.8 * (x1 - x0)), yRange=(y0, y1), padding=0)
    _rest(qtbot, v.cloud)
    assert len(drawn) == 1 and not drawn[0].coarse
    e = drawn[0].extent
    assert drawn[0].in_view == geo.in_rect(proj[:, 0], proj[:, 1], e[0], e[2], e[1], e[3]).size
    # narrow: coarse bins first, then the exact picture of the range, each sample a point
    drawn.clear()
    vb.setRange(xRange=(0.5, 0.9), yRange=(-0.3, 0.1), padding=0)
    qtbot.waitUntil(lambda: bool(drawn), timeout=10_000)
    assert drawn[0].coarse and "coarse bins until the cloud is indexed" in v.status.text()
    e = drawn[0].extent
    assert e[0] <= 0.5 and e[1] >= 0.9 and e[2] <= -0.3 and e[3] >= 0.1
    _rest(qtbot, v.cloud)
    assert not drawn[-1].coarse and drawn[-1].all_points
    np.testing.assert_array_equal(np.sort(v.cloud.sample_index), _exact(v, proj))
    assert "coarse" not in v.status.text()
    # once indexed, a zoom reads through the index, never coarsely
    release.set()
    qtbot.waitUntil(lambda: b.columns.index is not None, timeout=60_000)
    drawn.clear()
    vb.setRange(xRange=(-0.5, -0.2), yRange=(0.0, 0.2), padding=0)
    _rest(qtbot, v.cloud)
    assert drawn and not any(p.coarse for p in drawn)
    np.testing.assert_array_equal(np.sort(v.cloud.sample_index), _exact(v, proj))


def test_a_newer_zoom_supersedes_one_in_flight_and_only_its_picture_is_drawn(views_for, qtbot, monkeypatch):
    import app.views._binned as binned
    X, known = _planted(30_000, seed=4)
    state, res = _state(X, outliers=known)
    v = _scatter(views_for, state)
    _rest(qtbot, v.cloud)
    b = v.cloud.binned
    real = binned.agg.aggregate
    started, stopped = [], []

    def slow(*a, report=None, **kw):   # a pass long enough to be overtaken, cancellable between blocks
        started.append(kw.get("rng"))
        try:
            for _ in range(40):
                Reporter(report).report(0.0, "binning")
                time.sleep(0.02)
        except Cancelled:
            stopped.append(kw.get("rng"))
            raise
        return real(*a, report=report, **kw)

    monkeypatch.setattr(binned.agg, "aggregate", slow)
    drawn = []
    b.drawn.connect(lambda pic, levels: drawn.append(pic))
    vb = v.plot.getViewBox()
    vb.setRange(xRange=(-2.0, 2.0), yRange=(-1.0, 1.0), padding=0)
    qtbot.waitUntil(lambda: bool(started), timeout=10_000)   # the first zoom's pass is running
    first = started[0]
    vb.setRange(xRange=(1.0, 1.4), yRange=(-0.2, 0.2), padding=0)
    _rest(qtbot, v.cloud)
    assert stopped == [first]   # cancelled between two blocks
    assert len(drawn) == 1 and drawn[0].extent != first
    proj = np.asarray(res.arrays["projection"])
    np.testing.assert_array_equal(np.sort(v.cloud.sample_index), _exact(v, proj))


def test_an_index_that_cannot_be_built_leaves_every_zoom_exact_and_says_why(views_for, qtbot, monkeypatch,
                                                                             tmp_path, capsys):
    import app.out_of_core as ooc
    import app.views._cloud_index as ci
    monkeypatch.setattr(ci, "INDEX_ROWS", 1_000)
    monkeypatch.setattr(ooc, "_working", str(tmp_path))

    def no_room(self, *a, **kw):
        raise OSError("No space left on device")

    monkeypatch.setattr(ci.CloudIndex, "__init__", no_room)
    X, known = _planted(40_000, seed=5)
    state, res = _state(X, outliers=known)
    v = _scatter(views_for, state)
    _rest(qtbot, v.cloud)
    b = v.cloud.binned
    qtbot.waitUntil(lambda: bool(b.index_error), timeout=20_000)
    assert "No space left on device" in b.index_error and b.columns.index is None
    assert "zoom index could not be built" in capsys.readouterr().err
    proj = np.asarray(res.arrays["projection"])
    vb = v.plot.getViewBox()
    vb.setRange(xRange=(0.5, 0.9), yRange=(-0.3, 0.1), padding=0)
    _rest(qtbot, v.cloud)
    assert not b.picture.coarse and b.picture.all_points
    np.testing.assert_array_equal(np.sort(v.cloud.sample_index), _exact(v, proj))
    assert "could not be binned" not in v.status.text()
