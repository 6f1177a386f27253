"""The streaming method keeps its results within the memory budget's share for results, whether
the video was opened out of core or loaded into memory (issue 36: 2,000 frames peaked at 1.7 GB
with results under the whole budget held in memory)."""
import numpy as np
import pytest

from robustcore import datasets
from robustcore.bigdata import FrameSink, open_lazy, settings
from robustcore.bigdata._rows import RESULTS_SHARE, held_bytes
from robustcore.methods import get_method

FRAMES, H, W = 40, 24, 32


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    av = pytest.importorskip("av")
    from robustcore.bigdata.synthetic import MovingObjects
    frames, _ = MovingObjects(H, W, n_objects=2, seed=3).frames(0, FRAMES)
    path = tmp_path_factory.mktemp("stream") / "clip.mp4"
    with av.open(str(path), "w") as c:
        s = c.add_stream("libx264", rate=25)
        s.width, s.height, s.pix_fmt, s.options = W, H, "yuv420p", {"qp": "0"}
        for a in frames:
            for pk in s.encode(av.VideoFrame.from_ndarray(np.repeat(a[..., None], 3, 2), format="rgb24")):
                c.mux(pk)
        for pk in s.encode():
            c.mux(pk)
    return path


def _need():
    from robustcore.subspace.online_rpca import OnlineRPCA
    return FrameSink.estimate_bytes(FRAMES, H * W, OnlineRPCA.FIELDS)


@pytest.mark.slow
@pytest.mark.parametrize("lazy", [True, False], ids=["out of core", "in memory"])
def test_results_beyond_the_share_go_to_a_store_either_way(clip, tmp_path, lazy):
    """A budget the results fit under, but not under its share for results: stored, with the
    numbers of a run that held them in memory."""
    need = _need()
    budget = int(need / RESULTS_SHARE * 0.9)      # need < budget, need > share
    assert need < budget < need / RESULTS_SHARE
    import gc
    gc.collect()
    m = get_method("online-rpca")
    data = open_lazy(clip) if lazy else datasets.load(clip)
    with settings(memory_budget=budget, store_dir=tmp_path / "store"):
        stored = m.run(data, {"batch_size": 20})
    assert "online-rpca" in stored.summary["results in"]
    assert not isinstance(stored.arrays["low_rank"], np.ndarray)
    with settings(memory_budget=int((held_bytes() + 2 * need) / RESULTS_SHARE)):
        held = m.run(open_lazy(clip) if lazy else datasets.load(clip), {"batch_size": 20})
    assert held.summary["results in"] == "memory" and isinstance(held.arrays["low_rank"], np.ndarray)
    np.testing.assert_array_equal(np.asarray(stored.arrays["mask"][:]), held.arrays["mask"])
    np.testing.assert_array_equal(np.asarray(stored.arrays["low_rank"][:]), held.arrays["low_rank"])
    np.testing.assert_array_equal(stored.flags["outlier"], held.flags["outlier"])


def test_results_held_in_memory_count_against_the_share(clip):
    """Results kept in memory are counted while they live, so a second run beside them is
    stored when both would pass the share (as two tables' per-row results are)."""
    import gc
    gc.collect()
    need = _need()
    before = held_bytes()   # (results of other tests still alive)
    m = get_method("online-rpca")
    with settings(memory_budget=int((before + 1.5 * need) / RESULTS_SHARE)):
        first = m.run(open_lazy(clip), {"batch_size": 20})
        assert first.summary["results in"] == "memory"
        assert held_bytes() - before >= need
        second = m.run(open_lazy(clip), {"batch_size": 20})
    assert second.summary["results in"] != "memory"
    np.testing.assert_array_equal(np.asarray(second.arrays["mask"][:]), first.arrays["mask"])
