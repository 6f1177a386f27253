"""The registry's adapters: what a run reports beyond the estimator, checked on planted data."""
import numpy as np
import pytest

from robustcore.datasets import Dataset
from robustcore.methods import get_method
from tests.planted import subspace_with_outliers


def test_coherence_pursuit_limits_hold_their_false_alarm_rate_on_the_inliers():
    """The flag rule is "SPE or T² above its limit at alpha = 0.01", so about 2 % of true
    inliers may be flagged. Limits calibrated on the selected (most coherent) half would be
    far too tight: that half is chosen for fitting well."""
    X, is_out, _ = subspace_with_outliers()
    res = get_method("coherence-pursuit").run(Dataset(X=X), {"n_components": 2, "random_state": 0})
    flagged = res.flags["outlier"]
    assert flagged[is_out].all()
    false_alarms = flagged[~is_out].mean()
    assert false_alarms < 0.035
    # the calibration set is all but the gross outliers: every inlier, no outlier, here
    assert res.summary["calibrated on"].startswith(f"{(~is_out).sum()} samples")

    # what the selected-inlier calibration gives, for contrast (documents why it was dropped)
    from robustcore.anomaly import ResidualScorer
    est = res.estimator
    sel = ResidualScorer(n_components=2, alpha=0.01).fit_subspace(
        X[est.inlier_indices_], components=est.components_, mean=est.mean_)
    spe, t2 = sel.scores(X)
    # 2 % expected, about 6 % seen (1.6 % with the trimmed set)
    assert ((spe > sel.spe_limit_) | (t2 > sel.t2_limit_))[~is_out].mean() > 0.045


@pytest.mark.parametrize("n_mad", [3.0, 4.0])
def test_trimmed_calibration_drops_only_the_gross_outliers(n_mad):
    from robustcore.compare import reconstruction_errors
    from robustcore.subspace.coherence_pursuit import calibration_rows
    X, is_out, _ = subspace_with_outliers(n_in=500, n_out=40, seed=3)
    U = np.linalg.svd(X[~is_out] - X[~is_out].mean(0), full_matrices=False)[2][:2]
    sq = reconstruction_errors(X, U, X[~is_out].mean(0))
    keep = calibration_rows(sq, np.ones(X.shape[0], bool), n_mad=n_mad)
    assert not is_out[keep].any()
    assert keep.size > 0.98 * (~is_out).sum()


@pytest.mark.parametrize("method", ["pca", "coherence-pursuit", "residual"])
def test_scaled_runs_say_their_units(method):
    """With scale set, the result's subspace is in scaled units and the result carries the
    scaling (the views' helpers that use it: tests/app/views/test_derived.py)."""
    X, _, _ = subspace_with_outliers(n_in=300, n_out=10, d=6, seed=5)
    X = X * np.geomspace(1, 1e3, 6) + 3.0
    ds = Dataset(X=X, feature_names=[f"f{j}" for j in range(6)])
    res = get_method(method).run(ds, {"n_components": 2, "scale": "standard"})
    assert res.feature_names == [f"f{j}" for j in range(6)]
    est = res.estimator
    np.testing.assert_allclose(res.subspace.scale, est.scale_)
    unscaled = get_method(method).run(ds, {"n_components": 2, "scale": "none"})
    assert not unscaled.subspace.scaled and "scale" not in unscaled.all_arrays()
    # columns a thousand-fold apart are mixed units: the default scales them
    assert get_method(method).run(ds, {"n_components": 2}).estimator.scaling_ == "standard"


@pytest.mark.parametrize("method", ["pca", "coherence-pursuit", "pcp"])
def test_outlier_map_puts_planted_inliers_in_the_regular_region(method):
    """Planted subspace plus outliers far off it: the inliers are mostly "regular" (both
    distances under their 97.5 % cut-offs) and the outliers are beyond the orthogonal cut-off.
    Checked for every model the map is drawn for, PCP's L included (whose weak directions once
    put every sample beyond the score cut-off)."""
    from robustcore.outlier_map import REGIONS
    X, is_out, _ = subspace_with_outliers(n_in=600, n_out=30, d=12, seed=4)
    res = get_method(method).run(Dataset(X=X), {"n_components": 2} if method != "pcp" else {})
    region = res.arrays["map_region"]
    regular = region == REGIONS.index("regular")
    assert regular[~is_out].mean() > 0.85
    od = res.arrays["orthogonal_distance"]
    assert (od[is_out] > res.summary["OD cut-off"]).mean() > 0.9


