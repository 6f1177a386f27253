"""Control limits of SPE (Q) and Hotelling T², as pure functions of a few numbers.

Nothing here knows an estimator: each formula takes eigenvalues, counts and a false-alarm rate
(the way scikit-learn's ``utils/extmath.py`` serves its estimators without importing one). The
estimators (robustcore.subspace._base, robustcore.anomaly) call :func:`control_limits` once at the
end of a fit, in memory and out of core alike: it is the ONE place where the limits behind
``contamination="auto"`` are set. Its ``training`` argument gives the training rows' SPE and T²
order statistics to a rule that wants them (exact: ``np.partition`` in memory, two passes over the
stored scores out of core); the Gaussian formulas below do not ask for them.

* SPE: Jackson & Mudholkar (1979) from θ_i = Σ λ^i over ALL residual eigenvalues, with Box's
  scaled chi-square where JM is undefined; floored at 1e-20 of the total variance.
* T²: the F limit for new observations, or the Beta limit for the training rows (Phase I).
* Both then bounded by the calibration rows' own scores (robustcore._calibration), so that
  clean samples are flagged near alpha on data that are not Gaussian.
"""
from __future__ import annotations

import math

import numpy as np
from scipy import stats

__all__ = ["jackson_mudholkar_limit", "box_limit", "spe_limit", "t2_limit_new", "t2_limit_training",
           "thetas", "control_limits", "calibration_record", "TINY_VARIANCE"]

# A component whose training variance is below this fraction of the largest variance (along or
# off the subspace) has none: T² along it is undefined.
TINY_VARIANCE = 1e-12


def thetas(residual_eigenvalues):
    """θ_i = sum λ^i, i = 1, 2, 3 (inf where they exceed float64: variances above ~1e100)."""
    (t1, t2, t3), s = _unit_thetas(residual_eigenvalues)
    return t1 * s, t2 * s * s, t3 * s * s * s      # (Python floats: inf, no warning)


def _unit_thetas(residual_eigenvalues):
    """θ1..θ3 of the eigenvalues divided by a power of two s near the largest, and s: both
    limits are homogeneous of degree 1 in the eigenvalues (limit = s x the limit of these),
    and θ3 = sum λ³ itself would overflow from variances of ~1e100 on (data up to 1e150 are
    accepted)."""
    lam = np.asarray(residual_eigenvalues, dtype=np.float64)
    top = float(np.max(lam)) if lam.size else 0.0
    s = math.ldexp(1.0, math.frexp(top)[1]) if 0.0 < top < np.inf else 1.0
    lam = lam / s
    return (float(np.sum(lam)), float(np.sum(lam**2)), float(np.sum(lam**3))), s


def box_limit(residual_eigenvalues, alpha: float) -> float:
    """Box's approximation SPE ~ g chi²_h (g = θ2/θ1, h = θ1²/θ2): the limit g·chi²_{h,1-α}."""
    (t1, t2, _), s = _unit_thetas(residual_eigenvalues)
    if t1 <= 0.0 or t2 <= 0.0:
        return 0.0
    return float(t2 / t1 * stats.chi2.ppf(1.0 - alpha, t1 * t1 / t2)) * s


def jackson_mudholkar_limit(residual_eigenvalues, alpha: float) -> tuple[float, str]:
    """Jackson-Mudholkar (1979) limit of SPE at false-alarm rate ``alpha``.

    ``residual_eigenvalues`` must be ALL eigenvalues of the covariance beyond the retained ones
    (θ_i = sum λ_j^i over them). Returns ``(limit, method)``; ``method`` says
    ``"box (h0 <= 0)"`` when the JM formula is undefined for this spectrum and Box's
    approximation was used instead.
    """
    (t1, t2, t3), s = _unit_thetas(residual_eigenvalues)   # (the limit is s x theirs)
    if t1 <= 0.0 or t2 <= 0.0:
        return 0.0, "jackson-mudholkar"
    h0 = 1.0 - 2.0 * t1 * t3 / (3.0 * t2 * t2)
    if h0 <= 0.0:
        return box_limit(residual_eigenvalues, alpha), "box (h0 <= 0)"
    c = stats.norm.ppf(1.0 - alpha)
    base = c * np.sqrt(2.0 * t2 * h0 * h0) / t1 + 1.0 + t2 * h0 * (h0 - 1.0) / (t1 * t1)
    if base <= 0.0:
        return box_limit(residual_eigenvalues, alpha), "box (JM bracket <= 0)"
    with np.errstate(over="ignore"):
        q = float(t1 * base ** (1.0 / h0))
    if not np.isfinite(q):
        # h0 just above 0 makes the exponent 1/h0 overflow; Box stays finite there.
        return box_limit(residual_eigenvalues, alpha), "box (h0 near 0)"
    return q * s, "jackson-mudholkar"


def spe_limit(residual_eigenvalues, alpha: float, *, total: float,
              method: str = "jackson-mudholkar") -> float:
    """The SPE control limit as the estimators use it: Jackson-Mudholkar's (or Box's with
    ``method="box"``), floored at 1e-20 x ``total``, the total variance. Exactly low-rank
    training data give theta = 0 and a zero limit that rounding would cross; squared residuals
    below 1e-20 of the total variance are rounding, not departures."""
    return _spe_limit_and_method(residual_eigenvalues, alpha, total, method)[0]


