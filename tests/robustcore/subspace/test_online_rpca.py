"""Streaming robust PCA (OR-PCA): planted truth, agreement with batch PCP, bounded memory,
progress and Cancel, results in memory or in a Zarr store."""
import numpy as np
import pytest

from robustcore import Cancelled
from robustcore.bigdata import ArrayFrames, FrameSink, open_frame_store
from robustcore.bigdata.synthetic import MovingObjects
from robustcore.compare import principal_angles
from robustcore.subspace.online_rpca import OnlineRPCA
from robustcore.subspace.pcp import PCP


def fmeasure(pred, truth):
    pred, truth = np.asarray(pred, bool), np.asarray(truth, bool)
    return 2 * np.sum(pred & truth) / (pred.sum() + truth.sum())


@pytest.fixture(scope="module")
def planted():
    """Rank-3 frames (d = 200) with 5 % gross sparse errors and a little dense noise."""
    rng = np.random.default_rng(0)
    n, d, r = 2400, 200, 3
    U0 = np.linalg.qr(rng.standard_normal((d, r)))[0]
    L0 = (rng.standard_normal((n, r)) * [3, 2, 1.5] * np.sqrt(d) / 10) @ U0.T
    support = rng.random((n, d)) < 0.05
    S0 = np.zeros((n, d))
    S0[support] = rng.choice([-1, 1], support.sum()) * rng.uniform(2, 4, support.sum())
    X = L0 + S0 + 0.01 * rng.standard_normal((n, d))
    return X, U0, L0, support


