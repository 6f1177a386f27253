"""A cloud of 20,000 samples, above DENSITY_POINTS (issue 33.2 / 33.3): the scatter, the outlier
map and the SPE / T² map draw it as its density plus the points worth drawing (every flagged
sample here), so pyqtgraph never paints 20,000 symbols (its paint of such a scatter was the
largest stop of a 20,000-row result's tour, 50-100 ms); each view says so; selecting a region
still gives exactly the samples in it."""
from __future__ import annotations

import numpy as np

from app.views import _geometry as geo
from app.views._binned import FLAG_POINTS
from app.views._density import DENSITY_POINTS

N = 20_000


def _state():
    from app.state import AppState
    from robustcore.datasets import Dataset
    from robustcore.methods import get_method
    rng = np.random.default_rng(5)
    X = rng.normal(size=(N, 3)) @ np.diag([3.0, 1.5, 0.05])
    known = rng.random(N) < 0.03
    X[known, 2] += 2.0   # off the plane: flagged
    ds = Dataset(X=X, name="twenty thousand", outliers=known)
    res = get_method("pca").run(ds, {"n_components": 2, "scale": "none"})
    state = AppState()
    state.set_dataset(ds)
    assert state.add_result(res)
    return state, res


def _symbols(cloud) -> int:
    """Symbols the cloud hands pyqtgraph to paint (its point items and the flagged ones)."""
    shown = sum(it.getData()[0].size for it in cloud.groups if it.isVisible())
    return shown + cloud.flag_item.getData()[0].size


def test_a_cloud_of_20000_is_drawn_as_its_density_and_at_most_flag_points_symbols(views_for, qtbot):
    assert N > DENSITY_POINTS
    state, res = _state()
    views = views_for(state)
    flagged = int(np.sum(res.flags["outlier"]))
    assert 0 < flagged <= FLAG_POINTS
    for name in ("scatter", "outlier-map", "contour"):
        v = views.show_view(name)
        clouds = list(v.clouds.values()) if name == "contour" else [v.cloud]
        for cloud in clouds:
            qtbot.waitUntil(lambda c=cloud: not c.drawing(), timeout=60_000)
            assert cloud.binned.active and cloud.density.active, name
            assert cloud.density.n_binned + flagged >= N - 10   # every sample counted or drawn
            assert 0 < _symbols(cloud) <= FLAG_POINTS, name
        text = v.status.text()
        assert "bins" in text or "density" in text, (name, text)
    # what the scatter says: all the flagged drawn as points over the bins of the rest
    v = views.show_view("scatter")
    assert f"{N:,} samples in " in v.status.text() and f"{flagged:,} SPE or T² above" in v.status.text()
    assert "all drawn as points" in v.status.text()
    assert v.cloud.flag_item.getData()[0].size == flagged


def test_a_rectangle_on_the_density_of_20000_selects_exactly_the_samples_inside(views_for, qtbot):
    state, res = _state()
    v = views_for(state).show_view("scatter")
    qtbot.waitUntil(lambda: not v.cloud.drawing(), timeout=60_000)
    proj = np.asarray(res.arrays["projection"])
    with qtbot.waitSignal(state.selectionChanged, timeout=30_000):
        v.plot.getViewBox().sigRegion.emit("rect", np.array([[-1.0, -0.5], [0.5, 1.0]]), "replace")
    want = geo.in_rect(proj[:, 0], proj[:, 1], -1.0, -0.5, 0.5, 1.0)
    assert want.size > 0
    np.testing.assert_array_equal(state.selection, want)


def test_a_binned_scatter_in_the_colour_map_counts_its_samples_in_the_legend(views_for, qtbot):
    """Coloured by a score (or in one colour) the binned samples are the colour map's layer: the
    legend named only the flagged ones, and how many samples the picture held was nowhere but
    the status's total (seen on 15,000,000 rows: "298,919 SPE or T² above its limit" alone)."""
    state, res = _state()
    v = views_for(state).show_view("scatter")
    flagged = int(np.sum(res.flags["outlier"]))
    keys = [v.color_box.itemData(i) for i in range(v.color_box.count())]
    for key in [k for k in keys if k[0] in ("score", "none")]:
        v.color_box.set_key(key)
        qtbot.waitUntil(lambda: not v.cloud.drawing(), timeout=60_000)
        texts = [label.text.replace("<br>", " ") for _, label in v.legend.items]
        assert f"samples ({N - flagged:,} unflagged in view)" in texts, (key, texts)
