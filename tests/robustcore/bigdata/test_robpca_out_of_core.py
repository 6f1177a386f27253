"""ROBPCA on tables opened out of core (robustcore.subspace._robpca_sample): a table of at most
the sample bound is fitted to the in-memory numbers; a larger one on a random sample, whose
subspace and flags agree with the in-memory fit on the same planted data; the same refusals;
progress and cancel; the registry runs it on a lazy data set."""
import numpy as np
import pytest

da = pytest.importorskip("dask.array")

from robustcore import Cancelled, ROBPCA  # noqa: E402
from robustcore._passes import Rows  # noqa: E402
from robustcore.bigdata import open_lazy, open_table  # noqa: E402
from robustcore.subspace import _robpca_sample  # noqa: E402

BOUND = 1500      # the sample bound these tests set (100,000 in use): small tables stay quick


@pytest.fixture
def bound(monkeypatch):
    monkeypatch.setattr(_robpca_sample, "SAMPLE_ROWS", BOUND)
    return BOUND


def planted(n, d=12, k=3, share=0.1, seed=0):
    """Rank-k inliers about an offset; ``share`` of the rows far off their subspace (true flags)."""
    rng = np.random.default_rng(seed)
    B = np.linalg.qr(rng.standard_normal((d, k)))[0].T
    X = (rng.standard_normal((n, k)) * [5.0, 3.0, 2.0][:k]) @ B + 0.1 * rng.standard_normal((n, d)) + 3.0
    bad = rng.choice(n, int(share * n), replace=False)
    X[bad] += 4.0 * rng.standard_normal((bad.size, d))
    truth = np.zeros(n, bool)
    truth[bad] = True
    return X, B, truth


def lazy(tmp_path, X, rows=400):
    p = tmp_path / "t.npy"
    np.save(p, X)
    return open_table(p, chunk_rows=rows)


def cosines(A, B):
    return np.linalg.svd(np.linalg.qr(A.T)[0].T @ np.linalg.qr(B.T)[0], compute_uv=False)


def test_a_table_within_the_bound_gives_the_in_memory_fit(tmp_path, bound):
    X, _, _ = planted(1200)
    a = ROBPCA(random_state=3).fit(X)
    b = ROBPCA(random_state=3)
    res = b.fit_row_results(lazy(tmp_path, X))
    for attr in ("components_", "mean_", "variances_", "explained_variance_ratio_", "residual_eigenvalues_"):
        np.testing.assert_array_equal(getattr(b, attr), getattr(a, attr))
    for attr in ("sd_cutoff_", "od_cutoff_", "n_components_", "h_", "rank_", "offset_"):
        assert getattr(b, attr) == getattr(a, attr)
    assert b.n_samples_robust_ == b.n_samples_fit_ == 1200
    mem = a.row_results(X)
    np.testing.assert_array_equal(np.asarray(res.outlier), mem.outlier)
    np.testing.assert_allclose(np.asarray(res.spe), mem.spe, rtol=1e-12, atol=1e-12 * mem.spe.max())
    np.testing.assert_allclose(np.asarray(res.outlier_score), mem.outlier_score, rtol=1e-12)


