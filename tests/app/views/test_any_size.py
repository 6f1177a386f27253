"""Every view at any size (issue 33.1): tables of 32,767, 32,768 and 33,000 rows (Qt draws no
image above 32,767 pixels: the L + S heatmap of a 33,000-row table crashed the window and the
command line), a million rows (slow), and 100,000 columns. No image a view draws is larger than
the bound, the view says when it shows bins, and the bins hold what a reference computed
another way holds; zooming in shows the real rows."""
from __future__ import annotations

import os
import subprocess
import sys
from functools import cache

import numpy as np
import pyqtgraph as pg
import pytest
from PySide6.QtCore import QPointF, Qt

from app.views._binning import MAX_BINS, QT_MAX_PIXELS, bins_for
from robustcore.datasets import Dataset
from robustcore.methods import get_method

from .test_binning import reference

HEIGHTS = (32_767, 32_768, 33_000)
D = 8
#: The methods each view is drawn for (every view of the catalog, every --figure).
VIEW_METHODS = {"scatter": ("pca",), "detail": ("pcp",), "decomposition": ("pcp",), "ranking": ("esfs",),
                "contour": ("pca",), "outlier-map": ("pca",), "learning-curve": ("scw",),
                "comparison": ("pca", "pcp"), "evaluation": ("pca",)}
#: Parameters of the fits, where a default does not suit these tables: ESFS's 10-neighbour graph
#: of 32,767 rows of rank-2 data has eigenvalues too close together for its eigensolver, which
#: says so and suggests more neighbours.
FIT_PARAMS = {"esfs": {"n_neighbors": 30}}
#: Views whose fits take minutes at these sizes on a loaded 2-core box (ESFS: 30 s at 33,000 rows).
SLOW_VIEWS = ("ranking",)


def test_every_view_of_the_catalog_is_covered():
    from app.views.catalog import VIEW_NAMES
    assert set(VIEW_METHODS) == set(VIEW_NAMES)


