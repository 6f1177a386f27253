"""The cell index of a very large cloud: a zoom read through it draws exactly what a pass over
every row draws, while reading only the rows near the range (small planted clouds, small grids)."""
import os

import numpy as np
import pytest

from app.views import _aggregate as agg
from app.views._cloud_index import CloudIndex


class _Counted:
    """A column that counts the rows read from it."""

    def __init__(self, a):
        self.a, self.shape, self.dtype, self.read = a, a.shape, a.dtype, 0

    def __getitem__(self, key):
        out = self.a[key]
        self.read += np.size(out)
        return out


def _cloud(n=10_000, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n)
    y = 2.0 * rng.standard_normal(n)
    x[::997] = np.nan
    y[5::777] = np.inf
    x[7::1009] = 0.0   # many samples on one value: on a cell's edge and tied
    codes = rng.integers(0, 3, n)
    flags = rng.random(n) < 0.04
    score = np.round(rng.random(n), 2)   # ties in the score: the smaller index first
    return x, y, codes, flags, score


def _same(a, b):
    np.testing.assert_array_equal(a.counts, b.counts)
    for k in a.points:
        if a.points[k] is None:
            assert b.points[k] is None
        else:
            np.testing.assert_array_equal(a.points[k], b.points[k], err_msg=k)
    assert (a.n, a.n_finite, a.in_view, a.all_points, a.n_candidates, a.extent) == \
        (b.n, b.n_finite, b.in_view, b.all_points, b.n_candidates, b.extent)
    if a.mean is not None:
        np.testing.assert_allclose(a.mean, b.mean, rtol=1e-12, equal_nan=True)


@pytest.mark.slow
@pytest.mark.parametrize("on_disk", [False, True])
def test_a_zoom_through_the_index_draws_what_a_full_pass_draws(tmp_path, on_disk):
    x, y, codes, flags, score = _cloud()
    whole = agg.aggregate(x, y, codes=codes, n_codes=3, flags=flags, score=score)
    index = CloudIndex({"x": x, "y": y, "codes": codes, "flags": flags, "score": score}, whole.extent,
                       folder=str(tmp_path) if on_disk else None, grid=16, block=7_000)
    assert index.n_finite == whole.n_finite
    cell_edge = whole.extent[0] + 5 * (whole.extent[1] - whole.extent[0]) / 16
    for rng in [(-0.3, 0.2, -0.5, 0.1), (cell_edge, cell_edge + 0.05, -1, 1), (0.0, 0.001, -0.2, 0.2),
                (-20, 20, -20, 20), (5, 6, 50, 60), whole.extent, (0.2, -0.3, 0.1, -0.5)]:
        how = dict(bins=(40, 30), n_codes=3, top_k=150, max_points=300, mean_score=True)
        want = agg.aggregate(x, y, rng=rng, codes=codes, flags=flags, score=score, **how)
        _same(want, index.aggregate(rng, **how))


def test_without_codes_flags_or_scores_too():
    x, y, *_ = _cloud(seed=3)
    whole = agg.aggregate(x, y)
    index = CloudIndex({"x": x, "y": y}, whole.extent, grid=8)
    for rng in [(-0.5, 0.5, -0.5, 0.5), (1.0, 1.01, 0.0, 0.1)]:
        got = index.aggregate(rng, bins=(20, 20), max_points=500)
        _same(agg.aggregate(x, y, rng=rng, bins=(20, 20), max_points=500), got)
        x0, x1, y0, y1 = rng   # and the count in view is the plain count of the samples there
        assert got.in_view == np.count_nonzero((x >= x0) & (x <= x1) & (y >= y0) & (y <= y1))


def test_a_small_zoom_reads_only_the_rows_near_it(tmp_path):
    x, y, codes, flags, score = _cloud(n=40_000, seed=1)
    whole = agg.aggregate(x, y)
    index = CloudIndex({"x": x, "y": y, "score": score}, whole.extent, folder=str(tmp_path), grid=64)
    index.cols = {k: _Counted(v) for k, v in index.cols.items()}
    rng = (0.5, 0.6, 1.0, 1.2)
    assert index.worth(rng)
    pic = index.aggregate(rng, bins=(10, 10))
    inside = np.flatnonzero((x >= 0.5) & (x <= 0.6) & (y >= 1.0) & (y <= 1.2))
    assert pic.in_view == inside.size > 0
    np.testing.assert_array_equal(np.sort(pic.points["index"]), inside)
    read = index.cols["x"].read
    assert inside.size <= read < 0.05 * x.size   # the cells near the range, not the 40,000 rows
    assert not index.worth(whole.extent)   # the whole cloud: a plain pass