def test_the_sample_is_uniform_random_rows_in_table_order(bound):
    X = np.random.default_rng(0).standard_normal((5000, 4))
    Z, scaling = _robpca_sample.sampled_rows(Rows(da.from_array(X, chunks=(333, 4))), "none",
                                             np.random.default_rng(7), _Quiet())
    idx = np.sort(np.random.default_rng(7).choice(5000, BOUND, replace=False))
    np.testing.assert_array_equal(Z, X[idx])
    assert scaling["scaling_"] == "none"
    Z, scaling = _robpca_sample.sampled_rows(Rows(da.from_array(X * 10 + 4, chunks=(333, 4))), "standard",
                                             np.random.default_rng(7), _Quiet())
    # the scaling is fitted on every row, not on the sample
    np.testing.assert_allclose(scaling["scale_center_"], (X * 10 + 4).mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(Z, ((X * 10 + 4)[idx] - scaling["scale_center_"]) / scaling["scale_"], rtol=1e-12)


class _Quiet:
    def __call__(self, *a):
        return True

    def span(self, lo, hi):
        return self


def test_a_larger_table_agrees_with_the_in_memory_fit_on_planted_data(tmp_path, bound):
    """6000 rows, a sample of 1500: same k, the subspaces within 0.5 degree of each other and
    of the truth, the flags of at least 99 % of the rows the same, every planted outlier flagged."""
    X, B, truth = planted(6000)
    a = ROBPCA(n_components=3, random_state=0).fit(X)
    b = ROBPCA(n_components=3, random_state=0)
    t = lazy(tmp_path, X)
    res = b.fit_row_results(t)
    assert b.n_samples_robust_ == BOUND and b.n_samples_fit_ == 6000
    assert np.min(cosines(b.components_, a.components_)) > np.cos(np.radians(0.5))
    assert np.min(cosines(b.components_, B)) > np.cos(np.radians(0.5))
    assert b.od_cutoff_ == pytest.approx(a.od_cutoff_, rel=0.05)
    np.testing.assert_allclose(b.variances_, a.variances_, rtol=0.1)
    mem = a.predict(X) == -1
    flags = np.asarray(res.outlier)
    assert np.mean(flags == mem) >= 0.99
    assert flags[truth].all() and mem[truth].all()
    # the flags out of core are the model's own rule on every row (one pass after the fit)
    np.testing.assert_array_equal(flags, b.predict(X) == -1)
    assert res.passes == 3          # the scan, the sample, the scores


def test_the_same_refusals_as_in_memory(tmp_path, bound):
    X, _, _ = planted(4000)
    X[3999, 5] = np.nan                 # after every sampled row's block, most likely not sampled
    with pytest.raises(ValueError) as mem:
        ROBPCA().fit(X)
    with pytest.raises(ValueError) as ooc:
        ROBPCA().fit(lazy(tmp_path, X))
    assert str(ooc.value) == str(mem.value)
    X, _, _ = planted(4000, d=5)
    # above what the shape allows (the declared rule, known before a row is read)
    with pytest.raises(ValueError, match=r"n_components.*\[1, 5\] \(at most min\(n_samples - 1") as mem:
        ROBPCA(n_components=6).fit(X)
    with pytest.raises(ValueError) as ooc:
        ROBPCA(n_components=6).fit(lazy(tmp_path, X))
    assert str(ooc.value) == str(mem.value)
    # above the rank of the centred data (4: a column is the sum of two others), found by the fit
    X[:, 4] = X[:, 0] + X[:, 1]
    (tmp_path / "rank4").mkdir()
    with pytest.raises(ValueError, match="n_components.*rank of the centred data, here 4"):
        ROBPCA(n_components=5).fit(X)
    with pytest.raises(ValueError, match="n_components.*rank of the centred data, here 4"):
        ROBPCA(n_components=5).fit(lazy(tmp_path / "rank4", X))


def test_progress_and_cancel_out_of_core(tmp_path, bound):
    X, _, _ = planted(4000)
    t = lazy(tmp_path, X)
    seen = []
    ROBPCA(random_state=0).fit(t, progress=lambda f, msg: seen.append(f))
    assert seen[0] == 0.0 and seen[-1] == 1.0 and np.all(np.diff(seen) >= -1e-12)
    m = ROBPCA(random_state=0)
    with pytest.raises(Cancelled):
        m.fit(t, progress=lambda f, msg: f < 0.2)       # inside the first pass
    assert not hasattr(m, "components_")
    with pytest.raises(Cancelled):
        m.fit(t, progress=lambda f, msg: f < 0.5)       # inside the robust stages
    assert not hasattr(m, "components_")


def test_registry_runs_robpca_on_a_lazy_data_set(tmp_path, bound):
    from robustcore.methods import get_method
    X, _, truth = planted(4000)
    p = tmp_path / "t.npy"
    np.save(p, X)
    # the paper's cut-offs by name: "auto" calibrates them (tests/robustcore/test_flag_rates.py)
    res = get_method("robpca").run(open_lazy(p, chunk_rows=500), {"random_state": 0, "contamination": "cutoffs"})
    est = res.estimator
    assert est.n_samples_robust_ == BOUND and res.storage.out_of_core
    np.testing.assert_array_equal(np.asarray(res.flags["outlier"]), est.predict(X) == -1)
    assert np.asarray(res.flags["outlier"])[truth].all()


def test_a_stated_contamination_is_the_share_of_every_row_out_of_core(tmp_path, bound):
    """contamination=0.05 beyond the bound: the offset is the exact 95th percentile of every
    row's outlier score (not the sample's), so 5 % of the table is flagged."""
    X, _, _ = planted(4000)
    m = ROBPCA(contamination=0.05, random_state=0).fit(lazy(tmp_path, X))
    assert m.n_samples_robust_ == BOUND
    score = -m.score_samples(X)
    assert -m.offset_ == pytest.approx(np.percentile(score, 95.0), rel=1e-12)
    assert np.mean(m.predict(X) == -1) == pytest.approx(0.05, abs=1 / 4000)
