"""Input checks shared by all estimators: scikit-learn's ``validate_data`` plus the messages and
guards it does not have (where a NaN is, values too large to square), and the one conversion of
``random_state``.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import validate_data

from ._params import param_error

__all__ = ["validate_X", "validate_lazy", "check_finite", "check_magnitude", "check_random_state", "MAX_ABS",
           "OVERFLOW_FIX", "nonfinite_error", "magnitude_error"]

# Squares of larger values overflow float64 (1.8e308): every method here works with squares
# (SVDs, Gram matrices, distances), so such values are refused or rescaled first.
MAX_ABS = 1e150

# What to do about values whose squares overflow or underflow (check_magnitude's way out).
OVERFLOW_FIX = ("Pass scale='standard' or 'robust' (the estimator then rescales inside), or "
                "multiply X by a constant that brings its values near 1.")

_COMPLEX = ("Complex data not supported: X holds complex numbers, and these methods work on real "
            "data; pass X.real, np.abs(X), or the real and imaginary parts as separate features "
            "(np.hstack([X.real, X.imag]))")


def validate_X(estimator, X, *, reset: bool, min_samples: int = 1, min_features: int = 1,
               accept_sparse: bool = False, copy: bool = False, finite: bool = True):
    """``X`` as a finite 2-D float64 array (or CSR matrix), with ``n_features_in_`` and
    ``feature_names_in_`` set (``reset=True``, in fit) or checked against them (``reset=False``).

    scikit-learn's ``validate_data`` does the conversion (lists, DataFrames, other dtypes),
    refuses complex, 1-D and empty input, and checks the width; NaN and infinite entries are
    refused here with the position of the first one. ``finite=False`` leaves that check to the
    caller, which must make it (PCA reads it off the column sums it computes anyway).
    """
    try:
        X = validate_data(estimator, X, reset=reset, accept_sparse="csr" if accept_sparse else False,
                          dtype=np.float64, ensure_all_finite=False, ensure_min_samples=min_samples,
                          ensure_min_features=min_features, copy=copy)
    except ValueError as exc:
        if str(exc).startswith("Complex data not supported"):
            # scikit-learn's own message prints the whole array and no way out
            raise ValueError(_COMPLEX) from None
        raise
    if sp.issparse(X) and not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()
    if finite:
        check_finite(X)
    return X


def validate_lazy(estimator, A, *, reset: bool, min_samples: int = 1, min_features: int = 1):
    """The checks of :func:`validate_X` for a lazy table ``A`` (a Dask array), with the same
    messages, without reading it: scikit-learn's ``validate_data`` runs on a stand-in of A's
    shape that holds no memory (a broadcast zero), so its sample, feature and width messages
    are the in-memory ones. Sets or checks ``n_features_in_``; a lazy table has no feature
    names. Finiteness is checked by the pass that reads the values."""
    if A.dtype.kind == "c":
        raise ValueError(_COMPLEX)
    if A.ndim != 2:
        raise ValueError(f"Expected a 2D table (n_samples, n_features), got an array of shape "
                         f"{tuple(A.shape)}; reshape it, e.g. X.reshape(-1, 1) for one feature")
    if A.dtype.kind not in "biuf":
        raise ValueError(f"X must hold numbers; got dtype {A.dtype}")
    stand_in = np.broadcast_to(np.zeros((1, 1)), tuple(int(v) for v in A.shape))
    validate_data(estimator, stand_in, reset=reset, dtype=np.float64, ensure_all_finite=False,
                  ensure_min_samples=min_samples, ensure_min_features=min_features)
    return A


def nonfinite_error(count: int, i: int, j: int, value: float, name: str = "X") -> ValueError:
    kind = "NaN" if np.isnan(value) else "infinite"
    return ValueError(f"{name} contains {count} NaN or infinite value(s) (first: {kind} at row {i}, "
                      f"column {j}); remove or impute them before fitting")


def magnitude_error(top: float, method: str, fix: str):
    """The refusal of values whose squares overflow (or all underflow), or None when ``top`` (the
    largest |value|) is fine."""
    if top > MAX_ABS:
        return ValueError(f"X holds values as large as {top:.3g}; {method} works with their squares, "
                          f"which overflow float64 beyond about {MAX_ABS:.0e}. {fix}")
    if 0.0 < top < 1.0 / MAX_ABS:
        return ValueError(f"X's largest value is {top:.3g}; {method} works with squares of the "
                          f"values, which underflow to 0 in float64 below about {1 / MAX_ABS:.0e}. "
                          f"{fix}")
    return None


def check_finite(X, name: str = "X"):
    """Raise ``ValueError`` naming the first NaN or infinite entry of ``X`` (dense or CSR).
    Returns the (min, max) of its stored values that it found ((0.0, 0.0) for none), which
    ``check_magnitude`` of the same X takes as ``bounds`` instead of two more reductions."""
    data = X.data if sp.issparse(X) else X
    if data.size == 0:
        return 0.0, 0.0
    # min and max propagate NaN and show an infinity: two reductions, no n x d mask
    lo, hi = float(data.min()), float(data.max())
    if np.isfinite(lo) and np.isfinite(hi):
        return lo, hi
    if sp.issparse(X):
        coo = X.tocoo()
        bad = ~np.isfinite(coo.data)
        i, j = int(coo.row[bad][0]), int(coo.col[bad][0])
        count = int(bad.sum())
        first = coo.data[bad][0]
    else:
        badmask = ~np.isfinite(data)
        count = int(badmask.sum())
        i, j = (int(v) for v in np.argwhere(badmask)[0])
        first = data[i, j]
    raise nonfinite_error(count, i, j, first, name)


def check_magnitude(X, *, method: str, fix: str, bounds=None) -> float:
    """Largest |value| of X; refuse values whose squares overflow (or, all of them, underflow),
    saying what to do instead. ``bounds``: X's (min, max) when known (``check_finite``'s)."""
    if bounds is None:
        data = X.data if sp.issparse(X) else X
        bounds = (data.min(initial=0.0), data.max(initial=0.0))
    top = float(max(-bounds[0], bounds[1], 0.0))   # |X|'s max, no temporary
    err = magnitude_error(top, method, fix)
    if err is not None:
        raise err
    return top


def finite_in_range(X) -> bool:
    """Whether one pass proves what ``check_finite`` and ``check_magnitude`` of the dense
    float64 array X would find: no NaN or infinite entry, and the largest |value| within
    [1 / MAX_ABS, MAX_ABS]. From the sum of squares s of the N entries (one dot product, where
    the two checks take a minimum and a maximum): a NaN or an infinity makes s NaN or infinite;
    the largest |value| is at most sqrt(s) and at least sqrt(s / N). False (the two checks then
    decide, with their messages) when s does not prove it: an entry beyond MAX_ABS or below
    1 / MAX_ABS is never taken for fine (the bounds keep a margin for the sum's own rounding,
    and a square that underflows only makes s smaller). At 10,000 x 200 one pass of 0.2-0.45 ms
    instead of two."""
    if sp.issparse(X) or X.dtype != np.float64 or X.size == 0 or not X.flags.c_contiguous:
        return False
    flat = X.reshape(-1)
    with np.errstate(all="ignore"):
        s = float(flat @ flat)
    # (the sum's relative error is at most N u, u = 2^-53, in any order of its terms)
    margin = max(1e-6, 4.0 * X.size * 2.0 ** -53)
    return bool(np.isfinite(s)) and X.size / MAX_ABS ** 2 * (1.0 + margin) <= s <= MAX_ABS ** 2 * (1.0 - margin)


def check_random_state(random_state) -> np.random.Generator:
    """The one conversion of ``random_state`` to a ``numpy.random.Generator``.

    ``None`` -> fresh randomness; an int seed ``s`` -> ``numpy.random.default_rng(s)`` (so seeds
    give the same numbers as robustcore 0.1); a ``Generator`` is used as it is; a legacy
    ``RandomState`` (what scikit-learn's own ``check_random_state`` returns) seeds a new
    Generator from its stream. scikit-learn's helper is not used directly because it returns a
    ``RandomState``, whose streams differ from ``default_rng``'s: sessions written with a seed
    would no longer replay the same numbers.
    """
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2**63 - 1, dtype=np.int64))
    if random_state is None:
        return np.random.default_rng()
    if isinstance(random_state, (bool, np.bool_)) or not isinstance(random_state, (int, np.integer)) \
            or random_state < 0:
        raise param_error("random_state", "None, a non-negative integer seed, a numpy.random.Generator "
                          "or a RandomState", random_state)
    return np.random.default_rng(int(random_state))
