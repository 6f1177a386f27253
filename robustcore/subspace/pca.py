"""Principal component analysis: the non-robust baseline every robust method is compared with."""
from __future__ import annotations

import functools

import numpy as np

from .._base import Estimator, fit_protocol
from .._outlier import LIMIT_ALPHA, OutlierScores
from .._params import check_shape
from .._row_stats import RFactor, symmetric
from .._scaling import varies
from .._validation import OVERFLOW_FIX, check_finite, check_magnitude
from ..linalg import GRAM_RCOND, fix_signs
from ..rank import rank_cap, scree_elbow
from ._base import SubspaceModel
from ._scan import constant_error, input_rows, load_rows, scan
from ._pca_params import PARAMS, rank_hint

__all__ = ["PCA", "fix_signs", "rank_hint", "OVERFLOW_FIX", "principal_axes"]



# From this many rows per feature on, the principal axes come from the scatter matrix (one
# pass, a d x d eigh), as scikit-learn's "covariance_eigh" solver does for tall data; below, the
# rows are needed in memory for an SVD.
_COVARIANCE_ROWS = 10


def principal_axes(rows, how, center, rep, method="PCA"):
    """The tall route of a PCA fit, in passes over ``rows`` (in memory or out of core).

    One pass gives the scatter matrix of the rows, the checks and the scaling (``_scan``); the
    scatter matrix of the SCALED rows follows without another pass ((X - c) / s has scatter
    M / (s sᵀ)), and its eigendecomposition the axes. When the spectrum spans more than
    1 / GRAM_RCOND, squaring cost the small eigenvalues their precision: one more pass then makes
    the R factor of a QR of the scaled, centred rows (TSQR; blocks merged by QR of stacked
    factors) and its SVD gives them to the table's own precision, as LAPACK's SVD of the rows
    does in memory.

    Returns ``(scan, mean, variances (d,) descending, right singular vectors (rows))``.
    """
    n, d = rows.n, rows.d
    sc = scan(rows, how, method=method, scatter=True, progress=rep.span(0.0, 0.8))
    mom = sc.mom
    # the scatter of the scaled rows, in units of 4^ez (mom.e: the columns' powers of two)
    if sc.identity:
        m, M, ez = mom.common()
    else:
        s = np.ldexp(sc.scale, -mom.e)       # (a division at a time: s s^T can underflow)
        M, ez = symmetric(mom.M2) / s[:, None] / s[None, :], 0
        m = sc.scaled_mean()
    # a constant column's scatter is rounding: exactly none
    flat = ~varies(mom.std(), mom.true_mean())
    M[flat, :] = 0.0
    M[:, flat] = 0.0
    if center:
        mean = m if ez == 0 else np.ldexp(m, ez)
    else:
        # the scatter about the origin: a sum of two positive parts, nothing cancels
        M = M + n * np.outer(m, m)
        mean = np.zeros(d)
    w, V = np.linalg.eigh(M)
    w, V = np.maximum(w[::-1], 0.0), V[:, ::-1]
    if not w[0] > 0:
        raise constant_error(method, n, center)
    # (the constant columns' eigenvalues are exact zeros, which no precision would change)
    if w[d - 1 - int(flat.sum())] >= GRAM_RCOND * w[0]:
        return sc, mean, np.ldexp(w / max(n - 1, 1), 2 * ez), V.T
    # (R factor of the scaled rows about the centre used; true units)
    R = rows.reduce(functools.partial(RFactor, d, sc.center, sc.scale, mean), progress=rep.span(0.8, 1.0),
                    message="TSQR").R
    _, sv, vt = np.linalg.svd(R, full_matrices=False)
    return sc, mean, sv ** 2 / max(n - 1, 1), vt


