"""Coherence Pursuit's one route: every parameter set, in memory and out of core.

:func:`fit_cop` runs the steps of ``_cop_passes`` (scan, C, coherence, selection, subspace,
residuals, calibration) with the rules written once there and here (the degenerate rows, the
number selected, the "differ from the centre" check, the calibration rows and their fallback).
The steps that need random access to the rows come from ``_cop_memory``: the coherence from
pairs of rows (ℓ1, and tables with fewer than two rows per feature, where C would cost more
than the n x n Gram matrix), adaptive sampling, the refinement, and the subspace from the SVD
of the selected rows when their ŷ are in memory for one of those. In memory the ℓ2 selection
comes from bounds on the coherence (``_cop_bounds``).
"""
from __future__ import annotations

import functools
import math

import numpy as np

from .._blas_policy import fits_on_one_blas_thread
from .._outlier import LIMIT_ALPHA
from .._passes import count_true, indices
from .._residual import ResidualKernel
from .._row_stats import RowGram, symmetric
from ..linalg import GRAM_RCOND, fix_signs
from ..rank import rank_cap, rank_rule
from ._base import Calibration, calibration_spectrum
from ._cop_calibration import (CalibrationBand, calibration_band, residual_block, residual_block_sq,
                               sample_stride, thinned)
from ._cop_passes import (_calibration_mask, _coherence_block, _CoherenceForm, _Prep, _sampled, _Selected,
                          _SelectedR, _select_top, _selection_band, _take, _UnitGram, selection_count,
                          warn_rank_deficient)
from ._cop_affine import AFFINE, LiftedPrep, affine_rank, flat_of, lift_length
from ._cop_selection import SelectionBand
from ._scan import scan

__all__ = ["fit_cop", "degenerate_cut", "pairs_needed"]

# A row is degenerate when its centred norm is this small relative to the largest norm.
_DEGENERATE_RTOL = 1e-12


def degenerate_cut(top: float) -> float:
    """The length at or below which a centred row counts as degenerate (equal to the centre),
    given the largest length ``top``: every row when all are 0."""
    return _DEGENERATE_RTOL * top if top > 0 else math.inf


def _check_usable(n_valid, how, r):
    """Refused when r (with center="affine" the lifted rank: n_components + 1) needs more rows."""
    if n_valid <= r:
        asked = f"{r - 1} (and the offset of center=\"affine\")" if how == AFFINE else f"{r}"
        raise ValueError(f"X has only {n_valid} sample(s) that differ from the centre "
                         f"({how}), but n_components = {asked} needs at least {r + 1}")


