"""The L + S view fed while a streaming fit runs, driven as a user does: run Online robust PCA on
a clip (in memory, or a video opened out of core with its results in a Zarr store), watch the
provisional frames arrive, let it finish or press Cancel.

The worst bug a view can have is drawing another result than the one it names: every
provisional picture recorded during a run is checked against the finished run's frame, the
label must say provisional while it runs and not after, and a cancelled run must leave nothing
that claims to be a finished result.
"""
import dataclasses
import time

import numpy as np
import pytest
from PySide6.QtCore import Qt

from app.fit_process import FrameAnnouncer, FramesSoFar
from app.main_window import MainWindow
from app.settings import Settings
from app.views._lazy_frames import FrameGone, LiveFrames
from robustcore._progress import Reporter
from robustcore.datasets import Dataset
from robustcore.methods import METHODS

N, H, W = 240, 40, 56


# -- a streaming fit at a camera's pace -----------------------------------------------------------
# Online robust PCA on this clip takes a tenth of a second; a test could not watch it run. The
# adapter below is the real one with 30 ms between batches. Module-level functions only: the
# Method travels to the worker process by reference.

def _orpca_class():
    from robustcore.subspace.online_rpca import OnlineRPCA
    return OnlineRPCA


class _Paced:
    """A progress callable that waits 30 ms per report and keeps the caller's ``frames`` hook."""

    def __init__(self, rep):
        self.rep, self.frames = rep, rep.hook("frames")

    def __call__(self, fraction, message=""):
        time.sleep(0.03)
        self.rep(fraction, message)
        return True


def _paced_adapter(est, dataset, values, rep):
    from robustcore.methods._streaming import run_online_rpca
    return run_online_rpca(est, dataset, values, Reporter(_Paced(rep)))


PACED = dataclasses.replace(METHODS["online-rpca"], factory=_orpca_class, adapter=_paced_adapter)


@pytest.fixture
def window(qtbot, tmp_path):
    w = MainWindow(settings=Settings(str(tmp_path / "window.ini")), methods=dict(METHODS, **{"online-rpca": PACED}))
    qtbot.addWidget(w)
    w.resize(1400, 900)
    w.show()
    yield w
    w.close()


def _clip():
    from robustcore.bigdata.synthetic import MovingObjects
    frames, _ = MovingObjects(H, W, n_objects=3, noise=2.0, illumination=0.1, period=400, seed=3).frames(0, N)
    return Dataset(X=frames.reshape(N, -1).astype(float), image_shape=(H, W), frame_order=np.arange(N),
                   sample_ids=[f"frame {k}" for k in range(N)], name="clip")


def _watch(window, seen):
    """Record what the L + S view shows after each batch of frames it is fed (connected after the
    window's own slot, so it runs once the view has drawn)."""
    def record(job, frames):
        v = window.views.view("decomposition")
        i = v.current_sample
        seen.append(dict(frames=frames, live=v.live, label=v.live_label.text(), shown=v.live_label.isVisible(),
                         status=v.status.text(), frame_label=v.frame_label.text(), slider_max=v.frame_slider.maximum(),
                         sample=i,
                         current=window.views.current_view_name(),
                         L=v.images["low_rank"].image.copy(), S=v.images["sparse"].image.copy(),
                         mask_title=v.panels["mask"].titleLabel.text, drawn=v.drawn))
    window.runner.partial.connect(record)


def _start(window, **values):
    window.method_panel.set_method("online-rpca")
    window.method_panel.form("online-rpca").set_values(values)
    window.run()


# -- the window -----------------------------------------------------------------------------------

