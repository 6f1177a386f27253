"""Every outlier method flags known inliers at about the rate it states (alpha = 1 %): within
[alpha / 3, 3 alpha] on seeded synthetic data large enough that chance cannot move it out
(4,000 inliers: a binomial 1 % is 40 +- 6), and the run says so when it does not."""
import warnings

import numpy as np
import pytest

import robustcore as rc
from robustcore._base import DegenerateFitWarning
from robustcore._contamination import LIMIT_ALPHA
from robustcore.datasets import Dataset
from robustcore.methods import get_method
from robustcore.subspace._robpca_params import CRIT

ALPHA = LIMIT_ALPHA


def low_rank_with_outliers(seed, n_in=4000, n_out=200, d=20, r=3, kind="gaussian"):
    """Inliers near a rank-3 subspace, and 5 % outliers far off it. ``kind``: "gaussian"
    (Gaussian scores and noise), "t3" (Student t with 3 degrees of freedom for both: a tail
    heavy enough that its fourth moment is infinite) or "two clusters" (the Gaussian inliers
    shifted by +c or -c, |c| = 6: two clumps the subspace must hold)."""
    rng = np.random.default_rng(seed)
    B = np.linalg.qr(rng.standard_normal((d, r)))[0].T
    draw = (lambda size: rng.standard_t(3, size)) if kind == "t3" else (lambda size: rng.standard_normal(size))
    inl = 3.0 * draw((n_in, r)) @ B + 0.3 * draw((n_in, d))
    if kind == "two clusters":
        c = rng.standard_normal(d)
        inl += np.where(rng.random(n_in) < 0.5, 6.0, -6.0)[:, None] * c / np.linalg.norm(c)
    outl = 4.0 * rng.standard_normal((n_out, d))
    X = np.vstack([inl, outl]) + 2.0          # an offset: no method may rely on zero means
    y = np.r_[np.zeros(n_in, bool), np.ones(n_out, bool)]
    return X, y


METHODS = {
    "PCA": lambda: rc.PCA(),
    "ResidualScorer": lambda: rc.ResidualScorer(),
    "CoherencePursuit": lambda: rc.CoherencePursuit(),
    # the homogeneous-coordinates centre (robustcore.subspace._cop_affine), not the default
    "CoherencePursuit affine": lambda: rc.CoherencePursuit(center="affine"),
    "PCP": lambda: rc.PCP(random_state=0),
}


def _flags(name, X):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateFitWarning)   # PCP on t3 data: L not low-rank
        est = METHODS[name]().fit(X)
    return est, est.predict(X) == -1


@pytest.mark.parametrize("name,kind", [(m, k) for k in ("gaussian", "two clusters") for m in METHODS]
                         + [("PCA", "t3"), ("ResidualScorer", "t3")])
def test_known_inliers_are_flagged_at_the_stated_rate(name, kind):
    """One calibration rule (robustcore._calibration) for every method: the share of known
    inliers flagged lies within [alpha / 3, 3 alpha] for Gaussian and two-cluster inliers (and
    Student-t(3) ones for PCA's SPE/T²), and the outliers are caught."""
    X, y = low_rank_with_outliers(7, kind=kind)
    est, flagged = _flags(name, X)
    share = flagged[~y].mean()
    assert ALPHA / 3 <= share <= 3 * ALPHA, f"{name}: {100 * share:.2f} % of known inliers flagged"
    assert flagged[y].mean() > 0.9                # and the outliers are caught
    # 4,200 calibration rows, at most a tenth beyond the core: nothing to report
    assert est.limit_calibration_["caveat"] == ""


