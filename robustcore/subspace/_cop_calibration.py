"""Coherence Pursuit's calibration spectrum made in its residual pass, not in a pass of its own.

The SPE/T² limits are calibrated on the usable rows whose log SPE is at most median + 3 MAD
(:func:`calibration_cut`; their scores bound the limits over the wider :func:`bounds_cut`)
(``_cop_passes._calibration_mask``): EᵀE and Σ t² of those rows. The cut is known only once every
row's SPE is, i.e. after the residual pass, which is why the calibration used to take one more
pass over the table (reading it again: what costs most out of core) to form the residuals again.

Instead, the first pass keeps a sample of the rows (every ``stride``-th, about
:data:`SAMPLE_ROWS`; ``_scan``'s ``sample_stride``), whose usable rows' cut is a close estimate
of the table's; a band around it, :data:`BAND_SIGMAS`
robust standard deviations of the sample's log SPE either side, should hold the true cut. The
residual pass then adds up EᵀE and Σ t² of the usable rows below the band, and keeps the few rows
inside it (their log SPE, t and e); once the cut is known, the kept rows at or below it are added.
When the cut falls outside the band, or the band holds more than :data:`BAND_MAX_ROWS` rows, the
separate pass is made as before (the caller sees ``None``).

**EᵀE without explicit residuals.** With V the components (orthonormal rows), P = I - VᵀV and
e = P y, EᵀE = P A P where A = Σ yyᵀ: the residual pass sums the rows' own scatter A and forms
no residual (the update Y - T V and a copy of every block saved: the SPE comes from |y|² - |t|²,
``robustcore._residual``). P A P cancels: an entry of A is rounded to about ε |y|² of the rows
summed (ε a few u, u = 2⁻⁵³: about 5 u measured on the 1M x 50 benchmark table), and that
error stays in P A P, whose size is the rows' Σ |e|². So a row goes into A only when its
|y|² / SPE is at most :data:`PAP_MAX_RATIO`, which keeps A's rounding within about
PAP_MAX_RATIO ε of the calibration rows' Σ |e|² (1e-11 relative for ε = 5 u), the rounding of
the explicit route (about sqrt(|y|² / SPE) u per row) being at most a hundredth of that; the
rows beyond it (near-exact fits, rows far from the origin with small residuals) get their
explicit residual, summed into EᵀE directly. On the benchmark table every row but a few
thousand goes into A, and the residual eigenvalues agree with the explicit route's to 5.5e-13
relative (their sums of powers, the limits' θ, to 8e-14).
"""
from __future__ import annotations

import numpy as np

from .._outlier import MAD_NORMAL, log_residual, median_mad_cut
from .._residual import residual_scores
from .._row_stats import gram_add, symmetric, syrk_lower
from ._base import Calibration

__all__ = ["SAMPLE_ROWS", "BAND_SIGMAS", "BAND_MAX_ROWS", "BAND_SAMPLE_ROWS", "sample_stride", "thinned",
           "calibration_cut", "bounds_cut", "calibration_band", "CalibrationBand", "residual_block",
           "residual_block_sq", "PAP_MAX_RATIO"]

# Rows the subspace pass samples for the band (at most about this many: every n // SAMPLE_ROWS-th).
SAMPLE_ROWS = 100_000
# Half-width of the band in robust standard deviations of the sample's log SPE. The sample's cut
# (median + 3 MAD) is off the table's by about 4 / sqrt(sample size) of them: 0.03 at 20,000, 0.013 at 100,000.
BAND_SIGMAS = 0.25
# Rows the band may keep (t and e: 8 (d + r + 1) bytes each), beyond which the separate pass is made.
BAND_MAX_ROWS = 200_000
# Sampled rows the band is placed from, at most (every k-th row of the first pass's sample): the
# cut is then off by about 0.025 robust standard deviations, a tenth of BAND_SIGMAS, and placing
# it costs 3 ms instead of 11 on 1M x 50 (a serial step between two threaded passes).
BAND_SAMPLE_ROWS = 25_000
# Largest |y|² / SPE of a row whose scatter goes into A (EᵀE = P A P), beyond which its explicit
# residual is summed (module doc).
PAP_MAX_RATIO = 1e4


