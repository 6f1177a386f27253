"""PCA, SPE/T² and Coherence Pursuit (ℓ2) fitted on lazy input (Dask arrays, lazy tables) give
the numbers of the same estimators fitted in memory (to 1e-8), on every kind of lazy table, on
the local scheduler and on a two-worker dask.distributed cluster (also when a worker dies)."""
import numpy as np
import pytest

da = pytest.importorskip("dask.array")

from robustcore import Cancelled  # noqa: E402
from robustcore.anomaly import ResidualScorer  # noqa: E402
from robustcore.bigdata import compute, median, open_table, order_statistics, settings  # noqa: E402
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
    b = PCA(n_components=4, center=center).fit(chunked(data))
    for attr in ("components_", "mean_", "explained_variance_", "explained_variance_ratio_", "singular_values_",
                 "all_variances_"):
        close(getattr(b, attr), getattr(a, attr))
    close(b.transform(chunked(data)), a.transform(data))
    # the limits, calibrated on the stored training scores out of core, are the in-memory ones
    assert b.limit_calibration_["action"] == a.limit_calibration_["action"]
    assert b.spe_limit_ == pytest.approx(a.spe_limit_, rel=TOL)
    assert b.t2_limit_ == pytest.approx(a.t2_limit_, rel=TOL)
    np.testing.assert_array_equal(b.predict(data), a.predict(data))


def test_pca_takes_a_tsqr_pass_when_the_scatter_would_lose_the_small_eigenvalues():
    """Standard deviations spanning 1e6 (eigenvalues 1e12): the scatter matrix's smallest
    eigenvalues are wrong by 2e-5 relative; the rule that sends such spectra through a TSQR pass
    keeps them to 1e-8 of LAPACK's SVD of the centred rows, in memory and out of core alike
    (which is why the former out-of-core ``solver`` parameter has no reason to exist)."""
    rng = np.random.default_rng(1)
    d = 20
    Q = np.linalg.qr(rng.standard_normal((d, d)))[0]
    X = (rng.standard_normal((20000, d)) * np.logspace(0, -6, d)) @ Q.T + 1e3
    Zc = X - X.mean(axis=0)
    ref = np.linalg.svd(Zc, compute_uv=False) ** 2 / (X.shape[0] - 1)
    scatter = np.linalg.eigvalsh(Zc.T @ Zc)[::-1] / (X.shape[0] - 1)
    assert np.max(np.abs(scatter / ref - 1)) > 1e-7
    for Y in (X, chunked(X, 3000)):
        res = PCA(n_components=d - 1).fit_row_results(Y)
        b = PCA(n_components=d - 1).fit(Y)
        np.testing.assert_allclose(b.all_variances_, ref, rtol=TOL)
        assert res.passes == 3              # moments, TSQR, row results


@pytest.mark.parametrize("params", [{}, {"n_components": 3, "limit": "box", "t2_limit": "training"},
                                    {"n_components": 2, "center": False}])
def test_residual_scorer_matches_in_memory(data, params):
    a = ResidualScorer(**params).fit(data)
    b = ResidualScorer(**params).fit(chunked(data))
    for attr in ("components_", "mean_", "variances_", "residual_eigenvalues_", "thetas_", "plane_"):
        close(getattr(b, attr), getattr(a, attr))
    assert b.spe_limit_ == pytest.approx(a.spe_limit_, rel=TOL) and b.t2_limit_ == pytest.approx(a.t2_limit_, rel=TOL)
    spe, t2 = b.scores(chunked(data))
    ra, rb = a.scores(data)
    close(spe, ra)
    close(t2, rb)
    np.testing.assert_array_equal(b.flag(data)["either"], a.flag(data)["either"])


def test_residual_fit_subspace_matches_in_memory(data):
    cop = CoherencePursuit(n_components=3).fit(data)
    a = ResidualScorer(n_components=3).fit_subspace(data, cop.components_, cop.mean_)
    b = ResidualScorer(n_components=3).fit_subspace(chunked(data), cop.components_, cop.mean_)
    for attr in ("variances_", "residual_eigenvalues_", "plane_", "scale_", "scale_center_"):
        close(getattr(b, attr), getattr(a, attr))
    assert b.spe_limit_ == pytest.approx(a.spe_limit_, rel=TOL)


@pytest.mark.slow
@pytest.mark.parametrize("params", [{"n_components": 3}, {"n_components": None},
                                    {"n_components": 3, "center": "mean"},
                                    {"n_components": 3, "center": "none", "selection": "fraction",
                                     "outlier_fraction": 0.2},
                                    {"n_components": 2, "n_inliers": 1234}])
