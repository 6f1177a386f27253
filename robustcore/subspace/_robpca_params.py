"""ROBPCA's parameter declarations, in a module of their own so that the registry, the window's
forms and the command line can read them without importing the estimator or scikit-learn."""
from __future__ import annotations

from dataclasses import replace

from .._contamination import CONTAMINATION
from .._params import Param, SeedParam, scale_param

__all__ = ["PARAMS", "CRIT", "CUTOFFS", "MIN_SAMPLES"]

# The quantile of both cut-offs and of every reweighting step (the paper's and rrcov's 0.975):
# a clean normal sample lies beyond the score cut-off with probability 1 - CRIT.
CRIT = 0.975
# contamination's name for the paper's cut-offs as they are (what "auto" calibrates)
CUTOFFS = "cutoffs"
# the fewest rows max_samples may name: the fewest ROBPCA fits (two rows span a line)
MIN_SAMPLES = 2


def _rank_rule(n, d, values):
    # The shape's part of the fit's rule (n_components <= the rank of the centred data): that
    # rank is at most min(n - 1, d); the rank itself is known only from the values, at Run.
    m = min(n - 1, d)
    return 1, m, (f"at most min(n_samples - 1, n_features) = {m}, the largest rank of centred data "
                  f"of this shape; here n_samples = {n}, n_features = {d}")

PARAMS = (
    Param("n_components", int, None, "Number of robust principal components k.", low=1,
          allow_none=True, none_label="the paper's rule (80 % of the robust variance)", shape_rule=_rank_rule,
          doc="1 <= n_components <= the rank of the data. None takes the paper's rule on the "
              "covariance of the h least outlying samples: the smallest k whose components "
              "explain 80 % of its total variance, among the eigenvalues at least 1e-3 times "
              "the first, at most ``kmax``."),
    Param("kmax", int, 10, "Largest k the rule for n_components may choose.", low=1, advanced=True,
          doc="Also sets h when n_components is None: h = max(alpha n, (n + kmax + 1) / 2)."),
    Param("alpha", float, 0.75, "Share h / n of samples each robust step is fitted on.", low=0.5,
          high=1.0, doc="h = max(floor(alpha n), floor((n + k + 1) / 2)) samples: the fit resists "
          "up to n - h outliers. Smaller is more robust and less efficient; 0.5 gives the highest "
          "breakdown point, 0.75 (the paper's default) more precision on clean data."),
    Param("max_samples", int, "auto", "Rows the robust stages are fitted on: a seeded random sample of "
          "this many when the data have more; every row is scored.", low=MIN_SAMPLES,
          special=("auto", "all"), advanced=True,
          doc='As scikit-learn\'s IsolationForest ``max_samples``: "auto" is 100,000 rows, an integer '
              "that many (a table with no more rows than that is fitted on every row, without a "
              'draw), "all" every row. The rule is the same in memory and out of core: the same '
              "seeded draw of row indices (the fit's first use of ``random_state``), the scaling "
              "fitted on every row, the outlyingness, the reweighting and the MCD on the sample, "
              "then every row scored with the sample's cut-offs; a contamination's offset and the "
              "calibration of \"auto\" read every row's score. So a table gives the same fit whether "
              "it is in memory or opened out of core. Out of core the sampled rows (every row for "
              '"all") are held in memory as float64 and must fit the memory budget '
              "(robustcore.bigdata.settings); beyond it the fit is refused with how to fix it. "
              "Tables of at most 100,000 rows are fitted on every row by default."),
    SeedParam("Seed of the row sample (max_samples), the directions through pairs of samples and of "
              "the MCD's random subsets."),
    scale_param("auto", doc='"auto" by default, as for every method: ROBPCA is not scale '
                            "equivariant, so columns in different units are standardised and "
                            'data in one unit are left as they are. "none" is the paper\'s, '
                            "rrcov's and robpy's setting (spectra in one unit, where "
                            "standardising inflates the noise of flat channels); choose it by "
                            "name to reproduce them. Chosen on the development tables "
                            "(benchmarks/results_outliers.md, ROBPCA's scale). Attributes and "
                            "scores are in the scaled units."),
    replace(CONTAMINATION, special=("auto", CUTOFFS),
            doc=f'"auto" flags samples whose outlier score exceeds a limit at the cut-offs\' '
                f"false-alarm rate alpha = {1 - CRIT:.3g}: the cut-offs bounded by the training scores' "
                "own quantiles, by the one calibration rule of every method's limits "
                "(robustcore._calibration; ``limit_calibration_`` says what it did and when the "
                f'rate cannot be promised). "{CUTOFFS}" the paper\'s cut-offs as they are, '
                f"sqrt(chi2_k({CRIT:g})) for the score distance and the Wilson-Hilferty cut-off of "
                f"the orthogonal distances at {CRIT:g} (uncalibrated: they flagged 8-35 % of the "
                "known inliers of 18 of 21 development tasks). The outlier map's regions are "
                "always the paper's cut-offs. A fraction c flags the share c of training "
                "samples with the largest outlier score."),
)
