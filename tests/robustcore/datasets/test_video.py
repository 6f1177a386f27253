"""Video files through PyAV: lazy, frame-accurate, colour layouts, provenance, bad files.

Every clip is written here with PyAV; each frame carries a marker (a brightness that encodes its
frame number) so a wrong frame after a seek cannot go unnoticed.
"""
import numpy as np
import pytest

av = pytest.importorskip("av")

from robustcore import Cancelled, datasets  # noqa: E402
from robustcore.datasets import LoadError  # noqa: E402
from robustcore.datasets._video import open_video  # noqa: E402

H, W = 32, 48


def marker(k):
    return 20 + 3 * k          # distinct, exactly representable brightness per frame


def gray_frames(n):
    out = np.empty((n, H, W), np.uint8)
    for k in range(n):
        out[k] = marker(k)
        out[k, 8:16, (k % 30):(k % 30) + 8] = 250   # a moving bright square
    return out


def write_clip(path, frames, codec="libx264", rate=25, gop=5, pix_fmt="yuv420p", options=None,
               bit_rate=None):
    """frames: (n, h, w) gray or (n, h, w, 3) RGB uint8."""
    with av.open(str(path), "w") as c:
        s = c.add_stream(codec, rate=rate)
        s.width, s.height = frames.shape[2], frames.shape[1]
        s.pix_fmt = pix_fmt
        s.gop_size = gop
        if bit_rate:
            s.bit_rate = bit_rate
        if options:
            s.options = options
        for a in frames:
            rgb = a if a.ndim == 3 else np.repeat(a[..., None], 3, axis=2)
            for p in s.encode(av.VideoFrame.from_ndarray(np.ascontiguousarray(rgb), format="rgb24")):
                c.mux(p)
        for p in s.encode():
            c.mux(p)
    return path


@pytest.fixture(scope="module")
def mp4(tmp_path_factory):
    # Lossless H.264 with B-frames and a keyframe every 5 frames: seeking must land on the right frame.
    p = tmp_path_factory.mktemp("video") / "clip.mp4"
    return write_clip(p, gray_frames(60), options={"qp": "0", "bf": "2"})


def corner(rows):
    return rows.reshape(-1, H, W)[:, :4, :4].mean(axis=(1, 2))


def ids(rows):
    """Frame numbers read back from the markers (RGB -> YUV -> gray rounds by up to 1 level)."""
    c = corner(rows)
    k = np.round((c - 20) / 3).astype(int)
    assert np.abs(c - marker(k)).max() <= 1.0
    return k.tolist()


def test_lazy_open_reads_metadata_without_decoding(mp4):
    with open_video(mp4) as v:
        assert v.n_frames == 60 and v.frame_shape == (H, W) and v.channels == 1
        assert v.fps == pytest.approx(25.0)
        np.testing.assert_allclose(v.timestamps, np.arange(60) / 25.0, atol=1e-9)
        assert v._container is None            # nothing decoded (not even opened) yet
        assert v.nbytes == 60 * H * W * 8


def test_every_frame_in_order_and_exact(mp4):
    with open_video(mp4) as v:
        X = v.read()
    assert ids(X) == list(range(60))
    assert np.abs(X.reshape(-1, H, W) - gray_frames(60)).max() <= 1.0


@pytest.mark.parametrize("start", [0, 7, 23, 41, 59, 3])
def test_random_access_is_frame_accurate(mp4, start):
    with open_video(mp4) as v:
        v.read(50, 55)                         # leave the decoder somewhere else first
        got = ids(v.read(start, min(start + 3, 60)))
    assert got == list(range(start, min(start + 3, 60)))


def test_range_and_step_choose_file_frames(mp4):
    with open_video(mp4, start=4, stop=30, step=5) as v:
        np.testing.assert_array_equal(v.frame_indices, [4, 9, 14, 19, 24, 29])
        assert ids(v.read()) == v.frame_indices.tolist()
        np.testing.assert_allclose(v.timestamps, v.frame_indices / 25.0)


def test_batches_decode_only_what_is_read(mp4, monkeypatch):
    from robustcore.datasets import _video
    taken = []
    real = _video.VideoFrames._take

    def counting(self):
        out = real(self)
        taken.append(out[0])
        return out
    monkeypatch.setattr(_video.VideoFrames, "_take", counting)
    with open_video(mp4) as v:
        it = v.iter_batches(8)
        s, rows = next(it)
        assert s == 0 and rows.shape == (8, H * W)
        assert max(taken) < 8                  # the rest of the file is still undecoded
        starts = [s] + [s for s, _ in it]
    assert starts == list(range(0, 60, 8)) and max(taken) == 59


def test_progress_cancels_a_batch_loop(mp4):
    seen = []

    def progress(f, msg):
        seen.append(f)
        return len(seen) < 2
    with open_video(mp4) as v, pytest.raises(Cancelled):
        for _ in v.iter_batches(10, progress=progress):
            pass
    assert seen == pytest.approx([10 / 60, 20 / 60])


def test_downscale_on_read_averages_blocks(tmp_path):
    frames = np.zeros((4, 32, 48), np.uint8)
    frames[:, :, :24] = 200                        # left half bright, right half dark
    p = write_clip(tmp_path / "half.mp4", frames, options={"qp": "0"})
    with open_video(p, scale=0.5) as v:
        assert v.frame_shape == (16, 24)
        img = v.read(0, 1).reshape(16, 24)
    assert np.all(np.abs(img[:, :10] - 200) <= 2) and np.all(img[:, 14:] <= 2)


