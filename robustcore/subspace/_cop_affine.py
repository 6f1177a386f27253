"""Coherence Pursuit's ``center="affine"``: an affine subspace from homogeneous coordinates.

With ``center="none"`` the rows are normalised as they are, so the subspace is linear, through
the origin, and the inliers' common offset is one of its directions. That model depends on
where each column's zero lies: shifting a column moves every row's direction. A centre
("median", "mean") takes the offset out before normalising, but then the selection compares
directions from the centre, and rows near the centre, short and pointing anywhere, count as
incoherent.

"affine" keeps the offset as a direction while measuring from a point that moves with the
data: each row y (scaled, minus the columns' medians m of the sampled rows) is lifted to (y, s), s a robust length
of the rows (:data:`LIFT_FACTOR` times the median |y| of the first pass's sampled rows), and Coherence Pursuit runs on
the lifted rows unchanged. Inliers near an r-dimensional flat of the data lie near an
(r + 1)-dimensional linear subspace of the lifted space; its vectors with a last coordinate
of 0 are the flat's directions, and the one with the largest last coordinate, scaled to s,
its point. Shifting a column shifts m by the same amount and changes nothing else.

After the subspace the fit is a centred one (``mean_`` = the flat's point, ``components_`` =
its r directions): residuals, limits and scores are those of every centred fit. The lifting is
done in the passes' ``prep`` (one more column in the scratch block), so in memory and out of
core run the same code. m and s come from the first pass's sampled rows (every stride-th row,
about 100,000; every row up to 200,000: ``_cop_calibration.sample_stride``), the same rows in
memory and out of core: on 1M x 50 the exact medians (np.median) cost more CPU than a whole
``center="none"`` fit, and m need only move with the columns and resist gross rows.

The lift and the rank rule (benchmarks/results_outliers.md, "center=\"affine\" as the default";
``python benchmarks/study_outlier_defaults.py --study cop-affine``, 15 development tables and
the synthetic tasks only): the rank is the elbow of the WHOLE lifted spectrum, the offset's
eigenvalue in it, less one (:func:`affine_rank`), and s is twice the median length. Stop 48's
rule (the elbow of the spectrum without its first eigenvalue) and s = the median length scored
0.773 on the tables, but with usps-1-vs-8's flags catching 31 of its 50 eights; these score
0.778, 4 of 21 tasks flagged outside [α/3, 3α] (6 before) and 44 eights caught. Both are
choices among 21 candidates on the same 15 tables: leave one table out over all of them scores
0.738, so the margin over ``center="none"`` is not a held-out figure (the results say more).
"""
from __future__ import annotations

import numpy as np

from .._passes import scratch
from ..rank import rank_cap, scree_elbow
from ._cop_memory import Refined
from ._cop_passes import _Prep

__all__ = ["AFFINE", "LIFT_FACTOR", "LiftedPrep", "lift_length", "affine_rank", "flat_of"]

AFFINE = "affine"
# s in units of the sampled rows' median length (module doc: why 2)
LIFT_FACTOR = 2.0


class LiftedPrep(_Prep):
    """The rows y of a block (scaled, minus the centre) with one more coordinate, ``lift``."""

    def __init__(self, scale, centre, lift: float):
        super().__init__(scale, centre)
        self.centre = centre        # kept when zero: the lifted block is always a new one
        self.lift = float(lift)

    def __call__(self, B, slot=3):
        b, d = B.shape
        Y = scratch(b, d + 1, slot)
        self._into(B, Y[:, :d])
        Y[:, d] = self.lift
        return Y


def lift_length(sample, prep: _Prep) -> float:
    """s: LIFT_FACTOR times the median length |y| of the sampled rows (their mean length when
    more than half are at the centre; 0 only when every sampled row is)."""
    nrm = np.empty(sample.shape[0])
    for a in range(0, sample.shape[0], 4096):
        Y = prep(np.asarray(sample[a:a + 4096], dtype=np.float64))
        nrm[a:a + Y.shape[0]] = np.sqrt(np.einsum("ij,ij->i", Y, Y))
    s = float(np.median(nrm)) if nrm.size else 0.0
    return LIFT_FACTOR * (s if s > 0 else float(nrm.mean()) if nrm.size else 0.0)


def affine_rank(eigenvalues, n: int, d: int) -> int:
    """The rank of the flat from the lifted rows' (d + 1) spectrum: the elbow of the whole
    spectrum (:func:`robustcore.rank.scree_elbow`, the offset's eigenvalue in it) less the
    offset; at least 1, at most min(n, d) - 1.

    Why not ``center="none"``'s rule (the offset apart, the elbow of the rest,
    :func:`robustcore.rank.linear_rank`), which stop 48 used: the lifted offset is a choice of
    units, and with it out of the chord the elbow of the rest followed the lift (8 of the 15
    development tables changed rank between s x 0.5, x1 and x2; 5 with the offset in it)."""
    r = scree_elbow(eigenvalues, rank_cap(n, d) + 1) - 1
    return int(min(max(r, 1), min(n, d) - 1))


def flat_of(fit: Refined, centre, lift: float) -> Refined:
    """The flat of the data (point in ``mean``, r directions) of the lifted rows' (r + 1)-dimensional
    linear subspace ``fit`` (components (r + 1, d + 1), ``centre`` the columns' medians, scaled)."""
    V, sv = fit.components, fit.singular_values
    c = V[:, -1]                       # each basis vector's lifted coordinate
    nc = float(np.linalg.norm(c))
    if nc <= 1e-12:
        raise ValueError('center="affine": the selected rows span no offset (the lifted coordinate '
                         'is off their subspace); use center="median"')
    u = c / nc
    w0 = u @ V                          # the unit vector of the subspace with the largest lifted coordinate (nc)
    point = w0[:-1] * (lift / nc)       # where that vector's line meets the lift
    Q = np.linalg.qr(np.column_stack([u, np.eye(u.size)]))[0][:, 1:u.size]   # u's complement in span
    # the directions ordered by the selected rows' energy along them (diag(sv²) in V's basis)
    w, E = np.linalg.eigh(Q.T @ (sv[:, None] ** 2 * Q))
    w, E = w[::-1], E[:, ::-1]
    D = (Q @ E).T @ V                   # (r, d + 1) orthonormal, lifted coordinate 0 up to rounding
    # the point is the foot of the perpendicular from the medians to the flat (w0 is orthogonal
    # to the directions): the coordinates along them are measured from there
    return Refined(np.ascontiguousarray(D[:, :-1]), centre + point, np.sqrt(np.maximum(w, 0.0)), fit.inliers)