@pytest.mark.slow
def test_provisional_frames_while_running_then_the_final_result(qtbot, window):
    window.set_dataset(_clip())
    seen = []
    _watch(window, seen)
    with qtbot.waitSignal(window.runFinished, timeout=120_000) as got:
        _start(window, batch_size=8)
    res = got.args[0]
    assert len(seen) >= 2, "the view was fed more than once while the run went on"
    L, S = np.asarray(res.arrays["low_rank"]), np.asarray(res.arrays["sparse"])
    done = [s["frames"].stop for s in seen]
    assert done == sorted(done) and done[0] < N
    for s in seen:
        k = s["frames"].stop
        assert s["frames"].store is None and s["frames"].arrays is not None   # results in memory
        assert s["live"] and s["shown"] and s["current"] == "decomposition" and s["drawn"] is None
        assert s["label"] == f"PROVISIONAL · frames 1–{k} of {N} processed"
        assert s["frame_label"] == f"frame {k - 1} ({k} of {k})"
        assert s["status"].startswith(f"provisional: Online robust PCA (streaming) is running, frame {k} of {k} "
                                      f"processed so far")
        assert "(provisional)" in s["mask_title"]
        # The slider reaches the processed frames only, and follows the newest.
        assert s["slider_max"] == k - 1 and s["sample"] == k - 1
        # What was drawn provisionally is what the finished run holds for that frame.
        np.testing.assert_array_equal(s["L"], L[k - 1].reshape(H, W))
        np.testing.assert_array_equal(s["S"], S[k - 1].reshape(H, W))
    v = window.views.view("decomposition")
    assert not v.live and not v.live_label.isVisible() and v.drawn is res
    assert v.frame_slider.maximum() == N - 1 and "provisional" not in v.status.text()
    assert "(provisional)" not in v.panels["mask"].titleLabel.text
    assert window.views.current_view_name() == "decomposition"
    v.set_frame(17)
    np.testing.assert_array_equal(v.images["sparse"].image, S[17].reshape(H, W))


@pytest.mark.slow
def test_the_user_looks_back_while_frames_arrive(qtbot, window):
    window.set_dataset(_clip())
    with qtbot.waitSignal(window.runner.partial, timeout=60_000):
        _start(window, batch_size=8)
    v = window.views.view("decomposition")
    v.set_frame(3)   # an early frame: it stays while later ones arrive
    seen = []
    _watch(window, seen)
    with qtbot.waitSignal(window.runFinished, timeout=120_000) as got:
        pass
    S = np.asarray(got.args[0].arrays["sparse"])
    assert seen and all(s["sample"] == 3 and s["slider_max"] == s["frames"].stop - 1 for s in seen)
    for s in seen:
        np.testing.assert_array_equal(s["S"], S[3].reshape(H, W))


@pytest.mark.slow
def test_cancel_leaves_no_view_claiming_a_result(qtbot, window):
    window.set_dataset(_clip())
    with qtbot.waitSignal(window.runner.partial, timeout=60_000):
        _start(window, batch_size=8)
    v = window.views.view("decomposition")
    assert v.live and window.views.current_view_name() == "decomposition"
    with qtbot.waitSignal(window.runCancelled, timeout=5000):
        qtbot.mouseClick(window.method_panel.cancel_button, Qt.MouseButton.LeftButton)
    qtbot.wait(600)   # late messages of the cancelled run must not bring it back
    assert not v.live and not v.live_label.isVisible() and v.drawn is None
    assert window.state.result("online-rpca") is None
    assert not v.available() and not window.views.isTabVisible(window.views.indexOf(v))
    assert all(img.image is None for img in v.images.values())


@pytest.mark.slow
def test_cancel_after_an_earlier_run_shows_that_run_as_it_is(qtbot, window, tmp_path):
    window.set_dataset(_clip())
    with qtbot.waitSignal(window.runFinished, timeout=120_000) as got:
        _start(window, batch_size=40)
    first = got.args[0]
    with qtbot.waitSignal(window.runner.partial, timeout=60_000):
        _start(window, batch_size=8)
    v = window.views.view("decomposition")
    assert v.live and v.drawn is None
    with pytest.raises(ValueError, match="while it runs"):   # no figure export names the wrong run
        window.views.export_figure(str(tmp_path / "f.png"), view="decomposition")
    with qtbot.waitSignal(window.runCancelled, timeout=5000):
        qtbot.mouseClick(window.method_panel.cancel_button, Qt.MouseButton.LeftButton)
    qtbot.wait(300)
    assert not v.live and v.drawn is first and window.state.result("online-rpca") is first
    assert v.frame_slider.maximum() == N - 1 and not v.live_label.isVisible()
    v.set_frame(100)
    np.testing.assert_array_equal(v.images["sparse"].image, np.asarray(first.arrays["sparse"])[100].reshape(H, W))


