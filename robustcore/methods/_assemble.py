"""THE one place a run's result is put together (:func:`assemble`), after any adapter."""
from __future__ import annotations

import numpy as np

from ..result import RunResult
from ..subspace._robpca_params import CUTOFFS

__all__ = ["assemble"]


def _names(names):
    """The result's feature names: made on demand when the data's are (a 4 x 2^24 store must not
    cost 16M strings per result), else a plain list of strings."""
    from ..datasets._limits import numbered
    return names if isinstance(names, numbered) else [str(f) for f in names]


def assemble(method, dataset, values: dict, fields: dict, caught, elapsed: float, estimator) -> RunResult:
    """The adapter's typed fields, the run's provenance, the warnings the fit raised, the
    evaluation against known outliers and the check of the flagged share against the rule's
    stated rate, as one :class:`~robustcore.result.RunResult`."""
    fields = dict(fields)
    notes = [str(w) for w in fields.pop("warnings", [])]
    res = RunResult(method=method.name, params=values, data_fingerprint=dataset.fingerprint(),
                    estimator=estimator, elapsed=elapsed,
                    feature_names=_names(dataset.feature_names), **fields)
    res.warnings = notes + [str(w.message) for w in caught if str(w.message) not in notes]
    scaled = res.decomposition or res.subspace     # the part that records the fit's scaling
    if scaled is not None and dataset.is_image and scaled.scaling == "none" and values.get("scale") == "auto":
        scaled.scaling_reason = "image data"
    truth = getattr(dataset, "outliers", None)
    score = res.sample_scores.get(method.outlier_score) if method.outlier_score else None
    if truth is not None and isinstance(score, np.ndarray):
        from ..evaluation import evaluation_summary
        res.evaluation = evaluation_summary(truth, score, res.flags.get("outlier"))
    _check_flag_rate(method, res, values, truth, score)
    return res


def _check_flag_rate(method, res: RunResult, values: dict, truth, score) -> None:
    """Say so when the share flagged among the samples believed clean (the known inliers, or
    else the robust core of the scores) is far from the rule's stated false-alarm rate
    (robustcore._calibration.flag_rate_warning): a legend that quotes alpha = 0.01 over 29 %
    of the inliers flagged would mislead (ROBPCA's paper cut-offs by name state theirs too).
    Rules without a rate (a contamination share, the
    median + 3 MAD cut) have nothing to check; results on disk beyond the budget are not read
    back for it."""
    rule = method.outlier_rule
    alpha = rule.alpha_for(values) if rule is not None else None
    flagged = res.flags.get("outlier")
    if alpha is None or values.get("contamination", "auto") not in ("auto", CUTOFFS) or res.outliers is None \
            or not isinstance(flagged, np.ndarray) or not isinstance(score, np.ndarray):
        return
    from .._calibration import flag_rate_warning
    who = f"{method.title}'s {rule.limits}"
    msg = flag_rate_warning(flagged, alpha, known_outliers=truth, scores=score, method=who)
    # with known outliers the share is measured, not foreseen: the fit's own caveat (why the
    # limits cannot promise alpha) is said beside it, as the runs without them say it
    caveat = (getattr(res.estimator, "limit_calibration_", None) or {}).get("caveat", "")
    if truth is not None and caveat:
        note = f"{who} cannot promise the stated alpha = {100 * alpha:g} %: {caveat}"
        msg = f"{msg}. {note}" if msg else note
    if msg:
        res.outliers.flag_rate_warning = msg
        res.warnings.append(msg)
