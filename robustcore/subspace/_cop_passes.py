"""Coherence Pursuit (ℓ2, selection "count" or "fraction") in passes over blocks of rows.

The same code runs in memory (a loop over cache-sized blocks) and out of core (Dask blocks);
nothing n x d is ever formed. With y the scaled, centred rows and ŷ = y / |y| (degenerate rows,
|y| <= 1e-12 max |y|, are left out):

1. column moments, finiteness and magnitude checks, the scaling (``_scan``); with no scaling and
   no centring (the defaults, on data in one unit) the same pass also forms C = Σ ŷŷᵀ and, in
   memory, keeps every row's |y|² for the bounds pass (``_cop_fit._first_pass``);
2. C = Σ ŷŷᵀ (d x d), the largest and smallest |y| (skipped when pass 1 made it);
3. coherence p_i = sqrt(ŷ_iᵀ C ŷ_i - 1) and the degenerate flags, per row (one d x d product
   per row, triangular, |Lᵀŷ|² with C = LLᵀ, when C is positive definite): kept in memory or,
   beyond the memory budget, in a Zarr store;
   the selection: the k most coherent rows, ties in index order (exact order statistics of
   the kept coherence: ``robustcore._order_stats`` in memory, two passes over the stored
   values otherwise). In memory (ℓ2, count or fraction, outside ``fit_row_results``) this
   pass gives bounds on every row's coherence from C's top eigenvectors instead, and only
   the rows whose bounds straddle the cut get the exact form (``_cop_bounds``): the same
   selection; ``coherence_`` is then made when first read;
4. Σ ŷŷᵀ over the selected rows, whose top eigenvectors span the subspace (when that
   spectrum spans more than 1 / GRAM_RCOND, one more pass takes an R factor of the selected
   rows, TSQR, for the singular values to full precision). Out of core this sum rides on pass
   3: pass 1 samples every ``stride``-th row (about 100,000), whose coherences place the
   selection cut in a band; pass 3 sums the rows above it and keeps the few inside
   (``_cop_selection``), and this pass is made only when the band misses the cut;
5. every row's SPE and coordinates, kept as in 3: one thin product per row, the SPE |y|² - |t|²
   with the explicit residual only where that difference would lose digits
   (robustcore._residual's rule);
   the calibration rows: all usable rows but those whose log SPE exceeds median + 3 MAD
   (order statistics of the kept SPE); their calibration spectrum (Σ t² along each component,
   EᵀE = P A P from their scatter A, d x d, the explicit residual only where that would lose
   digits) is summed in this same pass, over the rows below a band around the sample's cut
   (from the same sample) plus the few rows inside it kept aside (``_cop_calibration``);
6. only when the band misses the cut (or holds too many rows): the calibration spectrum in a
   pass of its own.

The passes are run by the one route of every parameter set, ``_cop_fit.fit_cop``.

Five passes over the table (four when pass 1 forms C, three out of core; one more for a median
centre, three more for "robust" scaling out of core, one when a row's length is positive but
degenerate, one when a band misses its cut). In memory the passes loop over cache-sized blocks
of rows (a large table in lanes, on every free core: ``robustcore._lanes``), and the d x d
products of a loop use one BLAS library (numpy's in the lanes, which releases the GIL, and in
the scan and the subspace pass, where its syrk is faster; scipy's in place otherwise). The
outlier scores and flags of the training rows follow from the kept SPE and coordinates without
another pass (``SubspaceModel.fit_row_results``).
"""
from __future__ import annotations

import functools
import math
import warnings

import numpy as np
from scipy.linalg.blas import dtrmm as _dtrmm

from .._blas_nogil import trmm_rows
from .._blas_policy import fits_on_one_blas_thread
from .._params import check_range
from .._outlier import log_residual
from .._passes import count_true, gil_free, kth_of_slices_of, kth_smallest, rowwise, scratch
from .._row_stats import scale_rows, syrk_lower
from ._cop_memory import RankDeficientWarning
from ._cop_calibration import bounds_cut, calibration_cut
from ._cop_selection import selection_band
from ._coherence_pursuit_params import fraction_bound, inliers_bound

__all__ = ["RankDeficientWarning", "warn_rank_deficient", "selection_count"]

# Sampled rows scaled per block (prep's scratch stays block-sized).
_SAMPLE_BLOCK = 4096


