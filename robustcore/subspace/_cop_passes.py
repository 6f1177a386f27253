"""Coherence Pursuit (ℓ2, selection "count" or "fraction") in passes over blocks of rows.

The same code runs in memory (a loop over cache-sized blocks) and out of core (Dask blocks);
nothing n x d is ever formed. With y the scaled, centred rows and ŷ = y / |y| (degenerate rows,
|y| <= 1e-12 max |y|, are left out):

1. column moments, finiteness and magnitude checks, the scaling (``_scan``); with no scaling and
   no centring (the defaults, on data in one unit) the same pass also forms C = Σ ŷŷᵀ;
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
5. every row's SPE (explicit residual) and coordinates, kept as in 3;
   the calibration rows: all usable rows but those whose log SPE exceeds median + 3 MAD
   (order statistics of the kept SPE); their calibration spectrum (Σ t² along each component,
   EᵀE, d x d) is summed in this same pass, over the rows below a band around the sample's
   cut (from the same sample) plus the few rows inside it kept aside (``_cop_calibration``);
6. only when the band misses the cut (or holds too many rows): the calibration spectrum in a
   pass of its own.

The random-access steps (``_cop_memory``: the coherence from pairs of rows for ℓ1 and for
tables with fewer than two rows per feature, adaptive sampling, the refinement, the SVD of
the selected rows when their ŷ are in memory anyway) read the rows in memory; every rule
around them (scaling, centre, degenerate rows, the number selected, the selection, the
calibration rows, the limits) is the one written here, for every parameter set.

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

from .._outlier import LIMIT_ALPHA
from .._params import check_range, param_error
from .._passes import count_true, gil_free, indices, kth_smallest, rowwise, scratch
from .._residual import ResidualKernel
from .._row_stats import RowGram, symmetric, syrk_lower
from ..linalg import GRAM_RCOND, fix_signs
from ..rank import rank_cap, rank_rule
from ._base import Calibration, calibration_spectrum
from ._cop_memory import RankDeficientWarning
from ._cop_calibration import (CalibrationBand, bounds_cut, calibration_band, calibration_cut, residual_block,
                               sample_stride, thinned)
from ._cop_selection import SelectionBand, selection_band
from ._scan import scan

__all__ = ["fit_cop", "RankDeficientWarning", "warn_rank_deficient", "selection_count", "degenerate_cut"]

# A row is degenerate when its centred norm is this small relative to the largest norm.
_DEGENERATE_RTOL = 1e-12
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
        b, d = B.shape
        Y = scratch(b, d, slot)
        if self.scale is not None:
            np.subtract(B, self.scale[0], out=Y)
            Y /= self.scale[1]
            if self.centre is not None:
                Y -= self.centre
        else:
            np.subtract(B, self.centre, out=Y)
        return Y


def _normalised(Y, cut, slot=4):
    """(ŷ rows of Y whose norm exceeds ``cut``, in a scratch buffer; which rows those are)."""
    nrm = np.sqrt(np.einsum("ij,ij->i", Y, Y))
    valid = nrm > cut
    inv = np.zeros(nrm.size)
    inv[valid] = 1.0 / nrm[valid]
    return np.multiply(Y, inv[:, None], out=scratch(Y.shape[0], Y.shape[1], slot)), valid, nrm


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
    definite (rows spanning fewer than d directions) keeps the general product. On one thread
    scipy's triangular product (half the flops of a general one); out of core numpy's general
    product, which releases the GIL (robustcore._passes.gil_free)."""

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
        if gil_free():
            W = np.matmul(Xn, self.L, out=scratch(Xn.shape[0], Xn.shape[1], 5))      # rows ŷᵀL
            return np.einsum("ij,ij->i", W, W)
        if keep:
            W = scratch(Xn.shape[0], Xn.shape[1], 5)
            W[...] = Xn
            Xn = W
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
        Y = np.empty(sample.shape)
        for s in range(0, sample.shape[0], _SAMPLE_BLOCK):
            Y[s:s + _SAMPLE_BLOCK] = prep(sample[s:s + _SAMPLE_BLOCK])
    usable = np.sqrt(np.einsum("ij,ij->i", Y, Y)) > cut
    return Y if usable.all() else Y[usable]