@pytest.mark.parametrize("name,registry", [("CoherencePursuit", "coherence-pursuit"), ("PCP", "pcp")])
def test_heavy_tailed_residuals_are_flagged_near_the_rate_and_the_run_says_when_not(name, registry):
    """Student-t(3) in every direction: Coherence Pursuit's and PCP's residual scores have a
    tail that reaches beyond the robust core, and every row there is flagged: 2.8-3.0 % and
    3.0-4.0 % of the inliers on seeds 7-9 (benchmarks/results_outliers.md, "One calibration
    rule"). The shortfall is bounded, and a run with known outliers says so when the share
    passes 3 alpha."""
    X, y = low_rank_with_outliers(8, kind="t3")
    _, flagged = _flags(name, X)
    share = flagged[~y].mean()
    assert ALPHA / 3 <= share <= 5 * ALPHA and flagged[y].mean() > 0.9
    if share > 3 * ALPHA:
        res = get_method(registry).run(Dataset(X=X, name="t3", outliers=y), {"random_state": 0})
        assert "more than 3x the stated alpha" in res.outliers.flag_rate_warning


def test_the_calibration_moves_the_threshold_not_the_ranking():
    """ROC-AUC is the calibration's to keep: with and without it the scores of PCA's SPE/T²
    differ by one factor, so their order (and any ranking metric) is the same."""
    from robustcore.evaluation import outlier_metrics
    X, y = low_rank_with_outliers(7, kind="t3")
    on = rc.ResidualScorer().fit(X)
    off = rc.ResidualScorer(calibrate=False).fit(X)
    a, b = -on.score_samples(X), -off.score_samples(X)
    np.testing.assert_allclose(a * on.limit_calibration_["factor"], b, rtol=1e-10)
    assert outlier_metrics(y, a)["roc_auc"] == outlier_metrics(y, b)["roc_auc"]


def test_a_small_table_says_the_rate_cannot_be_promised():
    """The warning case: with 300 rows, about 3 are expected above a limit at 1 %, too few for
    the share flagged to follow alpha (a binomial 3 lands outside [1, 9] one time in five).
    Every method's fit says so in ``limit_calibration_["caveat"]``, and a run without known
    outliers carries it among its warnings."""
    X, _ = low_rank_with_outliers(5, n_in=285, n_out=15)
    for name, make in METHODS.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DegenerateFitWarning)
            est = make().fit(X)
        assert "calibration rows: about" in est.limit_calibration_["caveat"], name
    res = get_method("pca").run(Dataset(X=X, name="small"), {})
    assert any("300 calibration rows" in w for w in res.warnings)


def _gross_errors(share, seed=3, n=1500):
    """Rank-2 rows in 30 columns, ``share`` of them with gross errors in five columns."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 2)) @ rng.standard_normal((2, 30)) + 0.01 * rng.standard_normal((n, 30))
    y = np.zeros(n, bool)
    y[:int(share * n)] = True
    X[y, :5] += 30 * rng.standard_normal((int(y.sum()), 5))
    return X, y


def test_pcp_flags_the_inliers_at_the_rate_with_40_percent_gross_errors():
    """Issue 35: the robust core's spread comes from the lower half of the scores, which is the
    inliers' up to half of the rows outlying; from the upper quartile (before) it was an
    outlier's here, the limit lay among the outliers and no inlier was flagged."""
    X, y = _gross_errors(0.4)
    res = get_method("pcp").run(Dataset(X=X, name="planted", outliers=y), {"random_state": 0})
    assert ALPHA / 3 <= res.flags["outlier"][~y].mean() <= 3 * ALPHA
    assert res.flags["outlier"][y].mean() > 0.95
    # the 40 % beyond the core are flagged whatever the limit: the summary says so
    assert "40 % of the calibration rows lie beyond the robust core" in res.outliers.flag_rate_warning
    mad = get_method("pcp").run(Dataset(X=X, name="planted", outliers=y), {"random_state": 0, "contamination": "mad"})
    assert mad.outliers.flag_rate_warning is None and "MAD" in mad.outliers.rule
    assert mad.flags["outlier"][y].mean() > 0.95   # the old cut, by name, still catches them


