"""scikit-learn's outlier-detector API, built from ONE score per estimator class.

Each outlier estimator implements ``_outlier_score(Z)``: the raw score of validated, scaled rows
``Z``, LARGER = MORE ABNORMAL, in the estimator's own units (PCA and Coherence Pursuit: squared
distance to the fitted subspace; ResidualScorer: the SPE; PCP: the l1 norm of the row's sparse
part). That hook is the only place a class defines what "abnormal" means; everything below is
derived from it, the same way for every class:

* ``score_samples(X) = -_outlier_score(X)``: scikit-learn's convention, HIGHER = MORE NORMAL;
* ``offset_ = -threshold`` where ``threshold`` is the raw score above which a sample is an
  outlier: with ``contamination="auto"`` the method's own rule (``_auto_threshold``: a control
  limit, or a robust cut of the training scores), with a fraction ``c`` the (1 - c) quantile of
  the training scores (so a share ``c`` of the training samples is flagged, as in
  scikit-learn's IsolationForest);
* ``decision_function(X) = score_samples(X) - offset_ = threshold - raw``: negative for outliers;
* ``predict(X)``: -1 for outliers (raw > threshold, i.e. decision < 0), +1 otherwise;
  ``fit_predict`` from ``OutlierMixin`` is ``fit(X).predict(X)``.

These three are defined once, in :class:`OutlierScores` (the mixin of every outlier estimator),
from :func:`outlier_output`; a class changes only where the raw scores come from (``_scored``:
the subspace models score every row in one blocked pass, robustcore.subspace._base, with the
same :func:`outlier_output` per block).
"""
from __future__ import annotations

import numpy as np
from sklearn.base import OutlierMixin

# The constants and the rule's wording live in a module without scikit-learn: the registry
# (robustcore.methods) needs them at import, and the window imports the registry to open.
from ._contamination import CONTAMINATION, LIMIT_ALPHA, MAD_NORMAL, N_MAD, contamination_rule  # noqa: F401
from ._params import param_error

__all__ = ["CONTAMINATION", "LIMIT_ALPHA", "OutlierScores", "OUTPUTS", "outlier_output", "robust_threshold",
           "median_mad_cut",
           "flags_above", "calibration_rows", "calibration_cut", "residual_limit", "contamination_rule",
           "N_MAD", "MAD_NORMAL"]

def median_mad_cut(median: float, mad: float, n_mad: float = N_MAD) -> float:
    """median + n_mad x 1.4826 x MAD: the one robust cut, whoever found the median and MAD (numpy
    here, exact order statistics of stored scores out of core)."""
    return float(median) + n_mad * MAD_NORMAL * float(mad)


def robust_threshold(scores, n_mad: float = N_MAD) -> float:
    """median + n_mad * 1.4826 * MAD of ``scores``: a cut for scores that have no control limit.

    1.4826 makes the MAD a consistent estimate of the standard deviation for Gaussian scores.
    When the MAD is zero (more than half the scores equal, e.g. PCP's all-zero sparse rows),
    the cut is the median itself, so every sample above the typical value is flagged.
    """
    scores = np.asarray(scores, dtype=np.float64)
    if scores.size == 0:
        raise ValueError("scores must not be empty")
    med = float(np.median(scores))
    return median_mad_cut(med, float(np.median(np.abs(scores - med))), n_mad)


def flags_above(scores, threshold) -> np.ndarray:
    """Boolean flags scores > threshold (n,)."""
    return np.asarray(scores, dtype=np.float64) > float(threshold)


def log_residual(sq):
    """log of squared residuals, floored at the smallest normal float (exact fits give 0). The
    log is taken in place in the floored copy: one new array, not two (a fresh 8 MB array of a
    million rows cost 6-8 ms of page faults in a fresh process here)."""
    out = np.maximum(sq, np.finfo(float).tiny)
    return np.log(out, out=out) if isinstance(out, np.ndarray) else np.log(out)


