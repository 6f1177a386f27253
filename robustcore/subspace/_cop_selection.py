"""Coherence Pursuit's subspace matrix made in its coherence pass, not in a pass of its own.

The subspace is spanned by the top eigenvectors of Σ ŷŷᵀ over the k most coherent rows. Which
rows those are is known only once every row's coherence is, i.e. after the coherence pass, which
is why that sum used to take one more pass over the table (reading it again: what costs most out
of core).

Instead, the first pass keeps a sample of the rows (every ``stride``-th, about 20,000:
``_scan``'s ``sample_stride``); their coherences, exact once C is known, place the selection
cut: the share of usable rows left out is a quantile, and a band of quantiles around it
(:data:`BAND_QUANTILE_SIGMAS` binomial standard deviations either side) should hold the true cut.
The coherence pass then adds up Σ ŷŷᵀ over the rows above the band and keeps the rows inside it
(index, coherence, ŷ). Once the cut τ is known, the kept rows the selection takes (coherence
above τ, and ties at τ in index order, as ``_cop_passes._select_top`` takes them) are added.
When τ falls outside the band, or the band holds more than :data:`BAND_MAX_BYTES`, the separate
pass is made as before (the caller sees ``None``).
"""
from __future__ import annotations

import math

import numpy as np

from .._row_stats import syrk_lower

__all__ = ["BAND_QUANTILE_SIGMAS", "BAND_MAX_BYTES", "selection_band", "SelectionBand"]

# Half-width of the band in binomial standard deviations of the sampled quantile.
BAND_QUANTILE_SIGMAS = 4.0
# Bytes of band rows (ŷ, index, coherence) kept at most, beyond which the separate pass is made.
BAND_MAX_BYTES = 32 * 2**20


def selection_band(coherence, left_out: float):
    """(low, high) coherence band around the sampled selection cut, or None. ``coherence``: the
    sampled usable rows'; ``left_out``: the share of usable rows the selection leaves out."""
    m = coherence.size
    if m < 2 or not 0.0 <= left_out < 1.0:
        return None
    half = BAND_QUANTILE_SIGMAS * math.sqrt(left_out * (1.0 - left_out) / m) + 2.0 / m
    low = -math.inf if left_out - half <= 0.0 else float(np.quantile(coherence, left_out - half))
    high = math.inf if left_out + half >= 1.0 else float(np.quantile(coherence, left_out + half))
    return low, high


class SelectionBand:
    """Σ ŷŷᵀ (lower triangle) of the usable rows whose coherence is above the band, and the rows
    inside it kept aside; fed by the coherence pass. ``normalised(B, start, rows)``: ŷ of the
    block's rows picked by the mask ``rows`` (``_cop_passes._Selected``: the same numbers the
    separate pass would make)."""

    def __init__(self, d, normalised, band, max_bytes=None):
        self.normalised = normalised
        self.low, self.high = band
        self.max_rows = (BAND_MAX_BYTES if max_bytes is None else max_bytes) // (8 * (d + 2))
        self.G = np.zeros((d, d), order="F")
        self.n_above = 0
        self.kept, self.n_kept, self.overflow = [], 0, False

    def feed(self, B, start, coherence, usable):
        above = usable & (coherence > self.high)
        inside = usable & (coherence >= self.low) & (coherence <= self.high)
        if self.overflow:
            inside[:] = False
        elif self.n_kept + int(np.count_nonzero(inside)) > self.max_rows:
            self.overflow, self.kept = True, []
            inside[:] = False
        need = above | inside
        if not need.any():
            return
        Y = self.normalised(B, start, need)
        up = above[need]
        self.G = syrk_lower(Y if up.all() else Y[up], self.G)
        self.n_above += int(np.count_nonzero(up))
        if inside.any():
            idx = np.flatnonzero(inside)
            self.kept.append((start + idx, coherence[idx], Y[~up]))
            self.n_kept += idx.size

    def merge(self, other):
        self.G = self.G + other.G
        self.n_above += other.n_above
        self.overflow = self.overflow or other.overflow
        self.kept = [] if self.overflow else self.kept + other.kept
        self.n_kept += other.n_kept
        return self

    def gram_at(self, tau: float, k: int):
        """Σ ŷŷᵀ (lower triangle) of the k selected rows for the cut ``tau``, or None when the
        band cannot give it (``tau`` outside it, an overflow, counts that do not add up)."""
        if self.overflow or not self.low <= tau <= self.high:
            return None
        if self.kept:
            idx = np.concatenate([p[0] for p in self.kept])
            coh = np.concatenate([p[1] for p in self.kept])
            Y = np.vstack([p[2] for p in self.kept])
            order = np.argsort(idx, kind="stable")
            coh, Y = coh[order], Y[order]
        else:
            coh, Y = np.zeros(0), None
        sel = coh > tau
        need = k - self.n_above - int(np.count_nonzero(sel))
        ties = np.flatnonzero(coh == tau)
        if need < 0 or need > ties.size:
            return None
        sel[ties[:need]] = True
        G = self.G.copy(order="F")
        if sel.any():
            G = syrk_lower(Y[sel], G)
        return G
