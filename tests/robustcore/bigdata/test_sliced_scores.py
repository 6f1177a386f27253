"""What an out-of-core fit derives from its stored scores after the passes (the flags, the outlier
map, the calibration) in plain numpy slices: the one route for scores held, stored or given as
Dask arrays (computed once first), against the same rules on the scores in memory: the same
flags and outlier scores to the bit, the same distances and regions, the same region counts,
the same calibration; OD's cut-off to 1e-9 (in memory a median is np.median's mean of the two
middle values, here numpy's percentile interpolation; a classical fit's mean and spread are
merged slice by slice)."""
from types import SimpleNamespace

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
pytest.importorskip("zarr")

from robustcore.bigdata import StoredRows, settings  # noqa: E402
from robustcore.bigdata._dask import compute  # noqa: E402
from robustcore.bigdata._rows import fill_rows, held_rows, hold, materialize  # noqa: E402
from robustcore.outlier_map import _sliced_map, outlier_map_of_scores  # noqa: E402
from robustcore.subspace._base import SubspaceModel  # noqa: E402
from robustcore._residual import weighted_squares  # noqa: E402

N, K, CHUNK = 20_000, 3, 1_500


def _values(a):
    return compute(a.to_dask())[0] if isinstance(a, StoredRows) else np.asarray(a)


@pytest.fixture
def scores(tmp_path):
    """SPE held in memory, T² and the coordinates stored (as at 30M rows under a 1 GB budget),
    with planted rows far along and far off the subspace."""
    rng = np.random.default_rng(5)
    P = rng.standard_normal((N, K)) * np.array([3.0, 2.0, 1.0])
    P[:300] *= 4.0
    var = P.var(axis=0, ddof=1)
    spe = hold(rng.chisquare(20, N) * 0.1)     # counted against the budget, as a fit's
    spe[300:600] *= 9.0
    t2 = weighted_squares(P, 1 / var)
    with settings(memory_budget=int(8 * N / 0.4) + 1, store_dir=tmp_path):
        got = materialize({"t2": held_rows(t2, (CHUNK,)), "projection": held_rows(P, (CHUNK, K))}, name="scores")
        assert all(isinstance(v, StoredRows) for v in got.values())
        yield SimpleNamespace(spe=spe, t2=got["t2"], projection=got["projection"], var=var, t2_values=t2)


def test_stored_rows_slices_read_whole_chunk_files_as_zarr_reads_them(scores):
    """StoredRows slicing reads whole chunks from their files (RawChunks), any other slice
    through Zarr: the same values either way."""
    t2 = scores.t2
    assert type(t2._rows).__name__ == "RawChunks"
    np.testing.assert_array_equal(t2[0:3 * CHUNK], scores.t2_values[:3 * CHUNK])
    np.testing.assert_array_equal(t2[7:2 * CHUNK + 5], scores.t2_values[7:2 * CHUNK + 5])
    np.testing.assert_array_equal(t2[18 * CHUNK:N], scores.t2_values[18 * CHUNK:])
    np.testing.assert_array_equal(np.asarray(t2), scores.t2_values)


def test_fill_rows_steps_in_whole_chunks_of_stored_inputs(scores, tmp_path):
    seen = []

    def fn(t2, spe):
        seen.append(t2.shape[0])
        return {"sum": t2 + spe}
    with settings(store_dir=tmp_path):
        out = fill_rows(fn, {"sum": ("f8", ())}, [scores.t2, scores.spe], step=4_000)
    assert seen[0] == 2 * CHUNK and sum(seen) == N        # 4,000 rounded down to whole chunks
    np.testing.assert_array_equal(_values(out["sum"]), scores.t2_values + scores.spe)


@pytest.mark.parametrize("budget", [None, 64 * 8 * N])     # results stored, or all in memory
def test_flags_from_stored_t2_in_slices_equal_the_in_memory_rule(scores, tmp_path, budget):
    est = SimpleNamespace(spe_limit_=float(np.quantile(scores.spe, 0.97)), t2_limit_=9.0, offset_=-1.0,
                          variances_=scores.var)
    with settings(memory_budget=budget or int(8 * N / 0.4) + 1, store_dir=tmp_path):
        sliced = SubspaceModel._derive(est, scores.spe, scores.projection, t2=scores.t2)
        # T² as a Dask array: computed once, then the same slices
        lazy = SubspaceModel._derive(est, scores.spe, scores.projection, t2=scores.t2.to_dask())
    mem = SubspaceModel._derive(est, scores.spe, _values(scores.projection), t2=scores.t2_values)
    assert sliced.keys() == lazy.keys() == mem.keys()
    for k in ("outlier_score", "outlier", "outside_spe", "outside_t2"):
        np.testing.assert_array_equal(_values(sliced[k]), _values(mem[k]), err_msg=k)
        np.testing.assert_array_equal(_values(lazy[k]), _values(mem[k]), err_msg=k)
    assert 0 < int(np.count_nonzero(_values(sliced["outlier"]))) < N


