"""What every fitted affine subspace does, written once (PCA, Coherence Pursuit, ResidualScorer).

The model is ``mean_ + span(components_)`` in the estimator's scaled units (``ScaledInput``):
``transform`` gives coordinates, ``inverse_transform`` points back in original units, and
``_residual_sq`` the squared distance of scaled rows to the subspace (what the outlier scores of
these estimators are made of).
"""
from __future__ import annotations

import numpy as np
from sklearn.base import ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.validation import check_array, check_is_fitted

from .._scaling import ScaledInput

__all__ = ["SubspaceModel", "residual_sq"]

# Rows per block when forming residuals: temporaries of about 4e6 doubles.
_ROW_BLOCK_ENTRIES = 4_000_000


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
