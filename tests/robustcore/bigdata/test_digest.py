"""The content digest of data opened out of core: taken in the pass a fit makes anyway, each block
read once for both (counted, with Dask's graph optimisation on), the same whatever the method,
its passes or the scheduler, and different after a change anywhere in the file."""
import hashlib
import threading

import numpy as np
import pytest

pytest.importorskip("dask")

from robustcore.bigdata import (DataChangedError, compute, content_digest, describe_digest,  # noqa: E402
                                expect_digest, open_lazy, open_table, settings)
from robustcore.bigdata import _tables  # noqa: E402
from robustcore.methods import get_method  # noqa: E402

ROWS = 500


@pytest.fixture
def npy(tmp_path):
    rng = np.random.default_rng(2)
    X = rng.standard_normal((4100, 3)) @ rng.standard_normal((3, 9)) + 0.1 * rng.standard_normal((4100, 9))
    p = tmp_path / "t.npy"
    np.save(p, X)
    return p, X


@pytest.fixture
def counting(monkeypatch):
    """Reads of every block, by first row: the readers the real tables use, wrapped."""
    counts, lock = {}, threading.Lock()
    real = _tables._read_block

    def read(reader, start, stop):
        with lock:
            counts[start] = counts.get(start, 0) + 1
        return real(reader, start, stop)
    monkeypatch.setattr(_tables, "_read_block", read)
    return counts


def independent_digest(X, rows):
    """The digest computed another way: straight from the array, block by block."""
    h = hashlib.sha256(f"robust-studio table {X.shape[0]}x{X.shape[1]} {X.dtype.str} {rows}\n".encode())
    for s in range(0, X.shape[0], rows):
        h.update(hashlib.sha256(np.ascontiguousarray(X[s:s + rows]).tobytes()).digest())
    return f"sha256-blocks:{rows}:{X.shape[0]}x{X.shape[1]}:{X.dtype.str}:{h.hexdigest()}"


@pytest.mark.slow
@pytest.mark.parametrize("method, params", [("pca", {"n_components": 3}), ("residual", {"n_components": 3}),
                                            ("coherence-pursuit", {"n_components": 3})])
def test_the_fit_hashes_every_block_in_a_read_it_makes_anyway(npy, counting, method, params):
    p, X = npy
    m = get_method(method)
    ds = open_lazy(p, chunk_rows=ROWS)
    assert ds.content_digest is None
    m.run(ds, params)
    with_hash = dict(counting)
    assert ds.content_digest == independent_digest(X, ROWS)
    # The same fit on a table whose digest is known (nothing to hash) reads every block as often:
    # the hash tasks shared the first pass's reads, whatever Dask's optimisation fused.
    counting.clear()
    again = open_lazy(p, chunk_rows=ROWS)
    again.source.content_digest = "known"
    m.run(again, params)
    assert counting == with_hash and set(with_hash) == set(range(0, 4100, ROWS))


def test_shapes_of_graph_that_dask_fuses_still_read_each_block_once(npy, counting):
    from dask import delayed
    p, X = npy
    graphs = {
        "to_delayed": lambda A: [delayed(sum)([delayed(np.sum)(b) for b in A.to_delayed().ravel()])],
        "astype and map_blocks": lambda A: [A.astype(np.float32).map_blocks(lambda b: b * 2).sum(axis=1)],
        "astype to_delayed": lambda A: [delayed(sum)([delayed(np.sum)(b)
                                                      for b in A.astype("f4").to_delayed().ravel()])],
        "two consumers": lambda A: [A.map_blocks(lambda b: b + 1).sum(), A.max(axis=0)],
    }
    for name, make in graphs.items():
        counting.clear()
        t = open_table(p, chunk_rows=ROWS)
        compute(*make(t.array))
        assert t.content_digest == independent_digest(X, ROWS), name
        assert set(counting.values()) == {1} and len(counting) == 9, (name, counting)


