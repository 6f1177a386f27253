"""OnlineRPCA's parameter declarations, in a module of their own so that the registry, the window's
forms and the command line can read them without importing the estimator or scikit-learn."""
from __future__ import annotations

from .._params import Param

__all__ = ["PARAMS"]


def _rank_rule(n, d, values):
    return 1, d - 1, f"below n_features = {d}, the pixels of a frame"


PARAMS = (
    Param("n_components", int, 1, "Rank of the low-rank part (background).", low=1, shape_rule=_rank_rule,
          doc="The number k of basis vectors. A static background needs 1, and its coefficient "
              "follows global changes of light. More directions can follow more complex changes "
              "but also absorb slow objects (on the benchmark video, k = 3 lost 0.07 of "
              "F-measure to \"ghosts\" of slow objects in L)."),
    Param("lambda1", float, None, "Weight of the factor penalty, in units of the data range.",
          low=0.0, low_inclusive=False, allow_none=True, none_label="1/sqrt(n_features)", advanced=True,
          doc="The penalty is (||U||² + ||R||²)/2; the default is the paper's choice."),
    Param("lambda2", float, None, "Sparsity weight, in units of the data range: residuals above it "
          "go to the sparse part.", low=0.0, low_inclusive=False, allow_none=True, none_label="0.02",
          doc="It weighs the sparse term ||e||_1: residuals smaller than it go to L, larger ones "
              "to S. 0.02 is about 5 grey levels of 8-bit video."),
    Param("batch_size", int, 64, "Frames per batch (basis update and progress per batch).", low=1),
    Param("forgetting", float, 0.99, "Weight a frame's statistics keep per later frame (1 = "
          "remember all; below 1 follows a changing background).", low=0.0, high=1.0,
          low_inclusive=False,
          doc="0.99 forgets with a time constant of about 100 frames (4 s of 25 fps video), so "
              "the background follows slow changes and the traces of objects that lingered "
              "fade; 1 remembers all frames equally."),
    Param("max_inner", int, 30, "Most reweighting steps of the per-batch solve.", low=1, advanced=True,
          doc="The per-batch solve is that of the coefficients (r, e)."),
    Param("tol", float, 1e-3, "Relative change of the coefficients that ends the per-batch solve.",
          low=0.0, low_inclusive=False, advanced=True),
    Param("pixel_fraction", float, None, "Share of the pixels the per-frame coefficients are "
          "estimated from (a random subset, as GRASTA; the sparse part uses every pixel).",
          low=0.0, high=1.0, low_inclusive=False, allow_none=True,
          none_label="all up to 20,000 pixels, then 20,000", advanced=True,
          doc="The subset is drawn at random once. Speed, at a small cost in accuracy."),
    Param("mask_threshold", float, None, "Foreground mask: |S| above this (data units).", low=0.0,
          allow_none=True, none_label="a tenth of the data range",
          doc="The default is the decomposition view's."),
    Param("data_scale", float, None, "Data range the lambdas are measured in.", low=0.0,
          low_inclusive=False, allow_none=True, none_label="value range of the source", advanced=True,
          doc="The source's value range is 255 for 8-bit video; without one, the first batch's "
              "max - min."),
)