def test_pcp_run_says_when_the_rate_is_far_from_alpha():
    """A run with known outliers reports a share of inliers flagged far from alpha (the note
    the PCA runs already carry), for PCP's limit too; the median + 3 MAD rule has no rate.
    Planted: 60 % of the rows carry gross errors, more than any robust core can leave out
    (the median is an outlier's), so the limit lies among the outliers and no inlier is
    flagged."""
    X, y = _gross_errors(0.6)
    ds = Dataset(X=X, name="planted", outliers=y)
    res = get_method("pcp").run(ds, {"random_state": 0})
    assert "alpha = 0.01" in res.outliers.rule
    assert res.flags["outlier"][~y].mean() < ALPHA / 3
    assert "known inliers" in res.outliers.flag_rate_warning and "far below" in res.outliers.flag_rate_warning
    assert res.outliers.flag_rate_warning in res.warnings


def test_coherence_pursuit_flags_the_gross_outliers_of_usps_at_the_stated_rate():
    """The bundled usps-1-vs-8 (50 eights among 264 ones): the flags catch most eights while the
    ones are flagged within [alpha/3, 3 alpha]. A wider cut of the rows bounding the limits
    took the eights into them: 5 of 50 caught, at the same rate on the ones."""
    from robustcore.datasets import demo
    ds = demo("usps-1-vs-8")
    flagged = np.asarray(get_method("coherence-pursuit").run(ds, {}).flags["outlier"])
    truth = np.asarray(ds.outliers)
    assert (flagged & truth).sum() >= 40
    assert 0.01 / 3 <= (flagged & ~truth).sum() / (~truth).sum() <= 0.03


def _third_gross(seed, kind, n_in=4000, n_out=2000, d=20, r=3, shift=30.0):
    """Inliers near a rank-3 subspace (Gaussian, or in two clusters), and a THIRD of the rows
    pushed 30-60 off it in random directions (tables such as breastw and magic.gamma carry a
    third of outliers)."""
    rng = np.random.default_rng(seed)
    B = np.linalg.qr(rng.standard_normal((d, r)))[0].T
    Z = 3.0 * rng.standard_normal((n_in + n_out, r)) @ B + 0.3 * rng.standard_normal((n_in + n_out, d))
    if kind == "two clusters":
        c = rng.standard_normal(d)
        Z += np.where(rng.random(n_in + n_out) < 0.5, 6.0, -6.0)[:, None] * c / np.linalg.norm(c)
    u = rng.standard_normal((n_out, d))
    Z[n_in:] += shift * u / np.linalg.norm(u, axis=1, keepdims=True) * (1 + rng.random((n_out, 1)))
    return Z + 2.0, np.r_[np.zeros(n_in, bool), np.ones(n_out, bool)]


@pytest.mark.parametrize("kind", ["gaussian", "two clusters"])
def test_a_third_of_outliers_leaves_pcps_inliers_flagged_at_the_rate(kind):
    """PCP's limit (no nominal one: the core's quantile at 1 - alpha) with a third of the rows
    outlying: within [alpha / 3, 3 alpha] of the inliers and every outlier caught. With the
    core's spread from the upper quartile (the rule before) no inlier was flagged and 3 % of
    the outliers were caught: the core took them in."""
    X, y = _third_gross(1, kind)
    est, flagged = _flags("PCP", X)
    assert ALPHA / 3 <= flagged[~y].mean() <= 3 * ALPHA
    assert flagged[y].mean() > 0.99


