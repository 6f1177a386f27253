"""The cloud's aggregation (app/views/_aggregate.py) against brute-force numpy: histogram2d for
the bins, a full lexsort for the highest samples, np.percentile for the colour range, the
geometry helpers over every point for selections."""
import numpy as np
import pytest

from app.views import _aggregate as agg
from app.views import _geometry as geo
from robustcore._progress import Cancelled


class Sliced:
    """A column store that only slices (like Zarr) and remembers the largest read."""

    def __init__(self, a):
        self.a = a
        self.shape = a.shape
        self.largest = 0

    def __getitem__(self, key):
        rows = key[0] if isinstance(key, tuple) else key
        assert isinstance(rows, slice), "read by slices only"
        self.largest = max(self.largest, len(range(*rows.indices(self.shape[0]))))
        return self.a[key]

    def __array__(self, *_, **__):
        raise AssertionError("the whole column was read")


def _cloud(n=20_000, seed=0, bad=True):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    y = rng.normal(size=n) * 2
    if bad and n > 10:
        x[rng.choice(n, 50, replace=False)] = np.nan
        y[rng.choice(n, 50, replace=False)] = np.inf
        x[rng.choice(n, 5, replace=False)] = -np.inf
    codes = rng.integers(0, 3, size=n)
    flags = rng.random(n) < 0.05
    score = np.round(rng.exponential(size=n), 1)      # many ties
    score[rng.choice(n, min(n, 20), replace=False)] = np.nan
    return x, y, codes, flags, score


def _ref_counts(x, y, layer, n_layers, rng, bins):
    out = np.zeros((n_layers, *bins))
    for k in range(n_layers):
        m = layer == k
        out[k], _, _ = np.histogram2d(x[m], y[m], bins=bins, range=[rng[:2], rng[2:]])
    return out


def _ref_top(idx, score, k):
    key = np.where(np.isnan(score[idx]), -np.inf, score[idx])
    return idx[np.lexsort((idx, -key))][:k]


@pytest.mark.parametrize("rng", [None, (-0.5, 0.7, -1.0, 3.0), "tiny"])
def test_bins_layers_and_top_points_equal_brute_force(rng):
    x, y, codes, flags, score = _cloud()
    if rng == "tiny":   # narrower than one bin of the full view, around a few flagged samples
        i = np.flatnonzero(flags & np.isfinite(x) & np.isfinite(y))[:3]
        x[i[1:]], y[i[1:]] = x[i[0]] + 1e-9, y[i[0]]
        rng = (x[i[0]] - 1e-8, x[i[0]] + 1e-8, y[i[0]] - 1e-8, y[i[0]] + 1e-8)
    pic = agg.aggregate(x, y, rng=rng, bins=(37, 23), codes=codes, n_codes=3, flags=flags, score=score,
                        top_k=25, max_points=0, block=1_000)
    ok = np.isfinite(x) & np.isfinite(y)
    if rng is None:
        rng = (x[ok].min(), x[ok].max(), y[ok].min(), y[ok].max())
    assert pic.extent == pytest.approx(rng, rel=0, abs=0) or rng[1] - rng[0] < 1e-5
    x0, x1, y0, y1 = pic.extent
    layer = np.where(flags, 3, codes)
    ref = _ref_counts(x, y, layer, 4, pic.extent, (37, 23))
    np.testing.assert_array_equal(pic.counts, ref)
    inview = np.flatnonzero(ok & (x >= x0) & (x <= x1) & (y >= y0) & (y <= y1))
    assert pic.in_view == inview.size == pic.counts.sum()
    np.testing.assert_array_equal(pic.layer_totals, np.bincount(layer[inview], minlength=4))
    assert pic.n_finite == ok.sum() and pic.n == x.size
    cand = inview[flags[inview]]
    assert pic.n_candidates == cand.size
    want = _ref_top(cand, score, 25)
    np.testing.assert_array_equal(pic.points["index"], want)
    np.testing.assert_array_equal(pic.points["x"], x[want])
    assert pic.points["flag"].all()
    np.testing.assert_array_equal(pic.points["code"], codes[want])
    assert cand.size and not pic.all_points


