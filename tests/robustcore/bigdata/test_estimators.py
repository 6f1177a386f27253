"""Out-of-core PCA, SPE/T² and Coherence Pursuit (ℓ2) on Dask give the in-memory estimators'
numbers (to 1e-8) on data that fits in memory, on every kind of lazy table, on the local
scheduler and on a two-worker dask.distributed cluster."""
import numpy as np
import pytest

da = pytest.importorskip("dask.array")

from robustcore import Cancelled  # noqa: E402
from robustcore.anomaly import ResidualScorer  # noqa: E402
from robustcore.bigdata import (DaskCoherencePursuit, DaskPCA, DaskResidualScorer, compute,  # noqa: E402
                                median, open_table, order_statistics, settings)
from robustcore.subspace.coherence_pursuit import CoherencePursuit  # noqa: E402
from robustcore.subspace.pca import PCA  # noqa: E402

TOL = 1e-8


def close(a, b, tol=TOL):
    a, b = np.asarray(a, float), np.asarray(b, float)
    scale = max(np.abs(b).max(), 1e-300)
    assert a.shape == b.shape and np.abs(a - b).max() <= tol * scale, np.abs(a - b).max() / scale


@pytest.fixture(scope="module")
def data():
    """Rank-3 inliers around an offset, 10 % outliers spread over the whole space."""
    rng = np.random.default_rng(0)
    n, d = 6000, 12
    X = rng.standard_normal((n, 3)) @ rng.standard_normal((3, d)) * 3 + 0.3 * rng.standard_normal((n, d)) + 5
    X[rng.choice(n, 600, replace=False)] = rng.standard_normal((600, d)) * 4 + 5
    return X


def chunked(X, rows=700):
    return da.from_array(X, chunks=(rows, X.shape[1]))


@pytest.mark.parametrize("center", [True, False])
def test_pca_matches_in_memory(data, center):
    a = PCA(n_components=4, center=center).fit(data)
    b = DaskPCA(n_components=4, center=center).fit(chunked(data))
    for attr in ("components_", "mean_", "explained_variance_", "explained_variance_ratio_", "singular_values_",
                 "all_variances_"):
        close(getattr(b, attr), getattr(a, attr))
    close(b.transform(chunked(data)).compute(), a.transform(data))
    assert b.solver_ == "gram"


def test_pca_switches_to_tsqr_when_the_gram_would_lose_the_small_eigenvalues():
    """Standard deviations spanning 1e6 (eigenvalues 1e12): the Gram's smallest eigenvalues
    would be wrong by 2e-5 relative; TSQR keeps them to 1e-8 like the in-memory SVD."""
    rng = np.random.default_rng(1)
    d = 20
    Q = np.linalg.qr(rng.standard_normal((d, d)))[0]
    X = (rng.standard_normal((20000, d)) * np.logspace(0, -6, d)) @ Q.T + 1e3
    a = PCA(n_components=d).fit(X)
    b = DaskPCA(n_components=d).fit(chunked(X, 3000))
    assert b.solver_ == "tsqr"
    np.testing.assert_allclose(b.all_variances_, a.all_variances_, rtol=TOL)
    close(b.components_, a.components_)
    g = DaskPCA(n_components=d, solver="gram").fit(chunked(X, 3000))
    assert np.max(np.abs(g.all_variances_ / a.all_variances_ - 1)) > 1e-7


@pytest.mark.parametrize("params", [{}, {"n_components": 3, "limit": "box", "t2_limit": "training"},
                                    {"n_components": 2, "center": False}])
def test_residual_scorer_matches_in_memory(data, params):
    a = ResidualScorer(**params).fit(data)
    b = DaskResidualScorer(**params).fit(chunked(data))
    for attr in ("components_", "mean_", "variances_", "residual_eigenvalues_", "thetas_", "plane_"):
        close(getattr(b, attr), getattr(a, attr))
    assert b.spe_limit_ == pytest.approx(a.spe_limit_, rel=TOL) and b.t2_limit_ == pytest.approx(a.t2_limit_, rel=TOL)
    spe, t2 = b.scores(chunked(data))
    ra, rb = a.scores(data)
    close(spe.compute(), ra)
    close(t2.compute(), rb)
    np.testing.assert_array_equal(b.flag(data)["either"], a.flag(data)["either"])


def test_residual_fit_subspace_on_some_rows_matches_in_memory(data):
    cop = CoherencePursuit(n_components=3).fit(data)
    rows = np.arange(data.shape[0]) % 3 != 0
    a = ResidualScorer(n_components=3).fit_subspace(data[rows], cop.components_, cop.mean_)
    b = DaskResidualScorer(n_components=3).fit_subspace(chunked(data), cop.components_, cop.mean_,
                                                         rows=da.from_array(rows, chunks=700))
    for attr in ("variances_", "residual_eigenvalues_", "plane_"):
        close(getattr(b, attr), getattr(a, attr))
    assert b.spe_limit_ == pytest.approx(a.spe_limit_, rel=TOL)


