"""Coherence Pursuit's subspace matrix made in its coherence pass, not in a pass of its own.

The subspace is spanned by the top eigenvectors of Σ ŷŷᵀ over the k most coherent rows. Which
rows those are is known only once every row's coherence is, i.e. after the coherence pass, which
is why that sum used to take one more pass over the table (reading it again: what costs most out
of core).

Instead, the first pass keeps a sample of the rows (every ``stride``-th, about 100,000:
``_scan``'s ``sample_stride``); their coherences, exact once C is known, place the selection
cut: the share of usable rows left out is a quantile, and a band of quantiles around it
(:data:`BAND_QUANTILE_SIGMAS` binomial standard deviations either side) should hold the true cut.
The coherence pass then adds up Σ ŷŷᵀ over the rows above the band and keeps the rows inside it
(index, coherence, the row as read). Once the cut τ is known, the kept rows the selection takes (coherence
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
# Bytes of band rows (as read, index, coherence) kept at most, in all, beyond which the separate
# pass is made (30M x 50 float32 rows sampled by 100,000: about 80 MB).
BAND_MAX_BYTES = 128 * 2**20


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
    separate pass would make).

    The rows inside the band are kept as read (float32 when that holds them exactly: a table of
    float32 is read as such), not as ŷ, and normalised again by ``normalised`` once the cut is
    known, only those the selection takes: half the memory, and no n_band x d copies at the end
    (30M x 50 rows: the band held 0.9M rows, 360 MB as ŷ). The cap on what is kept holds for the
    merged sums too."""

    def __init__(self, d, normalised, band, max_bytes=None):
        self.normalised = normalised
        self.low, self.high = band
        self.max_bytes = BAND_MAX_BYTES if max_bytes is None else max_bytes
        self.G = np.zeros((d, d), order="F")
        self.n_above = 0
        self.kept, self.n_kept, self.n_bytes, self.overflow = [], 0, 0, False

    def feed(self, B, start, coherence, usable, Xn=None):
        """A block's rows as read (B), their coherence and usable rows; ``Xn``: their ŷ when
        the coherence pass has them (zeros for rows that are not usable), else made again."""
        above = usable & (coherence > self.high)
        inside = usable & (coherence >= self.low) & (coherence <= self.high)
        if not self.overflow and inside.any():
            idx = np.flatnonzero(inside)
            raw = np.compress(inside, B, axis=0)
            with np.errstate(over="ignore", invalid="ignore"):
                small = raw.astype(np.float32)
            if np.array_equal(small, raw):
                raw = small
            self._keep(start + idx, coherence[idx], raw)
        if above.any():
            rows = np.compress(above, Xn, axis=0) if Xn is not None else self.normalised(B, start, above)
            self.G = syrk_lower(rows, self.G)
            self.n_above += int(np.count_nonzero(above))

    def _keep(self, idx, coh, raw):
        nbytes = idx.nbytes + coh.nbytes + raw.nbytes
        if self.n_bytes + nbytes > self.max_bytes:
            self.overflow, self.kept = True, []
            return
        self.kept.append((idx, coh, raw))
        self.n_kept += idx.size
        self.n_bytes += nbytes

    def merge(self, other):
        self.G = self.G + other.G
        self.n_above += other.n_above
        self.overflow = self.overflow or other.overflow or self.n_bytes + other.n_bytes > self.max_bytes
        self.kept = [] if self.overflow else self.kept + other.kept
        self.n_kept += other.n_kept
        self.n_bytes += other.n_bytes
        return self

    def gram_at(self, tau: float, k: int):
        """Σ ŷŷᵀ (lower triangle) of the k selected rows for the cut ``tau``, or None when the
        band cannot give it (``tau`` outside it, an overflow, counts that do not add up)."""
        if self.overflow or not self.low <= tau <= self.high:
            return None
        if self.kept:
            idx = np.concatenate([p[0] for p in self.kept])
            coh = np.concatenate([p[1] for p in self.kept])
        else:
            idx, coh = np.zeros(0, np.intp), np.zeros(0)
        # ties at the cut are taken in index order (the kept parts come in any order)
        order = np.argsort(idx, kind="stable")
        sel_sorted = coh[order] > tau
        need = k - self.n_above - int(np.count_nonzero(sel_sorted))
        ties = np.flatnonzero(coh[order] == tau)
        if need < 0 or need > ties.size:
            return None
        sel_sorted[ties[:need]] = True
        sel = np.empty_like(sel_sorted)
        sel[order] = sel_sorted
        G = self.G.copy(order="F")
        at = 0
        for p_idx, _, raw in self.kept:
            take = sel[at:at + p_idx.size]
            at += p_idx.size
            if take.any():
                G = syrk_lower(self.normalised(np.asarray(raw, dtype=np.float64), 0, take), G)
        return G