def test_coherence_pursuit_says_when_a_cluster_it_does_not_fit_is_flagged():
    """Three clusters of inliers: Coherence Pursuit's subspace (center="none", rank 5 chosen
    here, as on 6 of seeds 0-7; rank 6 holds all three) holds two, and the third (a third of
    the inliers) lies beyond the rows that bound its limits, all flagged.
    The limits cannot help it; the fit says so (those rows count as beyond the core), and a
    run with known outliers carries the caveat in its summary."""
    from robustcore.result import summary_lines
    rng = np.random.default_rng(1)
    d, r, n_in, n_out = 20, 3, 2850, 150
    B = np.linalg.qr(rng.standard_normal((d, r)))[0].T
    centres = rng.standard_normal((3, d)) * 4
    inl = centres[rng.integers(0, 3, n_in)] + rng.standard_normal((n_in, r)) @ B + 0.3 * rng.standard_normal((n_in, d))
    X = np.vstack([inl, rng.uniform(-10, 10, (n_out, d))])
    y = np.r_[np.zeros(n_in, bool), np.ones(n_out, bool)]
    est, flagged = _flags("CoherencePursuit", X)
    assert flagged[~y].mean() > 0.25                       # the cluster the model leaves out
    assert "beyond the robust core" in est.limit_calibration_["caveat"]
    res = get_method("coherence-pursuit").run(Dataset(X=X, name="clusters", outliers=y), {})
    text = "\n".join(summary_lines(res))
    assert "known inliers" in text and "beyond the robust core" in text


def _three_clusters(seed, d=20, r=3, n_in=2850, n_out=150):
    """Inliers in three clusters around a rank-3 plane (centres 4 spreads apart in each of
    20 columns; their flat has 3 + 2 dimensions), 5 % outliers uniform in the box."""
    rng = np.random.default_rng(seed)
    B = np.linalg.qr(rng.standard_normal((d, r)))[0].T
    centres = rng.standard_normal((3, d)) * 4
    inl = centres[rng.integers(0, 3, n_in)] + rng.standard_normal((n_in, r)) @ B + 0.3 * rng.standard_normal((n_in, d))
    X = np.vstack([inl, rng.uniform(-10, 10, (n_out, d))])
    return X, np.r_[np.zeros(n_in, bool), np.ones(n_out, bool)]


@pytest.mark.parametrize("seed", range(8))
def test_coherence_pursuits_affine_centre_flags_clustered_inliers_at_the_rate_or_says_not(seed):
    """center="affine" on three clusters: when its flat holds all three (5 dimensions: every
    seed of 0-7 but 5 and 6) the inliers are flagged within [alpha / 3, 3 alpha]; when the
    most coherent half of the rows comes from two clusters (seeds 5 and 6: a flat of 4), the
    third is beyond the rows that bound the limits, and the fit says so. Every outlier is
    caught either way. (center="none" leaves a cluster out on 6 of seeds 0-7; "affine" on 2,
    on 4 with stop 48's lift and rank rule: robustcore.subspace._cop_affine.)"""
    X, y = _three_clusters(seed)
    est, flagged = _flags("CoherencePursuit affine", X)
    share = flagged[~y].mean()
    assert flagged[y].all()
    if est.n_components_ >= 5:
        assert ALPHA / 3 <= share <= 3 * ALPHA, f"{100 * share:.2f} % of known inliers flagged"
        assert est.limit_calibration_["caveat"] == ""
    else:
        assert share > 0.25 and "beyond the robust core" in est.limit_calibration_["caveat"]
    assert (est.n_components_ >= 5) == (seed not in (5, 6))


def test_a_run_with_known_outliers_shows_the_fits_caveat_in_its_summary():
    """The caveat (here: 300 rows, about 3 expected above a 1 % limit) is in the summary of a
    run with known outliers too, not only of one without them."""
    from robustcore.result import summary_lines
    X, y = low_rank_with_outliers(5, n_in=285, n_out=15)
    res = get_method("pca").run(Dataset(X=X, name="small", outliers=y), {})
    caveat = res.estimator.limit_calibration_["caveat"]
    assert "300 calibration rows" in caveat
    text = "\n".join(summary_lines(res))
    assert caveat in text and "cannot promise the stated alpha = 1 %" in text


def _binary_templates(seed, n_in=4000, n_out=200, d=20):
    """Tied scores: 20 binary columns, the inliers copies of three random templates with 3 % of
    their bits flipped, the outliers random bits. A few hundred distinct scores over 4,200 rows,
    and three clusters that a low-rank model may not all hold."""
    rng = np.random.default_rng(seed)
    templates = rng.random((3, d)) < 0.5
    inl = templates[rng.integers(0, 3, n_in)] ^ (rng.random((n_in, d)) < 0.03)
    X = np.vstack([inl, rng.random((n_out, d)) < 0.5]).astype(float)
    return X, np.r_[np.zeros(n_in, bool), np.ones(n_out, bool)]


