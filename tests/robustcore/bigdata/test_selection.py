"""Order statistics and counts of a stored score from a histogram of its float bits
(robustcore.bigdata._selection): the values np.partition and a comparison give in memory, and the
limits' calibration over stored scores equal to the in-memory one, to the bit."""
import dataclasses

import dask.array as da
import numpy as np
import pytest

from robustcore._calibration import calibrate
from robustcore.bigdata import _selection as sel
from robustcore.subspace._base import TrainingScores


def _selection(values, exclude=None, chunk=97):
    """A ScoreSelection over ``values`` in blocks of ``chunk`` (no Dask: the block functions
    and merges called as Dask calls them)."""
    blocks = [(values[s:s + chunk], None if exclude is None else exclude[s:s + chunk])
              for s in range(0, values.size, chunk)]
    return sel.ScoreSelection(lambda: sel.merge_histograms(*[sel.histogram_block(v, e) for v, e in blocks]),
                              lambda wanted: sel.concat(*[sel.gather_block(v, wanted, e) for v, e in blocks]))


def _awkward(rng, n=3000):
    """Values with ties, both zeros, infinities, negatives, subnormals and NaN."""
    odd = [0.0, -0.0, -0.0, np.inf, -np.inf, 5e-324, -5e-324, np.nan, -np.nan, np.nan]
    v = np.concatenate([rng.chisquare(3, n), np.full(200, 2.5), rng.standard_normal(300), odd,
                        -np.abs(rng.standard_normal(50))])
    return rng.permutation(v)


def test_buckets_are_ordered_as_the_values_and_nan_comes_last():
    rng = np.random.default_rng(0)
    v = np.sort(np.concatenate([_awkward(rng)[:-2], [np.nan]]))   # np.sort: NaN last
    b = sel.bucket_of(v)
    assert np.all(np.diff(b) >= 0)
    assert sel.bucket_of(np.array([-0.0]))[0] == sel.bucket_of(np.array([0.0]))[0]
    assert b[-1] == (1 << sel.BITS) - 1 and sel.bucket_of(np.array([np.inf]))[0] < b[-1]
    # scores >= 0 take a shortcut: the same buckets as the general rule's
    pos = np.abs(v[np.isfinite(v)])
    np.testing.assert_array_equal(sel.bucket_of(pos), sel.bucket_of(np.append(pos, -1.0))[:-1])


@pytest.mark.parametrize("excluded", [False, True])
def test_every_rank_and_count_is_numpys(excluded):
    rng = np.random.default_rng(1)
    v = _awkward(rng)
    ex = rng.random(v.size) < 0.2 if excluded else None
    kept = v if ex is None else v[~ex]
    s = _selection(v, ex)
    assert s.n == kept.size
    ks = np.arange(kept.size)
    s._fetch(range(s.first, s.first + s.counts.size))
    np.testing.assert_array_equal(s.kth(ks), np.sort(kept))      # NaN last, as np.partition puts it
    cuts = np.concatenate([kept[:200], [-np.inf, np.inf, np.nan, 2.5, np.nextafter(2.5, 0), -0.0, 0.0]])
    for c in cuts:
        assert s.count_le(c) == np.count_nonzero(kept <= c), c


def test_a_question_outside_the_gathered_buckets_is_gathered_by_another_pass():
    rng = np.random.default_rng(2)
    v = rng.lognormal(size=5000)
    ref = np.sort(v)
    s = _selection(v)
    k = [10, 2500, 4990]
    # the approximate run foresees these ranks: one gather for all three
    assert s.run(lambda kth, count_le, n: kth(k)).tolist() == ref[k].tolist()
    assert s.passes == 2

    def asks_more_when_exact(kth, count_le, n):
        # only the exact smallest value leads to rank 4500, which no run before asked about
        exact = kth([0])[0] == ref[0]
        return kth([4500 if exact else 11])[0], count_le(ref[4600])
    assert s.run(asks_more_when_exact) == (ref[4500], 4601)
    assert s.passes == 4          # the approximate run's gather (ranks 0, 11, the cut), then rank 4500's


def _in_memory(spe, t2, exclude, limits, alpha):
    return TrainingScores(lambda: {"spe": spe.copy(), "t2": t2.copy()}, exclude=exclude).calibrate(*limits, alpha)


