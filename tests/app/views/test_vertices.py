"""Curves reduced to the vertices a plot can show (app.views._vertices): in every pixel column the
reduced curve enters and leaves where the full one does and spans the same heights, so it draws
within a pixel of the full curve; a curve short enough keeps every corner (its AUC is the same)."""
import numpy as np
import pytest
from sklearn.metrics import auc, roc_curve

from app.views import _vertices as V


def _columns(x, lo, hi, columns):
    return np.clip(np.floor((x - lo) * (columns / (hi - lo))), -1, columns).astype(int)


def _check_pixel_exact(x, y, rx, ry, columns):
    """Per column: the same first and last point, and the same lowest and highest y."""
    lo, hi = x[0], x[-1]
    c, rc = _columns(x, lo, hi, columns), _columns(rx, lo, hi, columns)
    assert np.array_equal(np.unique(c), np.unique(rc))
    starts = np.flatnonzero(np.r_[True, c[1:] != c[:-1]])
    ends = np.r_[starts[1:], c.size] - 1
    rstarts = np.flatnonzero(np.r_[True, rc[1:] != rc[:-1]])
    rends = np.r_[rstarts[1:], rc.size] - 1
    np.testing.assert_array_equal(x[starts], rx[rstarts])
    np.testing.assert_array_equal(y[starts], ry[rstarts])
    np.testing.assert_array_equal(x[ends], rx[rends])
    np.testing.assert_array_equal(y[ends], ry[rends])
    np.testing.assert_array_equal(np.fmax.reduceat(y, starts), np.fmax.reduceat(ry, rstarts))
    np.testing.assert_array_equal(np.fmin.reduceat(y, starts), np.fmin.reduceat(ry, rstarts))


def test_a_long_noisy_curve_keeps_each_columns_extent_exactly():
    rng = np.random.default_rng(0)
    n, columns = 200_000, 300
    x = np.sort(rng.random(n)) * 50
    y = np.cumsum(rng.standard_normal(n))
    rx, ry = V.reduce_curve(x, y, columns=columns)
    assert rx.size <= 4 * (columns + 2) and rx.size < n / 50
    _check_pixel_exact(x, y, rx, ry, columns)
    # within one pixel column of every original point: the reduced polyline, continuous from the
    # column's lowest to its highest vertex, passes every height the points there take
    width = (x[-1] - x[0]) / columns
    for i in rng.choice(n, 300, replace=False):
        near = np.abs(rx - x[i]) <= width
        assert ry[near].min() <= y[i] <= ry[near].max()


def test_chunked_reduction_is_the_same_as_one_pass(monkeypatch):
    rng = np.random.default_rng(1)
    x = np.arange(100_000, dtype=float)
    y = rng.standard_normal(x.size)
    y[rng.choice(x.size, 500)] = np.nan     # gaps: never a column's lowest or highest
    whole = V.reduced_indices(x, y, columns=500)
    monkeypatch.setattr(V, "_CHUNK", 777)   # columns cut by chunk ends, merged by the second pass
    np.testing.assert_array_equal(V.reduced_indices(x, y, columns=500), whole)


def test_a_roc_curve_short_enough_keeps_every_corner_and_its_auc():
    rng = np.random.default_rng(2)
    truth = rng.random(3000) < 0.05
    fpr, tpr, _ = roc_curve(truth, rng.standard_normal(truth.size) + truth)
    assert fpr.size <= 4 * V.COLUMNS
    rx, ry = V.reduce_curve(fpr, tpr, x_range=(0, 1))
    np.testing.assert_array_equal(rx, fpr)
    np.testing.assert_array_equal(ry, tpr)
    assert auc(rx, ry) == auc(fpr, tpr)


def test_a_million_score_roc_is_a_few_thousand_vertices_at_the_same_auc():
    rng = np.random.default_rng(3)
    truth = rng.random(1_000_000) < 0.02
    fpr, tpr, _ = roc_curve(truth, rng.standard_normal(truth.size) + 1.2 * truth)
    columns = 1000
    rx, ry = V.reduce_curve(fpr, tpr, columns=columns, x_range=(0, 1))
    assert fpr.size > 10 * rx.size and rx.size <= 4 * (columns + 2)
    assert (rx[0], ry[0], rx[-1], ry[-1]) == (0.0, 0.0, 1.0, 1.0)
    _check_pixel_exact(fpr, tpr, rx, ry, columns)
    # a column's staircase becomes its chord: the area moves by less than a column's width
    assert auc(rx, ry) == pytest.approx(auc(fpr, tpr), abs=1.0 / columns)


def test_bad_curves_are_refused_with_a_message():
    with pytest.raises(ValueError, match="non-decreasing"):
        V.reduce_curve(np.r_[np.arange(10_000.0), 0.0], np.zeros(10_001), columns=10)
    with pytest.raises(ValueError, match="1-D arrays of one length"):
        V.reduce_curve(np.zeros(3), np.zeros(4))