@pytest.mark.parametrize("seed", [7, 8])
def test_tied_scores_are_flagged_at_the_rate_or_the_run_says_not(seed):
    """Issue 35 point 3, "and the run says when it is not", on binary columns (ties at every
    quantile; the development tables InternetAds and SpamBase are of this kind). Each method's
    share of known inliers flagged lies within [alpha / 3, 3 alpha] of the rate it states, or its
    run's summary says it does not. On these seeds both happen: PCA flags about 45 % of the
    inliers (its rank leaves one template off the subspace, as Coherence Pursuit's does on the
    clustered synthetic tasks) and says so, with its caveat of rows beyond the core; PCP and
    ROBPCA are within the band on one seed and below it, saying so, on another."""
    X, y = _binary_templates(seed)
    ds = Dataset(X=X, name="templates", outliers=y)
    outside = 0
    for name, alpha in (("pca", ALPHA), ("coherence-pursuit", ALPHA), ("pcp", ALPHA), ("robpca", ROBPCA_ALPHA)):
        params = {"random_state": 0} if name in ("pcp", "robpca") else {}
        res = get_method(name).run(ds, params)
        share = res.flags["outlier"][~y].mean()
        if alpha / 3 <= share <= 3 * alpha:
            continue
        outside += 1
        said = res.outliers.flag_rate_warning or ""
        assert "known inliers" in said and ("far below" in said if share < alpha / 3 else "more than" in said), \
            (name, share, said)
        assert said in res.warnings
    assert outside >= 1     # the planted data do reach the warning (PCA's 45 %)


def _overlapping_third(seed, n_in=3000, n_out=1500, d=20, r=3, wider=1.8):
    """Inliers near a rank-3 subspace, and a THIRD of the rows on the same subspace with noise
    1.8x wider: outliers that overlap the inliers' tail instead of lying far off (the kind of
    magic.gamma, 35 % outliers, which every method's limit misses)."""
    rng = np.random.default_rng(seed)
    B = np.linalg.qr(rng.standard_normal((d, r)))[0].T
    Z = 3.0 * rng.standard_normal((n_in + n_out, r)) @ B
    noise = 0.3 * rng.standard_normal((n_in + n_out, d))
    noise[n_in:] *= wider
    X = Z + noise + 2.0
    return X, np.r_[np.zeros(n_in, bool), np.ones(n_out, bool)]


def test_overlapping_outliers_put_the_limit_among_them_and_the_run_says_so():
    """Issue 35 round 6's diagnosis of the tasks flagged BELOW alpha / 3 (magic.gamma for every
    method, breastw, PCP on InternetAds): the robust core holds the outliers, since they are not
    apart from the inliers, so the limit at the core's top 1-1.5 % lies among them and flags
    outliers only. The scores alone cannot tell this bump from a long inlier tail (which needs
    the same wide core: benchmarks/results_outliers.md, "Flags, round 6"); a run with the
    known outliers says so. Here PCA and Coherence Pursuit flag almost no inlier (rows flagged:
    95 % or more outliers) and warn; PCP and ROBPCA stay within the band."""
    X, y = _overlapping_third(1)
    ds = Dataset(X=X, name="overlap", outliers=y)
    below = []
    for name, alpha in (("pca", ALPHA), ("coherence-pursuit", ALPHA), ("pcp", ALPHA), ("robpca", ROBPCA_ALPHA)):
        params = {"random_state": 0} if name in ("pcp", "robpca") else {}
        res = get_method(name).run(ds, params)
        flagged = np.asarray(res.flags["outlier"])
        share = flagged[~y].mean()
        if alpha / 3 <= share <= 3 * alpha:
            continue
        assert share < alpha / 3, (name, share)      # this data only ever errs low
        assert flagged[y].sum() >= 0.95 * flagged.sum()     # the limit lies among the outliers
        said = res.outliers.flag_rate_warning or ""
        assert "far below" in said and "known inliers" in said and said in res.warnings, (name, said)
        below.append(name)
    assert below == ["pca", "coherence-pursuit"]


