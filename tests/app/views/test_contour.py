"""SPE / T² map on the 2-D Gaussian demo: isolines at the control limits, bands that change
colour at the limit, the SPE blind spot along the principal axis, and the flag-rule switch."""
import numpy as np
import pytest

from .conftest import data, make_state


@pytest.fixture
def contour(views_for):
    state = make_state("gaussian-2d", ("residual", {"n_components": 1}))
    views = views_for(state)
    v = views.show_view("contour")
    v.finish_drawing()   # the maps are made on a worker
    return state, v


def _drawn_segments(v, key, limit):
    x, y = v.isolines[(key, limit)].getData()
    return np.asarray(x), np.asarray(y)


def test_isolines_sit_at_the_control_limits(contour):
    """Every vertex drawn lies where the estimator's own SPE (T²) equals its limit, up to the
    grid's linear interpolation."""
    state, v = contour
    est = state.result("residual").estimator
    for grid_name in ("spe", "t2"):
        for lim, limit, fn in (("spe", est.spe_limit_, est.spe), ("t2", est.t2_limit_, est.t2)):
            x, y = _drawn_segments(v, grid_name, lim)
            assert x.size >= 20 and x.size % 2 == 0
            pts = est.mean_ + x[:, None] * v.plane[0] + y[:, None] * v.plane[1]
            np.testing.assert_allclose(fn(pts), limit, rtol=2e-3)


def test_grids_are_the_estimators_and_show_the_blind_spot(contour):
    state, v = contour
    est = state.result("residual").estimator
    xs, ys = v.grid_axes
    spe_g, t2_g = est.grid(xs, ys)
    np.testing.assert_allclose(v.grids["spe"], spe_g)
    np.testing.assert_allclose(v.grids["t2"], t2_g)
    # Along the principal axis through the mean SPE is zero however far out; T² grows.
    u = est.plane_ @ est.components_[0]
    far = np.array([0.5, 3.0, 6.0]) * np.sqrt(est.variances_[0])
    pts = est.mean_ + far[:, None] * (u @ est.plane_)[None, :]
    np.testing.assert_allclose(est.spe(pts), 0.0, atol=1e-9)
    assert np.all(np.diff(est.t2(pts)) > 0)
    # The principal axis drawn has the direction of PC1 in the plane.
    ang = v.axis_lines["spe"].angle
    assert np.isclose(np.tan(np.radians(ang)), u[1] / u[0], rtol=1e-6)


def test_band_colour_changes_at_the_limit(contour):
    state, v = contour
    img = v.images["spe"].image
    lim = v.limits["spe"]
    g = v.grids["spe"]
    inside = g < lim * 0.99
    outside = g > lim * 1.01
    assert img[inside].max() <= 0 < img[outside].min()


@pytest.mark.slow
def test_rule_switch_rings_the_right_points(contour):
    state, v = contour
    est = state.result("residual").estimator
    X = data("gaussian-2d").X
    flags = est.flag(X)
    for rule in ("spe", "t2", "either"):
        v.set_rule(rule)
        fx, fy = v.clouds["spe"].flag_item.getData()
        assert fx.size == int(flags[rule].sum())
        np.testing.assert_array_equal(v.current_flags, flags[rule])
    with pytest.raises(ValueError, match="rule must be one of"):
        v.set_rule("both")


@pytest.mark.slow
def test_training_points_are_drawn_and_selectable(contour):
    state, v = contour
    x, y = v.clouds["t2"].points()
    assert x.size == 1000
    v.clouds["spe"].select_rect(0, 0, 100, 100)
    expect = np.flatnonzero((x >= 0) & (y >= 0))
    np.testing.assert_array_equal(state.selection, expect)
    sx, _ = v.clouds["t2"].sel_item.getData()
    assert sx.size == expect.size


