"""Coherence Pursuit against planted subspaces, closed-form scores and a full Gram reference."""
import numpy as np
import pytest

from robustcore import Cancelled, NotFittedError
from robustcore.rank import scree_elbow
from robustcore.subspace.coherence_pursuit import (CoherencePursuit, RankDeficientWarning,
                                                   coherence_scores)
from robustcore.subspace.pca import PCA


def planted(rng, d=100, r=10, n1=60, ratio=5, noise=0.0, scale_outliers=1.0):
    """Inliers in a random r-dim subspace, outliers uniform on the sphere; inliers come first."""
    U = np.linalg.qr(rng.standard_normal((d, r)))[0]
    A = rng.standard_normal((n1, r)) @ U.T + noise * rng.standard_normal((n1, d))
    B = rng.standard_normal((ratio * n1, d))
    B *= scale_outliers / np.linalg.norm(B, axis=1, keepdims=True)
    return np.vstack([A, B]), U


def subspace_error(U, comps):
    """|U - Û Ûᵀ U|_F / |U|_F with U (d, r) and comps (r, d)."""
    V = comps.T
    return np.linalg.norm(U - V @ (V.T @ U)) / np.linalg.norm(U)


def full_gram_scores(Xn, norm):
    G = Xn @ Xn.T
    np.fill_diagonal(G, 0.0)
    return np.abs(G).sum(axis=1) if norm == 1 else np.sqrt((G * G).sum(axis=1))


def normalised(rng, n, d, zero_rows=()):
    X = rng.standard_normal((n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    X[list(zero_rows)] = 0.0
    return X


# -- exact recovery on planted structure ----------------------------------------------------

def test_planted_recovery_l2_in_at_least_19_of_20_draws():
    # methods.md §1.7: m = 100, r = 10, n1 = 60, n2/n1 = 5, top 20 columns, norm 2.
    errors = []
    for seed in range(20):
        X, U = planted(np.random.default_rng(seed), d=100, r=10, n1=60, ratio=5)
        cop = CoherencePursuit(n_components=10, n_inliers=20, center="none").fit(X)
        errors.append(subspace_error(U, cop.components_))
    successes = sum(e < 1e-10 for e in errors)
    print(f"CoP planted recovery: {successes}/20 draws below 1e-10 (worst {max(errors):.2e})")
    assert successes >= 19


def test_planted_selection_is_all_inliers_and_scores_separate():
    X, U = planted(np.random.default_rng(1), d=50, r=5, n1=60, ratio=5)
    cop = CoherencePursuit(n_components=5, n_inliers=60, center="none").fit(X)
    np.testing.assert_array_equal(cop.selected_indices_, np.arange(60))
    assert cop.coherence_[:60].min() > cop.coherence_[60:].max()
    assert subspace_error(U, cop.components_) < 1e-10


def test_adaptive_selection_recovers_without_n_inliers():
    for seed in range(5):
        X, U = planted(np.random.default_rng(100 + seed), d=100, r=5, n1=50, ratio=10)
        cop = CoherencePursuit(n_components=5, selection="adaptive", center="none",
                               random_state=seed).fit(X)
        assert cop.selected_indices_.size == 5
        assert np.all(cop.selected_indices_ < 50)
        assert subspace_error(U, cop.components_) < 1e-10


def test_adaptive_repeats_pick_distinct_inliers():
    X, U = planted(np.random.default_rng(7), d=60, r=4, n1=60, ratio=5)
    cop = CoherencePursuit(n_components=4, selection="adaptive", n_repeats=3, center="none",
                           random_state=np.random.default_rng(0)).fit(X)
    sel = cop.selected_indices_
    assert sel.size == 12 and np.unique(sel).size == 12 and np.all(sel < 60)
    assert subspace_error(U, cop.components_) < 1e-10


def test_adaptive_is_reproducible_with_a_seed():
    X, _ = planted(np.random.default_rng(3), d=40, r=3, n1=30, ratio=3, noise=0.05)
    a = CoherencePursuit(n_components=3, selection="adaptive", n_repeats=2, random_state=5).fit(X)
    b = CoherencePursuit(n_components=3, selection="adaptive", n_repeats=2, random_state=5).fit(X)
    np.testing.assert_array_equal(a.selected_indices_, b.selected_indices_)
    np.testing.assert_array_equal(a.components_, b.components_)


def test_outlier_fraction_selection():
    X, U = planted(np.random.default_rng(11), d=80, r=6, n1=60, ratio=5)
    # 300 of 360 are outliers: a bound of 0.85 keeps the 54 most coherent samples.
    cop = CoherencePursuit(n_components=6, selection="fraction", outlier_fraction=0.85,
                           center="none").fit(X)
    assert cop.selected_indices_.size == 360 - int(np.floor(0.85 * 360))
    assert np.all(cop.selected_indices_ < 60)
    assert subspace_error(U, cop.components_) < 1e-10


def test_l1_norm_recovers_at_low_outlier_ratio():
    X, U = planted(np.random.default_rng(4), d=50, r=5, n1=60, ratio=2)
    cop = CoherencePursuit(n_components=5, norm=1, n_inliers=20, center="none").fit(X)
    assert subspace_error(U, cop.components_) < 1e-10


def test_median_centring_and_refinement_recover_an_affine_subspace():
    rng = np.random.default_rng(8)
    X, U = planted(rng, d=40, r=3, n1=200, ratio=0)
    offset = 5.0 * rng.standard_normal(40)
    outliers = offset + 3.0 * rng.standard_normal((60, 40))
    data = np.vstack([X + offset, outliers])
    plain = CoherencePursuit(n_components=3, n_inliers=50, center="median").fit(data)
    refined = CoherencePursuit(n_components=3, n_inliers=50, center="median", refine=True).fit(data)
    # The median of the mixture is near, not on, the inlier plane: plain CoP is close but not
    # exact; the refit centres at the mean of the kept inliers, which is on it.
    assert 1e-8 < subspace_error(U, plain.components_) < 0.2
    assert subspace_error(U, refined.components_) < 1e-8
    np.testing.assert_array_equal(refined.inlier_indices_, np.arange(200))
    resid = refined.mean_ - offset
    assert np.linalg.norm(resid - U @ (U.T @ resid)) < 1e-8  # the centre lies on the inlier plane


# -- scores: chunked, shortcut and full Gram agree ----------------------------------------

@pytest.mark.parametrize("norm", [1, 2])
def test_chunked_gram_scores_equal_full_gram(norm):
    Xn = normalised(np.random.default_rng(0), 53, 20, zero_rows=(4, 17))
    ref = full_gram_scores(Xn, norm)
    for chunk in (1, 7, 53, 100):
        got = coherence_scores(Xn, norm, method="gram", chunk_size=chunk)
        np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)


def test_l2_shortcut_equals_full_gram():
    Xn = normalised(np.random.default_rng(1), 200, 15, zero_rows=(0, 99))
    ref = full_gram_scores(Xn, 2)
    for chunk in (None, 3, 64):
        got = coherence_scores(Xn, 2, method="shortcut", chunk_size=chunk)
        np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-12)
    assert got[0] == 0.0 and got[99] == 0.0
    np.testing.assert_allclose(coherence_scores(Xn, 2), ref, rtol=1e-10)  # auto picks shortcut


