"""What every fitted affine subspace does, written once (PCA, Coherence Pursuit, ResidualScorer).

The model is ``mean_ + span(components_)`` in the estimator's scaled units (``ScaledInput``):
``transform`` gives coordinates, ``inverse_transform`` points back in original units, and
``_residual_sq`` the squared distance of scaled rows to the subspace.

The outlier score is the same for all of them: how far a sample lies OFF the subspace (SPE, the
squared residual) and how far ALONG it (Hotelling T², the scores in units of their variances),
each divided by its control limit, and the larger of the two kept:

    outlier score = max(SPE / Q_alpha, T² / T²_alpha),

so ``contamination="auto"`` (score above 1) flags exactly the samples above either limit, the
rule the window rings. Why both: SPE alone is blind to points far out ALONG the subspace (the
blind spot of reconstruction-error scoring) and scored below chance on two of fifteen public
outlier tables where T² alone scored 0.97; T² alone is blind to points off the subspace. On 32
real tables the larger ratio scored a mean ROC-AUC 0.02-0.07 above SPE alone, whatever the rank rule
(benchmarks/results_outliers.md). The limits come from calibration rows: all training rows for
PCA and ResidualScorer, all but the gross outliers for Coherence Pursuit.
"""
from __future__ import annotations

import numpy as np
from scipy.linalg.blas import dgemm as _dgemm
from sklearn.base import ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.validation import check_array, check_is_fitted

from .._scaling import ScaledInput

__all__ = ["SubspaceModel", "residual_sq", "calibration_spectrum"]

# Rows per block when forming residuals: temporaries of about 4e6 doubles.
_ROW_BLOCK_ENTRIES = 4_000_000
# Rows per block when scoring SPE and T² together: a buffer of about 2.6e5 doubles (2 MB).
_SCORE_BLOCK_ENTRIES = 262_144