@pytest.mark.slow
def test_a_scaled_fit_is_drawn_in_its_own_units(views_for):
    """With scale="standard" the subspace lives in scaled units: the map's points, grids and
    flags are the estimator's own, not those of the raw data against scaled components."""
    state = make_state("gaussian-2d", ("residual", {"n_components": 1, "scale": "standard"}))
    v = views_for(state).show_view("contour")
    v.finish_drawing()
    est = state.result("residual").estimator
    X = data("gaussian-2d").dense()
    flags = est.flag(X)
    for rule in ("spe", "t2", "either"):
        v.set_rule(rule)
        np.testing.assert_array_equal(v.current_flags, flags[rule])
    x, y = v.clouds["spe"].points()
    Z = (X - est.scale_center_) / est.scale_ - est.mean_
    np.testing.assert_allclose(np.c_[x, y], Z @ v.plane.T, rtol=1e-9, atol=1e-12)


@pytest.mark.slow
def test_the_maps_fill_the_plots_whatever_their_shape(contour, qtbot):
    """The filled map used to leave white margins where the square grid did not reach."""
    state, v = contour
    for size in ((1100, 720), (700, 720), (1100, 420)):
        v.window().resize(*size)
        qtbot.wait(50)
        v.grab()
        v.finish_drawing()
        for key in ("spe", "t2"):
            (x0, x1), (y0, y1) = v.plots[key].getViewBox().viewRange()
            r = v.images[key].mapRectToParent(v.images[key].boundingRect())
            assert r.left() <= x0 + 1e-9 and r.right() >= x1 - 1e-9
            assert r.top() <= y0 + 1e-9 and r.bottom() >= y1 - 1e-9


@pytest.mark.slow
def test_the_colour_key_reads_in_multiples_of_the_limit(contour):
    state, v = contour
    ax = v.key.getAxis("right")
    assert ax.labelText == "value as a multiple of its limit"
    assert [t for _, t in ax._tickLevels[0]] == ["1/16×", "1/8×", "1/4×", "1/2×", "1×", "2×", "4×", "8×", "16×"]
    assert v.key.isVisible() and v.key.sceneBoundingRect().right() <= v.figure.viewport().width()


@pytest.mark.slow
def test_on_images_the_default_plane_is_one_where_spe_varies(views_for):
    """PCA of the 256-pixel USPS digits with rank 2: the principal plane of the data lies in the
    subspace, so SPE was one flat colour there. The default plane now holds component 1 and the
    largest residual direction; choosing the principal plane says why SPE is flat."""
    state = make_state("usps-1-vs-8", ("pca", {"n_components": 2}))
    v = views_for(state).show_view("contour")
    v.finish_drawing()
    res = state.result("pca")
    assert v.plane_box.currentText() == "component 1 & largest residual"
    np.testing.assert_allclose(v.plane[0], res.subspace.components[0])
    np.testing.assert_allclose(v.plane @ res.subspace.components.T, [[1, 0], [0, 0]], atol=1e-9)
    spe = v.grids["spe"]
    # SPE varies across the plane, from inside its limit to well beyond it.
    assert spe.min() < res.summary["SPE limit"] < 1.5 * res.summary["SPE limit"] < spe.max()
    assert spe.max() > 50 * spe.min()
    assert not v.flat_notes["spe"].isVisible()
    assert v.plots["spe"].getAxis("left").labelText == "largest residual"
    v.plane_box.set_key("data")
    v.finish_drawing()
    assert v.grids["spe"].max() < 1e-9 * res.summary["SPE limit"]
    assert (v.flat_notes["spe"].isVisible()
            and "lies inside the fitted subspace" in v.flat_notes["spe"].textItem.toPlainText())


def test_a_result_without_limits_says_why_instead_of_drawing(views_for):
    state = make_state("gaussian-2d", ("pca", {"n_components": 2}))
    v = views_for(state).show_view("contour")
    assert v.images["spe"].image is None
    assert "no SPE/T² map" in v.status.text() and "smaller rank" in v.status.text()


