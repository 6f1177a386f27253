"""In the window: a video opened out of core, its L and S written to a Zarr store, the session
saved, the working folder gone and the session folder copied elsewhere, the session reopened:
the same frames, and no fit."""
from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

pytest.importorskip("dask")
pytest.importorskip("zarr")
av = pytest.importorskip("av")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtWidgets import QPushButton  # noqa: E402


def _clip(path, n=120, h=48, w=64):
    from robustcore.bigdata.synthetic import MovingObjects
    frames, _ = MovingObjects(h, w, n_objects=2, seed=5).frames(0, n)
    with av.open(str(path), "w") as c:
        s = c.add_stream("ffv1", rate=25)
        s.width, s.height, s.pix_fmt = w, h, "gray"
        for a in frames:
            for pk in s.encode(av.VideoFrame.from_ndarray(a, format="gray")):
                c.mux(pk)
        for pk in s.encode():
            c.mux(pk)
    return path


def _open_lazy(qtbot, window, path):
    with qtbot.waitSignal(window.outOfCoreOffered, timeout=60_000):
        window.open_path(str(path))
    with qtbot.waitSignal(window.datasetLoaded, timeout=60_000):
        qtbot.mouseClick(window.lazy_offer.findChild(QPushButton, "lazy_open_button"), Qt.MouseButton.LeftButton)


@pytest.mark.slow
def test_video_session_reopens_its_stored_results_without_a_fit(qtbot, window, tmp_path, monkeypatch):
    from app.session.stores import zarr_location
    project = tmp_path / "project"
    project.mkdir()
    path = _clip(project / "clip.mkv")
    window.settings.set_memory_budget(1 << 20)   # 120 frames x 3072 px x 8 B = 2.9 MB > 1 MB
    _open_lazy(qtbot, window, path)
    window.method_panel.set_method("online-rpca")
    window.method_panel.form("online-rpca").set_values({"batch_size": 16})
    with qtbot.waitSignal(window.runFinished, timeout=120_000) as got:
        qtbot.mouseClick(window.method_panel.run_button, Qt.MouseButton.LeftButton)
    res = got.args[0]
    work = os.path.dirname(zarr_location(res.arrays["sparse"])[0])   # the window's working folder
    S_before = np.asarray(res.arrays["sparse"][:])
    mask_before = np.asarray(res.arrays["mask"][:])
    session = project / "clip.rss.json"
    window.session_path = str(session)
    window.save_session_dialog()
    assert (project / "clip.lazy").is_dir()
    assert window.dataset_panel.summary_text()["large results"] == f"written to {project / 'clip.lazy'}"

    window.set_dataset(None)
    shutil.rmtree(work)   # the working folder is gone (a reboot)
    # ... and the session folder was copied to another machine (the video's fingerprint names its
    # path: the copy is recognised by its size and first and last MiB).
    moved = tmp_path / "elsewhere" / "project"
    shutil.copytree(project, moved)
    shutil.rmtree(project)
    project, session = moved, moved / "clip.rss.json"
    from robustcore import methods

    def refuse(*a, **k):
        raise AssertionError("the session's results should have been reloaded, not fitted again")
    monkeypatch.setattr(methods.Method, "run", refuse)
    with qtbot.waitSignal(window.datasetLoaded, timeout=60_000):
        window.open_session(str(session))
    assert "online-rpca: reloaded the saved results" in window.statusBar().currentMessage()
    assert window.dataset_panel.summary_text()["large results"] == f"written to {project / 'clip.lazy'}"
    again = window.state.result("online-rpca")
    S = again.arrays["sparse"]
    assert not isinstance(S, np.ndarray)   # read frame by frame from the store
    assert zarr_location(S)[0].startswith(str(project / "clip.lazy"))
    np.testing.assert_array_equal(np.asarray(S[:]), S_before)
    np.testing.assert_array_equal(np.asarray(again.arrays["mask"][:]), mask_before)
    v = window.views.show_view("decomposition")
    v.set_frame(77)
    i = v.current_sample
    np.testing.assert_array_equal(v.images["sparse"].image, S_before[i].reshape(48, 64))
    window.grab().save(str(tmp_path / "reopened.png"))