def _spe_limit_and_method(lam, alpha, total, method):
    if method == "box":
        lim, used = box_limit(lam, alpha), "box"
    else:
        lim, used = jackson_mudholkar_limit(lam, alpha)
    return max(lim, 1e-20 * total), used


def t2_limit_new(p: int, n: int, alpha: float) -> float:
    """T² limit for NEW observations, mean and covariance estimated from n training rows:
    p (n-1)(n+1) / (n (n-p)) · F_{1-α}(p, n-p)."""
    return float(p * (n - 1) * (n + 1) / (n * (n - p)) * stats.f.ppf(1.0 - alpha, p, n - p))


def t2_limit_training(p: int, n: int, alpha: float) -> float:
    """T² limit for the TRAINING rows themselves (Phase I): (n-1)²/n · Beta_{1-α}(p/2, (n-p-1)/2)."""
    return float((n - 1) ** 2 / n * stats.beta.ppf(1.0 - alpha, p / 2.0, (n - p - 1) / 2.0))


def control_limits(n, var, lam, *, alpha, limit="jackson-mudholkar", t2_kind="new", strict=False,
                   training=None, calibrate=True) -> dict:
    """The fitted ``variances_``, ``residual_eigenvalues_``, ``thetas_``, ``spe_limit_``,
    ``spe_limit_method_`` and ``t2_limit_`` of a subspace model, from n calibration rows with
    variances ``var`` (k,) along its components and residual eigenvalues ``lam`` (all of them).

    A component along which the calibration rows do not vary makes T² undefined: ``strict``
    refuses it, otherwise its variance is floored at :data:`TINY_VARIANCE` of the largest (T²
    then flags any departure along it, which the rows never showed).

    ``training``: None, or a callable ``training(variances)`` returning the calibration rows'
    scores (T² in units of these variances) as an object with ``order_statistics(name, ks)``
    (``name`` "spe" or "t2"; the exact ks-th smallest values, 0-based), for a rule that sets
    the limits from them. Called only by such a rule; the Gaussian formulas here do not need
    it, so a fit makes no pass for it.

    ``calibrate`` (with ``training``): bound the Gaussian limits by the calibration rows' own
    scores (robustcore._calibration: the combined score max(SPE / Q, T² / T) is calibrated
    against its nominal limit 1, and both limits are multiplied by the result, so the ranking
    stays and only the flags move). Where the Gaussian limits agree with the data they are
    kept. ``limit_calibration_`` records what happened ("kept", "raised", "lowered",
    "uncalibrated" with its reason, or "off") and its "caveat": "" or why the share flagged
    among clean rows may be far from alpha (robustcore._calibration.rate_caveat).
    """
    k = var.size
    var = np.asarray(var, dtype=np.float64).copy()
    tiny = TINY_VARIANCE * max(float(var.max(initial=0.0)), float(lam.max(initial=0.0)), 1e-300)
    if np.any(var <= tiny):
        if strict:
            j = int(np.argmax(var <= tiny))
            raise ValueError(f"the training data has (almost) no variance along component "
                             f"{j + 1}, so T² is undefined; n_components must be at most {j} "
                             f"for this data (got {k})")
        var = np.maximum(var, tiny)
    spe_lim, method = _spe_limit_and_method(lam, alpha, float(var.sum()) + float(lam.sum()), limit)
    if t2_kind == "new":
        t2_lim = t2_limit_new(k, n, alpha) if n > k else float("inf")
    else:
        if n - k - 1 <= 0:
            raise ValueError(f"t2_limit='training' needs n_samples > n_components + 1; got "
                             f"n_samples = {n}, n_components = {k}")
        t2_lim = t2_limit_training(k, n, alpha)
    cal = _calibration(training, var, spe_lim, t2_lim, alpha) if calibrate else None
    if cal is not None and cal.action in ("raised", "lowered"):
        # one factor for both: the outlier score max(SPE / Q, T² / T) keeps its ranking
        spe_lim, t2_lim = spe_lim * cal.limit, t2_lim * cal.limit
    return dict(variances_=var, residual_eigenvalues_=np.asarray(lam, dtype=np.float64),
                thetas_=np.array(thetas(lam)), spe_limit_=float(spe_lim),
                spe_limit_method_=method, t2_limit_=float(t2_lim),
                limit_calibration_=calibration_record(cal))


def _calibration(training, var, spe_lim, t2_lim, alpha):
    """robustcore._calibration's bounds on the combined score of the calibration rows, or None
    when there are no training scores or no finite positive limits to scale."""
    from ._calibration import uncalibrated
    if training is None:
        return None
    if not (0.0 < spe_lim < math.inf and 0.0 < t2_lim < math.inf):
        return uncalibrated(1.0, "the Gaussian limits are not both finite and positive")
    return training(var).calibrate(spe_lim, t2_lim, alpha)


def calibration_record(cal) -> dict:
    """``limit_calibration_``: what the calibration did, as plain numbers and words."""
    if cal is None:
        return {"action": "off", "factor": 1.0, "reason": "Gaussian limits as they are (calibrate=False)",
                "caveat": "the Gaussian limits hold only for Gaussian scores (calibrate=False)"}
    factor = cal.limit if cal.action in ("raised", "lowered") else 1.0
    return {"action": cal.action, "factor": float(factor), "core_share": float(cal.core_share),
            "reason": cal.reason, "caveat": cal.caveat}
