"""Control limits that hold on data that are not Gaussian, and a warning when flags do not.

The SPE and T² limits of the subspace models are Gaussian formulas (Jackson-Mudholkar, F).
Real tables are not Gaussian: at alpha = 0.01 those limits flagged 12-44 % of the known inliers
on three of the fifteen development tables (InternetAds, landsat, SpamBase) and none on others
(benchmarks/results_outliers.md). This module bounds a nominal limit by what the training
scores themselves say, from a few of their order statistics, so the out-of-core path gives the
same numbers from exact two-pass order statistics (:func:`order_statistic_positions`).

The rule, for one score (SPE, T², or the estimators' combined score max(SPE / Q, T² / T), whose
nominal limit is 1) with a nominal limit ``g`` at false-alarm rate ``alpha``, in three steps
that each need only what the step before gave:

1. **The robust core** (:func:`core_cut`, from the training quantiles at QUANTILE_LEVELS).
   Scores are compared on a log scale (they are squared distances: skewed, positive). The core
   is every score up to ``cut = exp(m + CORE_SPREADS * s)``, with ``m`` the log median and
   ``s`` a robust spread of the log scores from their upper half: ``s75 = (log q75 - log q50)
   / 0.6745``, widened up to ``TAIL_WIDENING * s75`` by ``(log q90 - log q50) / 1.2816`` (for
   heavy-tailed scores; bounded, since with a tenth of gross outliers q90 lies among them). Gross outliers beyond the cut cannot
   widen the limits meant to flag them. The caller counts the share ``f`` of training scores
   up to the cut (one pass).
2. **Bounds, distribution-free** (:func:`bound_levels`). The limit may flag no more than
   ``BAND * alpha`` of the core: ``low`` is the training quantile at level
   ``f * (1 - BAND * alpha)`` (inside the core). And it may not flag less than ``alpha / BAND``
   of the core: ``high`` is the quantile at ``f * (1 - alpha / BAND)``; a limit above every
   inlier (nothing but the gross outliers flagged) comes down to the core's own tail.
3. **The limit is ``g`` clipped to [low, high]** (:func:`calibrated_limit`). Where the Gaussian
   formula agrees with the data within those bounds it is kept unchanged (Gaussian data keep
   the textbook limits); where it does not, the nearest bound replaces it.

:func:`calibrate_scores` runs the three steps on scores held in memory.

Issue 35 (benchmarks/results_outliers.md, "Flag rates"): with ``high`` at ``1 - alpha / BAND``
of ALL rows, a table with more outliers than alpha / BAND kept limits above every inlier (0 %
of the clustered synthetic inliers flagged); with the q75 spread alone a tenth of mammography's
inliers lay beyond the core. Both changed as above.

Why these constants (benchmarks/results_outliers.md, the development tables, PCA and Coherence
Pursuit at alpha = 0.01, the flag "SPE or T² above its limit"): the Gaussian limits flagged a
share of the known inliers within [alpha / 3, 3 alpha] on 8 and 6 of the 15 tables (up to 44 %
on InternetAds); calibrated this way, on 12 and 12. A core of 3 spreads left heavy-tailed
inliers outside it (mammography: 5 % of them flagged); no core at all lost the gross outliers'
recall; a band of 3 let the limit sit at 3 alpha of the core (landsat, SpamBase: 4-6 %).

Everything is a pure function of numbers: no estimator is imported, numpy only.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["CORE_SPREADS", "TAIL_WIDENING", "BAND", "WARN_FACTOR", "QUANTILE_LEVELS", "order_statistic_positions",
           "core_cut", "bound_levels", "calibrated_limit", "calibrate", "calibrate_scores", "Calibration", "uncalibrated",
           "flag_rate_warning", "believed_clean", "rate_limit"]

_LOG_MAX = math.log(np.finfo(np.float64).max)
# The core ends this many robust spreads of the log score above its median.
CORE_SPREADS = 4.0
# The spread from q90 widens the core up to this many times the spread from q75 (step 1).
TAIL_WIDENING = 1.5
# The calibrated limit flags at most BAND * alpha of the core, at least alpha / BAND of all rows.
BAND = 2.0
# The training quantiles that define the core (step 1).
QUANTILE_LEVELS = (0.5, 0.75, 0.9)
# Normal quantiles: (log q75 - log q50) / _Z75 is a standard deviation for log-normal scores.
_Z75 = 0.6744897501960817
_Z90 = 1.2815515655446004


def order_statistic_positions(n: int, levels):
    """For ``n`` scores, the 0-based order statistics behind each level (numpy's default
    "linear" quantile): ``(lo, hi, weight)`` with ``quantile = x[lo] + weight * (x[hi] -
    x[lo])``, ``x`` sorted. The out-of-core path computes ``x[lo]`` and ``x[hi]`` exactly
    (two passes) and gets numpy's numbers."""
    if n < 1:
        raise ValueError(f"need at least one score; got n = {n}")
    lv = np.asarray(levels, dtype=np.float64)
    if np.any((lv < 0) | (lv > 1)):
        raise ValueError(f"levels must lie in [0, 1]; got {lv.tolist()}")
    h = (n - 1) * lv
    lo = np.floor(h).astype(np.int64)
    hi = np.minimum(lo + 1, n - 1)
    return lo, hi, h - lo