def _stored(spe, t2, exclude, limits, alpha, chunk=1000):
    make = lambda: {"spe": da.from_array(spe, chunks=chunk), "t2": da.from_array(t2, chunks=chunk)}  # noqa: E731
    return TrainingScores(make, exclude=exclude).calibrate(*limits, alpha)


def _same(a, b):
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, float):
            assert np.float64(x).tobytes() == np.float64(y).tobytes(), (f.name, x, y)
        else:
            assert x == y, (f.name, x, y)


def _scores(rng, n):
    spe = rng.chisquare(8, n) * 0.5
    t2 = rng.chisquare(3, n)
    out = rng.random(n) < 0.03
    spe[out] *= 30
    return spe, t2


@pytest.mark.parametrize("case", ["kept", "raised", "lowered", "trimmed", "ties at the limit", "mostly zero"])
def test_the_calibration_over_stored_scores_is_the_in_memory_one(case):
    rng = np.random.default_rng(3)
    n = 20_000
    spe, t2 = _scores(rng, n)
    limits, exclude, alpha = (10.0, 12.0), None, 0.01
    if case == "raised":
        limits = (2.0, 3.0)
    elif case == "lowered":
        limits = (1e3, 1e3)
    elif case == "trimmed":
        exclude = spe > np.quantile(spe, 0.97)
    elif case == "ties at the limit":
        # the rows from the 94 % to the 99.5 % quantile share one score: the bounds land on it
        limits = (1e3, 1e6)
        spe[(spe >= np.quantile(spe, 0.94)) & (spe <= np.quantile(spe, 0.995))] = np.quantile(spe, 0.96)
    elif case == "mostly zero":
        spe[: int(0.6 * n)] = 0.0
        t2[: int(0.6 * n)] = 0.0
    a = _in_memory(spe, t2, exclude, limits, alpha)
    b = _stored(spe, t2, exclude, limits, alpha)
    _same(a, b)
    if case == "ties at the limit":
        assert "share the limit's score" in b.caveat
    if case == "mostly zero":
        assert b.action == "uncalibrated"
    # and equal to the rule run on the combined score in plain numpy
    c = np.maximum(spe / limits[0], t2 / limits[1])
    kept = c if exclude is None else c[~exclude]
    trim = {} if exclude is None else {"trimmed": True, "left_out": int(exclude.sum())}
    ref = calibrate(lambda ks: np.sort(kept)[ks], lambda cut: np.count_nonzero(kept <= cut), kept.size, 1.0,
                    alpha, **trim)
    _same(ref, b)


def test_non_finite_training_scores_fail_the_same_way_out_of_core():
    rng = np.random.default_rng(4)
    spe, t2 = _scores(rng, 5000)
    spe[: 3000] = np.nan
    with pytest.raises(ValueError) as mem:
        _in_memory(spe, t2, None, (10.0, 12.0), 0.01)
    with pytest.raises(ValueError) as lazy:
        _stored(spe, t2, None, (10.0, 12.0), 0.01)
    assert str(lazy.value) == str(mem.value)


def test_a_typical_calibration_takes_two_passes(monkeypatch):
    rng = np.random.default_rng(5)
    spe, t2 = _scores(rng, 200_000)
    made = []
    real = sel.ScoreSelection.__init__

    def spy(self, *a, **k):
        real(self, *a, **k)
        made.append(self)
    monkeypatch.setattr(sel.ScoreSelection, "__init__", spy)
    _same(_in_memory(spe, t2, None, (10.0, 12.0), 0.01), _stored(spe, t2, None, (10.0, 12.0), 0.01, chunk=16_384))
    assert [s.passes for s in made] == [2]


