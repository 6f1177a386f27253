"""The column statistics of the first pass (robustcore._row_stats) against exact references."""
import math
from fractions import Fraction

import numpy as np
import pytest

from robustcore._row_stats import Moments, column_min_max, scale_rows


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


@pytest.mark.slow
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


def _moments(X, block=4096):
    mom = Moments(X.shape[1], X[:1000].mean(axis=0), scatter=False)
    for s in range(0, X.shape[0], block):
        mom.add(X[s:s + block], s)
    return mom


@pytest.mark.slow
def test_ordinary_blocks_take_one_sweep_with_the_two_pass_digits():
    """Columns near zero in one unit: every block on the one-sweep path, means and spreads to
    1e-12 of their exact values, and lo / hi bounds on the true extremes."""
    rng = np.random.default_rng(4)
    X = np.column_stack([rng.standard_normal(20_000), 3.0 + 2.0 * rng.standard_normal(20_000),
                         1e-100 * rng.standard_normal(20_000), np.zeros(20_000)])
    mom = _moments(X)
    assert mom.fast_blocks == 5
    mean, std = mom.true_mean(), mom.std()
    for j in range(4):
        m, v = _exact_mean_var(X[:, j])
        assert mean[j] == pytest.approx(m, rel=1e-14, abs=1e-12 * math.sqrt(v))
        assert std[j] == pytest.approx(math.sqrt(v), rel=1e-12)
    assert np.all(mom.lo <= X.min(axis=0)) and np.all(mom.hi >= X.max(axis=0))


@pytest.mark.slow
@pytest.mark.parametrize("column", ["far from zero", "constant", "tiny squares", "huge", "nan"])
def test_blocks_that_are_not_ordinary_take_the_exact_path(column):
    rng = np.random.default_rng(5)
    n = 9_000
    c = {"far from zero": 1e6 + rng.standard_normal(n), "constant": np.full(n, 0.1),
         # squares underflow to 0 while the values cancel in the sum: not a column of zeros
         "tiny squares": np.tile([1e-170, -1e-170], n // 2),
         "huge": 1e200 * rng.standard_normal(n), "nan": np.r_[np.nan, rng.standard_normal(n - 1)]}[column]
    X = np.column_stack([rng.standard_normal(n), c])
    mom = _moments(X)
    if column == "nan":            # its block is refused by name; the others are ordinary
        assert mom.bad == 1 and mom.first_bad[:2] == (0, 1) and mom.fast_blocks == 2
        return
    assert mom.fast_blocks == 0
    fr = [Fraction(float(v)) for v in X[:, 1]]
    m = sum(fr) / len(fr)
    var = sum((v - m) ** 2 for v in fr) / len(fr)
    k = 2 * ((var.numerator.bit_length() - var.denominator.bit_length()) // 2)   # even
    std = math.sqrt(float(var / Fraction(2) ** k)) * 2.0 ** (k // 2)   # var may over/underflow
    assert mom.true_mean()[1] == pytest.approx(float(m), rel=1e-14, abs=1e-12 * std)
    assert mom.std()[1] == pytest.approx(std, rel=1e-12)
    np.testing.assert_array_equal(mom.lo, X.min(axis=0))
    np.testing.assert_array_equal(mom.hi, X.max(axis=0))


def test_the_one_sweep_path_changes_no_fit(monkeypatch):
    """Coherence Pursuit and PCA fitted with every block on the exact path: the same within
    rounding."""
    import robustcore._row_stats as rs
    from robustcore.subspace.coherence_pursuit import CoherencePursuit
    from robustcore.subspace.pca import PCA
    rng = np.random.default_rng(6)
    X = np.vstack([rng.standard_normal((6000, 3)) @ rng.standard_normal((3, 12)),
                   3 * rng.standard_normal((1500, 12))]) + 0.01 * rng.standard_normal((7500, 12))
    fits = []
    for cancel in (rs._ORDINARY_CANCEL, 0.0):
        monkeypatch.setattr(rs, "_ORDINARY_CANCEL", cancel)
        fits.append((CoherencePursuit(n_components=3).fit(X), PCA(n_components=3, scale="standard").fit(X)))
    (c1, p1), (c2, p2) = fits
    np.testing.assert_allclose(c1.components_, c2.components_, atol=1e-12)
    np.testing.assert_array_equal(c1.selected_indices_, c2.selected_indices_)
    np.testing.assert_allclose(c1.spe_limit_, c2.spe_limit_, rtol=1e-10)
    np.testing.assert_allclose(p1.scale_, p2.scale_, rtol=1e-12)
    np.testing.assert_allclose(np.abs(p1.components_), np.abs(p2.components_), atol=1e-10)


def test_scale_rows_gives_einsums_bits_with_positive_zeros_for_zero_factors():
    # the rows' normalisation by a broadcast multiply (faster than einsum): every product the
    # same, and a row whose factor is 0 (no length) +0.0 as einsum's sum gave, not -0.0
    rng = np.random.default_rng(3)
    Y = rng.standard_normal((1000, 50)) * rng.lognormal(0, 3, (1000, 1))
    inv = 1.0 / np.sqrt(np.einsum("ij,ij->i", Y, Y))
    inv[::7] = 0.0
    want = np.einsum("ij,i->ij", Y, inv)
    got = scale_rows(Y, inv, np.empty_like(Y))
    assert got.tobytes() == want.tobytes()
    assert not np.signbit(got[::7]).any()