def test_fit_scores_equal_full_gram_of_normalised_rows():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((90, 12)) * rng.uniform(0.1, 10, size=(90, 1))
    for norm in (1, 2):
        cop = CoherencePursuit(n_components=2, norm=norm, center="none", chunk_size=8).fit(X)
        ref = full_gram_scores(X / np.linalg.norm(X, axis=1, keepdims=True), norm)
        np.testing.assert_allclose(cop.coherence_, ref, rtol=1e-10)


def test_shortcut_rejects_l1():
    with pytest.raises(ValueError, match="norm=2"):
        coherence_scores(np.eye(3), 1, method="shortcut")


# -- degenerate samples ---------------------------------------------------------------------

def test_zero_rows_are_degenerate_not_nan():
    X, U = planted(np.random.default_rng(5), d=50, r=5, n1=60, ratio=3)
    X[[0, 70, 100]] = 0.0
    cop = CoherencePursuit(n_components=5, n_inliers=30, center="none", refine=True).fit(X)
    assert np.all(np.isfinite(cop.coherence_)) and np.all(np.isfinite(cop.components_))
    np.testing.assert_array_equal(np.flatnonzero(cop.degenerate_), [0, 70, 100])
    assert np.all(cop.coherence_[[0, 70, 100]] == 0.0)
    assert not np.isin([0, 70, 100], cop.selected_indices_).any()
    assert not np.isin([0, 70, 100], cop.inlier_indices_).any()
    assert subspace_error(U, cop.components_) < 1e-10


