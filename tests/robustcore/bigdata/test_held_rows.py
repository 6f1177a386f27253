"""A per-row result held in memory enters a Dask computation in place (held_rows): the same
values and blocks as ``da.from_array``, without the copy Dask makes of such an array."""
import numpy as np
import pytest

da = pytest.importorskip("dask.array")

from robustcore.bigdata._rows import as_dask_rows, held_rows  # noqa: E402


@pytest.mark.parametrize("shape, chunks", [((1000,), (300,)), ((1000, 3), (256, 3)), ((7, 2), (7, 2))])
def test_same_blocks_as_from_array_and_no_copy(shape, chunks):
    x = np.random.default_rng(0).standard_normal(shape)
    a, ref = held_rows(x, chunks), da.from_array(x, chunks=chunks)
    assert a.chunks == ref.chunks and a.dtype == ref.dtype
    for got, want in zip(a.to_delayed().ravel(), ref.to_delayed().ravel()):
        blk = got.compute(scheduler="sync")
        assert np.array_equal(blk, want.compute(scheduler="sync"))
        assert np.shares_memory(blk, x)          # read in place, not from a copy
    assert np.array_equal(a.compute(scheduler="sync"), x)
    assert np.array_equal((a * 2 + 1).sum(axis=0).compute(), (ref * 2 + 1).sum(axis=0).compute())


def test_as_dask_rows_of_numpy_reads_in_place():
    x = np.arange(10, dtype=np.float64)
    a = as_dask_rows(x, (4, 4, 2))
    first = a.to_delayed().ravel()[0].compute(scheduler="sync")
    assert np.shares_memory(first, x) and np.array_equal(a.compute(), x)
