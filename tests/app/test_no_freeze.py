"""The window keeps answering while results and data arrive (issue 25): the work is split over
turns of the event loop, and the signals a user (or a script) waits for come when the picture
is there. No timing here: what is checked is the order of what happens and what is drawn."""
import numpy as np
import pytest


def _load_demo(qtbot, w, name):
    with qtbot.waitSignal(w.datasetLoaded, timeout=30000):
        w.demo_actions[name].trigger()


@pytest.mark.slow
def test_a_result_is_drawn_on_a_later_turn_and_run_finished_waits_for_the_picture(qtbot, small_window):
    from app.views.scatter import ScatterView

    w = small_window
    _load_demo(qtbot, w, "usps-1-vs-8")
    w.method_panel.set_method("pca")
    seen = {}

    def arrived(method):
        # The turn the result is stored in: the view still has it to draw (findChild, not
        # views.view(), which would draw it now).
        scatter = w.views.findChild(ScatterView)
        seen["drawing"] = w.views.drawing()
        seen["drawn"] = None if scatter is None else scatter.drawn

    w.state.resultAdded.connect(arrived)
    with qtbot.waitSignal(w.views.viewsReady, timeout=60000):
        with qtbot.waitSignal(w.runFinished, timeout=60000) as got:
            assert w.run() is not None
    assert seen == {"drawing": True, "drawn": None}
    # When runFinished comes, the view on screen shows that result, every point of it.
    assert not w.views.drawing()
    shown = w.views.currentWidget()
    assert shown is w.views.view("scatter") and shown.drawn is got.args[0]
    assert shown.cloud.drawn_count() == w.state.dataset.n_samples


@pytest.mark.slow
def test_the_view_a_result_goes_to_is_built_before_the_result_comes(qtbot, small_window):
    from app.views.scatter import ScatterView

    w = small_window
    _load_demo(qtbot, w, "cardio")
    w.method_panel.set_method("pca")
    views = w.views
    # Built while the window is idle after the data came, with no tab to show (no result yet).
    qtbot.waitUntil(lambda: views.findChild(ScatterView) is not None, timeout=10000)
    built = views.findChild(ScatterView)
    assert not views.isTabVisible(views.indexOf(built)) and built.drawn is None
    with qtbot.waitSignal(w.runFinished, timeout=60000) as got:
        assert w.run() is not None
    assert views.currentWidget() is built and built.drawn is got.args[0]
    assert views.isTabVisible(views.indexOf(built))


def _cloud(qtbot):
    import pyqtgraph as pg

    from app.state import AppState
    from app.views._cloud import PointCloud, new_plot

    fig = pg.GraphicsLayoutWidget()
    qtbot.addWidget(fig)
    fig.resize(600, 400)
    fig.show()
    plot = new_plot(fig.ci, row=0, col=0)
    cloud = PointCloud(plot, AppState())
    cloud.figure = fig   # the figure lives as long as the cloud the test holds
    return cloud, plot


def _shown_points(cloud):
    """(x, y, brush) of every point in a visible item, as a user sees them."""
    out = []
    for it in cloud.groups:
        if it.isVisible():
            x, y = it.getData()
            b = it.opts["brush"]
            out += [(a, c, id(b)) for a, c in zip(x, y)]
    return out


@pytest.mark.slow
def test_a_large_cloud_is_drawn_on_the_turns_after_it_is_set_and_never_mixes_old_and_new(qtbot):
    from app.views import _style as st
    from app.views._cloud import PROGRESSIVE_POINTS

    cloud, plot = _cloud(qtbot)
    rng = np.random.default_rng(3)
    n = PROGRESSIVE_POINTS + 10_000
    x, y = rng.standard_normal(n), 5 + rng.standard_normal(n)
    levels = rng.integers(0, 40, n)
    table = st.level_brushes()
    cloud.set_points(x, y, brushes=[table[k] for k in levels])
    # Nothing drawn in the turn that set the points; the rest comes turn after turn.
    assert cloud.drawing() and _shown_points(cloud) == []
    qtbot.waitUntil(lambda: not cloud.drawing(), timeout=10000)
    shown = _shown_points(cloud)
    assert len(shown) == n
    want = sorted(zip(x, y, (id(table[k]) for k in levels)))
    assert sorted(shown) == want
    # The plot frames the points drawn (they sit around y = 5).
    (x0, x1), (y0, y1) = plot.getViewBox().viewRange()
    assert x0 <= x.min() and x1 >= x.max() and y0 <= y.min() and y1 >= y.max()
    # Recoloured with two colours: while the new parts wait, no point shows in an old colour.
    codes = (x > 0).astype(int)
    cloud.set_brushes(st.category_brushes(codes, 2))
    assert all(b in {id(st.brush(st.category_color(0))), id(st.brush(st.category_color(1)))}
               for _, _, b in _shown_points(cloud))
    qtbot.waitUntil(lambda: not cloud.drawing(), timeout=10000)
    assert len(_shown_points(cloud)) == n


