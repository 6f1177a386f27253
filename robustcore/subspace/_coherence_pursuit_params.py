"""CoherencePursuit's parameter declarations, in a module of their own so that the registry, the window's
forms and the command line can read them without importing the estimator or scikit-learn."""
from __future__ import annotations

from dataclasses import replace

from .._contamination import CONTAMINATION
from .._centering import AFFINE_CENTERS, center_param
from .._params import Param, SeedParam, scale_param

__all__ = ["PARAMS", "inliers_bound", "fraction_bound"]


def _rank_rule(n, d, values):
    return 1, min(n, d) - 1, (f"below min(n_samples, n_features) = {min(n, d)}; here n_samples = {n}, "
                              f"n_features = {d}")


def _rank_words(affine):
    return 'n_components + 1 (center="affine" fits the offset too)' if affine else "n_components"


def _degenerate_note(n, n_valid):
    return f"; {n - n_valid} sample(s) are degenerate" if n_valid < n else ""


def inliers_bound(n, n_valid, r, affine):
    """(low, high, hint) of n_inliers: between the rank r the fit works with (with
    center="affine" n_components + 1) and the ``n_valid`` usable (non-degenerate) samples of n.
    The fit knows n_valid; from the shape alone it is n."""
    return r, n_valid, f"between {_rank_words(affine)} and the {n_valid} usable samples{_degenerate_note(n, n_valid)}"


def fraction_bound(n, n_valid, r, affine):
    """(low, high, hint, low_inclusive, high_inclusive) of outlier_fraction: the fit keeps
    n_valid - floor(f n_valid) samples, at least r of them, so f < (n_valid - r + 1) / n_valid."""
    return (0.0, (n_valid - r + 1) / n_valid, f"so that at least {_rank_words(affine)} = {r} of the "
            f"{n_valid} usable samples remain{_degenerate_note(n, n_valid)}", True, False)


def _fraction_rule(n, d, values):
    if values.get("selection", "count") != "fraction":
        return None
    affine = values.get("center") == "affine"
    return fraction_bound(n, n, (values.get("n_components") or 1) + affine, affine)


def _inliers_rule(n, d, values):
    if values.get("selection", "count") != "count":
        return None
    affine = values.get("center") == "affine"
    return inliers_bound(n, n, (values.get("n_components") or 1) + affine, affine)


PARAMS = (
    Param("n_components", int, None, "Rank of the subspace to recover.", low=1, shape_rule=_rank_rule,
          allow_none=True, none_label="estimate (elbow of the scree plot)",
          doc="1 <= n_components < min(n_samples, n_features). None estimates it from the "
              "singular values of the selected (normalised) samples, as the authors suggest, "
              "at most half of min(n_samples, n_features) (robustcore.rank): with "
              'center="none", one direction for the samples\' common offset plus the elbow '
              "of the log scree plot of the rest (mean ROC-AUC 0.739 -> 0.762 on the 15 "
              "development tables, benchmarks/results_outliers.md); with center=\"affine\" the "
              "elbow of the whole spectrum of the lifted rows, less the offset; with a centre, the "
              'elbow itself. Not with selection="adaptive", which needs r first.'),
    Param("norm", int, 2, "Coherence score: 2 = squared inner products (default), "
          "1 = absolute ones (better against repeated outliers, slower).", choices=(2, 1),
          doc="2 (the paper's recommendation) gives the larger inlier/outlier gap and "
              "tolerates more outliers; 1 costs O(n^2 d): no d x d shortcut exists."),
    Param("selection", str, "count", "How samples are selected: a fixed count, all but a "
          "known outlier fraction, or adaptive sampling (needs only the rank).",
          choices=("count", "fraction", "adaptive"),
          doc='"adaptive" is the paper\'s Algorithm 2: it picks the most coherent sample that '
              "adds a new direction, r times, in a random sketch of dimension 2r, repeated "
              "``n_repeats`` times (Remark 1)."),
    Param("n_inliers", int, None, "Number of most coherent samples to use (selection=count).",
          low=1, allow_none=True, none_label="half of the samples", shape_rule=_inliers_rule,
          doc="Between r and the number of non-degenerate samples. Half of them (the paper's "
              "choice for Hopkins155) assumes fewer outliers than inliers."),
    Param("outlier_fraction", float, 0.5, "Upper bound on the share of outliers "
          "(selection=fraction).", low=0.0, high=1.0, high_inclusive=False, shape_rule=_fraction_rule),
    center_param("none",
          doc='"none" is the paper\'s formulation: the inliers\' common offset becomes one of '
              "the subspace's directions. On the 15 development tables it scored a mean "
              "ROC-AUC of 0.762 against 0.752 (median) and 0.746 (mean), and its selections "
              "held fewer known outliers (benchmarks/results_outliers.md). \"affine\" lifts each "
              "row minus the columns' medians by one constant coordinate (twice the median row "
              "length) "
              "before normalising: the linear subspace of the lifted rows is a flat of the data "
              "(robustcore.subspace._cop_affine).", choices=AFFINE_CENTERS),
    Param("refine", bool, False, "Refit by PCA on all samples near the CoP subspace.",
          doc="PCA of the un-normalised samples whose residual is below a robust limit "
              "(:func:`residual_limit` at ``refine_alpha``), repeated until the kept set "
              "stops changing (at most 10 passes); degenerate samples are never kept. On "
              "USPS 1s with as many 8s it closed 54-83 % of the gap to the inlier-only "
              "subspace (benchmarks/results_subspace.md)."),
    Param("refine_alpha", float, 0.01, "Share of inliers the refinement limit may leave out.",
          low=0.0, high=1.0, low_inclusive=False, high_inclusive=False, advanced=True,
          doc="Smaller keeps more inliers, but with many structured outliers lets the kept "
              "set grow into them."),
    Param("noise_threshold", float, 0.0, "Adaptive sampling: relative leftover below which a "
          "sample is considered explained (0 for noise-free data).", low=0.0, high=1.0,
          high_inclusive=False, advanced=True,
          doc="Algorithm 2's nu, relative to the sample's length; 0.1-0.3 for noisy data."),
    Param("n_repeats", int, 1, "Adaptive sampling: rounds of r picks each.", low=1,
          advanced=True, doc="More rounds average noise; too many start picking outliers."),
    Param("chunk_size", int, None, "Rows per block when computing coherence.", low=1,
          allow_none=True, none_label="about 1e7 entries per block", advanced=True),
    SeedParam("Seed of the random sketch (selection=adaptive)."),
    scale_param("auto", doc="Applied before centring; attributes and scores are in the "
                            "scaled units."),
    replace(CONTAMINATION, doc='"auto" flags samples whose SPE or T² exceeds its control '
                               "limit at alpha = 0.01, both calibrated on "
                               "``calibration_indices_`` (all but the gross outliers) and "
                               "bounded by those samples' own scores; a fraction c flags the "
                               "share c of training samples with the largest outlier score."),
)
