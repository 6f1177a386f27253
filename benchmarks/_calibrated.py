"""The Gaussian and the calibrated SPE/T² limits of a FITTED subspace model, side by side.

The estimators calibrate their limits themselves (robustcore.limits.control_limits: the training
outlier scores max(SPE / Q, T² / T) against their nominal threshold 1, both limits multiplied by
one factor, recorded in ``limit_calibration_``). The Gaussian flags are that model's scores
times the factor, above 1: the same ranking, the limits before calibration.
"""
from __future__ import annotations


def gaussian_flags(est, X):
    """Flags of the Gaussian limits alone (the calibration undone), and the outlier score in
    their units."""
    factor = float(getattr(est, "limit_calibration_", {}).get("factor", 1.0))
    s = -est.score_samples(X) * factor
    return s > 1.0, s
