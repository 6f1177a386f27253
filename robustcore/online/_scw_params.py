"""SCW's parameter declarations, in a module of their own so that the registry, the window's
forms and the command line can read them without importing the estimator or scikit-learn."""
from __future__ import annotations

from .._params import Param, SeedParam

__all__ = ["PARAMS"]

PARAMS = (
    Param("variant", str, "I", "SCW-I (linear loss, step clipped at C) or SCW-II (squared loss).",
          choices=("I", "II")),
    Param("C", float, 1.0, "Aggressiveness: how far one violating example may move the model.",
          low=0.0, low_inclusive=False),
    Param("eta", float, None, "Confidence level eta; phi = inverse normal CDF of eta.",
          low=0.5, high=1.0, low_inclusive=False, high_inclusive=False, allow_none=True,
          none_label="0.75 for SCW-I, 0.90 for SCW-II",
          doc="The defaults are LIBOL's (``DEFAULT_ETA``)."),
    Param("covariance", str, "full", "Full covariance (exact) or its diagonal (fast, sparse data).",
          choices=("full", "diagonal"),
          doc="The full d x d covariance costs O(d^2) per example (exact SCW); its diagonal "
              "O(nnz(x)) per example, for high-dimensional sparse data (the full update with "
              "all but its diagonal dropped). With the diagonal, CSR input is learned touching "
              "only its non-zeros, never densified; with the full covariance (which is d x d "
              "anyway) CSR rows are densified a block of at most 192 rows at a time."),
    Param("a", float, 1.0, "Initial covariance a*I (prior variance of each weight).",
          low=0.0, low_inclusive=False, advanced=True),
    Param("multiclass", str, "shared",
          "Multi-class form: one shared covariance (M-SCW) or one binary SCW per class.",
          choices=("shared", "ovr"), advanced=True,
          doc="See Notes; ignored for two classes."),
    Param("fit_intercept", bool, True, "Learn a bias (a constant feature 1), so all-zero rows "
          "and zero margins get the learned bias.", advanced=True,
          doc="On by default, as in scikit-learn's linear classifiers."),
    Param("shuffle", bool, True, "Visit the samples of fit in a random order.", advanced=True,
          doc="As scikit-learn's ``PassiveAggressiveClassifier``; ``partial_fit`` never "
              "shuffles. Data files are often sorted by class, and an online learner fed one "
              "class after the other learns the last class seen; ``fit(shuffle=False)`` and "
              "``partial_fit`` warn when the labels arrive in long runs of one class (far fewer "
              "label changes than a random order gives)."),
    SeedParam("Seed of the shuffle."),
)
