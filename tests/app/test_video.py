"""The decomposition as a video (original | L | S | mask per frame): MP4 through PyAV, GIF
through Pillow, or PNG images; from the window and from the command line."""
import os

import numpy as np
import pytest
from PIL import Image

from app import palette
from app.cli import main as cli_main
from app.video import check_video, compose_frame, export_video, frame_scales
from robustcore.datasets import Dataset
from robustcore.methods import get_method


@pytest.fixture(scope="module")
def video():
    """Eight 12 x 16 frames: a still background and a bright square moving across it."""
    rng = np.random.default_rng(0)
    bg = rng.uniform(40, 160, (12, 16))
    frames = []
    for t in range(8):
        f = bg.copy()
        f[3:6, 2 * t:2 * t + 3] = 250.0
        frames.append(f.ravel())
    order = np.array([3, 0, 1, 2, 4, 5, 6, 7])  # stored out of time order on purpose
    X = np.array(frames)[order]
    ds = Dataset(X=X, name="square", image_shape=(12, 16), frame_order=order)
    return ds, get_method("pcp").run(ds, {})


def _panels(frame, shape):
    """Cut a composed frame back into its four panels (as the viewer sees them)."""
    from app.video import _GAP, _TITLE_HEIGHT
    h, w = shape
    k = (frame.shape[0] - _TITLE_HEIGHT - _GAP) // h
    out = []
    for i in range(4):
        x0 = _GAP + i * (w * k + _GAP)
        out.append(frame[_TITLE_HEIGHT:_TITLE_HEIGHT + h * k:k, x0:x0 + w * k:k])
    return out


def test_a_frame_shows_original_low_rank_sparse_and_mask(video):
    ds, res = video
    sc = frame_scales(ds, res)
    i = 2
    frame = compose_frame(ds.X[i], res.arrays["low_rank"][i], res.arrays["sparse"][i], ds.image_shape, sc)
    assert frame.shape[0] % 2 == 0 and frame.shape[1] % 2 == 0
    orig, low, sparse, mask = _panels(frame, ds.image_shape)
    np.testing.assert_array_equal(orig[..., 0], palette.to_gray(ds.X[i], sc.gray).reshape(12, 16))
    np.testing.assert_array_equal(low[..., 1], palette.to_gray(res.arrays["low_rank"][i], sc.gray).reshape(12, 16))
    np.testing.assert_array_equal(sparse, palette.to_diverging(res.arrays["sparse"][i], sc.s_limit).reshape(12, 16, 3))
    fg = np.abs(res.arrays["sparse"][i]).reshape(12, 16) > sc.threshold
    assert (fg.any() and np.all(mask[fg] == palette.MASK_RGB)
            and not np.any(np.all(mask[~fg] == palette.MASK_RGB, axis=-1)))


@pytest.mark.parametrize("kind", ["mp4", "gif", "png"])
def test_every_format_holds_every_frame_in_time_order(video, tmp_path, kind):
    ds, res = video
    path = tmp_path / ("frames" if kind == "png" else f"d.{kind}")
    written = export_video(path, ds, res)
    if kind == "png":
        assert len(written) == 8
        first = np.asarray(Image.open(written[0]).convert("RGB"))
    elif kind == "gif":
        with Image.open(path) as im:
            assert im.n_frames == 8
            first = np.asarray(im.convert("RGB"))
    else:
        import av
        with av.open(str(path)) as c:
            decoded = [f.to_ndarray(format="rgb24") for f in c.decode(video=0)]
        assert len(decoded) == 8
        first = decoded[0]
    # The first frame in time order is sample 1 (frame_order = 0); the square sits at the left.
    orig = _panels(first, ds.image_shape)[0].astype(float)
    expect = palette.to_gray(ds.X[1], frame_scales(ds, res).gray).reshape(12, 16)
    assert np.abs(orig[..., 0] - expect).mean() < (4 if kind == "mp4" else 2.5)


def test_what_an_export_needs_is_checked_before_writing(video, tmp_path):
    ds, res = video
    tmp_path = tmp_path / "out"
    tmp_path.mkdir()
    table = Dataset(X=np.random.default_rng(0).standard_normal((30, 5)), name="table")
    with pytest.raises(ValueError, match="needs image data"):
        check_video(tmp_path / "a.gif", table, get_method("pcp").run(table, {}))
    with pytest.raises(ValueError, match=r"needs a low-rank \+ sparse result"):
        check_video(tmp_path / "a.gif", ds, get_method("pca").run(ds, {}))
    with pytest.raises(ValueError, match="must end in .mp4 or .gif"):
        check_video(tmp_path / "a.avi", ds, res)
    (tmp_path / "keep.gif").write_bytes(b"mine")
    with pytest.raises(FileExistsError):
        export_video(tmp_path / "keep.gif", ds, res)
    assert (tmp_path / "keep.gif").read_bytes() == b"mine"
    assert sorted(os.listdir(tmp_path)) == ["keep.gif"]


@pytest.mark.slow
def test_cli_writes_the_video_and_refuses_what_it_cannot(tmp_path, capsys):
    out = tmp_path / "o"
    code = cli_main(["run", "--demo", "escalator", "--method", "pca", "--video", "gif", "--out", str(out), "-q"])
    assert code == 2 and "--video writes the robust PCA decomposition: add --method pcp" in capsys.readouterr().err
    assert not out.exists()
    code = cli_main(["run", "--demo", "iris", "--method", "pcp", "--video", "gif", "--out", str(out), "-q"])
    assert code == 2 and "--video needs image data" in capsys.readouterr().err
    assert not out.exists()
    code = cli_main(["run", "--demo", "usps-1-vs-8", "--method", "pcp", "--param", "max_iter=30",
                     "--video", "mp4", "--out", str(out), "-q"])
    assert code == 0, capsys.readouterr().err
    import av
    with av.open(str(out / "pcp-decomposition.mp4")) as c:
        assert c.streams.video[0].frames == 314


@pytest.mark.slow
def test_window_exports_the_video_with_the_views_threshold(qtbot, tmp_path, video):
    from app.main_window import MainWindow
    from app.settings import Settings
    ds, res = video
    w = MainWindow(settings=Settings(str(tmp_path / "s.ini")))
    qtbot.addWidget(w)
    w.show()
    w.set_dataset(ds)
    w.method_panel.set_method("pcp")
    with qtbot.waitSignal(w.runFinished, timeout=60000) as blocker:
        w.run()
    result = blocker.args[0]
    view = w.views.show_view("decomposition")
    view.set_threshold(55.0)
    with qtbot.waitSignal(w.videoExported, timeout=60000) as done:
        w.export_video_to(str(tmp_path / "frames"))
    files = done.args[0]
    assert len(files) == 8
    # The mask panel of the exported frame is the view's mask at its threshold.
    k = int(np.flatnonzero(ds.frame_order == 0)[0])
    panel = _panels(np.asarray(Image.open(files[0]).convert("RGB")), ds.image_shape)[3]
    fg = np.abs(result.arrays["sparse"][k]).reshape(12, 16) > 55.0
    assert fg.any() and np.array_equal(np.all(panel == palette.MASK_RGB, axis=-1), fg)
    w.close()
