"""The column moments take a float32 block as it is read and convert it in their first sweep
(robustcore._passes._block_for): the same sums, to the bit, as from the block made float64 first."""
import numpy as np
import pytest

from robustcore._passes import Rows, _block_for
from robustcore._row_stats import Moments


def _state(m: Moments):
    out = [m.n, m.S, m.M2, m.e, m.lo, m.hi, m.bad, m.first_bad, m.fast_blocks]
    if m.gram:
        out += [m.G, m.top_norm, m.low_norm]
    return out


def _blocks(rng):
    ordinary = (rng.standard_normal((3000, 7)) + 2.0).astype(np.float32)
    far = ordinary + np.float32(1e6)                               # cancels: the two-pass path
    huge = ordinary * np.float32(3e38)                             # squares overflow
    bad = ordinary.copy()
    bad[5, 2] = np.nan
    return {"ordinary": ordinary, "far from zero": far, "huge": huge, "not finite": bad}


@pytest.mark.parametrize("scatter,gram", [(True, False), (True, True), (False, False)])
@pytest.mark.parametrize("kind", ["ordinary", "far from zero", "huge", "not finite"])
def test_float32_blocks_give_the_float64_sums(kind, scatter, gram):
    B = _blocks(np.random.default_rng(0))[kind]
    shift = B[:100].astype(np.float64).mean(axis=0)
    a, b = Moments(7, shift, scatter, gram), Moments(7, shift, scatter, gram)
    assert _block_for(a, B) is B                                   # passed as it is read
    for s in range(0, B.shape[0], 512):
        a.add(_block_for(a, B[s:s + 512]), s)
        b.add(B[s:s + 512].astype(np.float64), s)
    for x, y in zip(_state(a), _state(b)):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_a_float32_table_reduces_to_the_sums_of_its_float64_copy():
    X = _blocks(np.random.default_rng(1))["ordinary"]
    make = lambda: Moments(7, X[:100].astype(np.float64).mean(axis=0), True, True)  # noqa: E731
    a, b = Rows(X).reduce(make), Rows(X.astype(np.float64)).reduce(make)
    for x, y in zip(_state(a), _state(b)):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
