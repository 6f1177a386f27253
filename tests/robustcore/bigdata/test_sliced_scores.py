"""What an out-of-core fit derives from its stored scores after the passes (the flags, the outlier
map) in plain numpy slices, against the Dask blocks that made them before: the same flags and
outlier scores to the bit, the same distances and regions to the bit, the same region counts,
the same cut-offs (OD's to 1e-12: a mean and spread merged slice by slice)."""
from types import SimpleNamespace

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
pytest.importorskip("zarr")

from robustcore.bigdata import StoredRows, settings  # noqa: E402
from robustcore.bigdata._dask import compute  # noqa: E402
from robustcore.bigdata._rows import fill_rows, held_rows, hold, materialize  # noqa: E402
from robustcore.outlier_map import _sliced_map, _stored_map  # noqa: E402
from robustcore.subspace._base import SubspaceModel  # noqa: E402

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
    t2 = np.einsum("ij,ij,j->i", P, P, 1 / var)
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
def test_flags_from_stored_t2_in_slices_equal_the_dask_blocks(scores, tmp_path, budget):
    est = SimpleNamespace(spe_limit_=float(np.quantile(scores.spe, 0.97)), t2_limit_=9.0, offset_=-1.0,
                          variances_=scores.var)
    with settings(memory_budget=budget or int(8 * N / 0.4) + 1, store_dir=tmp_path):
        sliced = SubspaceModel._derive(est, scores.spe, scores.projection, t2=scores.t2)
        blocks = SubspaceModel._derive(est, scores.spe, scores.projection, t2=scores.t2.to_dask())
    assert sliced.keys() == blocks.keys()
    for k in ("outlier_score", "outlier", "outside_spe", "outside_t2"):
        np.testing.assert_array_equal(_values(sliced[k]), _values(blocks[k]), err_msg=k)
    assert 0 < int(np.count_nonzero(_values(sliced["outlier"]))) < N


@pytest.mark.parametrize("robust", [False, True])
@pytest.mark.parametrize("cutoffs", [None, (2.5, 1.8)])
def test_outlier_map_in_slices_equals_the_dask_blocks(scores, tmp_path, robust, cutoffs):
    with settings(memory_budget=int(8 * N / 0.4) + 1, store_dir=tmp_path):
        kw = dict(robust=robust, crit=0.975, cutoffs=cutoffs, variances=scores.var)
        sliced = _sliced_map(scores.spe, scores.t2, scores.projection, **kw)
        # the Dask blocks' path, as for scores that are Dask arrays
        blocks = _stored_map(held_rows(scores.spe, (CHUNK,)), scores.t2.to_dask(), scores.projection.to_dask(), **kw)
    assert sliced["counts"] == blocks["counts"]
    assert sliced["counts"]["orthogonal outlier"] + sliced["counts"]["bad leverage"] >= 250
    assert sliced["counts"]["good leverage"] + sliced["counts"]["bad leverage"] >= 250
    assert sliced["sd_cutoff"] == blocks["sd_cutoff"]
    assert sliced["od_cutoff"] == pytest.approx(blocks["od_cutoff"], rel=1e-12)
    for k in ("score_distance", "orthogonal_distance", "region"):
        np.testing.assert_array_equal(_values(sliced[k]), _values(blocks[k]), err_msg=k)
    # the map's own rule on the same scores in memory
    mem = _stored_map.__globals__["outlier_map_of_scores"](scores.spe, scores.t2_values, _values(scores.projection),
                                                           robust=robust, cutoffs=cutoffs)
    assert sliced["counts"] == mem["counts"]
    assert sliced["od_cutoff"] == pytest.approx(mem["od_cutoff"], rel=1e-9)


def test_a_nan_t2_is_refused_in_slices_as_in_blocks(scores, tmp_path):
    t2 = scores.t2_values.copy()
    t2[4321] = np.nan
    with settings(memory_budget=int(8 * N / 0.4) + 1, store_dir=tmp_path):
        stored = materialize({"t2": held_rows(t2, (CHUNK,))}, name="nan")["t2"]
        assert isinstance(stored, StoredRows)
        with pytest.raises(ValueError, match="score variance"):
            _sliced_map(scores.spe, stored, scores.projection, robust=False, crit=0.975, cutoffs=None,
                        variances=scores.var)


@pytest.mark.parametrize("trimmed", [False, True])
def test_calibration_over_stored_scores_in_slices_equals_the_dask_blocks(scores, tmp_path, trimmed):
    from robustcore.subspace._base import TrainingScores, _calibrate_stored
    exclude = (np.arange(N) % 37 == 0) if trimmed else None
    lim = (float(np.quantile(scores.spe, 0.99)), 11.0)
    with settings(memory_budget=int(8 * N / 0.4) + 1, store_dir=tmp_path):
        sliced = _calibrate_stored(scores.spe, scores.t2, exclude, *lim, 0.01, trimmed)
        blocks = _calibrate_stored(held_rows(scores.spe, (CHUNK,)), scores.t2.to_dask(),
                                   None if exclude is None else held_rows(exclude, (CHUNK,)), *lim, 0.01, trimmed)
        # and the in-memory calibration of the same scores
        mem = TrainingScores(lambda: {"spe": scores.spe, "t2": scores.t2_values}, exclude=exclude).calibrate(*lim, 0.01)
    assert sliced == blocks == mem
