"""SPE / T² scoring: exact invariances, closed-form limits checked by simulation, consistency."""
import numpy as np
import pytest
from scipy import stats

from robustcore import Cancelled, NotFittedError
from robustcore.anomaly import (ResidualScorer, box_limit, jackson_mudholkar_limit,
                                t2_limit_new, t2_limit_training)
from robustcore.subspace.pca import PCA

SPECTRUM = np.array([10, 6, 3, 1, 0.8, 0.6, 0.5, 0.4, 0.3, 0.2])


def gaussian(rng, n, spectrum=SPECTRUM, Q=None):
    d = spectrum.size
    if Q is None:
        Q = np.linalg.qr(rng.standard_normal((d, d)))[0]
    return rng.standard_normal((n, d)) * np.sqrt(spectrum) @ Q.T + 2.0, Q


def fitted(seed=0, n=200, **kw):
    rng = np.random.default_rng(seed)
    X, Q = gaussian(rng, n)
    return ResidualScorer(**{"n_components": 3, **kw}).fit(X), X, rng


# -- the blind spot, exactly -----------------------------------------------------------------

def test_spe_invariant_along_subspace_while_t2_grows():
    sc, X, rng = fitted()
    x = X[:5]
    U = sc.components_
    for c in ([50.0, 0, 0], [0, -30.0, 7.0], [1e3, 1e3, -1e3]):
        moved = x + np.asarray(c) @ U
        np.testing.assert_allclose(sc.spe(moved), sc.spe(x), rtol=0, atol=1e-12 * max(1, sc.spe(x).max()))
        assert np.all(sc.t2(moved) > sc.t2(x) + 100)
    # ...and T² is blind to moves orthogonal to the subspace.
    w = rng.standard_normal(10)
    w -= U.T @ (U @ w)
    w *= 40 / np.linalg.norm(w)
    np.testing.assert_allclose(sc.t2(x + w), sc.t2(x), atol=1e-10)
    assert np.all(sc.spe(x + w) > sc.spe(x) + 100)