def test_the_t2_map_and_the_key_are_built_in_later_turns_and_drawn_the_same(views_for, qtbot):
    """The view is built with no plot; the SPE map, the T² map, the key's colours, the key and
    the legend are each one later idle turn's work (build_step), so no turn builds two of them;
    drawing finishes whatever is left, and the finished view is the one built at once (same
    plots, linked, same key)."""
    from app.views.contour import ContourView, _band_lut
    state = make_state("gaussian-2d", ("residual", {"n_components": 1}))
    _band_lut.cache_clear()   # as in a new window: the key's colour maps not read yet
    v = ContourView(state)
    qtbot.addWidget(v)
    assert not v.plots and v.key is None
    assert v.build_step() and set(v.plots) == {"spe"}
    assert v.build_step() and set(v.plots) == {"spe", "t2"} and v.key is None
    assert v.plots["t2"].getViewBox().linkedView(0) is v.plots["spe"].getViewBox()
    assert v.build_step() and v.key is None and _band_lut.cache_info().currsize == 1   # colours read
    assert v.build_step() and v.key is not None and v.legend is None   # key and legend: a turn each
    assert v.build_step() and v.legend is not None
    assert not v.build_step()
    # Left half built, a redraw finishes it first.
    w = ContourView(state)
    qtbot.addWidget(w)
    w.ensure_fresh()
    assert set(w.plots) == {"spe", "t2"} and w.key is not None and w.drawn is state.result("residual")
    # The views' own accessor hands out a finished view.
    views = views_for(state)
    views._prepare_timer.stop()
    u = views.view("contour")
    assert set(u.plots) == {"spe", "t2"} and u.key is not None


def _planted_map_state(seed, n, rank, d, noise, method, params, gross=0, gross_scale=0.0, name="planted"):
    """A state holding a rank-``rank`` table of n x d plus ``noise``, its first ``gross`` rows
    pushed off by ``gross_scale``, and one fit of ``method`` on it (the current result)."""
    from app.state import AppState
    from robustcore.datasets import Dataset
    from robustcore.methods import get_method
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, rank)) @ rng.normal(size=(rank, d)) + noise * rng.normal(size=(n, d))
    X[:gross] += gross_scale * rng.normal(size=(gross, d))
    ds = Dataset(X=X, name=name)
    state = AppState()
    state.set_dataset(ds)
    assert state.add_result(get_method(method).run(ds, params))
    state.set_current_method(method)
    return state


@pytest.mark.slow
def test_a_large_maps_legend_counts_read_in_thousands_and_sit_level(views_for, qtbot):
    """12,000 samples in 40 dimensions: the legend's five entries, one of them on two lines
    ("flagged in all 40 dims: ..."), and the counts of the legend and the status as the other
    views write them ("within limits (49250)" and "750 of 50000 flagged" beside "50,000
    samples" on a w8a-like table at 1280 x 800)."""
    from ._text_rects import misaligned_legend_rows
    state = _planted_map_state(3, 12_000, 3, 40, 0.3, "residual", {"n_components": 3}, gross=150,
                               gross_scale=3.0, name="twelve thousand")
    v = views_for(state, size=(700, 600)).show_view("contour")   # the figure's width in the window
    v.finish_drawing()
    qtbot.wait(100)
    n, k = 12_000, int(v.current_flags.sum())
    assert 150 <= k < n
    texts = [label.text for _, label in v.legend.items]
    assert texts[0] == f"within limits ({n - k:,}, binned)" and texts[1].replace("<br>", " ").endswith(f"({k:,})")
    assert f"{k:,} of {n:,} flagged" in v.status.text()
    assert any("<br>" in t for t in texts)   # (rows of one line beside one of two)
    assert misaligned_legend_rows([v.legend], "SPE / T² map at 700 x 600") == []