def _check_alpha(alpha):
    if not (0.0 < float(alpha) < 1.0):
        raise ValueError(f"alpha must be in (0, 1); got {alpha!r}")


def core_cut(q50: float, q75: float, q90: float) -> tuple[float | None, str]:
    """Step 1: the upper end of the robust core from the training quantiles at
    QUANTILE_LEVELS; ``(cut, "")``, or ``(None, reason)`` when the quantiles cannot define a
    core (then the nominal limit stays)."""
    q50, q75, q90 = float(q50), float(q75), float(q90)
    if not all(np.isfinite((q50, q75, q90))) or not q50 <= q75 <= q90:
        raise ValueError(f"the quantiles must be finite and non-decreasing; got q50 = {q50}, "
                         f"q75 = {q75}, q90 = {q90}")
    if not q50 > 0.0:
        return None, ("at least half of the training scores are zero: the data fit the model "
                      "exactly there, and the limits keep their nominal values")
    # The larger of the spreads from the 75 % and the 90 % quantiles: discrete or heavy-tailed
    # scores (many ties near the median, a long upper tail) have a small q75 spread that left a
    # tenth of the inliers outside the core, and every one of them flagged (mammography 5 %).
    # The q90 spread counts at most TAIL_WIDENING times the q75 one: with a tenth of the rows
    # gross outliers q90 lies among them, and an unbounded spread took them into the core.
    s75 = (math.log(q75) - math.log(q50)) / _Z75
    s90 = (math.log(q90) - math.log(q50)) / _Z90
    spread = max(s75, min(s90, TAIL_WIDENING * s75)) if s75 > 0.0 else s90
    if not spread > 0.0:
        return None, ("the training scores take too few distinct values for a robust spread "
                      "(their 75 % and 90 % quantiles equal the median)")
    log_cut = math.log(q50) + CORE_SPREADS * spread
    # (scores near float64's largest value: a cut past it holds every score)
    return (math.exp(log_cut) if log_cut < _LOG_MAX else math.inf), ""


def bound_levels(core_share: float, alpha: float) -> tuple[float, float]:
    """Step 2: the levels of the training quantiles that bound the limit: ``low`` at
    ``core_share * (1 - BAND * alpha)``, ``high`` at ``core_share * (1 - alpha / BAND)``."""
    _check_alpha(alpha)
    f = float(core_share)
    if not 0.0 < f <= 1.0:
        raise ValueError(f"core_share must be in (0, 1]; got {core_share!r}")
    return f * max(0.0, 1.0 - BAND * alpha), f * (1.0 - alpha / BAND)


@dataclass(frozen=True)
class Calibration:
    """What the calibration decided, for the run summary and the method pages' wording.

    limit : the limit to use.
    nominal : the nominal (Gaussian) limit it started from.
    low, high : the bounds (nan when not calibrated).
    core_share : share of the training scores inside the core (nan when not calibrated).
    action : "kept" (nominal within the bounds), "raised" (to ``low``), "lowered" (to
        ``high``) or "uncalibrated" (``reason`` says why).
    """

    limit: float
    nominal: float
    low: float
    high: float
    core_share: float
    action: str
    reason: str = ""


