"""Every size, count, name, link and option a table on disk declares is bounded before it is used
(issue 34): declared rows against what the store holds and the block limit, soft links in
total, chunks per chunk as well as per byte, feature names made on demand, malformed metadata
of any JSON type, fill values read exactly or refused, listings and echoed values cut.

Memory is checked structurally (no list or array the size of what is declared: tracemalloc
peaks of a few MB where the old code built hundreds of MB), never by timing; the capped child
of ``tests/corpus/harness.py`` runs the same sources as corpus cases (``lazy_cases.py``)."""
import json
import tracemalloc
import zlib

import numpy as np
import pytest

from robustcore.bigdata import LazyDataset, compute, open_lazy, open_table, settings
from robustcore.bigdata._bounds import MAX_BLOCKS, check_chunk_reads
from robustcore.datasets import LoadError
from robustcore.datasets._errors import listing, shown
from robustcore.datasets._limits import numbered
from tests.corpus.lazy_cases import zarr_v2, zarr_v3

MiB = 1024 ** 2


@pytest.fixture(autouse=True, scope="module")
def _imported():
    """The readers' modules imported before any peak is measured (imports are not the case)."""
    import dask.array  # noqa: F401
    import robustcore.bigdata._digest  # noqa: F401
    import robustcore.bigdata._hdf5  # noqa: F401
    import robustcore.bigdata._zarr  # noqa: F401
    try:
        import h5py  # noqa: F401
    except ImportError:
        pass


def peak_of(call):
    """(what ``call`` returned or raised, the peak of Python allocations while it ran)."""
    tracemalloc.start()
    try:
        try:
            out = call()
        except LoadError as exc:
            out = exc
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# -- declared rows ---------------------------------------------------------------------------------

@pytest.mark.parametrize("make", [zarr_v2, zarr_v3])
def test_a_store_declaring_2_to_the_50_rows_is_refused_naming_its_first_missing_chunk(tmp_path, make):
    z = make(tmp_path / "huge.zarr", (2 ** 50, 4), (1000, 4))
    err, peak = peak_of(lambda: open_table(z))
    assert isinstance(err, LoadError) and "is missing" in str(err)
    assert ("chunk 0.0 " if make is zarr_v2 else "chunk c/0/0 ") in str(err)
    assert peak < 4 * MiB       # the old code built a list of 2**40 block starts: MemoryError at 1.5 GB


def test_a_store_declaring_2_to_the_40_rows_names_chunk_0_0_at_once(tmp_path):
    z = zarr_v2(tmp_path / "t.zarr", (2 ** 40, 4), (100, 4))
    err, peak = peak_of(lambda: open_table(z))
    assert isinstance(err, LoadError) and "chunk 0.0 of Zarr array" in str(err) and "is missing" in str(err)
    assert peak < 4 * MiB       # old: 645 MB of Dask graph before the first chunk was looked for


def test_a_store_holding_its_first_chunk_but_not_its_last_is_refused_at_open(tmp_path):
    z = zarr_v2(tmp_path / "t.zarr", (2 ** 40, 4), (100, 4))
    (z / "0.0").write_bytes(np.zeros((100, 4)).tobytes())
    last = (2 ** 40 - 1) // 100
    with pytest.raises(LoadError, match=rf"chunk {last}\.0 of Zarr array .* is missing"):
        open_table(z)


def test_filled_stores_are_bounded_by_the_block_limit(tmp_path):
    z = zarr_v2(tmp_path / "t.zarr", (2 ** 50, 4), (1000, 4))
    err, peak = peak_of(lambda: open_table(z, missing_chunks="fill"))
    assert isinstance(err, LoadError)
    assert f"declares {2 ** 50:,} rows" in str(err) and f"more than {MAX_BLOCKS:,} blocks" in str(err)
    assert peak < 4 * MiB
    # A filled store within the limit opens, and reads as its fill value.
    z = zarr_v2(tmp_path / "ok.zarr", (5000, 4), (1000, 4), fill_value=2.5)
    t = open_table(z, missing_chunks="fill", chunk_rows=1000)
    assert t.array.numblocks == (5, 1) and compute(t.array.sum())[0] == 2.5 * 20000