@pytest.mark.parametrize("robust", [False, True])
@pytest.mark.parametrize("cutoffs", [None, (2.5, 1.8)])
def test_outlier_map_in_slices_equals_the_in_memory_map(scores, tmp_path, robust, cutoffs):
    with settings(memory_budget=int(8 * N / 0.4) + 1, store_dir=tmp_path):
        kw = dict(robust=robust, crit=0.975, cutoffs=cutoffs, variances=scores.var)
        sliced = _sliced_map(scores.spe, scores.t2, scores.projection, **kw)
        # scores given as Dask arrays: computed once, then the same route
        lazy = outlier_map_of_scores(held_rows(scores.spe, (CHUNK,)), scores.t2.to_dask(),
                                     scores.projection.to_dask(), **kw)
    mem = outlier_map_of_scores(scores.spe, scores.t2_values, _values(scores.projection), robust=robust,
                                cutoffs=cutoffs)
    assert sliced["counts"] == lazy["counts"] == mem["counts"]
    assert sliced["counts"]["orthogonal outlier"] + sliced["counts"]["bad leverage"] >= 250
    assert sliced["counts"]["good leverage"] + sliced["counts"]["bad leverage"] >= 250
    assert sliced["sd_cutoff"] == lazy["sd_cutoff"] == mem["sd_cutoff"]
    assert sliced["od_cutoff"] == lazy["od_cutoff"]
    if cutoffs is None:
        assert sliced["od_cutoff"] == pytest.approx(mem["od_cutoff"], rel=1e-9)
    else:
        assert sliced["od_cutoff"] == mem["od_cutoff"]
    for k in ("score_distance", "orthogonal_distance", "region"):
        np.testing.assert_array_equal(_values(sliced[k]), _values(lazy[k]), err_msg=k)
        np.testing.assert_array_equal(_values(sliced[k]), mem[k], err_msg=k)


def test_a_nan_t2_is_refused_in_slices_as_in_memory(scores, tmp_path):
    t2 = scores.t2_values.copy()
    t2[4321] = np.nan
    with settings(memory_budget=int(8 * N / 0.4) + 1, store_dir=tmp_path):
        stored = materialize({"t2": held_rows(t2, (CHUNK,))}, name="nan")["t2"]
        assert isinstance(stored, StoredRows)
        with pytest.raises(ValueError, match="score variance"):
            _sliced_map(scores.spe, stored, scores.projection, robust=False, crit=0.975, cutoffs=None,
                        variances=scores.var)
    with pytest.raises(ValueError, match="score variance"):
        outlier_map_of_scores(scores.spe, t2, _values(scores.projection), robust=False)


@pytest.mark.parametrize("trimmed", [False, True])
def test_calibration_over_stored_scores_in_slices_equals_the_in_memory_one(scores, tmp_path, trimmed):
    from robustcore.subspace._base import TrainingScores, _calibrate_stored
    exclude = (np.arange(N) % 37 == 0) if trimmed else None
    lim = (float(np.quantile(scores.spe, 0.99)), 11.0)
    with settings(memory_budget=int(8 * N / 0.4) + 1, store_dir=tmp_path):
        sliced = _calibrate_stored(scores.spe, scores.t2, exclude, *lim, 0.01, trimmed)
        # scores given as Dask arrays: computed once, then the same route
        blocks = _calibrate_stored(held_rows(scores.spe, (CHUNK,)), scores.t2.to_dask(),
                                   None if exclude is None else held_rows(exclude, (CHUNK,)), *lim, 0.01, trimmed)
        # and the in-memory calibration of the same scores
        mem = TrainingScores(lambda: {"spe": scores.spe, "t2": scores.t2_values}, exclude=exclude).calibrate(*lim, 0.01)
    assert sliced == blocks == mem
