"""The one residual kernel: coordinates, SPE and T² of rows against an affine subspace.

For a centre ``mean`` (d,) and orthonormal rows ``components`` (k, d), a row z has coordinates
``t = C (z - mean)``, residual ``e = z - mean - Cᵀ t``, ``SPE = |e|²`` and ``T² = Σ t_j² / v_j``.

The SPE is ``|y|² - |t|²`` (y = z - mean) where that difference keeps its digits, and ``|e|²``
from the explicit residual in the rows where it would not: the difference cancels when the
residual is much smaller than the row (a row 1e6 from the origin with a residual of 1e-3 keeps
no digit of it), and rounding can even make it negative. The rounding of ``|y|²`` and ``|t|²``
is at most ``(γ_d (1 + 2 sqrt(k)) + γ_k + ‖C Cᵀ - I‖) |y|²`` (γ_m = m u / (1 - m u), u = 2⁻⁵³;
the last term: components orthonormal only to rounding), so a row whose difference is below
that bound / :data:`SPE_RTOL` gets its explicit residual, and every SPE agrees with the explicit
one to about ``SPE_RTOL`` relative. This skips the residual update (one thin product and a
write of every block) for the rows that do not cancel: all but the near-exact fits.

Rows go through in blocks that stay in cache: each block is centred once into a buffer and its
residual is made there in place by one BLAS update, so no n x d temporary exists. Every SPE,
T² and projection of the package comes from here: the estimators' scores, the registry's
per-row results (in memory and out of core), the outlier map and the comparison view.
"""
from __future__ import annotations

import numpy as np
from scipy.linalg.blas import dgemm as _dgemm

from ._blas_policy import fits_on_one_blas_thread
from ._passes import gil_free, scratch

__all__ = ["ResidualKernel", "residual_scores", "residual_sq", "thin_product", "weighted_squares",
           "SCORE_BLOCK_ENTRIES"]

# Entries of one block of rows (a buffer of 2 MB).
SCORE_BLOCK_ENTRIES = 262_144
# The kernel's scratch slot (robustcore._passes.scratch) for T C, apart from the passes' own.
_SLOT = 9
# Relative accuracy of an SPE taken as |y|² - |t|² (module doc); rows that cannot promise it
# get the explicit residual.
SPE_RTOL = 1e-10