# -- ROBPCA: the paper's cut-offs, calibrated by the same rule at their own rate -------------------

ROBPCA_ALPHA = 1.0 - CRIT          # each cut-off's false-alarm rate, what "auto" states
OCTANE_ALCOHOL = np.array([25, 26, 36, 37, 38, 39]) - 1     # the paper's bad leverage points


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["gaussian", "two clusters", "t3"])
def test_robpca_flags_known_inliers_near_its_stated_rate_and_keeps_the_papers_cutoffs(kind):
    """ROBPCA's "auto": the paper's cut-offs bounded by the training scores' quantiles (one rule,
    robustcore._calibration) at alpha = 2.5 %: the known inliers flagged within [alpha / 3,
    3 alpha], every planted outlier caught. The paper's cut-offs ("cutoffs") flag 15-16 % of
    Student-t(3) inliers; the cut-offs themselves, the distances and the ranking are the same."""
    X, y = low_rank_with_outliers(7, kind=kind)
    est = rc.ROBPCA(random_state=0).fit(X)
    flagged = est.predict(X) == -1
    share = flagged[~y].mean()
    assert ROBPCA_ALPHA / 3 <= share <= 3 * ROBPCA_ALPHA, f"{100 * share:.2f} % of known inliers flagged"
    assert flagged[y].all()
    np.testing.assert_array_equal(est.decision_function(X) < 0, flagged)
    cal = est.limit_calibration_
    # the threshold on the distance score is the root of the calibrated limit of its square
    assert est.offset_ ** 2 == pytest.approx(cal["factor"], rel=1e-12) and cal["caveat"] == ""
    paper = rc.ROBPCA(random_state=0, contamination="cutoffs").fit(X)
    assert paper.offset_ == -1.0 and paper.limit_calibration_ is None
    assert (paper.sd_cutoff_, paper.od_cutoff_) == (est.sd_cutoff_, est.od_cutoff_)
    np.testing.assert_array_equal(paper.score_samples(X), est.score_samples(X))
    if kind == "t3":      # what the calibration is for; the run says so of the paper's rule
        assert (paper.predict(X) == -1)[~y].mean() > 3 * ROBPCA_ALPHA
        res = get_method("robpca").run(Dataset(X=X, name="t3", outliers=y),
                                       {"random_state": 0, "contamination": "cutoffs"})
        assert "more than 3x the stated alpha = 2.5 %" in res.outliers.flag_rate_warning


@pytest.mark.slow
def test_robpcas_paper_rule_by_name_gives_the_papers_flags_on_octane():
    """On the paper's octane data (39 samples) "cutoffs" flags exactly the six alcohol samples,
    as the paper; "auto" flags them and at most one more (2.5 % of 33 inliers is 0.8 expected),
    says that 39 rows cannot promise the rate, and draws the same outlier map."""
    from pathlib import Path
    X = np.load(Path(__file__).parent / "subspace" / "data" / "octane.npz")["X"]
    runs = {}
    for c in ("cutoffs", "auto"):
        data = Dataset(X, name="octane", outliers=np.isin(np.arange(39), OCTANE_ALCOHOL))
        runs[c] = get_method("robpca").run(data, {"n_components": 2, "random_state": 0, "contamination": c})
    np.testing.assert_array_equal(np.flatnonzero(runs["cutoffs"].flags["outlier"]), OCTANE_ALCOHOL)
    assert "the paper's rule (contamination='cutoffs')" in runs["cutoffs"].outliers.rule
    auto = np.flatnonzero(runs["auto"].flags["outlier"])
    assert set(OCTANE_ALCOHOL) <= set(auto) and auto.size <= OCTANE_ALCOHOL.size + 1
    assert "only 39 calibration rows" in runs["auto"].estimator.limit_calibration_["caveat"]
    assert runs["auto"].outlier_map.counts == runs["cutoffs"].outlier_map.counts == {
        "regular": 33, "good leverage": 0, "orthogonal outlier": 0, "bad leverage": 6}


