"""Scatter view on real fits: the points a user sees, hover, rectangle/lasso selection with
modifiers, and the selection shared with the state."""
import numpy as np
import pytest
from PySide6.QtCore import QEvent, QPoint, QPointF, Qt

from app.views import _style as st
from app.views._cloud import mode_for

from .conftest import make_state


def _send(widget, kind, pos, button, buttons, modifiers=Qt.KeyboardModifier.NoModifier):
    from PySide6.QtGui import QMouseEvent
    from PySide6.QtWidgets import QApplication

    ev = QMouseEvent(kind, QPointF(pos), QPointF(widget.mapToGlobal(pos)), button, buttons, modifiers)
    QApplication.sendEvent(widget, ev)


@pytest.fixture
def scatter(views_for):
    state = make_state("usps-1-vs-8", "coherence-pursuit", "pca")
    views = views_for(state)
    v = views.show_view("scatter")
    v.method_box.set_key("pca")
    return state, v


def test_points_are_the_pca_projection_coloured_by_label(scatter):
    state, v = scatter
    res, ds = state.result("pca"), state.dataset
    x, y = v.cloud.points()
    assert x.size == ds.n_samples == 314
    np.testing.assert_allclose(x, res.arrays["projection"][:, 0])
    np.testing.assert_allclose(y, res.arrays["projection"][:, 1])
    brushes = np.array(v.cloud.point_brushes(), dtype=object)
    ones, eights = ds.labels == "1", ds.labels == "8"
    assert all(b is st.brush(st.category_color(0)) for b in brushes[ones])
    assert all(b is st.brush(st.category_color(1)) for b in brushes[eights])
    # Brushes are shared objects, not one per point (what keeps 100k points fluid).
    assert len({id(b) for b in brushes}) == 2


def test_flagged_ring_matches_the_method_flags(scatter):
    state, v = scatter
    v.method_box.set_key("coherence-pursuit")
    v.flag_box.set_key(("derived", None))
    flags = state.result("coherence-pursuit").flags["outlier"]
    fx, fy = v.cloud.flag_item.getData()
    assert fx.size == int(flags.sum()) > 0
    proj = state.result("coherence-pursuit").arrays["projection"]
    np.testing.assert_allclose(np.sort(fx), np.sort(proj[flags, 0]))


def test_colour_by_score_uses_binned_shared_brushes(scatter):
    state, v = scatter
    v.color_box.set_key(("score", "spe"))
    brushes = np.array(v.cloud.point_brushes(), dtype=object)
    spe = state.result("pca").sample_scores["spe"]
    table = st.level_brushes()
    assert brushes[int(np.argmax(spe))] is table[-1]
    assert brushes[int(np.argmin(spe))] is table[0]
    assert v.colorbar is not None


def test_hover_reports_the_point_under_the_mouse(scatter, qtbot):
    state, v = scatter
    x, y = v.cloud.points()
    i = int(np.argmax(x))  # the right-most point stands apart
    vb = v.plot.getViewBox()
    scene_pt = vb.mapViewToScene(QPointF(x[i], y[i]))
    view_pt = v.figure.mapFromScene(scene_pt)
    qtbot.mouseMove(v.figure.viewport(), QPoint(int(view_pt.x()), int(view_pt.y())))
    qtbot.waitUntil(lambda: v.cloud.hovered == i, timeout=2000)
    assert v.cloud.hover_text.startswith(f"#{i} ")
    assert f"label {state.dataset.labels[i]}" in v.cloud.hover_text
    # Every point is found at its own position.
    for j in np.random.default_rng(0).choice(x.size, 20, replace=False):
        k = v.cloud.index_at(x[j], y[j], radius=0.5)
        assert k == j or (x[k] == x[j] and y[k] == y[j])


def test_rectangle_selection_with_modifiers(scatter):
    state, v = scatter
    x, y = v.cloud.points()
    inside = np.flatnonzero((x > 0) & (x < 5) & (y > -1) & (y < 2))
    v.cloud.select_rect(0, -1, 5, 2)
    np.testing.assert_array_equal(state.selection, inside)
    more = np.flatnonzero((x > 6) & (x < 8) & (y > -5) & (y < 5))
    v.cloud.select_rect(6, -5, 8, 5, "add")
    np.testing.assert_array_equal(state.selection, np.union1d(inside, more))
    v.cloud.select_rect(0, -1, 5, 2, "subtract")
    np.testing.assert_array_equal(state.selection, more)
    sx, _ = v.cloud.sel_item.getData()
    assert sx.size == more.size