def test_coherence_pursuit_matches_in_memory(data, params):
    a = CoherencePursuit(**params).fit(data)
    b = CoherencePursuit(**params).fit(chunked(data))
    assert b.n_components_ == a.n_components_
    close(b.mean_, a.mean_)
    close(b.coherence_, a.coherence_)
    np.testing.assert_array_equal(b.selected_indices_, a.selected_indices_)
    np.testing.assert_array_equal(b.degenerate_, a.degenerate_)
    close(b.components_, a.components_)
    close(b.singular_values_, a.singular_values_)
    close(b.score_samples(chunked(data)), a.score_samples(data))


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
    b = CoherencePursuit(n_components=2, n_inliers=150, center="median", scale="none").fit(chunked(X, 128))
    assert b.degenerate_.sum() == 3
    np.testing.assert_array_equal(b.degenerate_, a.degenerate_)
    np.testing.assert_array_equal(b.selected_indices_, a.selected_indices_)
    close(b.components_, a.components_)


@pytest.mark.parametrize("params,name", [({"norm": 1}, "norm"), ({"selection": "adaptive", "n_components": 2},
                                                                  "selection"), ({"refine": True}, "refine")])
def test_coherence_pursuit_options_that_need_random_access_are_refused_out_of_core(data, params, name):
    """ℓ1 coherence, adaptive sampling and the refinement pick rows anywhere in the table: out
    of core they are refused, saying to load the data into memory (where they run)."""
    with pytest.raises(ValueError, match=f"^The '{name}' parameter must be .*load the data into memory"):
        CoherencePursuit(**params).fit(chunked(data))
    CoherencePursuit(**params).fit(data[:1500])


@pytest.mark.slow
def test_per_row_results_go_to_zarr_beyond_the_memory_budget(data, tmp_path):
    pytest.importorskip("zarr")
    from robustcore.bigdata import StoredRows
    a = CoherencePursuit(n_components=3).fit(data)
    with settings(memory_budget=1000, store_dir=tmp_path):
        b = CoherencePursuit(n_components=3).fit(chunked(data))
    assert isinstance(b.coherence_, StoredRows) and list(tmp_path.glob("*.zarr"))
    assert not list(tmp_path.glob("*.partial"))            # every store renamed into place
    close(b.coherence_[:], a.coherence_)
    np.testing.assert_array_equal(b.degenerate_[:], a.degenerate_)
    np.testing.assert_array_equal(b.selected_indices_, a.selected_indices_)
    np.testing.assert_array_equal(b.calibration_indices_, a.calibration_indices_)
    # the index arrays are per-sample results too: stored beyond the budget, numpy within it
    assert isinstance(b.selected_indices_, StoredRows) and isinstance(b.calibration_indices_, StoredRows)
    assert b.calibration_indices_.dtype == np.intp and b.selected_indices_.size == a.selected_indices_.size
    assert b.spe_limit_ == pytest.approx(a.spe_limit_, rel=TOL)
    with settings(memory_budget=1 << 30, store_dir=tmp_path):
        c = CoherencePursuit(n_components=3).fit(chunked(data))
    assert isinstance(c.selected_indices_, np.ndarray) and isinstance(c.calibration_indices_, np.ndarray)
    np.testing.assert_array_equal(c.calibration_indices_, a.calibration_indices_)


@pytest.mark.slow
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
    assert info["chunking"] == "6 blocks of 1,000 rows" and "on disk" in info and "memory budget" in info
    assert t.fingerprint().startswith("shallow:") and t.fingerprint() == open_table(files[kind]).fingerprint()
    a = ResidualScorer(n_components=3).fit(data)
    b = ResidualScorer(n_components=3).fit(t)
    assert b.spe_limit_ == pytest.approx(a.spe_limit_, rel=TOL)
    close(b.scores(t)[0], a.scores(data)[0])


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
        PCA(n_components=2).fit(chunked(data, 100), progress=lambda f, m: False)


@pytest.fixture(scope="module")
def cluster():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=40) as c:
        yield c


@pytest.mark.slow
def test_same_numbers_on_a_two_worker_cluster(data, files, cluster):
    local = CoherencePursuit(n_components=3).fit(open_table(files["hdf5"]))
    local_res = ResidualScorer(n_components=3).fit(open_table(files["npy"]))
    with settings(scheduler=cluster.scheduler_address) as s:
        assert s.client is not None
        remote = CoherencePursuit(n_components=3).fit(open_table(files["hdf5"], chunk_rows=900))
        remote_res = ResidualScorer(n_components=3).fit(open_table(files["npy"], chunk_rows=700))
        spe = remote_res.scores(open_table(files["zarr"]))[0]
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