@pytest.mark.slow
def test_the_scatter_zooms_through_the_index_once_it_is_built(views_for, qtbot, monkeypatch, tmp_path):
    """A cloud past INDEX_ROWS (made small here) is indexed on a worker after its first picture;
    a zoom into a small region then reads through the index and shows exactly the samples there."""
    import app.out_of_core as ooc
    import app.views._cloud_index as ci
    from app.views import _geometry as geo

    from .test_binned_cloud import _planted, _rest, _scatter, _state
    from app.views._density import DENSITY_POINTS

    monkeypatch.setattr(ci, "INDEX_ROWS", 1_000)
    monkeypatch.setattr(ooc, "_working", str(tmp_path))
    used = []
    real = ci.CloudIndex.aggregate
    monkeypatch.setattr(ci.CloudIndex, "aggregate", lambda self, rng, **kw: used.append(rng) or real(self, rng, **kw))
    X, known = _planted(DENSITY_POINTS + 20_000, seed=2)
    state, res = _state(X, outliers=known)
    v = _scatter(views_for, state)
    _rest(qtbot, v.cloud)
    b = v.cloud.binned
    qtbot.waitUntil(lambda: b.columns.index is not None, timeout=60_000)
    assert list(tmp_path.glob("cloud-index-*/x.npy"))   # the sorted copy is on disk, not in the window
    vb = v.plot.getViewBox()
    vb.setRange(xRange=(0.5, 0.9), yRange=(-0.3, 0.1), padding=0)
    _rest(qtbot, v.cloud)
    assert used
    proj = np.asarray(res.arrays["projection"])
    (x0, x1), (y0, y1) = vb.viewRange()
    want = geo.in_rect(proj[:, 0], proj[:, 1], x0, y0, x1, y1)
    assert 0 < want.size
    np.testing.assert_array_equal(np.sort(v.cloud.sample_index), want)
    assert f"{want.size:,} of {X.shape[0]:,} samples in view, each drawn as a point" in v.status.text()
    # zoomed back out to the whole cloud: drawn from the fine counts, every sample counted once
    from app.views._cloud_pyramid import Pyramid
    wide = []
    real_pic = Pyramid.picture
    monkeypatch.setattr(Pyramid, "picture", lambda self, rng, **kw: wide.append(rng) or real_pic(self, rng, **kw))
    ext = b.columns.index.extent
    vb.setRange(xRange=ext[:2], yRange=ext[2:], padding=0.02)
    _rest(qtbot, v.cloud)
    pic = b.picture
    assert wide and pic.in_view == pic.counts.sum() == np.isfinite(proj[:, :2]).all(axis=1).sum()
    (x0, x1), (y0, y1) = vb.viewRange()
    assert pic.extent[0] <= max(x0, ext[0]) and pic.extent[1] >= min(x1, ext[1])   # covers what is on screen
    assert f"{pic.in_view:,} samples in {pic.bins[0]} x {pic.bins[1]} bins" in v.status.text()