@pytest.mark.slow
def test_a_binned_maps_legend_names_the_flagged_density_and_keeps_its_height(views_for, tmp_path, qtbot):
    """Over FLAG_POINTS flagged samples are a density of their own colour with the highest as
    points: the legend, all an exported figure has to say it, named one black point for all of
    them ("flagged ... (19,781)" over a pink density it did not name, PCA on 1,000,000 rows).
    Naming it must not move the user's framing when the rule changes: the plots' aspect is
    locked, and a legend of another height under another rule changed their height."""
    from app.views import _style as style
    from app.views._binned import FLAG_POINTS

    # alpha = 10 %: thousands flagged (a million rows at 1 % flag as many)
    state = _planted_map_state(4, 30_000, 2, 10, 0.2, "residual", {"n_components": 2, "alpha": 0.1},
                               name="thirty thousand")
    views = views_for(state, size=(1280, 800))
    v = views.show_view("contour")
    v.finish_drawing()
    qtbot.wait(50)
    k = int(v.current_flags.sum())
    assert k > FLAG_POINTS                                   # (what this test is about)
    entries = [(sample.item, label.text.replace("<br>", " ")) for sample, label in v.legend.items]
    texts = [t for _, t in entries]
    assert texts[0] == f"within limits ({30_000 - k:,}, binned)"
    layer = next(item for item, t in entries if t.startswith("flagged") and t.endswith(f"({k:,}, binned)"))
    assert layer.opts["brush"].color().name().upper() == style.FLAG_LAYER_COLOR
    points = next(item for item, t in entries if t.startswith("drawn as points: all flagged"))
    assert points is v.clouds["spe"].flag_item and f"all flagged up to {FLAG_POINTS:,} in view" in texts[2]
    views.export_figure(str(tmp_path / "m.png"), view="contour")   # the same legend in the file
    assert [label.text.replace("<br>", " ") for _, label in v.legend.items] == texts
    # Another rule, other texts (T² flags far fewer here, all drawn as points): the framing stays.
    framed = v.plots["spe"].getViewBox().viewRange()
    for rule in ("t2", "spe", "either"):
        v.set_rule(rule)
        v.finish_drawing()
        qtbot.wait(50)
        assert v.plots["spe"].getViewBox().viewRange() == framed, rule


def test_a_binned_maps_six_entries_fill_its_legend_down_the_columns_in_three_rows(views_for, monkeypatch):
    """The binned map's legend (within limits, flagged, the points drawn, three lines) at 690 px,
    the figure's width at 1280 x 800: filled row by row, a long entry and a short one shared
    each column, and a 1,000,000-row map's six entries stood in one column of six rows (150 px
    of legend under the plots). Filled down the columns, the samples' entries stand in the first
    column and the lines' in the next: three rows, every entry whole."""
    from app.views import _map_texts
    monkeypatch.setattr(_map_texts, "FLAG_POINTS", 50)   # flagged drawn as a density: six entries
    state = _planted_map_state(5, 12_000, 3, 20, 0.1, "pca", {}, gross=200, gross_scale=2.0,
                               name="twelve thousand")
    v = views_for(state, size=(690, 700)).show_view("contour")
    v.finish_drawing()
    leg = v.legend
    assert v._layered and len(leg.items) == 6
    assert [label.text.replace("<br>", " ") for _, label in leg.items] == v._legend_texts(v.rule_box.key())
    rows = leg.rowCount
    assert rows <= 3 and leg.columnCount >= 2, (rows, leg.columnCount)
    for k, (sample, label) in enumerate(leg.items):   # down each column, then the next
        r, c = k % rows, 2 * (k // rows)
        assert leg.layout.itemAt(r, c) is sample and leg.layout.itemAt(r, c + 1) is label, k


def test_the_maps_texts_count_each_rules_flags_once_per_result(views_for, monkeypatch):
    """The legend and the status (written for all three rules, to keep their height) counted a
    rule's flags each time they asked, 20 times a drawing: 20 passes over every sample on the
    GUI thread (0.5 ms each at 2,000,000 rows). Now once per result and rule."""
    state = make_state("gaussian-2d", ("pca", {"n_components": 1}))
    n = state.dataset.n_samples
    counted = []
    real = np.count_nonzero

    def spy(a, *args, **kw):
        if np.size(a) == n:
            counted.append(1)
        return real(a, *args, **kw)

    monkeypatch.setattr(np, "count_nonzero", spy)
    v = views_for(state).show_view("contour")
    assert "flagged by" in v.status.text() and 1 <= len(counted) <= 3
    first = len(counted)
    v.redraw()
    for rule in ("spe", "t2", "either"):
        v.set_rule(rule)
    assert len(counted) == first   # the same result: its counts are kept
