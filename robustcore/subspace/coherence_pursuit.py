"""Coherence Pursuit: a robust subspace from the samples that agree most with the others.

Rahmani & Atia, "Coherence Pursuit: Fast, Simple, and Robust Subspace Recovery", ICML 2017.
Samples are ROWS here (the paper puts them in columns). Inliers lying in an r-dimensional
subspace have large inner products with one another after normalisation, while outliers spread
over the whole space are nearly orthogonal to everything, so ranking samples by their summed
(squared) coherence with the rest separates the two without any iterative optimisation.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from .._base import ConvergenceWarning, Estimator, fit_method
# (calibration_rows and residual_limit live in robustcore._outlier; their names stay here)
from .._outlier import (LIMIT_ALPHA, OutlierScores, calibration_rows,  # noqa: F401
                        residual_limit)
from .._params import check_range, param_error
from .._centering import column_location
from .._progress import Reporter
from .._scaling import auto_scaling, frames_input
from .._residual import residual_sq
from .._validation import OVERFLOW_FIX, check_finite, check_magnitude, check_random_state
from ..linalg import fix_signs
from ..rank import rank_cap, rank_rule
from ._base import SubspaceModel, calibration_spectrum
from ._cop_calibration import calibration_rows_in_memory
from ._cop_passes import RankDeficientWarning, fit_in_passes, warn_rank_deficient
from ._scan import input_rows, load_rows
from ._coherence_pursuit_params import PARAMS

__all__ = ["CoherencePursuit", "coherence_scores", "residual_limit",
           "RankDeficientWarning"]

# Entries of one Gram block (rows x n); 1e7 doubles = 80 MB.
_GRAM_BLOCK_ENTRIES = 10_000_000
# Entries of one (rows x d) block in the d x d shortcut.
_ROW_BLOCK_ENTRIES = 4_000_000
# A row is degenerate when its centred norm is this small relative to the largest norm.
_DEGENERATE_RTOL = 1e-12
# In adaptive sampling a sample whose sketch has shrunk below this fraction of its original
# length is already explained by the picked directions; only rounding is left of it.
_DEFLATION_FLOOR = 1e-8
# Refinement repeats calibrate-and-refit until the kept set stops changing, at most this often.
# The first limit comes from the few selected samples, whose residuals are biased low (they
# shaped the subspace), so it is too tight; each pass calibrates on a larger, less biased set.
_REFINE_MAX_PASSES = 10


def coherence_scores(Xn, norm: int = 2, *, method: str = "auto", chunk_size: int | None = None,
                     progress=None) -> np.ndarray:
    """Coherence of every row of a row-normalised matrix with all the other rows.

    Parameters
    ----------
    Xn : ndarray (n, d)
        Rows of unit length, or all-zero rows (which get score 0).
    norm : {1, 2}
        ``2``: ``p_i = sqrt(sum_{j != i} (x_i . x_j)^2)``; ``1``: ``p_i = sum_{j != i} |x_i . x_j|``.
    method : {"auto", "gram", "shortcut"}
        ``"gram"`` forms the Gram matrix one block of rows at a time (b x n entries each);
        ``"shortcut"`` (norm 2 only) uses ``p_i^2 = x_i' C x_i - |x_i|^4`` with the d x d matrix
        ``C = Xn' Xn``; ``"auto"`` takes the shortcut for norm 2 when ``2 d <= n`` (it costs
        ``2 n d^2`` instead of ``n^2 d``).
    chunk_size : int or None
        Rows per block; None picks blocks of about 1e7 Gram entries (or 4e6 row entries for the
        shortcut), so memory stays O(n * chunk) and no n x n matrix is ever formed.
    progress : callable or Reporter, optional
        Called once per block.

    Returns
    -------
    scores : ndarray (n,)
    """
    rep = progress if isinstance(progress, Reporter) else Reporter(progress)
    Xn = np.asarray(Xn, dtype=np.float64)
    n, d = Xn.shape
    if norm not in (1, 2):
        raise param_error("norm", "one of 1, 2", norm)
    if method == "auto":
        method = "shortcut" if (norm == 2 and 2 * d <= n) else "gram"
    if method == "shortcut" and norm != 2:
        raise ValueError("method='shortcut' exists only for norm=2; use method='gram' for norm=1")
    if method not in ("gram", "shortcut"):
        raise param_error("method", "one of 'auto', 'gram', 'shortcut'", method)
    sq = np.einsum("ij,ij->i", Xn, Xn)
    out = np.empty(n)
    if method == "shortcut":
        b = chunk_size or max(1, _ROW_BLOCK_ENTRIES // max(d, 1))
        nblocks = 2 * math.ceil(n / b)
        C = np.zeros((d, d))
        for k, start in enumerate(range(0, n, b)):
            B = Xn[start:start + b]
            C += B.T @ B
            rep((k + 1) / nblocks, "coherence (covariance)")
        done = nblocks // 2
        for k, start in enumerate(range(0, n, b)):
            B = Xn[start:start + b]
            q = np.einsum("ij,ij->i", B @ C, B) - sq[start:start + b] ** 2
            # Rounding can leave tiny negatives where the true value is 0.
            out[start:start + b] = np.sqrt(np.maximum(q, 0.0))
            rep((done + k + 1) / nblocks, "coherence scores")
        return out
    b = chunk_size or max(1, _GRAM_BLOCK_ENTRIES // max(n, 1))
    nblocks = math.ceil(n / b)
    for k, start in enumerate(range(0, n, b)):
        stop = min(start + b, n)
        G = Xn[start:stop] @ Xn.T
        G[np.arange(stop - start), np.arange(start, stop)] = 0.0
        if norm == 1:
            out[start:stop] = np.abs(G, out=G).sum(axis=1)
        else:
            out[start:stop] = np.sqrt(np.einsum("ij,ij->i", G, G))
        rep((k + 1) / nblocks, "coherence scores")
    return out


def _svd_rows(Y):
    """Singular values and right singular vectors of Y; tall Y is reduced by QR first (faster)."""
    if Y.shape[0] > 2 * Y.shape[1]:
        Y = np.linalg.qr(Y, mode="r")
    _, s, vt = np.linalg.svd(Y, full_matrices=False)
    return s, vt


@dataclass
class _Refined:
    """What the refinement ends with (see ``CoherencePursuit._refine``)."""

    components: np.ndarray
    mean: np.ndarray
    singular_values: np.ndarray
    inliers: np.ndarray
    limit: float | None
    passes: int
    converged: bool


@dataclass
class _Centred:
    """The data after the centring step: normalised rows and which rows are degenerate."""

    centre: np.ndarray
    Xn: np.ndarray
    degenerate: np.ndarray
    valid_idx: np.ndarray


class CoherencePursuit(SubspaceModel, OutlierScores, Estimator):
    """Coherence Pursuit (CoP) robust subspace recovery, samples as rows.

    Steps: centre the data (``center``); normalise every row to unit length; score each row by
    its coherence with all other rows (``norm``); select the most coherent rows (``selection``);
    the subspace is spanned by the top ``n_components`` right singular vectors of the selected
    NORMALISED rows (so no sample weighs more because it is large). Optionally ``refine``: refit
    by PCA on every sample close enough to that subspace.

    Attributes
    ----------
    n_components_ : int
        The rank r used: ``n_components``, or the estimate when it is None.
    components_ : ndarray (r, d)
        Orthonormal basis rows of the subspace, sign-fixed (largest absolute entry positive).
    mean_ : ndarray (d,)
        The centre used (zeros for center="none"; after refinement the mean of the kept samples).
    coherence_ : ndarray (n,)
        Coherence score per training sample; higher = more inlier-like. 0 for degenerate samples.
    selected_indices_ : ndarray of int
        Sorted indices of the samples CoP selected (before refinement).
    inlier_indices_ : ndarray of int
        Sorted indices of the samples the final subspace was fitted on (the refined set when
        ``refine=True``, otherwise ``selected_indices_``).
    degenerate_ : ndarray (n,) of bool
        Samples equal to the centre (zero after centring): neither inlier nor outlier.
    singular_values_ : ndarray (r,)
        Top singular values of the matrix the subspace was taken from.
    refine_limit_ : float or None
        The squared-residual cut of the last refinement pass (None without refinement).
    n_refine_passes_ : int
        Refits done by the refinement (0 without refinement).
    converged_ : bool
        False only when the refinement's kept set was still changing after 10 passes (a
        ConvergenceWarning is issued; the last pass is used).
    calibration_indices_ : ndarray of int
        Sorted indices of the samples the SPE/T² limits were calibrated on (``_cop_calibration.calibration_cut``).
    variances_ : ndarray (r,)
        Variance of the calibration samples along each component (T²'s denominators).
    spe_limit_, t2_limit_ : float
        The SPE and T² limits at alpha = 0.01 (as ResidualScorer's).
    residual_eigenvalues_, thetas_ : ndarray
        The calibration samples' residual eigenvalues and their sums to the powers 1, 2, 3.
    spe_limit_method_ : str
        "jackson-mudholkar", or Box's approximation where that formula is undefined.
    scale_center_, scale_ : ndarray (d,)
        The centre subtracted from and the spread divided into each column.
    scaling_ : str
        The scaling used ("none", "standard" or "robust"; "auto" resolved).
    limit_calibration_ : dict
        What the calibration on the training scores did to both limits ("action", "factor",
        "reason"; robustcore.limits.control_limits).
    offset_ : float
        ``score_samples - offset_ = decision_function`` (robustcore._outlier).
    n_features_in_, n_samples_fit_ : int
        Features and training samples seen by ``fit``.

    Notes
    -----
    **Outlier score.** ``max(SPE / spe_limit_, T² / t2_limit_)`` (robustcore.subspace._base): distance off and
    along the recovered subspace, each in units of its limit. ``score_samples`` is minus that.
    Coherence itself (``coherence_``) is not the outlier score: it is blind to magnitude (a
    sample 1000 times longer along the subspace is as coherent as any), and as a score it ranked
    outliers BELOW inliers on two public tables (ROC-AUC 0.22 and 0.24).
    """

    _params = PARAMS  # declared in _coherence_pursuit_params.py (read by the registry without this module)

    def __init__(self, n_components: int | None = None, *, norm: int = 2, selection: str = "count",
                 n_inliers: int | None = None, outlier_fraction: float = 0.5,
                 center: str = "none", refine: bool = False, refine_alpha: float = 0.01,
                 noise_threshold: float = 0.0, n_repeats: int = 1, chunk_size: int | None = None,
                 random_state=None, scale: str = "auto", contamination="auto"):
        self.n_components = n_components
        self.norm = norm
        self.selection = selection
        self.n_inliers = n_inliers
        self.outlier_fraction = outlier_fraction
        self.center = center
        self.refine = refine
        self.refine_alpha = refine_alpha
        self.noise_threshold = noise_threshold
        self.n_repeats = n_repeats
        self.chunk_size = chunk_size
        self.random_state = random_state
        self.scale = scale
        self.contamination = contamination

    # -- fitting --------------------------------------------------------------------------
    @fit_method()
    def fit(self, X, y=None, progress=None):
        """Recover the subspace from X (n_samples, n_features), in memory or lazy. Returns self.

        ``progress(fraction, message)`` is called once per block of the coherence computation;
        returning False (or raising Cancelled) stops the fit and leaves the estimator unfitted.

        The ℓ2 coherence with selection "count" or "fraction" and no refinement is computed in
        passes over blocks of rows (robustcore.subspace._cop_passes), the same code in memory
        and out of core, when there are at least two rows per feature; ℓ1, adaptive selection
        and the refinement need the rows in memory (random access), and out of core they are
        refused with a message that says so.
        """
        p = self._start_fit()
        rep = Reporter(progress)
        X, frames = frames_input(X, out_of_core=True)
        rows = input_rows(self, X, reset=True, min_samples=2, min_features=2)
        # (frames and pixel ranges resolved here: the passes' scan sees only column moments)
        p["scale"] = auto_scaling(p["scale"], None if rows.lazy else rows.X, frames=frames)
        if rows.lazy:
            _refuse_out_of_core(p)
        if p["chunk_size"] is not None:
            rows.block_rows = int(p["chunk_size"])
        if self._passes_apply(p, rows.n, rows.d):
            fit, kept = fit_in_passes(self, rows, p, rep)
            self._set_fitted(**fit)
            self._set_fitted(**self._training_offset(p["contamination"], rows, kept=kept))
            self._keep_rows(rows=rows, **kept)
            return self
        X = load_rows(rows, "Coherence Pursuit", "on a table with fewer than two rows per feature "
                      "compares every pair of rows")
        return self._fit_dense(X, p, rep)

    @staticmethod
    def _passes_apply(p, n, d) -> bool:
        """Whether the fit runs in passes over blocks of rows (see ``fit``)."""
        return p["norm"] == 2 and p["selection"] in ("count", "fraction") and not p["refine"] \
            and 2 * d <= n

    def _fit_dense(self, X, p, rep):
        """The fit with every row in memory (ℓ1, adaptive selection, refinement, wide data)."""
        n, d = X.shape
        check_finite(X)
        raw = X
        X, scaling = self._fit_scaled(X, p["scale"])
        check_magnitude(X, method="Coherence Pursuit", fix=OVERFLOW_FIX)
        r, estimate = self._rank_to_use(p, n, d)

        rep(0.0, "centring")
        c = self._centre_and_normalise(X, p["center"], r)
        rep(0.05, "coherence scores")
        score = coherence_scores(c.Xn, int(p["norm"]), chunk_size=p["chunk_size"],
                                 progress=rep.span(0.05, 0.85))
        score[c.degenerate] = 0.0

        rep(0.85, "selecting samples")
        selected = self._select(c, score, r, p)

        rep(0.9, "subspace")
        s, vt = _svd_rows(c.Xn[selected])
        if estimate:
            r = min(rank_rule(p["center"])(s * s, rank_cap(n, d)), min(n, d) - 1)
        warn_rank_deficient(s, r, selected.size)
        degenerate = c.degenerate
        fit = _Refined(vt[:r], c.centre, s[:r].copy(), np.sort(selected), None, 0, True)
        if p["refine"]:
            c.Xn = None   # the refinement works on the un-normalised data: free the copy
            fit = self._refine(X, fit, ~degenerate, r, p, rep.span(0.95, 1.0))
        comps = fix_signs(fit.components)
        calib, bounding = calibration_rows_in_memory(residual_sq(X, comps, fit.mean), ~degenerate)
        if calib.size <= r + 1:     # a tiny data set: too few rows left to estimate spreads
            calib = bounding = np.flatnonzero(~degenerate)
        var, lam = calibration_spectrum(X[calib], comps, fit.mean)
        rep(1.0, "done")
        from .._passes import Rows
        outside = np.ones(n, dtype=bool)
        outside[bounding] = False    # the limits are bounded by these rows' scores
        training = self._training_provider(Rows(raw), scaling, comps, fit.mean, exclude=outside)
        self._set_fitted(
            **scaling,
            **self._limit_fields(calib.size, var, lam, alpha=LIMIT_ALPHA, training=training),
            calibration_indices_=calib,
            n_components_=r,
            components_=comps,
            mean_=fit.mean,
            coherence_=score,
            selected_indices_=np.sort(selected),
            inlier_indices_=fit.inliers,
            degenerate_=degenerate,
            singular_values_=fit.singular_values,
            refine_limit_=fit.limit,
            n_refine_passes_=fit.passes,
            converged_=fit.converged,
            n_samples_fit_=n,
        )
        self._set_fitted(**self._offset(p["contamination"], lambda: self._outlier_score(X)))
        self._keep_rows(rows=Rows(raw), extra=self._training_extra(n))
        return self

    def _training_extra(self, n) -> dict:
        selected = np.zeros(n, dtype=bool)
        selected[self.inlier_indices_] = True
        return {"coherence": self.coherence_, "degenerate": self.degenerate_, "selected": selected}

    @staticmethod
    def _rank_to_use(p, n, d):
        """(r, estimate): the rank to work with, and whether it is to be estimated (then r = 1
        stands in for the bounds that involve it, since the rank is at least 1)."""
        if p["n_components"] is None:
            if p["selection"] == "adaptive":
                raise param_error("n_components", "an integer >= 1 with selection='adaptive' (it "
                                  "samples r directions, so r must be given; use selection='count' "
                                  "to estimate it)", None)
            return 1, True
        r = check_range("n_components", p["n_components"], 1, min(n, d) - 1, integer=True,
                        hint=f"below min(n_samples, n_features) = {min(n, d)}; here n_samples = "
                             f"{n}, n_features = {d}")
        return r, False

    @staticmethod
    def _centre_and_normalise(X, how, r) -> _Centred:
        """Subtract the centre, mark rows equal to it as degenerate, scale the rest to unit
        length (degenerate rows become 0)."""
        n, d = X.shape
        centre = column_location(X, how)
        Xn = X - centre
        norms = np.sqrt(np.einsum("ij,ij->i", Xn, Xn))
        top = norms.max()
        degenerate = norms <= _DEGENERATE_RTOL * top if top > 0 else np.ones(n, dtype=bool)
        valid_idx = np.flatnonzero(~degenerate)
        if valid_idx.size <= r:
            raise ValueError(f"X has only {valid_idx.size} sample(s) that differ from the centre "
                             f"({how}), but n_components = {r} needs at least {r + 1}")
        inv = np.zeros(n)
        inv[valid_idx] = 1.0 / norms[valid_idx]
        Xn *= inv[:, None]
        return _Centred(centre, Xn, degenerate, valid_idx)

    def _select(self, c: _Centred, score, r, p):
        """Indices of the samples the subspace is taken from (``selection``)."""
        n_valid = c.valid_idx.size
        order = c.valid_idx[np.argsort(-score[c.valid_idx], kind="stable")]
        if p["selection"] == "count":
            n = c.degenerate.size
            deg_note = f"; {n - n_valid} sample(s) are degenerate" if n_valid < n else ""
            k = p["n_inliers"]
            if k is None:
                k = max(r, math.ceil(n_valid / 2))
            k = check_range("n_inliers", k, r, n_valid, integer=True,
                            hint=f"between n_components and the {n_valid} usable samples{deg_note}")
            return order[:k]
        if p["selection"] == "fraction":
            f = p["outlier_fraction"]
            keep = n_valid - math.floor(f * n_valid)
            if keep < r:
                fmax = (n_valid - r) / n_valid
                raise param_error("outlier_fraction", f"a number in [0, {fmax:.4g}] so that at least "
                                  f"n_components = {r} of the {n_valid} usable samples remain", f)
            return order[:keep]
        selected = _adaptive_sampling(c.Xn, score, ~c.degenerate, r, p,
                                      check_random_state(p["random_state"]))
        if selected.size < r:
            raise ValueError(f"adaptive sampling found only {selected.size} sample(s) adding a new "
                             f"direction, fewer than n_components = {r}; lower noise_threshold "
                             f"(now {p['noise_threshold']:g}) or n_components")
        return selected

    @staticmethod
    def _refine(X, start: _Refined, usable, r, p, rep) -> _Refined:
        """Refit by PCA on every usable sample within a robust residual limit (see class doc)."""
        n, d = X.shape
        comps, mean, sing = start.components, start.mean, start.singular_values
        trusted = kept = start.inliers
        limit = None
        passes = 0
        for k in range(_REFINE_MAX_PASSES):
            res = residual_sq(X, comps, mean)
            # Residuals below 1e-10 of a typical sample's length are rounding, i.e. exact fits.
            Zt = X[trusted] - mean
            floor = 1e-20 * float(np.median(np.einsum("ij,ij->i", Zt, Zt)))
            limit = max(residual_limit(res[trusted], p["refine_alpha"]), floor)
            del Zt
            new = np.flatnonzero(usable & (res <= limit))
            if new.size <= r:
                warnings.warn(f"refinement kept only {new.size} samples, too few for "
                              f"n_components = {r}; keeping the subspace of the previous step",
                              RankDeficientWarning, stacklevel=4)
                break
            if k > 0 and np.array_equal(new, kept):
                break
            kept = new
            passes = k + 1
            mean = X[kept].mean(axis=0) if p["center"] != "none" else np.zeros(d)
            s, vt = _svd_rows(X[kept] - mean)
            comps, sing = vt[:r], s[:r].copy()
            trusted = kept
            rep((k + 1) / _REFINE_MAX_PASSES, "refining")
        else:
            warnings.warn(f"refinement did not settle within {_REFINE_MAX_PASSES} passes (the kept "
                          f"set still changed); using the last pass", ConvergenceWarning, stacklevel=4)
            return _Refined(comps, mean, sing, np.sort(kept), limit, passes, False)
        return _Refined(comps, mean, sing, np.sort(kept), limit, passes, True)


def _adaptive_sampling(Xn, score, usable, r, p, rng):
    """Algorithm 2 (adaptive column sampling), with Remark 1's repeats; returns indices."""
    n, d = Xn.shape
    sdim = 2 * r
    if sdim < d:
        Q, _ = np.linalg.qr(rng.standard_normal((d, sdim)))
        sketch = Xn @ Q
    else:
        sketch = Xn
    base = np.sqrt(np.einsum("ij,ij->i", sketch, sketch))
    floor = np.maximum(p["noise_threshold"], _DEFLATION_FLOOR) * base
    available = usable.copy()
    picked: list[int] = []
    for _ in range(p["n_repeats"]):
        cur = sketch.copy()
        for _ in range(r):
            left = np.sqrt(np.einsum("ij,ij->i", cur, cur))
            cand = np.where(available & (left > floor), score, -np.inf)
            j = int(np.argmax(cand))
            if not np.isfinite(cand[j]):
                break
            f = cur[j] / left[j]
            cur -= np.outer(cur @ f, f)
            available[j] = False
            picked.append(j)
    return np.array(picked, dtype=np.intp)


def _refuse_out_of_core(p):
    """Options that need random access to the rows, refused for lazy input (saying why)."""
    if p["norm"] != 2:
        raise param_error("norm", "2 for data out of core (the ℓ1 coherence sums over every pair "
                          "of rows; load the data into memory to use norm=1)", p["norm"])
    if p["selection"] == "adaptive":
        raise param_error("selection", "'count' or 'fraction' for data out of core (adaptive "
                          "sampling picks rows one at a time from a random sketch of all of them; "
                          "load the data into memory to use it)", p["selection"])
    if p["refine"]:
        raise param_error("refine", "False for data out of core (the refinement refits on rows "
                          "chosen anew at every step; load the data into memory to use it)", p["refine"])