def _centre(rows, sc, how, n):
    """The centre (in scaled units) of ``center``."""
    if how == "mean":
        centre = sc.scaled_mean()
    elif how == AFFINE:
        # the columns' medians of the first pass's sampled rows (every stride-th row, about
        # 100,000: all rows up to 200,000), the same rows in memory and out of core; a shift
        # of a column shifts them as much (np.median of 1M x 50 costs more than a whole fit)
        centre = (np.median(np.asarray(sc.sample, dtype=np.float64), axis=0) - sc.center) / sc.scale
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
    if getattr(prep, "lift", None) is not None:       # center="affine" (_cop_affine)
        Y = np.column_stack([Y, np.full(Y.shape[0], prep.lift)])
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
    from ._cop_memory import Refined, coherence_scores, refine, svd_rows
    n, d = rows.n, rows.d
    r, estimate = est._rank_to_use(p, n, d)
    how = p["center"]
    pairs = pairs_needed(p, n, d)
    adaptive = p["selection"] == "adaptive"
    if pairs and rows.lazy:
        rows = _loaded_for_pairs(rows)
    sc, fused, first_sq = _first_pass(rows, p, how, pairs, rep.span(0.0, 0.2))
    scale = None if sc.identity else (sc.center, sc.scale)
    centre = _centre(rows, sc, how, n)
    prep = _Prep(scale, centre)
    lift = None
    if how == AFFINE:       # the lifted rows (y, s) up to the subspace, a flat after (_cop_affine)
        lift = lift_length(thinned(sc.sample), prep)
        prep, d, r = LiftedPrep(scale, centre, lift), d + 1, r + 1
    Xn = None            # ŷ of every row, when a random-access step needs them
    sel_band = band_acc = decided = sq = None     # sq: every row's |y|² when the bounds pass made them
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
            decided = _select_by_bounds(rows, prep, form, symmetric(G), cut, p, r, how, rep.span(0.35, 0.6),
                                        first_sq)
        if decided is not None:
            degenerate, n_valid, k, selected, sq = decided
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
    if decided is None:
        if adaptive and Xn is None:
            Xn = _unit_rows(rows.X, prep, cut)[0]
        selected, k, tau = _select(Xn if adaptive else None, coh, degenerate, p, n, n_valid, r)
    if rows.lazy and isinstance(selected, np.ndarray):
        from ..bigdata._rows import hold
        hold(selected)      # a per-row result like the others (the budget's share counts it)
    if Xn is not None:
        rep(0.65, "subspace")
        s, vt = svd_rows(Xn[selected])
        del Xn
    else:
        s, vt = _subspace(rows, prep, cut, selected, k, d, band_acc.gram_at(tau, k) if band_acc else None, rep, sq)
    if estimate:
        r = affine_rank(s * s, n, d - 1) + 1 if lift is not None else min(rank_rule(how)(s * s, rank_cap(n, d)),
                                                                           min(n, d) - 1)
    warn_rank_deficient(s, r, k)
    # out of core the index arrays are made when first read (not by the command line, which
    # stores the masks): 15M + 30M int64 at 30M rows, 360 MB of fresh memory and of writes
    # in memory, on the route of the bounds (the default), made when first read as well: a fit
    # that only scores never needs them (np.flatnonzero of 1M rows, 4-6 MB of fresh pages each,
    # a serial step between the threaded passes)
    lazy_idx = rows.lazy or (decided is not None and not p["refine"])
    sel_idx = _indices_when_read(selected, k, rows.lazy) if lazy_idx else indices(selected)
    fit = Refined(vt[:r], centre, s[:r].copy(), sel_idx)
    if lift is not None:
        fit, d, r = flat_of(fit, centre, lift), d - 1, r - 1
        prep, sq = _Prep(scale, fit.mean), None
        sample = _sampled(thinned(sc.sample), prep, 0.0)
    if p["refine"]:
        Xs = rows.X if scale is None else (rows.X - scale[0]) / scale[1]
        fit = refine(Xs, fit, ~degenerate, r, p, rep.span(0.7, 0.75))
        del Xs
        if fit.mean is not centre:
            prep = _Prep(scale, fit.mean)
            sample = _sampled(thinned(sc.sample), prep, 0.0)
            sq = None       # |y|² about the former centre
    comps = fix_signs(fit.components)
    rep(0.75, "residuals")
    # the calibration sums ride on the residual pass when the sample gives a band (_cop_calibration)
    # (not on a wide table: its EᵀE, d x d, may not fit; the n x n side is taken below)
    band = calibration_band(sample, comps) if n >= d else None
    out = rows.map(residual_block if sq is None else residual_block_sq,
                   {"spe": (np.dtype("f8"), ()), "projection": (np.dtype("f8"), (r,))},
                   prep, ResidualKernel(comps, np.zeros(d)), extra=(degenerate,) if sq is None else (degenerate, sq),
                   progress=rep.span(0.75, 0.88), message="residuals", name="residuals",
                   # the projections are read once more (the T² of every row), the SPE many times
                   direct=("projection",),
                   reduce=functools.partial(CalibrationBand, comps, np.zeros(d), band,
                                            numpy_syrk=fits_on_one_blas_thread()) if band else None)
    out, cal = out if band is not None else (out, None)
    spe, proj = out["spe"], out["projection"]
    rep(0.88, "limits")
    keep, n_keep, cut_spe, not_kept = _calibration_mask(spe, degenerate, n_valid, r)
    spectrum = cal.spectrum_at(cut_spe, n_keep, r) if cal is not None else None
    n_c, var, lam = spectrum or _spectrum(rows, keep, n_keep, comps, fit.mean, scale, rep)
    kept = {"spe": spe, "projection": proj,
            "extra": {"degenerate": degenerate, "selected": _mask(fit.inliers, n) if p["refine"] else selected}}
    if not isinstance(coh, _LazyCoherence):
        kept["extra"]["coherence"] = coh
    # Bounded by the scores of the rows within bounds_cut only: with every row, a third of gross
    # outliers moves the scores' 75 % quantile into them, and the bounds with it (the textbook
    # test's planted data: SPE limit 1000x too high). Rows left out are flagged;
    # where many inliers are among them (a8a-pos: 32 %), the flag-rate warning says so.
    limits = est._limit_fields(n_c, var, lam, alpha=LIMIT_ALPHA,
                               training=est._training_provider(rows, sc.scaling, comps, fit.mean,
                                                               kept=kept, exclude=not_kept))
    # out of core the index arrays are per-sample results too (stored beyond the budget)
    out = dict(**sc.scaling, **limits, n_components_=r,
               calibration_indices_=_indices_when_read(keep, n_keep, rows.lazy) if lazy_idx else indices(keep),
               components_=comps, mean_=fit.mean, coherence_=coh, selected_indices_=sel_idx,
               inlier_indices_=fit.inliers, degenerate_=degenerate, singular_values_=fit.singular_values,
               refine_limit_=fit.limit, n_refine_passes_=fit.passes, converged_=fit.converged,
               n_samples_fit_=n)
    return out, kept, rows


