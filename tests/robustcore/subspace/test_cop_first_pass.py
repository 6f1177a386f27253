"""What Coherence Pursuit's first pass hands to the later ones, and the calibration sums by
either library's syrk: each fast path gives the exact route's numbers (issue 36).

- every row's |x|², made by the first pass beside C (``Moments``' ``row_sq``), is read by the
  bounds pass instead of made again: the same selection, subspace, limits and scores as the
  route that makes every row's exact coherence, float32 input included, and not used where a
  block was rescaled by a power of two first (values near 1e125 or 1e-130);
- the calibration EᵀE by numpy's syrk (where fits run BLAS on one thread) or scipy's in place
  (where the user asked for several threads): the same spectrum to rounding.
"""
import numpy as np
import pytest

from robustcore._blas_policy import USER_THREAD_VARIABLES, fits_on_one_blas_thread
from robustcore.subspace.coherence_pursuit import CoherencePursuit

from .test_cop_fast_paths import _assert_fits_agree, _exact_fit, _planted, _same


def _spy_bounds(monkeypatch):
    """Rows whose |x|² the bounds pass read from the first pass (per block), and rows of blocks
    that made it themselves."""
    from robustcore.subspace import _cop_bounds
    handed, made = [], []
    with_sq, without = _cop_bounds.bounds_block_sq, _cop_bounds.bounds_block

    def spy_sq(B, start, sq, *a):
        handed.append(B.shape[0])
        np.testing.assert_array_equal(sq, np.einsum("ij,ij->i", B, B))    # the same numbers
        return with_sq(B, start, sq, *a)

    def spy(B, start, *a):
        if len(a) == 3:              # called by the pass itself, not through bounds_block_sq
            made.append(B.shape[0])
        return without(B, start, *a)
    monkeypatch.setattr(_cop_bounds, "bounds_block_sq", spy_sq)
    monkeypatch.setattr(_cop_bounds, "bounds_block", spy)
    return handed, made


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_bounds_pass_reads_the_first_pass_row_norms_and_equals_the_exact_route(monkeypatch, dtype):
    X = _planted(seed=8, n=5003, d=24, r=4).astype(dtype)
    kw = dict(n_components=4, scale="none", chunk_size=601)
    handed, made = _spy_bounds(monkeypatch)
    fast = CoherencePursuit(**kw).fit(X)
    assert "_coherence_maker" in fast.__dict__                     # selected from bounds
    assert sum(handed) == X.shape[0] and not made                  # every row's |x|² handed on
    exact = _exact_fit(monkeypatch, X, **kw)
    _assert_fits_agree(fast, exact, X)
    np.testing.assert_array_equal(fast.coherence_, exact.coherence_)
    if dtype is np.float32:
        # float32 rows are read as the float64 numbers they hold: the same fit, bit for bit
        wide = CoherencePursuit(**kw).fit(X.astype(np.float64))
        np.testing.assert_array_equal(fast.components_, wide.components_)
        assert fast.spe_limit_ == wide.spe_limit_ and fast.t2_limit_ == wide.t2_limit_
        np.testing.assert_array_equal(fast.score_samples(X), wide.score_samples(X.astype(np.float64)))


@pytest.mark.parametrize("factor", [1e125, 1e-130])
def test_rescaled_blocks_make_their_row_norms_in_the_bounds_pass(monkeypatch, factor):
    """Values near 1e125 (squares beyond 2^800) or 1e-130: the first pass rescales each block
    by a power of two, so its |x|² are not the rows' and the bounds pass makes its own; the fit
    is the unscaled table's, scaled (limits by factor², scores the same)."""
    X = _planted(seed=9, n=3001, d=24, r=4)
    kw = dict(n_components=4, scale="none")
    handed, made = _spy_bounds(monkeypatch)
    big = CoherencePursuit(**kw).fit(X * factor)
    assert not handed and sum(made) == X.shape[0]
    plain = CoherencePursuit(**kw).fit(X)
    np.testing.assert_array_equal(big.selected_indices_, plain.selected_indices_)
    _same(big.components_, plain.components_, 1e-10)
    _same(big.spe_limit_ / factor ** 2, plain.spe_limit_, 1e-10)
    _same(big.score_samples(X * factor), plain.score_samples(X), 1e-10)


def test_calibration_sums_by_either_syrk_agree():
    """CalibrationBand's EᵀE by numpy's syrk and by scipy's in place, over the same blocks."""
    from robustcore.subspace._cop_calibration import CalibrationBand, calibration_band, residual_block
    from robustcore.subspace._cop_passes import _Prep
    from robustcore._residual import ResidualKernel
    X = _planted(seed=10, n=4000, d=24, r=4)
    comps = CoherencePursuit(n_components=4, scale="none").fit(X).components_
    zero = np.zeros(X.shape[1])
    band = calibration_band(X, comps)
    sums = []
    for numpy_syrk in (False, True):
        acc = CalibrationBand(comps, zero, band, numpy_syrk=numpy_syrk)
        kern = ResidualKernel(comps, zero)
        for s in range(0, X.shape[0], 700):
            residual_block(X[s:s + 700], s, np.zeros(700, bool)[:X[s:s + 700].shape[0]], _Prep(None, zero),
                           kern, acc)
        sums.append((np.tril(acc.EE), acc.n, acc.tt))
    (a, na, ta), (b, nb, tb) = sums
    assert na == nb and na > 0.5 * X.shape[0]
    np.testing.assert_array_equal(ta, tb)
    assert np.abs(a - b).max() <= 1e-13 * np.abs(a).max()


def test_numpy_syrk_only_where_fits_run_blas_on_one_thread(monkeypatch):
    """The rule read from the environment: no variable (fits hold BLAS to one thread) or every
    variable set to 1; a count above 1 anywhere keeps scipy's in-place syrk. Fits either way
    agree to rounding."""
    assert fits_on_one_blas_thread({})
    assert fits_on_one_blas_thread({"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": " 1 "})
    assert not fits_on_one_blas_thread({"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "4"})
    assert not fits_on_one_blas_thread({"MKL_NUM_THREADS": "2"})
    from robustcore.subspace import _cop_calibration
    flags = []
    init = _cop_calibration.CalibrationBand.__init__

    def spy(self, *a, **k):
        flags.append(k.get("numpy_syrk"))
        init(self, *a, **k)
    monkeypatch.setattr(_cop_calibration.CalibrationBand, "__init__", spy)
    X = _planted(seed=11, n=4000, d=24, r=4)
    fits = []
    for value in ("1", "3"):
        for var in USER_THREAD_VARIABLES:
            monkeypatch.setenv(var, value)
        flags.clear()
        fits.append(CoherencePursuit(n_components=4, scale="none").fit(X))
        assert flags and all(f is (value == "1") for f in flags)
    _assert_fits_agree(fits[0], fits[1], X, rtol=1e-12)