@pytest.mark.slow
@pytest.mark.parametrize("cls", [PCA, ResidualScorer, CoherencePursuit])
@pytest.mark.parametrize("contamination", ["auto", 0.1])
def test_outlier_api_matches_in_memory(data, cls, contamination):
    a = cls(n_components=3, contamination=contamination).fit(data)
    b = cls(n_components=3, contamination=contamination).fit(chunked(data))
    assert b.offset_ == pytest.approx(a.offset_, rel=TOL)
    close(b.score_samples(chunked(data)), a.score_samples(data))
    close(b.decision_function(chunked(data)), a.decision_function(data))
    np.testing.assert_array_equal(b.predict(chunked(data)), a.predict(data))
    np.testing.assert_array_equal(b.predict(data), a.predict(data))     # numpy input: the in-memory path


@pytest.mark.slow
@pytest.mark.parametrize("scale", ["none", "standard", "robust", "auto"])
@pytest.mark.parametrize("cls", [PCA, ResidualScorer, CoherencePursuit])
def test_every_scaling_works_out_of_core(data, cls, scale):
    """Scaling runs out of core with the in-memory numbers: the moments come from the pass the
    fit makes anyway; "robust" takes exact medians and MADs in three more passes."""
    X = data * np.geomspace(1, 1e4, data.shape[1])          # mixed units: "auto" standardises
    a = cls(n_components=3, scale=scale).fit(X)
    b = cls(n_components=3, scale=scale).fit(chunked(X, 500))
    assert b.scaling_ == a.scaling_
    close(b.scale_center_, a.scale_center_)
    close(b.scale_, a.scale_)
    close(b.components_, a.components_)
    close(b.score_samples(chunked(X)), a.score_samples(X))


@pytest.mark.slow
def test_killed_worker_gives_the_same_result(data, files):
    """A dask.distributed worker dies in the middle of a fit: its tasks are recomputed on the
    others and the fit ends with the same numbers."""
    distributed = pytest.importorskip("distributed")
    import threading
    import time
    ref = CoherencePursuit(n_components=3).fit(data)
    started, killed = threading.Event(), []
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=50) as c, settings(scheduler=c.scheduler_address) as s:
        def kill():
            started.wait(60)
            worker = list(s.client.scheduler_info()["workers"])[0]
            try:
                s.client.run(lambda: __import__("os")._exit(1), workers=[worker])   # dies, no clean-up
            except Exception:       # noqa: BLE001 - the connection to the dying worker closes under the call
                pass
            killed.append((time.monotonic(), worker))
        threading.Thread(target=kill, daemon=True).start()

        def progress(f, m):
            if f > 0.2:             # the coherence passes: well inside the fit
                started.set()
        got = CoherencePursuit(n_components=3).fit(open_table(files["npy"], chunk_rows=200), progress=progress)
        done = time.monotonic()
        alive = set(s.client.scheduler_info()["workers"])
    # (the nanny starts a new worker in its place, at another address)
    assert killed and killed[0][0] < done and killed[0][1] not in alive
    close(got.components_, ref.components_)
    np.testing.assert_array_equal(got.selected_indices_, ref.selected_indices_)
    assert got.spe_limit_ == pytest.approx(ref.spe_limit_, rel=TOL)


def test_coherence_pursuit_index_arrays_are_made_when_first_read_out_of_core(data, tmp_path):
    """Out of core the selected and calibration rows' indices are made when first read (the
    command line reads only their count): a fit writes no index store (at 30M rows they were
    360 MB of fresh memory and writes); read, they are what an in-memory fit gives, by the
    budget's rule of the fit's settings."""
    pytest.importorskip("zarr")
    from robustcore.bigdata import StoredRows
    a = CoherencePursuit(n_components=3).fit(data)
    with settings(memory_budget=1000, store_dir=tmp_path):
        b = CoherencePursuit(n_components=3).fit(chunked(data))
        stores = sorted(p.name.split("-")[0] for p in tmp_path.glob("*.zarr"))
    assert "indices" not in stores
    for name in ("selected_indices_", "inlier_indices_", "calibration_indices_"):
        assert name not in vars(b)
    assert b._calibration_size() == a.calibration_indices_.size
    assert isinstance(b.calibration_indices_, StoredRows)      # stored: the fit's budget
    np.testing.assert_array_equal(b.calibration_indices_, a.calibration_indices_)
    np.testing.assert_array_equal(b.selected_indices_, a.selected_indices_)
    assert b.inlier_indices_ is b.selected_indices_
    c = CoherencePursuit(n_components=3).fit(chunked(data))
    import pickle
    d = pickle.loads(pickle.dumps(c))           # a pickle holds the values
    np.testing.assert_array_equal(d.calibration_indices_, a.calibration_indices_)
    np.testing.assert_array_equal(d.inlier_indices_, a.inlier_indices_)
