"""Coherence Pursuit's selection from bounds on the coherence, exact where the bounds cannot decide.

The ℓ2 coherence of a usable row is p² = q - 1 with q = ŷᵀCŷ, C = Σ ŷŷᵀ (d x d). With C's
eigenvalues λ₁ ≥ ... ≥ λ_d and eigenvectors u_j, and t_j = u_jᵀŷ for the top m of them,

    q = Σ_{j≤m} λ_j t_j² + Σ_{j>m} λ_j t_j²,   Σ_{j>m} t_j² = 1 - Σ_{j≤m} t_j² = ρ,

so ``Σ_{j≤m} λ_j t_j² + λ_d ρ <= q <= Σ_{j≤m} λ_j t_j² + λ_{m+1} ρ``: m products per row instead
of the d x d form (``_cop_passes._CoherenceForm``, d²/2 per row). Both sides are widened by
:data:`ROUNDING_MARGIN` x λ₁, a hundred times what rounding can move them or the exact form (the
eigenvectors', the products' and the form's own rounding: a few d u λ₁, u = 2⁻⁵³).

The selection takes the k rows of largest q, ties in index order. With hi_(k) the k-th largest
upper bound and lo_(k) the k-th largest lower bound, a row with lower bound above hi_(k) is
selected whatever the exact values, one with upper bound below lo_(k) is not; only the rows in
between get their exact form, made by the same code as the full pass, and decide the rest. On
the 1M x 50 benchmark table (5 directions) a few hundred rows are left to decide. When the
bounds decide too little (more than :data:`MAX_UNDECIDED` of the rows), every row gets its
exact form, as before.
"""
from __future__ import annotations

import numpy as np

from .._lanes import both
from .._order_stats import kth_values
from .._residual import thin_product

__all__ = ["CoherenceBounds", "bounds_block", "bounds_block_sq", "decide", "ROUNDING_MARGIN", "MAX_UNDECIDED"]

# Half-width added to both bounds, relative to C's largest eigenvalue (module doc).
ROUNDING_MARGIN = 1e-11
# Share of the usable rows left undecided beyond which the full exact pass is made instead.
MAX_UNDECIDED = 0.125


class CoherenceBounds:
    """C's top m eigenpairs, for lower and upper bounds on q = ŷᵀCŷ (module doc). ``m``: the
    eigenvalues above C's mean eigenvalue (the directions the rows share), at most a quarter of d."""

    def __init__(self, C):
        w, V = np.linalg.eigh(C)
        w, V = np.maximum(w[::-1], 0.0), V[:, ::-1]
        d = w.size
        m = int(np.count_nonzero(w > w.mean()))
        m = max(1, min(m, max(1, d // 4), d - 1))
        self.m = m
        self.Ut_c = np.ascontiguousarray(V[:, :m].T)     # (m, d), and its view (d, m) (thin_product)
        self.U_f = self.Ut_c.T
        self.lam = w[:m].copy()
        self.weights = np.column_stack([self.lam, np.ones(m)])
        self.tail_hi, self.tail_lo = float(w[m]), float(w[-1])
        self.margin = ROUNDING_MARGIN * float(w[0])

    def useful(self) -> bool:
        """Whether the bounds can decide much: the tail's spread is small next to the top's."""
        return self.tail_hi - self.tail_lo < 0.5 * (self.lam[0] - self.tail_lo)


def bounds_block(B, start, prep, bounds: CoherenceBounds, cut, sq=None):
    """Lower and upper bounds on q of a block's rows, which rows are degenerate (the same rule
    as the coherence pass: length at most ``cut``; their bounds mean nothing), and every row's
    |y|² ("sq": the subspace and residual passes that follow read it instead of making it);
    ``sq``: the rows' |y|² when the first pass made them (:func:`bounds_block_sq`)."""
    Y = prep(B)
    s = np.einsum("ij,ij->i", Y, Y) if sq is None else sq
    valid = np.sqrt(s) > cut
    T = thin_product(Y, bounds.Ut_c, bounds.U_f)    # Y U (rows, m)
    np.square(T, out=T)
    w = T @ bounds.weights                           # Σ λ_j (u_jᵀy)², Σ (u_jᵀy)²
    inv = np.divide(1.0, s, out=np.zeros(s.size), where=valid)
    top = np.multiply(w[:, 0], inv)
    rho = np.clip(1.0 - w[:, 1] * inv, 0.0, 1.0)
    lo = top + (bounds.tail_lo * rho - bounds.margin)
    hi = top + (bounds.tail_hi * rho + bounds.margin)
    out = {"q_lo": lo, "q_hi": hi, "degenerate": ~valid}
    if sq is None:
        out["sq"] = s
    return out


def bounds_block_sq(B, start, sq, prep, bounds: CoherenceBounds, cut):
    """:func:`bounds_block` with the rows' |y|² read from the first pass (``Moments``' ``row_sq``:
    the same numbers), as an extra per-row array of ``Rows.map``."""
    return bounds_block(B, start, prep, bounds, cut, sq)


def decide(lo, hi, valid, k: int):
    """(rows selected whatever the exact values, rows left to decide, as bool arrays; hi_(k),
    below which every selected-for-sure row's lower bound lies) for the k rows of largest q
    among the ``valid`` ones (module doc). The two order statistics are independent: on two
    threads where the process has them (``both``)."""
    at = [int(np.count_nonzero(valid)) - k]
    excl = ~valid
    hi_k, lo_k = (float(v[0]) for v in both(lambda: kth_values(hi, at, excl), lambda: kth_values(lo, at, excl)))
    sure = valid & (lo > hi_k)
    undecided = valid & ~sure & (hi >= lo_k)
    return sure, undecided, hi_k
