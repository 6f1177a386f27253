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
