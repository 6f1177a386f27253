"""scikit-learn's own estimator checks over every registered estimator, plus pipelines, clone,
grid search and DataFrames.

Every estimator of the registry (robustcore.methods.METHODS) is checked, so a new method is
covered as soon as it is registered. ``CHECK_PARAMS`` gives the few parameters a class needs
for scikit-learn's small test data sets (documented with each); ``EXPECTED_FAILURES`` lists the
checks that cannot pass, each with its reason: they are reported as expected failures (xfail),
never silenced.
"""
from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.utils.estimator_checks import parametrize_with_checks

from robustcore.methods import METHODS
from tests.planted import subspace_with_outliers

# scikit-learn's checks fit on make_blobs data with 2 features: a rank-2 subspace of 2-D data
# leaves no residual, so the subspace methods get rank 1. On three clean Gaussian blobs the
# methods' own limits (contamination="auto") rightly flag nothing, while the outlier checks want
# both -1 and +1 from predict: they run with a fraction (the check then also tries others).
CHECK_PARAMS = {
    "PCA": {"n_components": 1, "contamination": 0.1},
    "CoherencePursuit": {"n_components": 1, "contamination": 0.1},
    "ResidualScorer": {"n_components": 1, "contamination": 0.1},
    "PCP": {"contamination": 0.1},
    "ROBPCA": {"n_components": 1, "contamination": 0.1, "random_state": 0},
}

EXPECTED_FAILURES: dict[str, dict[str, str]] = {}


def _estimators():
    classes = sorted({m.estimator_class for m in METHODS.values()}, key=lambda c: c.__name__)
    return [cls(**CHECK_PARAMS.get(cls.__name__, {})) for cls in classes]


def _expected_failures(est):
    return EXPECTED_FAILURES.get(type(est).__name__, {})


@pytest.mark.slow
@parametrize_with_checks(_estimators(), expected_failed_checks=_expected_failures)
def test_sklearn_check(estimator, check):
    check(estimator)


# -- beyond check_estimator: what a scikit-learn user does with them ---------------------------

def _planted(n_in=200, n_out=20, d=8, r=2, seed=0):
    """Inliers near an r-dimensional affine subspace (features on very different scales), and
    outliers far off it; y = 1 for outliers."""
    X, is_out, _ = subspace_with_outliers(n_in, n_out, d, r, radius=3.0, seed=seed)
    return X * np.geomspace(1, 1000, d) + 5.0, is_out.astype(int)


@pytest.mark.parametrize("est", _estimators(), ids=lambda e: type(e).__name__)
def test_pipeline_with_a_scaler_and_clone(est):
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    X, y = _planted()
    if type(est).__name__ == "SCW":
        y = np.where(X[:, 0] > np.median(X[:, 0]), "big", "small")
    pipe = make_pipeline(StandardScaler(), clone(est))
    pipe.fit(X, y)
    assert clone(pipe).get_params()["steps"][1][1].get_params() == est.get_params()
    if hasattr(pipe, "predict"):
        assert pipe.predict(X).shape == (X.shape[0],)
    if hasattr(pipe, "transform"):
        assert pipe.transform(X).shape[0] == X.shape[0]


def test_grid_search_over_a_pipeline():
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from robustcore import SCW
    X, _ = _planted()
    y = np.where(X @ np.linspace(-1, 1, X.shape[1]) > 0, 1, -1)
    grid = GridSearchCV(make_pipeline(StandardScaler(), SCW()), {"scw__C": [0.1, 1.0], "scw__variant": ["I", "II"]},
                        cv=3).fit(X, y)
    assert grid.best_score_ > 0.8 and set(grid.best_params_) == {"scw__C", "scw__variant"}


