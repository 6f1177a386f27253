"""Per-feature scaling applied inside an estimator (its ``scale`` parameter).

With ``scale`` set, an estimator fits on ``(X - scale_center_) / scale_`` and every later method
(transform, scores, limits) scales its input the same way, so all of them speak one set of
units: the scaled one. ``inverse_transform`` returns original units.

* ``"none"``: the data as they are (``scale_center_`` = 0, ``scale_`` = 1; no copy is made).
* ``"standard"``: mean and standard deviation (as scikit-learn's ``StandardScaler``).
* ``"robust"``: median and MAD x 1.4826 (consistent for the normal, and not moved by a minority
  of outliers); where the MAD is 0 (more than half of a column equal) the IQR / 1.349, then the
  standard deviation.
* ``"auto"``: ``"none"`` for frames (images or a video) and for data whose columns share one
  range, else ``"standard"`` when the columns are in different units and ``"none"`` when they
  already share one (:func:`auto_scaling` and :func:`mixed_units`, the one statement of the
  rule, which the window and the command line use too). Frames are data that say so: an object with a non-None
  ``image_shape`` (a :class:`~robustcore.datasets.Dataset` of images or video, or an array
  subclass carrying one) passed to ``fit``. One range is every value in [0, 1], or every value
  a whole number in [0, 255] (8-bit pixels): the ranges pixels come in, where a static pixel
  beside a moving one has a tenth of its spread without being in other units. Otherwise
  "different units" means the largest standard deviation of a non-constant
  column exceeds the median one more than :data:`AUTO_SPREAD_RATIO` times. Pixels, counts of one
  kind and tables already standardised share a unit (ratios 1.3-1.4 on the USPS and MNIST
  digits, 1.0 on ODDS cardio, 7 on the escalator video); a table of mixed measurements does not
  (10.6 on ODDS shuttle, and far beyond on tables in random units). Why not always
  standardise: it inflates near-constant columns (image borders) to unit variance, which cost
  PCP and Coherence Pursuit 0.03-0.05 of ROC-AUC on the digit tables and changes what PCP
  separates in a video; why not never: PCP scored ROC-AUC 0.04 on ODDS shuttle in random units,
  and every subspace follows the columns with the largest numbers
  (benchmarks/results_outliers.md). The fitted ``scaling_`` records what "auto" chose.

A column with no spread at all gets scale 1 (never a division by zero, never NaN).
"""
from __future__ import annotations

import numpy as np
from sklearn.utils.validation import check_is_fitted

from ._mad import MAD_NORMAL
from ._params import SCALES, scale_param  # noqa: F401  (declared with the other parameters)
from ._passes import is_lazy
from ._validation import MAX_ABS, validate_X

__all__ = ["SCALES", "AUTO_SPREAD_RATIO", "scale_param", "fit_scaling", "resolve_scaling", "mixed_units",
           "auto_scaling", "one_range", "frames_input",
           "varies", "pow2_factor", "apply_scaling", "ScaledInput", "robust_scale", "scaling_fields"]

# "auto" standardises when the non-constant columns' standard deviations span more than this
# factor (largest / median): an order of magnitude means different units.
AUTO_SPREAD_RATIO = 10.0


def max_abs(X) -> float:
    """The largest |value| of a non-empty X (two reductions without the |X| temporary: 5x
    faster than np.abs(X).max() on 33 MB)."""
    return max(float(X.max()), -float(X.min()))


def pow2_factor(X, top=None) -> float:
    """A power of two bringing the largest |value| near 1 when it is extreme (exact in floating
    point), so squares neither overflow nor underflow; 1.0 otherwise. ``top``: max_abs(X) if
    the caller has it."""
    if X.size == 0:
        return 1.0
    top = max_abs(X) if top is None else top
    if top == 0.0 or 1.0 / MAX_ABS <= top <= MAX_ABS:
        return 1.0
    return float(np.ldexp(1.0, _pow2_exponent(np.log2(top))))


def _pow2_exponent(log2_top):
    """The exponent e with 2**e x top near 1, kept within float64's normal range: a subnormal
    top (below 2**-1022, e.g. 1e-310) would ask for 2**1030, which is infinity; 2**1023 still
    brings it to about 2**-7, where squares are ordinary numbers."""
    return np.clip(-np.round(log2_top), -1022, 1023).astype(np.int64)