def test_a_column_chunked_on_disk_reads_each_chunk_once_and_gives_the_same_blocks(tmp_path):
    """A result's flags are stored in chunks of millions of rows (compressed): read a block of
    BLOCK rows at a time, each block decompressed the whole chunk again."""
    zarr = pytest.importorskip("zarr")
    n = 10_000
    data = np.random.default_rng(0).standard_normal((n, 2))
    z = zarr.open_array(str(tmp_path / "c.zarr"), mode="w", shape=data.shape, chunks=(3_000, 2), dtype="f8")
    z[:] = data
    reads = []

    class Spy:
        shape, chunks = z.shape, z.chunks

        def __getitem__(self, key):
            reads.append(key[0])
            return z[key]

    import app.views._aggregate as agg_mod
    col = agg_mod.Column(Spy(), k=1)
    col._chunk = 3_000   # what a chunk larger than BLOCK sets
    got = np.concatenate([col.read(a, min(a + 700, n)) for a in range(0, n, 700)])
    np.testing.assert_array_equal(got, data[:, 1])
    assert [(s.start, s.stop) for s in reads] == [(0, 3_000), (3_000, 6_000), (6_000, 9_000), (9_000, 10_000)]
    assert col._held[1] is None   # a chunk read to its end is let go: none stays in memory after a pass
    reads.clear()
    np.testing.assert_array_equal(col.read(2_900, 3_100), data[2_900:3_100, 1])   # across two chunks
    assert [(s.start, s.stop) for s in reads] == [(0, 3_000), (3_000, 6_000)] and col._held[0] == 3_000
    x0, x1, y0, y1, m = agg.extent(agg_mod.Column(Spy(), k=0), agg_mod.Column(Spy(), k=1), block=700)
    assert (x0, x1, y0, y1, m) == (data[:, 0].min(), data[:, 0].max(), data[:, 1].min(), data[:, 1].max(), n)


@pytest.mark.slow
def test_a_figure_drawn_offscreen_builds_no_index(qtbot, monkeypatch, tmp_path):
    """The command line's figures are never zoomed: indexing a 30M-row cloud for one cost its
    run 27 s of CPU and 650 MB."""
    import app.views._cloud_index as ci
    from app.views import render_view

    from .test_binned_cloud import _planted, _state
    from app.views._density import DENSITY_POINTS

    monkeypatch.setattr(ci, "INDEX_ROWS", 1_000)
    built = []
    real = ci.CloudIndex.__init__
    monkeypatch.setattr(ci.CloudIndex, "__init__", lambda self, *a, **kw: built.append(1) or real(self, *a, **kw))
    X, known = _planted(DENSITY_POINTS + 5_000, seed=4)
    state, _ = _state(X, outliers=known)
    state.set_current_method("pca")
    render_view("scatter", state, str(tmp_path / "s.png"), size=(640, 480))
    qtbot.wait(300)
    assert (tmp_path / "s.png").stat().st_size > 0
    assert built == []


def _histogram(x, y, edges_x, edges_y, closed_x, closed_y):
    """np.histogram2d's counts with those edges, the last bin closed only where it ends the grid
    (past a snapped edge inside the grid, a sample belongs to the next fine cell)."""
    keep = ((x < edges_x[-1]) | closed_x) & ((y < edges_y[-1]) | closed_y)
    return np.histogram2d(x[keep], y[keep], bins=[edges_x, edges_y])[0].astype(np.int64)


@pytest.mark.parametrize("mean_score", [False, True])
def test_a_wide_view_is_drawn_from_the_fine_counts_exactly_for_its_own_bins(mean_score):
    """Zoomed out to most of the cloud, the picture comes from the counts made with the index:
    every layer's counts equal np.histogram2d over the rows with the snapped edges, and the
    points, totals and mean scores equal a full pass's over the snapped extent."""
    x, y, codes, flags, score = _cloud(n=30_000, seed=4)
    whole = agg.aggregate(x, y, codes=codes, n_codes=3, flags=flags, score=score)
    index = CloudIndex({"x": x, "y": y, "codes": codes, "flags": flags, "score": score}, whole.extent, grid=16,
                       block=7_000, n_codes=3, mean_score=mean_score, pyramid={"fine": 96, "top": 400})
    fine = index.pyramid
    x0, x1, y0, y1 = whole.extent
    w = x1 - x0
    how = dict(bins=(40, 30), n_codes=3, top_k=150, max_points=300, mean_score=mean_score)
    for rng in [whole.extent, (x0 - 0.3 * w, x1 + 0.2 * w, y0 - 1, y1 + 1), (x0 + 0.1 * w, x0 + 0.8 * w, -3.0, 2.5)]:
        assert not index.worth(rng)   # most rows: the fine counts answer
        pic = index.picture(rng, **how)
        assert pic is not None and pic.n_candidates > how["top_k"]
        i0, m, nbx, j0, mm, nby = fine.snap(rng, how["bins"])
        assert pic.bins == (nbx, nby) and m * 40 / 2 <= m * nbx and nbx >= 20 and nby >= 15
        ex = fine.edge(0, np.arange(i0, i0 + m * nbx + 1, m))
        ey = fine.edge(1, np.arange(j0, j0 + mm * nby + 1, mm))
        assert pic.extent == (ex[0], ex[-1], ey[0], ey[-1])
        # the view lies within the picture, which is at most one of its bins wider each side
        rx0, rx1, ry0, ry1 = rng
        assert ex[0] <= max(rx0, x0) and ex[-1] >= min(rx1, x1) and ey[0] <= max(ry0, y0) and ey[-1] >= min(ry1, y1)
        assert max(rx0, x0) - ex[0] < ex[1] - ex[0] and ex[-1] - min(rx1, x1) < ex[-1] - ex[-2]
        closed = (i0 + m * nbx >= fine.fine, j0 + mm * nby >= fine.fine)
        layer = np.where(flags, 3, codes)
        for k in range(4):
            np.testing.assert_array_equal(pic.counts[k], _histogram(x[layer == k], y[layer == k], ex, ey, *closed),
                                          err_msg=f"layer {k}")
        # a pass over every row with the snapped extent and bins draws the same picture
        want = agg.aggregate(x, y, rng=pic.extent, codes=codes, flags=flags, score=score,
                             **dict(how, bins=pic.bins))
        _same(want, pic)
        assert pic.n == x.size and pic.n_finite == whole.n_finite