@pytest.mark.slow
def test_a_run_in_the_window_thread_feeds_the_view_the_same_way(qtbot, tmp_path):
    w = MainWindow(settings=Settings(str(tmp_path / "t.ini")), methods=dict(METHODS, **{"online-rpca": PACED}),
                   isolation="thread")
    qtbot.addWidget(w)
    w.show()
    try:
        w.set_dataset(_clip())
        seen = []
        _watch(w, seen)
        with qtbot.waitSignal(w.runFinished, timeout=120_000) as got:
            _start(w, batch_size=8)
        S = np.asarray(got.args[0].arrays["sparse"])
        assert seen and all(s["live"] for s in seen)
        for s in seen:
            np.testing.assert_array_equal(s["S"], S[s["frames"].stop - 1].reshape(H, W))
        assert not w.views.view("decomposition").live
    finally:
        w.close()


@pytest.mark.slow
def test_video_out_of_core_is_fed_from_its_zarr_store(qtbot, window, tmp_path):
    pytest.importorskip("av")
    pytest.importorskip("zarr")
    from tests.robustcore.datasets.test_video import write_clip
    n, h, w = 96, 48, 64
    rng = np.random.default_rng(1)
    frames = np.repeat(rng.integers(40, 120, size=(1, h, w)).astype(np.uint8), n, axis=0)
    for k in range(n):
        frames[k, 10:22, (k % 50):(k % 50) + 12] = 250   # a moving bright square
    path = write_clip(tmp_path / "clip.mp4", frames, pix_fmt="yuv444p", options={"qp": "0"})
    window.settings.set_memory_budget(1 << 20)   # results of 96 x 3072 px take 2.7 MB: a Zarr store
    with qtbot.waitSignal(window.datasetLoaded, timeout=60_000):
        window.open_out_of_core(str(path))
    seen = []
    _watch(window, seen)
    with qtbot.waitSignal(window.runFinished, timeout=120_000) as got:
        _start(window, batch_size=8)
    res = got.args[0]
    S = res.arrays["sparse"]
    assert not isinstance(S, np.ndarray)   # read from the finished store
    assert seen
    for s in seen:
        fr = s["frames"]
        assert fr.arrays is None and fr.store.endswith(".zarr.partial")   # only the range and the path
        assert s["live"] and s["label"].startswith("PROVISIONAL")
        np.testing.assert_array_equal(s["S"], np.asarray(S[fr.stop - 1]).reshape(h, w))
    assert not window.views.view("decomposition").live


# -- the parts ------------------------------------------------------------------------------------

class _Sink:
    """What FrameAnnouncer reads of a FrameSink."""

    def __init__(self, n=10, d=4, path=None):
        self.n_frames, self.n_features, self.live_path = n, d, path
        self.path = None if path is None else path.removesuffix(".partial")
        self.data = {f: np.arange(n * d, dtype=np.float32).reshape(n, d) * (1 + k)
                     for k, f in enumerate(("low_rank", "sparse"))}

    def read(self, field, start, stop):
        return self.data[field][start:stop]


def test_announcer_sends_at_once_then_throttles_and_never_skips_rows():
    sent = []
    ann = FrameAnnouncer(sent.append, interval=3600)
    sink = _Sink()
    ann(0, 2, sink)
    ann(2, 4, sink)        # within the interval: carried by the next message
    assert [(m.start, m.stop) for m in sent] == [(0, 2)]
    ann._last = None       # (the interval has passed)
    ann(4, 7, sink)
    assert [(m.start, m.stop) for m in sent] == [(0, 2), (2, 7)]
    np.testing.assert_array_equal(sent[1].arrays["sparse"], sink.data["sparse"][2:7])
    assert sent[1].store is None and set(sent[1].arrays) == {"low_rank", "sparse"}
    on_disk = []
    FrameAnnouncer(on_disk.append)(0, 5, _Sink(path="/x/r.zarr.partial"))
    assert on_disk[0].arrays is None and on_disk[0].store == "/x/r.zarr.partial" and on_disk[0].stop == 5
    assert on_disk[0].final_store == "/x/r.zarr"