def test_few_samples_in_view_are_all_points_exactly():
    x, y, codes, flags, score = _cloud()
    rng = (0.0, 0.05, 0.0, 0.1)
    pic = agg.aggregate(x, y, rng=rng, codes=codes, n_codes=3, flags=flags, score=score, max_points=5000,
                        block=777)
    want = np.flatnonzero((x >= 0) & (x <= 0.05) & (y >= 0) & (y <= 0.1))
    assert 0 < want.size <= 5000 and pic.all_points
    np.testing.assert_array_equal(pic.points["index"], want)
    np.testing.assert_array_equal(pic.points["y"], y[want])
    np.testing.assert_array_equal(pic.points["code"], codes[want])
    np.testing.assert_array_equal(pic.points["flag"], flags[want])
    np.testing.assert_array_equal(pic.points["score"], score[want])
    assert "each drawn as a point" in agg.describe(pic)


def test_no_flags_ranks_every_sample_and_no_score_keeps_the_first():
    x, y, codes, _, score = _cloud(bad=False)
    pic = agg.aggregate(x, y, score=score, top_k=40, max_points=10)
    np.testing.assert_array_equal(pic.points["index"], _ref_top(np.arange(x.size), score, 40))
    pic = agg.aggregate(x, y, top_k=7, max_points=0)
    np.testing.assert_array_equal(pic.points["index"], np.arange(7))


def test_empty_range_single_sample_and_nothing_finite():
    x, y, codes, flags, score = _cloud()
    pic = agg.aggregate(x, y, rng=(100.0, 101.0, 100.0, 101.0), flags=flags, score=score, bins=(5, 5))
    assert pic.in_view == 0 and pic.counts.sum() == 0 and pic.points["index"].size == 0
    one = agg.aggregate(np.array([2.5]), np.array([-1.0]), bins=(4, 4))
    assert one.in_view == 1 and one.all_points and one.points["index"].tolist() == [0]
    ref, _, _ = np.histogram2d([2.5], [-1.0], bins=4, range=[one.extent[:2], one.extent[2:]])
    np.testing.assert_array_equal(one.counts[0], ref)
    none = agg.aggregate(np.array([np.nan, 1.0]), np.array([0.0, np.inf]))
    assert none.in_view == 0 and none.n_finite == 0
    assert "2 not finite" in agg.describe(none)


def test_quantiles_equal_numpy_percentile_without_reading_whole():
    rng = np.random.default_rng(5)
    v = np.r_[rng.normal(size=300_000), np.full(50_000, 0.25), [np.nan, np.inf, -np.inf] * 10]
    rng.shuffle(v)
    store = Sliced(v)
    qs = [0, 1, 37.5, 50, 99, 100]
    got = agg.quantiles(store, qs, block=50_000)
    fin = v[np.isfinite(v)]
    np.testing.assert_allclose(got, np.percentile(fin, qs), rtol=0, atol=1e-12)
    assert store.largest <= 50_000
    # order statistics exactly, where no interpolation enters
    srt = np.sort(fin)
    for q in (0, 100):
        assert agg.quantiles(v, [q])[0] == srt[0 if q == 0 else -1]
    assert agg.quantiles(np.full(10, 3.0), [1, 99]).tolist() == [3.0, 3.0]
    assert agg.quantiles(np.array([7.0]), [1, 99]).tolist() == [7.0, 7.0]
    assert np.isnan(agg.quantiles(np.array([np.nan]), [50])).all()


