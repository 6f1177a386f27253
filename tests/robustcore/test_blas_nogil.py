"""robustcore._blas_nogil: scipy's dtrmm called with the GIL released gives scipy's own bits, and
the coherence form gives the same bits whether threads run the blocks (out of core, in-memory
lanes) or the caller's thread alone (issue 36: half the multiply-adds of numpy's product)."""
import numpy as np
import pytest
from scipy.linalg.blas import dtrmm

from robustcore._blas_nogil import trmm_rows
from robustcore._passes import _GilFree
from robustcore.subspace._cop_passes import _CoherenceForm

pytestmark = pytest.mark.skipif(trmm_rows is None, reason="scipy's cython_blas.dtrmm is not reachable here")


def _lower(d, seed=0):
    A = np.random.default_rng(seed).standard_normal((4 * d, d))
    return np.asfortranarray(np.linalg.cholesky(A.T @ A))


@pytest.mark.parametrize("rows, d", [(1, 1), (7, 3), (5242, 50), (1000, 17)])
def test_trmm_rows_is_scipys_dtrmm_to_the_bit(rows, d):
    L = _lower(d)
    X = np.random.default_rng(1).standard_normal((rows, d))
    want = X.copy()
    dtrmm(1.0, L, want.T, side=0, lower=1, trans_a=1, overwrite_b=1)
    got = X.copy()
    assert trmm_rows(got, L) is got
    np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(got, X @ L, rtol=0, atol=1e-12 * np.abs(X @ L).max())


def test_trmm_rows_refuses_what_it_cannot_take_in_place():
    L = _lower(4)
    with pytest.raises(ValueError):
        trmm_rows(np.zeros((5, 4), order="F"), L)
    with pytest.raises(ValueError):
        trmm_rows(np.zeros((5, 4)), np.ascontiguousarray(L))


def test_coherence_form_takes_the_triangular_product_on_threads_too(monkeypatch):
    """Before, blocks run on threads (out of core, in-memory lanes) took numpy's general product,
    d² multiply-adds a row against the triangular one's d²/2; now the triangular product, with
    the one-thread path's bits."""
    import robustcore.subspace._cop_passes as cp
    calls = []

    def spy(X, L):
        calls.append(X.shape)
        return trmm_rows(X, L)
    monkeypatch.setattr(cp, "trmm_rows", spy)
    monkeypatch.setattr(cp, "fits_on_one_blas_thread", lambda: True)
    rng = np.random.default_rng(2)
    d = 50
    Y = rng.standard_normal((20_000, 5)) @ rng.standard_normal((5, d)) + 0.3 * rng.standard_normal((20_000, d))
    Xn = Y / np.linalg.norm(Y, axis=1)[:, None]
    form = _CoherenceForm(Xn.T @ Xn)
    one = form(Xn.copy())
    assert not calls                        # the caller's thread alone: scipy's wrapper
    kept = Xn.copy()
    with _GilFree():
        threads = form(kept, keep=True)
    assert calls == [Xn.shape]
    np.testing.assert_array_equal(threads, one)
    np.testing.assert_array_equal(kept, Xn)         # keep: the rows are left as they were