def test_live_frames_in_memory_refuse_unprocessed_and_out_of_order_rows():
    live = LiveFrames(10, 4)
    sink = _Sink()
    live.update(FramesSoFar(10, 4, 0, 3, arrays={f: sink.read(f, 0, 3) for f in LiveFrames.FIELDS}))
    np.testing.assert_array_equal(live.read("sparse", 2), sink.data["sparse"][2])
    with pytest.raises(IndexError, match="not processed yet"):
        live.read("sparse", 3)
    with pytest.raises(ValueError, match="arrived after"):
        live.update(FramesSoFar(10, 4, 5, 7, arrays={f: sink.read(f, 5, 7) for f in LiveFrames.FIELDS}))


def test_live_frames_from_a_store_follow_it_when_it_moves_and_never_read_zeros(tmp_path):
    pytest.importorskip("zarr")
    from robustcore.bigdata import FrameSink
    sink = FrameSink(20, 6, {"low_rank": np.float32, "sparse": np.float32}, path=tmp_path / "r.zarr")
    rows = np.arange(60, dtype=np.float32).reshape(10, 6) + 1
    sink.write(0, low_rank=rows, sparse=-rows)
    sink.flush()
    live = LiveFrames(20, 6)
    live.update(FramesSoFar(20, 6, 0, sink.n_written, store=str(sink.live_path), final_store=str(sink.path)))
    np.testing.assert_array_equal(live.read("sparse", 9), -rows[9])
    sink.write(10, low_rank=rows, sparse=rows)
    sink.close()   # the store moves to r.zarr: the same rows are read there
    np.testing.assert_array_equal(live.read("sparse", 9), -rows[9])
    assert live.store == tmp_path / "r.zarr"
    # A cancelled run's store is deleted: its rows are gone, never read as zeros.
    other = FrameSink(20, 6, {"low_rank": np.float32, "sparse": np.float32}, path=tmp_path / "c.zarr")
    other.write(0, low_rank=rows, sparse=rows)
    other.flush()
    live = LiveFrames(20, 6)
    live.update(FramesSoFar(20, 6, 0, 10, store=str(other.live_path), final_store=str(other.path)))
    np.testing.assert_array_equal(live.read("low_rank", 3), rows[3])
    other.abort()
    with pytest.raises(FrameGone):
        live.read("low_rank", 3)


def test_a_first_message_read_after_the_store_moved_or_went_is_followed_or_dropped(tmp_path):
    """The window may read a run's first message only after the run finished (its store moved
    to the final place) or was cancelled (store deleted): the rows are read in the final place,
    or FrameGone is raised (the view then draws nothing), never an error out of the slot."""
    pytest.importorskip("zarr")
    from robustcore.bigdata import FrameSink
    rows = np.arange(60, dtype=np.float32).reshape(10, 6) + 1
    sink = FrameSink(10, 6, {"low_rank": np.float32, "sparse": np.float32}, path=tmp_path / "r.zarr")
    sink.write(0, low_rank=rows, sparse=-rows)
    sink.flush()
    late = FramesSoFar(10, 6, 0, 10, store=str(sink.live_path), final_store=str(sink.path))
    sink.close()
    live = LiveFrames(10, 6)
    live.update(late)
    assert live.store == tmp_path / "r.zarr"
    np.testing.assert_array_equal(live.read("sparse", 4), -rows[4])
    gone = FrameSink(10, 6, {"low_rank": np.float32, "sparse": np.float32}, path=tmp_path / "c.zarr")
    gone.write(0, low_rank=rows, sparse=rows)
    gone.flush()
    late = FramesSoFar(10, 6, 0, 10, store=str(gone.live_path), final_store=str(gone.path))
    gone.abort()
    with pytest.raises(FrameGone):
        LiveFrames(10, 6).update(late)
