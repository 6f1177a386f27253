"""Principal component analysis: the non-robust baseline every robust method is compared with."""
from __future__ import annotations

import numpy as np

from .._base import Estimator
from .._params import Param, check_range
from .._progress import Reporter
from .._validation import check_array

__all__ = ["PCA", "fix_signs"]


def fix_signs(components: np.ndarray) -> np.ndarray:
    """Flip each row so its largest-magnitude entry is positive (stable plots across runs)."""
    comps = np.array(components, dtype=np.float64, copy=True)
    if comps.size == 0:
        return comps
    idx = np.argmax(np.abs(comps), axis=1)
    signs = np.sign(comps[np.arange(comps.shape[0]), idx])
    signs[signs == 0] = 1.0
    return comps * signs[:, None]


class PCA(Estimator):
    """Principal component analysis by a thin SVD of the centred data.

    Parameters
    ----------
    n_components : int
        Rank r of the subspace, 1 <= r <= min(n_samples, n_features).
    center : bool
        Subtract the column means before the SVD (an affine subspace); False fits a linear one.

    Fitted attributes
    -----------------
    components_ : (r, d) orthonormal rows, sign-fixed (largest |loading| positive).
    mean_ : (d,) the column means (zeros when ``center=False``).
    explained_variance_ : (r,) variances along the components (divided by n - 1).
    explained_variance_ratio_ : (r,) share of the total variance.
    singular_values_ : (r,)
    all_variances_ : (min(n, d),) every eigenvalue of the sample covariance, descending
        (what residual control limits need).
    n_features_in_ : int
    """

    _params = (
        Param("n_components", int, 2, "Number of principal components (rank of the subspace).", low=1),
        Param("center", bool, True, "Subtract the mean before fitting (affine subspace)."),
    )

    def __init__(self, n_components: int = 2, center: bool = True):
        self.n_components = n_components
        self.center = center

    def fit(self, X, y=None, progress=None):
        """Fit on X (n_samples, n_features). Returns self."""
        p = self._start_fit()
        rep = Reporter(progress)
        X = check_array(X, min_samples=2)
        n, d = X.shape
        r = check_range("n_components", p["n_components"], 1, min(n, d), integer=True,
                        hint=f"at most min(n_samples, n_features) = {min(n, d)} for this data")
        rep(0.0, "centring")
        mean = X.mean(axis=0) if p["center"] else np.zeros(d)
        Z = X - mean
        rep(0.1, "SVD")
        # For tall data an R factor first makes the SVD d x d (same singular values and right
        # vectors, several times faster than LAPACK's SVD of the tall matrix here).
        _, s, vt = np.linalg.svd(np.linalg.qr(Z, mode="r") if n > 2 * d else Z, full_matrices=False)
        denom = max(n - 1, 1)
        var = s**2 / denom
        total = var.sum()
        comps = fix_signs(vt[:r])
        rep(1.0, "done")
        self._set_fitted(
            components_=comps,
            mean_=mean,
            singular_values_=s[:r].copy(),
            explained_variance_=var[:r].copy(),
            explained_variance_ratio_=(var[:r] / total) if total > 0 else np.zeros(r),
            all_variances_=var,
            n_features_in_=d,
            n_samples_fit_=n,
        )
        return self

    def transform(self, X):
        """Scores (n_samples, r): coordinates of X in the fitted subspace."""
        self._check_fitted("components_")
        X = check_array(X)
        self._check_width(X)
        return (X - self.mean_) @ self.components_.T

    def fit_transform(self, X, y=None, progress=None):
        return self.fit(X, progress=progress).transform(X)

    def inverse_transform(self, T):
        """Map scores (n_samples, r) back to feature space (n_samples, d)."""
        self._check_fitted("components_")
        T = check_array(T, name="scores")
        return T @ self.components_ + self.mean_

    def score_samples(self, X):
        """Squared reconstruction error (SPE) per sample; larger means more anomalous."""
        self._check_fitted("components_")
        X = check_array(X)
        self._check_width(X)
        Z = X - self.mean_
        R = Z - (Z @ self.components_.T) @ self.components_
        return np.einsum("ij,ij->i", R, R)

    def _check_width(self, X):
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but this {type(self).__name__} was fitted "
                             f"on {self.n_features_in_}")