def _select(Xn, coh, degenerate, p, n, n_valid, r):
    """(selected mask, its count, the coherence at the cut or None) when the coherence of every
    row is known: the paper's adaptive sampling from the unit rows ``Xn`` when given, else the
    rows of largest coherence."""
    if Xn is not None:
        from ._cop_memory import adaptive_sampling
        picked = adaptive_sampling(Xn, coh, ~degenerate, r, p, _random_state(p))
        selected = np.zeros(n, dtype=bool)
        selected[picked] = True
        return selected, picked.size, None
    k = selection_count(p, n, n_valid, r)
    selected, tau = _select_top(coh, degenerate, k, n_valid)
    return selected, k, tau


def _loaded_for_pairs(rows):
    """The table in memory for the steps that compare every pair of rows (ℓ1 out of core was
    refused before: only a wide table comes here), or the reason it cannot be loaded."""
    from .._passes import Rows
    from ._scan import load_rows
    X = load_rows(rows, "Coherence Pursuit", "on a table with fewer than two rows per feature "
                  "compares every pair of rows")
    loaded = Rows(X, block_rows=rows.block_rows)
    loaded.passes = rows.passes
    return loaded


def _first_pass(rows, p, how, pairs, rep):
    """(the scan, whether it formed C, every row's |y|² from it or None). The first pass also
    forms C when neither scaling nor centring can come first, and then, in memory, keeps every
    row's |x|² for the bounds pass (not when a block was rescaled first: ``Moments``)."""
    fused = how == "none" and p["scale"] in ("none", "auto") and not pairs
    row_sq = np.empty(rows.n) if fused and not rows.lazy else None
    sc = scan(rows, p["scale"], method="Coherence Pursuit", scatter=False, gram=fused,
              sample_stride=sample_stride(rows.n), want_sketch=how == "median", row_sq=row_sq, progress=rep)
    usable = fused and sc.identity and sc.mom.row_sq_ok
    return sc, fused, row_sq if usable else None


def _spectrum(rows, keep, n_keep, comps, mean, scale, rep):
    """The calibration rows' spectrum when the residual pass could not sum it (``Calibration``
    in a pass of its own; a wide table in memory: the n x n side, EᵀE may not fit)."""
    r, d = comps.shape
    if not rows.lazy and n_keep < d:
        Xs = rows.X[keep] if scale is None else (rows.X[keep] - scale[0]) / scale[1]
        return (n_keep, *calibration_spectrum(Xs, comps, mean))
    rep(0.9, "calibration")
    return rows.reduce(functools.partial(Calibration, comps, mean, scale, _take), extra=(keep,),
                       progress=rep.span(0.9, 1.0), message="calibration").spectrum(r)


def _exact_coherence(rows, prep, form, cut, progress=None, reduce=None):
    """The coherence pass: every row's coherence and degenerate flag (``_coherence_block``)."""
    return rows.map(_coherence_block, {"coherence": (np.dtype("f8"), ()), "degenerate": (np.dtype(bool), ())},
                    prep, form, cut, progress=progress, message="coherence scores", name="coherence",
                    reduce=reduce)


