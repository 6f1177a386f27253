"""Per-row results written around the page cache (bigdata._direct_io, RawChunks' ``direct``):
the files are Zarr's, byte for byte, they leave no pages in the page cache, they read back the
same (around the cache too, also after their store is renamed into place), and where O_DIRECT is
refused they are written the ordinary way."""
import os

import numpy as np
import pytest

zarr = pytest.importorskip("zarr")
pytest.importorskip("dask.array")

from robustcore.bigdata import _direct_io  # noqa: E402
from robustcore.bigdata._rows import RawChunks  # noqa: E402
from tests.page_cache import cached_pages as _cached_pages  # noqa: E402
from tests.robustcore.bigdata.test_raw_chunks import _pair  # noqa: E402


def _direct_supported(tmp_path) -> bool:
    return _direct_io.write_file(str(tmp_path / "probe"), bytes(10))


@pytest.mark.slow
@pytest.mark.parametrize("shape", [(1000,), (1000, 3)])
def test_direct_chunks_are_zarrs_files_and_stay_out_of_the_page_cache(tmp_path, shape):
    if not _direct_supported(tmp_path):
        pytest.skip("this file system refuses O_DIRECT")
    raw, ref = _pair(tmp_path, shape, "f8", 96)            # chunks of 768 or 2304 bytes: not whole blocks
    w = RawChunks(raw, direct=True)
    values = np.random.default_rng(0).standard_normal(shape)
    for s in range(0, 1000, 192):
        w[s:s + 192] = values[s:s + 192]
        ref[s:s + 192] = values[s:s + 192]
    files = sorted(f for f in (tmp_path / "zarr.zarr" / "a" / "c").rglob("*") if f.is_file())
    assert len(files) == 11
    for f in files:
        mine = tmp_path / "raw.zarr" / f.relative_to(tmp_path / "zarr.zarr")
        assert _cached_pages(mine) == 0
        assert mine.read_bytes() == f.read_bytes()
    np.testing.assert_array_equal(zarr.open_group(str(tmp_path / "raw.zarr"), mode="r")["a"][...], values)


def test_a_buffered_write_stays_in_the_page_cache(tmp_path):
    """What the test above rules out (so that it can fail): RawChunks' ordinary writes."""
    raw, _ = _pair(tmp_path, (4096,), "f8", 4096)
    RawChunks(raw)[0:4096] = np.ones(4096)
    assert _cached_pages(tmp_path / "raw.zarr" / "a" / "c" / "0") > 0


@pytest.mark.slow
def test_direct_chunks_read_back_around_the_cache_also_after_a_rename(tmp_path):
    """Reads of an array written around the cache go around it too (a buffered read would put
    the pages there), whole chunks, the edge chunk and a slice inside a chunk alike, by the
    store's new name once it is renamed (as _NewStore.finish renames a finished store)."""
    if not _direct_supported(tmp_path):
        pytest.skip("this file system refuses O_DIRECT")
    from robustcore.bigdata import StoredRows
    from robustcore.bigdata._dask import compute
    raw, _ = _pair(tmp_path, (1000, 3), "f8", 96)
    values = np.random.default_rng(1).standard_normal((1000, 3))
    RawChunks(raw, direct=True)[0:1000] = values
    os.replace(tmp_path / "raw.zarr", tmp_path / "moved.zarr")
    _direct_io.moved(str(tmp_path / "raw.zarr"), str(tmp_path / "moved.zarr"))
    z = zarr.open_group(str(tmp_path / "moved.zarr"), mode="r")["a"]
    r = RawChunks(z)
    assert _direct_io.is_direct(r.folder)
    np.testing.assert_array_equal(r[0:192], values[:192])
    np.testing.assert_array_equal(r[960:1000], values[960:])
    np.testing.assert_array_equal(compute(StoredRows(z).to_dask())[0], values)
    assert all(_cached_pages(f) == 0 for f in (tmp_path / "moved.zarr" / "a" / "c").rglob("*") if f.is_file())
    np.testing.assert_array_equal(r[5:17], values[5:17])      # Zarr's own read: any file


def test_where_o_direct_is_refused_the_files_are_written_as_before(tmp_path, monkeypatch):
    raw, ref = _pair(tmp_path, (300, 2), "f8", 100)
    real_open = os.open

    def refusing(path, flags, *a, **k):
        if flags & getattr(os, "O_DIRECT", 0):
            raise OSError(22, "Invalid argument")          # tmpfs: EINVAL
        return real_open(path, flags, *a, **k)
    monkeypatch.setattr(os, "open", refusing)
    values = np.arange(600.0).reshape(300, 2)
    w = RawChunks(raw, direct=True)
    w[0:300] = values
    ref[0:300] = values
    assert not _direct_io.is_direct(w.folder)
    for f in (tmp_path / "zarr.zarr" / "a" / "c").rglob("*"):
        if f.is_file():
            assert (tmp_path / "raw.zarr" / f.relative_to(tmp_path / "zarr.zarr")).read_bytes() == f.read_bytes()
    np.testing.assert_array_equal(RawChunks(raw)[0:300], values)


@pytest.mark.slow
def test_stored_results_named_direct_are_written_around_the_cache(tmp_path):
    """fill_rows' ``direct`` names: those results, stored, leave nothing in the page cache; the
    others are written as before; both hold the values."""
    if not _direct_supported(tmp_path):
        pytest.skip("this file system refuses O_DIRECT")
    from robustcore.bigdata._dask import settings
    from robustcore.bigdata._rows import fill_rows
    x = np.random.default_rng(2).standard_normal(50_000)
    with settings(memory_budget=1000, store_dir=tmp_path):     # everything stored
        out = fill_rows(lambda v: {"once": v * 2.0, "often": v + 1.0},
                        {"once": ("f8", ()), "often": ("f8", ())}, [x], step=8192, direct=("once",))
    np.testing.assert_array_equal(out["once"][:], x * 2.0)
    np.testing.assert_array_equal(out["often"][:], x + 1.0)
    chunk_files = {k: [f for f in (tmp_path).rglob(f"{k}/c/*") if f.is_file()] for k in ("once", "often")}
    assert chunk_files["once"] and chunk_files["often"]
    assert all(_cached_pages(f) == 0 for f in chunk_files["once"])
    assert any(_cached_pages(f) > 0 for f in chunk_files["often"])
