"""Large clouds in the scatter and the outlier map, as a user meets them: binned off the GUI thread
while the window keeps answering, re-binned exactly on zoom down to single samples, selections
resolved on a worker to exactly the samples inside, flagged samples and rare classes on top, and
rows on disk read by blocks, never whole on the GUI thread."""
import threading

import numpy as np
import pytest
from PySide6.QtCore import QTimer

from app.views import _aggregate as agg
from app.views import _geometry as geo
from app.views._binned import FLAG_POINTS, POINTS_IN_VIEW
from app.views._density import DENSITY_POINTS

from .test_aggregate import spread_by_loop


def _state(X, **kw):
    from app.state import AppState
    from robustcore.datasets import Dataset
    from robustcore.methods import get_method
    ds = Dataset(X=X, name="cloud", **kw)
    res = get_method("pca").run(ds, {"n_components": 2, "scale": "none"})
    state = AppState()
    state.set_dataset(ds)
    assert state.add_result(res)
    return state, res


def _planted(n, seed=0, rare=0.03):
    rng = np.random.default_rng(seed)
    X = np.c_[rng.normal(size=(n, 2)) * [3.0, 1.5], 0.05 * rng.normal(size=n)]
    known = rng.random(n) < rare
    X[known, 2] += 2.0   # off the plane: PCA flags many of them
    return X, known


def _scatter(views_for, state, colour=("none", None)):
    v = views_for(state).show_view("scatter")
    v.method_box.set_key("pca")
    v.color_box.set_key(colour)
    return v


def _rest(qtbot, cloud):
    qtbot.waitUntil(lambda: not cloud.drawing(), timeout=60_000)


@pytest.mark.slow
def test_a_million_rows_are_binned_on_a_worker_while_the_window_keeps_ticking(views_for, qtbot, monkeypatch):
    X, known = _planted(1_000_000)
    state, res = _state(X, outliers=known)
    seen = []   # (thread, timer ticks when the aggregation started, when it ended)
    ticks = [0]
    real = agg.aggregate

    def spy(*a, **kw):
        start = ticks[0]
        out = real(*a, **kw)
        seen.append((threading.current_thread() is threading.main_thread(), start, ticks[0]))
        return out

    monkeypatch.setattr(agg, "aggregate", spy)
    timer = QTimer()
    timer.timeout.connect(lambda: ticks.__setitem__(0, ticks[0] + 1))
    timer.start(10)
    v = _scatter(views_for, state, ("truth", None))
    _rest(qtbot, v.cloud)
    timer.stop()
    assert seen and not any(on_gui for on_gui, _, _ in seen)
    # the GUI thread's timer went on ticking while a million rows were binned
    assert max(end - start for _, start, end in seen) >= 2
    cloud = v.cloud
    proj = np.asarray(res.arrays["projection"])
    x0, x1, y0, y1 = cloud.density.extent
    ref, _, _ = np.histogram2d(proj[:, 0], proj[:, 1], bins=cloud.density.counts.shape, range=[[x0, x1], [y0, y1]])
    np.testing.assert_array_equal(cloud.density.counts, ref)
    pic = cloud.binned.picture
    flagged = np.asarray(res.flags["outlier"])
    assert pic.layer_totals[pic.flagged_layer] == flagged.sum() > FLAG_POINTS
    # the flagged samples' own layer is drawn, and the highest-scoring of them as points, spread
    # over the picture (at most PER_SPOT a spot until each spot had its turn)
    score = np.asarray(res.sample_scores[res.primary_score])
    best = np.flatnonzero(flagged)[np.lexsort((np.flatnonzero(flagged), -score[flagged]))][:FLAG_POINTS]
    top = best[spread_by_loop(proj[best, 0], proj[best, 1], pic.extent, cloud.sample_index.size)]
    np.testing.assert_array_equal(np.sort(cloud.sample_index), np.sort(top))
    assert f"{X.shape[0]:,} samples in" in v.status.text() and "per spot, drawn as points" in v.status.text()


@pytest.mark.slow
def test_zooming_into_a_small_region_shows_exactly_the_samples_there(views_for, qtbot):
    X, known = _planted(DENSITY_POINTS + 20_000, seed=1)
    state, res = _state(X, outliers=known)
    v = _scatter(views_for, state)
    _rest(qtbot, v.cloud)
    assert v.cloud.density.active and v.cloud.binned.picture.in_view == X.shape[0]
    proj = np.asarray(res.arrays["projection"])
    vb = v.plot.getViewBox()
    vb.setRange(xRange=(0.5, 0.9), yRange=(-0.3, 0.1), padding=0)
    assert v.cloud.drawing()   # the re-bin waits for the view to rest, then runs on a worker
    _rest(qtbot, v.cloud)
    (x0, x1), (y0, y1) = vb.viewRange()
    want = geo.in_rect(proj[:, 0], proj[:, 1], x0, y0, x1, y1)
    assert 0 < want.size <= POINTS_IN_VIEW
    pic = v.cloud.binned.picture
    assert pic.all_points and not v.cloud.density.active
    np.testing.assert_array_equal(np.sort(v.cloud.sample_index), want)
    np.testing.assert_array_equal(v.cloud.x[np.argsort(v.cloud.sample_index)], proj[want, 0])
    assert v.cloud.drawn_count() == want.size
    assert f"{want.size:,} of {X.shape[0]:,} samples in view, each drawn as a point" in v.status.text()
    # a tooltip belongs to the sample drawn there
    i = int(want[0])
    assert v.cloud.index_at(proj[i, 0], proj[i, 1], radius=0.5) == i


