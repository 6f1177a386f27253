"""Order statistics, element-wise results, counts, indices and CoP's selection of stored per-row
results in plain slices (robustcore._passes: kth_smallest, percentile, rowwise, count_true,
indices), against numpy on the values in memory, and the same functions given Dask arrays
(computed once, then the same slices): the same numbers to the bit, held or stored as the
budget rules."""
import numpy as np
import pytest

da = pytest.importorskip("dask.array")
pytest.importorskip("zarr")

from robustcore._passes import count_true, indices, kth_smallest, percentile, rowwise  # noqa: E402
from robustcore.bigdata import StoredRows, settings  # noqa: E402
from robustcore.bigdata._dask import compute  # noqa: E402
from robustcore.bigdata._rows import held_rows, materialize  # noqa: E402
from robustcore.subspace._cop_passes import _select_top  # noqa: E402

N, CHUNK = 30_011, 2_000
TINY = N  # a budget whose results' share holds no per-row array (not even a bool per row)


def _values(a):
    return compute(a.to_dask())[0] if isinstance(a, StoredRows) else np.asarray(a)


@pytest.fixture
def stored(tmp_path):
    """Scores with ties, zeros of both signs and a few large values, and an exclusion mask,
    stored (as beyond the budget)."""
    rng = np.random.default_rng(3)
    v = np.round(rng.standard_normal(N) * 50.0) / 8.0       # many ties
    v[::97] = -0.0
    v[5:40] = 1e12
    ex = rng.random(N) < 0.2
    with settings(memory_budget=TINY, store_dir=tmp_path):
        got = materialize({"v": held_rows(v, (CHUNK,)), "ex": held_rows(ex, (CHUNK,))}, name="scores")
    assert all(isinstance(a, StoredRows) for a in got.values())
    return v, ex, got["v"], got["ex"]


@pytest.mark.parametrize("exclude", ["none", "numpy", "stored"])
def test_order_statistics_of_stored_values_in_slices_equal_numpy_and_dask_inputs(stored, tmp_path, exclude):
    v, ex, sv, sex = stored
    e = {"none": None, "numpy": ex, "stored": sex}[exclude]
    n_kept = N - (0 if e is None else int(ex.sum()))
    ks = [0, 1, n_kept // 3, (n_kept - 1) // 2, n_kept // 2, n_kept - 2, n_kept - 1]
    with settings(store_dir=tmp_path):
        sliced = kth_smallest(sv, ks, exclude=e)
        blocks = kth_smallest(sv.to_dask(), ks, exclude=None if e is None else held_rows(ex, (CHUNK,)))
    kept = v if e is None else v[~ex]
    want = np.sort(kept)[ks]
    np.testing.assert_array_equal(sliced, blocks)
    np.testing.assert_array_equal(sliced, want)
    assert percentile(sv, 50.0) == percentile(sv.to_dask(), 50.0) == float(np.percentile(v, 50.0))
    assert percentile(sv, 37.5) == float(np.percentile(v, 37.5))


@pytest.mark.parametrize("budget", [TINY, None])        # the result stored, or held
def test_element_wise_results_of_stored_values_in_slices_equal_numpy_and_dask_inputs(stored, tmp_path, budget):
    v, ex, sv, sex = stored

    def fn(a, m):
        return ~m & (np.abs(a - 0.25) <= 3.0)
    with settings(memory_budget=budget, store_dir=tmp_path):
        sliced = rowwise(fn, sv, sex, name="t")
        blocks = rowwise(fn, sv.to_dask(), sex.to_dask(), name="t")
        roots = rowwise(lambda a: np.sqrt(np.abs(a)), sv, name="t")
    assert isinstance(sliced, StoredRows) == (budget == TINY)
    np.testing.assert_array_equal(_values(sliced), _values(blocks))
    np.testing.assert_array_equal(_values(sliced), fn(v, ex))
    np.testing.assert_array_equal(_values(roots), np.sqrt(np.abs(v)))
    assert _values(roots).dtype == np.float64


@pytest.mark.parametrize("budget", [TINY, None])        # the indices stored, or held
def test_counts_and_indices_of_a_stored_mask_in_slices_equal_numpy_and_dask_inputs(stored, tmp_path, budget):
    v, ex, sv, sex = stored
    with settings(memory_budget=budget, store_dir=tmp_path):
        assert count_true(sex) == count_true(sex.to_dask()) == int(ex.sum())
        sliced = indices(sex, lazy=True)
        blocks = indices(sex.to_dask(), lazy=True)
        held = indices(ex, lazy=True)        # a mask held in memory, indices beyond the budget's share
    assert isinstance(sliced, StoredRows) == (budget == TINY) == isinstance(held, StoredRows)
    for got in (sliced, blocks, held):
        np.testing.assert_array_equal(_values(got), np.flatnonzero(ex))
        assert _values(got).dtype == np.intp


def test_the_selection_of_stored_coherence_takes_the_ties_the_in_memory_one_takes(stored, tmp_path):
    """Coherence Pursuit's k most coherent usable rows, ties at the cut in index order: over a
    stored coherence the slices' tie counts share the cut's ties out as the in-memory sort does."""
    v, ex, sv, sex = stored
    n_valid = N - int(ex.sum())
    k = n_valid // 2
    want, tau_mem = _select_top(np.abs(v), ex, k, n_valid)
    with settings(memory_budget=TINY, store_dir=tmp_path):
        got, tau = _select_top(rowwise(np.abs, sv), sex, k, n_valid)
    assert isinstance(got, StoredRows)
    assert tau == tau_mem
    assert int(np.count_nonzero(np.abs(v)[~ex] == tau)) > 1        # ties at the cut
    np.testing.assert_array_equal(_values(got), want)
    assert int(want.sum()) == k


@pytest.mark.parametrize("step, chunk", [(1_000, 777), (4_000, 50_000), (2_000, 1_999)])
def test_stored_indices_are_written_in_whole_chunks_whatever_the_slices(stored, tmp_path, step, chunk):
    from robustcore.bigdata._rows import sliced_indices
    v, ex, sv, sex = stored
    with settings(memory_budget=TINY, store_dir=tmp_path):
        got = sliced_indices(sex, step=step, chunk=chunk)
    assert isinstance(got, StoredRows) and got.z.chunks[0] == min(chunk, int(ex.sum()))
    np.testing.assert_array_equal(_values(got), np.flatnonzero(ex))
