"""Data opened out of core run through the registry like data in memory, with the same numbers."""
import numpy as np
import pytest

from robustcore import datasets
from robustcore.bigdata import open_lazy, settings
from robustcore.methods import get_method


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    rng = np.random.default_rng(2)
    X = rng.standard_normal((3000, 3)) @ rng.standard_normal((3, 9)) + 0.2 * rng.standard_normal((3000, 9)) + 1
    X[:200] = 3 * rng.standard_normal((200, 9))
    p = tmp_path_factory.mktemp("lazy") / "table.npy"
    np.save(p, X)
    return p


@pytest.mark.parametrize("method,params", [("pca", {"n_components": 3}), ("residual", {"n_components": 3}),
                                           ("coherence-pursuit", {"n_components": 3})])
def test_lazy_runs_give_the_in_memory_numbers(table, method, params):
    m = get_method(method)
    mem = m.run(datasets.load(table), params)
    lazy = m.run(open_lazy(table, chunk_rows=400), params)
    assert set(lazy.sample_scores) == set(mem.sample_scores)
    for k, v in mem.sample_scores.items():
        np.testing.assert_allclose(lazy.sample_scores[k], v, rtol=1e-8, atol=1e-10 * np.abs(v).max())
    for k, v in mem.flags.items():
        np.testing.assert_array_equal(np.asarray(lazy.flags[k]), v)
    for k in ("components", "mean", "projection"):
        np.testing.assert_allclose(lazy.all_arrays()[k], mem.all_arrays()[k], rtol=1e-8, atol=1e-10)
    for k in ("flagged", "SPE limit", "T2 limit"):
        assert lazy.summary[k] == pytest.approx(mem.summary[k], rel=1e-8)
    # the same estimator class fits both (no out-of-core twin)
    assert lazy.summary["out of core"] is True and type(lazy.estimator) is type(mem.estimator)


def test_memory_only_methods_refuse_lazy_data(table):
    with pytest.raises(ValueError, match="needs the data in memory.*pca, coherence-pursuit, robpca, residual"):
        get_method("pcp").run(open_lazy(table), {})


def test_lazy_dataset_has_no_x_but_describes_itself(table):
    ds = open_lazy(table, chunk_rows=1000)
    with pytest.raises(ValueError, match="out of core"):
        _ = ds.X
    info = ds.summary()
    assert info["samples"] == 3000 and info["chunking"] == "3 blocks of 1,000 rows" and info["out of core"]
    np.testing.assert_array_equal(ds.dense(), np.load(table))
    with pytest.raises(datasets.LoadError, match="max_bytes"):
        ds.dense(max_bytes=100)


@pytest.mark.slow
def test_online_rpca_on_a_video_out_of_core_equals_in_memory(tmp_path):
    av = pytest.importorskip("av")
    from robustcore.bigdata.synthetic import MovingObjects
    frames, _ = MovingObjects(32, 48, n_objects=2, seed=4).frames(0, 90)
    path = tmp_path / "m.mp4"
    with av.open(str(path), "w") as c:
        s = c.add_stream("libx264", rate=25)
        s.width, s.height, s.pix_fmt, s.options = 48, 32, "yuv420p", {"qp": "0"}
        for a in frames:
            for pk in s.encode(av.VideoFrame.from_ndarray(np.repeat(a[..., None], 3, 2), format="rgb24")):
                c.mux(pk)
        for pk in s.encode():
            c.mux(pk)
    m = get_method("online-rpca")
    mem = m.run(datasets.load(path), {"batch_size": 30})
    video = open_lazy(path)   # opened under the default budget: one frame fits it, not 1000 bytes
    with settings(memory_budget=1000, store_dir=tmp_path / "store"):
        lazy = m.run(video, {"batch_size": 30})
    assert "online-rpca" in lazy.summary["results in"] and (tmp_path / "store").is_dir()
    np.testing.assert_array_equal(np.asarray(lazy.arrays["mask"][:]), mem.arrays["mask"])
    np.testing.assert_allclose(np.asarray(lazy.arrays["low_rank"][:]), mem.arrays["low_rank"])
    np.testing.assert_array_equal(lazy.flags["outlier"], mem.flags["outlier"])
    assert mem.arrays["low_rank"].shape == (90, 32 * 48) and mem.summary["frames"] == 90