def calibration_cut(sq) -> float:
    """The log squared residual above which a usable row is a gross outlier and left out of the
    calibration rows (:func:`calibration_rows`): median + 3 MAD of ``log_residual(sq)``."""
    return robust_threshold(log_residual(sq), N_MAD)


def calibration_rows(sq, usable, n_mad: float = N_MAD):
    """Rows to calibrate the SPE/T² limits on after a robust fit: every usable row except the
    gross outliers, those whose log squared residual ``sq`` exceeds median + n_mad MAD (log:
    the residual is a skewed, chi-square like score).

    The selected inliers are the wrong calibration set: they are picked FOR fitting the subspace
    well, so their residuals understate the inliers' spread (on the USPS demo, limits from the
    selected half flagged 45 of 264 ones besides the 50 eights; from the trimmed set, 16).
    """
    idx = np.flatnonzero(usable)
    log_sq = log_residual(sq[idx])
    return idx[log_sq <= robust_threshold(log_sq, n_mad)]


def residual_limit(sq, alpha: float) -> float:
    """Robust cut for squared residuals ``sq`` at false-alarm rate ``alpha``.

    With s a squared residual, s^(1/3) is close to normal (Wilson-Hilferty, for a scaled
    chi-square); its median and MAD give the cut (median + z_(1-alpha) * 1.4826 MAD)^3, which a
    minority of outliers does not move. Used by the refinement and by contamination="auto".
    """
    from scipy import stats
    t = np.cbrt(np.asarray(sq, dtype=np.float64))
    med = np.median(t)
    mad = np.median(np.abs(t - med))
    return float(median_mad_cut(med, mad, stats.norm.ppf(1.0 - alpha)) ** 3)


# scikit-learn's outputs of an outlier detector, by the names _scored takes
OUTPUTS = ("score_samples", "decision", "predict")


def outlier_output(raw, what: str, threshold=None):
    """scikit-learn's output ``what`` (one of :data:`OUTPUTS`) from raw outlier scores (larger =
    more abnormal) and the raw-score ``threshold`` (``-offset_``; not needed for score_samples)."""
    if what == "score_samples":
        return -raw
    if what == "decision":
        return threshold - raw
    if what == "predict":
        return np.where(raw > threshold, -1, 1)
    raise param_error("what", "one of " + ", ".join(OUTPUTS), what)


class OutlierScores(OutlierMixin):
    """Mixin: ``score_samples``, ``decision_function``, ``predict`` and ``offset_`` from the
    class's ``_outlier_score`` (see the module doc). Requires ``_input`` (scaling and checks)."""

    def _outlier_score(self, Z):          # pragma: no cover - each class defines it
        raise NotImplementedError

    def _auto_threshold(self, training_scores):   # pragma: no cover
        """The raw-score cut of contamination="auto"; ``training_scores()`` gives the raw
        scores of the training rows when the rule needs them."""
        raise NotImplementedError

    def _offset(self, contamination, training_scores) -> dict:
        """``{"offset_": ...}`` for the end of fit; ``training_scores`` is a callable (computed
        only if the rule needs the scores; numpy or stored per-row arrays)."""
        if contamination == "auto":
            threshold = self._auto_threshold(training_scores)
        else:
            from ._passes import percentile
            threshold = percentile(training_scores(), 100.0 * (1.0 - contamination))
        return {"offset_": -float(threshold)}

    def _scored(self, X, what: str):
        """:func:`outlier_output` ``what`` of the rows of X; a class whose scores come another
        way (one pass over lazy rows) overrides this, never the three methods below."""
        raw = self._outlier_score(self._input(X))
        return outlier_output(raw, what, None if what == "score_samples" else -self.offset_)

    def score_samples(self, X):
        """Normality of each sample (n_samples,): HIGHER = MORE NORMAL (scikit-learn's
        convention); minus the class's raw outlier score."""
        return self._scored(X, "score_samples")

    def decision_function(self, X):
        """``score_samples(X) - offset_`` (n_samples,): negative for outliers."""
        return self._scored(X, "decision")

    def predict(self, X):
        """-1 for outliers, +1 for inliers (n_samples,)."""
        return self._scored(X, "predict")
