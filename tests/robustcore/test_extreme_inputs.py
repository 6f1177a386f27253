"""Estimator edge cases (issue 12): extreme magnitudes, complex data, odd labels, a sigma that
underflows. Each is rescaled inside where that is exact, otherwise refused with a message that
says what to do -- never NaN, a wrong answer or a numpy/LAPACK error."""
import numpy as np
import pytest

from robustcore import ESFS, PCA, PCP, SCW, CoherencePursuit, ResidualScorer


def _data(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((60, 5)) @ np.diag([3.0, 2.0, 1.0, 0.5, 0.2])
    return X, np.where(X[:, 0] + X[:, 1] > 0, 1, -1)


@pytest.mark.parametrize("factor", [1e300, 1e-300])
@pytest.mark.parametrize("make", [lambda: PCA(2), lambda: CoherencePursuit(2), lambda: ResidualScorer(2)],
                         ids=["PCA", "CoherencePursuit", "ResidualScorer"])
def test_subspace_methods_refuse_values_they_cannot_square_and_scale_fixes_it(make, factor):
    X, _ = _data()
    with pytest.raises(ValueError, match="squares.*Pass scale='standard' or 'robust'"):
        make().fit(X * factor)
    ref = make().set_params(scale="standard").fit(X)
    big = make().set_params(scale="standard").fit(X * factor)
    np.testing.assert_allclose(np.abs(big.components_), np.abs(ref.components_), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(big.score_samples(X * factor), ref.score_samples(X), rtol=1e-9)
    if hasattr(ref, "explained_variance_ratio_"):
        assert np.all(np.isfinite(big.explained_variance_ratio_))
        np.testing.assert_allclose(big.explained_variance_ratio_, ref.explained_variance_ratio_, rtol=1e-12)


@pytest.mark.parametrize("factor", [1e300, 1e-300, 2.0 ** 1000])
def test_pcp_rescales_extreme_values_exactly(factor):
    """PCP is scale-equivariant, so it rescales inside by a power of two: the decomposition of
    c X is c times that of X (scipy's LAPACK raised 'Internal Error' here before)."""
    rng = np.random.default_rng(1)
    X = rng.standard_normal((80, 3)) @ rng.standard_normal((3, 30))
    X[rng.random(X.shape) < 0.05] += 5.0
    a = PCP(random_state=0).fit(X)
    b = PCP(random_state=0).fit(X * factor)
    assert b.converged_ and a.rank_ == b.rank_
    np.testing.assert_allclose(b.low_rank_ / factor, a.low_rank_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(b.sparse_ / factor, a.sparse_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(b.sample_scores_ / factor, a.sample_scores_, rtol=1e-9)


@pytest.mark.parametrize("factor", [1e300, 1e-300])
def test_scw_refuses_values_whose_confidence_overflows(factor):
    X, y = _data()
    with pytest.raises(ValueError, match=r"SCW works with their squares|SCW works with squares.*StandardScaler"):
        SCW().fit(X * factor, y)


@pytest.mark.parametrize("factor", [1e100, 1e-100])
def test_scw_learns_at_large_but_representable_scales(factor):
    X, y = _data()
    ref = SCW().fit(X, y)
    est = SCW().fit(X * factor, y)
    assert np.all(np.isfinite(est.covariance_)) and set(est.predict(X * factor)) == {-1, 1}
    assert est.score(X * factor, y) >= ref.score(X, y) - 0.1


def test_esfs_sigma_too_small_says_what_to_use():
    X, _ = _data()
    for sigma in (1e-300, 1e-100):
        with pytest.raises(ValueError, match=r"sigma = 1e-[0-9]+ .*typical distance between samples \([0-9.]+ here\)"):
            ESFS(sigma=sigma, graph="dense").fit(X)
    with pytest.raises(ValueError, match="sigma"):
        ESFS(sigma=1e-300, graph="knn", n_neighbors=5).fit(X)


@pytest.mark.parametrize("make", [lambda: PCA(2), lambda: CoherencePursuit(2), lambda: ResidualScorer(2),
                                  PCP, SCW, ESFS], ids=["PCA", "CoP", "Residual", "PCP", "SCW", "ESFS"])
def test_complex_data_is_refused_not_truncated(make):
    X, y = _data()
    with pytest.raises(ValueError, match=r"^Complex data not supported: .*np.hstack\(\[X.real, X.imag\]\)") as exc:
        make().fit(X + 1j, y)
    assert len(str(exc.value)) < 300          # not the whole array
    est = make().fit(X, y)
    if hasattr(est, "predict"):
        with pytest.raises(ValueError, match="Complex data not supported"):
            est.predict(X + 1j)


def test_scw_labels_mixing_numbers_and_strings():
    X, y = _data()
    mixed = np.array([1, "a"] * 30, dtype=object)
    with pytest.raises(ValueError, match=r"y mixes strings and other labels \(e.g. 1 and 'a'\).*astype\(str\)"):
        SCW().fit(X, mixed)
    assert list(SCW().fit(X, mixed.astype(str)).classes_) == ["1", "a"]
    with pytest.raises(ValueError, match="Unknown label type: continuous"):
        SCW().fit(X, X[:, 0])


# -- issue 24: subnormal data, values at float64's largest, OR-PCA's float32 outputs --------------

@pytest.mark.parametrize("factor", [1e-303, 1e-308, 1e-310, 1e-318, 2.0 ** -1060])
def test_pcp_refuses_data_whose_mu_overflows_then_scale_fixes_it(factor):
    """Subnormal values asked for a rescaling factor of 2**1030 and more (infinity): PCP then
    raised LAPACK's 'Internal Error' (issue 24); fitted by rescaling, its mu_ and mu_final_ (in
    the data's units, growing as 1 / X) were infinite (issue 34). Refused by name, as the other
    estimators refuse values whose squares underflow; scale='standard' fits."""
    rng = np.random.default_rng(1)
    X = rng.standard_normal((80, 3)) @ rng.standard_normal((3, 30))
    X[rng.random(X.shape) < 0.05] += 5.0
    small = X * factor
    with pytest.raises(ValueError, match="PCP's penalty mu.*overflows float64.*Pass scale='standard'"):
        PCP(random_state=0).fit(small)
    est = PCP(random_state=0, scale="standard").fit(small)
    assert np.isfinite(est.mu_) and np.isfinite(est.mu_final_)
    assert np.all(np.isfinite(est.sample_scores_))


@pytest.mark.parametrize("make", [lambda: PCA(2), lambda: CoherencePursuit(2), lambda: ResidualScorer(2)],
                         ids=["PCA", "CoherencePursuit", "ResidualScorer"])
def test_subspace_methods_on_subnormal_data_refuse_then_scale(make):
    X, _ = _data()
    small = X * 1e-310
    with pytest.raises(ValueError, match="underflow.*Pass scale='standard' or 'robust'"):
        make().fit(small)
    est = make().set_params(scale="standard").fit(small)
    assert np.all(np.isfinite(est.score_samples(small)))


@pytest.mark.parametrize("make", [lambda: PCA(2), lambda: CoherencePursuit(2), lambda: ResidualScorer(2),
                                  lambda: ESFS(n_features_to_select=2)],
                         ids=["PCA", "CoherencePursuit", "ResidualScorer", "ESFS"])
def test_values_at_the_largest_float_are_refused_by_name(make):
    # Coherence Pursuit's row norms raised "OverflowError: math range error" here.
    X, _ = _data()
    huge = X / np.abs(X).max() * np.finfo(float).max
    with pytest.raises(ValueError, match="as large as 1.8e\\+308"):
        make().fit(huge)


def test_pcp_scores_that_cannot_add_up_are_refused():
    X, _ = _data()
    huge = X / np.abs(X).max() * np.finfo(float).max
    with pytest.raises(ValueError, match="exceed float64's largest value"):
        PCP(random_state=0).fit(huge)


@pytest.mark.parametrize("factor", [1e39, 1e200, np.finfo(float).max])
def test_online_rpca_refuses_values_beyond_float32(factor):
    from robustcore.subspace.online_rpca import OnlineRPCA
    X, _ = _data()
    with pytest.raises(ValueError, match="float32.*Multiply X by a constant"):
        OnlineRPCA(n_components=2).fit(X / np.abs(X).max() * factor)


@pytest.mark.parametrize("factor", [1e-310, 1e30])
def test_online_rpca_at_extreme_but_storable_scales_is_the_scaled_fit(factor):
    from robustcore.subspace.online_rpca import OnlineRPCA
    X, _ = _data()
    a = OnlineRPCA(n_components=2).fit(X)
    b = OnlineRPCA(n_components=2).fit(X * factor)
    assert np.all(np.isfinite(b.sample_scores_))
    np.testing.assert_allclose(b.sample_scores_ / factor, a.sample_scores_, rtol=1e-4)
