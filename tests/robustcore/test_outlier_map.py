"""The outlier map on a planted subspace with one sample of each kind of outlier."""
import numpy as np
import pytest
from scipy import stats

from robustcore.outlier_map import REGIONS, outlier_map


def _planted(seed=0, n=400, d=6):
    rng = np.random.default_rng(seed)
    basis = np.linalg.qr(rng.normal(size=(d, 2)))[0].T        # (2, d) orthonormal
    normal = np.linalg.qr(np.c_[basis.T, rng.normal(size=(d, 1))])[0][:, 2]  # off the plane
    scores = rng.normal(size=(n, 2)) * [3.0, 1.0]
    X = scores @ basis + 0.05 * rng.normal(size=(n, d)) + 10.0
    good = 10.0 + 25.0 * basis[0]                              # far along, on the plane
    orth = 10.0 + 2.0 * normal                                 # typical along, off the plane
    bad = 10.0 + 25.0 * basis[0] + 2.0 * normal                # both
    X = np.vstack([X, good, orth, bad])
    return X, basis, np.full(d, 10.0), np.array([9.0, 1.0])


def test_each_planted_point_lands_in_its_region():
    X, basis, mean, var = _planted()
    m = outlier_map(X, basis, mean, var, robust=True)
    assert [REGIONS[r] for r in m["region"][-3:]] == ["good leverage", "orthogonal outlier", "bad leverage"]
    # the bulk is regular: about 2.5 % above each cut-off by construction
    bulk = m["region"][:-3]
    assert np.mean(bulk == 0) > 0.93
    assert sum(m["counts"].values()) == X.shape[0]


def test_distances_are_root_t2_and_root_spe_and_cutoffs_follow_the_rules():
    X, basis, mean, var = _planted(1)
    m = outlier_map(X, basis, mean, var, robust=False, crit=0.99)
    T = (X - mean) @ basis.T
    E = (X - mean) - T @ basis
    np.testing.assert_allclose(m["score_distance"] ** 2, (T ** 2 / var).sum(1), rtol=1e-12)
    np.testing.assert_allclose(m["orthogonal_distance"] ** 2, (E ** 2).sum(1), rtol=1e-10)
    assert m["sd_cutoff"] == pytest.approx(np.sqrt(stats.chi2.ppf(0.99, 2)))
    w = m["orthogonal_distance"] ** (2 / 3)
    assert m["od_cutoff"] == pytest.approx((w.mean() + w.std(ddof=1) * stats.norm.ppf(0.99)) ** 1.5)
    robust = outlier_map(X, basis, mean, var, robust=True, crit=0.99)
    med = np.median(w)
    assert robust["od_cutoff"] == pytest.approx((med + 1.4826 * np.median(np.abs(w - med))
                                                 * stats.norm.ppf(0.99)) ** 1.5)


def test_model_spanning_the_data_has_no_orthogonal_cutoff():
    rng = np.random.default_rng(2)
    basis = np.linalg.qr(rng.normal(size=(3, 2)))[0].T
    X = rng.normal(size=(50, 2)) @ basis
    m = outlier_map(X, basis, np.zeros(3), np.ones(2))
    assert m["od_cutoff"] == 0.0
    assert set(np.unique(m["region"])) <= {0, 1}


def test_shapes_and_variances_are_checked():
    X, basis, mean, var = _planted()
    with pytest.raises(ValueError, match="variances"):
        outlier_map(X, basis, mean, var[:1])
    with pytest.raises(ValueError, match="positive"):
        outlier_map(X, basis, mean, np.array([1.0, 0.0]))