def test_rows_equal_to_the_median_are_degenerate():
    rng = np.random.default_rng(6)
    X = rng.standard_normal((41, 6))
    med = np.median(X, axis=0)
    X[[3, 9]] = med
    cop = CoherencePursuit(n_components=2, center="median").fit(X)
    assert cop.degenerate_[[3, 9]].all() and np.all(np.isfinite(cop.coherence_))


def test_all_rows_identical_is_an_error():
    with pytest.raises(ValueError, match="differ from the centre"):
        CoherencePursuit(n_components=1, center="median").fit(np.ones((10, 4)))


# -- agreement with PCA when there are no outliers ------------------------------------------

def test_no_outliers_exact_low_rank_equals_pca_subspace():
    rng = np.random.default_rng(9)
    X = rng.standard_normal((80, 4)) @ rng.standard_normal((4, 30))
    cop = CoherencePursuit(n_components=4, n_inliers=80, center="none").fit(X)
    pca = PCA(n_components=4, center=False).fit(X)
    P1 = cop.components_.T @ cop.components_
    P2 = pca.components_.T @ pca.components_
    assert np.abs(P1 - P2).max() < 1e-10


def test_no_outliers_equal_norm_rows_give_pca_components():
    # With every row of the same length, normalising is a global rescale, so CoP on all rows is
    # exactly uncentred PCA, component by component (noisy, full-rank data).
    rng = np.random.default_rng(10)
    X = rng.standard_normal((120, 8)) * np.array([5, 4, 3, 2, 1, 1, 1, 1.0])
    X = 3.0 * X / np.linalg.norm(X, axis=1, keepdims=True)
    cop = CoherencePursuit(n_components=3, n_inliers=120, center="none").fit(X)
    pca = PCA(n_components=3, center=False).fit(X)
    np.testing.assert_allclose(cop.components_, pca.components_, atol=1e-10)
    np.testing.assert_allclose(cop.singular_values_ * 3.0, pca.singular_values_, rtol=1e-10)


# -- refinement ------------------------------------------------------------------------------

def test_refinement_uses_the_inliers_and_beats_plain_cop_on_noisy_data():
    rng = np.random.default_rng(12)
    d, r, n1 = 40, 3, 300
    U = np.linalg.qr(rng.standard_normal((d, r)))[0]
    inl = rng.standard_normal((n1, r)) * 3.0 @ U.T + 0.05 * rng.standard_normal((n1, d))
    out = rng.standard_normal((300, d))
    X = np.vstack([inl, out])
    plain = CoherencePursuit(n_components=r, n_inliers=15, center="none").fit(X)
    ref = CoherencePursuit(n_components=r, n_inliers=15, center="none", refine=True).fit(X)
    oracle = PCA(n_components=r, center=False).fit(inl)
    e_plain = subspace_error(U, plain.components_)
    e_ref = subspace_error(U, ref.components_)
    e_oracle = subspace_error(U, oracle.components_)
    assert e_ref < 0.5 * e_plain
    assert e_ref < 1.5 * e_oracle
    kept = ref.inlier_indices_
    assert np.all(kept < n1) and kept.size >= 0.95 * n1
    assert ref.refine_limit_ > 0 and ref.converged_ and ref.n_refine_passes_ >= 2
    assert plain.converged_ and plain.n_refine_passes_ == 0 and plain.refine_limit_ is None
    np.testing.assert_array_equal(plain.selected_indices_, ref.selected_indices_)


# -- transform, scores -----------------------------------------------------------------------

def test_transform_inverse_and_score_samples():
    X, U = planted(np.random.default_rng(13), d=30, r=3, n1=60, ratio=2)
    cop = CoherencePursuit(n_components=3, n_inliers=30, center="none", scale="none").fit(X)
    T = cop.transform(X[:60])
    np.testing.assert_allclose(cop.inverse_transform(T), X[:60], atol=1e-10)
    spe = cop._residual_sq(X)     # squared distance to the subspace
    assert np.all(spe[:60] < 1e-20)
    ref = np.linalg.norm(X[60:] - X[60:] @ U @ U.T, axis=1) ** 2
    np.testing.assert_allclose(spe[60:], ref, rtol=1e-9)
    # the outlier score: SPE and T² (in the subspace's coordinates) in units of their limits
    t2 = (cop.transform(X) ** 2 / cop.variances_).sum(axis=1)
    np.testing.assert_allclose(-cop.score_samples(X),
                               np.maximum(spe / cop.spe_limit_, t2 / cop.t2_limit_), rtol=1e-9)
    assert set(cop.calibration_indices_) >= set(range(60))     # every inlier calibrates
    np.testing.assert_allclose(cop.components_ @ cop.components_.T, np.eye(3), atol=1e-12)