class _Selected:
    """ŷ of the selected rows of a block (RowGram's transform)."""

    def __init__(self, prep, cut):
        self.prep, self.cut = prep, cut

    def __call__(self, B, start, selected):
        # the selected rows first (about half of them), then only those are scaled and normalised
        Bs = np.compress(np.asarray(selected, bool), B, axis=0)
        Xn, valid, _ = _normalised(self.prep(Bs), self.cut)
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
        s = np.where(degenerate, -np.inf, coh)
        sel = s > tau
        need = k - int(np.count_nonzero(sel))
        if need:
            sel[np.flatnonzero(s == tau)[:need]] = True
        return sel, tau
    return _select_top_stored(coh, degenerate, k, tau), tau


def _select_top_stored(coh, degenerate, k, tau):
    """_select_top for stored coherence: counts per block decide how many ties each takes."""
    import dask.array as da
    from dask import delayed

    from ..bigdata._dask import compute
    from ..bigdata._rows import as_dask_rows, materialize
    c = coh.to_dask() if hasattr(coh, "to_dask") else coh
    g = as_dask_rows(degenerate, c.chunks[0])
    s = da.where(g, -np.inf, c)
    above, *ties = compute(da.count_nonzero(s > tau),
                           *[delayed(lambda b: int(np.count_nonzero(b == tau)))(b)
                             for b in s.to_delayed().ravel()], message="selection")
    need, quotas = k - int(above), []
    for t in ties:
        quotas.append(min(t, max(need, 0)))
        need -= quotas[-1]

    def block(b, quota):
        sel = b > tau
        sel[np.flatnonzero(b == tau)[:quota]] = True
        return sel
    parts = [da.from_delayed(delayed(block)(b, q), shape=(size,), dtype=bool)
             for b, q, size in zip(s.to_delayed().ravel(), quotas, s.chunks[0])]
    return materialize({"selected": da.concatenate(parts)}, message="selection", name="selected")["selected"]