def test_scw_run_says_when_the_file_is_sorted_by_class():
    """The window streams SCW in a seeded random order; a file sorted by class (iris as stored)
    is still reported, and a shuffled copy is not."""
    from robustcore.datasets import demo
    ds = demo("iris")
    res = get_method("scw").run(ds, {})
    assert "sorted by class" in res.summary["sample order"]
    assert any("long runs of one class" in w for w in res.warnings)
    perm = np.random.default_rng(0).permutation(ds.n_samples)
    shuffled = Dataset(X=ds.X[perm], labels=np.asarray(ds.labels)[perm])
    res2 = get_method("scw").run(shuffled, {})
    assert "sample order" not in res2.summary


@pytest.mark.parametrize("method, params", [("pca", {}), ("coherence-pursuit", {}), ("residual", {}),
                                            ("pca", {"contamination": 0.1})])
def test_run_scores_and_flags_are_the_estimators_own(method, params):
    """The adapter's outlier score and flags are the estimator's score_samples and predict,
    computed another way (from one SPE/T² pass)."""
    X, _, _ = subspace_with_outliers(n_in=400, n_out=20, d=10, seed=2)
    res = get_method(method).run(Dataset(X=X), params)
    est = res.estimator
    np.testing.assert_allclose(res.sample_scores["outlier_score"], -est.score_samples(X), rtol=1e-12)
    np.testing.assert_array_equal(res.flags["outlier"], est.predict(X) == -1)


@pytest.mark.parametrize("method", ["pca", "pcp", "coherence-pursuit", "residual"])
def test_image_data_keep_their_pixels_under_scale_auto(method):
    """A clip whose static pixels barely vary while moving ones vary 30x more: as a table this
    is "mixed units" and auto standardises it; as images (the loader knows the image shape)
    auto keeps the pixels as they are, and the result says why."""
    rng = np.random.default_rng(0)
    h, w, n = 6, 8, 60
    frames = 0.5 + 0.001 * rng.standard_normal((n, h * w))
    frames[:, :10] += 0.3 * rng.standard_normal((n, 10))       # where people walk
    table = Dataset(X=frames, name="as a table")
    images = Dataset(X=frames, name="as images", image_shape=(h, w))
    params = {} if method == "pcp" else {"n_components": 2}
    as_table = get_method(method).run(table, params)
    as_images = get_method(method).run(images, params)
    assert as_table.estimator.scaling_ == "standard"
    assert as_images.estimator.scaling_ == "none" and as_images.params["scale"] == "auto"
    # the reason is a field of its own; only the summary puts it into words
    part = as_images.decomposition or as_images.subspace
    assert (part.scaling, part.scaling_reason) == ("none", "image data")
    assert as_images.summary["scaling"] == "none (image data)"
    assert (as_table.decomposition or as_table.subspace).scaling_reason is None


def test_a_session_saved_with_the_reason_in_the_scaling_reads_it_into_its_field():
    """Sessions written before the reason had a field said "none (image data)" in the scaling."""
    from robustcore.result import RunResult
    X = np.random.default_rng(1).normal(size=(30, 4))
    res = get_method("pca").run(Dataset(X=X), {"n_components": 2, "scale": "none"})
    facts = res.facts()
    assert facts["subspace"]["scaling"] == "none" and facts["subspace"]["scaling_reason"] is None
    facts["subspace"]["scaling"] = "none (image data)"
    del facts["subspace"]["scaling_reason"]
    back = RunResult.restore(method="pca", params=res.params, data_fingerprint=res.data_fingerprint, facts=facts,
                             arrays=res.all_arrays())
    assert (back.subspace.scaling, back.subspace.scaling_reason) == ("none", "image data")
    assert back.summary["scaling"] == "none (image data)"


def test_a_result_names_features_on_demand_when_its_data_do():
    """Names made on demand (a 4 x 2^24 store) stay so in the result: no list of d strings per
    run (issue 34.5); given names stay a list of strings."""
    from robustcore.datasets._limits import numbered
    X = np.random.default_rng(0).normal(size=(40, 5))
    res = get_method("pca").run(Dataset(X=X), {"n_components": 2})
    assert isinstance(res.feature_names, numbered) and res.feature_names == [f"x{j}" for j in range(5)]
    named = get_method("pca").run(Dataset(X=X, feature_names=list("abcde")), {"n_components": 2})
    assert named.feature_names == list("abcde") and isinstance(named.feature_names, list)
