"""L/S viewer: robust PCA on the first 24 escalator frames (images) and on iris (a table)."""
import numpy as np
import pytest
from PySide6.QtCore import QPointF, Qt

from .conftest import data, make_state


@pytest.fixture
def video(views_for):
    state = make_state("escalator-24", "pcp")
    views = views_for(state)
    return state, views.show_view("decomposition")


@pytest.mark.slow
def test_panels_show_the_frame_its_L_S_and_mask(video):
    state, v = video
    res, ds = state.result("pcp"), data("escalator-24")
    v.set_frame(5)
    i = v.current_sample
    assert i == 5  # frame_order is the identity for this video
    shape = ds.image_shape
    np.testing.assert_array_equal(v.images["original"].image, ds.X[i].reshape(shape))
    np.testing.assert_array_equal(v.images["low_rank"].image, res.arrays["low_rank"][i].reshape(shape))
    np.testing.assert_array_equal(v.images["sparse"].image, res.arrays["sparse"][i].reshape(shape))
    v.set_threshold(30.0)
    # The mask is drawn over the faded frame: its pixels in the mask colour, the rest grey.
    from app.palette import MASK_RGB
    mask = np.all(v.images["mask"].image == MASK_RGB, axis=-1)
    np.testing.assert_array_equal(mask, (np.abs(res.arrays["sparse"][i]) > 30.0).reshape(shape))
    assert "mask |S| > 30" in v.panels["mask"].titleLabel.text
    lo, hi = v.s_bar.levels()
    assert (lo, hi) == v.s_levels and lo == -hi


@pytest.mark.slow
def test_frames_of_a_video_have_no_grey_key(video):
    _, v = video
    assert not v.pictures.gray_bar.isVisible() and v.pictures.s_bar.isVisible()


@pytest.mark.slow
def test_colour_scales_are_fixed_over_the_stack(video):
    state, v = video
    v.set_frame(0)
    levels0 = [v.images[k].getLevels() for k in ("original", "low_rank", "sparse")]
    v.set_frame(20)
    levels20 = [v.images[k].getLevels() for k in ("original", "low_rank", "sparse")]
    for a, b in zip(levels0, levels20):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(levels0[0], levels0[1])  # X and L share one scale
    lo, hi = levels0[2]
    assert lo == -hi  # S: symmetric about zero


@pytest.mark.slow
def test_slider_play_and_selection(video, qtbot):
    state, v = video
    assert v.frame_slider.maximum() == 23
    v.set_frame(0)
    v.timer.setInterval(5)
    v.play()
    qtbot.waitUntil(lambda: v.frame_slider.value() >= 3, timeout=3000)
    v.pause()
    assert not v.timer.isActive()
    # A selection made elsewhere brings its frame up ...
    state.set_selection([17])
    assert v.current_sample == 17
    # ... and a click on a picture selects the frame shown.
    v.set_frame(9)
    v._image_clicked(QPointF(3, 3), Qt.KeyboardModifier.ShiftModifier)
    np.testing.assert_array_equal(state.selection, [9, 17])


@pytest.mark.slow
def test_convergence_plot_has_one_point_per_iteration(video):
    state, v = video
    res = state.result("pcp")
    x, y = v.convergence.residual_curve.getData()
    n_it = res.summary["iterations"]
    assert x.size == n_it == len(res.arrays["history_residual"])
    # getData gives what is drawn: log10 of the residuals on this logarithmic axis.
    np.testing.assert_allclose(10 ** y, res.arrays["history_residual"], rtol=1e-10)
    _, r = v.convergence.rank_curve.getData()
    np.testing.assert_array_equal(r, res.arrays["history_rank"])


def test_the_rank_per_iteration_ends_at_the_rank_of_l_reported(views_for, qtbot):
    """A planted rank 3 plus noise and 1 % gross rows: the L + S view's "rank of L per iteration"
    ends where the result's rank of L is (it counted the solver's residue: 10 against 3)."""
    from app.state import AppState
    from robustcore.datasets import Dataset
    from robustcore.methods import get_method
    rng = np.random.default_rng(5)
    n, d = 20_000, 20
    X = rng.normal(size=(n, 3)) @ rng.normal(size=(3, d)) + 0.1 * rng.normal(size=(n, d))
    bad = rng.random(n) < 0.01
    X[bad] += 5 * rng.normal(size=(int(bad.sum()), d))
    ds = Dataset(X=X, name="planted rank 3")
    res = get_method("pcp").run(ds, {"scale": "none", "random_state": 0})
    state = AppState()
    state.set_dataset(ds)
    assert state.add_result(res)
    v = views_for(state).show_view("decomposition")
    qtbot.waitUntil(lambda: not v.tables.loading(), timeout=60_000)   # the plots follow the tables' scales
    _, r = v.convergence.rank_curve.getData()
    assert res.decomposition.rank_of_L == 3 and r[-1] == 3 and np.all(r <= 3)
