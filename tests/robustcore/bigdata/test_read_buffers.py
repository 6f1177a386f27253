"""Blocks read from a .npy file, and the per-row outputs of each block of a pass out of core,
reuse the memory of blocks nothing refers to any more, and never that of a block (or a view of
one) still in use: the values are the file's, and the pass's, either way."""
import weakref

import numpy as np
import pytest

from robustcore._passes import Rows
from robustcore.bigdata import compute, open_table
from robustcore.bigdata import _tables
from robustcore.bigdata._tables import NpyReader, _Buffers


def test_a_buffer_in_use_is_never_handed_out_again():
    pool = _Buffers(keep=2)
    a = pool.take(100)
    b = pool.take(100)
    assert not np.shares_memory(a, b)
    view = a[8:24].view(np.float32)         # a view keeps the buffer in use after its array goes
    del a
    c = pool.take(40)
    assert not np.shares_memory(c, view) and not np.shares_memory(c, b)
    del view, c
    d = pool.take(80)                       # free again: the first buffer, not a new one
    assert len(pool._bufs) == 2 and any(np.shares_memory(d, buf) for buf in pool._bufs)
    assert pool.take(1000).size == 1000     # larger than every kept buffer: a new one


def test_blocks_held_side_by_side_keep_their_own_values(tmp_path):
    X = np.random.default_rng(3).standard_normal((5000, 7)).astype(np.float32)
    p = tmp_path / "t.npy"
    np.save(p, X)
    r = NpyReader(p)
    held = [r.read(s, s + 500) for s in range(0, 5000, 500)]   # more than the pool keeps
    for i, B in enumerate(held):
        np.testing.assert_array_equal(B, X[i * 500:(i + 1) * 500])
    del held
    again = [r.read(s, min(s + 700, 5000)) for s in range(0, 5000, 700)]
    np.testing.assert_array_equal(np.concatenate(again), X)


@pytest.mark.slow
def test_a_pass_over_reused_blocks_gives_the_tables_numbers(tmp_path):
    X = np.random.default_rng(4).standard_normal((20_000, 5)) * 3 + 1
    p = tmp_path / "t.npy"
    np.save(p, X)
    t = open_table(p, chunk_rows=1000)
    for _ in range(2):                      # 20 blocks of a pass in the few buffers the pool keeps
        total, sq = compute(t.array.sum(axis=0), (t.array ** 2).sum(axis=0))
        np.testing.assert_allclose(total, X.sum(axis=0), rtol=1e-12)
        np.testing.assert_allclose(sq, (X ** 2).sum(axis=0), rtol=1e-12)


def test_a_free_buffer_of_the_nearest_size_is_taken():
    pool = _Buffers(keep=3)
    big, small = pool.take(8000), pool.take(1000)
    del big, small
    got = pool.take(900)                    # both are free: the small one, not the big one
    assert got.base.size == 1000
    assert pool.take(7000).base.size == 8000


def _two_outputs(block, start):
    return {"sq": np.einsum("ij,ij->i", block, block), "head": block[:, :3] * 2.0}


def test_a_pass_out_of_core_writes_its_blocks_outputs_into_reused_memory(monkeypatch):
    da = pytest.importorskip("dask.array")
    X = np.random.default_rng(5).standard_normal((20_000, 5))
    pool = _tables._OUTPUTS
    taken = []
    take = pool.take

    def spy(nbytes):
        out = take(nbytes)
        taken.append(weakref.ref(out.base))    # no reference kept: a kept one is never free
        return out
    monkeypatch.setattr(pool, "take", spy)
    monkeypatch.setattr(pool, "clear", lambda: None)       # the pass's buffers, looked at after it
    spec = {"sq": (np.dtype("f8"), ()), "head": (np.dtype("f8"), (3,))}
    lazy = Rows(da.from_array(X, chunks=(1000, 5))).map(_two_outputs, spec)
    want = Rows(X).map(_two_outputs, spec)
    for k in spec:
        np.testing.assert_array_equal(np.asarray(lazy[k][:]), want[k])
    # 20 blocks, two outputs each, in the few buffers the pool keeps (made afresh, each would be
    # new memory, a page fault per 4 KB)
    assert len(taken) == 40
    alive = {id(r()) for r in taken if r() is not None}
    assert all(r() is not None for r in taken) and len(alive) <= pool.keep
    pool._bufs.clear()