def test_digest_depends_on_the_data_not_the_method_or_its_passes(npy):
    p, X = npy
    digests = set()
    for method in ("pca", "coherence-pursuit"):
        ds = open_lazy(p, chunk_rows=ROWS)
        get_method(method).run(ds, {"n_components": 2})
        digests.add(ds.content_digest)
    digests.add(content_digest(open_lazy(p, chunk_rows=ROWS)))   # a pass of its own
    assert digests == {independent_digest(X, ROWS)}
    assert describe_digest(digests.pop()) == ("the sha256 of every value of the table (4,100 x 9, float64), "
                                              "hashed in blocks of 500 rows in the pass that read it")


def test_a_partial_read_takes_no_digest_and_reads_no_more(npy, counting):
    p, _ = npy
    t = open_table(p, chunk_rows=ROWS)
    compute(t.array[:10].sum())
    assert t.content_digest is None and counting == {0: 1}


def test_a_change_anywhere_changes_the_digest_and_an_armed_pass_fails(npy):
    p, X = npy
    before = content_digest(open_table(p, chunk_rows=ROWS))
    Y = X.copy()
    Y[2345, 4] += 1e-12        # in the middle: neither the first nor the last block
    np.save(p, Y)
    t = open_table(p, chunk_rows=ROWS)
    expect_digest(t, before, "the session was saved")
    with pytest.raises(DataChangedError, match="^the data changed since the session was saved: the sha256 of "
                                               "every value .* differs"):
        get_method("pca").run(open_lazy_from(t), {"n_components": 2})
    assert t.content_digest == independent_digest(Y, ROWS) != before
    with pytest.raises(Exception, match="chunk_rows=500"):
        expect_digest(open_table(p, chunk_rows=400), before)


def open_lazy_from(table):
    from robustcore.bigdata import LazyDataset
    from robustcore.datasets import Provenance
    return LazyDataset(table, "t", Provenance(loader="npy", options={}, path=table.path))


@pytest.mark.parametrize("fmt", ["hdf5", "zarr"])
def test_every_format_is_digested_in_its_own_dtype(tmp_path, npy, fmt):
    p, X = npy
    X32 = X.astype("<f4")
    if fmt == "hdf5":
        h5py = pytest.importorskip("h5py")
        path = tmp_path / "t.h5"
        with h5py.File(path, "w") as f:
            f.create_dataset("X", data=X32, chunks=(128, 9), compression="gzip")
    else:
        zarr = pytest.importorskip("zarr")
        path = tmp_path / "t.zarr"
        zarr.create_array(str(path), shape=X32.shape, chunks=(250, 9), dtype="<f4")[:] = X32
    t = open_table(path, chunk_rows=ROWS)
    get_method("pca").run(open_lazy_from(t), {"n_components": 2})
    assert t.content_digest == independent_digest(X32, ROWS)


@pytest.mark.slow
def test_same_digest_on_a_cluster(npy):
    distributed = pytest.importorskip("distributed")
    p, X = npy
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=40) as cluster:
        with settings(scheduler=cluster.scheduler_address):
            ds = open_lazy(p, chunk_rows=ROWS)
            get_method("pca").run(ds, {"n_components": 2})
    assert ds.content_digest == independent_digest(X, ROWS)


def test_video_digest_is_taken_when_it_is_opened_and_sees_a_changed_packet(tmp_path):
    av = pytest.importorskip("av")
    path = tmp_path / "v.avi"
    with av.open(str(path), "w") as c:
        s = c.add_stream("rawvideo", rate=10)
        s.width, s.height, s.pix_fmt = 16, 8, "gray"
        for i in range(6):
            for pk in s.encode(av.VideoFrame.from_ndarray(np.full((8, 16), 30 * i, np.uint8), format="gray")):
                c.mux(pk)
        for pk in s.encode():
            c.mux(pk)
    first = open_lazy(path)
    assert first.content_digest.startswith("sha256-packets:6:")
    assert "6 compressed frames (packets)" in describe_digest(first.content_digest)
    assert open_lazy(path, scale=0.5, step=2).content_digest == first.content_digest   # options: same data
    raw = bytearray(path.read_bytes())
    at = raw.index(bytes([90] * 16))      # a row of the fourth frame
    raw[at] = 91
    path.write_bytes(bytes(raw))
    assert open_lazy(path).content_digest != first.content_digest
