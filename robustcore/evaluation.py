"""How well an outlier score finds the outliers a data set is known to have.

Every function takes the ground truth (1 / True = known outlier) and an *outlierness*: a
score that is LARGER for MORE abnormal samples. scikit-learn's ``score_samples`` runs the other
way (higher = more normal), so pass ``-estimator.score_samples(X)``.

* ROC-AUC: the probability that a random known outlier scores as more abnormal than a random
  inlier, ties counted one half. 0.5 is chance; below 0.5 the score runs the wrong way for this
  data.
* Average precision (area under the precision-recall curve): what matters when outliers are rare.
  Its chance level is the outlier fraction, not 0.5, so it is reported next to it.
* Precision at k, with k = the number of known outliers (also called R-precision): the share of
  known outliers among the k most abnormal samples. Ties at the cut are shared out as a random
  tie-break would on average, so the number does not depend on the order of the rows.
"""
from __future__ import annotations

import numpy as np

__all__ = ["outlier_metrics", "outlier_curves", "precision_at_k", "evaluation_summary", "METRIC_NAMES"]

# Keys of outlier_metrics() that are quality figures (the rest describe the truth).
METRIC_NAMES = ("roc_auc", "average_precision", "precision_at_k")


def _checked(truth, outlierness):
    y = np.asarray(truth)
    s = np.asarray(outlierness, dtype=np.float64)
    if y.ndim != 1 or s.ndim != 1:
        raise ValueError(f"truth and outlierness must be 1-D; got shapes {y.shape} and {s.shape}")
    if y.shape != s.shape:
        raise ValueError(f"truth has {y.size} samples but the score has {s.size}; they must "
                         f"describe the same samples")
    if y.dtype != bool:
        values = np.unique(y)
        if not np.isin(values, (0, 1)).all():
            raise ValueError(f"truth must be 0/1 or boolean (1 = known outlier); got values "
                             f"{values[:5].tolist()}")
        y = y.astype(bool)
    n_out = int(y.sum())
    if n_out == 0 or n_out == y.size:
        raise ValueError(f"truth must mark some samples as outliers and some as inliers to "
                         f"evaluate a score; it marks {n_out} of {y.size} as outliers")
    if not np.all(np.isfinite(s)):
        bad = int(np.sum(~np.isfinite(s)))
        raise ValueError(f"the score has {bad} NaN or infinite value(s); it cannot be evaluated")
    return y, s


def precision_at_k(truth, outlierness, k: int | None = None) -> float:
    """Share of known outliers among the ``k`` most abnormal samples (default k = number of known
    outliers). Samples tied with the k-th score count with the probability a random tie-break
    would give them."""
    y, s = _checked(truth, outlierness)
    k = int(y.sum()) if k is None else int(k)
    if not 1 <= k <= y.size:
        raise ValueError(f"k must be in [1, {y.size}]; got {k}")
    cut = np.sort(s)[::-1][k - 1]
    above = s > cut
    tied = s == cut
    n_above = int(above.sum())
    hits = float(y[above].sum()) + (k - n_above) * float(y[tied].sum()) / float(tied.sum())
    return hits / k


def outlier_metrics(truth, outlierness) -> dict:
    """ROC-AUC, average precision and precision at k of one score against known outliers.

    Returns a dict with ``roc_auc``, ``average_precision``, ``precision_at_k``, ``k`` (the
    number of known outliers), ``n_samples`` and ``outlier_fraction`` (the chance level of the
    average precision and of precision at k).
    """
    from sklearn.metrics import average_precision_score, roc_auc_score

    y, s = _checked(truth, outlierness)
    k = int(y.sum())
    return {"roc_auc": float(roc_auc_score(y, s)),
            "average_precision": float(average_precision_score(y, s)),
            "precision_at_k": precision_at_k(y, s, k),
            "k": k, "n_samples": int(y.size), "outlier_fraction": k / y.size}


def outlier_curves(truth, outlierness) -> dict:
    """The ROC and precision-recall curves of one score, as arrays a view can draw.

    ``fpr``, ``tpr`` (ROC, from (0, 0) to (1, 1)); ``recall``, ``precision`` (recall
    increasing, starting at recall 0 with precision 1, scikit-learn's convention).
    """
    from sklearn.metrics import precision_recall_curve, roc_curve

    y, s = _checked(truth, outlierness)
    fpr, tpr, _ = roc_curve(y, s)
    precision, recall, _ = precision_recall_curve(y, s)
    return {"fpr": fpr, "tpr": tpr, "recall": recall[::-1].copy(), "precision": precision[::-1].copy()}


def evaluation_summary(truth, outlierness, flagged=None):
    """What a run reports about known outliers, as a typed
    :class:`~robustcore.result.Evaluation`: ROC-AUC, average precision (with its chance level),
    precision at k and, with ``flagged`` (n,) bool (the run's outlier flags), how many known
    outliers and how many inliers were flagged.

    None when the truth cannot evaluate a score (all or none of the samples are outliers).
    """
    from .result import Evaluation
    try:
        m = outlier_metrics(truth, outlierness)
    except ValueError:
        return None
    y = np.asarray(truth).astype(bool)
    out = Evaluation(roc_auc=float(m["roc_auc"]), average_precision=float(m["average_precision"]),
                     chance=float(m["outlier_fraction"]), precision_at_k=float(m["precision_at_k"]),
                     k=int(m["k"]), known=int(y.sum()), inliers=int((~y).sum()))
    if flagged is not None:
        f = np.asarray(flagged, dtype=bool)
        out.known_flagged, out.inliers_flagged = int((f & y).sum()), int((f & ~y).sum())
    return out
