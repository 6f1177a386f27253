"""The content digest of data opened out of core: taken in the pass a fit makes anyway, each block
read once for both (counted, with Dask's graph optimisation on), the same whatever the method,
its passes or the scheduler, and different after a change anywhere in the file. A table's digest
is xxh3 when xxhash is installed, else sha256; a recorded digest is checked in its own format."""
import hashlib
import importlib.util
import sys
import threading

import numpy as np
import pytest

pytest.importorskip("dask")

from robustcore.bigdata import (DataChangedError, compute, content_digest, describe_digest,  # noqa: E402
                                expect_digest, open_lazy, open_table, settings)
from robustcore.bigdata import _tables  # noqa: E402
from robustcore.bigdata._digest import DigestFormatError  # noqa: E402
from robustcore.methods import get_method  # noqa: E402

ROWS = 500
#: What new digests are taken in: xxh3 with xxhash installed (the big and test extras), else sha256.
DEFAULT = "xxh3-blocks" if importlib.util.find_spec("xxhash") else "sha256-blocks"


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


def independent_digest(X, rows, fmt=DEFAULT):
    """The digest computed another way: straight from the array, block by block, with hashlib's
    sha256 or xxhash's xxh3_128 called here."""
    if fmt == "xxh3-blocks":
        import xxhash
        new = xxhash.xxh3_128
    else:
        new = hashlib.sha256
    h = new(f"robust-studio table {X.shape[0]}x{X.shape[1]} {X.dtype.str} {rows}\n".encode())
    for s in range(0, X.shape[0], rows):
        h.update(new(np.ascontiguousarray(X[s:s + rows]).tobytes()).digest())
    return f"{fmt}:{rows}:{X.shape[0]}x{X.shape[1]}:{X.dtype.str}:{h.hexdigest()}"


@pytest.fixture
def no_xxhash(monkeypatch):
    """xxhash not installed: its import fails."""
    monkeypatch.setitem(sys.modules, "xxhash", None)


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
    hash_name = {"xxh3-blocks": "xxh3_128", "sha256-blocks": "sha256"}[DEFAULT]
    assert describe_digest(digests.pop()) == (f"the {hash_name} of every value of the table (4,100 x 9, float64), "
                                              "hashed in blocks of 500 rows in the pass that read it")


def test_with_xxhash_installed_a_digest_is_xxh3_of_the_blocks(npy):
    pytest.importorskip("xxhash")
    p, X = npy
    got = content_digest(open_table(p, chunk_rows=ROWS))
    assert got == independent_digest(X, ROWS, "xxh3-blocks") and len(got.rsplit(":", 1)[1]) == 32
    assert describe_digest(got).startswith("the xxh3_128 of every value of the table (4,100 x 9, float64)")
    t = open_table(p, chunk_rows=ROWS)
    compute(t.array.sum())
    assert t.describe()["content digest"] == "xxh3 " + got.rsplit(":", 1)[1][:16] + "…"


def test_without_xxhash_a_digest_is_sha256_and_an_xxh3_one_cannot_be_checked(npy, no_xxhash):
    p, X = npy
    t = open_table(p, chunk_rows=ROWS)
    get_method("pca").run(open_lazy_from(t), {"n_components": 2})
    assert t.content_digest == independent_digest(X, ROWS, "sha256-blocks")
    recorded = "xxh3-blocks:500:4100x9:<f8:" + "0" * 32
    with pytest.raises(DigestFormatError, match=r"^a digest in xxh3-blocks format needs the xxhash package: "
                                                r"pip install xxhash \(or .*\[big\]"):
        expect_digest(open_table(p, chunk_rows=ROWS), recorded)
    assert describe_digest(recorded).startswith("the xxh3_128 of every value of the table (4,100 x 9")


def test_a_recorded_sha256_digest_is_checked_in_sha256(npy):
    """A session saved before xxh3 (or without xxhash) is verified with sha256 whatever is
    installed: by an armed fit's own pass, or by a pass of its own on a table digested otherwise."""
    p, X = npy
    old = independent_digest(X, ROWS, "sha256-blocks")
    t = open_table(p, chunk_rows=ROWS)
    expect_digest(t, old, "the session was saved")
    get_method("pca").run(open_lazy_from(t), {"n_components": 2})      # no DataChangedError
    assert t.content_digest == old
    fresh = open_table(p, chunk_rows=ROWS)
    assert content_digest(fresh) == independent_digest(X, ROWS)        # the default format...
    assert content_digest(fresh, like=old) == old                       # ...and on demand, the old one
    assert fresh.content_digest == independent_digest(X, ROWS)         # which keeps its own


def test_a_partial_read_takes_no_digest_and_reads_no_more(npy, counting):
    p, _ = npy
    t = open_table(p, chunk_rows=ROWS)
    compute(t.array[:10].sum())
    assert t.content_digest is None and counting == {0: 1}


@pytest.mark.parametrize("fmt, hash_name", [("xxh3-blocks", "xxh3_128"), ("sha256-blocks", "sha256")])
def test_a_change_anywhere_changes_the_digest_and_an_armed_pass_fails(npy, fmt, hash_name):
    if fmt == "xxh3-blocks":
        pytest.importorskip("xxhash")
    p, X = npy
    before = independent_digest(X, ROWS, fmt)
    t = open_table(p, chunk_rows=ROWS)
    expect_digest(t, before)
    assert content_digest(t) == before        # armed with it: taken in its format, and the same
    Y = X.copy()
    Y[2345, 4] += 1e-12        # in the middle: neither the first nor the last block
    np.save(p, Y)
    t = open_table(p, chunk_rows=ROWS)
    expect_digest(t, before, "the session was saved")
    with pytest.raises(DataChangedError, match=f"^the data changed since the session was saved: the {hash_name} "
                                               "of every value .* differs"):
        get_method("pca").run(open_lazy_from(t), {"n_components": 2})
    assert t.content_digest == independent_digest(Y, ROWS, fmt) != before
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