@pytest.mark.slow
def test_a_rectangle_and_a_lasso_on_the_density_select_exactly_the_samples_inside(views_for, qtbot):
    X, known = _planted(DENSITY_POINTS + 10_000, seed=2)
    state, res = _state(X, outliers=known)
    v = _scatter(views_for, state)
    _rest(qtbot, v.cloud)
    proj = np.asarray(res.arrays["projection"])
    vb = v.plot.getViewBox()
    corners = np.array([[-1.0, -0.5], [0.5, 1.0]])
    with qtbot.waitSignal(state.selectionChanged, timeout=30_000):
        vb.sigRegion.emit("rect", corners, "replace")   # what a drag with the rectangle tool sends
    want = geo.in_rect(proj[:, 0], proj[:, 1], -1.0, -0.5, 0.5, 1.0)
    np.testing.assert_array_equal(state.selection, want)
    assert v.cloud.binned.last_chosen.count == want.size
    assert f"{want.size:,} selected" in v.status.text()
    # the selection is ringed where it lies
    qtbot.waitUntil(lambda: v.cloud.sel_item.getData()[0].size == want.size, timeout=30_000)
    poly = np.array([[0, 0], [4, 0.5], [3, 2], [-1, 2]])
    with qtbot.waitSignal(state.selectionChanged, timeout=30_000):
        vb.sigRegion.emit("lasso", poly, "add")
    np.testing.assert_array_equal(state.selection, np.union1d(want, geo.in_polygon(proj[:, 0], proj[:, 1], poly)))


@pytest.mark.slow
def test_flagged_samples_and_rare_classes_are_drawn_above_common_ones(views_for, qtbot):
    # 6,000 known outliers: more than FLAG_POINTS, so they are a layer of their own
    X, known = _planted(max(DENSITY_POINTS + 10_000, 60_000), seed=3, rare=0.1)
    labels = np.where(np.random.default_rng(0).random(X.shape[0]) < 0.05, "rare", "common")
    # the rare class first in class order: drawn by size, not by palette, it is still on top
    state, res = _state(X, outliers=known, labels=labels, class_names=["rare", "common"])
    v = _scatter(views_for, state, ("label", None))
    v.flag_box.set_key(("truth", None))   # ring the 6,000 known outliers
    _rest(qtbot, v.cloud)
    dens = v.cloud.density
    z = {k: im.zValue() for (k, _, _), im in zip(dens.layers, dens.images)}
    pic = v.cloud.binned.picture
    assert pic.layer_totals[0] < pic.layer_totals[1] and pic.n_candidates > FLAG_POINTS
    assert z[0] > z[1]                                   # rare class over the common one
    assert z[pic.flagged_layer] > max(z[0], z[1])        # flagged over both
    assert v.cloud.flag_item.zValue() > max(z.values())  # their highest scores over every layer
    assert any("rare (" in t for t in v.legend_texts()) and any("binned" in t for t in v.legend_texts())
    # the point path too: a rare group's points lie over a common group's
    small = X[:3000]
    st2, _ = _state(small, outliers=known[:3000], labels=labels[:3000], class_names=["rare", "common"])
    v2 = _scatter(views_for, st2, ("label", None))
    v2.cloud.finish_drawing()
    zs = {}
    for it in v2.cloud.groups:
        if it.isVisible() and it.getData()[0].size:
            zs[id(it.opts["brush"])] = it.zValue()
    from app.views import _style as st
    assert zs[id(st.brush(st.category_color(0)))] > zs[id(st.brush(st.category_color(1)))]


def test_the_outlier_map_bins_a_large_result_and_frames_its_cut_offs(views_for, qtbot):
    X, known = _planted(DENSITY_POINTS + 10_000, seed=4)
    state, res = _state(X, outliers=known)
    v = views_for(state).show_view("outlier-map")
    v.method_box.set_key("pca")
    _rest(qtbot, v.cloud)
    sd = np.asarray(res.arrays["score_distance"])
    od = np.asarray(res.arrays["orthogonal_distance"])
    x0, x1, y0, y1 = v.cloud.density.extent
    ref, _, _ = np.histogram2d(sd, od, bins=v.cloud.density.counts.shape, range=[[x0, x1], [y0, y1]])
    np.testing.assert_array_equal(v.cloud.density.counts, ref)
    assert x0 <= 0 <= x1 and x1 >= max(sd.max(), res.outlier_map.sd_cutoff)
    region = np.asarray(res.arrays["map_region"])
    from robustcore.outlier_map import REGIONS
    for i, r in enumerate(REGIONS):
        assert f"{r} {int(np.sum(known & (region == i))):,}" in v.status.text()
    assert "bins" in v.status.text()


