"""ResidualScorer's parameter declarations, in a module of their own so that the registry, the window's
forms and the command line can read them without importing the estimator or scikit-learn."""
from __future__ import annotations

from dataclasses import replace

from ._contamination import CONTAMINATION
from ._params import Param, scale_param

__all__ = ["PARAMS"]


def _rank_rule(n, d, values):
    return 1, min(n, d) - 1, (f"below min(n_samples, n_features) = {min(n, d)}, or no residual is left; "
                              f"here n_samples = {n}, n_features = {d}")


PARAMS = (
    Param("n_components", int, None, "Dimension of the subspace the scores are measured against.",
          low=1, allow_none=True, none_label="elbow of the scree plot", shape_rule=_rank_rule,
          doc="1 <= n_components < min(n_samples, n_features). None takes the elbow of the "
              "log scree plot, at most half of min(n_samples, n_features) (robustcore.rank: "
              "a rank that keeps nearly every direction leaves SPE nothing to measure)."),
    Param("alpha", float, 0.01, "False-alarm rate of the SPE and T² control limits.",
          low=0.0, high=1.0, low_inclusive=False, high_inclusive=False),
    Param("limit", str, "jackson-mudholkar", "SPE control limit: Jackson-Mudholkar or Box's "
          "chi-square approximation.", choices=("jackson-mudholkar", "box"),
          doc="Jackson-Mudholkar's normal approximation falls back to Box's scaled chi-square "
              "where its h0 <= 0 (recorded in ``spe_limit_method_``)."),
    Param("t2_limit", str, "new", "T² limit for new observations (F) or for the training rows "
          "themselves (Beta).", choices=("new", "training"),
          doc="The training rows' limit (Phase I) is smaller: those rows shaped the estimates."),
    Param("calibrate", bool, True, "Bound the Gaussian limits by the training scores' own "
          "quantiles, so clean samples are flagged near alpha on data that are not Gaussian.",
          doc="robustcore._calibration: both limits are multiplied by one factor, so the "
              "ranking is unchanged and only the flags move; ``limit_calibration_`` says what "
              "was done. False keeps the textbook formulas."),
    Param("center", bool, True, "Centre at the training mean (otherwise a linear subspace)."),
    scale_param("auto", doc="Scores, limits and attributes are in the scaled units."),
    replace(CONTAMINATION, doc='"auto" flags SPE above ``spe_limit_`` or T² above '
                               "``t2_limit_`` (``flag``'s \"either\"); a fraction c flags the "
                               "share c of training samples with the largest outlier score."),
)
