"""The outlier map of an out-of-core fit, as a user opens it: a table read lazily, its per-row
results on disk, shows the same map (distances, cut-off lines, region counts) as the same table
loaded in memory; large, it is binned from the stored distances by blocks on a worker, never read
whole on the GUI thread."""
import threading

import numpy as np
import pytest

pytest.importorskip("dask")
pytest.importorskip("zarr")

from robustcore.outlier_map import REGIONS  # noqa: E402


def _table(tmp_path, n, seed):
    rng = np.random.default_rng(seed)
    X = np.c_[rng.normal(size=(n, 2)) * [3.0, 1.5], 0.05 * rng.normal(size=n)]
    X[rng.random(n) < 0.03, 2] += 2.0     # off the plane
    X[rng.random(n) < 0.01, 0] *= 6.0      # far along it
    path = tmp_path / "t.npy"
    np.save(path, X.astype(np.float32))
    return path


def _fits(path, tmp_path, method="pca"):
    from robustcore import datasets
    from robustcore.bigdata import StoredRows, open_lazy, settings
    from robustcore.methods import get_method
    params = {"n_components": 2, "scale": "none"}
    mem = get_method(method).run(datasets.load(path), params)
    ds = open_lazy(path, chunk_rows=2_000)
    with settings(memory_budget=4096, store_dir=tmp_path):   # every per-row result goes to disk
        lazy = get_method(method).run(ds, params)
    for k in ("score_distance", "orthogonal_distance", "map_region"):
        assert isinstance(lazy.arrays[k], StoredRows), k
    return ds, mem, lazy


def _show(views_for, ds, res, method="pca"):
    from app.state import AppState
    state = AppState()
    state.set_dataset(ds)
    assert state.add_result(res)
    v = views_for(state).show_view("outlier-map")
    v.method_box.set_key(method)
    return v


@pytest.mark.slow
def test_a_lazy_tables_map_is_the_in_memory_tables_map(views_for, tmp_path):
    ds, mem, lazy = _fits(_table(tmp_path, 3_000, seed=1), tmp_path)
    v = _show(views_for, ds, lazy)
    assert v.drawn is lazy and "no outlier map" not in v.status.text()
    x, y = v.cloud.points()
    np.testing.assert_allclose(x, mem.arrays["score_distance"], rtol=1e-9)
    np.testing.assert_allclose(y, mem.arrays["orthogonal_distance"], rtol=1e-9, atol=1e-12)
    assert v.cut_lines["sd"].value() == pytest.approx(mem.outlier_map.sd_cutoff, rel=1e-12)
    assert v.cut_lines["od"].value() == pytest.approx(mem.outlier_map.od_cutoff, rel=1e-9)
    assert mem.outlier_map.od_cutoff > 0 and lazy.outlier_map.counts == mem.outlier_map.counts
    for r in REGIONS:
        assert v.region_labels[r].textItem.toPlainText() == f"{r} ({mem.outlier_map.counts[r]:,})"
    assert mem.outlier_map.counts["orthogonal outlier"] + mem.outlier_map.counts["bad leverage"] > 0


@pytest.mark.slow
@pytest.mark.parametrize("method", ["pca", "coherence-pursuit"])
def test_a_large_lazy_map_is_binned_from_the_stored_distances_off_the_gui_thread(views_for, qtbot, tmp_path,
                                                                                 monkeypatch, method):
    from robustcore.bigdata import StoredRows
    import app.views.outlier_map as omap
    import app.views._binned as binned
    monkeypatch.setattr(omap, "DENSITY_POINTS", 5_000)   # an out-of-core fit of 50,000 rows under a tiny budget: 20 s
    monkeypatch.setattr(binned, "POINTS_IN_VIEW", 1_000)
    ds, mem, lazy = _fits(_table(tmp_path, 8_000, seed=2), tmp_path, method)
    real = StoredRows.__array__

    def guarded(self, *a, **kw):
        assert threading.current_thread() is not threading.main_thread(), "a stored column was read whole"
        return real(self, *a, **kw)

    monkeypatch.setattr(StoredRows, "__array__", guarded)
    v = _show(views_for, ds, lazy, method)
    qtbot.waitUntil(lambda: not v.cloud.drawing(), timeout=60_000)
    monkeypatch.setattr(StoredRows, "__array__", real)
    assert v.cloud.density.n_binned == 8_000
    # the picture is the in-memory fit's distances, binned
    sd, od = mem.arrays["score_distance"], mem.arrays["orthogonal_distance"]
    x0, x1, y0, y1 = v.cloud.density.extent
    ref, _, _ = np.histogram2d(sd, od, bins=v.cloud.density.counts.shape, range=[[x0, x1], [y0, y1]])
    assert np.abs(v.cloud.density.counts - ref).sum() <= 2   # a distance on a bin edge may round either way
    assert x1 >= max(sd.max(), mem.outlier_map.sd_cutoff)
    assert v.cut_lines["sd"].value() == pytest.approx(mem.outlier_map.sd_cutoff, rel=1e-12)
    assert v.cut_lines["od"].value() == pytest.approx(mem.outlier_map.od_cutoff, rel=1e-9)
    text = v.status.text()
    assert "bins" in text
    for r in REGIONS:
        assert f"{mem.outlier_map.counts[r]:,} {r}" in text
    # the flags' own lines, found on the worker from the stored columns, as in memory
    from app.views.outlier_map import flag_limits
    flags = np.asarray(mem.flags["outlier"], dtype=bool)
    want = flag_limits(mem, sd, od, flags)
    assert want, "these fits flag beyond their SPE/T² limits"
    got = {k: line.value() for k, line in v.flag_lines.items() if line.isVisible()}
    assert set(got) <= set(want) and all(got[k] == pytest.approx(want[k]) for k in got)
    legend = " ".join(label.text for _, label in v.legend.items)
    assert all(f"{k.upper()} > " in legend for k in want)