def test_rank_deficient_selection_warns():
    rng = np.random.default_rng(14)
    X = np.vstack([np.outer(rng.standard_normal(30), rng.standard_normal(10)),
                   rng.standard_normal((5, 10))])
    with pytest.warns(RankDeficientWarning):
        CoherencePursuit(n_components=2, n_inliers=10, center="none").fit(X)


# -- validation ------------------------------------------------------------------------------

def test_n_inliers_out_of_range_names_the_range():
    X = np.random.default_rng(0).standard_normal((50, 10))
    with pytest.raises(ValueError, match=r"'n_inliers' parameter must be an integer in \[3, 50\].*Got 51"):
        CoherencePursuit(n_components=3, n_inliers=51).fit(X)
    with pytest.raises(ValueError, match=r"'n_inliers' parameter must be an integer in \[3, 50\].*Got 2"):
        CoherencePursuit(n_components=3, n_inliers=2).fit(X)
    with pytest.raises(ValueError, match="n_inliers"):
        CoherencePursuit(n_components=3, n_inliers=0).fit(X)


def test_rank_must_be_below_min_n_d():
    X = np.random.default_rng(0).standard_normal((50, 6))
    with pytest.raises(ValueError, match=r"'n_components' parameter must be an integer in \[1, 5\].*Got 6"):
        CoherencePursuit(n_components=6).fit(X)
    with pytest.raises(ValueError, match="n_components"):
        CoherencePursuit(n_components=4).fit(X[:4])


@pytest.mark.parametrize("bad, match", [
    (np.array([[1.0, np.nan], [2.0, 3.0], [0.0, 1.0]]), "NaN"),
    (np.array([[1.0, np.inf], [2.0, 3.0], [0.0, 1.0]]), "infinite"),
    (np.zeros((0, 4)), r"0 sample\(s\)"),
    (np.ones((1, 4)), r"1 sample\(s\) .* minimum of 2"),
    (np.arange(5.0), "2D array"),
])
def test_bad_data(bad, match):
    with pytest.raises(ValueError, match=match):
        CoherencePursuit(n_components=1).fit(bad)


@pytest.mark.parametrize("kw, name", [
    ({"norm": 3}, "norm"), ({"selection": "best"}, "selection"), ({"center": "mode"}, "center"),
    ({"outlier_fraction": 1.0}, "outlier_fraction"), ({"refine_alpha": 0.0}, "refine_alpha"),
    ({"n_repeats": 0}, "n_repeats"), ({"chunk_size": 0}, "chunk_size"),
    ({"random_state": "x"}, "random_state"), ({"noise_threshold": -0.1}, "noise_threshold"),
])
def test_bad_parameters(kw, name):
    X = np.random.default_rng(0).standard_normal((20, 5))
    with pytest.raises(ValueError, match=name):
        CoherencePursuit(**kw).fit(X)


def test_fraction_leaving_too_few_samples():
    X = np.random.default_rng(0).standard_normal((20, 5))
    # keeps 20 - floor(20 f) >= 3 samples: f < 18 / 20 (the bound the form shows from the shape)
    with pytest.raises(ValueError, match=r"'outlier_fraction' parameter must be a number in \[0, 0.9\) "
                                         r"\(so that at least n_components = 3 of the 20 usable"):
        CoherencePursuit(n_components=3, selection="fraction", outlier_fraction=0.9).fit(X)
    cop = CoherencePursuit(n_components=3, selection="fraction", outlier_fraction=0.89).fit(X)
    assert cop.selected_indices_.size == 3


def test_width_mismatch_and_unfitted():
    X = np.random.default_rng(0).standard_normal((20, 5))
    with pytest.raises(NotFittedError):
        CoherencePursuit().transform(X)
    cop = CoherencePursuit().fit(X)
    with pytest.raises(ValueError, match="5"):
        cop.score_samples(X[:, :4])


# -- progress and cancellation -------------------------------------------------------------

def test_progress_is_monotone_and_cancel_leaves_unfitted():
    X, _ = planted(np.random.default_rng(15), d=20, r=2, n1=50, ratio=2)
    seen = []
    cop = CoherencePursuit(n_components=2, chunk_size=10, norm=1, refine=True)
    cop.fit(X, progress=lambda f, m: seen.append(f))
    assert len(seen) > 10 and seen == sorted(seen) and seen[-1] == 1.0
    calls = []

    def stop_at_third(f, m):
        calls.append(f)
        return len(calls) < 3

    with pytest.raises(Cancelled):
        cop.fit(X, progress=stop_at_third)
    assert not hasattr(cop, "components_")
    with pytest.raises(NotFittedError):
        cop.transform(X)