def test_hdf5_dataset_of_2_to_the_50_rows_never_written(tmp_path):
    h5py = pytest.importorskip("h5py")
    p = tmp_path / "t.h5"
    with h5py.File(p, "w") as f:
        f.create_dataset("X", shape=(2 ** 50, 4), dtype="f8", chunks=(1024, 4))
    assert p.stat().st_size < 8192
    err, peak = peak_of(lambda: open_table(p))
    assert isinstance(err, LoadError) and "row 0, column 0 of t.h5:X was never written" in str(err)
    assert peak < 4 * MiB
    err, peak = peak_of(lambda: open_table(p, missing_chunks="fill"))
    assert isinstance(err, LoadError) and f"declares {2 ** 50:,} rows" in str(err)
    assert peak < 4 * MiB


@pytest.mark.slow
def test_chunk_rows_of_one_on_two_million_rows_is_refused_with_the_least_that_would_do(tmp_path):
    np.save(tmp_path / "t.npy", np.zeros((2_000_000, 1), np.uint8))
    err, peak = peak_of(lambda: open_lazy(tmp_path / "t.npy", chunk_rows=1))
    assert isinstance(err, LoadError)
    least = -(-2_000_000 // MAX_BLOCKS)
    assert "into 2,000,000 blocks" in str(err) and f"pass chunk_rows={least:,} or more" in str(err)
    assert peak < 4 * MiB       # old: 2M read tasks, killed at 183 s
    t = open_table(tmp_path / "t.npy", chunk_rows=least)
    assert t.array.numblocks[0] <= MAX_BLOCKS
    assert int(compute(t.array.sum())[0]) == 0


def test_default_blocks_grow_to_stay_within_the_block_limit(tmp_path):
    # 2**15 billion rows of 16 bytes: 4M-row blocks (64 MB) would make 8,192 blocks; 8M-row ones,
    # whole chunks of 1M rows and within a quarter of the budget, make 4,096.
    z = zarr_v2(tmp_path / "t.zarr", (MAX_BLOCKS * 8_000_000, 2), (1_000_000, 2), fill_value=1.0)
    with settings(memory_budget=1024 * MiB):
        t = open_table(z, missing_chunks="fill")
    assert t.array.numblocks[0] == MAX_BLOCKS and t.chunk_rows == 8_000_000


# -- chunks charged per chunk and per byte --------------------------------------------------------

@pytest.mark.slow
def test_one_by_one_hdf5_chunks_are_refused_before_80000_chunk_reads(tmp_path):
    h5py = pytest.importorskip("h5py")
    p = tmp_path / "t.h5"
    with h5py.File(p, "w") as f:
        f.create_dataset("X", data=np.arange(200 * 400.0).reshape(200, 400), chunks=(1, 1))
    with pytest.raises(LoadError, match=r"chunks of 1 x 1 values \(8 bytes\): 80,000 chunks to read"):
        open_table(p)
    # The same values in whole-row chunks are read exactly.
    with h5py.File(p, "w") as f:
        f.create_dataset("X", data=np.arange(200 * 400.0).reshape(200, 400), chunks=(1, 400))
    np.testing.assert_array_equal(compute(open_table(p).array)[0], np.arange(200 * 400.0).reshape(200, 400))


def test_blocks_cutting_across_chunks_may_not_decode_each_chunk_many_times():
    # Chunks of 1,000 rows x 1 column, read by blocks of 10 rows: each chunk decoded 100 times.
    with pytest.raises(LoadError, match="chunk_rows as a multiple of 1,000"):
        check_chunk_reads(100_000, 64, 10, (1000, 1), 8, "t")
    check_chunk_reads(100_000, 64, 1000, (1000, 1), 8, "t")       # aligned: each chunk read once
    check_chunk_reads(60, 60, 1, (1, 1), 8, "t")                  # a small table: few reads either way


def test_a_chunk_as_large_as_the_budget_is_refused_before_it_is_inflated(tmp_path):
    # The campaign's case: 2**24 x 16 float64 in one zlib chunk (2 GiB declared, 2 MB on disk)
    # under a 2 GiB budget took 3.1 GB. It is refused at open, from the metadata: the chunk
    # file is never opened (here it is not even a zlib stream).
    z = zarr_v2(tmp_path / "t.zarr", (2 ** 24, 16), (2 ** 24, 16), compressor={"id": "zlib", "level": 1})
    (z / "0.0").write_bytes(b"not read")
    err, peak = peak_of(lambda: open_table(z, max_bytes=2 ** 31))
    assert isinstance(err, LoadError) and "decoded, then copied into its block of rows" in str(err)
    assert peak < 4 * MiB
    # Half the budget is fine (decoded, then copied: twice its bytes).
    z = zarr_v2(tmp_path / "ok.zarr", (1000, 16), (1000, 16), compressor={"id": "zlib", "level": 1})
    X = np.arange(16000.0).reshape(1000, 16)
    (z / "0.0").write_bytes(zlib.compress(X.tobytes()))
    np.testing.assert_array_equal(compute(open_table(z, max_bytes=2 * X.nbytes).array)[0], X)


# -- names made on demand -------------------------------------------------------------------------

def test_a_4_by_2_to_the_24_store_names_its_features_on_demand(tmp_path):
    z = zarr_v2(tmp_path / "wide.zarr", (4, 2 ** 24), (4, 2 ** 20), dtype="|u1")
    ds, peak = peak_of(lambda: open_lazy(z, missing_chunks="fill"))
    assert isinstance(ds, LazyDataset), ds
    assert isinstance(ds.feature_names, numbered) and len(ds.feature_names) == 2 ** 24
    assert ds.feature_names[-1] == f"x{2 ** 24 - 1}"
    assert peak < 16 * MiB      # old: a list of 16,777,216 strings, 1.2 GB


def test_frames_opened_out_of_core_name_their_pixels_on_demand():
    from robustcore.bigdata import ArrayFrames
    from robustcore.datasets._dataset import Provenance
    frames = ArrayFrames(np.broadcast_to(np.zeros(1, np.uint8), (3, 2 ** 24)), frame_shape=(4096, 4096),
                         value_range=(0, 255))
    ds, peak = peak_of(lambda: LazyDataset(frames, "v", Provenance(loader="video")))
    assert isinstance(ds.feature_names, numbered) and ds.feature_names[5] == "p5"
    assert peak < 1 * MiB


# -- malformed metadata ----------------------------------------------------------------------------

V3_BAD = [
    ({"data_type": {"name": "float64"}}, "data_type must be a string"),
    ({"chunk_grid": [{"name": "regular"}]}, "chunk_grid must be a JSON object or a string"),
    ({"codecs": [{"name": "bytes", "configuration": "little"}]}, r"\(codecs 'bytes'\): its configuration must be"),
    ({"chunk_key_encoding": "dotted"}, "chunk key encoding 'dotted'"),
    ({"chunk_key_encoding": 7}, "chunk_key_encoding must be"),
    ({"codecs": "bytes"}, "codecs must be a list"),
    ({"codecs": [7]}, "an entry of its codecs must be a name"),
    ({"chunk_grid": {"name": "regular", "configuration": "x"}}, "configuration must be a JSON object"),
    ({"chunk_grid": {"name": ["regular"]}}, "name must be a string"),
    ({"data_type": "float64", "fill_value": {"x": 1}}, "fill_value {'x': 1} is not a float64"),
    ({"codecs": [{"name": "bytes", "configuration": {"endian": ["big"]}}]}, "endian must be a string"),
]


@pytest.mark.parametrize("edit,match", V3_BAD)
def test_malformed_zarr3_metadata_is_a_one_line_error_naming_the_field(tmp_path, edit, match):
    z = zarr_v3(tmp_path / "t.zarr", (10, 4), (10, 4), **edit)
    with pytest.raises(LoadError, match=match) as err:
        open_table(z)
    assert "\n" not in str(err.value)


V2_BAD = [
    ({"compressor": {"id": ["zlib"]}}, "compressed with"),
    ({"compressor": "zlib"}, "compressor must be a JSON object"),
    ({"order": ["C"]}, "order must be a string"),
    ({"dimension_separator": {"a": 1}}, "dimension_separator must be a string"),
    ({"dtype": "<f8", "fill_value": "banana"}, "fill_value 'banana' is not a float64"),
    ({"dtype": "|u1", "fill_value": 300}, "fill_value 300 is not a uint8"),
    ({"dtype": "<i4", "fill_value": 1.5}, "fill_value 1.5 is not a int32"),
    ({"dtype": "<f4", "fill_value": 1e300}, "fill_value 1e\\+300 is not a float32"),
    ({"dtype": "<f8", "fill_value": "0x7ff8"}, "fill_value '0x7ff8' is not a float64"),
    ({"shape": {"0": 10}}, "shape must be a list of sizes"),
    ({"dtype": "x" * 100_000}, "dtype 'x+\\.\\.\\.x+' is not a NumPy dtype"),
]


@pytest.mark.parametrize("edit,match", V2_BAD)
def test_malformed_zarr2_metadata_is_a_one_line_error_naming_the_field(tmp_path, edit, match):
    z = zarr_v2(tmp_path / "t.zarr", (10, 4), (10, 4))
    meta = json.loads((z / ".zarray").read_text())
    (z / ".zarray").write_text(json.dumps(dict(meta, **edit)))
    with pytest.raises(LoadError, match=match) as err:
        open_table(z)
    assert "\n" not in str(err.value) and len(str(err.value)) < 600


@pytest.mark.slow
def test_a_store_nesting_folders_1200_deep_is_refused_without_recursion(tmp_path):
    z = zarr_v2(tmp_path / "t.zarr", (10, 4), (10, 4))
    (z / "0.0").write_bytes(np.zeros((10, 4)).tobytes())
    chain = [z / "d"]
    for _ in range(1200):       # os.makedirs (and shutil.rmtree) recurse once per level
        chain.append(chain[-1] / "a")
    try:
        for folder in chain:
            folder.mkdir()
        with pytest.raises(LoadError, match="nests folders more than 64 deep"):
            open_table(z)
    finally:
        for folder in reversed(chain):
            if folder.exists():
                folder.rmdir()


# -- fill values ------------------------------------------------------------------------------------

@pytest.mark.parametrize("fill,bits", [("0x7ff8000000000001", 0x7ff8000000000001), ("NaN", None),
                                       ("-Infinity", 0xfff0000000000000), (-0.0, 0x8000000000000000),
                                       ("0x3FF0000000000000", 0x3ff0000000000000)])
def test_zarr3_fill_values_are_read_exactly_hex_included(tmp_path, fill, bits):
    z = zarr_v3(tmp_path / "t.zarr", (6, 2), (3, 2), fill_value=fill)
    got = compute(open_table(z, missing_chunks="fill").array)[0]
    assert got.shape == (6, 2)
    if bits is None:
        assert np.isnan(got).all()
    else:
        assert (got.view(np.uint64) == bits).all()     # bit for bit: the NaN's payload kept


def test_zarr3_hex_fill_of_float32_and_the_library_agree(tmp_path):
    zarr = pytest.importorskip("zarr")
    z = zarr_v3(tmp_path / "t.zarr", (4, 2), (2, 2), data_type="float32", fill_value="0x7fc00000")
    mine = compute(open_table(z, missing_chunks="fill").array)[0]
    theirs = zarr.open_array(str(z), mode="r")[:]
    np.testing.assert_array_equal(mine.view(np.uint32), theirs.view(np.uint32))


def test_null_fill_is_refused_only_when_missing_chunks_are_to_be_filled(tmp_path):
    z = zarr_v2(tmp_path / "t.zarr", (10, 4), (10, 4), fill_value=None)
    (z / "0.0").write_bytes(np.ones((10, 4)).tobytes())
    assert compute(open_table(z).array.sum())[0] == 40
    with pytest.raises(LoadError, match="has no fill value"):
        open_table(z, missing_chunks="fill")


def test_a_folder_that_is_both_a_zarr2_and_a_zarr3_array_is_refused(tmp_path):
    z = zarr_v3(tmp_path / "t.zarr", (10, 4), (10, 4))
    zarr_v2(z, (10, 4), (10, 4))
    with pytest.raises(LoadError, match=r"holds both zarr\.json and \.zarray"):
        open_table(z)


# -- HDF5 soft links --------------------------------------------------------------------------------

def test_hdf5_soft_links_are_bounded_in_total_not_only_in_depth(tmp_path):
    h5py = pytest.importorskip("h5py")
    p = tmp_path / "links.h5"
    with h5py.File(p, "w") as f:
        f["X"] = np.ones((4, 2))
        f["a0"] = h5py.SoftLink("/")
        for j in range(1, 5):
            f[f"a{j}"] = h5py.SoftLink("/" + "/".join([f"a{j - 1}"] * 30))
    assert p.stat().st_size < 8192
    with pytest.raises(LoadError, match="follows more than 16 soft links"):
        open_table(p, dataset="a4/X")    # old: 30**4 link resolutions, killed at 181 s
    with pytest.raises(LoadError, match="follows more than 16 soft links"):
        open_table(p, dataset="a1/X")    # 1 + 30 links, each cheap: the total is what counts
    with h5py.File(p, "a") as f:
        f["b"] = h5py.SoftLink("/a0/a0/a0")
    assert open_table(p, dataset="b/X").component == "X"    # 4 links in all


# -- listings and echoed values ---------------------------------------------------------------------

def test_listing_and_shown_cut_what_they_echo():
    assert listing([f"d{i}" for i in range(20000)]) == "d0, d1, d2, d3, d4, d5, d6, d7, d8, d9 … and 19,990 more"
    assert listing([]) == "none" and listing(["a"]) == "a"
    assert len(shown("x" * 100_000)) <= 80 and len(shown(list(range(10 ** 6)))) <= 80


@pytest.mark.slow
def test_an_hdf5_file_of_many_datasets_gets_a_short_listing(tmp_path):
    h5py = pytest.importorskip("h5py")
    p = tmp_path / "many.h5"
    with h5py.File(p, "w") as f:
        for i in range(2000):
            f.create_dataset(f"d{i:05d}", shape=(3,), dtype="f8")
    with pytest.raises(LoadError, match="… and 1,990 more") as err:
        open_table(p)
    assert len(str(err.value)) < 1000
    with pytest.raises(LoadError) as err:
        open_table(p, dataset="y" * 100_000)
    assert len(str(err.value)) < 1000 and "… and 1,990 more" in str(err.value)


def test_options_echoed_in_errors_are_cut(tmp_path):
    np.save(tmp_path / "t.npy", np.zeros((3, 2)))
    for options in ({"missing_chunks": "z" * 100_000}, {"chunk_rows": "9" * 5000 + "x"},
                    {"z" * 100_000: 1}, {"dataset": ["x"] * 100_000}):
        with pytest.raises(LoadError) as err:
            open_lazy(tmp_path / "t.npy", **options)
        assert len(str(err.value)) < 600, options
