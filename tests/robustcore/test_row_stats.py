"""The column statistics of the first pass (robustcore._row_stats) against exact references."""
import math
from fractions import Fraction

import numpy as np
import pytest

from robustcore._row_stats import Moments, column_min_max


@pytest.mark.parametrize("rows", [1, 31, 32, 33, 1000, 5243])
def test_column_min_max_equals_numpy(rows):
    rng = np.random.default_rng(rows)
    B = rng.standard_normal((rows, 7))
    lo, hi = column_min_max(B)
    np.testing.assert_array_equal(lo, B.min(axis=0))
    np.testing.assert_array_equal(hi, B.max(axis=0))
    # a strided view (not C-contiguous) and a NaN, which both must report
    V = B[::2]
    np.testing.assert_array_equal(column_min_max(V)[0], V.min(axis=0))
    B[rows // 2, 3] = np.nan
    lo, hi = column_min_max(B)
    assert np.isnan(lo[3]) and np.isnan(hi[3])
    assert np.isfinite(np.delete(lo, 3)).all()


def _exact_mean_var(col):
    """Mean and (ddof 0) variance of a column in exact rational arithmetic."""
    fr = [Fraction(float(v)) for v in col]
    m = sum(fr) / len(fr)
    return float(m), float(sum((v - m) ** 2 for v in fr) / len(fr))


def test_moments_keep_the_digits_of_columns_far_from_zero_and_drifting():
    """A column at 1e6 +- 1e-3 and one drifting far from the shift (the first rows' mean) from
    block to block: means and spreads to 1e-12 of their exact values."""
    rng = np.random.default_rng(0)
    n = 20_000
    X = np.column_stack([1e6 + 1e-3 * rng.standard_normal(n),
                         np.linspace(0.0, 1e4, n) + rng.standard_normal(n),
                         rng.standard_normal(n)])
    mom = Moments(3, X[:1000].mean(axis=0), scatter=False)
    for s in range(0, n, 4096):
        mom.add(X[s:s + 4096], s)
    mean, std = mom.true_mean(), mom.std()
    for j in range(3):
        m, v = _exact_mean_var(X[:, j])
        assert mean[j] == pytest.approx(m, rel=1e-15, abs=1e-12 * math.sqrt(v))
        assert std[j] == pytest.approx(math.sqrt(v), rel=1e-12)