def test_the_percentiles_first_pass_holds_its_histogram_and_a_block():
    """The score's percentiles' first pass rides the cloud's extent pass: each block's buckets
    are counted as they come, not gathered by 4M (64 MB at once at 30M rows)."""
    import tracemalloc
    rng = np.random.default_rng(8)
    v = rng.normal(size=3_000_000)
    ranks = agg.Ranks([1, 99])
    tracemalloc.start()
    try:
        for a in range(0, v.size, 100_000):
            ranks.first(v[a:a + 100_000])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 6 << 20, peak   # a block's buckets and mask (2.5 MB), not 4M buckets (32 MB)
    got = ranks.result(_gather_all(ranks, v), v)
    np.testing.assert_allclose(got, np.percentile(v, [1, 99]), rtol=0, atol=1e-12)


def _gather_all(ranks, v):
    gather = ranks.gather()
    for a in range(0, v.size, 100_000):
        gather.add(v[a:a + 100_000])
    return gather


@pytest.mark.parametrize("keep", [1 << 21, 500])
def test_quantiles_in_two_passes_equal_the_narrowing_passes_and_numpy(monkeypatch, keep):
    """The two passes of Ranks (bit-pattern buckets, then the wanted buckets' values) give what
    the narrowing histograms give and np.percentile gives, on values of either sign, tied, in one
    power of two, or spread over many; with few values kept, a crowded bucket falls back to the
    narrowing passes and still agrees."""
    monkeypatch.setattr(agg, "_Q_KEEP", keep)
    rng = np.random.default_rng(11)
    cases = {"normal": rng.normal(size=200_000), "one octave": 1.0 + rng.random(200_000),
             "wide": np.exp(rng.normal(scale=20, size=100_000)) * rng.choice([-1, 1], 100_000),
             "ties": np.round(rng.normal(size=100_000), 1), "zeros": np.r_[np.zeros(5000), -np.zeros(5000), 1.0]}
    for name, v in cases.items():
        v = np.r_[v, [np.nan, np.inf, -np.inf]]
        qs = [0, 1, 2.5, 50, 99, 100]
        fin = v[np.isfinite(v)]
        got = agg.quantiles(Sliced(v), qs, block=30_000)
        assert (got == np.percentile(fin, qs)).all(), name
        assert (got == _narrowing(v, qs)).all(), name


def _narrowing(v, qs):
    """The percentiles by the narrowing histograms alone (the route before Ranks)."""
    fin = v[np.isfinite(v)]
    pos = np.asarray(qs) / 100.0 * (fin.size - 1)
    ranks = sorted({int(np.floor(p)) for p in pos} | {int(np.ceil(p)) for p in pos})
    found = agg._order_stats(agg._col(v), ranks, float(fin.min()), float(fin.max()), agg.Reporter(None), 30_000)
    out = []
    for p in pos:
        f = int(np.floor(p))
        a, b, t = found[f], found[int(np.ceil(p))], p - f
        out.append(a + (b - a) * t if t < 0.5 else b - (b - a) * (1 - t))
    return np.array(out)


def test_rectangle_and_lasso_select_the_brute_force_sets_from_sliced_stores():
    x, y, _, _, score = _cloud(50_000)
    xs, ys = Sliced(np.c_[x, y]), Sliced(np.c_[x, y])
    got = agg.select(agg.Column(xs, 0), agg.Column(ys, 1), ("rect", (0.5, 1.0, -0.2, -1.5)), block=4_000)
    want = geo.in_rect(x, y, 0.5, 1.0, -0.2, -1.5)
    assert got.complete and got.count == want.size
    np.testing.assert_array_equal(got.index, want)
    assert xs.largest <= 4_000
    poly = np.array([[0, 0], [2, 0.5], [1.5, 3], [-1, 2], [0.3, 1.0]])
    got = agg.select(x, y, ("lasso", poly), score=score, block=3_333)
    np.testing.assert_array_equal(got.index, geo.in_polygon(x, y, poly))
    capped = agg.select(x, y, ("lasso", poly), score=score, cap=100, block=3_333)
    inside = geo.in_polygon(x, y, poly)
    assert capped.count == inside.size and not capped.complete
    np.testing.assert_array_equal(capped.index, np.sort(_ref_top(inside, score, 100)))
    with pytest.raises(ValueError, match="rect"):
        agg.select(x, y, ("circle", (0, 0, 1)))