def test_scores_match_definitions():
    sc, X, _ = fitted()
    Z = X - X.mean(axis=0)
    w, V = np.linalg.eigh(np.cov(X.T))
    w, V = w[::-1], V[:, ::-1]
    T = Z @ V[:, :3]
    np.testing.assert_allclose(sc.t2(X), (T**2 / w[:3]).sum(axis=1), rtol=1e-9)
    np.testing.assert_allclose(sc.spe(X), (Z**2).sum(axis=1) - (T**2).sum(axis=1), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(sc.variances_, w[:3], rtol=1e-10)
    np.testing.assert_allclose(sc.residual_eigenvalues_, w[3:], rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(np.abs(sc.transform(X)), np.abs(T), rtol=1e-8, atol=1e-10)
    # higher = more normal: minus the larger of SPE and T² in units of their limits
    np.testing.assert_allclose(sc.score_samples(X),
                               -np.maximum(sc.spe(X) / sc.spe_limit_, sc.t2(X) / sc.t2_limit_), rtol=1e-12)
    np.testing.assert_array_equal(sc.predict(X) == -1, sc.flag(X)["either"])


def test_contributions_sum_to_spe():
    sc, X, _ = fitted()
    C = sc.contributions(X)
    assert C.shape == X.shape and np.all(C >= 0)
    np.testing.assert_allclose(C.sum(axis=1), sc.spe(X), rtol=1e-10)


def test_flag_uses_both_limits():
    sc, X, _ = fitted()
    f = sc.flag(X)
    np.testing.assert_array_equal(f["spe"], sc.spe(X) > sc.spe_limit_)
    np.testing.assert_array_equal(f["t2"], sc.t2(X) > sc.t2_limit_)
    np.testing.assert_array_equal(f["either"], f["spe"] | f["t2"])
    far = X[:1] + 100 * sc.components_[0]
    assert sc.flag(far)["t2"][0] and not sc.flag(far)["spe"][0] and sc.flag(far)["either"][0]


# -- limits: formulas and false-alarm rates -------------------------------------------------

def test_false_alarm_rates_at_alpha_001():
    # methods.md §5.6: spectrum 10..0.2, n = 500, p = 3, alpha = 0.01; 4 fits x 100k new points.
    rates = {"jm": [], "box": [], "t2": []}
    for seed in range(4):
        rng = np.random.default_rng(seed)
        Xtr, Q = gaussian(rng, 500)
        Xte, _ = gaussian(rng, 100_000, Q=Q)
        jm = ResidualScorer(n_components=3, alpha=0.01).fit(Xtr)
        box = ResidualScorer(n_components=3, alpha=0.01, limit="box").fit(Xtr)
        f = jm.flag(Xte)
        rates["jm"].append(f["spe"].mean())
        rates["t2"].append(f["t2"].mean())
        rates["box"].append(np.mean(box.spe(Xte) > box.spe_limit_))
        assert jm.spe_limit_method_ == "jackson-mudholkar"
    mean = {k: float(np.mean(v)) for k, v in rates.items()}
    print("false-alarm rates at alpha=0.01:", mean)
    assert 0.007 <= mean["jm"] <= 0.013
    assert 0.007 <= mean["t2"] <= 0.013
    assert 0.007 <= mean["box"] <= 0.015


def test_jm_formula_by_hand_and_box_fallback():
    lam = np.array([1.0, 0.8, 0.6, 0.5, 0.4, 0.3, 0.2])
    t1, t2, t3 = lam.sum(), (lam**2).sum(), (lam**3).sum()
    h0 = 1 - 2 * t1 * t3 / (3 * t2**2)
    c = stats.norm.ppf(0.99)
    q = t1 * (c * np.sqrt(2 * t2 * h0**2) / t1 + 1 + t2 * h0 * (h0 - 1) / t1**2) ** (1 / h0)
    got, method = jackson_mudholkar_limit(lam, 0.01)
    assert method == "jackson-mudholkar"
    assert got == pytest.approx(q, rel=1e-12)
    # One dominant eigenvalue and many tiny ones: h0 <= 0, JM undefined -> Box.
    lam2 = np.r_[1.0, np.full(100, 0.01)]
    t1, t2, t3 = lam2.sum(), (lam2**2).sum(), (lam2**3).sum()
    assert 1 - 2 * t1 * t3 / (3 * t2**2) <= 0
    got2, method2 = jackson_mudholkar_limit(lam2, 0.01)
    assert method2.startswith("box")
    assert got2 == pytest.approx(t2 / t1 * stats.chi2.ppf(0.99, t1**2 / t2), rel=1e-12)
    assert box_limit(lam2, 0.01) == got2
    # A single residual eigenvalue: SPE = lambda * chi2_1 exactly, and Box is exact there.
    assert box_limit([2.0], 0.05) == pytest.approx(2.0 * stats.chi2.ppf(0.95, 1), rel=1e-12)


def test_t2_limits_closed_forms():
    p, n, a = 3, 500, 0.01
    assert t2_limit_new(p, n, a) == pytest.approx(
        p * (n - 1) * (n + 1) / (n * (n - p)) * stats.f.ppf(1 - a, p, n - p), rel=1e-12)
    assert t2_limit_training(p, n, a) == pytest.approx(
        (n - 1) ** 2 / n * stats.beta.ppf(1 - a, p / 2, (n - p - 1) / 2), rel=1e-12)
    # For large n both tend to the chi-square quantile; training < new.
    chi = stats.chi2.ppf(1 - a, p)
    assert t2_limit_training(p, 10**6, a) == pytest.approx(chi, rel=1e-3)
    assert t2_limit_new(p, 10**6, a) == pytest.approx(chi, rel=1e-3)
    assert t2_limit_training(p, n, a) < t2_limit_new(p, n, a)


def test_training_t2_limit_rate_on_training_rows():
    # Phase-I limit: the training rows' own T² exceed it at rate alpha (averaged over fits).
    hits = []
    for seed in range(60):
        rng = np.random.default_rng(1000 + seed)
        X, _ = gaussian(rng, 200)
        sc = ResidualScorer(n_components=3, alpha=0.05, t2_limit="training").fit(X)
        hits.append(np.mean(sc.t2(X) > sc.t2_limit_))
    assert 0.04 <= np.mean(hits) <= 0.06


def test_alpha_changes_limits_monotonically():
    _, X, _ = fitted()
    a = ResidualScorer(n_components=3, alpha=0.05).fit(X)
    b = ResidualScorer(n_components=3, alpha=0.001).fit(X)
    assert b.spe_limit_ > a.spe_limit_ and b.t2_limit_ > a.t2_limit_


# -- fit_subspace ---------------------------------------------------------------------------

def test_fit_subspace_with_pca_subspace_equals_fit():
    _, X, _ = fitted(n=300)
    a = ResidualScorer(n_components=3).fit(X)
    pca = PCA(n_components=3).fit(X)
    b = ResidualScorer(n_components=3).fit_subspace(X, components=pca.components_, mean=pca.mean_)
    np.testing.assert_allclose(b.variances_, a.variances_, rtol=1e-10)
    np.testing.assert_allclose(b.residual_eigenvalues_, a.residual_eigenvalues_, rtol=1e-8, atol=1e-12)
    assert b.spe_limit_ == pytest.approx(a.spe_limit_, rel=1e-10)
    assert b.t2_limit_ == pytest.approx(a.t2_limit_, rel=1e-12)
    np.testing.assert_allclose(b.spe(X), a.spe(X), rtol=1e-10)
    np.testing.assert_allclose(b.t2(X), a.t2(X), rtol=1e-10)
    np.testing.assert_allclose(np.abs(b.plane_), np.abs(a.plane_), atol=1e-10)


def test_fit_subspace_wide_data_uses_all_residual_eigenvalues():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((30, 80)) * np.linspace(3, 0.5, 80)
    pca = PCA(n_components=2).fit(X)
    sc = ResidualScorer(n_components=2).fit_subspace(X, pca.components_, pca.mean_)
    ref = np.linalg.svd(X - X.mean(0), compute_uv=False) ** 2 / 29
    np.testing.assert_allclose(sc.residual_eigenvalues_[:27], ref[2:29], rtol=1e-9)
    np.testing.assert_allclose(sc.thetas_[0], ref[2:].sum(), rtol=1e-10)


def test_fit_subspace_validates_basis():
    _, X, _ = fitted()
    with pytest.raises(ValueError, match="shape"):
        ResidualScorer(n_components=2).fit_subspace(X, np.eye(10)[:3], np.zeros(10))
    with pytest.raises(ValueError, match="orthonormal"):
        ResidualScorer(n_components=2).fit_subspace(X, 2 * np.eye(10)[:2], np.zeros(10))
    with pytest.raises(ValueError, match="mean"):
        ResidualScorer(n_components=2).fit_subspace(X, np.eye(10)[:2], np.zeros(9))


def test_zero_variance_component_is_an_error():
    rng = np.random.default_rng(0)
    X = np.c_[rng.standard_normal((50, 3)), np.zeros((50, 2))]
    with pytest.raises(ValueError, match="no variance along component 4"):
        ResidualScorer(n_components=4).fit_subspace(X, np.eye(5)[[0, 1, 2, 3]], np.zeros(5))


# -- grid -----------------------------------------------------------------------------------

def test_grid_equals_scores_of_the_same_points_high_d():
    sc, X, _ = fitted()
    sc1 = ResidualScorer(n_components=1).fit(X)
    xs, ys = np.linspace(-5, 5, 7), np.linspace(-3, 4, 5)
    for s in (sc, sc1):
        u, v = s.plane_
        pts = s.mean_ + xs[None, :, None] * u + ys[:, None, None] * v
        spe, t2 = s.grid(xs, ys)
        assert spe.shape == t2.shape == (5, 7)
        np.testing.assert_allclose(spe, s.spe(pts.reshape(-1, 10)).reshape(5, 7), rtol=1e-9, atol=1e-10)
        np.testing.assert_allclose(t2, s.t2(pts.reshape(-1, 10)).reshape(5, 7), rtol=1e-9, atol=1e-10)
    # n_components = 1: the default plane still holds PC2, along which SPE grows.
    spe, _ = sc1.grid([0.0], [0.0, 3.0])
    assert spe[1, 0] > spe[0, 0] + 1
    # A custom plane.
    P = np.linalg.qr(np.random.default_rng(5).standard_normal((10, 2)))[0].T
    spe, t2 = sc.grid(xs, ys, plane=P)
    pts = sc.mean_ + xs[None, :, None] * P[0] + ys[:, None, None] * P[1]
    np.testing.assert_allclose(spe, sc.spe(pts.reshape(-1, 10)).reshape(5, 7), rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(t2, sc.t2(pts.reshape(-1, 10)).reshape(5, 7), rtol=1e-9, atol=1e-10)


def test_grid_two_features_uses_feature_axes():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((100, 2)) @ np.array([[3.0, 1.0], [0.0, 0.5]])
    sc = ResidualScorer(n_components=1).fit(X)
    np.testing.assert_array_equal(sc.plane_, np.eye(2))
    xs, ys = np.linspace(-4, 4, 9), np.linspace(-2, 2, 3)
    spe, t2 = sc.grid(xs, ys)
    pts = np.stack(np.meshgrid(xs, ys), axis=-1).reshape(-1, 2) + sc.mean_
    np.testing.assert_allclose(spe.ravel(), sc.spe(pts), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(t2.ravel(), sc.t2(pts), rtol=1e-9, atol=1e-12)


def test_grid_rejects_bad_plane():
    sc, _, _ = fitted()
    with pytest.raises(ValueError, match="shape"):
        sc.grid([0.0], [0.0], plane=np.eye(3))
    with pytest.raises(ValueError, match="orthonormal"):
        sc.grid([0.0], [0.0], plane=2 * np.eye(10)[:2])


# -- validation and cancellation -----------------------------------------------------------

@pytest.mark.parametrize("alpha", [0.0, 1.0, -0.1, 1.5, float("nan")])
def test_alpha_outside_open_interval(alpha):
    _, X, _ = fitted()
    with pytest.raises(ValueError, match=r"'alpha' parameter of \w+ must be a number in \(0, 1\)"):
        ResidualScorer(alpha=alpha).fit(X)


def test_rank_width_and_nan_errors():
    _, X, _ = fitted()
    with pytest.raises(ValueError, match=r"'n_components' parameter must be an integer in \[1, 9\].*Got 10"):
        ResidualScorer(n_components=10).fit(X)
    with pytest.raises(ValueError, match=r"'n_components' parameter must be an integer in \[1, 4\]"):
        ResidualScorer(n_components=5).fit(X[:5])
    sc = ResidualScorer(n_components=2).fit(X)
    with pytest.raises(ValueError, match="10"):
        sc.spe(X[:, :9])
    bad = X.copy()
    bad[3, 4] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        ResidualScorer().fit(bad)
    with pytest.raises(ValueError, match="NaN"):
        sc.t2(bad)
    with pytest.raises(ValueError, match="limit"):
        ResidualScorer(limit="chi2").fit(X)
    with pytest.raises(NotFittedError):
        ResidualScorer().spe(X)


def test_cancel_leaves_unfitted():
    sc, X, _ = fitted()
    with pytest.raises(Cancelled):
        sc.fit(X, progress=lambda f, m: False)
    assert not hasattr(sc, "spe_limit_")
    sc.fit(X)
    with pytest.raises(Cancelled):
        sc.fit_subspace(X, sc.components_, sc.mean_, progress=lambda f, m: False)
    with pytest.raises(NotFittedError):
        sc.spe(X)


def test_scores_in_one_pass_equal_separate_calls_across_blocks(monkeypatch):
    import robustcore._passes as passes
    sc, X, _ = fitted(n=250)
    spe, t2 = sc.spe(X), sc.t2(X)
    monkeypatch.setattr(passes, "SUB_BLOCK_ENTRIES", 30)  # 3 rows per block
    s2, t22 = sc.scores(X)
    np.testing.assert_allclose(s2, spe, rtol=1e-12)
    np.testing.assert_allclose(t22, t2, rtol=1e-12)


def test_exactly_low_rank_training_data_flags_nothing_in_the_subspace():
    rng = np.random.default_rng(21)
    X = rng.standard_normal((80, 2)) @ rng.standard_normal((2, 6)) + 1.0
    sc = ResidualScorer(n_components=2).fit(X)
    assert sc.spe_limit_ > 0 and np.all(np.isfinite(sc.residual_eigenvalues_))
    assert not sc.flag(X)["spe"].any()
    off = X[:3] + 0.01 * rng.standard_normal((3, 6))
    assert sc.flag(off)["spe"].all()


def test_spe_and_t2_of_planted_rows_far_from_the_origin_with_tiny_residuals(monkeypatch):
    """Rows planted as mean + scores along an orthonormal basis + a residual orthogonal to it,
    the mean at 1e6 and the residuals 1e-4: the blocked pass (centred block, residual formed
    in place) gives the planted SPE |residual|² and T² = sum scores² / variances, across blocks
    and with a short last block."""
    import robustcore._passes as passes
    rng = np.random.default_rng(8)
    n, d, k = 1001, 12, 3
    Q = np.linalg.qr(rng.standard_normal((d, d)))[0]
    C, N = Q[:, :k].T, Q[:, k:].T                      # the basis and its orthogonal complement
    m = 1e6 + rng.standard_normal(d)
    scores = rng.standard_normal((n, k)) * [300.0, 100.0, 30.0]
    resid = 1e-4 * rng.standard_normal((n, d - k))
    X = m + scores @ C + resid @ N
    sc = ResidualScorer(n_components=k, scale="none").fit_subspace(X, C, m)
    want_spe = (resid ** 2).sum(axis=1)
    want_t2 = (scores ** 2 / sc.variances_).sum(axis=1)
    monkeypatch.setattr(passes, "SUB_BLOCK_ENTRIES", 100 * d)    # 100 rows per block, 1 left
    spe, t2 = sc.scores(X)
    # X itself holds the residual to 1e6 * 2^-53 = 1e-10 absolute, 1e-6 of it
    np.testing.assert_allclose(spe, want_spe, rtol=1e-5)
    np.testing.assert_allclose(t2, want_t2, rtol=1e-10)
    np.testing.assert_array_equal(sc.spe(X), spe)
    np.testing.assert_array_equal(sc.t2(X), t2)


@pytest.mark.parametrize("method", ["jackson-mudholkar", "box"])
def test_spe_limits_scale_with_the_eigenvalues_without_overflow(method):
    """Both SPE limits are homogeneous in the eigenvalues: eigenvalues times 2^k give the limit
    times 2^k, also where sum λ³ would overflow (variances of 1e280 from data near 1e140,
    which the estimators accept), and without a RuntimeWarning."""
    import warnings
    from robustcore.anomaly import spe_limit
    lam = np.r_[3.0, 1.2, 0.7, 0.3, 0.05]
    base = spe_limit(lam, 0.01, total=10.0, method=method)
    assert base > 0
    for k in (-900, -300, 300, 930):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            scaled = spe_limit(lam * 2.0**k, 0.01, total=10.0 * 2.0**k, method=method)
        assert scaled == pytest.approx(base * 2.0**k, rel=1e-12)
    # and through a fit: data near 1e140 get the limit of the unit data times 1e280
    rng = np.random.default_rng(5)
    X = rng.standard_normal((400, 6)) * np.r_[3.0, 2.0, 1.0, 0.5, 0.2, 0.1]
    small = ResidualScorer(n_components=2, scale="none", limit=method).fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        big = ResidualScorer(n_components=2, scale="none", limit=method).fit(X * 1e140)
    assert big.spe_limit_ == pytest.approx(small.spe_limit_ * 1e280, rel=1e-9)