def sample_stride(n: int) -> int:
    """Every how many rows the subspace pass samples one (about SAMPLE_ROWS of n)."""
    return max(1, n // SAMPLE_ROWS)


def thinned(sample):
    """At most about BAND_SAMPLE_ROWS of the sampled rows (every k-th)."""
    return sample[::max(1, -(-sample.shape[0] // BAND_SAMPLE_ROWS))]


def calibration_cut(med: float, mad: float) -> float:
    """The log SPE above which a usable row is left out of the rows the limits' spectrum comes
    from: median + N_MAD x 1.4826 MAD of the usable rows' log SPE."""
    return median_mad_cut(med, mad)


def bounds_cut(med: float, mad: float) -> float:
    """The log SPE above which a usable row is left out of the rows whose scores bound the
    limits (``robustcore._calibration``; those rows are flagged whatever the limits): the same
    cut as :func:`calibration_cut`, but +inf (every usable row) when the MAD is 0.

    A MAD of 0 (more than half the log SPE equal: ties, discrete columns) put the cut AT the
    median, leaving half of the inliers out and flagged (the mechanism behind smtp's 13.9 %,
    issue 35). A wider cut of 4 robust deviations was tried and undone: it took usps-1-vs-8's
    gross outliers into the bounding rows, and the flags caught 5 of its 50 known outliers
    instead of 43, at the same 0.8-1.1 % of inliers flagged."""
    if not mad > 0:
        return float("inf")
    return median_mad_cut(med, mad)


def calibration_band(sample, components):
    """(low, high) log SPE band around the sample's calibration cut, or None (too few sampled
    rows, or no spread among their log SPE: then the separate pass decides). ``sample``: at
    most about BAND_SAMPLE_ROWS rows are used (:func:`thinned`)."""
    sample = thinned(sample)
    if sample.shape[0] < 2:
        return None
    # in blocks: no sample-sized residual temporary
    spe = residual_scores(sample, components, np.zeros(sample.shape[1]), want_t2=False)[0]
    log_spe = log_residual(spe)
    med = float(np.median(log_spe))
    mad = float(np.median(np.abs(log_spe - med)))
    if not mad > 0:
        return None
    cut = calibration_cut(med, mad)
    half = BAND_SIGMAS * MAD_NORMAL * mad
    return cut - half, cut + half


class CalibrationBand(Calibration):
    """Calibration's sums over the usable rows whose log SPE is at most ``low``, plus the rows in
    (low, high] kept aside (module doc); fed by :func:`residual_block`. EᵀE is P A P + the
    explicit residuals' sum (module doc: ``A`` the scatter of the rows that keep their digits
    there, ``EE`` of the others)."""

    def __init__(self, components, mean, band, max_rows=None, numpy_syrk=False):
        super().__init__(components, mean)
        self.low, self.high = band
        self.max_rows = BAND_MAX_ROWS if max_rows is None else max_rows
        self.kept, self.n_kept, self.overflow = [], 0, False
        self.A = np.zeros_like(self.EE)
        # EᵀE by numpy's syrk, not scipy's in place: 0.12 s against 0.18 s for 0.8M x 50 rows
        # on one thread here; only where BLAS runs on one thread (``one_blas_thread``), since a
        # loop alternating between the two libraries' thread pools stalls when each has several
        self.numpy_syrk = numpy_syrk

    def _sum(self, G, B):
        return gram_add(B, G) if self.numpy_syrk else syrk_lower(B, G)

    def feed(self, Y, T, spe, sq, usable):
        """A block's centred rows Y (not changed), coordinates T, SPE, |y|² and usable rows."""
        log_spe = log_residual(spe)
        low = usable & (log_spe <= self.low)
        b = int(np.count_nonzero(low))
        mid = usable & (log_spe > self.low) & (log_spe <= self.high)
        m = int(np.count_nonzero(mid))
        if m and not self.overflow:
            if self.n_kept + m > self.max_rows:
                self.overflow, self.kept = True, []
            else:
                self.kept.append((log_spe[mid], T[mid], Y[mid], spe[mid], sq[mid]))
                self.n_kept += m
        if b:
            self._add(Y, T, spe, sq, low, b)

    def _add(self, Y, T, spe, sq, rows, b):
        """The sums of the ``b`` rows ``rows`` (a mask) of a block."""
        every = b == rows.size
        explicit = rows & (sq > PAP_MAX_RATIO * spe)
        k = int(np.count_nonzero(explicit))
        if k:
            # (the explicit residual of a copy of those rows, as ResidualKernel makes it)
            E = self.kern._update(Y[explicit], np.ascontiguousarray(T[explicit]))
            self.EE = self._sum(self.EE, E)
            rows = rows & ~explicit
            every = False
        if k < b:
            self.A = self._sum(self.A, Y if every else np.compress(rows, Y, axis=0))
        Tl = T if b == T.shape[0] else np.compress(rows | explicit, T, axis=0)
        self.tt += np.einsum("ij,ij->j", Tl, Tl)
        self.n += b

    def merge(self, other):
        super().merge(other)
        self.A = self.A + other.A
        # the cap holds for the merged total too, not only for each block's rows
        self.overflow = self.overflow or other.overflow or self.n_kept + other.n_kept > self.max_rows
        self.kept = [] if self.overflow else self.kept + other.kept
        self.n_kept += other.n_kept
        return self

    def spectrum_at(self, cut, n_keep, k):
        """Calibration.spectrum of the rows with log SPE <= ``cut``, or None when the band cannot
        give it (the cut outside the band, the band overflowed, or a count that differs from the
        calibration mask's ``n_keep``)."""
        if cut is None or self.overflow or not self.low <= cut <= self.high:
            return None
        for log_spe, T, Y, spe, sq in self.kept:
            sel = log_spe <= cut
            b = int(np.count_nonzero(sel))
            if b:
                self._add(Y, T, spe, sq, sel, b)
        self.kept = []
        if self.n != n_keep:
            return None
        V = self.kern.C
        P = np.eye(V.shape[1]) - V.T @ V
        PAP = P @ symmetric(self.A) @ P
        self.EE = symmetric(self.EE) + 0.5 * (PAP + PAP.T)
        return self.spectrum(k)


def residual_block(B, start, degenerate, prep, kern, acc=None, sq=None):
    """SPE and coordinates of a block's rows (and, given ``acc``, its calibration sums, which
    take rows by their log SPE); ``sq``: the rows' |y|² when a pass before made them
    (:func:`residual_block_sq`). The SPE is |y|² - |t|², the explicit residual only in the rows
    where that difference would lose digits (robustcore._residual, as every score pass makes
    it), and the calibration sums need no residual either (module doc). The log SPE is not an
    output: the calibration mask makes it from the SPE again (``_cop_passes._calibration_mask``),
    the same numbers, where storing it cost a write of 240 MB and five reads back at 30M rows."""
    Y = prep(B)
    T = kern._coordinates(Y)
    s = np.einsum("ij,ij->i", Y, Y) if sq is None else sq
    spe = kern.spe(Y, T, s=s)
    if acc is not None:
        acc.feed(Y, T, spe, s, ~np.asarray(degenerate, bool))
    return {"spe": spe, "projection": T}


def residual_block_sq(B, start, degenerate, sq, prep, kern, acc=None):
    """:func:`residual_block` with the rows' |y|² read from the bounds pass (an extra per-row
    array of ``Rows.map``: one sweep of the block fewer)."""
    return residual_block(B, start, degenerate, prep, kern, acc, sq)
