"""Sample detail for data opened out of core, driven as a user does: open a table larger than
the memory budget, accept the offer, run a method, select a sample, open the Sample detail tab.
The view reads that one row (and its per-row results) on a worker and shows the same numbers as
for the same table loaded into memory."""
import threading

import numpy as np
import pytest

pytest.importorskip("dask")

from .test_out_of_core_window import _accept_offer, _run, _table, _write  # noqa: E402

PARAMS = {"pca": {"n_components": 3, "scale": "none"},
          "coherence-pursuit": {"n_components": 3},
          # a sample of rows: every row of the table would not fit the 1 MB budget out of core
          "robpca": {"n_components": 3, "scale": "none", "max_samples": 4000},
          "residual": {"n_components": 3}}


def _detail_of(qtbot, window, method, sample, after_run=lambda: None):
    """The Sample detail tab showing ``sample`` of ``method``'s result: (bars, parts, status)."""
    _run(qtbot, window, method, **PARAMS[method])
    after_run()
    window.state.set_selection([sample])
    v = window.views.view("detail")
    assert v.available(), v.missing(window.state)
    assert window.views.isTabVisible(window.views.indexOf(v))   # the tab is offered
    window.views.setCurrentWidget(v)   # the user opens the tab
    qtbot.waitUntil(lambda: v.current_sample == sample and f"#{sample}" in v.status.text()
                    and "from disk" not in v.status.text(), timeout=60_000)
    return v.bar_values.copy(), {k: None if p is None else p.copy() for k, p in v.parts.items()}, v.status.text()


@pytest.mark.slow
@pytest.mark.parametrize("method", list(PARAMS))
def test_sample_detail_out_of_core_shows_what_memory_shows(qtbot, window, tmp_path, monkeypatch, method):
    X = _table(12_000, 12)   # 1.2 MB as float64: above a 1 MB budget
    path = _write("npy", tmp_path / "t.npy", X)
    window.settings.set_memory_budget(1 << 20)
    _accept_offer(qtbot, window, path)
    assert window.state.dataset.is_lazy
    sample = 7   # one of the gross outliers
    # the row is read on a worker, never on the GUI thread (a chunk read may wait on a disk)
    reader = window.state.dataset.source.reader
    on_gui, read = [], reader.read

    def watch():   # after the fit: the worker process it runs in gets the data set pickled
        monkeypatch.setattr(reader, "read", lambda a, b: on_gui.append(
            threading.current_thread() is threading.main_thread()) or read(a, b))
    bars, parts, status = _detail_of(qtbot, window, method, sample, watch)
    assert on_gui and not any(on_gui)
    np.testing.assert_array_equal(parts["original"], X[sample])
    assert "nothing selected" not in status and "1 of 1 selected" in status

    window.settings.set_memory_budget(1 << 30)
    with qtbot.waitSignal(window.datasetLoaded, timeout=60_000):
        window.open_path(str(path))
    assert not window.state.dataset.is_lazy
    bars_mem, parts_mem, status_mem = _detail_of(qtbot, window, method, sample)
    np.testing.assert_allclose(bars, bars_mem, rtol=1e-6, atol=1e-9)
    for key, p in parts_mem.items():
        if p is None:
            assert parts[key] is None
        else:
            np.testing.assert_allclose(parts[key], p, rtol=1e-6, atol=1e-9, err_msg=key)
    # the same words, but the data set's name
    assert status.split(" · ")[:2] == status_mem.split(" · ")[:2]


@pytest.mark.slow
def test_sample_detail_out_of_core_with_nothing_selected_shows_the_top_flagged(qtbot, window, tmp_path):
    X = _table(12_000, 12)
    path = _write("npy", tmp_path / "t.npy", X)
    window.settings.set_memory_budget(1 << 20)
    _accept_offer(qtbot, window, path)
    res = _run(qtbot, window, "pca", **PARAMS["pca"])
    window.state.set_selection([])
    v = window.views.show_view("detail")
    flags = np.asarray(res.flags["outlier"], bool)
    spe = np.asarray(res.sample_scores["spe"], float)
    top = int(np.flatnonzero(flags)[np.argmax(spe[flags])])
    qtbot.waitUntil(lambda: v.current_sample == top and "from disk" not in v.status.text(), timeout=60_000)
    assert "flagged sample with the highest spe" in v.status.text()
    np.testing.assert_array_equal(v.parts["original"], X[top])


@pytest.mark.slow
def test_sample_detail_of_a_video_out_of_core(qtbot, window, tmp_path):
    """A video opened out of core, Online RPCA (S kept in a Zarr store): the detail shows the
    selected frame read from the video, its L and S rows read from the store."""
    pytest.importorskip("av")
    from tests.robustcore.datasets.test_video import write_clip
    n, h, w = 60, 24, 32
    rng = np.random.default_rng(2)
    frames = np.repeat(rng.integers(40, 120, size=(1, h, w)).astype(np.uint8), n, axis=0)
    for k in range(n):
        frames[k, 4:10, (k % 20):(k % 20) + 6] = 250   # a moving bright square
    path = write_clip(tmp_path / "clip.mp4", frames, pix_fmt="yuv444p", options={"qp": "0"})
    with qtbot.waitSignal(window.datasetLoaded, timeout=60_000):
        window.open_out_of_core(str(path))
    ds = window.state.dataset
    assert ds.is_lazy and ds.kind == "frames"
    res = _run(qtbot, window, "online-rpca", batch_size=16)
    window.state.set_selection([33])
    v = window.views.view("detail")
    assert window.views.isTabVisible(window.views.indexOf(v))
    window.views.setCurrentWidget(v)
    qtbot.waitUntil(lambda: v.current_sample == 33 and "from disk" not in v.status.text(), timeout=60_000)
    np.testing.assert_allclose(v.parts["original"], ds.source.frame(33))
    np.testing.assert_allclose(v.parts["part"], np.asarray(res.arrays["sparse"][33], float).reshape(-1))
    np.testing.assert_allclose(v.parts["reconstruction"], np.asarray(res.arrays["low_rank"][33], float).reshape(-1))
    assert v.images["original"].image.shape == (h, w)