@pytest.mark.slow
def test_robpcas_calibration_is_the_same_on_stored_scores():
    """Out of core the training scores may be stored: the same exact order statistics and
    counts give the same limit as the squares in memory (robustcore._calibration)."""
    import dask.array as da
    from robustcore._calibration import calibrate_scores
    from robustcore.subspace.robpca import _calibrated
    d = np.sqrt(np.random.default_rng(0).chisquare(3, 5000))
    d[:300] *= 8.0                                  # a bump of outliers beyond the core
    want = calibrate_scores(d * d, 1.0, ROBPCA_ALPHA)
    for scores in (d, da.from_array(d, chunks=700)):
        got = _calibrated(scores, ROBPCA_ALPHA)
        assert (got.limit, got.action, got.core_share) == (want.limit, want.action, want.core_share)
    assert want.action == "raised" and 0.9 < want.core_share < 0.96


def test_robpca_refuses_an_unknown_rule_name():
    with pytest.raises(ValueError, match="cutoffs"):
        rc.ROBPCA(contamination="paper").fit(np.random.default_rng(0).standard_normal((50, 4)))


def _binary_mode(seed, n_in=4000, n_out=200, d=12, r=3, share=0.15, jump=6.0):
    """Inliers near a rank-3 subspace in 11 columns and a twelfth, binary column: ``jump`` for a
    ``share`` of the inliers, else 0 (the kind of Hepatitis' and InternetAds' binary columns:
    a mode of the inliers smaller than the n - h rows ROBPCA's h-subsets leave out); 5 %
    outliers off the subspace, the binary column drawn alike for them."""
    rng = np.random.default_rng(seed)
    B = np.linalg.qr(rng.standard_normal((d - 1, r)))[0].T
    inl = 3.0 * rng.standard_normal((n_in, r)) @ B + 0.3 * rng.standard_normal((n_in, d - 1))
    X = np.vstack([np.c_[inl, jump * (rng.random(n_in) < share)],
                   np.c_[4.0 * rng.standard_normal((n_out, d - 1)), jump * (rng.random(n_out) < share)]])
    return X + 2.0, np.r_[np.zeros(n_in, bool), np.ones(n_out, bool)]


@pytest.mark.parametrize("seed", [7, 8])
def test_robpca_flags_a_minority_mode_of_its_inliers_and_the_run_says_so(seed):
    """Issue 35 point 3, ROBPCA's development tasks above 3 alpha (benchmarks/results_outliers.md,
    "ROBPCA's flags: why"): a mode of the inliers holding fewer than n - h rows (here 15 % of
    them, one value of a binary column) lies outside every h-subset, so the paper's estimate
    takes it for outliers, as its breakdown point promises, and the calibrated limit flags all
    of it. No candidate change to the estimate studied there (its k, ties, consistency factors,
    each direction's scale) brings such tasks inside without moving others out; the run says
    so instead: the flag-rate warning with known outliers, the fit's caveat without them."""
    X, y = _binary_mode(seed)
    mode = X[:, -1] > 5.0
    res = get_method("robpca").run(Dataset(X=X, name="binary mode", outliers=y), {"random_state": 0})
    flagged = np.asarray(res.flags["outlier"])
    assert flagged[~y & mode].mean() > 0.9                     # the mode is taken for outliers
    assert flagged[~y & ~mode].mean() <= 3 * ROBPCA_ALPHA      # the rest at the rate
    assert flagged[~y].mean() > 3 * ROBPCA_ALPHA and flagged[y].all()
    said = res.outliers.flag_rate_warning or ""
    assert "more than 3x the stated alpha = 2.5 %" in said and said in res.warnings
    assert "lie beyond the robust core" in res.estimator.limit_calibration_["caveat"]