class PCA(SubspaceModel, OutlierScores, Estimator):
    """Principal component analysis by a thin SVD of the centred data.

    Attributes
    ----------
    components_ : ndarray of shape (r, d)
        Orthonormal rows, sign-fixed (largest absolute loading positive).
    mean_ : ndarray of shape (d,)
        The column means of the scaled data (zeros when ``center=False``).
    explained_variance_ : ndarray of shape (r,)
        Variances along the components (divided by n - 1).
    explained_variance_ratio_ : ndarray of shape (r,)
        Share of the total variance.
    singular_values_ : ndarray of shape (r,)
        Singular values of the scaled, centred data along the components.
    all_variances_ : ndarray of shape (min(n, d),)
        Every eigenvalue of the sample covariance, descending (what residual control limits need).
    n_components_ : int
        The rank used (``n_components`` or the elbow).
    variances_ : ndarray of shape (r,)
        Training variance along each component (T²'s denominators).
    spe_limit_, t2_limit_ : float
        The control limits at alpha = 0.01 behind the outlier score (as ResidualScorer's:
        Jackson-Mudholkar and F, bounded by the training scores' own quantiles).
    residual_eigenvalues_ : ndarray
        The discarded eigenvalues, all of them (what the SPE limit is made of).
    thetas_ : ndarray of shape (3,)
        Sums of the residual eigenvalues to the powers 1, 2 and 3.
    spe_limit_method_ : str
        "jackson-mudholkar", or Box's approximation where that formula is undefined.
    limit_calibration_ : dict
        What the calibration on the training scores did to both limits ("action", "factor",
        "reason"; robustcore.limits.control_limits).
    scale_center_, scale_ : ndarray of shape (d,)
        The centre subtracted from and the spread divided into each column.
    scaling_ : str
        The scaling used ("none", "standard" or "robust"; "auto" resolved).
    offset_ : float
        ``score_samples - offset_ = decision_function`` (robustcore._outlier).
    n_features_in_, n_samples_fit_ : int
        Features and training samples seen by ``fit``.
    feature_names_in_ : ndarray of str
        Column names, when X had string column names.

    Notes
    -----
    **Outlier score.** ``max(SPE / spe_limit_, T² / t2_limit_)`` (robustcore.subspace._base):
    how far off the subspace and how far along it, each in units of its limit.
    ``score_samples`` is minus that.
    """

    _params = PARAMS  # declared in _pca_params.py (read by the registry without this module)

    def __init__(self, n_components: int | None = None, *, center: bool = True, scale: str = "auto",
                 contamination="auto"):
        self.n_components = n_components
        self.center = center
        self.scale = scale
        self.contamination = contamination

    @fit_protocol
    def fit(self, X, y=None, progress=None, *, p):
        """Fit on X (n_samples, n_features), in memory or lazy (module doc of
        robustcore.subspace._base). Returns self."""
        rows = input_rows(self, X, reset=True, min_samples=2)
        return self._fit_rows(rows, p, progress)

    def _fit_rows(self, rows, p, rep, method="PCA", calibrate=True):
        """The fit on validated ``rows`` (robustcore._passes.Rows, values not yet checked)
        with the validated parameters ``p``. ``method`` names the estimator in error messages
        (ResidualScorer fits through its inner PCA, whose limits it does not use: it passes
        ``calibrate=False``, which saves the calibration's pass over the rows)."""
        n, d = rows.n, rows.d
        rep(0.0, "centring")
        if p["n_components"] is not None:
            r = check_shape(PARAMS, "n_components", p, n, d)
        if n >= _COVARIANCE_ROWS * d:
            sc, mean, var, vt = principal_axes(rows, p["scale"], p["center"], rep.span(0.0, 0.9), method)
            scaling = sc.scaling
        else:
            X = load_rows(rows, method, "needs the rows of a table with fewer than 10 rows per feature")
            scaling, mean, var, vt = _dense_axes(X, p, method, rep)
        if p["n_components"] is None:
            r = scree_elbow(var, rank_cap(n, d))
        total = var.sum()
        rep(1.0, "done")
        comps = fix_signs(vt[:r])
        self._set_fitted(
            **scaling,
            components_=comps,
            mean_=mean,
            singular_values_=np.sqrt(var[:r] * max(n - 1, 1)),
            explained_variance_=var[:r].copy(),
            explained_variance_ratio_=(var[:r] / total) if total > 0 else np.zeros(r),
            all_variances_=var,
            n_components_=r,
            n_samples_fit_=n,
            # all_variances_ holds min(n, d) eigenvalues; the rest are zero
            **self._limit_fields(n, var[:r], var[r:], alpha=LIMIT_ALPHA, calibrate=calibrate,
                                 training=self._training_provider(rows, scaling, comps, mean)),
        )
        self._set_fitted(**self._training_offset(p["contamination"], rows))
        self._keep_rows(rows=rows)
        return self


def _dense_axes(X, p, method, rep):
    """The route for data with fewer than 10 rows per feature (in memory): an SVD of the scaled,
    centred rows. Returns (scaling fields, mean, variances (min(n, d),), right singular vectors)."""
    n, d = X.shape
    check_finite(X)
    Z, scaling = PCA._fit_scaled(X, p["scale"])
    check_magnitude(Z, method=method, fix=OVERFLOW_FIX)
    mean = Z.mean(axis=0) if p["center"] else np.zeros(d)
    rep(0.1, "SVD")
    Zc = Z - mean
    # For tall data an R factor first makes the SVD d x d (same singular values and right
    # vectors, several times faster than LAPACK's SVD of the tall matrix here).
    _, s, vt = np.linalg.svd(np.linalg.qr(Zc, mode="r") if n > 2 * d else Zc, full_matrices=False)
    var = s ** 2 / max(n - 1, 1)
    if not var[0] > 0:
        raise constant_error(method, n, p["center"])
    return scaling, mean, var, vt
