"""The out-of-core readers (.npy, HDF5, Zarr, video) keep the in-memory loaders' bounded-resource
policy: crafted hostile sources run through the real readers in a child capped in memory and
time and are refused with a message saying why; honest files of every codec the readers decode
themselves give back exactly what was written."""
import os

import numpy as np
import pytest

pytest.importorskip("dask")

from robustcore.bigdata import compute, open_lazy, open_table, settings  # noqa: E402
from robustcore.datasets import LoadError  # noqa: E402
from tests.corpus import lazy_cases  # noqa: E402
from tests.corpus.harness import problems, run_child  # noqa: E402

linux = pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs Linux (/proc, rlimit)")


def read_all(path, **options):
    t = open_table(path, **options)
    return np.asarray(compute(t.array)[0]), t


@pytest.mark.slow
@linux
def test_hostile_sources_are_refused_within_budget_and_time(tmp_path):
    pytest.importorskip("h5py")
    cases = lazy_cases.make(tmp_path)
    lines = run_child({"cases": cases})
    bad = problems(cases, lines, lazy_cases.BUDGET)
    assert not bad, "\n".join(bad)
    refused = [ln for ln, c in zip(lines, cases) if c["expect"] == "refused"]
    assert len(refused) >= 30 and all(ln["outcome"] == "error" for ln in refused)
    # The bounds of the policy: each refused source cost less than 1 GB (the child's address
    # space is capped at 768 MiB above start-up besides) and finished within its 20 s alarm.
    assert all(ln["rss_growth"] is None or ln["rss_growth"] < 2 ** 30 for ln in refused)


def test_in_memory_refusal_names_the_way_out_of_core_first(tmp_path):
    from robustcore.datasets import load
    np.save(tmp_path / "big.npy", np.zeros((2000, 50)))
    with pytest.raises(LoadError) as err:
        load(tmp_path / "big.npy", max_bytes=100_000)
    msg = str(err.value)
    assert "open it out of core" in msg and "robustcore.bigdata.open_lazy" in msg and "--lazy" in msg
    assert msg.index("out of core") < msg.index("pass a larger max_bytes") < msg.index("load a subset")


# -- what the readers decode themselves equals what the libraries wrote ------------------------------

@pytest.fixture(scope="module")
def X():
    rng = np.random.default_rng(5)
    return rng.standard_normal((1003, 10)) * 1e3


@pytest.mark.slow
@pytest.mark.parametrize("codec", [None, "zlib", "gzip", "bz2", "lzma", "zstd", "blosc", "lz4"])
def test_zarr2_codecs_read_exactly(tmp_path, X, codec):
    zarr = pytest.importorskip("zarr")
    import numcodecs
    comp = None if codec is None else numcodecs.get_codec({"id": codec})
    z = zarr.create_array(str(tmp_path / "t.zarr"), shape=X.shape, chunks=(128, 4), dtype="<f8", zarr_format=2,
                          compressors=comp)
    z[:] = X
    got, t = read_all(tmp_path / "t.zarr", chunk_rows=300)
    np.testing.assert_array_equal(got, X)
    assert t.reader.codec == codec and t.array.numblocks == (4, 1)


@pytest.mark.slow
@pytest.mark.parametrize("codec", ["none", "zstd", "gzip", "blosc"])
@pytest.mark.parametrize("dtype", ["<f4", ">i8", "|u1"])
def test_zarr3_codecs_and_dtypes_read_exactly(tmp_path, X, codec, dtype):
    zarr = pytest.importorskip("zarr")
    from zarr import codecs as zc
    comp = {"none": None, "zstd": zc.ZstdCodec(), "gzip": zc.GzipCodec(), "blosc": zc.BloscCodec()}[codec]
    data = np.abs(X).astype(dtype)
    g = zarr.open_group(str(tmp_path / "g.zarr"), mode="w")
    ser = zc.BytesCodec(endian="big" if dtype.startswith(">") else "little")
    a = g.create_array("sub/t", shape=data.shape, chunks=(100, 10), dtype=data.dtype.newbyteorder("="),
                       serializer=ser, compressors=comp)
    a[:] = data
    got, t = read_all(tmp_path / "g.zarr")
    assert t.component == "sub/t"
    np.testing.assert_array_equal(got, data)