def uncalibrated(nominal: float, reason: str) -> Calibration:
    """The record of a nominal limit left as it is (``reason``: why)."""
    nan = float("nan")
    return Calibration(float(nominal), float(nominal), nan, nan, nan, "uncalibrated", reason)


def calibrated_limit(nominal: float, alpha: float, *, low: float, high: float,
                     core_share: float) -> Calibration:
    """Step 3: the nominal limit clipped to [low, high] (the training quantiles at the levels
    of :func:`bound_levels`)."""
    _check_alpha(alpha)
    nominal, low, high = float(nominal), float(low), float(high)
    if not (np.isfinite(low) and np.isfinite(high) and low <= high):
        # low lies inside the core, high at 1 - alpha / BAND of all rows: for BAND * alpha < 1/2
        # low's level is below high's, so quantiles never give low > high
        raise ValueError(f"the bounds must be finite with low <= high; got low = {low}, high = {high}")
    if nominal < low:
        return Calibration(low, nominal, low, high, float(core_share), "raised")
    if nominal > high:
        return Calibration(high, nominal, low, high, float(core_share), "lowered")
    return Calibration(nominal, nominal, low, high, float(core_share), "kept")


def calibrate(kth, count_le, n: int, nominal: float, alpha: float) -> Calibration:
    """The three steps from order statistics: ``kth(ks)`` gives the exact ks-th smallest of the
    ``n`` training scores (0-based), ``count_le(cut)`` how many are at most ``cut``. In memory
    np.partition and a comparison give them; out of core two passes over the stored scores and
    one count, with the same numbers."""
    _check_alpha(alpha)
    if n < 1:
        raise ValueError("scores must not be empty")
    if BAND * alpha >= 0.5:
        return uncalibrated(nominal, f"alpha = {alpha:g} is too large for bounds from the "
                                     f"training scores (they need {BAND:g} x alpha < 1/2)")

    def quantiles(levels):
        lo, hi, w = order_statistic_positions(n, levels)
        v = np.asarray(kth(np.concatenate([lo, hi])), dtype=np.float64)
        a, b = v[:lo.size], v[lo.size:]
        return a + w * (b - a)

    q = quantiles(QUANTILE_LEVELS)
    if not np.all(np.isfinite(q)):
        raise ValueError("the training scores must be finite")
    cut, why = core_cut(*q)
    if cut is None:
        return uncalibrated(nominal, why)
    f = float(count_le(cut)) / n
    low, high = quantiles(bound_levels(f, alpha))
    return calibrated_limit(nominal, alpha, low=low, high=high, core_share=f)


def calibrate_scores(scores, nominal: float, alpha: float) -> Calibration:
    """The three steps on training scores held in memory."""
    s = np.asarray(scores, dtype=np.float64).ravel()
    if s.size and not np.all(np.isfinite(s)):
        raise ValueError("the training scores must be finite")
    return calibrate(lambda ks: np.partition(s, np.unique(ks))[ks], lambda cut: np.count_nonzero(s <= cut),
                     s.size, nominal, alpha)


def rate_limit(scores, alpha: float) -> Calibration:
    """A limit for scores that have no nominal one (PCP's sparse-part norms), at false-alarm
    rate ``alpha``: the training quantile that leaves ``alpha`` of the robust core above it
    (step 2's ``low`` with a band of 1), bounded by step 2's ``high`` (at least ``alpha /
    BAND`` of all rows flagged). Without a core (most scores zero, or too few distinct values)
    the quantile at ``1 - alpha`` of all scores."""
    s = np.asarray(scores, dtype=np.float64).ravel()
    _check_alpha(alpha)
    if s.size == 0 or not np.all(np.isfinite(s)):
        raise ValueError("the training scores must be finite and not empty")
    cut, why = core_cut(*np.quantile(s, QUANTILE_LEVELS)) if BAND * alpha < 0.5 else (None, "alpha too large")
    if cut is None:
        q = float(np.quantile(s, 1.0 - alpha))
        return uncalibrated(q, why)
    f = float(np.count_nonzero(s <= cut)) / s.size
    target, high = np.quantile(s, [f * (1.0 - alpha), 1.0 - alpha / BAND])
    low = float(np.quantile(s, bound_levels(f, alpha)[0]))
    return calibrated_limit(min(float(target), float(high)), alpha, low=min(low, float(high)),
                            high=float(high), core_share=f)


