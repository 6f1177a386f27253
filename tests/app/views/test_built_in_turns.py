"""Views built ahead one part per idle turn (issue 33.2): the scatter, the outlier map and the
SPE / T² map are made without a plot, and each later idle turn (``build_step``) adds one part
(a plot, its lines, its labels, a colour bar), so no turn of the building ahead makes two plots;
a view drawn before it is finished finishes first and draws as one built at once."""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg

from .conftest import make_state


def test_the_outlier_map_is_built_one_part_per_idle_turn(qtbot):
    from app.views.outlier_map import OutlierMapView
    state = make_state("gaussian-2d", ("pca", {"n_components": 1}))
    v = OutlierMapView(state)
    qtbot.addWidget(v)
    assert v.plot is None and v.cloud is None and not v.cut_lines and not v.region_labels
    assert v.build_step() and v.plot is not None and v.cloud is not None and not v.cut_lines
    assert v.build_step() and set(v.cut_lines) == {"sd", "od"} and not v.region_labels
    assert v.build_step() and len(v.region_labels) == 4
    for k in (4, 8, 10):   # the samples' names, at most four text items a turn
        assert v.build_step() and len(v.names.items) == k
    assert not v.build_step()
    # Half built, then drawn: finished first, drawn as one built at once.
    half, whole = OutlierMapView(state), OutlierMapView(state)
    qtbot.addWidget(half)
    qtbot.addWidget(whole)
    half.build_step()
    whole.finish_building()
    for w in (half, whole):
        w.ensure_fresh()
    assert half.drawn is state.result("pca") and half.status.text() == whole.status.text()
    assert [t.toPlainText() for t in half.region_labels.values()] == \
        [t.toPlainText() for t in whole.region_labels.values()]
    assert half.cloud.drawn_count() == whole.cloud.drawn_count() == state.dataset.n_samples


def test_the_scatter_is_built_one_part_per_idle_turn_and_follows_the_selection_meanwhile(qtbot):
    from app.views.scatter import ScatterView
    state = make_state("gaussian-2d", ("pca", {"n_components": 2}))
    v = ScatterView(state)
    qtbot.addWidget(v)
    assert v.plot is None and v.cloud is None
    state.set_selection([1, 2], "replace")   # before the plot exists: nothing to ring, no error
    v.set_tool("lasso")
    assert v.build_step() and v.plot is not None and v._bar is None
    assert v.plot.getViewBox().tool == "lasso"   # the tool chosen before is the plot's
    assert v.build_step() and v._bar is not None
    assert not v.build_step()
    v.ensure_fresh()
    assert v.drawn is state.result("pca")
    np.testing.assert_array_equal(np.sort(v.cloud.sel_item.getData()[0]), np.sort(v.cloud.x[[1, 2]]))


def test_building_views_ahead_makes_at_most_one_part_per_idle_turn(views_for, qtbot, monkeypatch):
    """Through the window's own building ahead (ResultViews.prepare): no idle turn that builds
    the scatter, the outlier map or the SPE / T² map makes more than one PlotItem (a colour bar is
    one too), nor more than four of its plots, lines and labels. Built at once, the outlier map's
    first turn made its plot, four lines and four labels (~80 ms of the GUI thread)."""
    state = make_state("gaussian-2d", ("pca", {"n_components": 1}))
    views = views_for(state)
    made = {"plot": 0, "other": 0}
    per_turn = []

    def counting(cls, kind):
        real = cls.__init__

        def init(self, *a, **kw):
            made[kind] += 1
            real(self, *a, **kw)
        monkeypatch.setattr(cls, "__init__", init)

    counting(pg.PlotItem, "plot")
    counting(pg.InfiniteLine, "other")
    counting(pg.TextItem, "other")
    real_prepare = type(views)._prepare

    def turn():
        before = dict(made)
        real_prepare(views)
        per_turn.append((made["plot"] - before["plot"], made["other"] - before["other"]))

    views._prepare_timer.timeout.disconnect()
    views._prepare_timer.timeout.connect(turn)
    names = ["scatter", "outlier-map", "contour"]
    views.prepare(names)
    qtbot.waitUntil(lambda: not views._preparing, timeout=30_000)
    built = [views._views.get(n) for n in names]
    assert all(v is not None for v in built)
    assert built[0]._bar is not None and len(built[1].region_labels) == 4 and built[2].legend is not None
    plots = [p for p, _ in per_turn]
    assert sum(plots) >= 5 and max(plots) <= 1, per_turn   # 1 + 1 bar, 1, 2 + 1 key
    # a map's plot with its axis line and note, or four labels: never a plot, lines and labels
    assert max(p + o for p, o in per_turn) <= 4, per_turn


