"""The one residual kernel: coordinates, SPE and T² of rows against an affine subspace.

For a centre ``mean`` (d,) and orthonormal rows ``components`` (k, d), a row z has coordinates
``t = C (z - mean)``, residual ``e = z - mean - Cᵀ t``, ``SPE = |e|²`` and ``T² = Σ t_j² / v_j``.
The residual is formed EXPLICITLY, never as ``|z - mean|² - |t|²``: that difference cancels when
the residual is much smaller than the row (a row 1e6 from the origin with a residual of 1e-3
keeps no digit of it), and rounding can even make it negative.

Rows go through in blocks that stay in cache: each block is centred once into a buffer and its
residual is made there in place by one BLAS update, so no n x d temporary exists. Every SPE,
T² and projection of the package comes from here: the estimators' scores, the registry's
per-row results (in memory and out of core), the outlier map and the comparison view.
"""
from __future__ import annotations

import numpy as np
from scipy.linalg.blas import dgemm as _dgemm

from ._passes import gil_free, scratch

__all__ = ["ResidualKernel", "residual_scores", "residual_sq", "SCORE_BLOCK_ENTRIES"]

# Entries of one block of rows (a buffer of 2 MB).
SCORE_BLOCK_ENTRIES = 262_144
# The kernel's scratch slot (robustcore._passes.scratch) for T C, apart from the passes' own.
_SLOT = 9


class ResidualKernel:
    """Projection and squared residual of blocks of rows against ``mean + span(components)``."""

    def __init__(self, components, mean):
        C = np.ascontiguousarray(np.atleast_2d(np.asarray(components, dtype=np.float64)))
        self.C = C
        self.Cf = np.asfortranarray(C)
        self.CT = C.T                      # Fortran-ordered view of the C-ordered C
        self.mean = np.asarray(mean, dtype=np.float64)
        self.k, self.d = C.shape

    def rows_per_block(self) -> int:
        return max(1, SCORE_BLOCK_ENTRIES // max(self.d, 1))

    def __call__(self, B, buf=None, want_spe=True):
        """``(T, spe)`` of the rows of B (rows, d): T (rows, k) the coordinates, spe (rows,) or
        None. ``buf``: a C-ordered float64 scratch of at least B's shape (B is not changed unless
        ``buf`` is B itself: then the residual is made in place there)."""
        T, E = self._pass(B, buf, want_spe)
        return T, (np.einsum("ij,ij->i", E, E) if want_spe else None)

    def residuals(self, B, buf=None):
        """``(T, E)``: the coordinates and the explicit residuals of the rows of B, E made in
        ``buf`` (as for ``__call__``)."""
        return self._pass(B, buf, True)

    def _pass(self, B, buf, want_residual):
        b = B.shape[0]
        if buf is None or buf.shape[0] < b:
            buf = np.empty((b, self.d))
        # centred once into the buffer (which also converts float32 blocks)
        Bc = np.subtract(B, self.mean, out=buf[:b])
        if self.k == 0:
            T = np.zeros((b, 0))
            E = Bc
        else:
            # Both products go to one library: alternating between the two libraries' thread
            # pools made this loop 10x slower with their default threads. Out of core numpy's,
            # which releases the GIL (robustcore._passes.gil_free); else scipy's, whose update
            # in place saves a sweep of the block.
            if gil_free():
                T = Bc @ self.CT                                    # Bc Cᵀ, (rows, k)
                if not want_residual:
                    return T, None
                with np.errstate(invalid="ignore", over="ignore"):     # as BLAS: non-finite rows
                    # are refused by the callers' checks, with a message naming them
                    E = np.subtract(Bc, np.matmul(T, self.C, out=scratch(b, self.d, _SLOT)), out=Bc)
            else:
                T = _dgemm(1.0, self.Cf, Bc.T).T                   # Bc Cᵀ, (rows, k)
                if not want_residual:
                    return T, None
                # Bcᵀ - Cᵀ Tᵀ, in place on the Fortran-ordered view of the C-ordered block
                E = _dgemm(-1.0, self.CT, T.T, beta=1.0, c=Bc.T, overwrite_c=1).T
        return T, E


def residual_scores(Z, components, mean, inv_var=None, *, want_spe=True, want_t2=True,
                    want_projection=False):
    """``(spe, t2, projection)`` of every row of Z (n, d) in blocks of rows; each is None unless
    wanted. ``inv_var`` (k,): 1 / the variances along the components (needed for T²)."""
    kern = ResidualKernel(components, mean)
    n = Z.shape[0]
    spe = np.empty(n) if want_spe else None
    t2 = np.empty(n) if want_t2 else None
    proj = np.empty((n, kern.k)) if want_projection else None
    if want_t2:
        inv = np.asarray(inv_var, dtype=np.float64)
    b = kern.rows_per_block()
    buf = np.empty((min(b, n), kern.d))
    for s in range(0, n, b):
        T, e2 = kern(Z[s:s + b], buf, want_spe)
        if want_spe:
            spe[s:s + b] = e2
        if want_t2:
            t2[s:s + b] = np.einsum("ij,ij,j->i", T, T, inv)
        if want_projection:
            proj[s:s + b] = T
    return spe, t2, proj


def residual_sq(Z, components, mean=None) -> np.ndarray:
    """Squared distance of each row of Z to ``mean + span(components)`` (mean None: Z is
    already centred), from the explicit residual."""
    C = np.atleast_2d(np.asarray(components, dtype=np.float64))
    m = np.zeros(C.shape[1]) if mean is None else mean
    return residual_scores(np.asarray(Z, dtype=np.float64), C, m, want_t2=False)[0]
