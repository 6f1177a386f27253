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
   Outliers sit at the top of the scores, so the core's spread comes from their LOWER half:
   the core is every score up to ``cut = (m + CORE_SPREADS * s)^2``, with ``m`` the median
   of the square roots (the scores are squared distances) and ``s = (q50^(1/2) -
   q25^(1/2)) / 0.6745``; it holds with up to half of the rows outlying. When the caller has
   already left the gross outliers out (Coherence Pursuit's bounding rows, ``trimmed``), the
   upper half is an inlier's and more faithful to a long tail of inliers: ``cut = (m +
   CORE_SPREADS * s)^3`` on cube roots (close to normal for a chi-square-like score, Wilson
   and Hilferty), ``s = (q75^(1/3) - q50^(1/3)) / 0.6745``. One number of spreads for both.
   Gross outliers beyond the cut cannot widen the limits meant to flag them. The caller
   counts the share ``f`` of training scores up to the cut (one pass).
2. **Bounds, distribution-free** (:func:`bound_levels`). The limit may flag no more than
   ``BAND * alpha`` of the core: ``low`` is the training quantile at level
   ``f * (1 - BAND * alpha)`` (inside the core). And it may not flag less than ``alpha / BAND``
   of the core: ``high`` is the quantile at ``f * (1 - alpha / BAND)``; a limit above every
   inlier (nothing but the gross outliers flagged) comes down to the core's own tail.