def test_lasso_selection_is_the_points_inside_the_polygon(scatter):
    state, v = scatter
    x, y = v.cloud.points()
    tri = np.array([[-4.0, -4.0], [4.0, -4.0], [0.0, 4.0]])
    v.cloud.select_polygon(tri)
    # Independent check: inside a triangle = on the inner side of its three edges.
    def side(a, b):
        return (b[0] - a[0]) * (y - a[1]) - (b[1] - a[1]) * (x - a[0])
    inside = np.flatnonzero((side(tri[0], tri[1]) > 0) & (side(tri[1], tri[2]) > 0) & (side(tri[2], tri[0]) > 0))
    assert inside.size > 10
    np.testing.assert_array_equal(state.selection, inside)


def test_modifier_keys_map_to_selection_modes():
    m = Qt.KeyboardModifier
    assert mode_for(m.NoModifier) == "replace"
    assert mode_for(m.ShiftModifier) == "add"
    assert mode_for(m.ControlModifier) == "subtract"
    assert mode_for(m.AltModifier) == "subtract"


def test_mouse_drag_selects_a_rectangle(scatter, qtbot):
    state, v = scatter
    vb = v.plot.getViewBox()
    x, y = v.cloud.points()

    def to_widget(px, py):
        p = v.figure.mapFromScene(vb.mapViewToScene(QPointF(px, py)))
        return QPoint(int(p.x()), int(p.y()))

    # A rectangle over the left part of the cloud, whatever the data: x from its minimum to its
    # 30th percentile, the full height.
    x0, x1 = float(x.min()) - 0.1, float(np.percentile(x, 30))
    a, b = to_widget(x0, float(y.min()) - 0.1), to_widget(x1, float(y.max()) + 0.1)
    vp = v.figure.viewport()
    left, none = Qt.MouseButton.LeftButton, Qt.MouseButton.NoButton
    # QTest's mouseMove carries no button state in Qt 6, so a drag is sent as raw events.
    _send(vp, QEvent.Type.MouseButtonPress, a, left, left)
    for t in np.linspace(0, 1, 8)[1:]:
        _send(vp, QEvent.Type.MouseMove, QPoint(int(a.x() + t * (b.x() - a.x())), int(a.y() + t * (b.y() - a.y()))),
              none, left)
    _send(vp, QEvent.Type.MouseButtonRelease, b, left, none)
    qtbot.waitUntil(lambda: state.selection.size > 0, timeout=2000)
    # The drag ends on whole pixels: compare with the rectangle the mouse actually spanned.
    p0, p1 = vb.mapSceneToView(v.figure.mapToScene(a)), vb.mapSceneToView(v.figure.mapToScene(b))
    inside = np.flatnonzero((x >= min(p0.x(), p1.x())) & (x <= max(p0.x(), p1.x()))
                            & (y >= min(p0.y(), p1.y())) & (y <= max(p0.y(), p1.y())))
    np.testing.assert_array_equal(state.selection, inside)


def test_selection_made_elsewhere_is_drawn(scatter):
    state, v = scatter
    state.set_selection([3, 5, 8])
    sx, sy = v.cloud.sel_item.getData()
    proj = state.result("pca").arrays["projection"]
    np.testing.assert_allclose(np.sort(sx), np.sort(proj[[3, 5, 8], 0]))


def test_hundred_thousand_points_share_a_few_brushes(qtbot):
    import pyqtgraph as pg

    from app.state import AppState
    from app.views._cloud import PointCloud, new_plot

    w = pg.GraphicsLayoutWidget()
    qtbot.addWidget(w)
    plot = new_plot(w.ci, row=0, col=0)
    state = AppState()
    cloud = PointCloud(plot, state)
    rng = np.random.default_rng(1)
    n = 100_000
    codes = rng.integers(0, 3, n)
    cloud.set_points(rng.standard_normal(n), rng.standard_normal(n), brushes=st.category_brushes(codes, 3))
    assert cloud.drawn_count() == n
    assert len({id(b) for b in cloud.point_brushes()}) == 3
    cloud.select_rect(-0.1, -0.1, 0.1, 0.1)
    assert 0 < state.selection.size < 1000


