"""PCA against a directly computed eigendecomposition of the covariance and a plain SVD."""
import numpy as np
import pytest

from robustcore import Cancelled, NotFittedError
from robustcore.anomaly import jackson_mudholkar_limit, t2_limit_new
from robustcore.rank import rank_cap, scree_elbow
from robustcore.subspace.pca import PCA, fix_signs


def data(seed=0, n=120, d=7):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, d)) * np.linspace(4, 0.5, d) @ np.linalg.qr(rng.standard_normal((d, d)))[0] + 3.0


def test_matches_eigh_of_covariance():
    X = data()
    pca = PCA(n_components=3).fit(X)
    w, V = np.linalg.eigh(np.cov(X, rowvar=False))
    w, V = w[::-1], V[:, ::-1]
    np.testing.assert_allclose(pca.explained_variance_, w[:3], rtol=1e-10)
    np.testing.assert_allclose(pca.all_variances_, w, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(pca.explained_variance_ratio_, w[:3] / w.sum(), rtol=1e-10)
    # Same directions up to sign.
    np.testing.assert_allclose(np.abs(pca.components_ @ V[:, :3]), np.eye(3), atol=1e-9)
    np.testing.assert_allclose(pca.mean_, X.mean(axis=0), rtol=1e-12)


def test_uncentred_matches_svd_of_raw_data():
    X = data(1)
    pca = PCA(n_components=2, center=False).fit(X)
    _, s, vt = np.linalg.svd(X, full_matrices=False)
    np.testing.assert_allclose(pca.singular_values_, s[:2], rtol=1e-12)
    np.testing.assert_allclose(np.abs(pca.components_), np.abs(vt[:2]), atol=1e-12)
    np.testing.assert_array_equal(pca.mean_, np.zeros(7))


def test_signs_are_deterministic_and_fixed():
    X = data(2)
    a = PCA(n_components=4).fit(X).components_
    b = PCA(n_components=4).fit(-X[::-1] + 1.0).components_  # mirrored data: SVD may flip signs
    np.testing.assert_allclose(a, b, atol=1e-10)
    idx = np.argmax(np.abs(a), axis=1)
    assert np.all(a[np.arange(4), idx] > 0)
    np.testing.assert_allclose(a @ a.T, np.eye(4), atol=1e-12)


def test_fix_signs():
    C = np.array([[0.1, -0.9], [0.0, 0.0], [-0.6, 0.5]])
    out = fix_signs(C)
    np.testing.assert_array_equal(out, [[-0.1, 0.9], [0.0, 0.0], [0.6, -0.5]])
    assert C[0, 1] == -0.9  # input untouched
    assert fix_signs(np.zeros((0, 3))).shape == (0, 3)


def test_transform_inverse_and_score_samples():
    X = data(3)
    pca = PCA(n_components=3, scale="none").fit(X)
    T = pca.transform(X)
    np.testing.assert_allclose(T.var(axis=0, ddof=1), pca.explained_variance_, rtol=1e-10)
    R = X - pca.inverse_transform(T)
    spe = (R**2).sum(axis=1)
    # Sum of training SPE = (n - 1) * sum of discarded eigenvalues.
    np.testing.assert_allclose(spe.sum(), (X.shape[0] - 1) * pca.all_variances_[3:].sum(), rtol=1e-9)
    # score_samples is minus the larger of SPE and T² in units of their limits at alpha = 0.01
    # (Jackson-Mudholkar from the discarded eigenvalues; F for new observations), both multiplied
    # by the one factor the calibration on the training scores chose
    t2 = (T**2 / pca.explained_variance_).sum(axis=1)
    factor = pca.limit_calibration_["factor"]
    q = jackson_mudholkar_limit(pca.all_variances_[3:], 0.01)[0] * factor
    assert pca.spe_limit_ == pytest.approx(q, rel=1e-12)
    assert pca.t2_limit_ == pytest.approx(t2_limit_new(3, X.shape[0], 0.01) * factor, rel=1e-12)
    np.testing.assert_allclose(-pca.score_samples(X), np.maximum(spe / q, t2 / pca.t2_limit_), rtol=1e-9)
    # contamination="auto": outside either limit
    np.testing.assert_array_equal(pca.predict(X) == -1, (spe > q) | (t2 > pca.t2_limit_))
    np.testing.assert_allclose(pca.fit_transform(X), T, rtol=1e-12)


def test_automatic_rank_is_the_scree_elbow():
    X = data(5, n=400, d=12)      # variances decay smoothly: no exact answer, the rule's one
    pca = PCA(scale="none").fit(X)
    assert pca.n_components_ == scree_elbow(pca.all_variances_, rank_cap(400, 12))
    assert pca.components_.shape == (pca.n_components_, 12)
    rng = np.random.default_rng(0)     # a planted rank 3 in noise is found
    basis = np.linalg.qr(rng.standard_normal((20, 3)))[0].T
    Y = rng.standard_normal((500, 3)) * [5.0, 4.0, 3.0] @ basis + 0.05 * rng.standard_normal((500, 20))
    assert PCA().fit(Y).n_components_ == 3


def test_full_rank_reconstructs_exactly():
    X = data(4, n=20, d=5)
    pca = PCA(n_components=5).fit(X)
    np.testing.assert_allclose(pca.inverse_transform(pca.transform(X)), X, atol=1e-10)


def test_wide_data():
    rng = np.random.default_rng(5)
    X = rng.standard_normal((10, 50))
    pca = PCA(n_components=10).fit(X)
    assert pca.all_variances_.shape == (10,)
    assert pca.all_variances_[-1] == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("k", [0, 8, 2.5, "2", True])
def test_bad_n_components(k):
    with pytest.raises(ValueError, match="n_components"):
        PCA(n_components=k).fit(data())


def test_rank_above_min_n_d_names_the_range():
    with pytest.raises(ValueError, match=r"'n_components' parameter must be an integer in \[1, 4\].*Got 5"):
        PCA(n_components=5).fit(data(n=4))


@pytest.mark.parametrize("bad, match", [
    (np.ones((1, 3)), r"1 sample\(s\) .* minimum of 2"), (np.zeros((0, 3)), r"0 sample\(s\)"),
    (np.array([[1.0, np.nan], [0, 1], [1, 1]]), "NaN"), (np.ones(4), "2D array"),
    ([["a", "b"]], "could not convert string to float"),
])
def test_bad_data(bad, match):
    with pytest.raises(ValueError, match=match):
        PCA(n_components=1).fit(bad)


def test_unfitted_width_and_center_errors():
    with pytest.raises(NotFittedError):
        PCA().transform(data())
    pca = PCA().fit(data())
    with pytest.raises(ValueError, match="7"):
        pca.transform(data()[:, :5])
    with pytest.raises(ValueError, match="center"):
        PCA(center="yes").fit(data())


def test_cancel_leaves_unfitted():
    pca = PCA().fit(data())
    with pytest.raises(Cancelled):
        pca.fit(data(), progress=lambda f, m: f < 0.05)
    assert not hasattr(pca, "components_")


def test_square_ish_data_matches_eigh():
    X = data(6, n=12, d=7)  # n <= 2d: the plain SVD path
    pca = PCA(n_components=7).fit(X)
    w = np.linalg.eigvalsh(np.cov(X, rowvar=False))[::-1]
    np.testing.assert_allclose(pca.all_variances_, w, rtol=1e-9, atol=1e-12)


# -- tall data: scaling, finiteness and magnitude read off the scatter matrix ----------------

def _tall_columns(seed=0, n=3000):
    """Columns that make the scatter-matrix shortcut earn its keep: an offset column
    (1e6 +- 1e-3, where sums of squares cancel), constant columns (0.1 and 1e6 + 0.1, exactly
    constant), a column of zeros, ordinary and wide columns."""
    rng = np.random.default_rng(seed)
    G = rng.standard_normal((n, 4)) @ rng.standard_normal((4, 4))
    return np.column_stack([G[:, 0], 1e6 + 1e-3 * G[:, 1], np.full(n, 0.1), G[:, 2] * 3.0,
                            np.full(n, 1e6 + 0.1), np.zeros(n), G[:, 3] * 2.0])


@pytest.mark.parametrize("spread", [1.0, 1e4], ids=["one unit", "mixed units"])
def test_tall_fit_decides_auto_from_the_scatter_matrix_as_from_the_column_moments(spread):
    """For tall data the fit takes the column means and spreads ("auto"'s decision, the
    "standard" centre and scale) from the one pass that makes its scatter matrix: the same as
    the column moments give (robustcore._scaling, computed another way), and the PCA of the
    data scaled by those equals an eigendecomposition of their covariance."""
    from robustcore._scaling import fit_scaling, resolve_scaling
    X = _tall_columns()
    X[:, 3] *= spread                                 # one column in other units (or not)
    used = resolve_scaling(X, "auto")
    assert used == ("standard" if spread > 1 else "none")
    # one pass for the fit (and one for a TSQR when the spectrum spans more than 1 / GRAM_RCOND;
    # constant columns' zero eigenvalues do not ask for it), one for the scores
    from robustcore.linalg import GRAM_RCOND
    res = PCA(n_components=3).fit_row_results(X)
    var = PCA(n_components=3).fit(X).all_variances_
    assert res.passes == 2 + (var[var > 0].min() < GRAM_RCOND * var[0])
    center, scale = fit_scaling(X, used)
    pca = PCA(n_components=3, scale="auto").fit(X)
    assert pca.scaling_ == used
    np.testing.assert_allclose(pca.scale_center_, center, rtol=1e-12)
    np.testing.assert_allclose(pca.scale_, scale, rtol=1e-9)
    Z = (X - center) / scale
    w, V = np.linalg.eigh(np.cov(Z, rowvar=False))
    np.testing.assert_allclose(pca.all_variances_[:4], w[::-1][:4], rtol=1e-9)
    np.testing.assert_allclose(np.abs(pca.components_ @ V[:, ::-1][:, :3]), np.eye(3), atol=1e-9)
    # uncentred: the scatter about the origin (for "none", the centred one plus n m m^T)
    flat = PCA(n_components=3, center=False, scale="auto").fit(X)
    _, sv, vt = np.linalg.svd(Z, full_matrices=False)
    np.testing.assert_allclose(flat.singular_values_, sv[:3], rtol=1e-9)
    np.testing.assert_allclose(np.abs(flat.components_ @ vt[:3].T), np.eye(3), atol=1e-9)
    if used == "standard":
        # exactly constant columns are centred at exactly zero, as the column moments do
        assert np.all(pca.scale_center_[[2, 4, 5]] == [0.1, 1e6 + 0.1, 0.0])
        assert not pca._scaled(X)[:, [2, 4, 5]].any()


def test_tall_residual_scorer_on_mixed_units_equals_a_fit_on_the_standardised_data():
    """ResidualScorer(scale="standard") reaches its subspace and limits through the scatter
    matrix of the raw data divided by the spreads; a fit on data standardised beforehand
    (by StandardScaler's formula) must give the same scores and limits."""
    import math

    from robustcore.anomaly import ResidualScorer
    X = _tall_columns(1)
    X[:, 3] *= 1e4
    # exact column means (numpy's X.mean is 1.4e-6 of the spread off on the column 1e6 +- 1e-3)
    center = np.array([math.fsum(col) / X.shape[0] for col in X.T])
    std = np.sqrt(((X - center) ** 2).mean(0))
    std[std < 1e-9] = 1.0
    a = ResidualScorer(n_components=2, scale="standard").fit(X)
    b = ResidualScorer(n_components=2, scale="none").fit((X - center) / std)
    spe_a, t2_a = a.scores(X)
    spe_b, t2_b = b.scores((X - center) / std)
    np.testing.assert_allclose(spe_a, spe_b, rtol=1e-7, atol=1e-12 * spe_b.max())
    np.testing.assert_allclose(t2_a, t2_b, rtol=1e-8)
    np.testing.assert_allclose([a.spe_limit_, a.t2_limit_], [b.spe_limit_, b.t2_limit_], rtol=1e-8)


def _outcome(make, X):
    try:
        est = make().fit(X)
    except ValueError as exc:
        return str(exc)
    # (the centre in original units: in scaled units it is 0 up to rounding)
    return est.scaling_, est.scale_center_, est.scale_, est.components_, est.mean_ * est.scale_ + est.scale_center_


@pytest.mark.slow
@pytest.mark.parametrize("make", [lambda s: PCA(2, scale=s),
                                  lambda s: __import__("robustcore").ResidualScorer(2, scale=s)],
                         ids=["PCA", "ResidualScorer"])
@pytest.mark.parametrize("scale", ["auto", "none", "standard"])
def test_tall_fit_treats_bad_and_extreme_values_as_the_checks_on_x_do(make, scale, monkeypatch):
    """The finiteness and magnitude checks of a tall fit are read off its one pass (counts of
    non-finite entries, column minima and maxima); whatever they see, the outcome is the one of
    the checks on X itself (the route for data with few rows per feature, forced here): the same
    error naming the first NaN or infinity, or the size of values whose squares overflow (also
    when a column's sum overflows, or the square itself does not) or underflow; or the same fit."""
    import robustcore.subspace.pca as pca_module
    X = data(3, n=600, d=5)
    cases = {}
    for bad in (np.nan, -np.inf, 1e200, 1e152):
        cases[bad] = X.copy()
        cases[bad][17, 4] = bad
    cases["sum overflows"] = X.copy()
    cases["sum overflows"][:, 2] = 1e305 * (1.0 + 0.01 * X[:, 2])
    cases["all huge"] = X * 1e160
    cases["all tiny"] = X * 1e-200
    cases["near the lower limit"] = X * (1e-149 / np.abs(X).max())
    fused = {k: _outcome(lambda: make(scale), Y) for k, Y in cases.items()}
    monkeypatch.setattr(pca_module, "_COVARIANCE_ROWS", 10 ** 9)
    for k, Y in cases.items():
        general = _outcome(lambda: make(scale), Y)
        if isinstance(general, str):
            assert fused[k] == general, k
        else:
            assert fused[k][0] == general[0], k
            for a, b in zip(fused[k][1:], general[1:]):
                np.testing.assert_allclose(np.abs(a), np.abs(b), rtol=1e-9, atol=1e-12 * np.abs(b).max())
    assert "first: NaN at row 17, column 4" in fused[np.nan]
    assert "first: infinite at row 17, column 4" in fused[-np.inf]
    if scale == "none":
        assert "as large as 1e+152" in fused[1e152] and "overflow" in fused["sum overflows"]
        assert "underflow" in fused["all tiny"]
