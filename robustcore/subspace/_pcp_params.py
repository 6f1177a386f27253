"""PCP's parameter declarations, in a module of their own so that the registry, the window's
forms and the command line can read them without importing the estimator or scikit-learn."""
from __future__ import annotations

from dataclasses import replace

from .._contamination import CONTAMINATION
from .._centering import center_param
from .._params import Param, SeedParam, scale_param

__all__ = ["PARAMS"]

PARAMS = (
    Param("lam", float, None, "Weight of the sparse term lambda (larger = sparser S).",
          low=0.0, low_inclusive=False, allow_none=True, none_label="1/sqrt(max(n, d))",
          doc="The default is the JACM theorem's universal value ``1 / sqrt(max(n_samples, "
              "n_features))``."),
    Param("tol", float, 1e-7, "Stop when ||X - L - S||_F / ||X||_F falls below this.",
          low=0.0, high=1.0, low_inclusive=False, high_inclusive=False),
    Param("max_iter", int, 1000, "Maximum number of iterations.", low=1,
          doc="Reaching it warns with :class:`~sklearn.exceptions.ConvergenceWarning`."),
    Param("mu", float, None, "Initial augmented-Lagrangian penalty mu.", low=0.0,
          low_inclusive=False, allow_none=True, none_label="1.25/||X||_2", advanced=True,
          doc="It grows by ``rho`` per iteration up to ``1e7 * mu``."),
    Param("rho", float, 1.5, "Growth factor of mu per iteration.", low=1.0, low_inclusive=False,
          advanced=True, doc="The reference code's value is 1.5."),
    Param("svd", str, "auto", "SVD used for thresholding: auto, gram (eigh), randomized or full.",
          choices=("auto", "gram", "randomized", "full"), advanced=True,
          doc='"gram" is eigh of the smaller Gram matrix, "randomized" a warm-started range '
              'finder with rank prediction, "full" a LAPACK SVD each iteration (slow; for '
              'checking); "auto" chooses by the predicted rank each iteration.'),
    Param("score_norm", str, "l1", "Per-sample score from S: row l1 norm or row l2 norm.",
          choices=("l1", "l2"),
          doc="(Called ``score`` in 0.1, which hid scikit-learn's ``score`` method.)"),
    SeedParam("Seed for the randomized SVD.", doc="It also seeds the spectral norm estimate."),
    Param("n_jobs", int, None, "Threads for the passes over the data.", low=1, allow_none=True,
          none_label="all cores", advanced=True,
          doc="That is: one thread for data of fewer than 2e6 entries (threads did not pay "
              "there), else up to every core available to the process, each pass on one thread "
              "or on all of them as the machine's load allows (see the module notes), or one "
              "when the user chose more than one BLAS thread (their threads would compete); an "
              "int is used as given. BLAS runs on one thread meanwhile unless the user set its "
              "thread count (``robustcore._blas_policy``). Results do not depend on it beyond "
              "rounding (sums are split differently)."),
    scale_param("auto", doc="The scaled matrix is decomposed, and L and S are returned in "
                "ORIGINAL units (L takes the centre: ``X = L + S`` as in the scaled units); "
                "scores are in the scaled units. \"auto\" standardises tables in mixed units "
                "and leaves pixels and video alone: the l1 penalty weighs every entry alike, so "
                "without it a column in small units never enters S (PCP scored ROC-AUC 0.04 on "
                "ODDS shuttle in random units; benchmarks/results_outliers.md)."),
    center_param("median", doc="Subtracted after scaling; L takes the locations back, S and the "
                 "scores never see them, so adding a constant to a column changes nothing but L. "
                 "Why a centre: the model X = L + S with an offset c_j per column is X = (L + 1 c') "
                 "+ S; 1 c' is rank one, but an l1 and nuclear norm measured from zero make an "
                 "arbitrary shift of one column cost differently in L and S, and the answer moves "
                 "(ODDS lympho: ROC-AUC 0.73 as given, 0.975 with column medians taken out). Why "
                 "the median: it is the column's location under a minority of gross errors, which "
                 "the mean is not (the study in benchmarks/results_outliers.md, \"PCP centre\")."),
    replace(CONTAMINATION, special=("auto", "mad"),
            doc="\"auto\" flags samples whose score exceeds a limit at false-alarm rate alpha = "
            "0.01, the rate the other methods state: the training quantile leaving 1 % of the "
            "robust core of the scores above it, by the one calibration rule of every method's "
            "limits (``robustcore._calibration.rate_limit``; ``limit_calibration_`` says when "
            "the rate cannot be promised); "
            "\"mad\" the cut of versions before 0.4, median + 3 x 1.4826 MAD of the training "
            "scores (no stated rate: it flagged a median 2.9 % of known inliers on held-out "
            "tables); a fraction c flags the share c of training samples with the largest scores."),
)