@pytest.mark.slow
def test_tables_show_heatmaps_and_mark_the_selection(views_for):
    state = make_state("iris", "pcp")
    v = views_for(state).show_view("decomposition")
    res, ds = state.result("pcp"), data("iris")
    assert v.mode == "table"
    # Each column on its own range (issue 25: a column of large numbers set the grey of all).
    L, S = np.asarray(res.arrays["low_rank"]), np.asarray(res.arrays["sparse"])
    lo = L.min(0)
    span = L.max(0) - lo
    np.testing.assert_allclose(v.images["original"].image, (ds.X - lo) / span)
    np.testing.assert_allclose(v.images["low_rank"].image, (L - lo) / span)
    np.testing.assert_allclose(v.images["sparse"].image, S / span)
    v._image_clicked(QPointF(1.5, 42.3), Qt.KeyboardModifier.NoModifier)
    np.testing.assert_array_equal(state.selection, [42])
    x, y = v.pictures.sel_markers["original"].getData()
    np.testing.assert_array_equal(y, [42.5])


@pytest.mark.slow
def test_the_four_pictures_are_drawn_the_same_size(video, qtbot):
    """The convergence plots below have different axis widths; they must not make one picture
    column wider than another (the pictures are compared side by side)."""
    state, v = video
    qtbot.wait(50)
    widths = []
    for key in ("original", "low_rank", "sparse", "mask"):
        img = v.images[key]
        widths.append(img.mapRectToScene(img.boundingRect()).width())
    assert min(widths) > 50
    assert max(widths) - min(widths) < 1.0, widths


@pytest.mark.slow
def test_pictures_use_the_space_of_the_view(video, qtbot):
    """Frames were about 170 px wide with empty bands around them: the pictures are laid out
    in the grid that shows them largest, and take a good share of the figure."""
    state, v = video
    for size in ((1100, 720), (700, 720), (1400, 420)):
        v.window().resize(*size)
        qtbot.wait(50)
        v.grab()
        area = 0.0
        for img in v.images.values():
            r = img.mapRectToScene(img.boundingRect())
            area += r.width() * r.height()
        pics = v.pics.geometry()  # the figure less the convergence plots
        share = area / (pics.width() * pics.height())
        assert share > 0.3, (size, v.pictures.grid, share)


def test_s_has_its_colour_scale_beside_the_pictures(video):
    state, v = video
    assert v.s_bar.isVisible()
    assert v.s_bar.getAxis("right").labelText == "S"
    assert v.s_bar.levels() == v.s_levels


@pytest.mark.slow
def test_frame_controls_are_for_frames_only(video, views_for):
    """A table's L + S is drawn whole: no frame slider, Play or frame name beside it (they
    were shown, disabled, with a "Frame" caption); a video has them."""
    _, v = video
    controls = (v.play_button, v.frame_caption, v.frame_slider, v.frame_label)
    assert not any(w.isHidden() for w in controls) and v.frame_slider.isEnabled()
    t = views_for(make_state("iris", "pcp")).show_view("decomposition")
    assert t.mode == "table"
    assert all(w.isHidden() for w in (t.play_button, t.frame_caption, t.frame_slider, t.frame_label))


@pytest.mark.slow
def test_frame_controls_follow_the_data_from_a_table_to_a_video_and_back(views_for):
    from .conftest import fit
    state = make_state("iris", "pcp")
    views = views_for(state)          # one window, the data changing under it
    v = views.show_view("decomposition")
    assert v.mode == "table" and v.frame_slider.isHidden()
    for name, mode in (("escalator-24", "image"), ("iris", "table")):
        state.set_dataset(data(name))
        assert state.add_result(fit(name, "pcp"))
        assert views.show_view("decomposition") is v
        assert v.mode == mode
        assert v.frame_slider.isHidden() == (mode == "table") == v.play_button.isHidden()


