"""The calibrated SPE/T² limits of robustcore._calibration, applied to a FITTED subspace model
from the outside (benchmarks only: wiring them into the estimators is the lead's, see the report
of issue 23). The training outlier scores max(SPE / Q, T² / T) (Gaussian limits Q, T at alpha)
are calibrated against their nominal threshold 1; both limits are multiplied by the result, so
the ranking (ROC-AUC) is the estimator's own and only the flags move.
"""
from __future__ import annotations

from robustcore._calibration import calibrate_scores
from robustcore._outlier import LIMIT_ALPHA


def calibration_of(est, X):
    """(Calibration record, training outlier scores) of a fitted PCA / CoherencePursuit /
    ResidualScorer on its training rows X."""
    alpha = getattr(est, "alpha", LIMIT_ALPHA)
    scores = -est.score_samples(X)          # max(SPE / Q, T² / T): nominal limit 1
    return calibrate_scores(scores, 1.0, alpha), scores


def calibrated_flags(est, X):
    """Flags of the calibrated limits on the training rows, and the outlier score in units of
    those limits (the same ranking)."""
    cal, scores = calibration_of(est, X)
    s = scores / cal.limit
    return s > 1.0, s
