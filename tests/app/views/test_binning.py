"""The binning of heatmaps (app.views._binning) against references computed another way: a
reshape-mean over the exact multiples and plain loops over the ragged last bins."""
import numpy as np
import pytest

from app.views._binning import (MAX_BINS, QT_MAX_PIXELS, Bins, Cancelled, bin_array, bin_vector, bins_for,
                                fit_picture)


def reference(a, rows: Bins, cols: Bins, how: str) -> np.ndarray:
    """Bins of ``a`` the slow, obvious way: full bins by reshape, the last (ragged) ones by loops."""
    a = np.asarray(a, dtype=float)[rows.start:rows.stop, cols.start:cols.stop]
    out = np.empty((rows.count, cols.count))
    fr, fc = rows.length // rows.size, cols.length // cols.size   # bins without a ragged edge
    full = a[:fr * rows.size, :fc * cols.size].reshape(fr, rows.size, fc, cols.size)
    if how == "mean":
        out[:fr, :fc] = full.mean(axis=(1, 3))
    else:
        hi, lo = full.max(axis=(1, 3)), full.min(axis=(1, 3))
        out[:fr, :fc] = np.where(-lo > hi, lo, hi)
    for i in range(rows.count):
        for j in range(cols.count):
            if i < fr and j < fc:
                continue
            cell = a[i * rows.size:(i + 1) * rows.size, j * cols.size:(j + 1) * cols.size].ravel()
            if how == "mean":
                out[i, j] = cell.mean()
            else:
                k = np.argmax(np.abs(cell))
                out[i, j] = cell[k] if np.abs(cell).max() > cell.max() or cell[k] >= 0 else cell.max()
    return out