def test_planted_subspace_and_support_converge(planted):
    X, U0, L0, support = planted
    est = OnlineRPCA(n_components=3, batch_size=50, forgetting=1.0)
    angles = []
    for s in range(0, X.shape[0], 50):
        est.partial_fit(X[s:s + 50])
        angles.append(principal_angles(est.components_, U0.T).max())
    # The largest principal angle to the true subspace shrinks as frames arrive.
    assert angles[-1] < 0.5 < angles[0]
    assert angles[-1] < angles[len(angles) // 4] < angles[0]
    L, S = est.decompose(X[-400:])
    assert fmeasure(np.abs(S) > 0.5, support[-400:]) > 0.999
    assert np.linalg.norm(L - L0[-400:]) / np.linalg.norm(L0[-400:]) < 0.05
    # The state is O(d k): it does not grow with the frames seen.
    assert est.basis_.shape == (200, 3) and [a.shape for a in est.stats_] == [(3, 3), (200, 3)]
    assert est.n_frames_seen_ == X.shape[0]


def test_fit_streams_the_same_numbers_as_partial_fit(planted):
    X = planted[0][:500]
    # (fit takes the data range from the whole source, partial_fit from its first batch: fix it)
    a = OnlineRPCA(n_components=3, batch_size=100, data_scale=10.0).fit(X)
    b = OnlineRPCA(n_components=3, batch_size=100, data_scale=10.0)
    for s in range(0, 500, 100):
        b.partial_fit(X[s:s + 100])
    np.testing.assert_allclose(a.basis_, b.basis_, rtol=1e-12, atol=1e-12)
    assert a.sink_.read("low_rank").shape == (500, 200) and a.sink_.read("mask").dtype == bool
    h = a.history_
    assert len(h["frames"]) == 5 and h["frames"][-1] == 500 and all(0 <= v <= 1 for v in h["basis_change"])


@pytest.fixture(scope="module")
def clip():
    scene = MovingObjects(40, 56, n_objects=3, noise=2.0, illumination=0.1, period=400, seed=3)
    frames, masks = scene.frames(0, 400)
    return frames.reshape(400, -1).astype(float), masks.reshape(400, -1)


@pytest.mark.slow
def test_foreground_agrees_with_batch_pcp(clip):
    """On a clip that fits in memory the streaming masks agree with batch PCP's: F >= 0.9
    (measured 0.98), and each finds the planted objects (F >= 0.9 against the truth)."""
    X, truth = clip
    est = OnlineRPCA().fit(ArrayFrames(X, frame_shape=(40, 56), value_range=(0, 255)))
    thr = est.mask_threshold_
    assert thr == pytest.approx(25.5)
    pcp_mask = np.abs(PCP().fit(X).sparse_) > thr
    mask = est.sink_.read("mask")
    assert fmeasure(mask, pcp_mask) >= 0.9
    assert fmeasure(mask, truth) >= 0.9 and fmeasure(pcp_mask, truth) >= 0.9
    # L is exactly rank k, S is sparse.
    assert np.linalg.matrix_rank(est.sink_.read("low_rank")[:64].astype(float), tol=1e-3) == 1
    assert np.mean(est.sink_.read("sparse") != 0) < 0.5


class CountingFrames(ArrayFrames):
    def __init__(self, X, **kw):
        super().__init__(X, **kw)
        self.reads = []

    def _read(self, start, stop):
        self.reads.append(stop - start)
        return super()._read(start, stop)


def test_reads_one_batch_at_a_time_and_reports_per_batch(clip):
    X, _ = clip
    src = CountingFrames(X[:200], frame_shape=(40, 56))
    seen = []
    OnlineRPCA(batch_size=32).fit(src, progress=lambda f, m: seen.append((f, m)))
    assert max(src.reads) == 32 and sum(src.reads) == 200
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert len(fractions) == 7 and "frame 200 of 200" in seen[-1][1]


def test_cancel_leaves_it_unfitted_and_removes_the_partial_store(clip, tmp_path):
    X, _ = clip
    est = OnlineRPCA(batch_size=50)
    store = tmp_path / "out.zarr"
    calls = []

    def progress(f, m):
        calls.append(f)
        return len(calls) < 3
    with pytest.raises(Cancelled):
        est.fit(X, progress=progress, store=store)
    assert not hasattr(est, "basis_") and not store.exists()
    assert not (tmp_path / "out.zarr.partial").exists()


def test_results_in_a_zarr_store_read_back_frame_by_frame(clip, tmp_path):
    pytest.importorskip("zarr")
    X, _ = clip
    X = X[:150]
    mem = OnlineRPCA(batch_size=40).fit(X)
    store = tmp_path / "res.zarr"
    disk = OnlineRPCA(batch_size=40).fit(ArrayFrames(X, frame_shape=(40, 56)), store=store)
    assert disk.sink_.path == store and store.is_dir()
    back = open_frame_store(store)
    assert back.n_written == 150 and back.frame_shape == (40, 56)
    assert back.attrs["mask_threshold"] == pytest.approx(mem.mask_threshold_)
    for f in ("low_rank", "sparse", "mask"):
        np.testing.assert_array_equal(back.read(f), mem.sink_.read(f))
    np.testing.assert_array_equal(back.frame("mask", 77), mem.sink_.read("mask")[77])


def test_large_results_need_a_store(monkeypatch, clip):
    from robustcore.bigdata import _sink
    monkeypatch.setattr(_sink, "DEFAULT_RESULT_MEMORY", 1000)
    with pytest.raises(ValueError, match="store=PATH"):
        OnlineRPCA().fit(clip[0][:10])


def test_lambdas_are_in_units_of_the_data_range(clip):
    X, _ = clip
    a = OnlineRPCA(batch_size=50).fit(X[:100])
    b = OnlineRPCA(batch_size=50).fit(X[:100] / 255.0)
    assert a.scale_ == pytest.approx(255 * b.scale_)
    np.testing.assert_array_equal(a.sink_.read("mask"), b.sink_.read("mask"))


@pytest.mark.parametrize("params,match", [({"n_components": 0}, "n_components"), ({"forgetting": 0.0}, "forgetting"),
                                          ({"lambda2": -1.0}, "lambda2"), ({"batch_size": 0}, "batch_size"),
                                          ({"n_components": 5000}, "n_components")])
def test_bad_parameters(params, match, clip):
    with pytest.raises(ValueError, match=match):
        OnlineRPCA(**params).fit(clip[0][:20])


def test_custom_sink_must_match():
    with pytest.raises(ValueError, match="sink must hold"):
        OnlineRPCA().fit(np.ones((5, 10)), sink=FrameSink(4, 10, OnlineRPCA.FIELDS))


@pytest.mark.parametrize("where", ["memory", "store"])
def test_frames_are_announced_in_order_once_each_and_final(clip, tmp_path, where):
    """The on_frames hook (what the window's live L + S view is fed from): frames come in order,
    each once, readable when announced, and what is read then is what the finished fit holds
    (a frame's L and S are written once, after its batch)."""
    if where == "store":
        pytest.importorskip("zarr")
    X = clip[0][:230]   # batches of 32: the last one is short
    seen = []

    def on_frames(start, stop, sink):
        seen.append((start, stop, {f: sink.read(f, start, stop) for f in OnlineRPCA.FIELDS}))
        # Nothing beyond the announced frames is claimed written.
        assert sink.n_written >= stop
    store = tmp_path / "live.zarr" if where == "store" else None
    est = OnlineRPCA(batch_size=32).fit(X, store=store, on_frames=on_frames)
    starts = [s for s, _, _ in seen]
    stops = [e for _, e, _ in seen]
    assert starts[0] == 0 and stops[-1] == 230 and starts[1:] == stops[:-1]
    assert all(a < b for a, b in zip(starts, stops))
    final = est.sink_
    for start, stop, got in seen:
        for f, rows in got.items():
            np.testing.assert_array_equal(rows, final.read(f, start, stop))
    if where == "memory":   # written synchronously: one announcement per batch
        assert stops == [32, 64, 96, 128, 160, 192, 224, 230]


def test_frames_hook_of_the_progress_callable_is_used(clip):
    """Through the registry the hook rides on the progress callable (nested spans included)."""
    from robustcore.methods import get_method
    from robustcore.datasets import Dataset
    X = clip[0][:100]
    got = []

    class Listener:
        def __call__(self, fraction, message=""):
            return True

        def frames(self, start, stop, sink):
            got.append((start, stop, sink.read("sparse", start, stop)))
    res = get_method("online-rpca").run(Dataset(X=X, image_shape=(40, 56), name="clip"), {"batch_size": 25},
                                        progress=Listener())
    assert [(a, b) for a, b, _ in got] == [(0, 25), (25, 50), (50, 75), (75, 100)]
    np.testing.assert_array_equal(np.concatenate([s for _, _, s in got]), np.asarray(res.arrays["sparse"]))


def test_on_frames_must_be_callable(clip):
    with pytest.raises(ValueError, match="on_frames must be a callable"):
        OnlineRPCA().fit(clip[0][:40], on_frames=3)


def test_outputs_are_the_per_frame_definitions_whatever_the_pixel_blocks(clip, monkeypatch):
    """L, S and the mask are made block of pixels by block (in cache): block edges change
    nothing, and what is stored is L = U r (rank k per batch), S = soft(X - L, lambda2) in data
    units, the mask |S| > threshold, the scores the row sums of |S|."""
    import robustcore.subspace.online_rpca as mod
    X = clip[0][:150]            # 2240 pixels; batches of 32 (the last one short)
    params = dict(n_components=2, batch_size=32, pixel_fraction=0.5)
    whole = OnlineRPCA(**params).fit(X)                          # one block per batch
    monkeypatch.setattr(mod, "_BLOCK_BYTES", 8 * 32 * 24)         # 24 pixels a block, the last ragged
    blocks = OnlineRPCA(**params).fit(X)
    for f in OnlineRPCA.FIELDS:
        np.testing.assert_allclose(blocks.sink_.read(f), whole.sink_.read(f), rtol=1e-6, atol=1e-4)
    np.testing.assert_allclose(blocks.basis_, whole.basis_, rtol=1e-10, atol=1e-12)
    L, S, mask = (blocks.sink_.read(f).astype(float) for f in ("low_rank", "sparse", "mask"))
    assert np.linalg.matrix_rank(L[:32], tol=1e-3 * np.abs(L[:32]).max()) == 2
    t = blocks.lambda2_ * blocks.scale_
    T = X - L
    np.testing.assert_allclose(S, T - np.clip(T, -t, t), atol=1e-3)   # float32 L and S
    assert 0.001 < np.mean(S != 0) < 0.5
    clear = np.abs(np.abs(S) - blocks.mask_threshold_) > 1e-3
    np.testing.assert_array_equal(mask[clear], (np.abs(S) > blocks.mask_threshold_)[clear])
    np.testing.assert_allclose(blocks.sample_scores_, np.abs(S).sum(axis=1), rtol=1e-5)
    np.testing.assert_array_equal(blocks.foreground_fraction_, mask.mean(axis=1))
