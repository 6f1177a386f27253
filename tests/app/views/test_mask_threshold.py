"""One mask threshold for a streaming fit (issue 33.6): online RPCA chooses its own (a tenth
of the data's scale), reports it in its summary and masks with it; the L + S view, its exported
figure and the video start from that same number, not from a percentile of S of their own."""
import numpy as np
import pytest

from app.palette import mask_threshold
from app.video import frame_scales
from robustcore.result import summary_items

from .conftest import data, fit, make_state


@pytest.fixture
def online(views_for):
    state = make_state("escalator-24", "online-rpca")
    return state, views_for(state).show_view("decomposition")


@pytest.mark.slow
def test_the_view_figure_and_video_use_the_threshold_the_summary_reports(online):
    state, v = online
    res, ds = state.result("online-rpca"), data("escalator-24")
    reported = dict(summary_items(res))["mask threshold"]
    # The fit's own rule, computed another way: a tenth of the frames' range (0..255 data).
    assert reported == pytest.approx(0.1 * (ds.X.max() - ds.X.min()), rel=0.05)
    # A percentile of |S| (what the view used) is another number on these frames.
    assert abs(np.quantile(np.abs(res.arrays["sparse"]), 0.9) - reported) > 1.0
    assert v.threshold() == pytest.approx(reported, abs=1e-3)            # the spin box: 3 decimals
    i = v.current_sample
    drawn = np.all(v.images["mask"].image == (213, 94, 0), axis=-1)
    np.testing.assert_array_equal(drawn, (np.abs(res.arrays["sparse"][i]) > v.threshold()).reshape(ds.image_shape))
    assert frame_scales(ds, res).threshold == reported
    # The mask panel's title names it (the exported figure is this view, drawn offscreen).
    from app.views._common import fmt
    assert f"mask |S| > {fmt(v.threshold())}" in v.panels["mask"].titleLabel.text

def test_a_batch_fit_keeps_the_percentile_of_its_own_s():
    res = fit("escalator-24", "pcp")
    S = res.arrays["sparse"]
    assert mask_threshold(S, res) == pytest.approx(np.quantile(np.abs(S), 0.9))


@pytest.mark.slow
def test_a_large_tables_new_threshold_is_counted_off_the_gui_thread(views_for, qtbot, monkeypatch):
    """The threshold spin box recounted every bin's share (up to 50 million entries) on the GUI
    thread. Above SYNC_VALUES entries the masks and the share are counted on a worker; what
    is drawn then is the exact share per bin at the new threshold."""
    import threading

    from app.views import _table_heatmaps as th

    from .test_any_size import reference, scaled, shown, state_of
    n = 33_000
    v = shown(views_for, state_of(n, ("pcp",)), "decomposition", qtbot)
    monkeypatch.setattr(th, "SYNC_VALUES", 1_000)   # this table counts as large
    counted_on = []
    original = th.TableHeatmaps._count_share

    def spy(self, t, cancelled=None):
        counted_on.append(threading.current_thread() is threading.main_thread())
        return original(self, t, cancelled)

    monkeypatch.setattr(th.TableHeatmaps, "_count_share", spy)
    v.set_threshold(1.7 * v.threshold())
    t = v.threshold()   # as the spin box holds it (3 decimals)
    region, tiles = v.pictures.tiles["whole"]
    assert tiles["t"] != t   # not counted in the spin box's slot
    qtbot.waitUntil(lambda: v.pictures.tiles["whole"][1]["t"] == t, timeout=30_000)
    region, tiles = v.pictures.tiles["whole"]   # (the panel may have been re-binned meanwhile)
    S = np.abs(scaled(n)[2])
    np.testing.assert_allclose(tiles["M"],
                               reference(S > t, region.rows, region.cols, "mean"), rtol=1e-12)
    assert counted_on and not any(counted_on)
    assert f"mask: {100 * np.mean(S > t):.1f}% of entries" in v.status.text()