@pytest.mark.parametrize("name", ["PCA", "CoherencePursuit", "ResidualScorer", "PCP"])
def test_outlier_api_follows_scikit_learn(name):
    """Higher score_samples = more normal; decision_function = score_samples - offset_ is
    negative exactly where predict says -1; contamination c flags the share c of the training
    data; the planted outliers come out lowest."""
    import robustcore
    from sklearn.metrics import roc_auc_score
    cls = getattr(robustcore, name)
    kw = {} if name == "PCP" else {"n_components": 2}
    X, y = _planted()
    est = cls(**kw, scale="standard").fit(X)
    s = est.score_samples(X)
    assert roc_auc_score(y, -s) > 0.98
    dec = est.decision_function(X)
    np.testing.assert_allclose(dec, s - est.offset_)
    pred = est.predict(X)
    assert set(np.unique(pred)) <= {-1, 1}
    np.testing.assert_array_equal(pred == -1, dec < 0)
    np.testing.assert_array_equal(cls(**kw, scale="standard").fit_predict(X), pred)
    # "auto": limits calibrated on the training scores flag few inliers; these 9 % of
    # outliers lie inside the scores' robust core, so the calibration cannot tell them
    # from a heavy tail and flags fewer of them than the Gaussian limits do (it still
    # catches some; the ranking above is the estimator's own)
    if name == "PCP":
        # PCP's sparse-part scores keep the outliers out of their core (spread from the lower
        # half, issue 35): all 20 caught, and 7 of the 200 inliers, the top of a long tail
        # beyond the core on a table too small to promise 1 % (about 2 expected); the fit
        # says both (round 2's core, from the upper quartile: 3 of the 20, under 2 %)
        assert (pred[y == 0] == -1).mean() < 0.04 and (pred[y == 1] == -1).mean() > 0.9
        caveat = est.limit_calibration_["caveat"]
        assert "only 220 calibration rows" in caveat and "beyond the robust core" in caveat
    else:
        assert (pred[y == 0] == -1).mean() < 0.02
        assert (pred[y == 1] == -1).mean() >= 0.2
    if name == "PCP":   # the median + 3 MAD rule, by name: most of the outliers
        mad = cls(scale="standard", contamination="mad").fit(X)
        assert (mad.predict(X)[y == 1] == -1).mean() > 0.9
    else:
        if name == "ResidualScorer":      # the textbook limits: most of the outliers
            textbook = cls(**kw, scale="standard", calibrate=False).fit(X)
            assert (textbook.predict(X)[y == 1] == -1).mean() > 0.9
    est = cls(**kw, scale="standard", contamination=0.05).fit(X)
    assert (est.predict(X) == -1).sum() == 11       # 5 % of 220