class ResidualKernel:
    """Projection and squared residual of blocks of rows against ``mean + span(components)``."""

    def __init__(self, components, mean):
        C = np.ascontiguousarray(np.atleast_2d(np.asarray(components, dtype=np.float64)))
        self.C = C
        self.CT = C.T                      # Fortran-ordered view of the C-ordered C
        self.mean = np.asarray(mean, dtype=np.float64)
        self.k, self.d = C.shape
        self.ones = np.ones(self.k)
        u = 2.0 ** -53

        def gamma(m):
            return m * u / (1.0 - m * u)
        orth = float(np.abs(C @ C.T - np.eye(self.k)).sum(axis=1).max(initial=0.0))
        # |y|² - |t|² below guard * |y|² may have lost the digits SPE_RTOL asks for
        self.guard = (gamma(self.d) * (1.0 + 2.0 * np.sqrt(self.k)) + gamma(self.k) + orth + u) / SPE_RTOL

    def rows_per_block(self) -> int:
        return max(1, SCORE_BLOCK_ENTRIES // max(self.d, 1))

    def __call__(self, B, buf=None, want_spe=True):
        """``(T, spe)`` of the rows of B (rows, d): T (rows, k) the coordinates, spe (rows,) or
        None (module doc: explicit residuals only in the rows that need them). ``buf``: a
        C-ordered float64 scratch of at least B's shape (B is not changed unless ``buf`` is B
        itself); what it holds afterwards is undefined (``residuals`` leaves E there)."""
        if not want_spe or self.k == 0:
            T, E = self._pass(B, buf, want_spe)
            return T, (np.einsum("ij,ij->i", E, E) if want_spe else None)
        b = B.shape[0]
        if B.dtype == np.float64 and B.flags.c_contiguous and not self.mean.any():
            Y = B                    # nothing to subtract: no copy
        else:
            if buf is None or buf.shape[0] < b:
                buf = np.empty((b, self.d))
            Y = np.subtract(B, self.mean, out=buf[:b])
        T = self._coordinates(Y)
        return T, self.spe(Y, T)

    def spe(self, Y, T, E=None, s=None):
        """SPE of centred rows Y with coordinates T: |y|² - |t|², and |e|² in the rows where
        that difference may have lost digits (module doc); ``E``: their explicit residuals when
        made already (else made here for those rows, by the same update as ``residuals``);
        ``s``: the rows' |y|² when made already (the same numbers: not made again)."""
        with np.errstate(invalid="ignore", over="ignore"):
            if s is None:
                s = np.einsum("ij,ij->i", Y, Y)
            spe = s - weighted_squares(T, self.ones)
            # (non-finite rows too: the explicit residual gives them what it always gave)
            exact = ~(spe > self.guard * s) | ~np.isfinite(spe)
        if exact.any():
            rows = np.flatnonzero(exact)
            if E is None:
                Er = self._update(Y[rows], np.ascontiguousarray(T[rows]))
            else:
                Er = E[rows]
            spe[rows] = np.einsum("ij,ij->i", Er, Er)
        return spe

    def _coordinates(self, Y):
        """Y Cᵀ (rows, k) of C-ordered float64 rows Y (:func:`thin_product`)."""
        return thin_product(Y, self.C, self.CT)

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
            # The update out of core by numpy's library, which releases the GIL
            # (robustcore._passes.gil_free); else by scipy's, whose update in place saves a
            # sweep of the block (thin_product keeps to it where BLAS runs several threads:
            # alternating between the two libraries' pools made this loop 10x slower).
            T = thin_product(Bc, self.C, self.CT)                  # Bc Cᵀ, (rows, k)
            if not want_residual:
                return T, None
            if gil_free():
                with np.errstate(invalid="ignore", over="ignore"):     # as BLAS: non-finite rows
                    # are refused by the callers' checks, with a message naming them
                    E = np.subtract(Bc, np.matmul(T, self.C, out=scratch(b, self.d, _SLOT)), out=Bc)
            else:
                E = self._update(Bc, T)
        return T, E

    def _update(self, Bc, T):
        """Bc - T C in place in the C-ordered Bc (scipy's product: Bcᵀ - Cᵀ Tᵀ on their
        Fortran-ordered views)."""
        with np.errstate(invalid="ignore", over="ignore"):
            if gil_free():
                return np.subtract(Bc, T @ self.C, out=Bc)
            if T.flags.c_contiguous:           # (numpy's thin_product: its Fortran-ordered view)
                return _dgemm(-1.0, self.CT, T.T, beta=1.0, c=Bc.T, overwrite_c=1).T
            return _dgemm(-1.0, self.CT, T, trans_b=1, beta=1.0, c=Bc.T, overwrite_c=1).T


def thin_product(Y, C, CT):
    """Y Cᵀ (rows, k) of C-ordered float64 rows Y (rows, d) and a C-ordered C (k, d), ``CT`` its
    Fortran-ordered view C.T. By numpy's library (a C-ordered result) wherever BLAS runs on one
    thread (the fits' rule, robustcore._blas_policy) or the GIL must be released
    (robustcore._passes.gil_free); by scipy's (a Fortran-ordered result) where the user chose
    several BLAS threads and the loop's other products are scipy's (a loop alternating between
    the two libraries' thread pools stalls). On this machine (Zen 5; one thread; 1M x 50 rows
    in blocks of 5,242, k = 5, the result written out) numpy's Y Cᵀ took 44.2-45.8 ms, numpy's
    C Yᵀ 51-54 ms and scipy's dgemm with Y's transpose flag 60-64 ms; on the previous machine
    the order was the other way round (Y Cᵀ 0.157-0.162 s, scipy's 0.085-0.089 s). The
    results agree to a few units of rounding (3e-16 relative)."""
    if gil_free() or fits_on_one_blas_thread():
        return Y @ CT
    return _dgemm(1.0, Y.T, CT, trans_a=1)


def weighted_squares(T, w):
    """Σ_j w_j T_ij² of every row of T (rows, k): T² with w = 1 / the variances, |t|² with w = 1.
    Every T² and |t|² of the package comes from here (the same bits wherever a row's are made).
    One square and a product with w: 1.9-2.0 ms per million rows of 5 coordinates here, against
    10.0 ms for the three-operand einsum and 4.3 ms for einsum's |t|²."""
    return np.square(T) @ w


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
            t2[s:s + b] = weighted_squares(T, inv)
        if want_projection:
            proj[s:s + b] = T
    return spe, t2, proj


def residual_sq(Z, components, mean=None) -> np.ndarray:
    """Squared distance of each row of Z to ``mean + span(components)`` (mean None: Z is
    already centred), from the explicit residual."""
    C = np.atleast_2d(np.asarray(components, dtype=np.float64))
    m = np.zeros(C.shape[1]) if mean is None else mean
    return residual_scores(np.asarray(Z, dtype=np.float64), C, m, want_t2=False)[0]