@pytest.mark.parametrize("params", [{"n_components": 3}, {"n_components": None},
                                    {"n_components": 3, "center": "mean"},
                                    {"n_components": 3, "center": "none", "selection": "fraction",
                                     "outlier_fraction": 0.2},
                                    {"n_components": 2, "n_inliers": 1234}])
def test_coherence_pursuit_matches_in_memory(data, params):
    a = CoherencePursuit(**params).fit(data)
    b = DaskCoherencePursuit(**params).fit(chunked(data))
    assert b.n_components_ == a.n_components_
    close(b.mean_, a.mean_)
    close(b.coherence_, a.coherence_)
    np.testing.assert_array_equal(b.selected_indices_, a.selected_indices_)
    np.testing.assert_array_equal(b.degenerate_, a.degenerate_)
    close(b.components_, a.components_)
    close(b.singular_values_, a.singular_values_)
    close(b.score_samples(chunked(data)).compute(), a.score_samples(data))


def test_coherence_pursuit_degenerate_rows_and_ties():
    """Rows equal to the median are degenerate (score 0, never selected); duplicated rows tie
    in coherence and are taken in index order, as the in-memory stable sort does."""
    rng = np.random.default_rng(5)
    X = rng.standard_normal((900, 6)) @ np.diag([5, 4, 0.1, 0.1, 0.1, 0.1])
    X[100:400:3] = X[99]                    # many copies: ties
    med = np.median(X, axis=0)
    X[[7, 500, 801]] = med                   # degenerate after centring (the median is unchanged)
    assert np.array_equal(np.median(X, axis=0), med)
    a = CoherencePursuit(n_components=2, n_inliers=150, center="median", scale="none").fit(X)
    b = DaskCoherencePursuit(n_components=2, n_inliers=150, center="median").fit(chunked(X, 128))
    assert b.degenerate_.sum() == 3
    np.testing.assert_array_equal(b.degenerate_, a.degenerate_)
    np.testing.assert_array_equal(b.selected_indices_, a.selected_indices_)
    close(b.components_, a.components_)


def test_coherence_pursuit_out_of_core_limits_are_clear_errors(data):
    for params, match in (({"norm": 1}, "norm"), ({"selection": "adaptive"}, "selection"),
                          ({"refine": True}, "refine")):
        with pytest.raises(ValueError, match=match):
            DaskCoherencePursuit(**params).fit(chunked(data))


def test_per_row_results_go_to_zarr_beyond_the_memory_budget(data, tmp_path):
    pytest.importorskip("zarr")
    a = CoherencePursuit(n_components=3).fit(data)
    with settings(memory_budget=1000, store_dir=tmp_path):
        b = DaskCoherencePursuit(n_components=3).fit(chunked(data))
    assert not isinstance(b.coherence_, np.ndarray) and list(tmp_path.glob("*.zarr"))
    close(b.coherence_[:], a.coherence_)
    np.testing.assert_array_equal(np.flatnonzero(b.selected_[:]), a.selected_indices_)


@pytest.mark.parametrize("seed", range(6))
def test_order_statistics_are_exact(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 5000))
    A = rng.standard_normal((n, 3))
    if seed % 2:
        A = np.round(A, 1)                   # many ties
    ks = sorted(set(rng.integers(0, n, 3).tolist()))
    got = order_statistics(da.from_array(A, chunks=int(rng.integers(1, 900))), ks)
    np.testing.assert_array_equal(got, np.sort(A, axis=0)[ks])
    np.testing.assert_array_equal(median(da.from_array(A, chunks=333)), np.median(A, axis=0))
    assert median(da.from_array(A[:, 0], chunks=333)) == np.median(A[:, 0])


def write_formats(X, folder):
    import h5py
    import zarr
    np.save(folder / "t.npy", X)
    with h5py.File(folder / "t.h5", "w") as f:
        f.create_dataset("group/table", data=X, chunks=(500, X.shape[1]))
        f.create_dataset("labels", data=np.arange(X.shape[0]))
    z = zarr.open_array(str(folder / "t.zarr"), mode="w", shape=X.shape, chunks=(800, X.shape[1]), dtype="f8")
    z[:] = X
    return {"npy": folder / "t.npy", "hdf5": folder / "t.h5", "zarr": folder / "t.zarr"}


@pytest.fixture(scope="module")
def files(data, tmp_path_factory):
    pytest.importorskip("h5py")
    pytest.importorskip("zarr")
    return write_formats(data, tmp_path_factory.mktemp("tables"))


@pytest.mark.parametrize("kind", ["npy", "hdf5", "zarr"])
def test_tables_open_lazily_and_give_the_same_numbers(data, files, kind):
    t = open_table(files[kind], chunk_rows=1000)
    assert t.shape == data.shape and t.format == kind and t.array.numblocks == (6, 1)
    assert t.component == ("group/table" if kind == "hdf5" else None)
    info = t.describe()
    assert info["chunking"] == "6 blocks of 1000 rows" and "on disk" in info and "memory budget" in info
    assert t.fingerprint().startswith("shallow:") and t.fingerprint() == open_table(files[kind]).fingerprint()
    a = ResidualScorer(n_components=3).fit(data)
    b = DaskResidualScorer(n_components=3).fit(t)
    assert b.spe_limit_ == pytest.approx(a.spe_limit_, rel=TOL)
    close(b.scores(t)[0].compute(), a.scores(data)[0])


