"""The window at 1280 x 800 as a user sees it: every view that exists is in sight (issue 25)."""
import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QToolButton



def _run(qtbot, w, method):
    w.method_panel.set_method(method)
    with qtbot.waitSignal(w.runFinished, timeout=60000):
        assert w.run() is not None


@pytest.mark.slow
def test_every_view_name_is_in_sight_at_1280x800(qtbot, small_window):
    w = small_window
    with qtbot.waitSignal(w.datasetLoaded, timeout=30000):
        w.demo_actions["usps-1-vs-8"].trigger()
    _run(qtbot, w, "pca")
    for method in ("coherence-pursuit", "pcp", "esfs", "scw"):
        _run(qtbot, w, method)
    qtbot.wait(50)
    views = w.views
    bar = views.tabBar()
    shown = [i for i in range(views.count()) if views.isTabVisible(i)]
    names = [views.tabText(i) for i in shown]
    assert len(shown) == 10 and "Summary" in names and "Known outliers" in names
    # No scroll arrows, and each name's whole tab lies inside the bar and the bar inside the views.
    arrows = [b for b in bar.findChildren(QToolButton) if b.isVisible()]
    assert arrows == []
    inside = bar.rect()
    rects = bar.name_rects() if hasattr(bar, "name_rects") else {i: bar.tabRect(i) for i in shown}
    assert sorted(rects) == shown
    for i in shown:
        r = rects[i]
        assert inside.contains(r), (views.tabText(i), r, inside)
        assert r.width() >= bar.fontMetrics().horizontalAdvance(views.tabText(i)), "the name is not cut"
        assert not any(r.intersects(o) for j, o in rects.items() if j != i), "names do not overlap"
    top_left = bar.mapTo(views, inside.topLeft())
    bottom_right = bar.mapTo(views, inside.bottomRight())
    assert views.rect().contains(top_left) and views.rect().contains(bottom_right)


@pytest.mark.slow
def test_views_are_built_in_idle_turns_before_the_result_and_a_click_builds_none(qtbot, small_window):
    """Building a view froze the window for tens of milliseconds, in the turn a result arrived
    or a tab was first clicked (issues 25, 33.2): the views the data and method could feed are
    built ahead, one per idle turn, and a click only draws."""
    from PySide6.QtCore import Qt
    w = small_window
    views = w.views
    created = []
    make = views._create
    views._create = lambda name: (created.append(name), make(name))[1]
    with qtbot.waitSignal(w.datasetLoaded, timeout=30000):
        w.demo_actions["usps-1-vs-8"].trigger()
    w.method_panel.set_method("pca")
    feeds = {"scatter", "detail", "contour", "outlier-map", "evaluation"}   # usps has known outliers
    qtbot.waitUntil(lambda: feeds <= set(views._views), timeout=60000)
    assert len(created) == len(set(created)), "each view built once"
    assert "comparison" not in views._views, "a comparison needs two results: not built for one"
    contour = views._views["contour"]   # not views.view(), which would finish building it
    # its deferred steps (the T² map, the key) run in idle turns of their own
    qtbot.waitUntil(lambda: "t2" in contour.plots and contour.key is not None, timeout=10000)
    assert views._views["scatter"]._bar is not None
    before = list(created)
    _run(qtbot, w, "pca")
    assert created == before, "the result's arrival built no view"
    shown = views.current_view_name()
    assert shown is not None and views.view(shown).drawn is not None
    bar = views.tabBar()
    titles = {views.tabText(i): i for i in range(views.count()) if views.isTabVisible(i)}
    assert {"SPE / T² map", "Outlier map", "Known outliers"} <= set(titles)
    # A user clicks the "Outlier map" tab: drawn in the click's turn, in its place, nothing built.
    i = titles["Outlier map"]
    qtbot.mouseClick(bar, Qt.MouseButton.LeftButton, pos=bar.name_rects()[i].center())
    assert views.currentIndex() == i and views.tabText(i) == "Outlier map"
    assert views._views["outlier-map"].drawn is not None
    assert created == before
    assert views._release_timer.isActive(), "the pages the drawing read are given back later"


def test_data_preview_columns_fit_their_names_and_first_cells(qtbot, small_window):
    w = small_window
    with qtbot.waitSignal(w.datasetLoaded, timeout=30000):
        w.demo_actions["cardio"].trigger()
    table, model = w.dataset_panel.table, w.dataset_panel.model
    header = table.horizontalHeader()
    fm, head_fm = table.fontMetrics(), header.fontMetrics()
    assert model.columnCount() > 5
    for c in range(model.columnCount()):
        texts = [model.data(model.index(r, c)) or "" for r in range(min(12, model.rowCount()))]
        need = max([head_fm.horizontalAdvance(model.headerData(c, Qt.Orientation.Horizontal))]
                   + [fm.horizontalAdvance(t) for t in texts])
        assert need <= header.sectionSize(c) <= need + 40, (c, need, header.sectionSize(c))
