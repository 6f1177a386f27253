"""Per-row results written as raw chunk files (bigdata._rows.RawChunks) read back through Zarr
exactly as Zarr's own writes of the same values: every chunk, the padded edge chunk, 2-D results,
and selections that are not whole chunks (left to Zarr)."""
import numpy as np
import pytest

zarr = pytest.importorskip("zarr")
pytest.importorskip("dask.array")

from robustcore.bigdata._rows import RawChunks, result_codecs  # noqa: E402


def _pair(tmp_path, shape, dtype, rows):
    """The same array twice: written by RawChunks and by Zarr itself."""
    out = []
    for name in ("raw", "zarr"):
        g = zarr.open_group(str(tmp_path / f"{name}.zarr"), mode="w")
        out.append(g.create_array("a", shape=shape, dtype=dtype, chunks=(rows,) + shape[1:], **result_codecs(dtype)))
    return out


@pytest.mark.parametrize("shape", [(1000,), (1000, 3)])
@pytest.mark.parametrize("dtype", ["f8", "f4"])
def test_whole_chunks_read_back_as_zarr_writes_them(tmp_path, shape, dtype):
    raw, ref = _pair(tmp_path, shape, dtype, 96)          # 1000 = 10 x 96 + an edge chunk of 40
    assert RawChunks.takes(raw)
    w = RawChunks(raw)
    values = np.random.default_rng(0).standard_normal(shape).astype(dtype)
    for s in range(0, 1000, 192):                        # two chunks at a time, the last one short
        w[s:s + 192] = values[s:s + 192]
        ref[s:s + 192] = values[s:s + 192]
    back = zarr.open_group(str(tmp_path / "raw.zarr"), mode="r")["a"][...]
    np.testing.assert_array_equal(back, values)
    np.testing.assert_array_equal(back, ref[...])
    # the files are Zarr's, byte for byte (the edge chunk padded with the fill value as Zarr pads it)
    for f in sorted((tmp_path / "zarr.zarr" / "a" / "c").rglob("*")):
        if f.is_file():
            assert (tmp_path / "raw.zarr" / f.relative_to(tmp_path / "zarr.zarr")).read_bytes() == f.read_bytes()


def test_other_selections_are_zarrs_own_writes(tmp_path):
    raw, _ = _pair(tmp_path, (500, 2), "f8", 100)
    w = RawChunks(raw)
    values = np.arange(1000.0).reshape(500, 2)
    w[0:500] = values
    w[150:250] = -values[150:250]                         # not on chunk boundaries
    w[300:400, :1] = 7.0                                  # part of the row
    want = values.copy()
    want[150:250] *= -1
    want[300:400, 0] = 7.0
    np.testing.assert_array_equal(zarr.open_group(str(tmp_path / "raw.zarr"), mode="r")["a"][...], want)


def test_compressed_results_are_not_taken(tmp_path):
    g = zarr.open_group(str(tmp_path / "f.zarr"), mode="w")
    flags = g.create_array("f", shape=(100,), dtype=bool, chunks=(10,), **result_codecs(bool))
    assert not RawChunks.takes(flags)                    # zstd: Zarr writes those


def test_stored_results_read_as_zarr_reads_them(tmp_path):
    """StoredRows read through their chunk files: the values Zarr reads, whole chunks, the edge
    chunk, a slice inside a chunk (Zarr's read), and a chunk never written (the fill value)."""
    from robustcore.bigdata import StoredRows
    from robustcore.bigdata._dask import compute
    raw, _ = _pair(tmp_path, (1000, 3), "f8", 96)
    values = np.random.default_rng(1).standard_normal((1000, 3))
    values[96:192] = 0.0                                   # chunk 1 left unwritten below
    RawChunks(raw)[0:96] = values[0:96]
    RawChunks(raw)[192:1000] = values[192:1000]
    z = zarr.open_group(str(tmp_path / "raw.zarr"), mode="r")["a"]
    stored = StoredRows(z)
    np.testing.assert_array_equal(compute(stored.to_dask())[0], z[...])
    np.testing.assert_array_equal(compute(stored.to_dask())[0], values)
    r = RawChunks(z)
    np.testing.assert_array_equal(r[0:192], values[:192])
    np.testing.assert_array_equal(r[960:1000], values[960:])
    np.testing.assert_array_equal(r[5:17], values[5:17])
