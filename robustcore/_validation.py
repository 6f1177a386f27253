"""Input checks shared by all estimators: one clear message per problem."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["check_array", "check_fraction"]


def check_array(X, *, name: str = "X", min_samples: int = 1, min_features: int = 1,
                accept_sparse: bool = False, dtype=np.float64, copy: bool = False,
                ensure_2d: bool = True):
    """Return ``X`` as a finite 2-D float array (or CSR matrix if ``accept_sparse``).

    Raises ``ValueError`` naming the problem: not numeric, wrong dimensions, too few samples or
    features, NaN or infinite entries (with the position of the first one).
    """
    if sp.issparse(X):
        if not accept_sparse:
            raise ValueError(f"{name} is a sparse matrix, which this method does not accept; "
                             f"pass a dense array (e.g. {name}.toarray()) if it fits in memory")
        X = sp.csr_matrix(X, dtype=dtype, copy=copy)
        data = X.data
        shape = X.shape
    else:
        try:
            arr = np.array(X, dtype=dtype, copy=copy) if copy else np.asarray(X, dtype=dtype)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{name} must be a numeric array; it could not be converted to numbers "
                             f"({exc})") from None
        if ensure_2d:
            if arr.ndim == 1:
                raise ValueError(f"{name} must be 2-D (n_samples, n_features); got a 1-D array of "
                                 f"length {arr.shape[0]}. Use X.reshape(-1, 1) for one feature or "
                                 f"X.reshape(1, -1) for one sample")
            if arr.ndim != 2:
                raise ValueError(f"{name} must be 2-D (n_samples, n_features); got shape {arr.shape}")
        X = arr
        data = arr
        shape = arr.shape
    if ensure_2d:
        n, d = shape
        if n < min_samples:
            raise ValueError(f"{name} must have at least {min_samples} sample(s) (rows); got {n}")
        if d < min_features:
            raise ValueError(f"{name} must have at least {min_features} feature(s) (columns); got {d}")
    if not np.all(np.isfinite(data)):
        if sp.issparse(X):
            coo = X.tocoo()
            bad = ~np.isfinite(coo.data)
            i, j = int(coo.row[bad][0]), int(coo.col[bad][0])
            count = int(bad.sum())
            kind = "NaN" if np.isnan(coo.data[bad][0]) else "infinite"
        else:
            badmask = ~np.isfinite(data)
            count = int(badmask.sum())
            pos = np.argwhere(badmask)[0]
            i, j = (int(pos[0]), int(pos[1])) if len(pos) == 2 else (int(pos[0]), 0)
            kind = "NaN" if np.isnan(data[tuple(pos)]) else "infinite"
        raise ValueError(f"{name} contains {count} NaN or infinite value(s) (first: {kind} at row {i}, "
                         f"column {j}); remove or impute them before fitting")
    return X


def check_fraction(name: str, value, *, low_inclusive=False, high_inclusive=False):
    from ._params import check_range
    return check_range(name, value, 0.0, 1.0, low_inclusive=low_inclusive, high_inclusive=high_inclusive)