def _turns_of_drawing(views, cls, monkeypatch) -> list:
    """What each turn of ``views``' pending drawing did to views of class ``cls``: the parts built
    ("part") and the drawings ("draw"), one list per turn, run by hand until nothing is pending
    (no timing: the steps' own timer is stopped and each turn called in order)."""
    done = []
    real_step, real_refresh = cls.build_step, cls.refresh

    def step(self):
        built = real_step(self)
        if built:
            done.append("part")
        return built

    def refresh(self):
        done.append("draw")
        return real_refresh(self)

    monkeypatch.setattr(cls, "build_step", step)
    monkeypatch.setattr(cls, "refresh", refresh)
    return done


def _run_turns(views, done, first) -> list:
    turns = []
    before = len(done)
    first()   # the click's own turn
    turns.append(done[before:])
    while views.drawing():
        views._step_timer.stop()
        before = len(done)
        views._on_step()
        turns.append(done[before:])
    return turns


def test_a_map_shown_before_it_was_built_ahead_is_built_one_part_per_turn_then_drawn(views_for, monkeypatch):
    """A tab chosen before its view was built ahead (a fast fit, a slow machine, a quick click):
    the view was made in the click's turn, then finished AND drawn in the next one, the SPE / T²
    map's two plots, its key, its legend and the first drawing together (75-85 ms of the GUI
    thread at 2,000,000 rows, issue 33.2). Each part now has a turn of its own, the drawing one
    after them, and the map drawn is the one a view built at once draws."""
    from app.views.contour import ContourView, _band_lut
    from app.views.result_views import ResultViews
    monkeypatch.setattr(ResultViews, "prepare", lambda self, names: None)   # nothing built ahead
    _band_lut.cache_clear()   # as in a new window: the key's colour maps not read yet
    state = make_state("gaussian-2d", ("pca", {"n_components": 1}))
    views = views_for(state)
    assert "contour" in views._standins and "contour" not in views._views
    done = _turns_of_drawing(views, ContourView, monkeypatch)
    turns = _run_turns(views, done, lambda: views.setCurrentWidget(views._standins["contour"]))
    assert all(len(t) <= 1 for t in turns), turns   # no turn does two parts, nor a part and the drawing
    assert [w for t in turns for w in t] == ["part"] * 5 + ["draw"], turns
    v = views._views["contour"]
    assert views.currentWidget() is v and v.drawn is state.result("pca") and not v.build_step()
    whole = ContourView(state)
    whole.resize(v.size())
    whole.ensure_fresh()
    assert v.status.text() == whole.status.text()
    def texts(view):   # (wrapped where each view's width asks)
        return [label.text.replace("<br>", " ") for _, label in view.legend.items]
    assert texts(v) == texts(whole)
    assert set(v.plots) == set(whole.plots) and v.key is not None
    whole.deleteLater()


def test_a_view_half_built_ahead_is_finished_one_part_per_turn_when_its_tab_is_chosen(views_for, monkeypatch):
    """Built ahead in part when its tab is chosen: the rest, one part per turn, then the drawing."""
    from app.views.outlier_map import OutlierMapView
    from app.views.result_views import ResultViews
    monkeypatch.setattr(ResultViews, "prepare", lambda self, names: None)
    state = make_state("gaussian-2d", ("pca", {"n_components": 1}))
    views = views_for(state)
    v = views._create("outlier-map")
    assert v.build_step()   # the plot built ahead; its lines and labels not yet
    done = _turns_of_drawing(views, OutlierMapView, monkeypatch)
    turns = _run_turns(views, done, lambda: views.setCurrentWidget(v))
    assert all(len(t) <= 1 for t in turns), turns
    assert [w for t in turns for w in t] == ["part"] * 5 + ["draw"], turns   # lines, labels, names x3
    assert v.drawn is state.result("pca") and len(v.region_labels) == 4
