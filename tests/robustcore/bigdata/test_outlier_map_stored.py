"""The outlier map of an out-of-core fit: score and orthogonal distances, their cut-offs and the
regions made from per-row results on disk, block by block, equal to the map of the same table
fitted in memory (and to the map computed from scratch by robustcore.outlier_map)."""
import numpy as np
import pytest

da = pytest.importorskip("dask.array")
pytest.importorskip("zarr")

from robustcore import datasets  # noqa: E402
from robustcore.bigdata import StoredRows, open_lazy, settings  # noqa: E402
from robustcore.methods import get_method  # noqa: E402
from robustcore.outlier_map import REGIONS, outlier_map, outlier_map_of_scores  # noqa: E402


@pytest.fixture(scope="module")
def npy(tmp_path_factory):
    rng = np.random.default_rng(8)
    n = 3000
    X = rng.standard_normal((n, 3)) @ rng.standard_normal((3, 9)) + 0.3 * rng.standard_normal((n, 9)) + 1.0
    far = rng.choice(n, 150, replace=False)
    X[far[:50]] += 6.0 * rng.standard_normal((50, 9))             # off the subspace
    X[far[50:100], :3] *= 8.0                                      # far along it (mostly)
    p = tmp_path_factory.mktemp("omap") / "table.npy"
    np.save(p, X.astype(np.float32))
    return p


def _close(a, b, tol=1e-9):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    assert a.shape == b.shape
    assert np.abs(a - b).max() <= tol * max(np.abs(b).max(), 1.0)


@pytest.mark.slow
@pytest.mark.parametrize("method", ["pca", "residual", "coherence-pursuit"])
def test_out_of_core_map_equals_in_memory_map(npy, method, tmp_path):
    m = get_method(method)
    mem = m.run(datasets.load(npy), {})
    data = open_lazy(npy, chunk_rows=250)
    with settings(memory_budget=4096, store_dir=tmp_path):
        lazy = m.run(data, {})
    assert lazy.no_outlier_map is None, lazy.no_outlier_map
    assert lazy.outlier_map is not None and mem.outlier_map is not None
    for k in ("score_distance", "orthogonal_distance", "map_region"):
        # per-row results like the others: on disk beyond the budget, never read whole to make them
        assert isinstance(lazy.arrays[k], StoredRows), k
    _close(lazy.arrays["score_distance"][:], mem.arrays["score_distance"])
    _close(lazy.arrays["orthogonal_distance"][:], mem.arrays["orthogonal_distance"])
    assert abs(lazy.outlier_map.sd_cutoff - mem.outlier_map.sd_cutoff) <= 1e-12 * mem.outlier_map.sd_cutoff
    assert abs(lazy.outlier_map.od_cutoff - mem.outlier_map.od_cutoff) <= 1e-9 * mem.outlier_map.od_cutoff
    assert mem.outlier_map.od_cutoff > 0
    np.testing.assert_array_equal(lazy.arrays["map_region"][:], mem.arrays["map_region"])
    assert lazy.outlier_map.counts == mem.outlier_map.counts
    # the planted samples off the subspace are where the map says
    assert mem.outlier_map.counts["orthogonal outlier"] + mem.outlier_map.counts["bad leverage"] >= 50


@pytest.mark.slow
@pytest.mark.parametrize("robust", [False, True])
def test_stored_scores_give_the_map_computed_from_the_rows(robust, tmp_path):
    """Against ground truth computed another way: outlier_map's own pass over X (residual_scores
    on the rows), with the scores and coordinates handed over on disk."""
    from robustcore.bigdata import materialize
    rng = np.random.default_rng(2)
    X = rng.standard_normal((2000, 2)) @ rng.standard_normal((2, 6)) + 0.5 * rng.standard_normal((2000, 6))
    X[:40] += 5.0
    C = np.linalg.svd(X - X.mean(0), full_matrices=False)[2][:2]
    m, var = X.mean(0), np.array([3.0, 1.5])
    want = outlier_map(X, C, m, var, robust=robust)
    T = (X - m) @ C.T
    spe = np.sum((X - m - T @ C) ** 2, axis=1)
    t2 = np.sum(T ** 2 / var, axis=1)
    with settings(memory_budget=1000, store_dir=tmp_path):
        stored = materialize({"spe": da.from_array(spe, chunks=300), "t2": da.from_array(t2, chunks=300),
                              "projection": da.from_array(T, chunks=(300, 2))})
        assert all(isinstance(v, StoredRows) for v in stored.values())
        got = outlier_map_of_scores(stored["spe"], stored["t2"], stored["projection"], robust=robust)
        # a model's own cut-offs (ROBPCA's) instead of the rule: the regions are the numpy path's
        own = outlier_map_of_scores(stored["spe"], stored["t2"], stored["projection"], cutoffs=(2.0, 1.5))
    ref = outlier_map_of_scores(spe, t2, T, cutoffs=(2.0, 1.5))
    np.testing.assert_array_equal(own["region"][:], ref["region"])
    assert own["counts"] == ref["counts"] and (own["sd_cutoff"], own["od_cutoff"]) == (2.0, 1.5)
    assert ref["counts"]["bad leverage"] > 0
    _close(got["score_distance"][:], want["score_distance"])
    _close(got["orthogonal_distance"][:], want["orthogonal_distance"])
    assert got["sd_cutoff"] == pytest.approx(want["sd_cutoff"], rel=1e-12)
    assert got["od_cutoff"] == pytest.approx(want["od_cutoff"], rel=1e-9)
    np.testing.assert_array_equal(got["region"][:], want["region"])
    assert got["counts"] == want["counts"] and sum(got["counts"].values()) == 2000
    assert set(got["counts"]) == set(REGIONS)