@pytest.mark.slow
@pytest.mark.parametrize("size", [(980, 560), (620, 560)], ids=["1280x800 window", "narrow"])
def test_a_tables_feature_labels_name_columns_and_never_touch(views_for, qtbot, size):
    """With 12 columns at 1280 x 800 the L + S view's feature labels ran together (numbers at
    the columns' edges). Each label is a feature's name under its column's centre, every k-th
    when they do not all fit (the columns' numbers when not even two names fit), and no two
    labels' rectangles overlap."""
    from PySide6.QtGui import QImage, QPainter

    from app.state import AppState
    from robustcore.datasets import Dataset
    from robustcore.methods import get_method
    rng = np.random.default_rng(2)
    X = rng.normal(size=(400, 2)) @ rng.normal(size=(2, 12)) + 0.01 * rng.normal(size=(400, 12))
    names = [f"sensor_{j:02d}_reading" for j in range(12)]
    ds = Dataset(X=X, name="t", feature_names=names)
    state = AppState()
    state.set_dataset(ds)
    state.add_result(get_method("pcp").run(ds, {"max_iter": 20}))
    state.set_current_method("pcp")
    v = views_for(state, size=size).show_view("decomposition")
    qtbot.wait(300)
    v.grab()
    shown = [p for p in v.panels.values() if p.getAxis("bottom").isVisible()]
    assert shown
    img = QImage(10, 10, QImage.Format.Format_ARGB32)
    painter = QPainter(img)
    try:
        for p in shown:
            ax = p.getAxis("bottom")
            specs = ax.generateDrawSpecs(painter)
            assert specs is not None
            texts = specs[2]
            assert len(texts) >= 2
            assert all(t in names for _r, _f, t in texts) or all(t.isdigit() for _r, _f, t in texts)
            rects = [r for r, _f, _t in texts]
            for a, b in zip(rects, rects[1:]):
                assert not a.intersects(b), ([t for _r, _f, t in texts], a, b)
            ticks = ax.tickValues(*p.getViewBox().viewRange()[0], ax.width())[0][1]
            assert all(float(t) % 1.0 == 0.5 for t in ticks)   # under the columns' centres
    finally:
        painter.end()


def _rounded_flat_pcp(wiggle):
    """PCP on rare 0/1 features beside four correlated columns, its L in the 0/1 columns
    constant but for a wiggle (as PCP left a8a's: 1e-13 to 4e-8 of X's range in 117 columns,
    0.1-0.5 % in 4), S = X - L still: (data set, result, the flat columns)."""
    import dataclasses

    from robustcore.datasets import Dataset
    from robustcore.methods import get_method
    rng = np.random.default_rng(0)
    X = (rng.random((600, 20)) < 0.03).astype(float)
    X[:, :4] = rng.normal(size=(600, 2)) @ rng.normal(size=(2, 4))
    ds = Dataset(X=X, name="rare features")
    res = get_method("pcp").run(ds, {})
    L = np.array(res.arrays["low_rank"], dtype=float)
    flat = np.arange(4, 20)
    assert np.ptp(L[:, flat], axis=0).max() < 1e-6   # (what this test is about: L does not vary there)
    L[:, flat] = L[:, flat].mean(0) + wiggle * rng.standard_normal((600, flat.size))
    return ds, dataclasses.replace(res, arrays={**res.arrays, "low_rank": L, "sparse": X - L}), flat


@pytest.mark.slow
@pytest.mark.parametrize("wiggle", [1e-11, 1e-3], ids=["rounding", "a thousandth"])
def test_a_column_l_hardly_varies_in_is_shown_on_the_range_of_x(views_for, qtbot, wiggle):
    """S was divided by L's range in each column, 1e-11 where L varies by rounding alone: the
    colour scale of S reached 1.5e9 on a8a, its bar read "0" alone and the S picture was blank
    but for specks (a look at 1280 x 800); four columns where L varied by 0.1-0.5 % of X's range
    still set it to ±750."""
    from app.state import AppState

    from ._text_rects import drawn_ticks
    ds, res, flat = _rounded_flat_pcp(wiggle)
    state = AppState()
    state.set_dataset(ds)
    assert state.add_result(res)
    state.set_current_method("pcp")
    v = views_for(state, size=(1000, 700)).show_view("decomposition")
    qtbot.waitUntil(lambda: v.images["sparse"].image is not None, timeout=10_000)
    X = ds.X
    span = X[:, flat].max(0) - X[:, flat].min(0)
    np.testing.assert_allclose(v.tables.S[:, flat], res.arrays["sparse"][:, flat] / span)   # (binned, drawn)
    assert v.s_levels[1] <= np.abs(res.arrays["sparse"] / np.where(np.ptp(X, 0) > 0, np.ptp(X, 0), 1)).max() * 10
    v.grab()
    assert len(drawn_ticks(v.s_bar.getAxis("right"))) >= 3          # a scale, not one number
    assert f"L varies by under 1% of X's range in {flat.size} of 20 features" in v.status.text()
