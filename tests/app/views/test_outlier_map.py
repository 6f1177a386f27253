"""The outlier map draws the result it names: its distances are the model's own (checked against
robustcore.outlier_map and against SPE / T² computed another way), its cut-off lines sit at the
result's cut-offs, known outliers are coloured and the selection is shared."""
import numpy as np
import pytest

from robustcore.outlier_map import REGIONS

from .conftest import data, make_state


@pytest.fixture
def state_views(views_for):
    state = make_state("usps-small", "pca", "coherence-pursuit", "pcp")
    return state, views_for(state)


@pytest.mark.slow
@pytest.mark.parametrize("method", ["pca", "coherence-pursuit"])
def test_distances_are_the_models_spe_and_t2(state_views, method):
    state, views = state_views
    state.set_current_method(method)
    v = views.show_view("outlier-map")
    res = state.result(method)
    assert v.drawn is res
    assert v.method_box.key() == method
    assert method.split("-")[0].lower() in v.plot.titleLabel.text.lower()
    x, y = v.cloud.points()
    # SD² is T² and OD² is SPE: the same numbers as the scores the run reports.
    np.testing.assert_allclose(x ** 2, res.sample_scores["t2"], rtol=1e-8)
    np.testing.assert_allclose(y ** 2, res.sample_scores["spe"], rtol=1e-8, atol=1e-12)
    assert v.cut_lines["sd"].value() == pytest.approx(res.summary["SD cut-off"])
    assert v.cut_lines["od"].value() == pytest.approx(res.summary["OD cut-off"])
    # Region counts in the labels are the points' regions.
    sd_cut, od_cut = res.summary["SD cut-off"], res.summary["OD cut-off"]
    region = (x > sd_cut).astype(int) + 2 * (y > od_cut).astype(int)
    for i, r in enumerate(REGIONS):
        assert v.region_labels[r].textItem.toPlainText() == f"{r} ({int(np.sum(region == i))})"


def test_pcp_map_is_against_the_subspace_of_L(state_views):
    state, views = state_views
    state.set_current_method("pcp")
    v = views.show_view("outlier-map")
    res = state.result("pcp")
    assert v.drawn is res
    C, m = res.subspace.components, res.subspace.mean
    X = data("usps-small").dense()
    E = (X - m) - ((X - m) @ C.T) @ C
    _, y = v.cloud.points()
    np.testing.assert_allclose(y, np.linalg.norm(E, axis=1), rtol=1e-8)


def test_known_outliers_coloured_and_selection_shared(state_views, qtbot):
    state, views = state_views
    state.set_current_method("coherence-pursuit")
    v = views.show_view("outlier-map")
    truth = data("usps-small").outliers
    brushes = v.cloud.point_brushes()
    colours = {b.color().name() for b, t in zip(brushes, truth) if t}
    others = {b.color().name() for b, t in zip(brushes, truth) if not t}
    assert len(colours) == 1 and len(others) == 1 and colours != others
    # The robust fit puts the known outliers off the subspace: most of them above the OD cut-off.
    _, y = v.cloud.points()
    assert np.mean(y[truth] > v.cut_lines["od"].value()) > 0.9
    x, _ = v.cloud.points()
    picked = v.cloud.select_rect(x.min() - 1, v.cut_lines["od"].value(), x.max() + 1, y.max() + 1)
    np.testing.assert_array_equal(state.selection, np.sort(picked))
    assert (set(np.flatnonzero(truth)) - set(state.selection.tolist())
            == set(np.flatnonzero(truth & (y <= v.cut_lines["od"].value()))))


def test_a_full_rank_subspace_maps_along_it_only(views_for):
    """A subspace that spans the data leaves no orthogonal part: OD is rounding, its cut-off 0 and
    hidden, and only the two regions along the subspace are named."""
    state = make_state("gaussian-2d", ("pca", {"n_components": 2}))
    v = views_for(state).show_view("outlier-map")
    res = state.result("pca")
    assert v.drawn is res and res.summary["OD cut-off"] == 0.0
    assert not v.cut_lines["od"].isVisible()
    assert [r for r, t in v.region_labels.items() if t.isVisible()] == ["regular", "good leverage"]
    x, _ = v.cloud.points()
    np.testing.assert_allclose(x ** 2, res.sample_scores["t2"], rtol=1e-8)


def _drawn_map(state_views, qtbot, method):
    """The outlier map of ``method``'s result, drawn: (view, its view box, the samples' ODs)."""
    state, views = state_views
    state.set_current_method(method)
    v = views.show_view("outlier-map")
    qtbot.wait(50)
    v.grab()
    return v, v.plot.getViewBox(), v.cloud.points()[1]


