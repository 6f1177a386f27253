"""Per-feature scaling applied inside an estimator (its ``scale`` parameter).

With ``scale`` set, an estimator fits on ``(X - scale_center_) / scale_`` and every later method
(transform, scores, limits) scales its input the same way, so all of them speak one set of
units: the scaled one. ``inverse_transform`` returns original units.

* ``"none"``: the data as they are (``scale_center_`` = 0, ``scale_`` = 1; no copy is made).
* ``"standard"``: mean and standard deviation (as scikit-learn's ``StandardScaler``).
* ``"robust"``: median and MAD x 1.4826 (consistent for the normal, and not moved by a minority
  of outliers); where the MAD is 0 (more than half of a column equal) the IQR / 1.349, then the
  standard deviation.

A column with no spread at all gets scale 1 (never a division by zero, never NaN).
"""
from __future__ import annotations

import numpy as np
from sklearn.utils.validation import check_is_fitted

from ._params import Param
from ._validation import MAX_ABS, validate_X

__all__ = ["SCALES", "scale_param", "fit_scaling", "pow2_factor", "ScaledInput"]

SCALES = ("none", "standard", "robust")


def scale_param(default: str) -> Param:
    """The ``scale`` declaration; each estimator states only its default."""
    return Param("scale", str, default, "Rescale each feature inside the method: none, standard "
                 "(mean / standard deviation) or robust (median / MAD).", choices=SCALES)


def pow2_factor(X) -> float:
    """A power of two bringing the largest |value| near 1 when it is extreme (exact in floating
    point), so squares neither overflow nor underflow; 1.0 otherwise."""
    top = float(np.abs(X).max(initial=0.0))
    if top == 0.0 or 1.0 / MAX_ABS <= top <= MAX_ABS:
        return 1.0
    return float(2.0 ** -np.round(np.log2(top)))


def fit_scaling(X, how: str):
    """``(center, scale)`` arrays (d,) for scaling ``X`` (n, d) by ``how`` (see module doc)."""
    n, d = X.shape
    if how == "none":
        return np.zeros(d), np.ones(d)
    f = pow2_factor(X)
    Xf = X * f if f != 1.0 else X
    if how == "standard":
        center = Xf.mean(axis=0)
        scale = Xf.std(axis=0)
    elif how == "robust":
        center = np.median(Xf, axis=0)
        scale = 1.482602218505602 * np.median(np.abs(Xf - center), axis=0)
        flat = scale <= 0
        if flat.any():
            q75, q25 = np.percentile(Xf[:, flat], [75, 25], axis=0)
            scale[flat] = (q75 - q25) / 1.3489795003921634
            flat = scale <= 0
            if flat.any():
                scale[flat] = Xf[:, flat].std(axis=0)
    else:
        raise ValueError(f"scale must be one of {', '.join(SCALES)}; got {how!r}")
    # rounding noise on a constant column is no spread either
    tiny = 1e-12 * np.maximum(np.abs(center), np.finfo(float).tiny)
    scale = np.where(scale > tiny, scale, 1.0 * f)
    return center / f, scale / f


class ScaledInput:
    """Mixin for estimators with a ``scale`` parameter (fitted ``scale_center_``, ``scale_``).

    ``_fit_scaled(X, how)`` (in fit) returns the scaled training data and the two fitted
    arrays; ``_input(X)`` (in every method after fit) checks the fit and the width, then scales;
    ``_unscale(Z)`` maps scaled rows back to original units.
    """

    @staticmethod
    def _fit_scaled(X, how):
        center, scale = fit_scaling(X, how)
        return _apply(X, center, scale), {"scale_center_": center, "scale_": scale}

    def _scaled(self, X):
        return _apply(X, self.scale_center_, self.scale_)

    def _input(self, X):
        check_is_fitted(self)
        return self._scaled(validate_X(self, X, reset=False))

    def _unscale(self, Z):
        if _identity(self.scale_center_, self.scale_):
            return Z
        return Z * self.scale_ + self.scale_center_


def _identity(center, scale) -> bool:
    return not center.any() and bool(np.all(scale == 1.0))


def _apply(X, center, scale):
    if _identity(center, scale):
        return X
    return (X - center) / scale
