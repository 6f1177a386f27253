"""Principal component analysis: the non-robust baseline every robust method is compared with."""
from __future__ import annotations

import numpy as np

from .._base import Estimator, fit_method
from .._outlier import CONTAMINATION, LIMIT_ALPHA, OutlierScores
from .._params import Param, check_range
from .._progress import Reporter
from .._scaling import apply_scaling, mixed_units, scale_param, varies
from .._validation import MAX_ABS, check_finite, check_magnitude, validate_X
from ..linalg import GRAM_RCOND, centred_scatter, covariance_eigh
from ..rank import rank_cap, scree_elbow
from ._base import SubspaceModel

__all__ = ["PCA", "fix_signs", "rank_hint", "OVERFLOW_FIX"]

# What to do about values whose squares overflow (see robustcore._validation.check_magnitude).
OVERFLOW_FIX = ("Pass scale='standard' or 'robust' (the estimator then rescales inside), or "
                "multiply X by a constant that brings its values near 1.")


def rank_hint(n: int, d: int) -> str:
    return f"at most min(n_samples, n_features) = {min(n, d)}; here n_samples = {n}, n_features = {d}"

# From this many rows per feature on, the principal axes come from the scatter matrix (one
# pass, a d x d eigh), as scikit-learn's "covariance_eigh" solver does for tall data.
_COVARIANCE_ROWS = 10


def fix_signs(components: np.ndarray) -> np.ndarray:
    """Flip each row so its largest-magnitude entry is positive (stable plots across runs)."""
    comps = np.array(components, dtype=np.float64, copy=True)
    if comps.size == 0:
        return comps
    idx = np.argmax(np.abs(comps), axis=1)
    signs = np.sign(comps[np.arange(comps.shape[0]), idx])
    signs[signs == 0] = 1.0
    return comps * signs[:, None]


def _scaled_scatter(X, how, center):
    """What the covariance path of a fit needs, from ONE centred scatter matrix of X.

    Returns ``(scaling, mean, G)``: the fitted scaling fields (``scale_center_``, ``scale_``,
    ``scaling_``, "auto" resolved) of the rows the PCA fits, ``Z = (X - scale_center_) /
    scale_``; Z's centre (zeros when not centring); and the lower triangle of Z's scatter
    matrix about it. Returns None when the data need the general path, which reads X for each
    check: non-finite column sums (a NaN or infinity, or sums that overflow), values whose
    squares could overflow or underflow, "robust" scaling.

    Why: the general path read 100,000 x 50 four times before the scatter matrix (finiteness,
    the magnitude guard, the column moments of "auto", the magnitude of the scaled rows), 25 ms
    of a 45 ms fit. All of it follows from the column sums and the scatter matrix's diagonal.
    """
    if how not in ("none", "standard", "auto"):
        return None
    n, d = X.shape
    # (extreme values overflow or underflow here silently: the bounds below send them on)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        m, G = centred_scatter(X)
    # A NaN or an infinity makes its column's sum non-finite, so finite sums mean finite X.
    # (Not the reverse: sums can overflow; the general path then looks at X itself.)
    if G is None:
        return None
    sq = np.diagonal(G)                                   # sum_i (x_ij - m_j)^2
    # Bounds on the largest |x|: |x_ij| <= |m_j| + sqrt(G_jj); the largest |x| of a column is
    # at least |m_j| and half its RMS deviation. Inside [1 / MAX_ABS, MAX_ABS] both magnitude
    # checks (the guard and "auto"'s power-of-two rescaling) pass without looking, and squares
    # neither overflow nor underflow. Outside (or G not finite): the general path decides.
    hi = float(np.max(np.abs(m) + np.sqrt(sq)))
    lo = max(float(np.abs(m).max()), 0.5 * float(np.sqrt(sq.max() / n)))
    if not (hi <= MAX_ABS and lo >= 1.0 / MAX_ABS and np.all(np.isfinite(G))):
        return None
    spread = np.sqrt(sq / n)                              # standard deviations (ddof 0)
    used = how if how != "auto" else ("standard" if mixed_units(spread, m) else "none")
    if used == "none":
        scaling = {"scale_center_": np.zeros(d), "scale_": np.ones(d), "scaling_": "none"}
        if not center:
            # the scatter about the origin: a sum of two positive parts, nothing cancels
            return scaling, np.zeros(d), G + n * np.outer(m, m)
        return scaling, m, G
    # "standard": Z = (X - m) / s has mean 0 and scatter G / (s s^T); a constant column keeps
    # scale 1 (as in fit_scaling)
    s = np.where(varies(spread, m), spread, 1.0)
    return ({"scale_center_": m, "scale_": s, "scaling_": "standard"}, np.zeros(d),
            G / np.outer(s, s))