@pytest.mark.parametrize("n", [1, 7, 2048, 2049, 32_767, 32_768, 33_000])
def test_bins_cover_every_row_once_and_stay_under_the_bound(n):
    b = bins_for(0, n)
    assert b.count <= MAX_BINS
    edges = b.edges()
    assert edges[0] == 0 and edges[-1] == n and np.all(np.diff(edges) >= 1)
    assert np.all(np.diff(edges)[:-1] == b.size) and 1 <= b.last <= b.size
    assert b.binned == (n > MAX_BINS)
    # Every row is in the bin whose span holds it.
    for i in (0, n // 2, n - 1):
        lo, hi = b.span(b.of(i))
        assert lo <= i < hi


def test_the_bound_is_never_above_qt():
    assert bins_for(0, 10**6, limit=10**9).count <= QT_MAX_PIXELS
    assert bins_for(0, 50, limit=0).count == 1


def test_description_says_how():
    assert bins_for(0, 33_000, 825).describe("samples") == "33,000 samples in 825 bins of 40"
    assert bins_for(0, 33_001, 825).describe("samples") == "33,001 samples in 805 bins of 41 (the last of 37)"
    assert bins_for(0, 300).describe("samples") == "300 samples"


@pytest.mark.parametrize("n, d", [(1, 1), (1, 8), (7, 3), (32_767, 8), (32_768, 8), (33_000, 8), (2_000, 1),
                                  (50, 40_000)])
@pytest.mark.parametrize("how", ["mean", "absmax"])
def test_bin_array_equals_the_reference(n, d, how):
    rng = np.random.default_rng(n + d)
    a = rng.normal(size=(n, d))
    a[rng.random(a.shape) < 0.01] *= -50   # gross entries of both signs
    rows, cols = bins_for(0, n), bins_for(0, d)
    got = bin_array(a, rows, cols, how)
    assert got.shape == (rows.count, cols.count)
    np.testing.assert_allclose(got, reference(a, rows, cols, how), rtol=1e-12, atol=1e-12)


def test_absmax_keeps_the_sign_and_the_single_gross_entry():
    a = np.zeros((40, 4))
    a[13, 2] = -9.0
    a[14, 2] = 5.0
    a[30, 0] = 3.0
    got = bin_array(a, bins_for(0, 40, 2), bins_for(0, 4, 2), "absmax")
    np.testing.assert_array_equal(got, [[0.0, -9.0], [3.0, 0.0]])
    # a tie of magnitudes: the positive one
    np.testing.assert_array_equal(bin_vector([2.0, -2.0], bins_for(0, 2, 1)), [2.0])


@pytest.mark.parametrize("how", ["mean", "absmax"])
def test_a_window_of_rows_and_columns(how):
    """Zooming in bins only the visible rows and columns, down to single rows."""
    rng = np.random.default_rng(3)
    a = rng.normal(size=(5_000, 30))
    rows, cols = bins_for(1_234, 4_321, 100), bins_for(5, 29, 7)
    np.testing.assert_allclose(bin_array(a, rows, cols, how),
                               reference(a[1_234:4_321, 5:29], bins_for(0, 3_087, 100), bins_for(0, 24, 7), how))
    one = bins_for(100, 140, 2048)
    assert not one.binned
    np.testing.assert_array_equal(bin_array(a, one, bins_for(0, 30), how), a[100:140])


def test_blocks_that_end_inside_a_bin(monkeypatch):
    """Blocks are cut by memory, not by bins: a bin split over two blocks is one bin."""
    import app.views._binning as binning
    monkeypatch.setattr(binning, "BLOCK_VALUES", 7 * 9)   # 9 columns: 7 rows a block, bins of 10 rows
    a = np.random.default_rng(4).normal(size=(103, 9))
    rows, cols = bins_for(0, 103, 11), bins_for(0, 9)
    for how in ("mean", "absmax"):
        np.testing.assert_allclose(bin_array(a, rows, cols, how), reference(a, rows, cols, how), rtol=1e-12)


def test_memmap_and_zarr_are_read_in_blocks(tmp_path, monkeypatch):
    import zarr

    import app.views._binning as binning
    monkeypatch.setattr(binning, "BLOCK_VALUES", 4_000)
    a = np.random.default_rng(5).normal(size=(9_001, 12)).astype(np.float32)
    mm = np.lib.format.open_memmap(tmp_path / "a.npy", mode="w+", dtype=np.float32, shape=a.shape)
    mm[:] = a
    mm.flush()
    z = zarr.open_array(str(tmp_path / "a.zarr"), mode="w", shape=a.shape, chunks=(250, 12), dtype="f4")
    z[:] = a
    reads = []

    class Counted:
        shape, chunks = z.shape, z.chunks

        def __getitem__(self, key):
            reads.append(key[0].stop - key[0].start)
            return z[key]

    rows, cols = bins_for(0, 9_001, 64), bins_for(0, 12, 5)
    ref = {how: reference(a, rows, cols, how) for how in ("mean", "absmax")}
    for src in (np.load(tmp_path / "a.npy", mmap_mode="r"), Counted()):
        for how in ("mean", "absmax"):
            reads.clear()
            np.testing.assert_allclose(bin_array(src, rows, cols, how), ref[how], rtol=1e-6)
    # whole chunks of the store, never more than the block bound, the whole array once
    assert max(reads) <= 4_000 // 12 and all(r % 250 == 0 for r in reads[:-1]) and sum(reads) == 9_001


def test_cancel_between_blocks(monkeypatch):
    import app.views._binning as binning
    monkeypatch.setattr(binning, "BLOCK_VALUES", 100)
    asked = []

    def cancelled():
        asked.append(1)
        return len(asked) > 2

    with pytest.raises(Cancelled):
        bin_array(np.ones((1_000, 10)), bins_for(0, 1_000, 10), bins_for(0, 10), cancelled=cancelled)
    assert len(asked) == 3


def test_bad_requests_say_what_is_wrong():
    with pytest.raises(ValueError, match="empty range"):
        bins_for(5, 5)
    with pytest.raises(ValueError, match="do not fit"):
        bin_array(np.ones((3, 3)), bins_for(0, 4), bins_for(0, 3))
    with pytest.raises(ValueError, match="how must be"):
        bin_array(np.ones((3, 3)), bins_for(0, 3), bins_for(0, 3), "median")


def test_fit_picture_only_reduces_what_is_too_large():
    img = np.arange(12.0).reshape(3, 4)
    same, r, c = fit_picture(img)
    assert same is img and not (r.binned or c.binned)
    rgb = np.random.default_rng(6).integers(0, 255, size=(5, 40_000, 3)).astype(np.uint8)
    small, r, c = fit_picture(rgb)
    assert small.shape == (5, c.count, 3) and c.count <= MAX_BINS and small.dtype == np.uint8
    np.testing.assert_allclose(small[..., 1], reference(rgb[..., 1], r, c, "mean").astype(np.uint8), atol=0)


@pytest.mark.slow
@pytest.mark.parametrize("d", [1, 8])
def test_a_million_rows(d):
    a = np.random.default_rng(7).standard_t(2, size=(1_000_000, d))
    rows, cols = bins_for(0, a.shape[0]), bins_for(0, d)
    for how in ("mean", "absmax"):
        np.testing.assert_allclose(bin_array(a, rows, cols, how), reference(a, rows, cols, how), rtol=1e-9)


@pytest.mark.slow
def test_a_hundred_thousand_columns():
    a = np.random.default_rng(8).normal(size=(200, 100_000))
    rows, cols = bins_for(0, 200), bins_for(0, 100_000)
    assert cols.count <= MAX_BINS and not rows.binned
    for how in ("mean", "absmax"):
        np.testing.assert_allclose(bin_array(a, rows, cols, how), reference(a, rows, cols, how), rtol=1e-9)
