"""The views of a large result bin it one job at a time (app.lane, issue 33.2): shown at once,
the scatter, the outlier map and the SPE / T² maps ran four to six binning threads side by side,
and the GUI thread waited for the GIL between them. Checked by what ran at once, never by timing."""
from __future__ import annotations

from app import lane as lane_mod
from app import tasks as tasks_mod
from app.views import _map_fill

from .test_any_size import state_of

N = 40_000   # over the density threshold: every cloud is binned on a worker


def test_the_views_of_a_large_result_bin_it_one_job_at_a_time(views_for, qtbot, monkeypatch):
    # a lane of this test's own: a job another test left behind would count among these
    LANE = lane_mod.Lane()
    monkeypatch.setattr(tasks_mod, "LANE", LANE)
    views = views_for(state_of(N, ("pca",)))
    shown = [views.show_view(name) for name in ("scatter", "outlier-map", "contour")]
    clouds = [shown[0].cloud, shown[1].cloud, *shown[2].clouds.values()]
    assert all(c.binned.active for c in clouds)

    def settled():
        return not any(c.drawing() for c in clouds) and not _map_fill._PENDING
    qtbot.waitUntil(settled, timeout=120_000)
    assert all(c.binned.picture is not None and c.binned.picture.in_view > 0 for c in clouds)
    assert LANE.most == 1   # never two view jobs at once
    assert LANE.waiting() == 0