# -- is the flag rate what the limit says? --------------------------------------------------------

def believed_clean(scores) -> np.ndarray:
    """Without known outliers, the samples believed clean: those inside the robust core of the
    training scores (:func:`core_cut`). All samples when the core cannot be defined."""
    s = np.asarray(scores, dtype=np.float64).ravel()
    cut, _ = core_cut(*np.quantile(s, QUANTILE_LEVELS))
    return np.ones(s.size, dtype=bool) if cut is None else s <= cut


def _kl(p, a):
    """Kullback-Leibler divergence of Bernoulli(p) from Bernoulli(a), 0 < a < 1."""
    out = 0.0
    if p > 0.0:
        out += p * math.log(p / a)
    if p < 1.0:
        out += (1.0 - p) * math.log((1.0 - p) / (1.0 - a))
    return out


def _improbable(k, m, alpha, level=0.01):
    """Whether k flags of m clean samples are improbable at rate alpha on the side they lie:
    the Chernoff bound exp(-m KL(k/m, alpha)) on that binomial tail is below ``level`` (a
    bound, so a warning is never a chance fluctuation; k = 0 gives (1 - alpha)^m exactly)."""
    return math.exp(-m * _kl(k / m, alpha)) < level


# A flag rate this many times away from alpha among clean samples is reported.
WARN_FACTOR = 3.0


def flag_rate_warning(flagged, alpha: float, *, known_outliers=None, scores=None,
                      method: str = "the limits", factor: float = WARN_FACTOR) -> str | None:
    """A warning (or None) when the share flagged among samples believed clean is far from
    ``alpha``: above ``factor * alpha``, or below ``alpha / factor`` (zero included) while known
    outliers exist, and far enough that chance cannot explain it (:func:`_improbable`).

    Parameters
    ----------
    flagged : bool (n,), the flags (e.g. ``predict(X) == -1``).
    alpha : the stated false-alarm rate of the flags.
    known_outliers : bool (n,) or None. When given, the samples believed clean are the known
        inliers. Otherwise ``scores`` (the outlier scores, larger = more abnormal) define them:
        the robust core (:func:`believed_clean`); only a share too HIGH is then reported, since
        the core leaves out the inliers' own tail.
    method : how the message names the flags' source (e.g. "PCA's SPE/T² limits").
    """
    _check_alpha(alpha)
    fl = np.asarray(flagged, dtype=bool).ravel()
    if known_outliers is not None:
        out = np.asarray(known_outliers, dtype=bool).ravel()
        if out.shape != fl.shape:
            raise ValueError(f"known_outliers has {out.size} samples, flagged has {fl.size}")
        clean, what = ~out, "known inliers"
    elif scores is not None:
        s = np.asarray(scores, dtype=np.float64).ravel()
        if s.shape != fl.shape:
            raise ValueError(f"scores has {s.size} samples, flagged has {fl.size}")
        out = None
        clean, what = believed_clean(s), "samples believed clean (the bulk of the scores)"
    else:
        raise ValueError("give known_outliers or scores: the samples believed clean come from one of them")
    m = int(clean.sum())
    if m == 0:
        return None
    k = int(fl[clean].sum())
    share = k / m
    caught = ""
    if out is not None and out.any():
        caught = f"; known outliers caught: {int(fl[out].sum()):,} of {int(out.sum()):,}"
    if share > factor * alpha and _improbable(k, m, alpha):
        return (f"{method} flag {100 * share:.1f} % of the {what} ({k:,} of {m:,}), more than "
                f"{factor:g}x the stated alpha = {100 * alpha:g} %{caught}. The scores are not "
                f"distributed as the limits assume; read the flags as a ranking, or set "
                f"contamination to the share you expect")
    if out is not None and out.any() and share < alpha / factor and _improbable(k, m, alpha):
        lead = "none" if k == 0 else f"{100 * share:.2f} %"
        return (f"{method} flag {lead} of the {what} ({k:,} of {m:,}), far below the stated "
                f"alpha = {100 * alpha:g} %{caught}. The limits are wider than stated; lower "
                f"them with contamination set to the share you expect")
    return None
