"""PCP's ``center``: an arbitrary constant added to a column changes nothing but L, and a planted
low-rank + sparse matrix with a large offset per column is recovered; ``contamination`` names."""
import numpy as np
import pytest

from robustcore.compare import robust_threshold
from robustcore.subspace.pcp import PCP


def planted(n=200, d=60, r=3, frac=0.05, seed=0):
    rng = np.random.default_rng(seed)
    L0 = rng.standard_normal((n, r)) @ rng.standard_normal((r, d)) / np.sqrt(r)
    S0 = np.zeros((n, d))
    mask = rng.random((n, d)) < frac
    S0[mask] = rng.choice([-5.0, 5.0], mask.sum())
    return L0, S0


@pytest.mark.parametrize("center", ["median", "mean"])
def test_scores_do_not_depend_on_a_columns_offset(center):
    L0, S0 = planted(seed=1)
    X = L0 + S0
    shifted = X.copy()
    rng = np.random.default_rng(2)
    shifted[:, :10] += rng.uniform(-100, 100, 10)   # where these columns' zero lies is arbitrary
    for scale in ("none", "auto"):
        a = PCP(center=center, scale=scale, random_state=0).fit(X)
        b = PCP(center=center, scale=scale, random_state=0).fit(shifted)
        np.testing.assert_allclose(b.sample_scores_, a.sample_scores_, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(b.sparse_, a.sparse_, atol=1e-5)
        np.testing.assert_allclose(b.low_rank_ - a.low_rank_, shifted - X, atol=1e-5)
        np.testing.assert_array_equal(b.predict(shifted), a.predict(X))
        assert a.rank_ == b.rank_
    # without a centre the same shift changes the answer (the reason for the option)
    a = PCP(center="none", scale="none", random_state=0).fit(X)
    b = PCP(center="none", scale="none", random_state=0).fit(shifted)
    assert np.abs(b.sample_scores_ - a.sample_scores_).max() > 1e-2 * a.sample_scores_.max()


def test_planted_low_rank_and_sparse_with_large_column_offsets_is_recovered():
    L0, S0 = planted(n=300, d=80, r=3, frac=0.05, seed=3)
    rng = np.random.default_rng(4)
    offset = rng.uniform(20, 60, 80)              # far larger than L0's entries (about 1)
    X = L0 + S0 + offset
    est = PCP(scale="none", random_state=0).fit(X)   # center="median", the default
    assert est.center_.shape == (80,)
    err_S = np.linalg.norm(est.sparse_ - S0) / np.linalg.norm(S0)
    err_L = np.linalg.norm(est.low_rank_ - (L0 + offset)) / np.linalg.norm(L0)
    assert err_S < 0.05 and err_L < 0.05
    np.testing.assert_array_equal(est.sparse_ != 0, np.abs(S0) > 0)  # the support, exactly
    # the offset is not in S: entries measured from zero put part of it there
    raw = PCP(scale="none", center="none", random_state=0).fit(X)
    assert np.linalg.norm(raw.sparse_ - S0) / np.linalg.norm(S0) > 2 * err_S
    # new rows are centred the same way: a training row and a copy of it score alike
    np.testing.assert_allclose(est.transform(X[:5]), est.low_rank_[:5], atol=1e-9)
    x = X[:5] + 1e-9
    np.testing.assert_allclose(-est.score_samples(x), est.sample_scores_[:5], rtol=1e-3, atol=1e-3)


def test_contamination_names_the_rule():
    L0, S0 = planted(seed=5)
    X = L0 + S0
    mad = PCP(contamination="mad", random_state=0).fit(X)
    assert -mad.offset_ == pytest.approx(robust_threshold(mad.sample_scores_))
    frac = PCP(contamination=0.1, random_state=0).fit(X)
    assert np.mean(frac.predict(X) == -1) == pytest.approx(0.1, abs=0.01)
    with pytest.raises(ValueError, match="contamination"):
        PCP(contamination="median").fit(X)
