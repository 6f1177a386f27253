"""A view's first show does no O(n) pass on the GUI thread (issue 33.2): at 2,000,000 rows the
SPE / T² map's first show held the window 1.3 s computing every sample's plane coordinates and
their extent. Above POINTS_MAX samples those now come from the worker that bins them; checked
by the thread the work runs on, not by timing."""
import threading

import numpy as np
import pytest

from app.views import _aggregate as agg
from app.views._binning import block_rows, blocks
from app.views._cloud import POINTS_MAX
from robustcore import compare

from .test_binned_cloud import _planted, _rest, _state


def _record(monkeypatch, module, name, calls):
    real = getattr(module, name)

    def spy(*a, **kw):
        calls.append(threading.current_thread() is threading.main_thread())
        return real(*a, **kw)

    monkeypatch.setattr(module, name, spy)


@pytest.fixture
def big_map(views_for, qtbot, monkeypatch):
    X, known = _planted(POINTS_MAX + 50_000, seed=7)
    state, res = _state(X, outliers=known)
    planes, bins = [], []   # whether each call ran on the GUI thread
    _record(monkeypatch, compare, "plane_coordinates", planes)
    _record(monkeypatch, agg, "aggregate", bins)
    v = views_for(state).show_view("contour")
    v.method_box.set_key("pca")
    for cloud in v.clouds.values():
        _rest(qtbot, cloud)
    return X, res, v, planes, bins


def _reference_xy(X, res, v):
    """The samples' coordinates in the map's plane, computed here with numpy."""
    return (X - v.model["mean"]) @ v.plane.T


@pytest.mark.slow
def test_the_maps_samples_are_placed_and_binned_off_the_gui_thread(big_map):
    X, res, v, planes, bins = big_map
    # on a worker, by blocks, once for both maps
    assert len(planes) == len(list(blocks(0, X.shape[0], block_rows(X, X.shape[1])))) and not any(planes)
    assert bins and not any(bins)
    xy = _reference_xy(X, res, v)
    flags = np.asarray(res.flags["outlier"], dtype=bool)
    for cloud in v.clouds.values():
        x0, x1, y0, y1 = cloud.density.extent
        ref, _, _ = np.histogram2d(xy[:, 0], xy[:, 1], bins=cloud.density.counts.shape,
                                   range=[[x0, x1], [y0, y1]])
        np.testing.assert_array_equal(cloud.density.counts, ref)   # every sample, in its bin
        pic = cloud.binned.picture
        assert pic.layer_totals[pic.flagged_layer] == flags.sum()
    # framed on the samples, with room for the limits' isolines around them
    (vx0, vx1), (vy0, vy1) = v.plots["spe"].getViewBox().viewRange()
    assert vx0 < xy[:, 0].min() and vx1 > xy[:, 0].max() and vy0 < xy[:, 1].min() and vy1 > xy[:, 1].max()
    assert f"of {X.shape[0]:,} flagged" in v.status.text()


@pytest.mark.slow
def test_a_new_rule_rebins_with_its_flags_without_placing_the_samples_again(big_map, qtbot):
    X, res, v, planes, bins = big_map
    before, placed = v.plots["spe"].getViewBox().viewRange(), len(planes)
    v.set_rule("t2")
    for cloud in v.clouds.values():
        _rest(qtbot, cloud)
    assert len(planes) == placed
    t2 = np.asarray(res.flags["outside_t2"], dtype=bool)
    assert np.any(t2 != np.asarray(res.flags["outlier"], dtype=bool))   # a rule that flags others
    xy = _reference_xy(X, res, v)[t2]
    for cloud in v.clouds.values():
        pic = cloud.binned.picture
        x0, x1, y0, y1 = pic.extent
        ref, _, _ = np.histogram2d(xy[:, 0], xy[:, 1], bins=pic.counts.shape[1:], range=[[x0, x1], [y0, y1]])
        np.testing.assert_array_equal(pic.counts[pic.flagged_layer], ref)   # the T² flags, where they are
    assert v.plots["spe"].getViewBox().viewRange() == before   # the user's framing kept
    assert not any(bins)