def test_views_the_fine_counts_cannot_answer_are_read_from_the_rows():
    x, y, codes, flags, score = _cloud(n=30_000, seed=5)
    whole = agg.aggregate(x, y, codes=codes, n_codes=3, flags=flags, score=score)
    index = CloudIndex({"x": x, "y": y, "codes": codes, "flags": flags, "score": score}, whole.extent, grid=16,
                       n_codes=3, pyramid={"fine": 64, "top": 100})
    how = dict(bins=(40, 30), n_codes=3, top_k=150, max_points=300, mean_score=False)
    # more points asked than the candidates kept: the view's best may not be among them
    assert index.picture(whole.extent, **how) is None
    # fewer samples in view than max_points: each is drawn, from the rows
    assert index.pyramid.picture(whole.extent, n=x.size, n_finite=whole.n_finite, flags=True, score=True,
                                 **dict(how, top_k=50, max_points=40_000)) is None
    # other colour layers than were counted
    assert index.pyramid.picture(whole.extent, n=x.size, n_finite=whole.n_finite, flags=True, score=True,
                                 **dict(how, top_k=50, n_codes=4)) is None
    # a narrow view: fewer fine cells than half the bins asked
    x0, x1, y0, y1 = whole.extent
    narrow = (x0, x0 + 0.2 * (x1 - x0), y0, y1)
    assert index.pyramid.snap(narrow, (40, 30)) is None
    got = index.picture(narrow, **dict(how, top_k=50))
    _same(agg.aggregate(x, y, rng=narrow, codes=codes, flags=flags, score=score, **dict(how, top_k=50)), got)
    # codes beyond the layers the index was told of: nothing is answered from the fine counts
    other = CloudIndex({"x": x, "y": y, "codes": codes, "flags": flags}, whole.extent, grid=16, n_codes=2,
                       pyramid={"fine": 64})
    assert not other.pyramid.usable and other.pyramid.picture(whole.extent, n=x.size, n_finite=whole.n_finite,
                                                              flags=True, score=False, **dict(how, n_codes=2)) is None


@pytest.mark.parametrize("bucket_rows", [1, 997, 10**9])
def test_the_copy_is_every_finite_row_sorted_by_cell_then_sample_however_it_is_cut(tmp_path, bucket_rows):
    # Reference made another way: a lexsort of the finite rows by (cell, sample index).
    x, y, codes, flags, score = _cloud(12_000, seed=3)
    extent = (-4.0, 4.0, -8.0, 8.0)
    index = CloudIndex({"x": x, "y": y, "codes": codes, "flags": flags, "score": score}, extent,
                       folder=str(tmp_path), grid=16, block=1_000, bucket_rows=bucket_rows)
    ok = np.flatnonzero(np.isfinite(x) & np.isfinite(y))
    cx = agg.bin_index(np.clip(x[ok], -4.0, 4.0), -4.0, 4.0, 16)
    cy = agg.bin_index(np.clip(y[ok], -8.0, 8.0), -8.0, 8.0, 16)
    order = ok[np.lexsort((ok, cx * 16 + cy))]
    np.testing.assert_array_equal(index.cols["index"], order)
    np.testing.assert_array_equal(index.cols["x"], x[order])
    np.testing.assert_array_equal(index.cols["y"], y[order])
    np.testing.assert_array_equal(index.cols["codes"], codes[order])
    np.testing.assert_array_equal(index.cols["flags"], flags[order])
    np.testing.assert_array_equal(index.cols["score"], score[order])
    assert index.offsets[-1] == ok.size


