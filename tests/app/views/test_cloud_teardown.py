"""A cloud whose window is deleted while its points are still drawn part by part (issue 33: a test
closed its window with parts still to draw; the next part raised "Internal C++ object
(SelectViewBox) already deleted" in the event loop)."""
import numpy as np


def test_parts_left_to_draw_when_the_plot_is_deleted_are_dropped(qtbot):
    import pyqtgraph as pg
    import shiboken6

    from app.state import AppState
    from app.views._cloud import PROGRESSIVE_POINTS, PointCloud, new_plot

    w = pg.GraphicsLayoutWidget()
    plot = new_plot(w.ci, row=0, col=0)
    cloud = PointCloud(plot, AppState())
    n = 3 * PROGRESSIVE_POINTS
    rng = np.random.default_rng(0)
    cloud.set_points(rng.standard_normal(n), rng.standard_normal(n))
    assert cloud.drawing(), "drawn at once: nothing left for a later turn"
    shiboken6.delete(w)
    assert not shiboken6.isValid(cloud.vb)
    cloud._next_part()            # the part's turn comes after the window went
    assert not cloud.drawing()


def test_an_export_drops_a_cloud_whose_view_items_are_gone(qtbot):
    """A binned cloud of a closed view, not yet collected, whose items Qt has deleted: an export
    drops it and goes on, instead of failing there and at every later export of the process
    (seen once in a full test run: one outlier map's cut line, then 64 exports)."""
    from PySide6.QtCore import QObject

    from app.views import _cloud

    class Closed(QObject):
        calls = 0

        def finish_drawing(self):
            Closed.calls += 1
            raise RuntimeError("libshiboken: Internal C++ object (InfiniteLine) already deleted.")

    dead = Closed()
    _cloud._BINNED.add(dead)
    _cloud.finish_pending_drawings()
    _cloud.finish_pending_drawings()
    assert Closed.calls == 1 and dead not in _cloud._BINNED


def _twenty_thousand():
    from app.state import AppState
    from robustcore.datasets import Dataset
    from robustcore.methods import get_method
    rng = np.random.default_rng(5)
    X = rng.normal(size=(20_000, 3)) @ np.diag([3.0, 1.5, 0.05])
    known = rng.random(20_000) < 0.03
    X[known, 2] += 2.0
    ds = Dataset(X=X, name="twenty thousand", outliers=known)
    state = AppState()
    state.set_dataset(ds)
    assert state.add_result(get_method("pca").run(ds, {"n_components": 2, "scale": "none"}))
    return state


def _delete_now(widget):
    from PySide6.QtCore import QCoreApplication, QEvent
    widget.close()
    widget.deleteLater()
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    QCoreApplication.processEvents()


def test_a_closed_views_clouds_are_released_and_their_jobs_cancelled(qtbot):
    """Closing the views releases their clouds at once, pictures still in flight included, while
    the state they drew lives on (the window's does). Lambdas that captured a view were connected
    to signals of objects Python owns (the state's datasetChanged, a cloud's sigFailed), a cycle
    through PySide's C++ connection that Python's collector cannot see: every closed view, its
    clouds and their binning jobs lived as long as the process, and a clean-clone run's export
    drew one of them (stop 46)."""
    import gc
    import weakref

    from app._qt import configure_pyqtgraph
    from app.views import ResultViews

    configure_pyqtgraph()
    state = _twenty_thousand()
    views = ResultViews(state)
    views.resize(1100, 720)
    views.show()
    clouds, jobs = [], []
    for name in ("scatter", "outlier-map", "contour"):
        v = views.show_view(name)
        for cloud in (v.clouds.values() if name == "contour" else [v.cloud]):
            assert cloud.drawing(), f"{name}: its picture is still to come when the view closes"
            jobs += [r.current for r in (cloud.binned.bins, cloud.binned.picks) if r.current is not None]
            clouds.append(weakref.ref(cloud))
    assert jobs, "a binning job in flight"
    del v, cloud
    gone = weakref.ref(views)
    _delete_now(views)
    del views
    assert all(job.cancel_requested for job in jobs), "the closed views' jobs go on binning"
    gc.collect()
    assert gone() is None, "the closed ResultViews is kept alive"
    alive = [c() for c in clouds if c() is not None]
    assert not alive, f"{len(alive)} of {len(clouds)} clouds outlive their closed view"
    assert state.dataset is not None   # the state lives on


def test_a_cloud_goes_with_its_plot(qtbot):
    """A cloud belongs to its plot: deleting the plot's window deletes the cloud, its timers and
    its workers (nothing of it is left to draw on the next turn or export)."""
    import pyqtgraph as pg
    import shiboken6

    from app.state import AppState
    from app.views._cloud import PointCloud, new_plot

    w = pg.GraphicsLayoutWidget()
    cloud = PointCloud(new_plot(w.ci, row=0, col=0), AppState())
    runner = cloud.binned.bins
    _delete_now(w)
    assert not shiboken6.isValid(cloud) and not shiboken6.isValid(runner)