def test_hdf5_layouts_and_filters_read_exactly(tmp_path, X):
    h5py = pytest.importorskip("h5py")
    p = tmp_path / "t.h5"
    with h5py.File(p, "w") as f:
        f.create_dataset("contiguous", data=X)
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_layout(h5py.h5d.COMPACT)
        f.create_dataset("compact", data=X[:20], dcpl=dcpl)
        f.create_dataset("gzip", data=X, chunks=(97, 3), compression="gzip", shuffle=True, fletcher32=True)
        f.create_dataset("big_endian", data=X.astype(">f4"), chunks=(200, 10), compression="gzip")
        f.create_dataset("ints", data=(X * 10).astype("<i2"), chunks=(64, 10), shuffle=True)
        f["soft"] = h5py.SoftLink("/gzip")
    for name, want in [("contiguous", X), ("compact", X[:20]), ("gzip", X), ("big_endian", X.astype(">f4")),
                       ("soft", X),
                       ("ints", (X * 10).astype("<i2"))]:
        got, t = read_all(p, dataset=name, chunk_rows=250)
        np.testing.assert_array_equal(got, want, err_msg=name)
        assert got.dtype == want.dtype
    assert open_table(p, dataset="soft").component == "gzip"
    assert [open_table(p, dataset=k).reader.layout for k in ("compact", "contiguous", "gzip")] == [0, 1, 2]


def test_damaged_hdf5_chunk_fails_its_checksum(tmp_path, X):
    h5py = pytest.importorskip("h5py")
    p = tmp_path / "t.h5"
    with h5py.File(p, "w") as f:
        f.create_dataset("X", data=X, chunks=(100, 10), fletcher32=True)
        offset = f["X"].id.get_chunk_info(3).byte_offset
    with open(p, "r+b") as fh:
        fh.seek(offset + 100)
        byte = fh.read(1)
        fh.seek(offset + 100)
        fh.write(bytes([byte[0] ^ 0x10]))
    t = open_table(p)
    with pytest.raises(LoadError, match="row 300, column 0 .* fails its Fletcher-32 checksum"):
        compute(t.array.sum())


def test_npy_in_either_order_reads_exactly(tmp_path, X):
    np.save(tmp_path / "c.npy", X.astype("<f4"))
    np.save(tmp_path / "f.npy", np.asfortranarray(X))
    got, _ = read_all(tmp_path / "c.npy", chunk_rows=100)
    np.testing.assert_array_equal(got, X.astype("<f4"))
    got, t = read_all(tmp_path / "f.npy", chunk_rows=100)
    assert t.reader.fortran
    np.testing.assert_array_equal(got, X)


def test_missing_chunks_are_errors_unless_filled_knowingly(tmp_path, X):
    zarr = pytest.importorskip("zarr")
    data = X.copy()
    data[200:400] = 0.0
    z = zarr.create_array(str(tmp_path / "t.zarr"), shape=data.shape, chunks=(200, 10), dtype="f8",
                          fill_value=0.0)
    z[:] = data     # zarr leaves out the all-zero chunk (write_empty_chunks=False)
    assert not (tmp_path / "t.zarr" / "c" / "1").exists()
    t = open_table(tmp_path / "t.zarr")
    with pytest.raises(LoadError, match=r"chunk c/1/0 of Zarr array .*t\.zarr is missing .* missing_chunks='fill'"):
        compute(t.array.sum())
    got, t = read_all(tmp_path / "t.zarr", missing_chunks="fill")
    np.testing.assert_array_equal(got, data)
    assert open_lazy(tmp_path / "t.zarr", missing_chunks="fill").provenance.options == {"missing_chunks": "fill"}


def test_a_file_swapped_for_a_fifo_after_opening_is_refused_without_waiting(tmp_path, X):
    np.save(tmp_path / "t.npy", X)
    t = open_table(tmp_path / "t.npy")
    os.remove(tmp_path / "t.npy")
    os.mkfifo(tmp_path / "t.npy")
    with pytest.raises(LoadError, match="FIFO"):
        compute(t.array.sum())


def test_blocks_are_sized_within_the_budget(tmp_path, X):
    np.save(tmp_path / "t.npy", X)
    with settings(memory_budget=16 * 1024):
        t = open_table(tmp_path / "t.npy")
    assert t.chunk_rows * 10 * 8 <= 16 * 1024 // 4
    with pytest.raises(LoadError, match="a block of 1,000 rows .* pass a smaller chunk_rows"):
        open_table(tmp_path / "t.npy", chunk_rows=1000, max_bytes=16 * 1024)
    with pytest.raises(LoadError, match="implies 10 features .* max_features=5"):
        open_lazy(tmp_path / "t.npy", max_features=5)
    assert "max_features" not in open_lazy(tmp_path / "t.npy", max_features=50).provenance.options