def residual_sq(Z, components, chunk_rows: int | None = None) -> np.ndarray:
    """Squared distance of each row of Z (already centred) to span(components' rows), from the
    explicit residual (exact even when it is far smaller than |z|^2), in blocks of rows."""
    n, d = Z.shape
    b = chunk_rows or max(1, _ROW_BLOCK_ENTRIES // max(d, 1))
    out = np.empty(n)
    for start in range(0, n, b):
        B = Z[start:start + b]
        E = B - (B @ components.T) @ components
        out[start:start + b] = np.einsum("ij,ij->i", E, E)
    return out


def calibration_spectrum(Z, components, mean):
    """Variances of calibration rows ``Z`` (n, d) along ``components`` (k, d) about ``mean``, and
    ALL eigenvalues of their residual covariance (descending): what the T² and SPE limits are
    made of (sums of squares divided by n - 1)."""
    n, d = Z.shape
    k = components.shape[0]
    Zc = Z - mean
    T = Zc @ components.T
    E = Zc - T @ components
    var = np.einsum("ij,ij->j", T, T) / (n - 1)
    # Nonzero eigenvalues of E'E and EE' coincide: use the smaller Gram matrix.
    G = E.T @ E if n >= d else E @ E.T
    lam = np.linalg.eigvalsh(G)[::-1] / (n - 1)
    return var, np.maximum(lam, 0.0)[: max(min(n, d) - k, 1)]


class SubspaceModel(ClassNamePrefixFeaturesOutMixin, TransformerMixin, ScaledInput):
    """Mixin for estimators whose fit ends in ``components_`` (r, d, orthonormal rows) and
    ``mean_`` (d,), both in scaled units. Output features are named ``<class>0 ...``."""

    @property
    def _n_features_out(self):
        return self.components_.shape[0]

    def transform(self, X):
        """Coordinates (n_samples, r) of X in the subspace: ``(scaled X - mean_) @ components_.T``."""
        Z = self._input(X)
        return (Z - self.mean_) @ self.components_.T

    def inverse_transform(self, X):
        """Points (n_samples, n_features) in ORIGINAL units for coordinates X (n_samples, r)."""
        check_is_fitted(self)
        T = check_array(X, dtype=np.float64)
        r = self.components_.shape[0]
        if T.shape[1] != r:
            raise ValueError(f"X has {T.shape[1]} columns, but {type(self).__name__} has {r} "
                             f"components; pass coordinates as returned by transform")
        return self._unscale(T @ self.components_ + self.mean_)

    def _residual_sq(self, Z):
        """Squared distance of scaled rows Z to the fitted affine subspace."""
        return residual_sq(Z - self.mean_, self.components_)

    # -- control limits and the outlier score ---------------------------------------------
    @staticmethod
    def _limit_fields(n, var, lam, *, alpha, limit="jackson-mudholkar", t2_kind="new",
                      strict=False) -> dict:
        """Fitted ``variances_``, ``residual_eigenvalues_``, ``thetas_``, ``spe_limit_``,
        ``spe_limit_method_``, ``t2_limit_`` from n calibration rows with variances ``var``
        (k,) along the components and residual eigenvalues ``lam``.

        A component along which the calibration rows do not vary makes T² undefined:
        ``strict`` refuses it, otherwise its variance is floored at 1e-12 of the largest (T²
        then flags any departure along it, which the rows never showed).
        """
        from ..anomaly import _spe_limit_and_method, _thetas, t2_limit_new, t2_limit_training

        k = var.size
        var = np.asarray(var, dtype=np.float64).copy()
        tiny = 1e-12 * max(float(var.max(initial=0.0)), float(lam.max(initial=0.0)), 1e-300)
        if np.any(var <= tiny):
            if strict:
                j = int(np.argmax(var <= tiny))
                raise ValueError(f"the training data has (almost) no variance along component "
                                 f"{j + 1}, so T² is undefined; n_components must be at most {j} "
                                 f"for this data (got {k})")
            var = np.maximum(var, tiny)
        spe_lim, method = _spe_limit_and_method(lam, alpha, float(var.sum()) + float(lam.sum()), limit)
        if t2_kind == "new":
            t2_lim = t2_limit_new(k, n, alpha) if n > k else float("inf")
        else:
            if n - k - 1 <= 0:
                raise ValueError(f"t2_limit='training' needs n_samples > n_components + 1; got "
                                 f"n_samples = {n}, n_components = {k}")
            t2_lim = t2_limit_training(k, n, alpha)
        return dict(variances_=var, residual_eigenvalues_=np.asarray(lam, dtype=np.float64),
                    thetas_=np.array(_thetas(lam)), spe_limit_=float(spe_lim),
                    spe_limit_method_=method, t2_limit_=float(t2_lim))

    def _spe_t2(self, Z, want_spe=True, want_t2=True):
        """SPE and T² of scaled rows Z, in blocks of rows."""
        n, d = Z.shape
        C, m, inv = self.components_, self.mean_, 1.0 / self.variances_
        spe = np.empty(n) if want_spe else None
        t2 = np.empty(n) if want_t2 else None
        b = max(1, _SCORE_BLOCK_ENTRIES // max(d, 1))
        buf = np.empty((min(b, n), d))
        Cf = np.asfortranarray(C)
        for s in range(0, n, b):
            # Each block is centred once into a buffer that stays in cache, and its residual
            # z - C^T C z is made there in place by one BLAS update: no other n x d temporary
            # (half the time of forming T C + m and subtracting it, 100,000 x 50 at rank 1).
            # The explicit residual keeps SPE exact when it is much smaller than |z|².
            Bc = np.subtract(Z[s:s + b], m, out=buf[:min(b, n - s)])
            # Both products go to scipy's BLAS, none to numpy's: with their default threads,
            # alternating between the two libraries' thread pools made this loop 10x slower.
            T = _dgemm(1.0, Cf, Bc.T).T                   # Bc C^T, (rows, k)
            if want_t2:
                t2[s:s + b] = np.einsum("ij,ij,j->i", T, T, inv)
            if want_spe:
                # Bc^T - C^T T^T, in place on the Fortran-ordered view of the C-ordered block
                E = _dgemm(-1.0, C.T, T.T, beta=1.0, c=Bc.T, overwrite_c=1).T
                spe[s:s + b] = np.einsum("ij,ij->i", E, E)
        return spe, t2

    def _outlier_score(self, Z):
        """max(SPE / spe_limit_, T² / t2_limit_) of scaled rows Z (module doc)."""
        spe, t2 = self._spe_t2(Z)
        return np.maximum(spe / self.spe_limit_, t2 / self.t2_limit_)

    def _auto_threshold(self, training_scores):
        # the score is already in units of the limits: above 1 = above one of them
        return 1.0