def _usable_median(values, degenerate, n_use):
    """The median of the non-degenerate entries (numpy's np.median, exactly)."""
    ks = [(n_use - 1) // 2, n_use // 2]
    a, b = kth_smallest(values, ks, exclude=degenerate, message="calibration")
    return a if ks[0] == ks[1] else 0.5 * (a + b)


def _abs_dev(centre, v):
    """|v - centre| in one new array (not two: 240 MB each at 30M rows)."""
    out = np.subtract(v, centre)
    return np.abs(out, out=out)


def _calibration_mask(log_spe, degenerate, n_use, r):
    """The calibration rows (``_cop_calibration.calibration_cut``): usable rows whose log SPE
    (``log_residual`` of it, made in the residual pass: a log of 30M values alone took 1 s) is
    at most median + 3 MAD of the usable rows' (all usable rows when that leaves r + 1 or fewer),
    and the rows whose scores bound the limits (``bounds_cut``).
    Returns (mask, count, the cut on log SPE or None when all usable rows are taken, bounds mask)."""
    med = _usable_median(log_spe, degenerate, n_use)
    dev = rowwise(functools.partial(_abs_dev, med), log_spe, name="calibration")
    mad = _usable_median(dev, degenerate, n_use)
    wide = bounds_cut(med, mad)
    bounds = rowwise(lambda v, g: ~g & (v <= wide), log_spe, degenerate, name="calibration")
    cut = calibration_cut(med, mad)
    keep = rowwise(lambda v, g: ~g & (v <= cut), log_spe, degenerate, name="calibration")
    n_keep = count_true(keep)
    if n_keep <= r + 1:            # a tiny data set: too few rows left to estimate spreads
        keep = rowwise(np.logical_not, degenerate, name="calibration")
        return keep, n_use, None, keep
    return keep, n_keep, cut, bounds


def selection_count(p, n, n_valid, r) -> int:
    """How many of the ``n_valid`` usable rows (of ``n``) to select (``selection`` "count" or
    "fraction"); refused with a message when that leaves fewer than r."""
    if p["selection"] == "count":
        deg_note = f"; {n - n_valid} sample(s) are degenerate" if n_valid < n else ""
        k = p["n_inliers"]
        if k is None:
            k = max(r, math.ceil(n_valid / 2))
        return check_range("n_inliers", k, r, n_valid, integer=True,
                           hint=f"between n_components and the {n_valid} usable samples{deg_note}")
    f = p["outlier_fraction"]
    keep = n_valid - math.floor(f * n_valid)
    if keep < r:
        fmax = (n_valid - r) / n_valid
        raise param_error("outlier_fraction", f"a number in [0, {fmax:.4g}] so that at least "
                          f"n_components = {r} of the {n_valid} usable samples remain", f)
    return keep


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


def degenerate_cut(top: float) -> float:
    """The length at or below which a centred row counts as degenerate (equal to the centre),
    given the largest length ``top``: every row when all are 0."""
    return _DEGENERATE_RTOL * top if top > 0 else math.inf


def _check_usable(n_valid, how, r):
    if n_valid <= r:
        raise ValueError(f"X has only {n_valid} sample(s) that differ from the centre "
                         f"({how}), but n_components = {r} needs at least {r + 1}")


def _centre(rows, sc, how, n):
    """The centre (in scaled units) of ``center``."""
    if how == "mean":
        centre = sc.scaled_mean()
    elif how == "median":
        if rows.lazy:
            v = rows.column_order_statistics(sc.sketches, [(n - 1) // 2, n // 2], message="medians")
            med = 0.5 * (v[0] + v[1])
        else:
            med = np.median(rows.X, axis=0)
        centre = (med - sc.center) / sc.scale
    else:
        centre = np.zeros(rows.d)
    if not np.all(np.isfinite(centre)):
        raise ValueError("the centre of X is not finite; check the data for values near the float64 limits")
    return centre


def _prepared(X, prep):
    """y of every row of the in-memory X (a new n x d array: the random-access steps' copy)."""
    Y = np.array(X, dtype=np.float64)
    if prep.scale is not None:
        Y -= prep.scale[0]
        Y /= prep.scale[1]
    if prep.centre is not None:
        Y -= prep.centre
    return Y


def _unit_rows(X, prep, cut=None):
    """(ŷ of every row of the in-memory X in a new array, the usable rows, the degenerate cut:
    ``cut``, or the one of these rows' lengths)."""
    Y = _prepared(X, prep)
    nrm = np.sqrt(np.einsum("ij,ij->i", Y, Y))
    if cut is None:
        cut = degenerate_cut(float(nrm.max(initial=0.0)))
    valid = nrm > cut
    inv = np.zeros(nrm.size)
    inv[valid] = 1.0 / nrm[valid]
    Y *= inv[:, None]
    return Y, valid, cut


def pairs_needed(p, n, d) -> bool:
    """Whether the coherence comes from pairs of rows (``_cop_memory.coherence_scores``): ℓ1,
    which has no d x d form, or fewer than two rows per feature, where C (d x d) would cost more
    than the n x n Gram matrix."""
    return p["norm"] != 2 or 2 * d > n


def fit_cop(est, rows, p, rep, *, selection_band_in_memory=False):
    """(fitted attributes, kept per-row results, the rows) of a Coherence Pursuit fit on
    ``rows``: the one route for every parameter set (module doc); ``coherence_`` is a callable
    when the selection came from bounds (made when first read: ``CoherencePursuit``). The steps that need random access
    (``_cop_memory``: the coherence from pairs of rows, adaptive sampling, the refinement) read
    the rows in memory; out of core they are refused before (``coherence_pursuit``), or the
    table is loaded when it fits (``load_rows``). ``selection_band_in_memory``: the selected
    rows' sum rides on the coherence pass in memory too (always out of core; in memory the
    band's masks cost more than the pass they save: 15-25 ms on 1M x 50)."""
    from ._cop_memory import Refined, adaptive_sampling, coherence_scores, refine, svd_rows
    from ._scan import load_rows
    n, d = rows.n, rows.d
    r, estimate = est._rank_to_use(p, n, d)
    how = p["center"]
    pairs = pairs_needed(p, n, d)
    adaptive = p["selection"] == "adaptive"
    if pairs and rows.lazy:
        from .._passes import Rows
        X = load_rows(rows, "Coherence Pursuit", "with norm=1, or on a table with fewer than two rows "
                      "per feature, compares every pair of rows")
        loaded = Rows(X, block_rows=rows.block_rows)
        loaded.passes = rows.passes
        rows = loaded
    # pass 1 also forms C when neither scaling nor centring can come first
    fused = how == "none" and p["scale"] in ("none", "auto") and not pairs
    stride = sample_stride(n)
    sc = scan(rows, p["scale"], method="Coherence Pursuit", scatter=False, gram=fused, sample_stride=stride,
              want_sketch=how == "median", progress=rep.span(0.0, 0.2))
    scale = None if sc.identity else (sc.center, sc.scale)
    centre = _centre(rows, sc, how, n)
    prep = _Prep(scale, centre)
    Xn = None            # ŷ of every row, when a random-access step needs them
    sel_band = band_acc = decided = None
    if pairs:
        rep(0.2, "coherence scores")
        Xn, valid, cut = _unit_rows(rows.X, prep)
        coh = coherence_scores(Xn, int(p["norm"]), method="gram", chunk_size=p["chunk_size"],
                               progress=rep.span(0.2, 0.6))
        coh[~valid] = 0.0
        degenerate = ~valid
        sample = _sampled(thinned(sc.sample), prep, cut)
    else:
        rep(0.2, "coherence matrix")
        if fused and sc.identity:
            G, top, low = sc.mom.G, sc.mom.top_norm, sc.mom.low_norm
        else:
            acc = rows.reduce(functools.partial(_UnitGram, d, prep), progress=rep.span(0.2, 0.35),
                              message="coherence matrix")
            G, top, low = acc.G, acc.top_norm, acc.low_norm
        cut = degenerate_cut(top)
        if low <= cut < math.inf:
            # rows of positive length that still count as degenerate: out of C again (rare)
            G = G - rows.reduce(functools.partial(_UnitGram, d, prep, 0.0, cut), message="degenerate rows").G
        form = _CoherenceForm(symmetric(G))
        # the sampled rows place the selection cut: the subspace sums ride on the coherence pass
        # when the sample gives a band (_cop_selection)
        with_band = (rows.lazy or selection_band_in_memory) and not adaptive
        # without a selection band only the calibration band reads the sample, and it thins it
        sample = _sampled(sc.sample if with_band else thinned(sc.sample), prep, cut)
        sel_band = _selection_band(sample, form, p, n, sc.sample.shape[0], r) if with_band else None
        rep(0.35, "coherence scores")
        exact = functools.partial(_exact_coherence, rows, prep, form, cut)
        # in memory, the selection from bounds on the coherence, exact only near the cut, and
        # coherence_ made when first read (_cop_bounds); not inside fit_row_results, whose
        # results hold every row's coherence
        decided = None
        if not (rows.lazy or with_band or adaptive or hasattr(est, "_kept_rows")):
            decided = _select_by_bounds(rows, prep, form, symmetric(G), cut, p, r, how, rep.span(0.35, 0.6))
        if decided is not None:
            degenerate, n_valid, k, selected = decided
            coh = _LazyCoherence(exact)
        else:
            out = exact(progress=rep.span(0.35, 0.6), reduce=(
                functools.partial(SelectionBand, d, _Selected(prep, cut), sel_band) if sel_band else None))
            out, band_acc = out if sel_band is not None else (out, None)
            coh, degenerate = out["coherence"], out["degenerate"]
    if decided is None:
        n_valid = n - count_true(degenerate)
    _check_usable(n_valid, how, r)
    rep(0.6, "selecting samples")
    if decided is not None:
        pass
    elif adaptive:
        if Xn is None:
            Xn = _unit_rows(rows.X, prep, cut)[0]
        picked = adaptive_sampling(Xn, coh, ~degenerate, r, p, _random_state(p))
        k = picked.size
        selected = np.zeros(n, dtype=bool)
        selected[picked] = True
    else:
        k = selection_count(p, n, n_valid, r)
        selected, tau = _select_top(coh, degenerate, k, n_valid)
    if rows.lazy and isinstance(selected, np.ndarray):
        from ..bigdata._rows import hold
        hold(selected)      # a per-row result like the others (the budget's share counts it)
    if Xn is not None:
        rep(0.65, "subspace")
        s, vt = svd_rows(Xn[selected])
        del Xn
    else:
        s, vt = _subspace(rows, prep, cut, selected, k, d, band_acc.gram_at(tau, k) if band_acc else None, rep)
    if estimate:
        r = min(rank_rule(how)(s * s, rank_cap(n, d)), min(n, d) - 1)
    warn_rank_deficient(s, r, k)
    sel_idx = indices(selected, lazy=rows.lazy)
    fit = Refined(vt[:r], centre, s[:r].copy(), sel_idx)
    if p["refine"]:
        Xs = rows.X if scale is None else (rows.X - scale[0]) / scale[1]
        fit = refine(Xs, fit, ~degenerate, r, p, rep.span(0.7, 0.75))
        del Xs
        if fit.mean is not centre:
            prep = _Prep(scale, fit.mean)
            sample = _sampled(thinned(sc.sample), prep, 0.0)
    comps = fix_signs(fit.components)
    rep(0.75, "residuals")
    # the calibration sums ride on the residual pass when the sample gives a band (_cop_calibration)
    # (not on a wide table: its EᵀE, d x d, may not fit; the n x n side is taken below)
    band = calibration_band(sample, comps) if n >= d else None
    out = rows.map(residual_block, {"spe": (np.dtype("f8"), ()), "projection": (np.dtype("f8"), (r,)),
                                    "log_spe": (np.dtype("f8"), ())},
                   prep, ResidualKernel(comps, np.zeros(d)), extra=(degenerate,),
                   progress=rep.span(0.75, 0.88), message="residuals", name="residuals",
                   reduce=functools.partial(CalibrationBand, comps, np.zeros(d), band) if band else None)
    out, cal = out if band is not None else (out, None)
    spe, proj = out["spe"], out["projection"]
    keep, n_keep, cut_spe, bounds = _calibration_mask(out.pop("log_spe"), degenerate, n_valid, r)
    spectrum = cal.spectrum_at(cut_spe, n_keep, r) if cal is not None else None
    if spectrum is None and not rows.lazy and n_keep < d:
        # a wide table: the calibration rows' n x n side (EᵀE, d x d, may not fit)
        Xs = rows.X[keep] if scale is None else (rows.X[keep] - scale[0]) / scale[1]
        spectrum = (n_keep, *calibration_spectrum(Xs, comps, fit.mean))
    if spectrum is None:
        rep(0.9, "calibration")
        spectrum = rows.reduce(functools.partial(Calibration, comps, fit.mean, scale, _take), extra=(keep,),
                               progress=rep.span(0.9, 1.0), message="calibration").spectrum(r)
    n_c, var, lam = spectrum
    kept = {"spe": spe, "projection": proj,
            "extra": {"degenerate": degenerate, "selected": _mask(fit.inliers, n) if p["refine"] else selected}}
    if not isinstance(coh, _LazyCoherence):
        kept["extra"]["coherence"] = coh
    # Bounded by the scores of the rows within bounds_cut only: with every row, a third of gross
    # outliers moves the scores' 75 % quantile into them, and the bounds with it (the textbook
    # test's planted data: SPE limit 1000x too high). Rows left out are flagged;
    # where many inliers are among them (a8a-pos: 32 %), the flag-rate warning says so.
    not_kept = rowwise(np.logical_not, bounds, name="calibration")
    limits = est._limit_fields(n_c, var, lam, alpha=LIMIT_ALPHA,
                               training=est._training_provider(rows, sc.scaling, comps, fit.mean,
                                                               kept=kept, exclude=not_kept))
    # out of core the index arrays are per-sample results too (stored beyond the budget)
    out = dict(**sc.scaling, **limits, calibration_indices_=indices(keep, lazy=rows.lazy), n_components_=r,
               components_=comps, mean_=fit.mean, coherence_=coh, selected_indices_=sel_idx,
               inlier_indices_=fit.inliers, degenerate_=degenerate, singular_values_=fit.singular_values,
               refine_limit_=fit.limit, n_refine_passes_=fit.passes, converged_=fit.converged,
               n_samples_fit_=n)
    return out, kept, rows


def _exact_coherence(rows, prep, form, cut, progress=None, reduce=None):
    """The coherence pass: every row's coherence and degenerate flag (``_coherence_block``)."""
    return rows.map(_coherence_block, {"coherence": (np.dtype("f8"), ()), "degenerate": (np.dtype(bool), ())},
                    prep, form, cut, progress=progress, message="coherence scores", name="coherence",
                    reduce=reduce)


class _LazyCoherence:
    """Every row's coherence, made by the coherence pass when first asked for (``coherence_``)."""

    def __init__(self, make):
        self.make = make

    def __call__(self):
        return self.make()["coherence"]


def _select_by_bounds(rows, prep, form, C, cut, p, r, how, rep):
    """(degenerate, usable count, k, selected) from bounds on the coherence (``_cop_bounds``),
    or None when the bounds would decide too little (the exact pass then decides)."""
    from ._cop_bounds import MAX_UNDECIDED, CoherenceBounds, bounds_block, decide
    bnd = CoherenceBounds(C)
    if not bnd.useful():
        return None
    out = rows.map(bounds_block, {"q_lo": (np.dtype("f8"), ()), "q_hi": (np.dtype("f8"), ()),
                                  "degenerate": (np.dtype(bool), ())},
                   prep, bnd, cut, progress=rep, message="coherence bounds", name="coherence")
    degenerate = out["degenerate"]
    valid = ~degenerate
    n_valid = int(np.count_nonzero(valid))
    _check_usable(n_valid, how, r)
    k = selection_count(p, rows.n, n_valid, r)
    sure, undecided = decide(out["q_lo"], out["q_hi"], valid, k)
    idx = np.flatnonzero(undecided)
    # (coherence is sqrt(max(q - 1, 0)): a cut where q <= 1 ties rows the bounds on q tell apart)
    if idx.size > MAX_UNDECIDED * n_valid or not np.all(out["q_lo"][sure] > 1.0):
        return None
    coh = _coherence_block(rows.X[idx], 0, prep, form, cut)["coherence"]
    need = k - int(np.count_nonzero(sure))
    if not 0 <= need <= idx.size:
        return None
    selected = sure
    # the most coherent of the undecided rows, ties in index order (idx is sorted)
    selected[idx[np.argsort(-coh, kind="stable")[:need]]] = True
    return degenerate, n_valid, k, selected


def _mask(idx, n):
    m = np.zeros(n, dtype=bool)
    m[idx] = True
    return m


def _random_state(p):
    from .._validation import check_random_state
    return check_random_state(p["random_state"])


def _subspace(rows, prep, cut, selected, k, d, G_sel, rep):
    """(singular values, right singular vectors) of the selected rows' ŷ, from their Σ ŷŷᵀ
    (``G_sel`` when the coherence pass made it, else a pass of its own), or from an R factor
    of them when squaring lost the small singular values."""
    if G_sel is None:
        rep(0.6, "subspace")
        G_sel = rows.reduce(functools.partial(RowGram, d, _Selected(prep, cut)), extra=(selected,),
                            progress=rep.span(0.6, 0.75), message="subspace").G
    w, V = np.linalg.eigh(symmetric(G_sel))
    m = min(k, d)
    w, V = np.maximum(w[::-1][:m], 0.0), V[:, ::-1][:, :m]
    if w[-1] < GRAM_RCOND * w[0]:
        R = rows.reduce(functools.partial(_SelectedR, d, prep, cut), extra=(selected,),
                        message="subspace (TSQR)").R
        _, s, vt = np.linalg.svd(R, full_matrices=False)
        return s, vt
    return np.sqrt(w), V.T
