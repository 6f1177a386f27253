"""Evaluation against known outliers, checked against definitions computed another way."""
import itertools

import numpy as np
import pytest

from robustcore.evaluation import outlier_curves, outlier_metrics, precision_at_k


def _auc_by_pairs(y, s):
    """The definition: P(outlier scores above inlier), ties one half, over every pair."""
    out, inl = s[y == 1], s[y == 0]
    wins = sum((a > b) + 0.5 * (a == b) for a, b in itertools.product(out, inl))
    return wins / (out.size * inl.size)


def _ap_by_definition(y, s):
    """Mean over distinct thresholds of precision x recall increment (step-wise PR area)."""
    order = np.argsort(-s, kind="stable")
    ap, prev_recall = 0.0, 0.0
    for t in np.unique(s)[::-1]:
        sel = s >= t
        prec = y[sel].sum() / sel.sum()
        rec = y[sel].sum() / y.sum()
        ap += prec * (rec - prev_recall)
        prev_recall = rec
    assert order.size == s.size
    return ap


@pytest.mark.parametrize("seed", range(5))
def test_metrics_match_their_definitions(seed):
    rng = np.random.default_rng(seed)
    n = 60
    y = (rng.random(n) < 0.2).astype(int)
    y[:2] = [0, 1]
    # rounded scores make ties, which both definitions must treat the same way
    s = np.round(rng.normal(size=n) + 1.5 * y, 1)
    m = outlier_metrics(y, s)
    assert m["roc_auc"] == pytest.approx(_auc_by_pairs(y, s), abs=1e-12)
    assert m["average_precision"] == pytest.approx(_ap_by_definition(y, s), abs=1e-12)
    assert m["k"] == y.sum() and m["outlier_fraction"] == pytest.approx(y.mean())


def test_perfect_reversed_and_constant_scores():
    y = np.array([0, 0, 0, 1, 1])
    s = np.arange(5.0)
    assert outlier_metrics(y, s)["roc_auc"] == 1.0
    assert outlier_metrics(y, s)["precision_at_k"] == 1.0
    assert outlier_metrics(y, -s)["roc_auc"] == 0.0
    assert outlier_metrics(y, -s)["precision_at_k"] == 0.0
    flat = outlier_metrics(y, np.zeros(5))
    assert flat["roc_auc"] == 0.5
    # every sample tied: a random pick of k = 2 finds 2 * 2/5 outliers on average
    assert flat["precision_at_k"] == pytest.approx(2 / 5)


@pytest.mark.slow
def test_precision_at_k_shares_ties_out_like_a_random_tie_break():
    y = np.array([1, 0, 1, 0, 0, 1])
    s = np.array([5.0, 3.0, 3.0, 3.0, 1.0, 0.0])
    # k = 3: sample 0 is in; two of the three tied at 3.0 are picked, one of which is an outlier
    rng = np.random.default_rng(0)
    draws = []
    for _ in range(20000):
        picked = np.concatenate([[0], rng.choice([1, 2, 3], 2, replace=False)])
        draws.append(y[picked].mean())
    assert precision_at_k(y, s) == pytest.approx((1 + 2 / 3) / 3)
    assert precision_at_k(y, s) == pytest.approx(np.mean(draws), abs=0.01)
    assert precision_at_k(y, s, k=1) == 1.0


def test_curves_run_from_corner_to_corner():
    rng = np.random.default_rng(3)
    y = np.r_[np.zeros(40), np.ones(10)].astype(int)
    s = rng.normal(size=50) + y
    c = outlier_curves(y, s)
    assert (c["fpr"][0], c["tpr"][0]) == (0.0, 0.0) and (c["fpr"][-1], c["tpr"][-1]) == (1.0, 1.0)
    assert np.all(np.diff(c["recall"]) >= 0) and c["recall"][0] == 0.0 and c["recall"][-1] == 1.0
    # trapezoid area under the ROC is the AUC
    assert np.trapezoid(c["tpr"], c["fpr"]) == pytest.approx(outlier_metrics(y, s)["roc_auc"])


@pytest.mark.parametrize("truth, score, match", [
    ([0, 1, 2], [1.0, 2.0, 3.0], "0/1 or boolean"),
    ([0, 0, 0], [1.0, 2.0, 3.0], "some samples as outliers and some as inliers"),
    ([1, 1], [1.0, 2.0], "some samples as outliers and some as inliers"),
    ([0, 1], [1.0, np.nan], "NaN or infinite"),
    ([0, 1, 1], [1.0, 2.0], "same samples"),
])
def test_bad_input_says_what_is_wrong(truth, score, match):
    with pytest.raises(ValueError, match=match):
        outlier_metrics(truth, score)