class PCA(SubspaceModel, OutlierScores, Estimator):
    """Principal component analysis by a thin SVD of the centred data.

    Parameters
    ----------
    n_components : int or None, default None
        Rank r of the subspace, 1 <= r <= min(n_samples, n_features). None: the elbow of the log
        scree plot, at most half of min(n_samples, n_features) (robustcore.rank). Unlike
        scikit-learn's PCA, None does not keep every component: a model that keeps them all has
        nothing left to measure outliers with.
    center : bool, default True
        Subtract the column means before the SVD (an affine subspace); False fits a linear one.
    scale : {"none", "standard", "robust", "auto"}, default "auto"
        Per-feature scaling inside the estimator (robustcore._scaling: "auto" standardises
        tables in mixed units and leaves pixels alone); every fitted attribute and score is in
        the scaled units.
    contamination : "auto" or float in (0, 0.5], default "auto"
        Outlier rule of ``predict``: "auto" flags samples whose SPE or T² exceeds its control
        limit at alpha = 0.01 (Jackson-Mudholkar for SPE from the discarded eigenvalues, F for
        T²); a fraction c flags the share c of training samples with the largest outlier score.

    Fitted attributes
    -----------------
    components_ : (r, d) orthonormal rows, sign-fixed (largest absolute loading positive).
    mean_ : (d,) the column means of the scaled data (zeros when ``center=False``).
    explained_variance_ : (r,) variances along the components (divided by n - 1).
    explained_variance_ratio_ : (r,) share of the total variance.
    singular_values_ : (r,)
    all_variances_ : (min(n, d),) every eigenvalue of the sample covariance, descending
        (what residual control limits need).
    n_components_ : int, the rank used (``n_components`` or the elbow).
    variances_, spe_limit_, t2_limit_, residual_eigenvalues_, thetas_, spe_limit_method_ :
        the control limits at alpha = 0.01 behind the outlier score (as ResidualScorer's).
    scale_center_, scale_ : ndarray (d,)
        The centre subtracted from and the spread divided into each column.
    scaling_ : str
        The scaling used ("none", "standard" or "robust"; "auto" resolved).
    offset_ : float, ``score_samples - offset_ = decision_function`` (robustcore._outlier).
    n_features_in_, n_samples_fit_ : int; ``feature_names_in_`` when X had string column names.

    Outlier score
    -------------
    ``max(SPE / spe_limit_, T² / t2_limit_)`` (robustcore.subspace._base): how far off the
    subspace and how far along it, each in units of its limit. ``score_samples`` is minus that.
    """

    _params = (
        Param("n_components", int, None, "Number of principal components (rank of the subspace).",
              low=1, allow_none=True, none_label="elbow of the scree plot"),
        Param("center", bool, True, "Subtract the mean before fitting (affine subspace)."),
        scale_param("auto"),
        CONTAMINATION,
    )

    def __init__(self, n_components: int | None = None, *, center: bool = True, scale: str = "auto",
                 contamination="auto"):
        self.n_components = n_components
        self.center = center
        self.scale = scale
        self.contamination = contamination

    @fit_method()
    def fit(self, X, y=None, progress=None):
        """Fit on X (n_samples, n_features). Returns self."""
        p = self._start_fit()
        X = validate_X(self, X, reset=True, min_samples=2, finite=False)
        return self._fit_rows(X, p, Reporter(progress))

    def _fit_rows(self, X, p, rep, method="PCA"):
        """The fit on rows X from ``validate_X(..., finite=False)`` with the validated parameters
        ``p``: X's finiteness and magnitude are checked here (for tall data from the scatter
        matrix, see ``_scaled_scatter``). ``method`` names the estimator in error messages
        (ResidualScorer fits through its inner PCA)."""
        n, d = X.shape
        rep(0.0, "centring")
        tall = n >= _COVARIANCE_ROWS * d
        fast = _scaled_scatter(X, p["scale"], p["center"]) if tall else None
        if fast is None:
            check_finite(X)
        if p["n_components"] is not None:
            r = check_range("n_components", p["n_components"], 1, min(n, d), integer=True,
                            hint=rank_hint(n, d))
        w = Z = None
        if fast is not None:
            scaling, mean, G = fast
            w, V = np.linalg.eigh(G, UPLO="L")
            w, V = np.maximum(w[::-1], 0.0), V[:, ::-1]
        else:
            Z, scaling = self._fit_scaled(X, p["scale"])
            check_magnitude(Z, method=method, fix=OVERFLOW_FIX)
            if tall:
                # tall data: the d x d scatter matrix in one pass (see linalg.covariance_eigh)
                mean, w, V = covariance_eigh(Z, center=p["center"])
        # An SVD of the rows instead when the spectrum spans so many decades that squaring cost
        # the small eigenvalues their precision (the same rule as the out-of-core DaskPCA's).
        if w is not None and w[-1] < GRAM_RCOND * w[0]:
            w = None
        if w is not None:
            s, vt = np.sqrt(w), V.T
        else:
            if Z is None:
                Z = apply_scaling(X, scaling["scale_center_"], scaling["scale_"])
            mean = Z.mean(axis=0) if p["center"] else np.zeros(d)
            Zc = Z - mean
            rep(0.1, "SVD")
            # For tall data an R factor first makes the SVD d x d (same singular values and right
            # vectors, several times faster than LAPACK's SVD of the tall matrix here).
            _, s, vt = np.linalg.svd(np.linalg.qr(Zc, mode="r") if n > 2 * d else Zc, full_matrices=False)
        var = s**2 / max(n - 1, 1)
        total = var.sum()
        if p["n_components"] is None:
            r = scree_elbow(var, rank_cap(n, d))
        rep(1.0, "done")
        self._set_fitted(
            **scaling,
            components_=fix_signs(vt[:r]),
            mean_=mean,
            singular_values_=s[:r].copy(),
            explained_variance_=var[:r].copy(),
            explained_variance_ratio_=(var[:r] / total) if total > 0 else np.zeros(r),
            all_variances_=var,
            n_components_=r,
            n_samples_fit_=n,
            # all_variances_ holds min(n, d) eigenvalues; the rest are zero
            **self._limit_fields(n, var[:r], var[r:], alpha=LIMIT_ALPHA),
        )
        self._set_fitted(**self._offset(p["contamination"],
                                        lambda: self._outlier_score(self._scaled(X) if Z is None else Z)))
        return self