@pytest.mark.slow
def test_rows_on_disk_are_binned_without_being_read_whole_on_the_gui_thread(views_for, qtbot, tmp_path, monkeypatch):
    from app.state import AppState
    from robustcore.bigdata import StoredRows, open_lazy, settings
    from robustcore.methods import get_method
    import app.views.scatter as scatter
    import app.views._binned as binned
    monkeypatch.setattr(scatter, "DENSITY_POINTS", 5_000)  # an out-of-core fit of 50,000 rows under a tiny budget: 20 s
    monkeypatch.setattr(binned, "POINTS_IN_VIEW", 1_000)
    X, _ = _planted(8_000, seed=5)
    path = tmp_path / "t.npy"
    np.save(path, X.astype(np.float32))
    with settings(memory_budget=1 << 18, store_dir=tmp_path):   # 256 KB: the per-row results go to disk
        ds = open_lazy(path, chunk_rows=4_000)
        res = get_method("pca").run(ds, {"n_components": 2, "scale": "none"})
    assert isinstance(res.arrays["projection"], StoredRows)
    real = StoredRows.__array__

    def guarded(self, *a, **kw):
        assert threading.current_thread() is not threading.main_thread(), "a stored column was read whole"
        return real(self, *a, **kw)

    monkeypatch.setattr(StoredRows, "__array__", guarded)
    state = AppState()
    state.set_dataset(ds)
    assert state.add_result(res)
    v = views_for(state).show_view("scatter")
    v.method_box.set_key("pca")
    _rest(qtbot, v.cloud)
    proj = res.arrays["projection"][:]
    x0, x1, y0, y1 = v.cloud.density.extent
    ref, _, _ = np.histogram2d(proj[:, 0].astype(float), proj[:, 1].astype(float), bins=v.cloud.density.counts.shape,
                               range=[[x0, x1], [y0, y1]])
    np.testing.assert_array_equal(v.cloud.density.counts, ref)
    assert v.cloud.density.n_binned == X.shape[0]


def test_label_codes_by_blocks_equal_a_per_sample_lookup():
    """A binned scatter makes its label codes on a worker, block by block (the GIL is let go
    between blocks): the codes are each sample's class position, -1 for a label of no class."""
    from types import SimpleNamespace

    from app.views._common import _LABEL_BLOCK, label_codes
    rng = np.random.default_rng(0)
    lab = rng.choice(np.array(["a", "b", "c", "zz"]), size=2 * _LABEL_BLOCK + 7)
    codes, names = label_codes(SimpleNamespace(labels=lab, class_names=["c", "a", "b"], n_samples=lab.size))
    pos = {"c": 0, "a": 1, "b": 2}
    np.testing.assert_array_equal(codes, [pos.get(v, -1) for v in lab])
    assert names == ["c", "a", "b"]


def test_flagged_points_over_a_density_keep_their_class_colour_the_rarer_drawn_last(views_for, qtbot):
    # A density coloured by label: the flagged samples drawn as points used to be black dots,
    # which covered a small cluster whole and every known outlier in it (w8a-like data).
    from app.views import _style as st
    X, known = _planted(DENSITY_POINTS + 10_000, seed=7)
    labels = np.where(known, "outlier", "inlier")
    state, res = _state(X, outliers=known, labels=labels, class_names=["inlier", "outlier"])
    v = _scatter(views_for, state, ("label", None))
    _rest(qtbot, v.cloud)
    pic = v.cloud.binned.picture
    assert not pic.all_points and v.cloud.density.active
    item = v.cloud.flag_item
    xs, ys = item.getData()
    flagged = res.flags["outlier"]
    assert xs.size == int(flagged.sum()) <= FLAG_POINTS
    # each point's brush is its sample's class colour
    proj = np.asarray(res.arrays["projection"])
    by_place = {(float(a), float(b)): i for i, (a, b) in enumerate(proj[:, :2])}
    brushes = [p.brush() for p in item.points()]
    inlier, outlier = st.brush(st.category_color(0)).color(), st.brush(st.category_color(1)).color()
    colours = []
    for x, y, b in zip(xs, ys, brushes):
        i = by_place[(float(x), float(y))]
        assert b.color() == (outlier if known[i] else inlier)
        colours.append(b.color() == outlier)
    # the rarer class among them is drawn last (on top), each inside a dark ring
    kinds = np.asarray(colours)
    rarer = kinds.mean() < 0.5
    assert np.all(np.diff(kinds.astype(int) if rarer else (~kinds).astype(int)) >= 0)
    assert item.opts["pen"].color() == st.pen(st.FLAG_COLOR, 1).color()