def test_stored_scores_of_a_full_rank_model_have_no_od_cutoff(tmp_path):
    from robustcore.bigdata import materialize
    rng = np.random.default_rng(4)
    T = rng.standard_normal((900, 3))
    with settings(memory_budget=500, store_dir=tmp_path):
        stored = materialize({"spe": da.from_array(np.zeros(900), chunks=200),
                              "t2": da.from_array(np.sum(T ** 2, axis=1), chunks=200),
                              "projection": da.from_array(T, chunks=(200, 3))})
        got = outlier_map_of_scores(stored["spe"], stored["t2"], stored["projection"])
    assert got["od_cutoff"] == 0.0
    assert got["counts"]["orthogonal outlier"] == got["counts"]["bad leverage"] == 0
    assert got["counts"]["good leverage"] == int(np.sum(np.sum(T ** 2, axis=1) > got["sd_cutoff"] ** 2))


def test_stored_scores_with_a_non_finite_t2_say_why(tmp_path):
    from robustcore.bigdata import materialize
    t2 = np.ones(500)
    t2[7] = np.inf
    with settings(memory_budget=200, store_dir=tmp_path):
        stored = materialize({"t2": da.from_array(t2, chunks=100)})
        with pytest.raises(ValueError, match="score variance must be positive and finite"):
            outlier_map_of_scores(np.ones(500), stored["t2"], np.ones((500, 1)))


@pytest.mark.parametrize("spe_scale", [1.0, 1e-30])
def test_the_variance_bound_gives_the_same_map_and_reads_no_coordinates_when_it_decides(tmp_path, spe_scale):
    """Given the score variances, the rounding test reads the coordinates only when the bound
    max SPE + max(variances) max T² leaves it open; the map is the one computed without them and
    the in-memory one. spe_scale 1e-30: ODs at rounding level, where the exact maximum decides."""
    import dask
    from robustcore.bigdata import materialize
    rng = np.random.default_rng(5)
    var = np.array([4.0, 0.5])
    T = rng.standard_normal((1200, 2)) * np.sqrt(var)
    spe = spe_scale * rng.chisquare(3, 1200)
    t2 = np.sum(T ** 2 / var, axis=1)
    reads = []

    def coordinates(block):
        reads.append(block.shape[0])
        return block

    with settings(memory_budget=300, store_dir=tmp_path):
        stored = materialize({"spe": da.from_array(spe, chunks=400), "t2": da.from_array(t2, chunks=400)})
        P = da.from_array(T, chunks=(400, 2)).map_blocks(coordinates, dtype=float)
        with dask.config.set(scheduler="sync"):
            got = outlier_map_of_scores(stored["spe"], stored["t2"], P, variances=var)
        read = sum(reads)
        plain = outlier_map_of_scores(stored["spe"], stored["t2"], P)
    want = outlier_map_of_scores(spe, t2, T)
    assert read == (1200 if spe_scale < 1e-20 else 0)
    assert (got["od_cutoff"] == 0.0) == (spe_scale < 1e-20) == (want["od_cutoff"] == 0.0)
    for ref in (plain, want):
        assert got["sd_cutoff"] == ref["sd_cutoff"] and got["od_cutoff"] == ref["od_cutoff"]
        np.testing.assert_array_equal(got["region"][:], np.asarray(ref["region"][:]))
        np.testing.assert_array_equal(got["orthogonal_distance"][:], np.asarray(ref["orthogonal_distance"][:]))
        assert got["counts"] == ref["counts"]


def test_a_robust_cut_from_stored_scores_stores_only_the_distances(tmp_path):
    """OD^(2/3)'s median and MAD come from slices of the SPE (cbrt made in each sweep): nothing
    but the two distances is written (before, OD^(2/3) itself was stored: 240 MB at 30M rows),
    and the cut-off is the one of the same scores in memory, to the bit."""
    import zarr
    from robustcore.bigdata import materialize
    rng = np.random.default_rng(6)
    var = np.array([2.0, 1.0])
    T = rng.standard_normal((1500, 2)) * np.sqrt(var)
    spe = rng.chisquare(4, 1500)
    t2 = np.sum(T ** 2 / var, axis=1)
    with settings(memory_budget=400, store_dir=tmp_path):
        stored = materialize({"spe": da.from_array(spe, chunks=300), "t2": da.from_array(t2, chunks=300)})
        before = set(tmp_path.glob("*.zarr"))
        got = outlier_map_of_scores(stored["spe"], stored["t2"], T, robust=True, variances=var)
        made = set(tmp_path.glob("*.zarr")) - before
    arrays = sorted(k for p in made for k in zarr.open_group(str(p), mode="r").array_keys())
    assert arrays == ["od", "region", "sd"]
    want = outlier_map_of_scores(spe, t2, T, robust=True)
    assert got["od_cutoff"] == want["od_cutoff"] and got["counts"] == want["counts"]