def test_fine_counts_filled_by_the_first_pass_equal_the_index_s_and_a_histogram():
    """The cloud's first picture fills the fine counts on the way: they equal the ones the index
    fills itself, and the index built on them answers wide views as before."""
    from app.views._cloud_pyramid import Pyramid
    x, y, codes, flags, score = _cloud(n=30_000, seed=6)
    whole = agg.aggregate(x, y, codes=codes, n_codes=3, flags=flags, score=score)
    cols = {"x": x, "y": y, "codes": codes, "flags": flags, "score": score}
    fine = Pyramid(whole.extent, n_codes=3, flags=True, score=True, mean_score=True, fine=64, top=400)
    x0, x1, y0, y1 = whole.extent
    pic = agg.aggregate(x, y, rng=(x0 - 1, x1 + 1, y0 - 1, y1 + 1), codes=codes, n_codes=3, flags=flags, score=score,
                        fine=fine, block=7_000)
    fine.done()
    assert pic.in_view == whole.n_finite == fine.counts.sum()
    own = CloudIndex(cols, whole.extent, grid=16, n_codes=3, mean_score=True, pyramid={"fine": 64, "top": 400})
    np.testing.assert_array_equal(fine.counts, own.pyramid.counts)
    np.testing.assert_allclose(fine.sums, own.pyramid.sums, rtol=1e-12)
    np.testing.assert_array_equal(fine.best, own.pyramid.best)
    layer = np.where(flags, 3, codes)
    edges = (np.linspace(x0, x1, 65), np.linspace(y0, y1, 65))
    for k in range(4):
        np.testing.assert_array_equal(fine.counts[k], _histogram(x[layer == k], y[layer == k], *edges, True, True))
    reused = CloudIndex(cols, whole.extent, grid=16, n_codes=3, mean_score=True, pyramid=fine)
    assert reused.pyramid is fine
    # the cells' sizes summed from the fine counts: the same sorted copy as counting the rows
    np.testing.assert_array_equal(reused.offsets, own.offsets)
    for name, col in own.cols.items():
        np.testing.assert_array_equal(reused.cols[name], col, err_msg=name)
    assert reused._from_fine(fine) is not None and own._from_fine({"fine": 64}) is None
    how = dict(bins=(40, 30), n_codes=3, top_k=150, max_points=300, mean_score=True)
    _same(own.picture(whole.extent, **how), reused.picture(whole.extent, **how))


