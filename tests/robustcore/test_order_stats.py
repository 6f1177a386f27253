"""Exact order statistics by sampled brackets (robustcore._order_stats) against np.partition."""
import numpy as np
import pytest

import robustcore._order_stats as os_mod
from robustcore._order_stats import kth_values


def _cases():
    rng = np.random.default_rng(11)
    n = os_mod.BRACKET_MIN + 12_345
    base = rng.standard_normal(n)
    yield "gaussian", base
    yield "ties", np.round(base, 1)
    yield "sorted", np.sort(base)
    yield "half constant", np.where(np.arange(n) < n // 2, 5.0, base)
    with_nan = base.copy()
    with_nan[rng.random(n) < 0.3] = np.nan
    yield "NaN", with_nan
    yield "heavy tail", rng.standard_cauchy(n)
    yield "integers", rng.integers(0, 7, n)


@pytest.mark.parametrize("name,v", list(_cases()), ids=[c[0] for c in _cases()])
@pytest.mark.parametrize("excluded", [False, True])
def test_the_values_np_partition_puts_at_each_rank(name, v, excluded):
    rng = np.random.default_rng(5)
    exclude = rng.random(v.size) < 0.2 if excluded else None
    kept = v if exclude is None else v[~exclude]
    m = kept.size
    ks = np.array([0, 1, m // 4, (m - 1) // 2, m // 2, m - 2, m - 1,
                   *rng.integers(0, m, 6)])
    want = np.partition(kept, np.unique(ks))[ks]
    got = kth_values(v, ks, exclude)
    assert got.dtype == kept.dtype
    np.testing.assert_array_equal(got, want)


def test_a_missed_bracket_falls_back_to_the_partition(monkeypatch):
    v = np.random.default_rng(2).standard_normal(os_mod.BRACKET_MIN * 2)
    monkeypatch.setattr(os_mod, "SIGMAS", 0.0)         # brackets of width ~0: most miss
    ks = [v.size // 3, v.size // 2, v.size - 5]
    np.testing.assert_array_equal(kth_values(v, ks), np.partition(v, ks)[ks])


def test_short_arrays_and_own_arrays():
    v = np.array([3.0, 1.0, 2.0])
    assert kth_values(v, [0, 2]).tolist() == [1.0, 3.0] and v.tolist() == [3.0, 1.0, 2.0]
    assert kth_values(v, [1], np.array([False, True, False])).tolist() == [3.0]
    w = v.copy()
    assert kth_values(w, [1], own=True).tolist() == [2.0]


@pytest.mark.parametrize("busy", [0.0, 5.0])
@pytest.mark.parametrize("name,v", list(_cases()), ids=[c[0] for c in _cases()])
def test_the_sweeps_on_two_halves_give_the_same_values(monkeypatch, busy, name, v):
    """From SPLIT_MIN values the sweeps run on the array's two halves, side by side where a core
    is free (robustcore._lanes.both) or one after the other: np.partition's values either way."""
    import threading

    import robustcore._lanes as lanes_mod
    import robustcore._threads as threads_mod
    monkeypatch.setattr(os_mod, "SPLIT_MIN", os_mod.BRACKET_MIN)
    monkeypatch.setattr(lanes_mod, "pass_threads", lambda environ=None: 2)
    monkeypatch.setattr(threads_mod, "busy_elsewhere", lambda samples=3: busy)
    seen = set()
    sweep = os_mod._sweep

    def spy(*a):
        seen.add(threading.get_ident())
        return sweep(*a)
    monkeypatch.setattr(os_mod, "_sweep", spy)
    rng = np.random.default_rng(8)
    exclude = rng.random(v.size) < 0.2
    for ex in (None, exclude):
        kept = v if ex is None else v[~ex]
        m = kept.size
        ks = np.array([0, m // 4, (m - 1) // 2, m // 2, m - 1, *rng.integers(0, m, 4)])
        np.testing.assert_array_equal(kth_values(v, ks, ex), np.partition(kept, np.unique(ks))[ks])
    # the caller's thread and a lane thread (whichever the pool hands out), or the caller's alone;
    # NaN at a bracket's end: the partition, no sweeps
    if name == "NaN":
        assert not seen
    elif busy:
        assert seen == {threading.get_ident()}
    else:
        assert threading.get_ident() in seen and len(seen) >= 2