class _LazyIndices:
    """np.flatnonzero of a per-row mask out of core (``robustcore._passes.indices``: held or
    stored by the budget's rule, under the out-of-core settings of the fit), made when first
    read; ``size``: their count, known before."""

    def __init__(self, mask, size: int):
        from ..bigdata._dask import get_settings
        self.mask, self.size, self._made = mask, int(size), None
        self.settings = get_settings()

    def __call__(self):
        if self._made is None:
            from ..bigdata._dask import _CURRENT
            token = _CURRENT.set(self.settings)
            try:
                self._made = indices(self.mask, lazy=True)
            finally:
                _CURRENT.reset(token)
            self.mask = None
        return self._made


def _indices_when_read(mask, size, lazy):
    """The indices of a per-row mask, made when first read (``size``: their count)."""
    return _LazyIndices(mask, size) if lazy else _MaskIndices(mask, size)


class _MaskIndices:
    """np.flatnonzero of an in-memory per-row mask, made when first read; ``size``: their
    count, known before."""

    def __init__(self, mask, size: int):
        self.mask, self.size, self._made = mask, int(size), None

    def __call__(self):
        if self._made is None:
            self._made, self.mask = np.flatnonzero(self.mask), None
        return self._made


class _LazyCoherence:
    """Every row's coherence, made by the coherence pass when first asked for (``coherence_``)."""

    def __init__(self, make):
        self.make = make

    def __call__(self):
        return self.make()["coherence"]


def _select_by_bounds(rows, prep, form, C, cut, p, r, how, rep, sq=None):
    """(degenerate, usable count, k, selected, every row's |y|²) from bounds on the coherence
    (``_cop_bounds``), or None when the bounds would decide too little (the exact pass then
    decides). ``sq``: every row's |y|² when the first pass made them (not made again)."""
    from ._cop_bounds import MAX_UNDECIDED, CoherenceBounds, bounds_block, bounds_block_sq, decide
    bnd = CoherenceBounds(C)
    if not bnd.useful():
        return None
    spec = {"q_lo": (np.dtype("f8"), ()), "q_hi": (np.dtype("f8"), ()), "degenerate": (np.dtype(bool), ())}
    if sq is None:
        out = rows.map(bounds_block, {**spec, "sq": (np.dtype("f8"), ())}, prep, bnd, cut, progress=rep,
                       message="coherence bounds", name="coherence")
    else:
        out = rows.map(bounds_block_sq, spec, prep, bnd, cut, extra=(sq,), progress=rep,
                       message="coherence bounds", name="coherence")
        out["sq"] = sq
    degenerate = out["degenerate"]
    valid = ~degenerate
    n_valid = int(np.count_nonzero(valid))
    _check_usable(n_valid, how, r)
    k = selection_count(p, rows.n, n_valid, r)
    sure, undecided, hi_k = decide(out["q_lo"], out["q_hi"], valid, k)
    idx = np.flatnonzero(undecided)
    # (coherence is sqrt(max(q - 1, 0)): a cut where q <= 1 ties rows the bounds on q tell
    # apart; a sure row's lower bound exceeds hi_k, so hi_k >= 1 settles it without a sweep)
    if idx.size > MAX_UNDECIDED * n_valid or not (hi_k >= 1.0 or np.all(out["q_lo"][sure] > 1.0)):
        return None
    coh = _coherence_block(rows.X[idx], 0, prep, form, cut)["coherence"]
    need = k - int(np.count_nonzero(sure))
    if not 0 <= need <= idx.size:
        return None
    selected = sure
    # the most coherent of the undecided rows, ties in index order (idx is sorted)
    selected[idx[np.argsort(-coh, kind="stable")[:need]]] = True
    return degenerate, n_valid, k, selected, out["sq"]


def _mask(idx, n):
    m = np.zeros(n, dtype=bool)
    m[idx] = True
    return m


def _random_state(p):
    from .._validation import check_random_state
    return check_random_state(p["random_state"])


def _subspace(rows, prep, cut, selected, k, d, G_sel, rep, sq=None):
    """(singular values, right singular vectors) of the selected rows' ŷ, from their Σ ŷŷᵀ
    (``G_sel`` when the coherence pass made it, else a pass of its own, which reads every row's
    |y|² from ``sq`` when given), or from an R factor of them when squaring lost the small
    singular values."""
    if G_sel is None:
        rep(0.6, "subspace")
        G_sel = rows.reduce(functools.partial(RowGram, d, _Selected(prep, cut)),
                            extra=(selected,) if sq is None else (selected, sq),
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
