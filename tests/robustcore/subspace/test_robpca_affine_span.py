"""ROBPCA's affine span test from the survey's Gram matrix of a tenth of the rows, made from the
float32 copy's products with a bound on their error (robustcore.subspace._robpca_rows.survey,
robustcore.subspace.robpca._affine_span)."""
from __future__ import annotations

import numpy as np
import pytest

from robustcore.subspace import _robpca_rows as rows_mod
from robustcore.subspace._robpca_rows import CentredRows
from robustcore.subspace.robpca import _above, _affine_span


def _exact_gram(Z, mean, step):
    P = Z[::step] - mean
    return P.T @ P


@pytest.mark.parametrize("spread", [1.0, 1e6])
def test_survey_gram_error_is_bounded_by_the_stated_error(spread):
    """The float32 products' Gram matrix is the float64 one within the error the survey states
    (several blocks; columns of very different sizes, rows far from zero before centring)."""
    rng = np.random.default_rng(0)
    Z = 1e3 + rng.standard_normal((20000, 40)) * np.geomspace(spread, 1e-3, 40)
    mean = Z.mean(axis=0)
    rows = CentredRows(Z, mean)
    assert rows.rows_per_block() < 10000                    # more than one block
    sq, G, err = rows.survey(5)
    diff = np.linalg.norm(G - _exact_gram(Z, mean, 5), 2)
    assert 0.0 < diff <= err
    assert err < 1e-4 * sq


def test_survey_gram_error_bound_holds_where_the_tenth_is_below_float32s_normal_range():
    """Blocks of ordinary size whose tenth of rows is tiny (entries and products below float32's
    smallest normal number): the bound still holds (its absolute terms)."""
    rng = np.random.default_rng(4)
    Z = rng.standard_normal((3000, 30)) * 1e-10
    Z[::5] = rng.standard_normal((600, 30)) * 1e-40
    rows = CentredRows(Z, np.zeros(30))
    sq, G, err = rows.survey(5)
    assert np.linalg.norm(G - _exact_gram(Z, np.zeros(30), 5), 2) <= err


def test_survey_gram_of_entries_beyond_float32s_products_is_float64s():
    """Entries whose products float32 cannot hold: the block's product in float64, error 0."""
    rng = np.random.default_rng(1)
    Z = rng.standard_normal((3000, 30)) * 1e20
    mean = Z.mean(axis=0)
    sq, G, err = CentredRows(Z, mean).survey(5)
    assert err == 0.0
    exact = _exact_gram(Z, mean, 5)
    np.testing.assert_allclose(G, exact, rtol=0, atol=1e-12 * np.abs(exact).max())


def test_affine_span_decides_from_float64_where_float32s_margin_is_not_there(monkeypatch):
    """A column nearly another's: the tenth's smallest eigenvalue above the floor (1e-8 of the
    sum of squares) but within the float32 products' error of it. The rows are still found to
    be their own coordinates from the tenth (the float64 Gram matrix of the tenth decides, as
    before the float32 products), without the full Gram matrix's test."""
    rng = np.random.default_rng(2)
    Z = rng.standard_normal((2000, 20))
    Z[:, -1] = Z[:, 0] + 0.005 * rng.standard_normal(2000)
    mean = Z.mean(axis=0)
    sq, G, err = CentredRows(Z, mean).survey(10)
    smallest = np.linalg.eigvalsh(_exact_gram(Z, mean, 10))[0]
    assert 1e-8 * sq < smallest < 1e-8 * sq + err        # (the case this test is about)
    assert not _above(G, 1e-8 * sq + err)

    def no_full_test(*a, **k):
        raise AssertionError("the full Gram matrix's test ran")
    monkeypatch.setattr("robustcore.subspace.robpca.np.linalg.eigvalsh", no_full_test)
    got_mean, rot, X0 = _affine_span(Z, 2000)
    assert rot is None and X0.shift is not None and X0.rows32 is not None
    np.testing.assert_array_equal(got_mean, mean)


def test_affine_span_of_a_dependent_column_still_finds_the_span():
    """A column exactly another's: neither the float32 nor the float64 test of the tenth passes,
    and the rows are taken to their span's coordinates (rank 19 of 20), as before."""
    rng = np.random.default_rng(3)
    Z = rng.standard_normal((2000, 20))
    Z[:, -1] = 2.0 * Z[:, 0]
    _, rot, X0 = _affine_span(Z, 2000)
    assert rot is not None and rot.shape == (19, 20)


def test_single_gram_error_grows_with_the_rows_summed():
    assert rows_mod._single_gram_error(1.0, 200, 10) > rows_mod._single_gram_error(1.0, 100, 10) > 2.0 ** -23


def test_survey_sum_of_squares_is_the_centred_rows_by_a_dot_product_where_contiguous():
    # the affine span's floor is 1e-8 of the centred rows' sum of squares: one BLAS dot product
    # of each contiguous block (27 against einsum's 66 us a block), einsum's for any other
    rng = np.random.default_rng(4)
    Z = 3.0 + rng.standard_normal((5000, 30)) * np.linspace(0.1, 5.0, 30)
    mean = Z.mean(axis=0)
    sq, _, _ = CentredRows(Z, mean).survey(10)
    want = float(np.einsum("ij,ij->", Z - mean, Z - mean))
    assert sq == pytest.approx(want, rel=1e-13)
    B = Z[:700] - mean
    assert rows_mod._sum_of_squares(B) == float(B.reshape(-1) @ B.reshape(-1))
    view = B[:, ::2]
    assert rows_mod._sum_of_squares(view) == float(np.einsum("ij,ij->", view, view))