def warn_rank_deficient(s, r, n_selected):
    """Warn when the selected samples (singular values ``s``) span fewer than r directions."""
    if s.size < r or s[r - 1] <= 1e-10 * s[0]:
        warnings.warn(f"the {n_selected} selected samples span fewer than n_components = {r} "
                      f"directions; the basis is partly arbitrary. Select more samples or lower "
                      f"n_components", RankDeficientWarning, stacklevel=4)


class _Prep:
    """Scaled, centred rows y of a block, in a scratch buffer (the same numbers in every pass)."""

    def __init__(self, scale, centre):
        self.scale = scale
        self.centre = centre if np.any(centre) else None

    def __call__(self, B, slot=3):
        if self.scale is None and self.centre is None:
            return B
        return self._into(B, scratch(*B.shape, slot))

    def _into(self, B, Y):
        """Y := the block's scaled, centred rows (Y of B's shape; not both scale and centre None)."""
        if self.scale is not None:
            np.subtract(B, self.scale[0], out=Y)
            Y /= self.scale[1]
            if self.centre is not None:
                Y -= self.centre
        else:
            np.subtract(B, self.centre, out=Y)
        return Y


def _normalised(Y, cut, slot=4, sq=None):
    """(ŷ rows of Y whose norm exceeds ``cut``, in a scratch buffer; which rows those are; the
    norms). ``sq``: the rows' |y|² when a pass before made them (the same numbers)."""
    nrm = np.sqrt(np.einsum("ij,ij->i", Y, Y) if sq is None else sq)
    valid = nrm > cut
    inv = np.zeros(nrm.size)
    inv[valid] = 1.0 / nrm[valid]
    return scale_rows(Y, inv, scratch(Y.shape[0], Y.shape[1], slot)), valid, nrm


class _UnitGram:
    """Σ ŷŷᵀ over rows of positive length, the largest and the smallest positive length."""

    def __init__(self, d, prep, cut=0.0, upto=math.inf):
        self.prep, self.cut, self.upto = prep, cut, upto
        self.G = np.zeros((d, d), order="F")
        self.top_norm, self.low_norm = 0.0, math.inf

    def add(self, B, start):
        Y = self.prep(B)
        Xn, valid, nrm = _normalised(Y, self.cut)
        if self.upto < math.inf:          # only the rows with cut < |y| <= upto
            valid &= nrm <= self.upto
        if valid.any():
            self.G = syrk_lower(Xn[valid] if not valid.all() else Xn, self.G)
            self.low_norm = min(self.low_norm, float(nrm[valid].min()))
        self.top_norm = max(self.top_norm, float(nrm.max(initial=0.0)))

    def merge(self, other):
        self.G = self.G + other.G
        self.top_norm = max(self.top_norm, other.top_norm)
        self.low_norm = min(self.low_norm, other.low_norm)
        return self


class _CoherenceForm:
    """The quadratic form ŷ ↦ ŷᵀCŷ of the coherence pass. With a Cholesky factor C = LLᵀ it is
    |Lᵀŷ|², a sum of squares (never negative by rounding); a C that is not numerically positive
    definite (rows spanning fewer than d directions) keeps the general product. scipy's
    triangular product (half the flops of a general one): on one thread through its wrapper;
    where threads run the blocks (out of core, in-memory lanes: robustcore._passes.gil_free)
    called with the GIL released (robustcore._blas_nogil), the same routine and bits, or
    numpy's general product when that cannot be reached or BLAS has several threads (a loop
    alternating between two libraries' thread pools stalls)."""

    def __init__(self, C):
        self.C = C
        try:
            self.L = np.asfortranarray(np.linalg.cholesky(C))
        except np.linalg.LinAlgError:
            self.L = None

    def __call__(self, Xn, keep=False):
        """ŷᵀCŷ of every row of Xn (a scratch buffer, overwritten unless ``keep``)."""
        if self.L is None:
            return np.einsum("ij,ij->i", Xn @ self.C, Xn)
        threads = gil_free()
        if threads and (trmm_rows is None or not fits_on_one_blas_thread()):
            W = np.matmul(Xn, self.L, out=scratch(Xn.shape[0], Xn.shape[1], 5))      # rows ŷᵀL
            return np.einsum("ij,ij->i", W, W)
        if keep:
            W = scratch(Xn.shape[0], Xn.shape[1], 5)
            W[...] = Xn
            Xn = W
        if threads:
            W = trmm_rows(np.ascontiguousarray(Xn), self.L)       # rows ŷᵀL in place, the GIL released
            return np.einsum("ij,ij->i", W, W)
        # Xnᵀ is the Fortran-ordered view of the C-ordered buffer: Lᵀ Xnᵀ overwrites it
        W = _dtrmm(1.0, self.L, Xn.T, side=0, lower=1, trans_a=1, overwrite_b=1)
        return np.einsum("ij,ij->i", W.T, W.T)