3. **The limit is ``g`` clipped to [low, high]** (:func:`calibrated_limit`). Where the Gaussian
   formula agrees with the data within those bounds it is kept unchanged; where it does not,
   the nearest bound replaces it (Gaussian data keep about the textbook limits: "SPE or T²",
   each at alpha, flags up to 2 alpha of them, which the band brings to BAND * alpha). A score with no
   nominal limit (PCP's sparse-part norms, ``g = None``) gets the training quantile that leaves
   ``alpha`` of the core above it (:func:`rate_limit`). One rule for every outlier method.

:func:`calibrate_scores` runs the three steps on scores held in memory. Each result carries a
``caveat`` (:func:`rate_caveat`) when the calibration cannot promise the rate: too few rows for
it, many rows tied at the limit, or a large share of the rows beyond the core (flagged whatever
they are).

Issue 35 (benchmarks/results_outliers.md, "Flag rates"): with ``high`` at ``1 - alpha / BAND``
of ALL rows, a table with more outliers than alpha / BAND kept limits above every inlier (0 %
of the clustered synthetic inliers flagged); ``high`` is the core's own quantile since.

Why two cores (benchmarks/results_outliers.md, "Flag rates, round 2"; chosen on the 15
development tables and the six synthetic tasks, with the six check tasks and usps-1-vs-8's
recall as guards, ``python benchmarks/study_outlier_defaults.py --study calibration``): the
cube-root core of the upper quartile took in the outliers of tables with a third of them
(breastw 0 %, PCP on clustered data 0 %); the lower half's core on square roots brought the
tasks outside [alpha / 3, 3 alpha] from 3 to 2 for PCA and from 5 to 3 for PCP, at 9.5 or 10
spreads (9 and fewer: more tasks; 10.5 and more: it took the Gaussian check task's outliers in).
For Coherence Pursuit's trimmed rows it was worse (9 against 8; mammography 11 %), and the
lower core of the cube root, tried first, failed the Gaussian checks from 7 spreads on.

Why one number of spreads (benchmarks/results_outliers.md, "Flags at their stated rate, round
4"; ``--study flag-limits``): the trimmed core had kept round 2's 6 spreads. From 7 spreads of
the cube root on (7-200 scanned) it leaves one development task fewer outside for Coherence Pursuit
(mammography: 4.3 % flagged at 6 spreads, inside at 7 and more), the check tasks and
usps-1-vs-8's 42 eights unchanged; 9.5, the lower core's own number, is inside that range.
The same scan shows no number of spreads, for either core, that brings Coherence Pursuit, PCP
or ROBPCA to 2 tasks outside: the tasks each needs lie on opposite sides.

Why the rule stops here (benchmarks/results_outliers.md, "Flags, round 6"; ``--study
flag-diagnosis``): with the known outliers, every task still outside is one of three kinds. A
third of the rows outlying inside the core (the limit lies among them: only a stated
contamination helps); inliers with a tail no core that keeps outliers out can hold (ROBPCA's
MCD on binary or repeated rows, its k); rows Coherence Pursuit leaves out of its bounding rows
(a cluster off its subspace). 720 cores per method (transform, spread, spreads, band) leave
Coherence Pursuit 7, PCP 3 and ROBPCA 3 outside at best; a run with known outliers says so on
each (the flag-rate warning, or the small-table caveat).

The form of the trimmed core (benchmarks/results_outliers.md, "One calibration rule": chosen on the 15
development tables and six synthetic tasks, heavy-tailed and clustered, only; ``python
benchmarks/study_outlier_defaults.py --study calibration``): among cores of 2.5-6 spreads of
the log or cube-root score, spreads from the upper quartile, the lower one or the smaller, the
q90 widening of the last round or not, and bands of 1.5 or 2, with Coherence Pursuit's flags
still catching 40 or more of usps-1-vs-8's 50 eights and six Gaussian and two-cluster check
tasks all within [alpha / 3, 3 alpha], this one left the fewest of the 21 tasks outside that
band summed over PCA, Coherence Pursuit and PCP: 3 + 8 + 5, against 7 + 10 + 6 before. A
spread from the lower quartile kept out the outliers of tables with a third of them, but log
T² of few components has a long lower tail, and it took low-rank Gaussian data's outliers into
the core; a band of 2 let Coherence Pursuit's limit sit at 2 alpha of its core (four tasks
above 3 alpha).

Everything is a pure function of numbers: no estimator is imported, numpy only.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from ._mad import Z75 as _Z75

__all__ = ["CORE_SPREADS", "BAND", "WARN_FACTOR", "QUANTILE_LEVELS", "MIN_EXPECTED_FLAGS", "WIDE_TAIL",
           "order_statistic_positions", "core_cut", "bound_levels", "calibrated_limit", "calibrate",
           "calibrate_scores", "Calibration", "uncalibrated", "rate_caveat", "flag_rate_warning",
           "believed_clean", "rate_limit"]

_CBRT_MAX = float(np.cbrt(np.finfo(np.float64).max))
# The core ends this many robust spreads above the median: of the square-root score with the
# spread from its LOWER half for every row (PCA, SPE/T², PCP, ROBPCA; issue 35: with a third of
# the rows outlying, the upper quartile is an outlier's and the core took them in), of the
# cube-root score with the spread from its upper half for rows already trimmed of gross
# outliers (Coherence Pursuit's bounding rows).
CORE_SPREADS = 9.5
# The calibrated limit flags between alpha / BAND and BAND * alpha of the core.
BAND = 1.5
# The training quantiles that define the core (step 1).
QUANTILE_LEVELS = (0.25, 0.5, 0.75)
# Normal quantile: (q75^(1/3) - q50^(1/3)) / _Z75 is a standard deviation of normal cube roots.
# Fewer calibration rows than this many over alpha: fewer than 10 are expected above the limit,
# and chance alone moves the share flagged out of [alpha / 3, 3 alpha] (at 3 expected, 1 time
# in 5); from 10 on, about 1 in 100.
MIN_EXPECTED_FLAGS = 10
# More than this share of the calibration rows beyond the core (all flagged) is reported.
WIDE_TAIL = 0.1


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


def core_cut(q25: float, q50: float, q75: float, *, trimmed: bool = False) -> tuple[float | None, str]:
    """Step 1: the upper end of the robust core from the training quantiles at
    QUANTILE_LEVELS; ``(cut, "")``, or ``(None, reason)`` when the quantiles cannot define a
    core (then the nominal limit stays). ``trimmed``: the caller already left the gross
    outliers out of the scores (Coherence Pursuit's bounding rows)."""
    q25, q50, q75 = float(q25), float(q50), float(q75)
    if not all(np.isfinite((q25, q50, q75))) or not q25 <= q50 <= q75:
        raise ValueError(f"the quantiles must be finite and non-decreasing; got q25 = {q25}, q50 = {q50}, "
                         f"q75 = {q75}")
    if not q50 > 0.0:
        return None, ("at least half of the training scores are zero: the data fit the model "
                      "exactly there, and the limits keep their nominal values")
    if not trimmed:
        # Outliers sit above the median: the lower half of the scores is the inliers' even
        # when a third of the rows are outliers (breastw, magic.gamma), where the upper
        # quartile is an outlier's. On the square root (a distance), whose lower half is not
        # squeezed against zero as the cube root's of few components is.
        a, b = math.sqrt(q50), math.sqrt(max(q25, 0.0))
        spread = (a - b) / _Z75
        if not spread > 0.0:
            return None, ("the training scores take too few distinct values for a robust spread "
                          "(their 25 % quantile equals the median)")
        top = a + CORE_SPREADS * spread
        return (top * top if top < math.sqrt(np.finfo(np.float64).max) else math.inf), ""
    # From the upper quartile alone: with up to a quarter of the rows outlying it is still an
    # inlier's. (A spread from the lower quartile resists more outliers, but it took low-rank
    # Gaussian data's outliers into the core on the log scale; widening by the q90 spread, for
    # mammography's tail, cost more heavy-tailed tasks than it won.)
    a, b = np.cbrt(q50), np.cbrt(q75)
    spread = (b - a) / _Z75
    if not spread > 0.0:
        return None, ("the training scores take too few distinct values for a robust spread "
                      "(their 75 % quantile equals the median)")
    top = a + CORE_SPREADS * spread
    # (scores near float64's largest value: a cut past it holds every score)
    return (top ** 3 if top < _CBRT_MAX * (1.0 - 1e-12) else math.inf), ""


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
        ``high``), "quantile" (no nominal limit: the core's quantile at 1 - alpha) or
        "uncalibrated" (``reason`` says why).
    caveat : "" or why the share flagged among clean rows may be far from alpha
        (:func:`rate_caveat`).
    """

    limit: float
    nominal: float
    low: float
    high: float
    core_share: float
    action: str
    reason: str = ""
    caveat: str = ""


def uncalibrated(nominal: float, reason: str) -> Calibration:
    """The record of a nominal limit left as it is (``reason``: why; it is the caveat too)."""
    nan = float("nan")
    return Calibration(float(nominal), float(nominal), nan, nan, nan, "uncalibrated", reason, reason)


def rate_caveat(n: int, alpha: float, *, beyond: float = 0.0, tied: int = 0) -> str:
    """Why a limit set on ``n`` calibration rows cannot promise a share of about ``alpha``
    flagged among clean rows, or "": fewer than MIN_EXPECTED_FLAGS rows expected above it; more
    than WIDE_TAIL of the rows beyond the robust core (``beyond``: all flagged, outliers or a
    tail of inliers the core does not hold); or ``tied`` rows sharing the limit's value (the
    share flagged jumps by their number at it)."""
    why = []
    if n * alpha < MIN_EXPECTED_FLAGS:
        why.append(f"only {n:,} calibration rows: about {n * alpha:.1g} are expected above a limit at "
                   f"alpha = {100 * alpha:g} %, too few for the share flagged to follow alpha")
    if beyond > WIDE_TAIL:
        why.append(f"{100 * beyond:.0f} % of the calibration rows lie beyond the robust core of their "
                   f"scores and are all flagged: if they are not outliers (a long tail, a cluster "
                   f"the model does not fit), far more than alpha of the inliers are flagged")
    if tied > max(1.0, alpha * n / BAND):
        why.append(f"{tied:,} calibration rows share the limit's score (ties): the share flagged "
                   f"jumps by {100 * tied / n:.1f} % at it")
    return "; ".join(why)


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


def calibrate(kth, count_le, n: int, nominal, alpha: float, *, trimmed: bool = False,
              left_out: int = 0) -> Calibration:
    """The three steps from order statistics: ``kth(ks)`` gives the exact ks-th smallest of the
    ``n`` training scores (0-based), ``count_le(cut)`` how many are at most ``cut``. In memory
    np.partition and a comparison give them; out of core two passes over the stored scores and
    one count, with the same numbers. ``nominal`` None: a score without a nominal limit, which
    gets the core's quantile at ``1 - alpha`` (step 3). ``trimmed``: the caller left the gross
    outliers out of the ``n`` scores (:func:`core_cut`); ``left_out``: how many rows it left out,
    all flagged, which the caveat counts as beyond the core."""
    _check_alpha(alpha)
    if n < 1:
        raise ValueError("scores must not be empty")

    def quantiles(levels):
        lo, hi, w = order_statistic_positions(n, levels)
        v = np.asarray(kth(np.concatenate([lo, hi])), dtype=np.float64)
        a, b = v[:lo.size], v[lo.size:]
        return a + w * (b - a)

    def without_core(why):
        # no bounds: the nominal limit, or the quantile at 1 - alpha of every score
        return uncalibrated(float(quantiles([1.0 - alpha])[0]) if nominal is None else nominal, why)

    if BAND * alpha >= 0.5:
        return without_core(f"alpha = {alpha:g} is too large for bounds from the training scores "
                            f"(they need {BAND:g} x alpha < 1/2)")
    q = quantiles(QUANTILE_LEVELS)
    if not np.all(np.isfinite(q)):
        raise ValueError("the training scores must be finite")
    cut, why = core_cut(*q, trimmed=trimmed)
    if cut is None:
        return without_core(why)
    f = float(count_le(cut)) / n
    low, high = quantiles(bound_levels(f, alpha))
    if nominal is None:
        target = float(quantiles([f * (1.0 - alpha)])[0])
        cal = Calibration(target, float("nan"), float(low), float(high), f, "quantile")
    else:
        cal = calibrated_limit(nominal, alpha, low=low, high=high, core_share=f)
    lim = cal.limit
    below = float(np.nextafter(lim, -np.inf))
    tied = int(count_le(lim)) - int(count_le(below)) if np.isfinite(lim) else 0
    beyond = 1.0 - f * n / (n + left_out)
    caveat = rate_caveat(n + left_out, alpha, beyond=beyond, tied=tied)
    return dataclasses.replace(cal, caveat=caveat) if caveat else cal


def calibrate_scores(scores, nominal, alpha: float, **trim) -> Calibration:
    """The three steps on training scores held in memory (``nominal`` None, ``trim``
    (``trimmed``, ``left_out``): see :func:`calibrate`)."""
    s = np.asarray(scores, dtype=np.float64).ravel()
    if s.size and not np.all(np.isfinite(s)):
        raise ValueError("the training scores must be finite")
    return calibrate(lambda ks: np.partition(s, np.unique(ks))[ks], lambda cut: np.count_nonzero(s <= cut),
                     s.size, nominal, alpha, **trim)


def rate_limit(scores, alpha: float) -> Calibration:
    """A limit for scores that have no nominal one (PCP's sparse-part norms), at false-alarm
    rate ``alpha``: the same rule as every other limit (:func:`calibrate` with no nominal
    limit), i.e. the training quantile that leaves ``alpha`` of the robust core above it.
    Without a core (most scores zero, or too few distinct values) the quantile at
    ``1 - alpha`` of all scores."""
    s = np.asarray(scores, dtype=np.float64).ravel()
    if s.size == 0 or not np.all(np.isfinite(s)):
        raise ValueError("the training scores must be finite and not empty")
    return calibrate_scores(s, None, alpha)


# -- is the flag rate what the limit says? --------------------------------------------------------

def believed_clean(scores) -> np.ndarray:
    """Without known outliers, the samples believed clean: those inside the robust core of the
    training scores (:func:`core_cut` of every row). All samples when the core cannot be
    defined."""
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
    outliers exist, and far enough that chance cannot explain it (:func:`_improbable`). Without
    known outliers, also when the scores cannot promise the rate (:func:`rate_caveat`: too few
    samples, or more than WIDE_TAIL of them beyond the core).

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
    if out is None:
        # no truth to check the share against: say when the scores cannot promise it
        caveat = rate_caveat(fl.size, alpha, beyond=1.0 - clean.mean())
        if caveat:
            return f"{method} may flag far from the stated alpha = {100 * alpha:g} % of clean samples: {caveat}"
    return None