def test_fine_counts_are_counted_as_batches_come_in_their_own_types():
    """The fine counts are filled while the window's other views arrive: each batch is counted
    into the grids as it comes, in their final types (int32 counts and sizes), so that filling
    them holds the grids and a batch, not 1M gathered cells and a whole int64 grid per count
    (at 30M rows: 144 MB at once with the mean score, against 32 MB of grids); and the counts
    equal a histogram of each layer, the sums and sizes the scores'."""
    import tracemalloc

    from app.views._cloud_pyramid import Pyramid
    n, batch = 1_200_000, 100_000
    rng = np.random.default_rng(9)
    x, y = rng.standard_normal(n), 2 * rng.standard_normal(n)
    flags, score = rng.random(n) < 0.05, rng.random(n)
    score[::50] = np.nan
    extent = (-6.0, 6.0, -12.0, 12.0)
    x, y = np.clip(x, -6, 6), np.clip(y, -12, 12)
    tracemalloc.start()
    try:
        fine = Pyramid(extent, flags=True, score=True, mean_score=True, fine=512, top=1_000)
        grids, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        for a in range(0, n, batch):
            fine.add(x[a:a + batch], y[a:a + batch], np.arange(a, a + batch), flags=flags[a:a + batch],
                     score=score[a:a + batch])
        _, peak = tracemalloc.get_traced_memory()
        fine.done()
    finally:
        tracemalloc.stop()
    # grids: 2 layers x 512 x 512 x (4 + 8 + 4) bytes = 8 MB; a batch's temporaries (100,000
    # rows) about 10 MB; before: 12 MB of grids (int64), then 1M cells gathered and a grid per count
    assert grids < 9 << 20 and peak - grids < 16 << 20, (grids, peak)
    assert fine.counts.dtype == fine.sizes.dtype == np.int32 and fine.counts.shape == (2, 512, 512)
    edges = (np.linspace(-6, 6, 513), np.linspace(-12, 12, 513))
    for k, rows in enumerate((~flags, flags)):
        np.testing.assert_array_equal(fine.counts[k], _histogram(x[rows], y[rows], *edges, True, True))
        ok = rows & np.isfinite(score)
        np.testing.assert_array_equal(fine.sizes[k], _histogram(x[ok], y[ok], *edges, True, True))
        want, _, _ = np.histogram2d(x[ok], y[ok], bins=edges, weights=score[ok])
        np.testing.assert_allclose(fine.sums[k], want, rtol=1e-9)


def test_a_narrow_view_drawn_coarsely_counts_exactly_its_whole_fine_cells():
    """Before the index exists a narrow view is first drawn from the fine counts, in bins of whole
    fine cells: each bin holds exactly the samples within its edges."""
    x, y, codes, flags, score = _cloud(n=30_000, seed=8)
    whole = agg.aggregate(x, y, codes=codes, n_codes=3, flags=flags, score=score)
    index = CloudIndex({"x": x, "y": y, "codes": codes, "flags": flags, "score": score}, whole.extent, grid=16,
                       n_codes=3, pyramid={"fine": 64, "top": 400})
    fine = index.pyramid
    x0, x1, y0, y1 = whole.extent
    narrow = (x0 + 0.40 * (x1 - x0), x0 + 0.47 * (x1 - x0), y0 + 0.5 * (y1 - y0), y0 + 0.55 * (y1 - y0))
    how = dict(bins=(40, 30), n_codes=3, top_k=50, max_points=300, mean_score=False)
    kw = dict(n=x.size, n_finite=whole.n_finite, flags=True, score=True, **how)
    assert fine.picture(narrow, **kw) is None   # too narrow for an exact answer
    pic = fine.picture(narrow, coarse=True, **kw)
    assert pic.coarse and "coarse bins" in agg.describe(pic)
    i0, m, nbx, j0, mm, nby = fine.snap(narrow, how["bins"], coarse=True)
    assert m == mm == 1 and 0 < nbx < 20 and 0 < nby < 15
    ex, ey = fine.edge(0, np.arange(i0, i0 + nbx + 1)), fine.edge(1, np.arange(j0, j0 + nby + 1))
    assert ex[0] <= narrow[0] and ex[-1] >= narrow[1] and ey[0] <= narrow[2] and ey[-1] >= narrow[3]
    layer = np.where(flags, 3, codes)
    for k in range(4):
        np.testing.assert_array_equal(pic.counts[k], _histogram(x[layer == k], y[layer == k], ex, ey, False, False))
    inside = (x >= ex[0]) & (x < ex[-1]) & (y >= ey[0]) & (y < ey[-1])
    assert pic.in_view == inside.sum() and set(pic.points["index"]) <= set(np.flatnonzero(inside & flags))


@pytest.mark.parametrize("cap", [100_000, 40])
def test_a_selection_through_the_index_is_the_full_pass_s(cap):
    """A rectangle or lasso on a very large cloud reads the cells of its bounding box only and
    chooses exactly what a pass over every row chooses (all inside, or the cap highest scores)."""
    x, y, codes, flags, score = _cloud(seed=9)
    whole = agg.aggregate(x, y)
    index = CloudIndex({"x": x, "y": y, "score": score}, whole.extent, grid=16, pyramid=False)
    index.cols = {k: _Counted(v) for k, v in index.cols.items()}
    lasso = np.array([[-0.5, -1.0], [0.6, -0.8], [0.2, 1.5], [-0.4, 0.4]])
    for region in [("rect", (0.6, 1.0, -0.4, -2.0)), ("lasso", lasso)]:
        want = agg.select(x, y, region, score=score, cap=cap)
        got = index.select(region, cap)
        assert (got.count, got.complete) == (want.count, want.complete) and want.count > 40
        np.testing.assert_array_equal(got.index, want.index)
    assert index.cols["x"].read < x.size


