"""The outlier rules, declared once: each registry method names its own, its adapter applies it,
and the views, the log and the exports quote :meth:`OutlierRule.describe`.

A rule is fields (which scores, what cut, the rate or the width), and its words are made from
them here, so no adapter writes a rule's text of its own.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .._contamination import LIMIT_ALPHA, N_MAD, contamination_rule
from ..subspace._robpca_params import CRIT as _ROBPCA_CRIT, CUTOFFS  # (no scikit-learn import)

__all__ = ["OutlierRule", "Cut", "LIMITS_RULE", "RESIDUAL_RULE", "SPARSE_RULE", "PCP_RULE", "ROBPCA_RULE",
           "SCORE_DIRECTIONS", "METHOD_SCORE_DIRECTIONS"]

#: What a rule cuts its score at: the score's own control limit(s) at a false-alarm rate,
#: ROBPCA's cut-offs, or median + n_mad MAD of the training scores.
Cut = Literal["limit", "cut-off", "mad"]


@dataclass(frozen=True)
class OutlierRule:
    """How a method decides its "outlier" flag.

    ``scores`` names the score(s) cut (in words: "SPE or T²"); ``cut`` says at what. ``alpha``
    is a fixed false-alarm rate of control limits, ``alpha_param`` the run parameter holding it
    when the user chooses it; ``n_mad`` the width of a median + n·MAD cut. ``limits`` is what
    the flag-rate warning calls the cut.
    """

    scores: str
    cut: Cut
    alpha: float | None = None
    alpha_param: str | None = None
    n_mad: float | None = None
    limits: str = "limit"

    @property
    def text(self) -> str:
        """The rule in words, without its rate."""
        if self.cut == "mad":
            return f"{self.scores} above median + {self.n_mad:g} MAD"
        return f"{self.scores} above its {self.cut}"

    def alpha_for(self, params: dict | None = None) -> float | None:
        if self.alpha_param is not None and params and params.get(self.alpha_param) is not None:
            return float(params[self.alpha_param])
        return self.alpha

    def describe(self, params: dict | None = None) -> str:
        c = (params or {}).get("contamination", "auto")
        if c == CUTOFFS and self.cut == "cut-off":   # ROBPCA's cut-offs by name, not calibrated
            return f"{self.text} at {1.0 - self.alpha:g}, the paper's rule (contamination='{c}')"
        if c != "auto":  # a numeric contamination replaces the method's own rule
            return contamination_rule(c)
        a = self.alpha_for(params)
        if self.cut == "cut-off":   # "auto" flags beyond the cut-offs as calibrated at their own rate
            return f"{self.text}s calibrated on the training scores (alpha = {a:g}; the paper's " \
                   f"uncalibrated cut-offs: contamination='{CUTOFFS}')"
        return f"{self.text} (alpha = {a:g})" if a is not None else self.text


LIMITS_RULE = OutlierRule("SPE or T²", "limit", alpha=LIMIT_ALPHA, limits="SPE/T² limits")
RESIDUAL_RULE = OutlierRule("SPE or T²", "limit", alpha_param="alpha", limits="SPE/T² limits")
SPARSE_RULE = OutlierRule("sparse-part score", "mad", n_mad=N_MAD)
PCP_RULE = OutlierRule("sparse-part score", "limit", alpha=LIMIT_ALPHA)
ROBPCA_RULE = OutlierRule("score or orthogonal distance", "cut-off", alpha=round(1.0 - _ROBPCA_CRIT, 12))

# Which way each per-sample score runs (written into exports beside the scores). The registry's
# scores keep their own names and directions; scikit-learn's score_samples (higher = more normal)
# is the estimators' API, not what the views draw.
SCORE_DIRECTIONS = {
    "spe": "higher = farther from the subspace (more abnormal)",
    "t2": "higher = farther along the subspace from its centre (more abnormal)",
    "sparse_score": "higher = larger sparse part (more abnormal)",
    "coherence": "higher = more coherent with the other samples (more normal)",
    "outlier_score": "higher = more abnormal (the larger of SPE and T², each in units of its limit; "
                     "above 1 = flagged)",
}
# Where a method's score of the same name is another quantity: ROBPCA's outlier score is in the
# outlier map's units (robustcore.subspace.robpca), and with contamination="auto" it flags above
# its calibrated cut-offs, not at 1 (an export said "above 1 = flagged" beside flagged rows at 0.94).
METHOD_SCORE_DIRECTIONS = {
    "robpca": {"outlier_score": "higher = more abnormal (the larger of SD and OD, each in units of its "
                                "cut-off on the outlier map: above 1 = beyond a cut-off; flag_outlier is "
                                "above the calibrated cut-offs with contamination='auto', above 1 with "
                                "'cutoffs')"},
}