@cache
def table(n: int, d: int = D) -> Dataset:
    """Rank 2 plus noise, 1 % of the rows gross outliers (labelled: the evaluation and the
    learning curve use them)."""
    rng = np.random.default_rng(n + d)
    X = rng.normal(size=(n, 2)) @ rng.normal(size=(2, d)) + 0.05 * rng.normal(size=(n, d))
    out = np.zeros(n, dtype=bool)
    out[rng.choice(n, max(1, n // 100), replace=False)] = True
    X[out] += rng.normal(0.0, 6.0, size=(int(out.sum()), d))
    return Dataset(X=X, name=f"table {n:,} x {d:,}", labels=np.where(out, "outlier", "inlier"),
                   class_names=["inlier", "outlier"], outliers=out)


@cache
def fit(n: int, method: str, d: int = D, **params):
    return get_method(method).run(table(n, d), dict(params))


def state_of(n: int, methods, d: int = D, **params):
    from app.state import AppState
    st = AppState()
    st.set_dataset(table(n, d))
    for m in methods:
        assert st.add_result(fit(n, m, d, **{**FIT_PARAMS.get(m, {}), **params}))
        st.set_current_method(m)
    return st


def images_of(view) -> list:
    return [it for it in view.figure.scene().items() if isinstance(it, pg.ImageItem) and it.image is not None]


def assert_drawable(view) -> None:
    """No image, and no widget, larger than Qt draws; no image above the screen bound."""
    for img in images_of(view):
        h, w = img.image.shape[:2]
        assert h <= MAX_BINS and w <= MAX_BINS, (type(view).__name__, img.image.shape)
    for size in (view.size(), view.figure.size()):
        assert size.width() <= QT_MAX_PIXELS and size.height() <= QT_MAX_PIXELS


def shown(views_for, state, name, qtbot):
    views = views_for(state)
    v = views.show_view(name)
    tables = getattr(v, "tables", None)   # a large table's overview is made on a worker
    if tables is not None:
        qtbot.waitUntil(lambda: not tables.loading(), timeout=120000)
    qtbot.wait(250)        # resizes settle: the heatmaps are binned again to the panels' size
    v.grab()               # paint it all (the crash was in GraphicsView.paintEvent)
    return v


def scaled(n: int, d: int = D, **params):
    """X, L and S of the PCP fit in the L + S view's units, computed here with plain numpy:
    each column on the range of L, S divided by that range; on X's range where L's is under 1 %
    of it (a column L hardly varies in: S divided by L's range there drowned every other
    column's S)."""
    res = fit(n, "pcp", d, **params)
    X = table(n, d).X
    L, S = np.asarray(res.arrays["low_rank"]), np.asarray(res.arrays["sparse"])
    lo, hi = L.min(axis=0), L.max(axis=0)
    flat = hi - lo <= 0.01 * (X.max(axis=0) - X.min(axis=0))
    lo, hi = np.where(flat, X.min(axis=0), lo), np.where(flat, X.max(axis=0), hi)
    span = hi - lo
    return (X - lo) / span, (L - lo) / span, S / span


def assert_tiles_match(v, n, d=D, **params) -> None:
    X, L, S = scaled(n, d, **params)
    for which, (region, tiles) in v.pictures.tiles.items():
        for key, a, how in (("X", X, "mean"), ("L", L, "mean"), ("S", S, "absmax")):
            np.testing.assert_allclose(tiles[key], reference(a, region.rows, region.cols, how), rtol=1e-9,
                                       atol=1e-12, err_msg=f"{which} {key}")
        items = v.pictures.images if which == "whole" else v.pictures.zoomed
        np.testing.assert_array_equal(items["original"].image, tiles["X"])
        np.testing.assert_array_equal(items["sparse"].image, tiles["S"])


@pytest.mark.parametrize("view", [pytest.param(v, marks=pytest.mark.slow) if v in SLOW_VIEWS else v
                                  for v in VIEW_METHODS])
def test_every_view_draws_and_exports_the_fewest_rows_a_fit_takes(view, views_for, qtbot, tmp_path):
    """The low end of "from 1 row" (issue 33.1): two rows, the fewest the estimators fit, are
    drawn and exported by every view; one row is refused by the fit, with the reason."""
    from app.views import render_view
    state = state_of(2, VIEW_METHODS[view])
    v = shown(views_for, state, view, qtbot)
    assert_drawable(v)
    path = render_view(view, state, str(tmp_path / f"{view}.png"), size=(1000, 700))
    assert os.path.getsize(path) > 1000
    with pytest.raises(ValueError, match="1 sample|fewer than 2"):
        get_method(VIEW_METHODS[view][0]).run(table(1), dict(FIT_PARAMS.get(VIEW_METHODS[view][0], {})))


# the quick pass (-m "not slow") keeps the first height past Qt's limit; the full run all three
@pytest.mark.parametrize("n", [h if h == 32_768 else pytest.param(h, marks=pytest.mark.slow) for h in HEIGHTS])
@pytest.mark.parametrize("view", [pytest.param(v, marks=pytest.mark.slow) if v in SLOW_VIEWS else v
                                  for v in VIEW_METHODS])
def test_every_view_draws_and_exports_at_the_qt_limit(n, view, views_for, qtbot, tmp_path):
    from app.views import render_view
    state = state_of(n, VIEW_METHODS[view])
    v = shown(views_for, state, view, qtbot)
    assert_drawable(v)
    # The command line's figure (--figure VIEW): drawn offscreen into a file.
    path = render_view(view, state, str(tmp_path / f"{view}.png"), size=(1000, 700))
    assert os.path.getsize(path) > 1000


@pytest.mark.slow
@pytest.mark.parametrize("n", HEIGHTS)
def test_the_L_S_heatmaps_are_binned_and_say_so(n, views_for, qtbot):
    v = shown(views_for, state_of(n, ("pcp",)), "decomposition", qtbot)
    region = v.pictures.shown_region()
    assert region.rows.binned and region.rows.stop == n and region.rows.count <= MAX_BINS
    assert region.rows.describe("samples") in v.status.text()
    assert f"{n:,} samples in {region.rows.count:,} bins of {region.rows.size:,}" in v.status.text()
    assert "bins of" in v.panels["original"].getAxis("left").labelText
    assert "means" in v.panels["original"].titleLabel.text
    # X and L have a key of their grey, as S has of its colours
    bar = v.pictures.gray_bar
    assert bar.isVisible() and bar.scene() is v.figure.scene()
    assert bar.levels() == pytest.approx(tuple(v.gray_levels))
    assert bar.getAxis("right").labelText == "X, L ÷ column range of L"
    assert bar.sceneBoundingRect().right() <= v.figure.viewport().width()
    assert_tiles_match(v, n)
    # The mask: each bin coloured by the share of its entries above the threshold.
    assert "share per bin" in v.panels["mask"].titleLabel.text
    for t in (v.threshold(), 2 * v.threshold()):
        v.set_threshold(t)
        region, tiles = v.pictures.tiles["whole"]
        share = reference(np.abs(scaled(n)[2]) > t, region.rows, region.cols, "mean")
        np.testing.assert_allclose(tiles["M"], share, rtol=1e-12)
        from app.palette import MASK_RGB
        img = v.pictures.images["mask"].image
        np.testing.assert_array_equal(np.all(img == MASK_RGB, axis=-1)[share == 1], True)
        assert not np.any(np.all(img == MASK_RGB, axis=-1)[share < 1])
        # a bin with a single entry in the mask is visibly tinted: red above green and blue
        one = (share > 0) & (share < 0.05)
        assert one.any() and np.all(img[one][:, 0] > img[one][:, 2] + 20)


def zoom_to(v, qtbot, rows, cols=(0, D)):
    """Zoom, then wait until what is drawn is the region on screen (the overview of a large
    table may still arrive from its worker first: any ``drawn`` would not do)."""
    vb = v.panels["original"].getViewBox()
    vb.setRange(xRange=cols, yRange=rows, padding=0)
    qtbot.waitUntil(lambda: v.zoom.region is not None and v.zoom.region == v.zoom.wanted(), timeout=30_000)


@pytest.mark.slow
def test_zooming_in_shows_the_real_rows(views_for, qtbot):
    n = 33_000
    state = state_of(n, ("pcp",))
    v = shown(views_for, state, "decomposition", qtbot)
    zoom_to(v, qtbot, (20_000, 20_150))
    region = v.pictures.shown_region()
    assert not region.rows.binned and (region.rows.start, region.rows.stop) == (20_000, 20_150)
    assert v.pictures.zoomed["original"].isVisible()
    X, L, S = scaled(n)
    np.testing.assert_allclose(v.pictures.zoomed["original"].image, X[20_000:20_150])
    np.testing.assert_allclose(v.pictures.zoomed["sparse"].image, S[20_000:20_150])
    assert "bins" not in v.status.text() and "rows 20,000–20,149" in v.status.text()
    # A click on a row selects that sample; the mouse names it.
    v._image_clicked(QPointF(3.5, 20_042.6), Qt.KeyboardModifier.NoModifier)
    np.testing.assert_array_equal(state.selection, [20_042])
    v._hovered(QPointF(3.5, 20_042.6))
    assert "#20042" in v.status.text() and "x3" in v.status.text()
    # Halfway out: bins again, of the rows on screen only, still equal to the reference.
    zoom_to(v, qtbot, (1_000, 16_000))
    region = v.pictures.shown_region()
    assert region.rows.binned and region.rows.start == 1_000
    assert_tiles_match(v, n)
    # All the way out: the overview, no zoomed image above it.
    zoom_to(v, qtbot, (0, n))
    assert not v.pictures.zoomed["original"].isVisible() and "zoomed" not in v.pictures.tiles


@pytest.mark.slow
def test_a_click_on_a_bin_selects_its_samples(views_for, qtbot):
    state = state_of(33_000, ("pcp",))
    v = shown(views_for, state, "decomposition", qtbot)
    rows = v.pictures.shown_region().rows
    b = rows.of(12_345)
    v._image_clicked(QPointF(0.5, 12_345.0), Qt.KeyboardModifier.NoModifier)
    np.testing.assert_array_equal(state.selection, np.arange(*rows.span(b)))
    v._hovered(QPointF(0.5, 12_345.0))
    lo, hi = rows.span(b)
    assert f"samples #{lo:,}–#{hi - 1:,} (a bin of {hi - lo})" in v.status.text()


@pytest.mark.slow
def test_large_regions_are_binned_off_the_gui_thread(views_for, qtbot, monkeypatch):
    """Above SYNC_VALUES a worker thread bins; a newer zoom cancels the older one, and only the
    latest answer is drawn."""
    import app.views._zoom_bins as zb
    monkeypatch.setattr(zb, "SYNC_VALUES", 0)
    n = 33_000
    v = shown(views_for, state_of(n, ("pcp",)), "decomposition", qtbot)
    vb = v.panels["original"].getViewBox()
    drawn = []
    v.zoom.drawn.connect(drawn.append)
    vb.setRange(xRange=(0, D), yRange=(100, 30_000), padding=0)
    v.zoom.update()                     # the first request goes to the pool ...
    vb.setRange(xRange=(0, D), yRange=(5_000, 5_100), padding=0)
    with qtbot.waitSignal(v.zoom.drawn, timeout=10_000):
        v.zoom.update()                 # ... and is overtaken by this one
    qtbot.wait(400)
    assert [(r.rows.start, r.rows.stop) for r in drawn] == [(5_000, 5_100)]
    assert_tiles_match(v, n)


@pytest.mark.slow   # a new process, a fit and two figures: about a minute on a loaded 2-core box
def test_the_command_line_writes_the_L_S_figure_of_33000_rows(tmp_path):
    """`run --figure decomposition` on 33,000 rows: it ended in a segmentation fault (exit 139)
    and wrote nothing."""
    np.save(tmp_path / "t33k.npy", table(33_000).X)
    out = tmp_path / "o"
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    proc = subprocess.run([sys.executable, "-m", "app", "run", "--data", str(tmp_path / "t33k.npy"), "--method",
                           "pcp", "--figure", "decomposition", "--figure", "detail", "--out", str(out)],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    for name in ("pcp-decomposition.png", "pcp-decomposition.svg", "pcp-detail.png", "pcp-summary.json"):
        assert (out / name).stat().st_size > 0


# -- wide ----------------------------------------------------------------------------------------
#: Wider than Qt draws; 100,000 columns (a minute of fitting on a loaded box) marked slow.
WIDE = [(20, 40_000), pytest.param(60, 100_000, marks=pytest.mark.slow)]


@pytest.mark.slow
@pytest.mark.parametrize("n, d", WIDE)
def test_wide_tables_bin_their_features(n, d, views_for, qtbot):
    state = state_of(n, ("pcp",), d, max_iter=3)
    v = shown(views_for, state, "decomposition", qtbot)
    assert_drawable(v)
    region = v.pictures.shown_region()
    assert region.cols.binned and not region.rows.binned
    assert f"{d:,} features in {region.cols.count:,} bins of {region.cols.size:,}" in v.status.text()
    assert_tiles_match(v, n, d, max_iter=3)
    # Zoomed in on 50 features: each its own column.
    c0 = d - 30_000
    zoom_to(v, qtbot, (0, n), (c0, c0 + 50))
    region = v.pictures.shown_region()
    assert not region.cols.binned and (region.cols.start, region.cols.stop) == (c0, c0 + 50)
    assert_tiles_match(v, n, d, max_iter=3)


@pytest.mark.slow
@pytest.mark.parametrize("n, d", WIDE)
def test_the_detail_of_a_wide_sample_bins_its_bars(n, d, views_for, qtbot):
    state = state_of(n, ("pcp",), d, max_iter=3)
    state.set_selection([7])
    v = shown(views_for, state, "detail", qtbot)
    assert_drawable(v)
    bins = v.bar_bins
    assert bins.binned and bins.count <= MAX_BINS and (bins.start, bins.stop) == (0, d)
    s7 = np.asarray(fit(n, "pcp", d, max_iter=3).arrays["sparse"])[7]
    np.testing.assert_allclose(v.bars.opts["height"], reference(s7[None, :], bins_for(0, 1), bins, "absmax")[0])
    assert f"{d:,} features in {bins.count:,} bins of {bins.size:,}" in v.bar_plot.titleLabel.text
    # The largest entry's bin is highlighted.
    hot = [b.color().name() for b in v.bars.opts["brushes"]]
    j = int(np.argmax(np.abs(s7)))
    assert hot[bins.of(j)] != hot[bins.of((j + d // 2) % d)] or bins.of(j) == bins.of((j + d // 2) % d)
    # Zoomed in: one bar per feature, the values themselves.
    vb = v.bar_plot.getViewBox()
    vb.setXRange(j - 20, j + 20, padding=0)
    qtbot.waitUntil(lambda: not v.bar_bins.binned, timeout=5_000)
    b = v.bar_bins
    np.testing.assert_array_equal(v.bars.opts["height"], s7[b.start:b.stop])
    assert "per feature" in v.bar_plot.titleLabel.text


#: The views the two tests above leave out, at 100,000 columns: (rows, fit parameters). SCW's full
#: covariance of 100,001 features would be 149 GiB: the fit refuses it and names the diagonal one.
WIDE_VIEWS = {"scatter": (60, {}), "outlier-map": (60, {}), "contour": (60, {}), "evaluation": (60, {}),
              "comparison": (60, {}), "ranking": (60, {}), "learning-curve": (400, {"covariance": "diagonal"})}


@pytest.mark.slow
@pytest.mark.parametrize("view", list(WIDE_VIEWS))
def test_every_other_view_draws_and_exports_100000_columns(view, views_for, qtbot, tmp_path):
    """Issue 33.1's "from 1 to 100,000 columns" for the views other than L + S and the detail."""
    from app.views import render_view
    n, params = WIDE_VIEWS[view]
    state = state_of(n, VIEW_METHODS[view], 100_000, **params)
    v = shown(views_for, state, view, qtbot)
    assert_drawable(v)
    path = render_view(view, state, str(tmp_path / f"{view}.png"), size=(1000, 700))
    assert os.path.getsize(path) > 1000


# -- a million rows ------------------------------------------------------------------------------
MILLION = 1_000_000
#: Every view but the ranking (test_the_ranking_draws_a_million_rows): ESFS's neighbour graph of a
#: million rows takes more than 9 minutes on a loaded 2-core box (the learning curve's SCW about
#: 30 s). The comparison's table of flagged samples is a model over arrays (its cells made only
#: when shown).
MILLION_VIEWS = ("decomposition", "detail", "contour", "evaluation", "scatter", "outlier-map", "comparison",
                 "learning-curve")


@pytest.mark.slow
@pytest.mark.parametrize("view", MILLION_VIEWS)
def test_a_million_rows(view, views_for, qtbot, tmp_path):
    from app.views import render_view
    state = state_of(MILLION, VIEW_METHODS[view])
    v = shown(views_for, state, view, qtbot)
    assert_drawable(v)
    if view == "decomposition":
        assert "1,000,000 samples in" in v.status.text()
        assert_tiles_match(v, MILLION)
        zoom_to(v, qtbot, (500_000, 500_100))
        assert not v.pictures.shown_region().rows.binned
        assert_tiles_match(v, MILLION)
    path = render_view(view, state, str(tmp_path / f"{view}.png"), size=(1000, 700))
    assert os.path.getsize(path) > 1000


@pytest.mark.slow
def test_the_ranking_draws_a_million_rows(views_for, qtbot, tmp_path):
    """The ranking's pair plot is the one part of it that grows with the rows. ESFS's graph of a
    million rows takes minutes (MILLION_VIEWS), so the ranking is fitted on the table's first
    20,000 rows and shown with the million: the pair plot draws all of them, binned, and the
    figure exports."""
    from dataclasses import replace

    from app.state import AppState
    from app.views import render_view
    big = table(MILLION)
    head = Dataset(X=big.X[:20_000], name="head", labels=big.labels[:20_000], class_names=big.class_names,
                   outliers=big.outliers[:20_000])
    res = get_method("esfs").run(head, dict(FIT_PARAMS["esfs"]))
    state = AppState()
    state.set_dataset(big)
    assert state.add_result(replace(res, data_fingerprint=state.data_fingerprint()))
    state.set_current_method("esfs")
    v = shown(views_for, state, "ranking", qtbot)
    assert_drawable(v)
    qtbot.waitUntil(lambda: v.cloud.binned.active and not v.cloud.drawing(), timeout=120_000)
    assert v.cloud.binned.source.n == MILLION
    assert v.cloud.drawn_count() < MILLION      # a picture of them, not a million symbols
    path = render_view("ranking", state, str(tmp_path / "ranking.png"), size=(1000, 700))
    assert os.path.getsize(path) > 1000


@pytest.mark.slow
def test_a_table_on_disk_is_binned_in_blocks(views_for, qtbot, tmp_path):
    """Out of core the L + S view's table is a Dask array and L and S are Zarr stores: binned a
    block at a time, never read whole, to the same values."""
    import dask.array as da
    import zarr
    n = 33_000
    X, L, S = scaled(n)                        # the reference, from the arrays in memory
    res = fit(n, "pcp")
    stores = {}
    for key in ("low_rank", "sparse"):
        z = zarr.open_array(str(tmp_path / f"{key}.zarr"), mode="w", shape=(n, D), chunks=(4_096, D), dtype="f8")
        z[:] = np.asarray(res.arrays[key])
        stores[key] = z
    v = shown(views_for, state_of(n, ("pcp",)), "decomposition", qtbot)
    v.tables.load(da.from_array(table(n).X, chunks=(5_000, D)), stores["low_rank"], stores["sparse"])
    v.tables.draw(v.gray_levels, v.s_levels)
    region, tiles = v.pictures.tiles["whole"]
    assert region.rows.binned
    for key, a, how in (("X", X, "mean"), ("L", L, "mean"), ("S", S, "absmax")):
        np.testing.assert_allclose(tiles[key], reference(a, region.rows, region.cols, how), rtol=1e-9, atol=1e-12)


@pytest.mark.slow
def test_a_large_tables_L_S_overview_is_made_off_the_gui_thread(views_for, qtbot, monkeypatch):
    """Issue 33.2: the overview of a table read every entry on the GUI thread (O(n·d)). Above
    the size binned at once, the units, probe and overview are made by a worker, and the
    overview drawn is the same binning of the same values."""
    import threading

    from app.views import _table_heatmaps as th
    from app.views._zoom_bins import SYNC_VALUES
    n = SYNC_VALUES // D + 1_000
    threads = []
    real_bin, real_units = th.bin_array, th.column_units
    monkeypatch.setattr(th, "bin_array", lambda *a, **k: (threads.append(threading.get_ident()), real_bin(*a, **k))[1])
    monkeypatch.setattr(th, "column_units", lambda *a: (threads.append(threading.get_ident()), real_units(*a))[1])
    views = views_for(state_of(n, ("pcp",), max_iter=3))
    v = views.show_view("decomposition")
    assert v.tables.loading() and v.pictures.shown_region() is None   # nothing read yet on this thread
    assert "binning" in v.status.text()
    qtbot.waitUntil(lambda: not v.tables.loading(), timeout=120000)
    assert threads and threading.get_ident() not in threads
    assert v.drawn is not None and v.pictures.shown_region().rows.binned
    assert_tiles_match(v, n, max_iter=3)
