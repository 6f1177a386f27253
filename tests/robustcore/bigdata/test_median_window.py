"""The robust outlier map's median and MAD of OD^(2/3) from the value windows its distances' sweep
keeps (robustcore.bigdata._median_window): the values np.partition places, to the bit, or
Unproven and the four sweeps over the SPE as before."""
import functools

import numpy as np
import pytest

from robustcore import _passes
from robustcore.bigdata import _median_window as mw
from robustcore.bigdata import _rows, settings
from robustcore.bigdata._median_window import MedianWindow, Unproven
from robustcore.outlier_map import _sliced_map


def _fed(values, step):
    w = MedianWindow(values.size)
    for s in range(0, values.size, step):
        w.add(values[s:s + step])
    return w


def _ranks(n):
    lo = (n - 1) // 2
    return np.array([lo, min(lo + 1, n - 1)])


@pytest.mark.parametrize("n, step", [(20_001, 3_000), (50_000, 7_919), (4_000, 4_000)])
@pytest.mark.parametrize("ties", [False, True])
def test_windows_answer_the_values_np_partition_places(n, step, ties):
    rng = np.random.default_rng(n + ties)
    v = np.cbrt(rng.chisquare(20, n) * (1 + 9 * (rng.random(n) < 0.05)))
    if ties:
        v = np.round(v, 2)           # many equal values at the median and at the MAD's distance
    w = _fed(v, step)
    ks = _ranks(n)
    np.testing.assert_array_equal(w.kth_values(ks), np.partition(v, ks)[ks])
    centre = float(np.median(v))
    dev = np.abs(v - centre)
    np.testing.assert_array_equal(w.kth_deviations(centre, ks), np.partition(dev, ks)[ks])
    assert w.kept < n / 2            # only values near the two ranks are kept


def test_a_misleading_first_slice_is_unproven():
    v = np.sort(np.random.default_rng(1).random(30_000))      # rows in order: the first slice the smallest
    with pytest.raises(Unproven):
        _fed(v, 5_000).kth_values(_ranks(v.size))
    nan = np.random.default_rng(2).random(30_000)
    nan[7] = np.nan
    with pytest.raises(Unproven):
        _fed(nan, 5_000).kth_values(_ranks(nan.size))
    part = MedianWindow(nan.size)                               # not fed every value
    part.add(np.random.default_rng(3).random(20_000))
    with pytest.raises(Unproven):
        part.kth_values(_ranks(nan.size))


def test_too_many_kept_values_abandon_the_windows(monkeypatch):
    monkeypatch.setattr(mw, "KEEP_AT_MOST", 0.0)
    v = np.ones(200_000)                                      # every value in the centre's window
    w = _fed(v, 50_000)
    assert w.failed and w.near_centre == [] and w.near_mad == []
    with pytest.raises(Unproven):
        w.kth_values(_ranks(v.size))


def _scores(n, order=False):
    rng = np.random.default_rng(9)
    P = rng.standard_normal((n, 3)) * np.array([3.0, 2.0, 1.0])
    spe = rng.chisquare(20, n) * 0.1
    spe[rng.random(n) < 0.05] *= 9.0
    if order:
        spe.sort()
    var = P.var(axis=0, ddof=1)
    return spe, (P * P / var).sum(axis=1), P, var


@pytest.mark.parametrize("order", [False, True])
def test_the_robust_sliced_map_sweeps_the_spe_only_when_the_windows_fail(monkeypatch, tmp_path, order):
    """Shuffled rows: the OD cut-off from the windows, no sweep over the SPE; rows in order of
    SPE (the first slice misleads): the four sweeps. Both equal the sweeps' cut-off to the bit."""
    spe, t2, P, var = _scores(40_000, order)
    monkeypatch.setattr(_rows, "fill_rows", functools.partial(_rows.fill_rows, step=6_000))
    sweeps = []
    real = _passes.kth_of_slices_of
    monkeypatch.setattr(_passes, "kth_of_slices_of", lambda *a, **k: sweeps.append(1) or real(*a, **k))
    kw = dict(robust=True, crit=0.975, cutoffs=None, variances=var)
    with settings(memory_budget=1 << 30, store_dir=tmp_path):
        got = _sliced_map(spe, t2, P, **kw)
        assert len(sweeps) == (2 if order else 0)
        monkeypatch.setattr(MedianWindow, "_place", staticmethod(lambda w: None))     # the sweeps' way
        ref = _sliced_map(spe, t2, P, **kw)
    assert got["od_cutoff"] == ref["od_cutoff"] > 0
    assert got["counts"] == ref["counts"]
    np.testing.assert_array_equal(got["region"], ref["region"])


@pytest.mark.parametrize("seed", range(40))
def test_an_answer_is_np_partitions_value_or_unproven_never_another(seed):
    """Adversarial slices: few distinct values (ties on the windows' edges), a first slice drawn
    from a shifted or narrower law, sizes where the windows hold a handful of values."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(50, 30_000))
    v = rng.integers(0, int(rng.integers(2, 60)), n).astype(np.float64) / 7.0
    head = int(rng.integers(1, n))
    v[:head] = v[:head] * rng.choice([1.0, 0.97, 1.05]) + rng.choice([0.0, 0.01, -0.02])
    w = _fed(v, int(rng.integers(1, n + 1)))
    ks = _ranks(n)
    try:
        got = w.kth_values(ks)
    except Unproven:
        return
    np.testing.assert_array_equal(got, np.partition(v, ks)[ks])
    centre = float(got[0] + (got[1] - got[0]) * 0.5)
    try:
        dev = w.kth_deviations(centre, ks)
    except Unproven:
        return
    np.testing.assert_array_equal(dev, np.partition(np.abs(v - centre), ks)[ks])


def test_released_windows_hold_no_values():
    v = np.random.default_rng(4).random(10_000)
    w = _fed(v, 2_500)
    assert w.kept and w.near_centre
    w.release()
    assert w.near_centre == [] and w.near_mad == []
    with pytest.raises(Unproven):
        w.kth_values(_ranks(v.size))