def _coherence_block(B, start, prep, form, cut, acc=None):
    """Coherence and degenerate flag of each row of a block: p² = ŷᵀCŷ - |ŷ|⁴ (|ŷ| = 1); given
    ``acc`` (a SelectionBand), also its sums."""
    Xn, valid, _ = _normalised(prep(B), cut)
    q = form(Xn, keep=acc is not None)      # the band's sums read Xn
    q -= valid
    coh = np.sqrt(np.maximum(q, 0.0))
    if acc is not None:
        acc.feed(B, start, coh, valid, Xn)
    return {"coherence": coh, "degenerate": ~valid}


def _sampled(sample, prep, cut):
    """y of the sampled rows that are usable, from the first pass's raw sample (the sample
    itself, a view in memory, when no scaling or centre applies and every row is usable)."""
    if prep.scale is None and prep.centre is None:
        Y = np.asarray(sample, dtype=np.float64)
    else:       # a new array, not prep's scratch (which would stay at the sample's size)
        Y = np.empty((sample.shape[0], sample.shape[1] + (getattr(prep, "lift", None) is not None)))
        for s in range(0, sample.shape[0], _SAMPLE_BLOCK):
            Y[s:s + _SAMPLE_BLOCK] = prep(sample[s:s + _SAMPLE_BLOCK])
    usable = np.sqrt(np.einsum("ij,ij->i", Y, Y)) > cut
    return Y if usable.all() else Y[usable]


class _Selected:
    """ŷ of the selected rows of a block (RowGram's transform); ``sq``: every row's |y|² when
    the bounds pass made them (``_cop_bounds.bounds_block``), not made again."""

    def __init__(self, prep, cut):
        self.prep, self.cut = prep, cut

    def __call__(self, B, start, selected, sq=None):
        # the selected rows first (about half of them), then only those are scaled and normalised
        sel = np.asarray(selected, bool)
        Bs = np.compress(sel, B, axis=0)
        Xn, valid, _ = _normalised(self.prep(Bs), self.cut, sq=None if sq is None else np.compress(sel, sq))
        return Xn if valid.all() else Xn[valid]


class _SelectedR:
    """R factor (TSQR) of the selected rows' ŷ."""

    def __init__(self, d, prep, cut):
        self.sel = _Selected(prep, cut)
        self.R = np.zeros((0, d))

    def add(self, B, start, selected):
        self.R = np.linalg.qr(np.vstack([self.R, self.sel(B, start, selected)]), mode="r")

    def merge(self, other):
        self.R = np.linalg.qr(np.vstack([self.R, other.R]), mode="r")
        return self


def _take(B, start, keep):
    return np.asarray(keep, bool)


def _select_top(coh, degenerate, k: int, n_valid: int):
    """(the k most coherent non-degenerate rows as a bool per row, the cut τ: the coherence of
    the least coherent of them); ties at the cut in index order (what a stable sort by
    decreasing coherence takes first)."""
    tau = float(kth_smallest(coh, [n_valid - k], exclude=degenerate, message="selection")[0])
    if isinstance(coh, np.ndarray):
        # masks only, no n-sized float copy with the degenerate rows at -inf (240 MB of fresh
        # pages at 30M rows, 0.3-0.5 s of system time on this VM): τ is a usable row's
        # coherence, >= 0, so "above τ or tied with it, and usable" picks the same rows
        usable = np.logical_not(np.asarray(degenerate, dtype=bool))
        sel = np.greater(coh, tau)
        sel &= usable
        need = k - int(np.count_nonzero(sel))
        if need:
            tie = np.equal(coh, tau)
            tie &= usable
            sel[np.flatnonzero(tie)[:need]] = True
        return sel, tau
    return _select_top_stored(coh, degenerate, k, tau), tau