def rgb_frames(n):
    out = np.zeros((n, H, W, 3), np.uint8)
    for k in range(n):
        out[k, ..., 0] = 200
        out[k, ..., 1] = 40 + k
        out[k, :, W // 2:, 2] = 120
    return out


def test_colour_planar_and_single_channels_exact(tmp_path):
    # FFV1 in Matroska stores RGB losslessly, so every channel value must come back exactly.
    frames = rgb_frames(6)
    p = write_clip(tmp_path / "colour.mkv", frames, codec="ffv1", pix_fmt="bgr0")
    with open_video(p, color="rgb") as v:
        assert v.channels == 3 and v.display_shape == (3 * H, W)
        X = v.read()
    planes = X.reshape(6, 3, H, W)
    np.testing.assert_array_equal(planes, frames.transpose(0, 3, 1, 2).astype(float))
    for name, c in (("red", 0), ("green", 1), ("blue", 2)):
        with open_video(p, color=name) as v:
            np.testing.assert_array_equal(v.read().reshape(6, H, W), frames[..., c].astype(float))
    with open_video(p, color="luminance") as v:
        Y = v.read().reshape(6, H, W)
    luma = frames.astype(float) @ np.array([0.299, 0.587, 0.114])
    assert np.abs(Y - luma).max() <= 2.0            # 8-bit Y' of BT.601, rounded twice


@pytest.mark.parametrize("name,codec,pix_fmt", [("clip.avi", "mpeg4", "yuv420p"),
                                                 ("clip.mov", "libx264", "yuv420p"),
                                                 ("clip.mkv", "libx264", "yuv420p")])
def test_containers(tmp_path, name, codec, pix_fmt):
    opts = {"qp": "0"} if codec == "libx264" else None
    p = write_clip(tmp_path / name, gray_frames(12), codec=codec, pix_fmt=pix_fmt, options=opts,
                   bit_rate=20_000_000)
    assert datasets.detect_format(p) == "video"
    with open_video(p) as v:
        X = v.read()
        assert v.n_frames == 12
        again = v.read(9, 12)
    assert np.abs(corner(X) - marker(np.arange(12))).max() <= 3
    np.testing.assert_array_equal(again, X[9:12])


def test_loader_gives_dataset_with_rate_and_timestamps(mp4):
    ds = datasets.load(mp4, step=3, stop=30)
    assert ds.X.shape == (10, H * W) and ds.image_shape == (H, W)
    assert ds.sample_ids[1] == "frame 3 @ 0.120 s"
    det = ds.provenance.details
    assert det["fps"] == pytest.approx(25.0) and det["frame_indices"] == list(range(0, 30, 3))
    assert det["timestamps"][1] == pytest.approx(0.12)
    assert ds.provenance.options["step"] == 3 and ds.provenance.sha256
    assert ds.provenance.to_dict()["details"]["codec"] == "h264"


def test_loader_refuses_over_budget_before_decoding(mp4):
    # The rows, plus decoding one frame (the stored frame, its conversion, one float64 row).
    assert datasets.estimate_memory(mp4) == 60 * H * W * 8 + H * W * 8 + H * W * 9
    with pytest.raises(LoadError, match="max_bytes"):
        datasets.load(mp4, max_bytes=10_000)


@pytest.mark.parametrize("color,width", [("luminance", H * W), ("rgb", 3 * H * W)])
def test_loader_checks_max_features_before_decoding(mp4, tmp_path, monkeypatch, color, width):
    from robustcore.datasets import _video
    if color == "rgb":
        mp4 = write_clip(tmp_path / "c.mkv", rgb_frames(3), codec="ffv1", pix_fmt="bgr0")

    def no_decoding(self):
        raise AssertionError("a frame was decoded before the width was checked")
    monkeypatch.setattr(_video.VideoFrames, "_take", no_decoding)
    with pytest.raises(LoadError, match=f"{width:,} features.*max_features={width - 1:,}"):
        datasets.load(mp4, color=color, max_features=width - 1)


def test_loader_names_pixels_lazily(mp4):
    from robustcore.datasets._limits import numbered
    ds = datasets.load(mp4, stop=2, max_features=H * W)
    # One name per pixel would be one Python string each: they are made on demand instead.
    assert isinstance(ds.feature_names, numbered) and len(ds.feature_names) == H * W
    assert ds.feature_names[0] == "p0" and ds.feature_names[-1] == f"p{H * W - 1}"


def test_rgb_dataset_draws_as_stacked_planes(tmp_path):
    p = write_clip(tmp_path / "c.mkv", rgb_frames(3), codec="ffv1", pix_fmt="bgr0")
    ds = datasets.load(p, color="rgb")
    assert ds.image_shape == (3 * H, W) and ds.X.shape == (3, 3 * H * W)


@pytest.mark.parametrize("content", [b"\x00\x00\x00\x18ftypmp42" + b"\x00" * 400, b"garbage" * 100])
def test_damaged_file_is_a_clear_error(tmp_path, content):
    p = tmp_path / "bad.mp4"
    p.write_bytes(content)
    with pytest.raises(LoadError, match="bad.mp4"):
        datasets.load(p, format="video")


def test_truncated_file_is_a_clear_error(mp4, tmp_path):
    data = mp4.read_bytes()
    p = tmp_path / "cut.mp4"
    p.write_bytes(data[: len(data) // 2])
    with pytest.raises(LoadError):
        datasets.load(p)


@pytest.mark.parametrize("opts,match", [({"start": 60}, "past the end"), ({"start": 10, "stop": 5}, "stop"),
                                        ({"color": "cmyk"}, "color"), ({"scale": 1.5}, "scale")])
def test_bad_options(mp4, opts, match):
    with pytest.raises(LoadError, match=match):
        datasets.load(mp4, **opts)