def test_a_small_cloud_with_many_colours_is_drawn_in_parts_too(qtbot):
    from app.views import _style as st
    from app.views._cloud import CHUNK_ITEMS

    cloud, _ = _cloud(qtbot)
    rng = np.random.default_rng(4)
    n = 3000
    levels = rng.permutation(np.arange(n) % 64)
    table = st.level_brushes()
    cloud.set_points(rng.standard_normal(n), rng.standard_normal(n), brushes=[table[k] for k in levels])
    assert cloud.drawing()
    qtbot.waitUntil(lambda: not cloud.drawing(), timeout=10000)
    assert len(_shown_points(cloud)) == n
    assert sum(it.isVisible() for it in cloud.groups) == len(set(levels.tolist())) > CHUNK_ITEMS


@pytest.mark.slow
def test_every_column_of_a_wide_table_is_sized_to_its_name_and_first_cells(qtbot, small_window, tmp_path):
    from PySide6.QtCore import Qt

    w = small_window
    rng = np.random.default_rng(5)
    path = tmp_path / "wide.csv"
    names = [f"sensor_{i}_{'long' * (i % 4)}" for i in range(260)]
    X = rng.standard_normal((50, 260)) * 10.0 ** rng.integers(-3, 4, 260)
    np.savetxt(path, X, delimiter=",", header=",".join(names), comments="", fmt="%.6g")
    with qtbot.waitSignal(w.datasetLoaded, timeout=30000):
        w.open_path(str(path))
    panel = w.dataset_panel
    qtbot.waitUntil(lambda: not panel.columns_sizing(), timeout=10000)
    table, model = panel.table, panel.model
    header = table.horizontalHeader()
    fm, head_fm = table.fontMetrics(), header.fontMetrics()
    assert model.columnCount() == 200   # the preview's limit
    for c in range(model.columnCount()):
        texts = [model.data(model.index(r, c)) or "" for r in range(min(12, model.rowCount()))]
        need = max([head_fm.horizontalAdvance(model.headerData(c, Qt.Orientation.Horizontal))]
                   + [fm.horizontalAdvance(t) for t in texts])
        assert need <= header.sectionSize(c) <= need + 40, (c, need, header.sectionSize(c))


@pytest.mark.slow
def test_a_tab_chosen_for_the_first_time_is_built_then_drawn_on_the_next_turn(qtbot, small_window):
    from PySide6.QtCore import Qt

    from app.views.outlier_map import OutlierMapView

    w = small_window
    _load_demo(qtbot, w, "usps-1-vs-8")
    w.method_panel.set_method("pca")
    with qtbot.waitSignal(w.runFinished, timeout=60000) as got:
        assert w.run() is not None
    views, bar = w.views, w.views.tabBar()
    i = next(k for k in range(views.count()) if views.tabText(k) == "Outlier map")
    assert views.findChild(OutlierMapView) is None   # a stand-in holds the tab until chosen
    with qtbot.waitSignal(views.viewsReady, timeout=10000):
        qtbot.mouseClick(bar, Qt.MouseButton.LeftButton, pos=bar.name_rects()[i].center())
        built = views.findChild(OutlierMapView)
        # Built in the click's turn, in the tab's place; drawn on a later one.
        assert built is not None and views.currentWidget() is built
        assert built.drawn is None and views.drawing()
    assert built.drawn is got.args[0] and not views.drawing()


@pytest.mark.slow
def test_the_gui_thread_gets_the_gil_back_within_half_a_millisecond(qtbot, tmp_path):
    """The views' worker threads bin in Python; at CPython's default 5 ms switch interval the
    GUI thread waited up to 5 ms for the GIL after every Qt call (2M-row tour: 1 s gaps). The
    window's process shortens it, through ensure_app and through a window embedded in a
    script's own QApplication alike."""
    import sys

    from app._qt import GUI_SWITCH_INTERVAL, ensure_app
    from app.main_window import MainWindow
    from app.settings import Settings

    assert GUI_SWITCH_INTERVAL <= 0.0005
    default = sys.getswitchinterval()
    try:
        sys.setswitchinterval(0.005)
        ensure_app()
        assert sys.getswitchinterval() == pytest.approx(GUI_SWITCH_INTERVAL)
        sys.setswitchinterval(0.005)
        w = MainWindow(settings=Settings(str(tmp_path / "s.ini")))
        qtbot.addWidget(w)
        assert sys.getswitchinterval() == pytest.approx(GUI_SWITCH_INTERVAL)
        w.close()
    finally:
        sys.setswitchinterval(default)
