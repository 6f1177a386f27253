"""Out-of-core data in the window, driven as a user does: open a file larger than the memory
budget (or an HDF5 / Zarr table), accept the offer, read the Data panel, run PCA out of core with
progress and Cancel, compare with the in-memory fit."""
import numpy as np
import pytest

pytest.importorskip("dask")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtWidgets import QPushButton  # noqa: E402

from app.out_of_core import check_budget, check_scheduler, parse_size  # noqa: E402


def _table(n=20_000, d=8, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3)) @ rng.normal(size=(3, d)) + 0.1 * rng.normal(size=(n, d))
    X[:15] += 8.0   # a few gross outliers
    return X


def _write(kind, path, X):
    if kind == "npy":
        np.save(path, X)
    elif kind == "h5":
        h5py = pytest.importorskip("h5py")
        with h5py.File(path, "w") as f:
            f.create_dataset("X", data=X, chunks=(500, X.shape[1]))
    else:
        zarr = pytest.importorskip("zarr")
        z = zarr.open_array(str(path), mode="w", shape=X.shape, chunks=(500, X.shape[1]), dtype=X.dtype)
        z[:] = X
    return path


def _accept_offer(qtbot, window, path):
    with qtbot.waitSignal(window.outOfCoreOffered, timeout=60_000) as got:
        window.open_path(str(path))
    box = window.lazy_offer
    assert box.isVisible() and box.objectName() == "lazy_offer"
    text = box.text() + box.informativeText()
    assert "out of core" in text
    with qtbot.waitSignal(window.datasetLoaded, timeout=60_000):
        qtbot.mouseClick(box.findChild(QPushButton, "lazy_open_button"), Qt.MouseButton.LeftButton)
    return got.args[0]