def test_legend_sits_beneath_the_plot_and_names_a_selection_only_when_there_is_one(scatter, qtbot):
    state, v = scatter
    state.set_selection([])
    texts = [lab.text for _, lab in v.legend.items]
    assert not any(t.startswith("selected") for t in texts)
    state.set_selection([3, 5, 8])
    texts = [lab.text for _, lab in v.legend.items]
    assert "selected (3)" in texts
    qtbot.wait(20)
    v.grab()
    # Beneath the data area, not on it.
    assert v.legend.sceneBoundingRect().top() >= v.plot.getViewBox().sceneBoundingRect().bottom()


def test_a_scatters_legend_counts_read_in_thousands(views_for):
    """Under the density's size every point is drawn and ringed: "ringed: ... (1348)" and
    "selected (2500)" stood bare where every other count of the window reads 1,348."""
    from app.state import AppState
    from app.views._density import DENSITY_POINTS
    from robustcore.datasets import Dataset
    from robustcore.methods import get_method
    rng = np.random.default_rng(2)
    n = DENSITY_POINTS - 1000
    ds = Dataset(X=rng.normal(size=(n, 6)) @ rng.normal(size=(6, 6)), name="nine thousand")
    state = AppState()
    state.set_dataset(ds)
    assert state.add_result(get_method("pca").run(ds, {"n_components": 2, "contamination": 0.15}))
    state.set_current_method("pca")
    v = views_for(state).show_view("scatter")
    k = int(np.sum(v._flags))
    assert k >= 1000                                   # (what this test is about)
    state.set_selection(np.arange(2500))
    texts = [lab.text for _, lab in v.legend.items]
    assert any(t.startswith("ringed:") and t.endswith(f"({k:,})") for t in texts), texts
    assert "selected (2,500)" in texts


def test_choosers_show_their_whole_text(scatter):
    state, v = scatter
    for box in (v.method_box, v.x_box, v.y_box, v.color_box, v.size_box, v.flag_box):
        longest = max(box.fontMetrics().horizontalAdvance(box.itemText(i)) for i in range(box.count()))
        assert box.width() >= longest + 20, (box.currentText(), box.width(), longest)


def test_a_robust_pca_with_an_empty_low_rank_part_is_not_drawn_as_a_subspace(views_for):
    """Sparse one-hot rows: with the default lambda PCP puts every entry into S (L = 0). The
    scatter once labelled its axes "PCA of L" and the outlier map drew cut-offs for a rank-0
    subspace; now both say why there is nothing to draw, and the command line refuses the
    figure with the same reason."""
    from app.state import AppState
    from robustcore.datasets import Dataset
    from robustcore.methods import get_method
    rng = np.random.default_rng(0)
    X = np.zeros((200, 50))
    X[np.arange(200), rng.integers(0, 50, 200)] = 1.0
    ds = Dataset(X=X, name="one-hot")
    res = get_method("pcp").run(ds, {})
    assert res.decomposition.rank_of_L == 0 and res.subspace is None
    state = AppState()
    state.set_dataset(ds)
    assert state.add_result(res)
    views = views_for(state)
    for name in ("scatter", "outlier-map"):
        cls = type(views.view(name))
        why = cls.missing(state, "pcp")
        assert why is not None and "no low-rank part" in why, (name, why)
        assert name not in views.available_views()
    assert "decomposition" in views.available_views()


def test_a_click_right_on_a_ringed_point_selects_it(scatter, qtbot):
    """pyqtgraph's scatter items took a click on their own points (the flags' rings above all),
    so a click right on a point selected nothing; the view box picks the nearest sample."""
    import pyqtgraph as pg
    state, v = scatter
    v.method_box.set_key("coherence-pursuit")
    v.flag_box.set_key(("derived", None))
    x, y = v.cloud.points()
    flags = np.asarray(state.result("coherence-pursuit").flags["outlier"], dtype=bool)
    vb = v.cloud.vb
    (x0, x1), (y0, y1) = vb.viewRange()
    inside = (x > x0) & (x < x1) & (y > y0) & (y < y1)
    for i in (np.flatnonzero(flags & inside)[0], np.flatnonzero(~flags & inside)[0]):
        p = v.figure.mapFromScene(vb.mapViewToScene(pg.Point(x[i], y[i])))
        qtbot.mouseClick(v.figure.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(int(p.x()), int(p.y())))
        qtbot.waitUntil(lambda i=i: state.selection.size == 1, timeout=2000)
        j = int(state.selection[0])
        assert j == i or np.hypot(x[j] - x[i], y[j] - y[i]) < 1e-9, (i, j)   # the point clicked (or its twin)
        state.set_selection([], "replace")