def _mapped_kb(folder) -> float:
    """Resident kB of this process's mappings of files under ``folder`` (Linux)."""
    kb, inside = 0.0, False
    with open("/proc/self/smaps") as fh:
        for line in fh:
            head = line.split()
            if head and "-" in head[0] and not head[0].endswith(":"):
                inside = len(head) > 5 and head[5].startswith(str(folder))
            elif inside and head[0] == "Rss:":
                kb += int(head[1])
    return kb


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/proc/self/smaps"), reason="reads Linux's /proc/self/smaps")
def test_the_build_holds_a_block_and_a_bucket_not_the_cloud(tmp_path, monkeypatch):
    """1,000,000 rows whose columns are mapped files (as a large result's are): while the index
    is built, the pages of those files and of the sorted copy resident in this process, and
    the numpy memory traced, stay within a block's and a bucket's worth; the copy is still
    every row sorted by cell."""
    import tracemalloc

    from app import mapped_tables
    monkeypatch.setattr(agg, "GIVE_BACK", 50_000)
    n, block, bucket = 1_000_000, 20_000, 50_000
    rng = np.random.default_rng(4)
    cols = {}
    for name, v in (("x", rng.standard_normal(n)), ("y", 3 * rng.standard_normal(n)),
                    ("score", rng.random(n)), ("flags", rng.random(n) < 0.02)):
        path = tmp_path / f"result-{name}.npy"
        np.save(path, v)
        cols[name] = mapped_tables._open(str(path))
        del v
    seen = []
    tracemalloc.start()
    try:
        index = CloudIndex(cols, (-6.0, 6.0, -18.0, 18.0), folder=str(tmp_path / "index"), grid=64, block=block,
                           bucket_rows=bucket, pyramid=False,
                           report=lambda f, m: seen.append((_mapped_kb(tmp_path), tracemalloc.get_traced_memory()[1])))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # Of the columns (25 MB), the rows read since the last hand-back (50,000 and a block), in
    # the system's units of mapping a file (up to 2 MB a column here); of the copy (37 MB),
    # nothing: it is never mapped while it is written. Through maps, as before: 25 MB and more.
    assert max(kb for kb, _ in seen) < 16_000
    # a block's values and a bucket of at most 2 x 50,000 rows sorted: a few MB, not the
    # cloud's 25 MB nor the copy's 37
    assert peak < 12 << 20, peak
    x, y = np.load(tmp_path / "result-x.npy"), np.load(tmp_path / "result-y.npy")
    cell = (agg.bin_index(np.clip(x, -6, 6), -6.0, 6.0, 64) * 64 + agg.bin_index(np.clip(y, -18, 18), -18.0, 18.0, 64))
    order = np.argsort(cell, kind="stable")
    np.testing.assert_array_equal(index.cols["index"], order)
    np.testing.assert_array_equal(index.cols["y"], y[order])


@pytest.mark.skipif(not os.path.exists("/proc/self/smaps"), reason="reads Linux's /proc/self/smaps")
def test_measuring_a_cloud_gives_its_mapped_pages_back_as_it_goes(tmp_path, monkeypatch):
    """The first pictures' pass over every row (the cloud's extent) reads a large result's
    mapped columns: their pages are given back every GIVE_BACK rows, not all held until the
    views are done (up to 249 MB of mapped pages at 30M rows, mem30m); the extent is still
    exact."""
    from app import mapped_tables
    monkeypatch.setattr(agg, "GIVE_BACK", 50_000)
    n = 2_000_000
    rng = np.random.default_rng(5)
    xs, ys = rng.standard_normal(n), 2 * rng.standard_normal(n)
    xs[7] = np.nan
    cols = []
    for name, v in (("x", xs), ("y", ys)):
        np.save(tmp_path / f"result-{name}.npy", v)
        cols.append(mapped_tables._open(str(tmp_path / f"result-{name}.npy")))
    seen = []
    got = agg.extent(*cols, report=lambda f, m: seen.append(_mapped_kb(tmp_path)), block=20_000)
    ok = np.isfinite(xs) & np.isfinite(ys)
    assert got == (xs[ok].min(), xs[ok].max(), ys[ok].min(), ys[ok].max(), int(ok.sum()))
    # 32 MB of columns read; resident at any block: the rows since the last hand-back (50,000
    # and a block, 1.1 MB) in the system's units of mapping and reading ahead (3 MB a column)
    assert len(seen) >= 80 and max(seen) < 10_000, max(seen)


