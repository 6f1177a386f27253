"""EVSC ranking on the 3-D clusters demo: bars in ranking order, top k highlighted, the spectrum
beside it, and a click on a bar plotting that feature against the next-ranked one."""
import numpy as np
import pytest
from PySide6.QtCore import QPoint, QPointF, Qt

from app.views import _style as st

from .conftest import data, make_state


@pytest.fixture
def ranking(views_for):
    state = make_state("clusters-3d", "esfs")
    return state, views_for(state).show_view("ranking")


def test_bars_are_in_ranking_order_with_top_k_highlighted(ranking):
    state, v = ranking
    res = state.result("esfs")
    scores, order = res.feature_scores["evsc"], res.arrays["ranking"]
    h = np.asarray(v.bars.opts["height"])
    np.testing.assert_allclose(h, scores[order])
    assert np.all(np.diff(h) <= 0)
    ticks = v.bar_plot.getAxis("bottom")._tickLevels[0]
    assert [t for _, t in ticks] == [data("clusters-3d").feature_names[j] for j in order]
    v.k_box.setValue(1)
    brushes = v.bars.opts["brushes"]
    assert brushes[0] is st.brush(st.category_color(5))
    assert all(b is not st.brush(st.category_color(5)) for b in brushes[1:])


def test_spectrum_is_the_eigenvalues(ranking):
    state, v = ranking
    x, y = v.spectrum.getData()
    np.testing.assert_allclose(y, state.result("esfs").arrays["eigenvalues"])


def test_click_on_a_bar_shows_that_feature_against_the_next(ranking, qtbot):
    state, v = ranking
    order = state.result("esfs").arrays["ranking"]
    X = data("clusters-3d").X
    vb = v.bar_plot.getViewBox()
    h = v.bars.opts["height"]
    scene_pt = vb.mapViewToScene(QPointF(1.0, h[1] / 2))

    class Ev:  # what GraphicsScene.sigMouseClicked hands its slots
        def scenePos(self):
            return scene_pt

    v._clicked(Ev())
    assert v.pair == (order[1], order[2])
    x, y = v.cloud.points()
    np.testing.assert_array_equal(x, X[:, order[1]])
    np.testing.assert_array_equal(y, X[:, order[2]])
    # The pair scatter shares the selection.
    v.cloud.select_rect(0, -10, 10, 10)
    np.testing.assert_array_equal(state.selection, np.flatnonzero(X[:, order[1]] >= 0))


def test_a_real_mouse_click_on_a_bar(ranking, qtbot):
    state, v = ranking
    order = state.result("esfs").arrays["ranking"]
    vb = v.bar_plot.getViewBox()
    h = v.bars.opts["height"]
    p = v.figure.mapFromScene(vb.mapViewToScene(QPointF(2.0, h[2] / 2)))
    qtbot.mouseClick(v.figure.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(int(p.x()), int(p.y())))
    qtbot.waitUntil(lambda: v.chosen_rank == 2, timeout=2000)
    # The last-ranked feature is plotted against the one before it.
    assert v.pair == (order[2], order[1])


def test_a_pair_of_binary_features_says_how_many_samples_lie_on_each_point(views_for):
    """0/1 features put every sample on at most four dots (a8a's top two: 22,696 samples on two,
    at 1280 x 800): each point is labelled with its count, checked against a count made here."""
    from app.state import AppState
    from robustcore.datasets import Dataset
    from robustcore.methods import get_method
    rng = np.random.default_rng(1)
    group = rng.random(600) < 0.3
    X = np.column_stack([(rng.random(600) < np.where(group, 0.9, 0.1)) for _ in range(3)]
                        + [rng.random(600) < 0.5 for _ in range(3)]).astype(float)
    ds = Dataset(X=X, name="binary")
    state = AppState()
    state.set_dataset(ds)
    assert state.add_result(get_method("esfs").run(ds, {}))
    state.set_current_method("esfs")
    v = views_for(state).show_view("ranking")
    fa, fb = v.pair
    got = {(t.pos().x(), t.pos().y()): int(t.textItem.toPlainText().replace(",", "")) for t in v.counts}
    want = {}
    for a, b in zip(X[:, fa], X[:, fb]):
        want[(a, b)] = want.get((a, b), 0) + 1
    assert got == want and sum(got.values()) == 600
    # a continuous pair has no such labels
    v.show_pair(None)
    assert v.counts == []


def test_few_points_counts_exactly_and_gives_up_on_continuous_pairs():
    """The ranking's point counts (a8a's 0/1 pairs) without a sort of every row: the counts equal
    np.unique's, a rare point the probe misses is still counted below the exact bound, and a
    continuous pair, or one with more than FEW_POINTS points, gets no labels."""
    from app.views.ranking import FEW_POINTS, _few_points
    rng = np.random.default_rng(3)
    x = rng.integers(0, 2, 300_000).astype(float)
    y = rng.integers(0, 3, 300_000).astype(float)
    pts, n = _few_points(x, y)
    want_pts, want_n = np.unique(np.column_stack([x, y]), axis=0, return_counts=True)
    np.testing.assert_array_equal(pts, want_pts)
    np.testing.assert_array_equal(n, want_n)
    x2, y2 = x[:50_000].copy(), y[:50_000].copy()
    x2[12_346], y2[12_346] = 7.0, 7.0          # one rare point, off the probe's stride of 5
    pts, n = _few_points(x2, y2)
    assert (7.0, 7.0) in {tuple(p) for p in pts} and n.sum() == x2.size
    assert _few_points(rng.normal(size=100_000), rng.normal(size=100_000)) == (None, None)
    many = np.arange(100_000) % (FEW_POINTS + 1)
    assert _few_points(many.astype(float), np.zeros(100_000)) == (None, None)