def test_scale_is_inside_the_estimator_and_inverse_transform_gives_original_units():
    from robustcore import PCA
    X, _ = _planted()
    X[:, 3] = 42.0                                    # constant column: scale 1, never NaN
    for scale in ("standard", "robust"):
        pca = PCA(8, scale=scale).fit(X)
        assert np.all(np.isfinite(pca.scale_)) and pca.scale_[3] == 1.0
        np.testing.assert_allclose(pca.inverse_transform(pca.transform(X)), X, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(PCA(2, scale="standard").fit(X).mean_, 0.0, atol=1e-9)  # scaled units
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    inside = PCA(2, scale="standard").fit(X)
    outside = make_pipeline(StandardScaler(), PCA(2)).fit(X)
    np.testing.assert_allclose(np.abs(inside.transform(X)), np.abs(outside.transform(X)), rtol=1e-9,
                               atol=1e-9)
    np.testing.assert_allclose(inside.score_samples(X), outside.score_samples(X), rtol=1e-9)


def test_robust_scale_ignores_the_outliers():
    from robustcore._scaling import fit_scaling
    rng = np.random.default_rng(1)
    X = rng.standard_normal((1000, 3)) * [1.0, 10.0, 0.1]
    X[:100] += 1e6                                     # 10 % gross outliers
    center, scale = fit_scaling(X, "robust")
    np.testing.assert_allclose(scale, [1.0, 10.0, 0.1], rtol=0.25)   # std would be ~3e5
    # MAD 0 (most values equal) falls back to the IQR, then the standard deviation
    Y = np.zeros((100, 2))
    Y[:30, 0] = np.arange(30)
    Y[:3, 1] = 5.0
    c, s = fit_scaling(Y, "robust")
    assert s[0] > 0 and s[1] == pytest.approx(Y[:, 1].std()) and np.all(c == 0)


def test_pcp_decomposes_the_scaled_matrix_and_returns_original_units():
    """scale="standard" is PCP of StandardScaler's output, with L (taking the centre) and S
    mapped back to the original units."""
    from sklearn.preprocessing import StandardScaler

    from robustcore import PCP
    rng = np.random.default_rng(2)
    L0 = rng.standard_normal((150, 3)) @ rng.standard_normal((3, 40))
    S0 = np.where(rng.random(L0.shape) < 0.05, rng.choice([-10.0, 10.0], L0.shape), 0.0)
    X = (L0 + S0) * np.geomspace(1, 1e4, 40) + 7.0
    est = PCP(scale="standard", random_state=0).fit(X)
    sc = StandardScaler().fit(X)
    ref = PCP(random_state=0).fit(sc.transform(X))
    np.testing.assert_allclose(est.sparse_, ref.sparse_ * sc.scale_, rtol=1e-6, atol=1e-8 * np.abs(X).max())
    np.testing.assert_allclose(est.low_rank_, ref.low_rank_ * sc.scale_ + sc.mean_, rtol=1e-6,
                               atol=1e-8 * np.abs(X).max())
    np.testing.assert_allclose(est.sample_scores_, ref.sample_scores_, rtol=1e-6)
    assert np.linalg.norm(X - est.low_rank_ - est.sparse_) < 1e-6 * np.linalg.norm(X)
    np.testing.assert_array_equal(est.fit_transform(X), est.low_rank_)


def test_pcp_new_rows_are_split_against_the_fitted_model():
    """A new row from the same model: its low-rank part is recovered (to the solver's tolerance)
    and its score is the l1 norm of its planted sparse part."""
    from robustcore import PCP
    rng = np.random.default_rng(3)
    n, d, r = 600, 100, 5
    L0 = rng.standard_normal((n, r)) @ rng.standard_normal((r, d)) / np.sqrt(d)
    S0 = np.where(rng.random((n, d)) < 0.05, rng.choice([-3.0, 3.0], (n, d)), 0.0)
    X = L0 + S0
    est = PCP(random_state=0).fit(X[:500])
    new = slice(500, None)
    np.testing.assert_allclose(est.transform(X[new]), L0[new], atol=1e-5)
    np.testing.assert_allclose(-est.score_samples(X[new]), np.abs(S0[new]).sum(axis=1), rtol=1e-5)
    # training rows (in any order, any subset) get the decomposition's own L and score
    idx = np.array([7, 3, 499])
    np.testing.assert_array_equal(est.transform(X[idx]), est.low_rank_[idx])
    np.testing.assert_array_equal(-est.score_samples(X[idx]), est.sample_scores_[idx])


def test_dataframes_feature_names_and_pandas_output():
    pd = pytest.importorskip("pandas")
    from robustcore import ESFS, PCA, CoherencePursuit
    X, _ = _planted()
    cols = [f"f{j}" for j in range(X.shape[1])]
    df = pd.DataFrame(X, columns=cols, index=np.arange(100, 100 + X.shape[0]))
    for est in (PCA(2), CoherencePursuit(2)):
        est.set_output(transform="pandas").fit(df)
        assert list(est.feature_names_in_) == cols
        out = est.transform(df)
        assert isinstance(out, pd.DataFrame) and list(out.index) == list(df.index)
        assert list(out.columns) == [f"{type(est).__name__.lower()}{i}" for i in range(2)]
    sel = ESFS(n_features_to_select=3).set_output(transform="pandas").fit(df)
    kept = sel.transform(df)
    assert list(kept.columns) == list(sel.get_feature_names_out()) == [cols[j] for j in sel.get_support(indices=True)]
    with pytest.warns(UserWarning, match="feature names"):
        PCA(2).fit(df).transform(X)


def test_scw_is_a_classifier_with_probabilities_for_two_classes():
    from scipy.stats import norm

    from robustcore import SCW
    rng = np.random.default_rng(4)
    X = rng.standard_normal((400, 5))
    y = np.where(X @ [1.0, -2.0, 0.5, 0.0, 1.0] > 0, "yes", "no")
    est = SCW(shuffle=False).fit(X, y)
    assert list(est.classes_) == ["no", "yes"] and est.score(X, y) > 0.9
    P = est.predict_proba(X[:20])
    # the intercept is the weight of a constant feature 1 (the covariance's last coordinate)
    Xa = np.c_[X, np.ones(len(X))]
    w = np.r_[est.mean_, est.intercept_]
    v = np.einsum("ij,jk,ik->i", Xa[:20], est.covariance_, Xa[:20])
    np.testing.assert_allclose(P[:, 1], norm.cdf(Xa[:20] @ w / np.sqrt(v)), rtol=1e-12)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    np.testing.assert_array_equal(est.classes_[P.argmax(axis=1)], est.predict(X[:20]))
    diag = SCW(covariance="diagonal").fit(X, y)
    wd = np.r_[diag.mean_, diag.intercept_]
    np.testing.assert_allclose(diag.predict_proba(X[:5])[:, 1],
                               norm.cdf(Xa[:5] @ wd / np.sqrt((Xa[:5] ** 2) @ diag.covariance_diag_)))
    multi = SCW().fit(X, np.digitize(X[:, 0], [-0.5, 0.5]))
    assert not hasattr(multi, "predict_proba")       # no closed form for the multi-class models
    part = SCW().partial_fit(X[:200], y[:200], classes=["no", "yes"]).partial_fit(X[200:], y[200:])
    np.testing.assert_allclose(part.mean_, est.mean_, rtol=1e-10, atol=1e-12)