def column_pow2_factors(X) -> np.ndarray:
    """Per column, a power of two bringing the column's largest |value| near 1 when it is
    extreme (1.0 otherwise): one factor for the whole table would let a column of ordinary
    values beside one of 1e200 underflow in its squares and look constant."""
    if X.size == 0:
        return np.ones(X.shape[1])
    top = np.maximum(X.max(axis=0), -X.min(axis=0))
    with np.errstate(divide="ignore"):
        f = np.ldexp(1.0, _pow2_exponent(np.log2(np.where(top > 0, top, 1.0))))
    return np.where((top == 0.0) | ((top >= 1.0 / MAX_ABS) & (top <= MAX_ABS)), 1.0, f)


def column_moments(X, block: int = 1 << 16):
    """Means and standard deviations (ddof 0) of the columns of a dense ``X`` (n, d), in one
    pass over blocks of rows merged by Chan, Golub & LeVeque's update: no n x d temporary,
    which ``X.std(axis=0)`` makes."""
    n, d = X.shape
    rows = max(1, block // max(d, 1))
    if n <= rows:
        mean = X.mean(axis=0)
        return mean, X.std(axis=0)
    # Values are taken relative to the first row, so block means of a column far from zero
    # (1e6 +- 1e-3) keep their digits (without it: 1e-9 relative error of the spread).
    shift = np.array(X[0], dtype=np.float64)
    mean = np.zeros(d)
    m2 = np.zeros(d)
    seen = 0
    buf = np.empty((rows, d))
    for i in range(0, n, rows):
        blk = X[i:i + rows]
        b = blk.shape[0]
        dev = np.subtract(blk, shift, out=buf[:b])
        bmean = dev.mean(axis=0)
        dev -= bmean
        delta = bmean - mean
        total = seen + b
        mean += delta * (b / total)
        m2 += np.einsum("ij,ij->j", dev, dev) + delta * delta * (seen * b / total)
        seen = total
    return shift + mean, np.sqrt(m2 / n)


def varies(spread, center):
    """Which columns (d,) vary: spread above 1e-12 of the centre's magnitude (below it, a
    spread is the rounding noise of a constant column)."""
    return spread > 1e-12 * np.maximum(np.abs(center), np.finfo(float).tiny)


def mixed_units(spread, mean) -> bool:
    """Whether columns with standard deviations ``spread`` and means ``mean`` (d,) are in mixed
    units: the largest spread of a non-constant column exceeds the median one more than
    AUTO_SPREAD_RATIO times (what "auto" standardises)."""
    spread = np.asarray(spread, dtype=np.float64)
    live = spread[varies(spread, mean)]
    # Divided rather than multiplied: spreads near float64's largest value must not overflow.
    return bool(live.size and live.max() / AUTO_SPREAD_RATIO > np.median(live))


# The ranges pixel values come in (module doc): (low, high, whole numbers only).
PIXEL_RANGES = ((0.0, 1.0, False), (0.0, 255.0, True))


def one_range(X) -> bool:
    """Whether every value of ``X`` (dense or sparse, non-empty) lies in one of the pixel ranges
    :data:`PIXEL_RANGES` (module doc, "auto")."""
    lo = _minimum_unless_below(X, min(low for low, _, _ in PIXEL_RANGES))
    if lo is None:
        return False        # (below every range, or NaN: no sweep for the maximum)
    hi = float(X.max())
    for low, high, whole in PIXEL_RANGES:
        if low <= lo and hi <= high:
            if not whole or _all_whole(X.data if hasattr(X, "tocsr") else X):
                return True
    return False


# Rows of a dense table read per step while looking for a value below every pixel range.
_RANGE_STEP_ENTRIES = 262_144


def _minimum_unless_below(X, floor: float):
    """The smallest value of ``X``, or None as soon as a value below ``floor`` (or a NaN) is
    seen. A dense table is read in steps of rows: most tables that are not pixels have a
    negative value in their first rows, and the whole table's minimum was a sweep of it (48 ms
    of a 1M x 50 Coherence Pursuit fit's 1.6 s). Sparse input: X.min() (its implicit zeros too)."""
    if hasattr(X, "tocsr") or getattr(X, "ndim", 0) != 2:
        lo = float(X.min())
        return lo if lo >= floor else None
    step = max(1, _RANGE_STEP_ENTRIES // max(X.shape[1], 1))
    lo = np.inf
    for s in range(0, X.shape[0], step):
        m = float(X[s:s + step].min())
        if not m >= floor:
            return None
        lo = min(lo, m)
    return lo


def _all_whole(X) -> bool:
    """Whether every value of ``X`` is a whole number, a dense table read in steps of rows that
    stops at the first step holding a fraction (the whole table's np.mod made two n x d
    temporaries: 28 ms at 10,000 x 200 for a table of fractions within 0..255)."""
    if getattr(X, "ndim", 0) != 2:
        return bool(np.all(np.mod(X, 1.0) == 0.0))
    step = max(1, _RANGE_STEP_ENTRIES // max(X.shape[1], 1))
    return all(bool(np.all(np.mod(X[s:s + step], 1.0) == 0.0)) for s in range(0, X.shape[0], step))


def auto_scaling(how: str, X=None, *, frames: bool = False) -> str:
    """The first half of "auto" (module doc): "none" for ``frames`` (image or video data) or
    when the values of ``X`` (in memory; None: not looked at) lie in one pixel range; ``how``
    unchanged otherwise (for "auto", the mixed-units test decides: :func:`resolve_scaling`, or
    the out-of-core scan from its column moments)."""
    if how != "auto":
        return how
    if frames or (X is not None and not hasattr(X, "dask") and getattr(X, "size", 0) > 0
                  and one_range(X)):
        return "none"
    return how


def frames_input(X, out_of_core: bool = False):
    """``(X, frames)``: the data to fit and whether they are frames (images or a video: module
    doc). A :class:`~robustcore.datasets.Dataset` gives its dense X; an array carrying an
    ``image_shape`` attribute is used as it is, and so is lazy input when the caller runs
    ``out_of_core`` (loading it would fit in memory and keep every per-row result there,
    whatever the memory budget)."""
    frames = getattr(X, "image_shape", None) is not None
    if out_of_core and is_lazy(X):
        return X, frames
    if hasattr(X, "image_shape") and hasattr(X, "dense") and not hasattr(X, "shape"):
        X = X.dense()
    return X, frames


def resolve_scaling(X, how: str, frames: bool = False) -> str:
    """The scaling ``how`` means for ``X``: "auto" becomes "standard" or "none" (module doc);
    ``frames``: the data are images or a video."""
    how = auto_scaling(how, X, frames=frames)
    if how != "auto":
        return how
    return "standard" if _mixed(X) else "none"


def _mixed(X) -> bool:
    if isinstance(X, np.ndarray):
        mean, spread = _decision_moments(X)
        f = 1.0
    else:
        f = column_pow2_factors(X)
        Xf = X * f if np.any(f != 1.0) else X
        mean, spread = Xf.mean(axis=0), Xf.std(axis=0)
    with np.errstate(over="ignore"):
        return mixed_units(spread / f, mean / f)


def _decision_moments(X, block: int = 1 << 16):
    """The columns' means and spreads of a dense X as the mixed-units test takes them: those of
    X * column_pow2_factors(X), divided back. The factor is 1 for a column whose largest |value|
    (top) is within [1 / MAX_ABS, MAX_ABS], so the moments of X itself are those numbers for
    every column but the ones the moments cannot clear of an extreme top: a top below the range
    bounds |mean| and spread from above, and one above it bounds sqrt(n (spread² + mean²)) (the
    root of the column's sum of squares) from below, or overflows (non-finite moments). Only
    those columns' extremes are read, and when one has a factor the rescaled table's moments are
    taken as before (the extremes of every column took two more sweeps of X: 4 of 11 ms at
    10,000 x 200)."""
    n, d = X.shape
    with np.errstate(over="ignore", invalid="ignore"):
        mean, spread = column_moments(X, block)
        size = np.sqrt(n) * np.hypot(spread, mean)
        redo = ~(size < 0.5 * MAX_ABS) | ((np.abs(mean) < 2.0 / MAX_ABS) & (spread < 2.0 / MAX_ABS))
    if redo.any():
        f = np.ones(d)
        f[redo] = column_pow2_factors(X[:, redo])
        if np.any(f != 1.0):
            with np.errstate(over="ignore"):
                mean, spread = column_moments(X * f, block)
                return mean / f, spread / f
    return mean, spread


def fit_scaling(X, how: str):
    """``(center, scale)`` arrays (d,) for scaling ``X`` (n, d) by ``how`` (see module doc)."""
    n, d = X.shape
    how = resolve_scaling(X, how)
    if how == "none":
        return np.zeros(d), np.ones(d)
    f = column_pow2_factors(X)
    Xf = X * f if np.any(f != 1.0) else X
    if how == "standard":
        center, scale = column_moments(Xf) if isinstance(Xf, np.ndarray) else (Xf.mean(axis=0), Xf.std(axis=0))
    elif how == "robust":
        center = np.median(Xf, axis=0)
        scale = robust_scale(np.median(np.abs(Xf - center), axis=0),
                             lambda flat: np.subtract(*np.percentile(Xf[:, flat], [75, 25], axis=0)),
                             lambda flat: Xf[:, flat].std(axis=0))
    else:
        raise ValueError(f"scale must be one of {', '.join(SCALES)}; got {how!r}")
    scale = np.where(varies(scale, center), scale, 1.0 * f)
    return center / f, scale / f


def robust_scale(mad, iqr, std) -> np.ndarray:
    """The spreads of "robust" scaling (module doc) from the columns' MAD (d,), whoever found it
    (numpy in memory, exact order statistics out of core): 1.4826 MAD; where that is 0, the
    interquartile range / 1.349 (``iqr(flat)`` gives q75 - q25 of the columns ``flat``); where
    that is 0 too, the standard deviation (``std(flat)``)."""
    scale = MAD_NORMAL * np.asarray(mad, dtype=np.float64)
    flat = scale <= 0
    if flat.any():
        scale[flat] = iqr(flat) / 1.3489795003921634
        flat = scale <= 0
        if flat.any():
            scale[flat] = std(flat)
    return scale


def scaling_fields(how: str, center, spread) -> dict:
    """The fitted ``scale_center_``, ``scale_`` and ``scaling_`` of ``how`` ("none", "standard"
    or "robust", already resolved) from the columns' centres and spreads (true units): a column
    with no spread keeps scale 1."""
    d = np.asarray(center).shape[0]
    if how == "none":
        return {"scale_center_": np.zeros(d), "scale_": np.ones(d), "scaling_": "none"}
    center = np.asarray(center, dtype=np.float64)
    return {"scale_center_": center, "scale_": np.where(varies(spread, center), spread, 1.0),
            "scaling_": how}


class ScaledInput:
    """Mixin for estimators with a ``scale`` parameter (fitted ``scale_center_``, ``scale_`` and
    ``scaling_``, the scaling used: "auto" resolved).

    ``_fit_scaled(X, how)`` (in fit) returns the scaled training data and the two fitted
    arrays; ``_input(X)`` (in every method after fit) checks the fit and the width, then scales;
    ``_unscale(Z)`` maps scaled rows back to original units.
    """

    @staticmethod
    def _fit_scaled(X, how, frames=False):
        used = resolve_scaling(X, how, frames)
        center, scale = fit_scaling(X, used)
        return apply_scaling(X, center, scale), {"scale_center_": center, "scale_": scale, "scaling_": used}

    def _scaled(self, X):
        return apply_scaling(X, self.scale_center_, self.scale_)

    def _input(self, X):
        check_is_fitted(self)
        return self._scaled(validate_X(self, X, reset=False))

    def _unscale(self, Z):
        if _identity(self.scale_center_, self.scale_):
            return Z
        return Z * self.scale_ + self.scale_center_


def _identity(center, scale) -> bool:
    return not center.any() and bool(np.all(scale == 1.0))


def apply_scaling(X, center, scale):
    """``(X - center) / scale`` (X itself, no copy, for the identity)."""
    if _identity(center, scale):
        return X
    return (X - center) / scale
