"""Coherence Pursuit's steps after its passes, out of core, in fewer sweeps over the stored
results: each against the route it replaces on the same scores (in memory, or the stored route
as it was), to the bit.

- the calibration rows: the log SPE and the MAD's deviations made slice by slice from the SPE
  (never written), both masks and the count in one sweep (``_cop_passes._calibration_mask``);
  the residual pass then stores no log SPE;
- the limits' training T² in plain slices of the stored projections, with the combined score's
  histogram over the rows not excluded counted in the same sweep (``_base._sliced_t2``);
- a robust outlier map's median and MAD of OD^(2/3) from one np.cbrt of the SPE
  (``outlier_map._sliced_map``), against np.percentile of np.cbrt(SPE) itself.
"""
import numpy as np
import pytest

da = pytest.importorskip("dask.array")
pytest.importorskip("zarr")

from robustcore import CoherencePursuit  # noqa: E402
from robustcore.bigdata import StoredRows, settings  # noqa: E402
from robustcore.bigdata._dask import compute  # noqa: E402
from robustcore.bigdata._rows import held_rows, hold, materialize  # noqa: E402
from robustcore.outlier_map import MAD_NORMAL, _od_cutoff, _sliced_map  # noqa: E402
from robustcore.subspace._base import TrainingScores, _calibrate_stored  # noqa: E402
from robustcore.subspace._cop_passes import _calibration_mask  # noqa: E402
from robustcore._residual import weighted_squares  # noqa: E402

N, K, CHUNK = 20_000, 3, 1_500
BUDGET = int(8 * N / 0.4) + 1        # one float64 per row held; anything more is stored


def _values(a):
    return compute(a.to_dask())[0] if isinstance(a, StoredRows) else np.asarray(a)


def _stored(tmp_path, name, **arrays):
    """Every array stored (a budget that holds nothing)."""
    with settings(memory_budget=1, store_dir=tmp_path):
        got = materialize({k: held_rows(v, (CHUNK,) + v.shape[1:]) for k, v in arrays.items()}, name=name)
    assert all(isinstance(v, StoredRows) for v in got.values())
    return got


@pytest.fixture
def planted():
    """log SPE of inliers around 0 with a tail of planted gross outliers (rows 0-599), some
    degenerate rows, coordinates along three components."""
    rng = np.random.default_rng(7)
    log_spe = rng.standard_normal(N) * 0.5
    log_spe[:600] += 6.0
    degenerate = np.zeros(N, bool)
    degenerate[rng.choice(N, 40, replace=False)] = True
    P = rng.standard_normal((N, K)) * np.array([3.0, 2.0, 1.0])
    spe = np.exp(log_spe)
    return log_spe, degenerate, P, spe


def test_calibration_rows_from_stored_spe_equal_the_in_memory_rows(planted, tmp_path):
    _, degenerate, _, spe = planted
    log_spe = np.log(spe)
    n_use = N - int(degenerate.sum())
    mem = _calibration_mask(spe, degenerate, n_use, 5)
    st = _stored(tmp_path, "cal", spe=spe, degenerate=degenerate)
    with settings(memory_budget=BUDGET, store_dir=tmp_path):
        got = _calibration_mask(st["spe"], st["degenerate"], n_use, 5)
    keep, n_keep, cut, left_out = mem
    assert got[1] == n_keep and got[2] == cut
    np.testing.assert_array_equal(_values(got[0]), keep)
    np.testing.assert_array_equal(_values(got[3]), left_out)
    # the planted tail is out of both, and so are the degenerate rows; the inliers are in
    assert not keep[:600].any() and left_out[:600].all() and not keep[degenerate].any()
    assert n_keep > 0.95 * (n_use - 600)
    # the cut is median + 3 robust deviations of the usable rows' log SPE, computed plainly
    u = log_spe[~degenerate]
    med = np.median(u)
    assert cut == pytest.approx(med + 3 * MAD_NORMAL * np.median(np.abs(u - med)), rel=1e-12)


def test_too_few_calibration_rows_fall_back_to_every_usable_row_out_of_core_too(planted, tmp_path):
    _, degenerate, _, spe = planted
    n_use = N - int(degenerate.sum())
    st = _stored(tmp_path, "cal", spe=spe, degenerate=degenerate)
    with settings(memory_budget=BUDGET, store_dir=tmp_path):
        keep, n_keep, cut, left_out = _calibration_mask(st["spe"], st["degenerate"], n_use, N)
    assert n_keep == n_use and cut is None
    np.testing.assert_array_equal(_values(keep), ~degenerate)
    np.testing.assert_array_equal(_values(left_out), degenerate)