def test_adaptive_noise_threshold_too_high_is_an_error():
    # Rank-2 data: after two picks nothing is left beyond the threshold, so r = 3 cannot be met.
    rng = np.random.default_rng(16)
    X = rng.standard_normal((40, 2)) @ rng.standard_normal((2, 12))
    with pytest.raises(ValueError, match="noise_threshold"):
        CoherencePursuit(n_components=3, selection="adaptive", noise_threshold=0.5, center="none",
                         random_state=0).fit(X)
    cop = CoherencePursuit(n_components=2, selection="adaptive", noise_threshold=0.5, center="none",
                           random_state=0).fit(X)
    assert cop.components_.shape == (2, 12)


def test_refinement_pass_limit_warns_and_still_fits(monkeypatch):
    from robustcore._base import ConvergenceWarning
    from robustcore.subspace import _cop_memory
    monkeypatch.setattr(_cop_memory, "REFINE_MAX_PASSES", 1)
    X, _ = planted(np.random.default_rng(17), d=20, r=2, n1=80, ratio=1, noise=0.05)
    with pytest.warns(ConvergenceWarning, match="did not settle"):
        cop = CoherencePursuit(n_components=2, n_inliers=10, center="none", refine=True).fit(X)
    assert not cop.converged_ and cop.n_refine_passes_ == 1 and cop.components_.shape == (2, 20)


# -- rank estimation (n_components=None) -----------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("r, noise", [(2, 0.0), (5, 0.0), (8, 0.0), (5, 0.01), (3, 0.05)])
def test_unknown_rank_is_estimated_and_the_subspace_recovered(r, noise):
    """Planted r-dim subspaces with 5x as many outliers on the sphere: the estimate is r in
    every draw, and then the subspace is the fixed-rank fit's."""
    for seed in range(5):
        X, U = planted(np.random.default_rng(100 + seed), d=60, r=r, n1=80, ratio=5, noise=noise)
        est = CoherencePursuit(n_components=None, n_inliers=40, center="none").fit(X)
        assert est.n_components_ == r and est.components_.shape == (r, 60)
        fixed = CoherencePursuit(n_components=r, n_inliers=40, center="none").fit(X)
        np.testing.assert_allclose(est.components_, fixed.components_, atol=1e-12)
        assert subspace_error(U, est.components_) < (1e-10 if noise == 0 else 20 * noise)


def test_unknown_rank_with_the_default_selection_half_outliers_selected():
    """Even when the selected half holds more outliers than inliers (n1 = 200 of 1200), the
    inliers' directions stand out of the spectrum (the subspace itself is then pulled by the
    selected outliers: give n_inliers for an exact one)."""
    X, U = planted(np.random.default_rng(7), d=50, r=5, n1=200, ratio=5, noise=0.01)
    est = CoherencePursuit(n_components=None, center="none").fit(X)
    assert est.n_components_ == 5
    assert subspace_error(U, est.components_) < 0.15


def test_rank_estimate_ignores_the_rounding_cliff_in_the_tail():
    # a clear drop after 3 directions, then a long tail ending in an exact drop to ~0 (as the
    # USPS 1s have after 101 directions): the rule behind n_components=None (robustcore.rank)
    s = np.r_[10.0, 9.0, 8.0, np.geomspace(0.5, 0.05, 40), 1e-12, 1e-13]
    assert scree_elbow(s * s) == 3
    assert scree_elbow(s * s, max_rank=2) == 2


def test_unknown_rank_needs_a_selection_that_does_not_use_it():
    X, _ = planted(np.random.default_rng(0), d=20, r=2, n1=30, ratio=2)
    with pytest.raises(ValueError, match="'n_components' parameter must be an integer >= 1 with selection='adaptive'"):
        CoherencePursuit(n_components=None, selection="adaptive").fit(X)
    # noise-free data: the estimate is the rank of the selected samples, so the 60 outliers
    # must all be dropped (a share 2/3) for it to be the inliers' 2
    est = CoherencePursuit(n_components=None, selection="fraction", outlier_fraction=2 / 3,
                           center="none").fit(X)
    assert est.n_components_ == 2
