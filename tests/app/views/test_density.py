"""The scatter of many samples: a density image whose counts hold every sample, with the flagged
samples a layer of their own on top and their highest scores as points (none subsampled away)."""
import numpy as np
import pytest

from app.views._aggregate import PER_SPOT
from app.views._binned import FLAG_POINTS, TOP_FLAGGED
from app.views._density import DENSITY_POINTS

from .test_aggregate import spread_by_loop


def _planted(n=1_000_000, k=8, seed=3):
    """n samples near a plane in 3-D, k of them far off it (the planted outliers)."""
    rng = np.random.default_rng(seed)
    X = np.c_[rng.normal(size=(n, 2)) * [3.0, 1.5], 0.05 * rng.normal(size=n)]
    planted = rng.choice(n, size=k, replace=False)
    X[planted, 2] += 6.0
    return X, planted


@pytest.mark.slow
def test_a_million_points_draw_as_density_with_the_highest_flagged_as_points(views_for):
    from app.state import AppState
    from robustcore.datasets import Dataset
    from robustcore.methods import get_method
    X, planted = _planted()
    ds = Dataset(X=X, name="planted")
    res = get_method("pca").run(ds, {"n_components": 2, "scale": "none"})
    flagged = np.asarray(res.flags["outlier"], dtype=bool)
    assert flagged[planted].all()                 # the fit finds them ...
    state = AppState()
    state.set_dataset(ds)
    assert state.add_result(res)
    v = views_for(state).show_view("scatter")
    v.method_box.set_key("pca")
    v.color_box.set_key(("none", None))
    assert X.shape[0] > DENSITY_POINTS
    v.cloud.finish_drawing()   # the picture is binned on a worker; an export (and this test) waits for it
    assert v.cloud.density.active
    # ... and the view draws them: beyond FLAG_POINTS the flagged samples are a layer of their
    # own, and the TOP_FLAGGED highest-scoring of them points at their projections, the planted
    # ones (the farthest off the plane) among them.
    fx, fy = v.cloud.flag_item.getData()
    proj = np.asarray(res.arrays["projection"])
    assert flagged.sum() > FLAG_POINTS and fx.size == TOP_FLAGGED
    score = np.asarray(res.sample_scores[res.primary_score])
    cand = np.flatnonzero(flagged)
    best = cand[np.lexsort((cand, -score[cand]))][:FLAG_POINTS]   # the candidates, best first
    x0, x1, y0, y1 = v.cloud.density.extent
    top = spread_by_loop(proj[best, 0], proj[best, 1], (x0, x1, y0, y1), TOP_FLAGGED)
    got = set(zip(np.round(fx, 9), np.round(fy, 9)))
    assert got == set(zip(np.round(proj[best[top], 0], 9), np.round(proj[best[top], 1], 9)))
    assert all((round(proj[i, 0], 9), round(proj[i, 1], 9)) in got for i in planted)
    assert any(t.endswith(f"{int(flagged.sum()):,} in view, binned") for t in v.legend_texts())
    # The image holds every sample on screen: the view is framed on them all, with a margin,
    # and the counts are the samples' own 2-D histogram of exactly the visible range (numpy).
    assert v.cloud.density.counts.sum() == X.shape[0] == v.cloud.density.n_binned
    assert v.cloud.drawn_count() == 0
    x0, x1, y0, y1 = v.cloud.density.extent
    (vx0, vx1), (vy0, vy1) = v.plot.getViewBox().viewRange()
    assert (x0, x1, y0, y1) == (vx0, vx1, vy0, vy1)
    ref, _, _ = np.histogram2d(proj[:, 0], proj[:, 1], bins=v.cloud.density.counts.shape, range=[[x0, x1], [y0, y1]])
    np.testing.assert_array_equal(v.cloud.density.counts, ref)
    assert v.colorbar is not None and "log10" in v.colorbar.getAxis("right").labelText
    assert f"drawn: {TOP_FLAGGED} of the highest, at most {PER_SPOT} per spot" in v.legend_texts()
    assert "1,000,000 samples in" in v.status.text() and " bins" in v.status.text()
    # Sizes cannot show in a density: the chooser says so instead of doing nothing.
    assert not v.size_box.isEnabled() and "binned" in v.size_box.toolTip()


def test_few_points_stay_dots(views_for):
    from app.state import AppState
    from robustcore.datasets import Dataset
    from robustcore.methods import get_method
    X, _ = _planted(n=5000, k=3)
    ds = Dataset(X=X, name="small")
    state = AppState()
    state.set_dataset(ds)
    assert state.add_result(get_method("pca").run(ds, {"n_components": 2, "scale": "none"}))
    v = views_for(state).show_view("scatter")
    v.method_box.set_key("pca")
    assert not v.cloud.density.active and v.cloud.drawn_count() == 5000
    assert v.color_box.isEnabled() and v.size_box.isEnabled()


def test_lone_bins_are_spread_so_that_they_can_be_seen_and_a_cloud_is_not(qtbot):
    """Samples on a few distinct values (PCP's rank-1 subspace of a8a: 22,696 samples on three
    score distances and whole-number scores) filled a few dozen lone bins of 2.5 px each, and the
    picture looked empty: such bins are drawn 5 x 5 bins wide (Datashader's dynspread), the
    counts kept as they are. A cloud whose bins touch is drawn bin for bin."""
    import pyqtgraph as pg

    from app.views._density import SPREAD_MAX, Density

    plot = pg.PlotItem()
    d = Density(plot)
    lone = np.zeros((1, 250, 150), dtype=np.int64)
    lone[0, [10, 100, 200], 30] = [5000, 12000, 5696]
    lone[0, 100, 90] = 3
    d.show(lone, (0, 1, 0, 1), [None])
    drawn = d.images[0].image
    assert np.count_nonzero(drawn) == 4 * (2 * SPREAD_MAX + 1) ** 2
    assert drawn[100, 30] == drawn[100 + SPREAD_MAX, 30 - SPREAD_MAX] > drawn[100, 90] > 0
    assert d.n_binned == 22_699 and np.count_nonzero(d.counts) == 4   # the counts are the samples' own
    rng = np.random.default_rng(0)
    cloud = np.histogram2d(rng.normal(size=20_000), rng.normal(size=20_000), bins=(250, 150))[0]
    d.show(cloud[None].astype(np.int64), (0, 1, 0, 1), [None])
    assert np.count_nonzero(d.images[0].image) == np.count_nonzero(cloud)
