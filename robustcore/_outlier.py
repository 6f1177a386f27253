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
* ``predict(X)``: -1 for outliers (decision < 0), +1 otherwise; ``fit_predict`` from
  ``OutlierMixin`` is ``fit(X).predict(X)``.
"""
from __future__ import annotations

import numpy as np
from sklearn.base import OutlierMixin

from ._params import Param

__all__ = ["CONTAMINATION", "LIMIT_ALPHA", "OutlierScores"]

CONTAMINATION = Param(
    "contamination", float, "auto", "Share of training samples flagged as outliers; 'auto' uses "
    "the method's own limit.", low=0.0, high=0.5, low_inclusive=False, special=("auto",))

# False-alarm rate of the limits behind "auto" where the method has no alpha parameter of its own
# (PCA, Coherence Pursuit), and of the registry's SPE/T² flags.
LIMIT_ALPHA = 0.01


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
        only if the rule needs the scores)."""
        if contamination == "auto":
            threshold = self._auto_threshold(training_scores)
        else:
            threshold = np.percentile(training_scores(), 100.0 * (1.0 - contamination))
        return {"offset_": -float(threshold)}

    def score_samples(self, X):
        """Normality of each sample (n_samples,): HIGHER = MORE NORMAL (scikit-learn's
        convention); minus the class's raw outlier score."""
        return -self._outlier_score(self._input(X))

    def decision_function(self, X):
        """``score_samples(X) - offset_`` (n_samples,): negative for outliers."""
        return self.score_samples(X) - self.offset_

    def predict(self, X):
        """-1 for outliers, +1 for inliers (n_samples,)."""
        return np.where(self.decision_function(X) < 0, -1, 1)