def test_the_residual_pass_stores_no_log_spe_out_of_core(tmp_path):
    """The calibration mask makes the log SPE from the stored SPE in each sweep: the residual
    pass writes the SPE and the coordinates only (a 240 MB log SPE at 30M rows was written and
    read back five times), and the fit's calibration rows are those of the fit in memory."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((N, 4)) @ rng.standard_normal((4, 12)) + 0.1 * rng.standard_normal((N, 12))
    X[:300] += 5.0 * rng.standard_normal((300, 12))
    mem = CoherencePursuit(n_components=4).fit(X)
    with settings(memory_budget=1, store_dir=tmp_path):
        lazy = CoherencePursuit(n_components=4).fit(da.from_array(X, chunks=(CHUNK, 12)))
        calibration = _values(lazy.calibration_indices_)
    stored = {p.name for p in tmp_path.rglob("*") if p.is_dir() and p.parent.suffix in (".zarr", ".partial")}
    assert "spe" in stored and "projection" in stored and "log_spe" not in stored
    np.testing.assert_array_equal(calibration, mem.calibration_indices_)
    # (in memory and out of core differ in their BLAS products' rounding only)
    assert lazy.spe_limit_ == pytest.approx(mem.spe_limit_, rel=1e-10)
    assert lazy.t2_limit_ == pytest.approx(mem.t2_limit_, rel=1e-10)


@pytest.mark.parametrize("trimmed", [False, True])
def test_training_t2_in_slices_with_its_histogram_calibrates_as_in_memory(planted, tmp_path, trimmed):
    _, _, P, spe = planted
    var = P.var(axis=0, ddof=1) * 1.3
    exclude = (np.arange(N) % 29 == 0) if trimmed else None
    lim = (float(np.quantile(spe, 0.99)), 11.0)
    st = _stored(tmp_path, "proj", projection=P)
    est = CoherencePursuit()
    est._training_t2 = None                 # as inside fit_row_results: the T² is remembered
    with settings(memory_budget=BUDGET, store_dir=tmp_path):
        spe_held = hold(spe.copy())
        training = est._training_provider(None, {}, None, None, kept={"spe": spe_held, "projection": st["projection"]},
                                          exclude=exclude)(var)
        got = training.calibrate(*lim, 0.01)
        made = training._get()
        # the stored route as it was: its own histogram sweep over the same scores
        before = _calibrate_stored(spe_held, made["t2"], exclude, *lim, 0.01, trimmed)
    t2 = weighted_squares(P, 1.0 / var)
    np.testing.assert_array_equal(_values(made["t2"]), t2)
    np.testing.assert_array_equal(_values(est._training_t2[1]), t2)
    assert made["histogram"][0] == lim and made["histogram_excludes"]
    mem = TrainingScores(lambda: {"spe": spe, "t2": t2}, exclude=exclude).calibrate(*lim, 0.01)
    assert got == before == mem


@pytest.mark.parametrize("spe_held", [True, False])
def test_robust_od_cutoff_in_slices_is_the_percentiles_of_cbrt_spe(planted, tmp_path, spe_held):
    _, _, P, spe = planted
    spe = spe * 0.1
    var = P.var(axis=0, ddof=1)
    t2 = weighted_squares(P, 1 / var)
    st = _stored(tmp_path, "map", t2=t2, projection=P, **({} if spe_held else {"spe": spe}))
    with settings(memory_budget=BUDGET, store_dir=tmp_path):
        got = _sliced_map(hold(spe.copy()) if spe_held else st["spe"], st["t2"], st["projection"], robust=True,
                          crit=0.975, cutoffs=None, variances=var)
    w = np.cbrt(spe)
    centre = float(np.percentile(w, 50))
    spread = MAD_NORMAL * float(np.percentile(np.abs(w - centre), 50))
    assert got["od_cutoff"] == _od_cutoff(centre, spread, 0.975)
    far_off = np.sqrt(spe) > got["od_cutoff"]
    assert far_off[:600].mean() > 0.9 and far_off[600:].mean() < 0.05