def _run(qtbot, window, method="pca", **values):
    window.method_panel.set_method(method)
    if values:
        window.method_panel.form(method).set_values(values)
    with qtbot.waitSignal(window.runFinished, timeout=120_000) as got:
        qtbot.mouseClick(window.method_panel.run_button, Qt.MouseButton.LeftButton)
    return got.args[0]


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["npy", "h5", "zarr"])
def test_open_out_of_core_then_pca_equals_in_memory(qtbot, window, tmp_path, kind):
    from robustcore.datasets import Dataset
    from robustcore.methods import get_method
    X = _table()
    path = _write(kind, tmp_path / f"big.{kind}", X)
    window.settings.set_memory_budget(1 << 20)   # 1 MB: the 1.2 MB table is "too large"
    offer = _accept_offer(qtbot, window, path)
    if kind == "npy":
        assert "more than the memory budget of 1.0 MB" in offer.reason and offer.can_load
    else:
        assert "read out of core" in offer.reason and not offer.can_load
    ds = window.state.dataset
    assert ds.is_lazy
    info = window.dataset_panel.summary_text()
    assert info["shape"] == "20,000 samples × 8 features"
    assert info["memory budget"] == "1.0 MB"
    assert "blocks of" in info["chunking"] and info["in memory"].startswith("1.2 MB")
    assert info["on disk"] and info["scheduler"].startswith("this machine")
    assert "out of core" in window.dataset_panel.title.text()
    # The preview reads the first rows from disk.
    assert window.dataset_panel.model.rowCount() == 100
    assert float(window.dataset_panel.model.data(window.dataset_panel.model.index(0, 0))) == \
        pytest.approx(X[0, 0], rel=1e-3)
    # Only out-of-core table methods are enabled; the others say why.
    combo = window.method_panel.combo
    enabled = {combo.itemData(i): combo.model().item(i).isEnabled() for i in range(combo.count())}
    assert enabled["pca"] and enabled["coherence-pursuit"] and enabled["residual"]
    assert not enabled["pcp"] and not enabled["online-rpca"]
    i = combo.findData("pcp")
    assert "needs the data in memory" in combo.itemData(i, Qt.ItemDataRole.ToolTipRole)
    res = _run(qtbot, window, "pca", n_components=3, scale="none")
    ref = get_method("pca").run(Dataset(X=X, name="ref"), {"n_components": 3, "scale": "none"})
    assert res.summary.get("out of core") is True
    np.testing.assert_allclose(np.asarray(res.sample_scores["spe"]), ref.sample_scores["spe"], rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(np.abs(np.asarray(res.arrays["projection"])), np.abs(ref.arrays["projection"]),
                               rtol=1e-8, atol=1e-8)
    np.testing.assert_array_equal(np.asarray(res.flags["outlier"]), ref.flags["outlier"])
    assert window.views.current_view_name()   # a view shows the result


@pytest.mark.slow
def test_in_memory_methods_refused_on_lazy_data(qtbot, window, tmp_path):
    path = _write("npy", tmp_path / "t.npy", _table())
    window.settings.set_memory_budget(1 << 20)
    _accept_offer(qtbot, window, path)
    window.method_panel.combo.setCurrentIndex(window.method_panel.combo.findData("pcp"))
    assert window.run() is None
    assert "needs the data in memory" in window.method_panel.block_label.text()


def test_small_npy_loads_in_memory_without_offer(qtbot, window, tmp_path):
    path = _write("npy", tmp_path / "small.npy", _table(200))
    with qtbot.waitSignal(window.datasetLoaded, timeout=60_000):
        window.open_path(str(path))
    assert window.lazy_offer is None
    assert not window.state.dataset.is_lazy


@pytest.mark.slow
def test_cancel_lazy_fit(qtbot, window, tmp_path):
    path = _write("npy", tmp_path / "c.npy", _table(400_000, 10))
    window.settings.set_memory_budget(1 << 20)
    _accept_offer(qtbot, window, path)
    window.method_panel.set_method("coherence-pursuit")
    progress = []
    window.runner.progress.connect(lambda job, f, m: progress.append((f, m)))
    window.run()
    qtbot.waitUntil(lambda: len(progress) > 0, timeout=60_000)
    with qtbot.waitSignal(window.runCancelled, timeout=5000):
        qtbot.mouseClick(window.method_panel.cancel_button, Qt.MouseButton.LeftButton)
    assert not window.runner.is_busy()
    assert window.state.result("coherence-pursuit") is None
    assert "Cancelled" in window.method_panel.status.text()


def test_settings_dialog_validates(qtbot, window):
    from PySide6.QtWidgets import QDialogButtonBox
    dlg = window.out_of_core_settings_dialog()
    ok = dlg.buttons.button(QDialogButtonBox.StandardButton.Ok)
    dlg.budget_edit.setText("lots")
    assert not ok.isEnabled() and "not a size" in dlg.budget_error.text()
    dlg.budget_edit.setText("512 MB")
    dlg.scheduler_edit.setText("tcp://10.0.0.5")
    assert not ok.isEnabled() and "has no port" in dlg.scheduler_error.text()
    dlg.scheduler_edit.setText("10.0.0.5:8786")
    assert ok.isEnabled()
    qtbot.mouseClick(ok, Qt.MouseButton.LeftButton)
    assert window.settings.memory_budget() == 512 << 20
    assert window.settings.scheduler() == "tcp://10.0.0.5:8786"


def test_setting_validators():
    assert parse_size("2 GB") == 2 << 30 and parse_size("1.5g") == int(1.5 * (1 << 30))
    with pytest.raises(ValueError, match="too small"):
        parse_size("10 bytes")
    with pytest.raises(ValueError, match="not a size"):
        parse_size("-3 MB")
    with pytest.raises(ValueError, match="whole number"):
        check_budget(1.5e9)
    assert check_scheduler("") is None and check_scheduler("host:8786") == "tcp://host:8786"
    with pytest.raises(ValueError, match="not a port"):
        check_scheduler("tcp://h:99999")
    with pytest.raises(ValueError, match="not a scheduler address"):
        check_scheduler("http://a b:1")


@pytest.mark.slow
def test_session_reopens_out_of_core(qtbot, window, tmp_path):
    import json
    folder = tmp_path / "project"
    folder.mkdir()
    X = _table()
    path = _write("h5", folder / "table.h5", X)
    _accept_offer(qtbot, window, path)
    res = _run(qtbot, window, "pca", n_components=3, scale="none")
    session = folder / "work.rss.json"
    window.session_path = str(session)
    window.save_session_dialog()
    ref = json.loads(session.read_text())["dataset"]
    assert ref["lazy"] is True and ref["path"] == str(path) and ref["relative_path"] == "table.h5"
    window.set_dataset(None)
    with qtbot.waitSignal(window.datasetLoaded, timeout=60_000):
        window.open_session(str(session))
    ds = window.state.dataset
    assert ds.is_lazy and ds.n_samples == X.shape[0]
    again = window.state.result("pca")
    np.testing.assert_allclose(np.asarray(again.sample_scores["spe"]), np.asarray(res.sample_scores["spe"]),
                               rtol=1e-12)
    assert window.dataset_panel.summary_text()["out of core"].startswith("yes")


@pytest.mark.slow
def test_long_video_out_of_core_results_in_zarr_read_back_by_the_view(qtbot, window, tmp_path):
    av = pytest.importorskip("av")
    n, h, w = 120, 48, 64
    rng = np.random.default_rng(1)
    bg = rng.integers(40, 120, size=(h, w)).astype(np.uint8)
    path = tmp_path / "clip.mp4"
    with av.open(str(path), "w") as c:
        s = c.add_stream("libx264", rate=25)
        s.width, s.height, s.pix_fmt, s.options = w, h, "yuv444p", {"qp": "0"}
        for k in range(n):
            f = bg.copy()
            f[10:22, (k % 50):(k % 50) + 12] = 250   # a moving bright square
            for p in s.encode(av.VideoFrame.from_ndarray(np.repeat(f[..., None], 3, 2), format="rgb24")):
                c.mux(p)
        for p in s.encode():
            c.mux(p)
    window.settings.set_memory_budget(1 << 20)   # 120 frames x 3072 px x 8 B = 2.9 MB > 1 MB
    offer = _accept_offer(qtbot, window, path)
    assert "these 120 frames" in offer.reason
    ds = window.state.dataset
    assert ds.kind == "frames" and window.method_panel.method_name() == "online-rpca"
    assert "120 frames of 64 × 48 pixels" in window.dataset_panel.summary_text()["frames"]
    store_root = window.dataset_panel.summary_text()["large results"].removeprefix("written to ")
    res = _run(qtbot, window, "online-rpca", batch_size=16)
    S = res.arrays["sparse"]
    assert not isinstance(S, np.ndarray) and res.summary["results in"].startswith(store_root)
    v = window.views.show_view("decomposition")
    v.set_frame(77)
    i = v.current_sample
    np.testing.assert_array_equal(v.images["sparse"].image, np.asarray(S[i], float).reshape(h, w))
    np.testing.assert_allclose(v.images["original"].image, ds.source.frame(i).reshape(h, w))
    assert v.frame_slider.maximum() == n - 1
