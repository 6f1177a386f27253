"""Blocks read from a .npy file reuse the memory of blocks nothing refers to any more, and never
that of a block (or a view of one) still in use: the values are the file's either way."""
import numpy as np
import pytest

from robustcore.bigdata import compute, open_table
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