def test_a_histogram_counted_in_the_scoring_pass_gives_the_same_calibration_in_one_pass(monkeypatch):
    """TrainingScores(counting=True): the pass that makes the scores also counts the combined
    score's buckets at the limits the calibration asks about (the Histogram accumulator, fed
    block by block in any grouping); _calibrate_stored then reads the stored scores once (the
    gather), with the same answer to the bit. At other limits it counts them itself."""
    rng = np.random.default_rng(6)
    spe, t2 = _scores(rng, 50_000)
    limits = (10.0, 12.0)
    counted = sel.Histogram()
    for s in range(0, spe.size, 777):       # sub-blocks of another size than the stored ones
        part = sel.Histogram()
        part.add(np.maximum(spe[s:s + 777] / limits[0], t2[s:s + 777] / limits[1]))
        counted.merge(part)
    asked = []

    def make(lims):
        asked.append(lims)
        return {"spe": da.from_array(spe, chunks=4096), "t2": da.from_array(t2, chunks=4096),
                "histogram": (limits, counted.part)}
    blocks = []
    real = sel.histogram_block
    monkeypatch.setattr(sel, "histogram_block", lambda *a: blocks.append(1) or real(*a))
    got = TrainingScores(make, counting=True).calibrate(*limits, 0.01)
    assert asked == [limits] and not blocks          # the counts were the pass's own
    _same(_in_memory(spe, t2, None, limits, 0.01), got)
    other = TrainingScores(make, counting=True).calibrate(2.0, 3.0, 0.01)
    assert blocks                                     # counted again at the limits asked
    _same(_in_memory(spe, t2, None, (2.0, 3.0), 0.01), other)


@pytest.mark.parametrize("method", ["pca", "residual"])
def test_a_fit_with_stored_scores_counts_the_histogram_in_its_scoring_pass(method, tmp_path, monkeypatch):
    """Out of core with the scores stored (a small memory budget), the fit's calibration takes
    the histogram its scoring pass counted (no pass of its own over the stored scores) and gives
    the limits, scores and flags of the same fit counting it in a pass of its own, to the bit
    (and the in-memory fit's, to rounding: the subspace's sums are ordered otherwise there)."""
    import sys

    from robustcore import PCA, ResidualScorer
    from robustcore.bigdata import _dask, _selection, settings
    from robustcore.subspace import _base
    cls = {"pca": PCA, "residual": ResidualScorer}[method]
    rng = np.random.default_rng(7)
    X = rng.standard_normal((6000, 3)) @ rng.standard_normal((3, 12)) + 0.3 * rng.standard_normal((6000, 12)) + 1
    X[rng.choice(6000, 200, replace=False)] *= 4
    real_compute, real_pass = _dask.compute, _base._scores_pass

    def fit(counted_in_pass):
        passes = []

        def spy(*a, **k):     # the calibration's own passes over the stored scores
            passes.append(sys._getframe(1).f_code.co_name)
            return real_compute(*a, **k)
        monkeypatch.setattr(_dask, "compute", spy)
        # over scores held or stored the calibration reads them in plain slices, not through
        # compute: its passes are then its calls of the blocks' histogram and gather (a
        # histogram counted by the scoring pass's accumulator, Histogram.add, is not one)
        def counted(real, label):
            def block(*a, **k):
                if sys._getframe(1).f_code.co_name != "add":
                    passes.append(label)
                return real(*a, **k)
            return block
        for name, label in (("histogram_block", "histogram"), ("gather_block", "gather")):
            monkeypatch.setattr(_selection, name, counted(getattr(_selection, name), label))
        monkeypatch.setattr(_base, "_scores_pass", real_pass if counted_in_pass else
                            (lambda rows, kern, limits=None: real_pass(rows, kern, None)))
        with settings(memory_budget=4096, store_dir=tmp_path):
            est = cls()
            res = est.fit_row_results(da.from_array(X, chunks=(1000, 12)))
        assert not res.in_memory and ("histogram" in passes) != counted_in_pass and "gather" in passes
        return est, res
    (a, ra), (b, rb) = fit(True), fit(False)
    for name in ("spe_limit_", "t2_limit_", "offset_"):
        assert np.float64(getattr(a, name)).tobytes() == np.float64(getattr(b, name)).tobytes(), name
    for k in ("outlier_score", "outlier", "outside_spe", "outside_t2"):
        x, y = np.asarray(getattr(ra, k)[:]), np.asarray(getattr(rb, k)[:])
        assert x.tobytes() == y.tobytes(), k
    mem = cls().fit(X)
    assert np.isclose(a.spe_limit_, mem.spe_limit_, rtol=1e-10) and np.isclose(a.t2_limit_, mem.t2_limit_, rtol=1e-10)