@pytest.mark.skipif(not os.path.exists("/proc/self/smaps"), reason="reads Linux's /proc/self/smaps")
def test_a_pass_reads_mapped_columns_without_mapping_their_pages(tmp_path, monkeypatch):
    """A large result's columns are mapped files: a pass over them (the extent, a picture, the
    index build) reads them with plain reads, so none of their pages is counted in the window,
    even between two hand-backs (none here: the window's own passes hand back every 1M rows,
    and three of them at once held up to 95 MB at 30M rows). The values are the map's, block
    for block, in any dtype asked; a private map or a removed file is read through the map."""
    from app import mapped_tables
    monkeypatch.setattr(agg, "GIVE_BACK", 10**12)
    n = 1_000_000
    rng = np.random.default_rng(6)
    xs, ys, fl = rng.standard_normal(n), 2 * rng.standard_normal(n), rng.random(n) < 0.05
    xs[3] = np.nan
    cols = {}
    for name, v in (("x", xs), ("y", ys), ("flags", fl)):
        np.save(tmp_path / f"result-{name}.npy", v)
        cols[name] = mapped_tables._open(str(tmp_path / f"result-{name}.npy"))
    seen = []
    got = agg.extent(cols["x"], cols["y"], report=lambda f, m: seen.append(_mapped_kb(tmp_path)), block=50_000)
    pic = agg.aggregate(cols["x"], cols["y"], flags=cols["flags"], rng=got[:4], bins=(40, 40), max_points=0,
                        report=lambda f, m: seen.append(_mapped_kb(tmp_path)), block=50_000)
    ref = agg.aggregate(xs, ys, flags=fl, rng=got[:4], bins=(40, 40), max_points=0)
    np.testing.assert_array_equal(pic.counts, ref.counts)
    np.testing.assert_array_equal(pic.points["index"], ref.points["index"])
    ok = np.isfinite(xs)
    assert got == (xs[ok].min(), xs[ok].max(), ys.min(), ys.max(), int(ok.sum()))
    # 17 MB of columns read, none of it through their maps (before: all of it, 17,000 kB)
    assert len(seen) >= 40 and max(seen) < 100, max(seen)
    # a part of a map, as another dtype; a map of private pages; a file removed under its map
    part = agg.Column(cols["y"][1000:], dtype=np.float32)
    np.testing.assert_array_equal(part.read(5, 70_005), ys[1005:71_005].astype(np.float32))
    np.testing.assert_array_equal(agg.Column(cols["flags"], dtype=bool).read(999_990, 10**6), fl[999_990:])
    private = np.load(tmp_path / "result-x.npy", mmap_mode="c")
    private[10] = 7.0
    assert agg.Column(private).read(9, 12)[1] == 7.0
    os.unlink(tmp_path / "result-y.npy")
    np.testing.assert_array_equal(agg.Column(cols["y"]).read(0, 50), ys[:50])


def test_a_bucket_holds_at_most_twice_its_rows_or_one_cell():
    x, y, codes, flags, score = _cloud(20_000, seed=8)
    x[:6_000] = 0.25   # one cell holding far more than a bucket
    index = CloudIndex({"x": x, "y": y}, (-4.0, 4.0, -8.0, 8.0), grid=16, pyramid=False)
    for rows in (1, 500, 2_000, 10**9):
        bounds = index._buckets(rows)
        sizes = index.offsets[bounds[1:]] - index.offsets[bounds[:-1]]
        assert bounds[0] == 0 and bounds[-1] == 256 and np.all(np.diff(bounds) > 0)
        assert np.all((sizes <= 2 * rows) | (np.diff(bounds) == 1)), rows