def _select_top_stored(coh, degenerate, k, tau):
    """_select_top for stored coherence, in plain slices: counts per slice decide how many ties
    each takes (in index order, as in memory), then a sweep writes the selection."""
    from ..bigdata._rows import fill_rows, row_slices, sliceable
    coh, degenerate = sliceable(coh, "coherence"), sliceable(degenerate, "degenerate")

    def scores(c, g):
        return np.where(np.asarray(g, bool), -np.inf, c)
    above, ties = 0, []
    for _, (c, g) in row_slices([coh, degenerate]):
        s = scores(c, g)
        above += int(np.count_nonzero(s > tau))
        ties.append(int(np.count_nonzero(s == tau)))
    need, quotas = k - above, []
    for t in ties:
        quotas.append(min(t, max(need, 0)))
        need -= quotas[-1]
    quota = iter(quotas)

    def block(c, g):            # fill_rows steps through the same slices as row_slices
        s = scores(c, g)
        sel = s > tau
        sel[np.flatnonzero(s == tau)[:next(quota)]] = True
        return {"selected": sel}
    return fill_rows(block, {"selected": (np.dtype(bool), ())}, [coh, degenerate], name="selected")["selected"]


def _usable_median(values, degenerate, n_use, fn=None):
    """The median of the non-degenerate entries (numpy's np.median, exactly); of ``fn(values)``
    (element-wise) when given, for values read in slices (never written whole)."""
    ks = [(n_use - 1) // 2, n_use // 2]
    if fn is None:
        a, b = kth_smallest(values, ks, exclude=degenerate, message="calibration")
    else:
        from ..bigdata._rows import sliceable
        a, b = kth_of_slices_of(sliceable(values), ks, sliceable(degenerate), fn=fn)
    return a if ks[0] == ks[1] else 0.5 * (a + b)


def _abs_dev(centre, v):
    """|v - centre| in one new array (not two: 240 MB each at 30M rows)."""
    out = np.subtract(v, centre)
    return np.abs(out, out=out)


def _calibration_mask(spe, degenerate, n_use, r):
    """The calibration rows (``_cop_calibration.calibration_cut``): usable rows whose log SPE
    (``log_residual`` of ``spe``) is at most median + 3 MAD of the usable rows' (all usable rows
    when that leaves r + 1 or fewer), and the rows whose scores bound the limits (``bounds_cut``).
    Returns (mask, count, the cut on log SPE or None when all usable rows are taken, the rows
    left out of the bounds). Per-row results read in slices (out of core) take the same values
    in fewer sweeps: the log SPE and the MAD's deviations are made slice by slice in each sweep,
    never written (a stored log SPE cost a write of 240 MB at 30M rows, about what three sweeps
    of logs cost: 0.1 s each), and both masks and the count come from one sweep
    (``_sliced_masks``)."""
    if isinstance(spe, np.ndarray):
        log_spe = _halves(_log_into, np.float64, spe)           # log_residual(spe)
        med = _usable_median(log_spe, degenerate, n_use)
        dev = _halves(functools.partial(_abs_dev_into, med), np.float64, log_spe)
        mad = _usable_median(dev, degenerate, n_use)
        del dev
    else:
        # log_residual never decreases, so the median's order statistics are the logs of the
        # SPE's own: two sweeps without a log (np.log of 30M values: 0.1 s a sweep)
        ks = [(n_use - 1) // 2, n_use // 2]
        a, b = log_residual(kth_smallest(spe, ks, exclude=degenerate, message="calibration"))
        med = a if ks[0] == ks[1] else 0.5 * (a + b)
        mad = _usable_median(spe, degenerate, n_use, fn=functools.partial(_log_dev, med))
    wide = bounds_cut(med, mad)
    cut = calibration_cut(med, mad)
    if isinstance(spe, np.ndarray) and isinstance(degenerate, np.ndarray):
        keep = _halves(functools.partial(_usable_at_most, cut), bool, log_spe, degenerate)
        n_keep = count_true(keep)
        left_out = _halves(functools.partial(_usable_at_most, wide, invert=True), bool, log_spe, degenerate)
    else:
        keep, left_out, n_keep = _sliced_masks(spe, degenerate, cut, wide)
    if n_keep <= r + 1:            # a tiny data set: too few rows left to estimate spreads
        keep = rowwise(np.logical_not, degenerate, name="calibration")
        return keep, n_use, None, rowwise(np.logical_not, keep, name="calibration")
    return keep, n_keep, cut, left_out


def _halves(fill, dtype, *arrays):
    """A new per-row array ``out`` (in memory) with ``fill(out, *arrays)`` (element-wise) made
    on the two halves of the rows side by side where the process has a free core
    (``_lanes.both``; from ``_order_stats.SPLIT_MIN`` rows), else at once: the same values. These
    sweeps run between two threaded passes, and the first touch of a fresh array of a million
    rows costs 6-8 ms of page faults here, shared by the halves too."""
    from .._lanes import both
    from .._order_stats import SPLIT_MIN
    n = arrays[0].shape[0]
    out = np.empty(n, dtype)
    if n < SPLIT_MIN:
        fill(out, *arrays)
        return out
    h = n // 2
    both(lambda: fill(out[:h], *[a[:h] for a in arrays]), lambda: fill(out[h:], *[a[h:] for a in arrays]))
    return out


def _log_into(out, spe):
    """``log_residual(spe)`` into ``out`` (its operations: the same bits)."""
    np.maximum(spe, np.finfo(float).tiny, out=out)
    np.log(out, out=out)


def _abs_dev_into(centre, out, v):
    """``_abs_dev(centre, v)`` into ``out``."""
    np.subtract(v, centre, out=out)
    np.abs(out, out=out)


def _usable_at_most(cut, out, v, degenerate, invert=False):
    """Usable rows (not ``degenerate``) with ``v`` <= ``cut`` into ``out``; ``invert``: the others."""
    np.less_equal(v, cut, out=out)
    out &= np.logical_not(degenerate)
    if invert:
        np.logical_not(out, out=out)


def _log_dev(centre, spe):
    """|log SPE - centre| of a slice of SPE, in one new array."""
    return _abs_dev(centre, log_residual(spe))


def _sliced_masks(spe, degenerate, cut, wide):
    """(the calibration rows, the rows left out of the bounds, the count of the former) of
    per-row results read in slices: one sweep, held or stored by the budget's rule."""
    from ..bigdata._rows import fill_rows, sliceable
    count = [0]

    def block(s, g):
        v = log_residual(s)
        usable = ~np.asarray(g, bool)
        keep = usable & (v <= cut)
        count[0] += int(np.count_nonzero(keep))
        return {"keep": keep, "left_out": ~(usable & (v <= wide))}
    out = fill_rows(block, {"keep": (np.dtype(bool), ()), "left_out": (np.dtype(bool), ())},
                    [sliceable(spe, "spe"), sliceable(degenerate, "degenerate")], name="calibration",
                    working=True)
    return out["keep"], out["left_out"], count[0]


def selection_count(p, n, n_valid, r) -> int:
    """How many of the ``n_valid`` usable rows (of ``n``) to select (``selection`` "count" or
    "fraction"); refused with a message when that leaves fewer than r. With center="affine"
    r counts the lifted offset's direction too (``_cop_affine``), and the messages say so."""
    affine = p.get("center") == "affine"
    if p["selection"] == "count":
        k = p["n_inliers"]
        if k is None:
            k = max(r, math.ceil(n_valid / 2))
        low, high, hint = inliers_bound(n, n_valid, r, affine)   # the declared rule, n_valid known
        return check_range("n_inliers", k, low, high, integer=True, hint=hint)
    low, high, hint, low_in, high_in = fraction_bound(n, n_valid, r, affine)   # the declared rule
    f = check_range("outlier_fraction", p["outlier_fraction"], low, high, low_inclusive=low_in,
                    high_inclusive=high_in, hint=hint)
    # (at least r: f n_valid may round up to the next integer when f is an ulp below the bound)
    return max(r, n_valid - math.floor(f * n_valid))


def _selection_band(sample, form, p, n, n_sampled, r):
    """The coherence band that should hold the selection cut (_cop_selection), from the usable
    sampled rows ``sample`` (y) of ``n_sampled``; None when the sample cannot place it."""
    if sample.shape[0] < 2:
        return None
    Xn = sample / np.sqrt(np.einsum("ij,ij->i", sample, sample))[:, None]
    coh = np.sqrt(np.maximum(form(Xn) - 1.0, 0.0))
    n_valid = max(1, round(n * sample.shape[0] / n_sampled))
    try:
        k = selection_count(p, n, n_valid, r)
    except ValueError:          # the real count decides (and says what is wrong) after the pass
        return None
    return selection_band(coh, (n_valid - k) / n_valid)
