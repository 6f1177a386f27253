"""A truncated video (issue 34.10) loads the frames that are in the file, exactly those of the
whole file, and says that the file ends early; one with no decodable frame left is refused."""
import numpy as np
import pytest

av = pytest.importorskip("av")

from robustcore import datasets  # noqa: E402
from robustcore.datasets import LoadError  # noqa: E402

from .test_video import gray_frames  # noqa: E402


def faststart_clip(path, n=40):
    """An MP4 whose index (moov) comes first: cut anywhere, it still announces every frame."""
    with av.open(str(path), "w", options={"movflags": "faststart"}) as c:
        s = c.add_stream("libx264", rate=25)
        s.width, s.height, s.pix_fmt = 48, 32, "yuv420p"
        s.options = {"qp": "0"}
        for a in gray_frames(n):
            for p in s.encode(av.VideoFrame.from_ndarray(np.repeat(a[..., None], 3, axis=2), format="rgb24")):
                c.mux(p)
        for p in s.encode():
            c.mux(p)
    return path


@pytest.mark.slow
@pytest.mark.parametrize("keep", [0.7, 0.95])
def test_a_truncated_video_loads_the_frames_present_and_says_it_ends_early(tmp_path, keep):
    whole = faststart_clip(tmp_path / "whole.mp4")
    full = datasets.load(whole)
    assert full.n_samples == 40 and not full.warnings
    data = whole.read_bytes()
    cut = tmp_path / "cut.mp4"
    cut.write_bytes(data[: int(len(data) * keep)])
    ds = datasets.load(cut)
    assert 0 < ds.n_samples < 40
    np.testing.assert_array_equal(ds.X, full.X[: ds.n_samples])     # the frames present, as they were
    assert ds.warnings == [f"cut.mp4 ends early: its header announces 40 frames, {ds.n_samples} are in the "
                           f"file and were read; it may be truncated (copy it again for the rest)"]


def test_a_video_cut_before_its_first_frame_decodes_is_refused(tmp_path):
    data = faststart_clip(tmp_path / "whole.mp4").read_bytes()
    cut = tmp_path / "cut.mp4"
    cut.write_bytes(data[: int(len(data) * 0.45)])
    with pytest.raises(LoadError, match="cut.mp4 (ends early|holds a video stream with no frames)"):
        datasets.load(cut)


def test_a_truncated_video_opened_out_of_core_says_it_ends_early(tmp_path):
    """The note travels with the lazy data set too (--lazy), as in memory."""
    from robustcore.bigdata import open_lazy
    data = faststart_clip(tmp_path / "whole.mp4").read_bytes()
    cut = tmp_path / "cut.mp4"
    cut.write_bytes(data[: int(len(data) * 0.7)])
    in_memory = datasets.load(cut)
    lazy = open_lazy(cut)
    try:
        assert lazy.n_samples == in_memory.n_samples
        assert lazy.warnings == in_memory.warnings and "ends early" in lazy.warnings[0]
        assert lazy.summary()["warnings"] == lazy.warnings
    finally:
        lazy.close()
