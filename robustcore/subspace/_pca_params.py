"""PCA's parameter declarations, in a module of their own so that the registry, the window's
forms and the command line can read them without importing the estimator or scikit-learn."""
from __future__ import annotations

from dataclasses import replace

from .._contamination import CONTAMINATION
from .._params import Param, scale_param

__all__ = ["PARAMS", "rank_hint"]


def rank_hint(n: int, d: int) -> str:
    return f"at most min(n_samples, n_features) = {min(n, d)}; here n_samples = {n}, n_features = {d}"


def _rank_rule(n, d, values):
    return 1, min(n, d), rank_hint(n, d)


PARAMS = (
    Param("n_components", int, None, "Number of principal components (rank of the subspace).",
          low=1, allow_none=True, none_label="elbow of the scree plot", shape_rule=_rank_rule,
          doc="1 <= n_components <= min(n_samples, n_features). None takes the elbow of the "
              "log scree plot, at most half of min(n_samples, n_features) (robustcore.rank). "
              "Unlike scikit-learn's PCA, None does not keep every component: a model that "
              "keeps them all has nothing left to measure outliers with."),
    Param("center", bool, True, "Subtract the mean before fitting (affine subspace).",
          doc="False fits a linear subspace through the origin."),
    scale_param("auto", doc="Every fitted attribute and score is in the scaled units."),
    replace(CONTAMINATION, doc='"auto" flags samples whose SPE or T² exceeds its control '
                               "limit at alpha = 0.01 (Jackson-Mudholkar for SPE, F for T², "
                               "both bounded by the training scores' own quantiles); a "
                               "fraction c flags the share c of training samples with the "
                               "largest outlier score."),
)