def test_stored_columns_are_read_by_blocks_and_points_taken_by_blocks():
    x, y, codes, flags, score = _cloud(30_000)
    proj = Sliced(np.c_[x, y])
    sf, ss = Sliced(flags), Sliced(score)
    pic = agg.aggregate(agg.Column(proj, 0), agg.Column(proj, 1), flags=sf, score=ss, top_k=60, max_points=0,
                        block=2_500)
    ref = agg.aggregate(x, y, flags=flags, score=score, top_k=60, max_points=0)
    np.testing.assert_array_equal(pic.counts, ref.counts)
    np.testing.assert_array_equal(pic.points["index"], ref.points["index"])
    np.testing.assert_array_equal(pic.points["x"], ref.points["x"])
    assert max(proj.largest, sf.largest, ss.largest) <= 2_500
    idx = np.array([0, 5, 2_499, 2_500, 29_999])
    np.testing.assert_array_equal(agg.take(agg.Column(proj, 1), idx, block=2_500), y[idx])


def test_memmap_columns(tmp_path):
    x, y, _, flags, score = _cloud(10_000)
    mm = np.lib.format.open_memmap(tmp_path / "p.npy", mode="w+", dtype=np.float32, shape=(x.size, 2))
    mm[:] = np.c_[x, y]
    mm.flush()
    pic = agg.aggregate(agg.Column(mm, 0), agg.Column(mm, 1), bins=(10, 10), max_points=0)
    ok = np.isfinite(mm[:, 0]) & np.isfinite(mm[:, 1])
    ref, _, _ = np.histogram2d(mm[ok, 0].astype(float), mm[ok, 1].astype(float), bins=10,
                               range=[pic.extent[:2], pic.extent[2:]])
    np.testing.assert_array_equal(pic.counts[0], ref)


def test_a_cancel_between_blocks_stops_the_pass():
    x, y, *_ = _cloud(10_000)
    seen = []

    def report(f, msg):
        seen.append(f)
        return len(seen) < 3

    with pytest.raises(Cancelled):
        agg.aggregate(x, y, report=report, block=1_000)
    assert len(seen) == 3


def test_describe_names_bins_and_flagged_points():
    x, y, codes, flags, score = _cloud(bad=False)
    pic = agg.aggregate(x, y, bins=(300, 300), flags=flags, score=score, top_k=500, max_points=100)
    text = agg.describe(pic)
    assert text.startswith(f"{x.size:,} samples in 300 x 300 bins; {int(flags.sum()):,} flagged: 500 highest")


def test_mean_score_per_bin_equals_numpy():
    x, y, codes, flags, score = _cloud(bad=False)
    pic = agg.aggregate(x, y, bins=(9, 7), codes=codes, n_codes=3, score=score, mean_score=True, block=3_000)
    r = [pic.extent[:2], pic.extent[2:]]
    ok = np.isfinite(score)
    for k in range(3):
        m = ok & (codes == k)
        s, _, _ = np.histogram2d(x[m], y[m], bins=(9, 7), range=r, weights=score[m])
        c, _, _ = np.histogram2d(x[m], y[m], bins=(9, 7), range=r)
        with np.errstate(invalid="ignore"):
            np.testing.assert_allclose(pic.mean[k], s / c, rtol=1e-12, equal_nan=True)


def spread_by_loop(x, y, extent, k):
    """Positions (into x, y: given best first) of the points :func:`agg.spread` keeps, chosen one
    at a time against every point kept so far (no grid): rounds that let each point have
    PER_SPOT more kept within reach (1/SPOTS of the extent), best first within a round."""
    x0, x1, y0, y1 = extent
    u, v = (x - x0) / (x1 - x0) * agg.SPOTS, (y - y0) / (y1 - y0) * agg.SPOTS
    taken, cap = [], agg.PER_SPOT
    while len(taken) < min(k, len(x)):
        for i in range(len(x)):
            if i in taken or len(taken) >= k:
                continue
            t = np.array(taken, dtype=np.int64)
            if np.sum((u[t] - u[i]) ** 2 + (v[t] - v[i]) ** 2 < 1.0) < cap:
                taken.append(i)
        cap += agg.PER_SPOT
    return np.sort(np.array(taken, dtype=np.int64))