def test_table_errors_say_what_to_do(tmp_path, files):
    from robustcore.datasets import LoadError
    with pytest.raises(LoadError, match="no dataset 'nope'"):
        open_table(files["hdf5"], dataset="nope")
    np.save(tmp_path / "v.npy", np.arange(5.0))
    with pytest.raises(LoadError, match="2-D"):
        open_table(tmp_path / "v.npy")
    np.save(tmp_path / "o.npy", np.array([{"a": 1}], dtype=object))
    with pytest.raises(LoadError, match="Python objects"):
        open_table(tmp_path / "o.npy")
    (tmp_path / "x.csv").write_text("1,2\n")
    with pytest.raises(LoadError, match="HDF5"):
        open_table(tmp_path / "x.csv")


def test_compute_reports_progress_and_cancels(data):
    seen = []
    compute(chunked(data, 100).sum(), progress=lambda f, m: seen.append(f))
    assert seen[-1] == 1.0
    with pytest.raises(Cancelled):
        DaskPCA(n_components=2).fit(chunked(data, 100), progress=lambda f, m: False)


@pytest.fixture(scope="module")
def cluster():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=40) as c:
        yield c


def test_same_numbers_on_a_two_worker_cluster(data, files, cluster):
    local = DaskCoherencePursuit(n_components=3).fit(open_table(files["hdf5"]))
    local_res = DaskResidualScorer(n_components=3).fit(open_table(files["npy"]))
    with settings(scheduler=cluster.scheduler_address) as s:
        assert s.client is not None
        remote = DaskCoherencePursuit(n_components=3).fit(open_table(files["hdf5"], chunk_rows=900))
        remote_res = DaskResidualScorer(n_components=3).fit(open_table(files["npy"], chunk_rows=700))
        spe = compute(remote_res.scores(open_table(files["zarr"]))[0])[0]
    close(remote.components_, local.components_)
    close(remote.coherence_, local.coherence_)
    np.testing.assert_array_equal(remote.selected_indices_, local.selected_indices_)
    assert remote_res.spe_limit_ == pytest.approx(local_res.spe_limit_, rel=TOL)
    close(spe, ResidualScorer(n_components=3).fit(data).scores(data)[0])


def test_unreachable_scheduler_is_a_clear_error(monkeypatch):
    pytest.importorskip("distributed")
    from robustcore.bigdata import _dask
    monkeypatch.setattr(_dask, "_CONNECT_TIMEOUT", 1)
    with pytest.raises(ValueError, match="cannot reach a Dask scheduler"):
        with settings(scheduler="tcp://127.0.0.1:9"):
            pass


def test_coherence_scores_fuse_with_other_scores_in_one_pass(data):
    """The benchmark's pipeline: PCA (one pass), X̂ᵀX̂ about the PCA mean (one pass), then SPE,
    T² and coherence in one shared pass; equal to the in-memory numbers."""
    from robustcore.bigdata import coherence_scores
    X = chunked(data)
    pca = DaskPCA(n_components=3).fit(X)
    coh = coherence_scores(X, center=pca.mean_)
    scorer = DaskResidualScorer(n_components=3).fit(X)
    spe, t2 = scorer.scores(X)
    c, s = compute(coh, spe)
    close(c, CoherencePursuit(n_components=3, center="mean").fit(data).coherence_)
    close(s, ResidualScorer(n_components=3).fit(data).scores(data)[0])
    with pytest.raises(ValueError, match="center"):
        coherence_scores(X, center="mode")


@pytest.mark.parametrize("cls,dask_cls", [(PCA, DaskPCA), (ResidualScorer, DaskResidualScorer),
                                          (CoherencePursuit, DaskCoherencePursuit)])
@pytest.mark.parametrize("contamination", ["auto", 0.1])
def test_outlier_api_matches_in_memory(data, cls, dask_cls, contamination):
    a = cls(n_components=3, contamination=contamination).fit(data)
    b = dask_cls(n_components=3, contamination=contamination).fit(chunked(data))
    assert b.offset_ == pytest.approx(a.offset_, rel=TOL)
    close(b.score_samples(chunked(data)).compute(), a.score_samples(data))
    np.testing.assert_array_equal(b.predict(chunked(data)).compute(), a.predict(data))
    np.testing.assert_array_equal(b.predict(data), a.predict(data))     # numpy input: the in-memory path


def test_scaling_is_refused_out_of_core(data):
    with pytest.raises(ValueError, match="scale"):
        DaskPCA(n_components=2, scale="standard").fit(chunked(data))