def test_the_lower_regions_names_cover_no_sample(state_views, qtbot):
    """The names of the two regions under the OD cut-off hang below OD = 0, where no sample can
    be: inside them, "regular (N)" covered the regular samples' band (issue 33, at 30M rows)."""
    v, vb, y = _drawn_map(state_views, qtbot, "pca")
    assert y.min() >= 0
    for name in ("regular", "good leverage"):
        t = v.region_labels[name]
        assert t.isVisible()
        rect = t.sceneBoundingRect()
        assert vb.sceneBoundingRect().adjusted(-2, -2, 2, 2).contains(rect), name   # in sight
        top = vb.mapSceneToView(rect.topLeft()).y()
        assert top <= 1e-9 * max(1.0, float(y.max())), (name, top)   # under OD = 0: over no sample


def test_the_upper_regions_names_cover_no_sample(state_views, qtbot):
    """The names of the two regions above the OD cut-off lie in a strip above the largest OD:
    hung from the top of the data's range, "bad leverage (6)" covered the farthest sample of
    octane (sample 26), the one a user looks for first."""
    v, vb, y = _drawn_map(state_views, qtbot, "coherence-pursuit")
    for name in ("orthogonal outlier", "bad leverage"):
        t = v.region_labels[name]
        assert t.isVisible()
        rect = t.sceneBoundingRect()
        assert vb.sceneBoundingRect().adjusted(-2, -2, 2, 2).contains(rect), name   # in sight
        bottom = vb.mapSceneToView(rect.bottomLeft()).y()
        assert bottom > y.max(), (name, bottom, y.max())   # above every sample
    v.resize(v.width(), v.height() - 200)   # the strip follows the plot's height
    qtbot.wait(50)
    v.grab()
    rect = v.region_labels["bad leverage"].sceneBoundingRect()
    assert vb.mapSceneToView(rect.bottomLeft()).y() > y.max()
    assert vb.sceneBoundingRect().adjusted(-2, -2, 2, 2).contains(rect)


def test_the_rings_boundary_is_drawn_where_the_flags_start(state_views, qtbot):
    """Coherence Pursuit flags beyond its calibrated SPE/T² limits, not at the map's 97.5 %
    cut-offs: the rings started far past the dashed line with nothing saying why. The flags' own
    lines are drawn (solid) exactly where the rings start, and the legend gives them in map units."""
    state, views = state_views
    state.set_current_method("coherence-pursuit")
    v = views.show_view("outlier-map")
    res = state.result("coherence-pursuit")
    x, y = v.cloud.points()
    flags = np.asarray(res.flags["outlier"], dtype=bool)
    assert 0 < flags.sum() < flags.size
    lines = {k: line.value() for k, line in v.flag_lines.items() if line.isVisible()}
    assert lines, "no line where the rings start"
    beyond = np.zeros(flags.size, dtype=bool)
    if "od" in lines:
        beyond |= y > lines["od"]
    if "sd" in lines:
        beyond |= x > lines["sd"]
    np.testing.assert_array_equal(beyond, flags)   # ringed exactly beyond the solid lines
    # ... which are not the dashed cut-offs, and the map's own SPE/T² limits in its units
    om = res.outlier_map
    assert not np.isclose(lines.get("od", om.od_cutoff), om.od_cutoff) or \
        not np.isclose(lines.get("sd", om.sd_cutoff), om.sd_cutoff)
    if "od" in lines:
        assert lines["od"] == pytest.approx(np.sqrt(res.limits.spe))
    legend = [label.text for _, label in v.legend.items]
    ringed = next(t for t in legend if t.startswith("ringed"))
    assert "solid" in ringed and all(f"{k.upper()} >" in ringed for k in lines)
    assert any("dashed" in t and "cut-off" in t for t in legend)


def test_flags_that_follow_another_rule_get_no_line(state_views):
    """A rule the map cannot draw (here flags not beyond any SPE/T² line) draws no flags' line."""
    from app.views.outlier_map import flag_limits
    state, _ = state_views
    res = state.result("coherence-pursuit")
    sd, od = np.sqrt(res.sample_scores["t2"]), np.sqrt(res.sample_scores["spe"])
    flags = np.asarray(res.flags["outlier"], dtype=bool)
    assert set(flag_limits(res, sd, od, flags)) >= {"od"}
    shuffled = np.roll(flags, 1)
    assert flag_limits(res, sd, od, shuffled) == {}


def test_no_tick_below_od_zero(state_views, qtbot):
    """The view reaches below OD = 0 only to hold the lower regions' names: no "-1" tick there,
    nor anywhere the user pans to below 0 on either axis."""
    state, views = state_views
    state.set_current_method("coherence-pursuit")
    v = views.show_view("outlier-map")
    v.grab()
    vb = v.plot.getViewBox()
    (x0, x1), (y0, y1) = vb.viewRange()
    assert y0 < 0
    vb.setRange(xRange=(-2.5, x1), yRange=(-3.0, y1), padding=0)   # panned down and left
    for side, (lo, hi) in (("left", vb.viewRange()[1]), ("bottom", vb.viewRange()[0])):
        axis = v.plot.getAxis(side)
        ticks = [t for _, values in axis.tickValues(lo, hi, 400) for t in values]
        assert ticks and min(ticks) >= 0, (side, ticks)
        assert any(t > 0 for t in ticks)