def test_the_points_kept_are_spread_over_the_picture_best_first():
    """A 15M-row scatter's 500 highest scores sat in one place: a blob of rings. The points kept
    take at most PER_SPOT within a spot's reach until every point had its turn."""
    rng = np.random.default_rng(4)
    n = 200_000
    x, y = rng.normal(size=n), rng.normal(size=n)
    score = rng.random(n)
    blob = rng.choice(n, 3_000, replace=False)
    x[blob], y[blob] = 2.5 + 0.01 * rng.normal(size=blob.size), 2.5 + 0.01 * rng.normal(size=blob.size)
    score[blob] += 10.0   # the highest scores all in one spot
    flags = score > 0.95
    pic = agg.aggregate(x, y, bins=(300, 300), flags=flags, score=score, top_k=2_000, max_points=100)
    assert pic.points["index"].size == 2_000 and np.all(np.isin(pic.points["index"][:2_000], blob))
    flags[:] = score > 0.5
    pic = agg.aggregate(x, y, bins=(300, 300), flags=flags, score=score, top_k=5_000, max_points=100)
    kept = agg.spread(pic, 500)
    ref = spread_by_loop(pic.points["x"], pic.points["y"], pic.extent, 500)
    np.testing.assert_array_equal(kept.points["index"], pic.points["index"][ref])
    assert kept.spread and kept.points["index"].size == 500
    # the blob (far smaller than a spot's reach) keeps its best few, PER_SPOT more a round, the
    # rest of the picture gets the others
    inside = np.isin(kept.points["index"], blob)
    assert 0 < inside.sum() <= 4 * agg.PER_SPOT and kept.points["index"][0] == pic.points["index"][0]
    assert np.all(np.diff(kept.points["score"]) <= 0)   # still best first
    assert "500 highest, at most 2 per spot, drawn as points" in agg.describe(kept)
    assert agg.spread(kept, 500) is kept or agg.spread(kept, 600).points["index"].size == 500


def test_spread_points_follow_the_data_not_the_grid_rows():
    """On the outlier map the score grows with y: keeping the best of each grid cell put every
    point on a cell's top edge, and the points drew the grid's rows. Kept by reach instead,
    their heights within a grid row are as uneven as the data's, none has more than PER_SPOT
    others within reach, and they stay best first."""
    rng = np.random.default_rng(4)
    n, k = 2000, 500
    x, y = rng.random(n), rng.random(n)
    order = np.argsort(-y, kind="stable")                   # best first: the highest y
    pts = {"index": order, "x": x[order], "y": y[order], "code": np.zeros(n, dtype=np.int64),
           "flag": np.ones(n, dtype=bool), "score": y[order]}
    pic = agg.Picture(extent=(0.0, 1.0, 0.0, 1.0), counts=np.zeros((1, 4, 4)), layer_totals=np.zeros(1),
                      n=n, n_finite=n, in_view=n, points=pts, all_points=False, n_candidates=n, flagged_layer=0)
    out = agg.spread(pic, k).points
    assert out["index"].size == k and np.all(np.diff(out["score"]) <= 0)   # best first
    within_row = (out["y"] * agg.SPOTS) % 1.0
    share, _ = np.histogram(within_row, bins=5, range=(0, 1))
    assert share.max() / k < 0.4, share                     # the old choice: all in the top fifth
    u, v = out["x"] * agg.SPOTS, out["y"] * agg.SPOTS
    d2 = (u[:, None] - u[None, :]) ** 2 + (v[:, None] - v[None, :]) ** 2
    assert np.array_equal(out["index"], pts["index"][spread_by_loop(pts["x"], pts["y"], pic.extent, k)])
    close = (d2 < 1.0).sum(axis=1) - 1   # the others kept within reach of each
    assert close.max() < 4 * agg.PER_SPOT


