"""scipy's triangular product (BLAS ``dtrmm``) called with the GIL released.

The coherence form |Lᵀŷ|² (``subspace._cop_passes._CoherenceForm``) is a triangular product per
row: scipy's ``dtrmm`` does it in d²/2 multiply-adds, numpy's general product in d². scipy's
Python wrapper holds the GIL, so the threads of an out-of-core pass (and of in-memory lanes)
used numpy's product, twice the work: at 30M x 50, 4.0 CPU s against 1.9 s for the same rows
(5,242-row blocks, one BLAS thread, this machine; benchmarks/results_bigdata.md 3.19).

Here the very routine scipy's wrapper calls (``scipy.linalg.cython_blas.dtrmm``, found through
its capsule) is called through ctypes, which releases the GIL for the call: the same library, the
same bits as ``scipy.linalg.blas.dtrmm``. :func:`trmm_rows` is None when that routine cannot be
reached (another scipy build): callers then keep numpy's product.
"""
from __future__ import annotations

import ctypes

import numpy as np

__all__ = ["trmm_rows"]


def _cython_blas(name: str, *argtypes):
    """A ctypes function (GIL released on call) for ``scipy.linalg.cython_blas.<name>``, or None."""
    try:
        from scipy.linalg import cython_blas
        capsule = cython_blas.__pyx_capi__[name]
        api = ctypes.pythonapi
        api.PyCapsule_GetName.restype = ctypes.c_char_p
        api.PyCapsule_GetName.argtypes = [ctypes.py_object]
        api.PyCapsule_GetPointer.restype = ctypes.c_void_p
        api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
        ptr = api.PyCapsule_GetPointer(capsule, api.PyCapsule_GetName(capsule))
    except (ImportError, AttributeError, KeyError, ValueError):
        return None
    return ctypes.CFUNCTYPE(None, *argtypes)(ptr) if ptr else None


_C, _I, _D = ctypes.c_char_p, ctypes.POINTER(ctypes.c_int), ctypes.c_void_p
_DTRMM = _cython_blas("dtrmm", _C, _C, _C, _C, _I, _I, ctypes.POINTER(ctypes.c_double), _D, _I, _D, _I)


def _trmm_rows(X: np.ndarray, L: np.ndarray) -> np.ndarray:
    """X := X L in place, for X C-ordered (rows, d) float64 and L Fortran-ordered lower
    triangular (d, d) float64: Xᵀ (Fortran-ordered, d x rows) := Lᵀ Xᵀ, as
    ``dtrmm(1.0, L, X.T, side=0, lower=1, trans_a=1, overwrite_b=1)`` makes it. Returns X."""
    rows, d = X.shape
    if not (X.flags.c_contiguous and X.dtype == np.float64 and L.flags.f_contiguous
            and L.dtype == np.float64 and L.shape == (d, d)):
        raise ValueError("trmm_rows takes a C-ordered float64 X and a Fortran-ordered float64 L")
    if rows == 0 or d == 0:
        return X
    m, n, ld = ctypes.c_int(d), ctypes.c_int(rows), ctypes.c_int(d)
    _DTRMM(b"L", b"L", b"T", b"N", ctypes.byref(m), ctypes.byref(n), ctypes.byref(ctypes.c_double(1.0)),
           L.ctypes.data, ctypes.byref(ld), X.ctypes.data, ctypes.byref(ld))
    return X


trmm_rows = _trmm_rows if _DTRMM is not None else None