@pytest.mark.parametrize("case", ["blob", "ties", "heavy tails"])
def test_spread_in_whole_array_steps_keeps_what_one_at_a_time_keeps(case):
    """The choice is made with array operations (one at a time in Python it held the GIL half a
    second, and the window waited): crowded spots that take many rounds, points on the same
    spot and exactly one reach apart, and points far outside the extent keep the same points,
    in the same order, as the one-at-a-time reference."""
    rng = np.random.default_rng(["blob", "ties", "heavy tails"].index(case))
    n, k = 400, 150
    if case == "blob":       # nearly all in one spot: a round keeps PER_SPOT there
        x, y = 1e-3 * rng.normal(size=n), 1e-3 * rng.normal(size=n)
        x[:40], y[:40] = rng.normal(size=40), rng.normal(size=40)
    elif case == "ties":     # a lattice of one reach: distance exactly 1 is not within reach
        x, y = rng.integers(0, 8, n) * 2 / agg.SPOTS, rng.integers(0, 8, n) * 2 / agg.SPOTS
    else:
        x, y = rng.standard_t(1, n), rng.standard_t(1, n)
    pts = {"index": np.arange(n), "x": x, "y": y, "code": np.zeros(n, dtype=np.int64),
           "flag": np.ones(n, dtype=bool), "score": np.linspace(1.0, 0.0, n)}
    extent = (-1.0, 1.0, -1.0, 1.0)
    pic = agg.Picture(extent=extent, counts=np.zeros((1, 4, 4)), layer_totals=np.zeros(1),
                      n=n, n_finite=n, in_view=n, points=pts, all_points=False, n_candidates=n, flagged_layer=0)
    out = agg.spread(pic, k).points["index"]
    np.testing.assert_array_equal(out, spread_by_loop(x, y, extent, k))


def test_rows_in_any_order_given_their_sample_index_aggregate_as_in_sample_order():
    """A zoom through the cloud index counts rows in cell order: given each row's sample index,
    the counts, the ties among the highest scores and the points drawn are a pass in order's."""
    x, y, codes, flags, score = _cloud(seed=7)
    order = np.random.default_rng(1).permutation(x.size)
    how = dict(codes=codes, n_codes=3, flags=flags, score=score, bins=(30, 20), top_k=200, mean_score=True)
    for rng, max_points in [((-1.0, 1.5, -2.0, 3.0), 300), ((0.2, 0.5, -1.0, 0.0), 5_000)]:
        want = agg.aggregate(x, y, rng=rng, max_points=max_points, **how)
        got = agg.aggregate(x[order], y[order], rng=rng, max_points=max_points, ids=order,
                            **dict(how, codes=codes[order], flags=flags[order], score=score[order]))
        assert want.all_points == got.all_points and want.in_view == got.in_view
        np.testing.assert_array_equal(want.counts, got.counts)
        for k, v in want.points.items():
            np.testing.assert_array_equal(v, got.points[k], err_msg=k)
        np.testing.assert_allclose(want.mean, got.mean, rtol=1e-12, equal_nan=True)
    assert not agg.aggregate(x, y, rng=(-1.0, 1.5, -2.0, 3.0), max_points=300, **how).all_points


def test_a_column_over_a_buffer_that_is_not_an_array_is_read_from_memory():
    """An array whose base is a plain buffer (np.frombuffer of bytes, as a decoded file gives)
    is not a file map: the column reads it as it is (it raised AttributeError on bytes.base)."""
    values = np.arange(1000, dtype=np.float64)
    a = np.frombuffer(values.tobytes(), dtype=np.float64)
    col = agg.Column(a)
    assert col._file is None
    np.testing.assert_array_equal(col._raw(10, 20), values[10:20])
