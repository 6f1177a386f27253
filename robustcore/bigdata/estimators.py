"""Out-of-core PCA, SPE/T² scoring and Coherence Pursuit (ℓ2) on Dask arrays.

Each class is the in-memory estimator with ``fit`` (and the scoring methods) computed block by
block: the d x d statistics are reduced over row blocks in a tree, the rest is the in-memory
class's own code (limits, sign fixing, rank estimation, scoring of a block). On data that fits
in memory the numbers equal the in-memory estimators' to rounding (the tests hold them to
1e-8). Work runs on Dask's local threads, or on the cluster set by
:func:`robustcore.bigdata.settings`.

Inputs: a Dask array (n, d), a :class:`LazyTable`, or a numpy array (wrapped in blocks).
Per-row outputs of the fits (coherence, flags) are numpy arrays when they fit the memory
budget and Zarr arrays otherwise; scoring methods return lazy Dask arrays (compute them, or
store them with :func:`robustcore.bigdata.materialize`).

Numerics of the PCA ("solver"): the covariance comes from one pass of merged per-block moments
(Chan et al.) and a symmetric eigensolver. Its eigenvalues carry absolute errors of about
eps * λ_max, so small eigenvalues lose relative accuracy as λ_max / λ_j grows (measured: 3e-9 at
a ratio of 1e8, 2e-5 at 1e12). "auto" therefore adds a TSQR pass (QR of each centred block,
merged by QR of stacked R factors: singular values to the table's own precision, like the
in-memory SVD) when the smallest eigenvalue is below 1e-7 of the largest.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
from sklearn.utils.validation import check_is_fitted

from .._base import fit_method
from .._params import Param, check_range, param_error
from .._progress import Reporter
from .._outlier import LIMIT_ALPHA
from .._scaling import mixed_units, scale_param
from ..anomaly import ResidualScorer
from ..compare import robust_threshold
from ..linalg import GRAM_RCOND
from ..rank import rank_cap, scree_elbow
from ..subspace.coherence_pursuit import CoherencePursuit, RankDeficientWarning
from ..subspace._base import SubspaceModel
from ..subspace.pca import PCA, fix_signs
from . import _reductions as red
from ._dask import compute, require_dask
from ._rows import as_dask_rows, materialize

__all__ = ["DaskPCA", "DaskResidualScorer", "DaskCoherencePursuit", "as_dask", "coherence_scores",
           "median", "order_statistics"]

_DEGENERATE_RTOL = 1e-12   # as CoherencePursuit's


def as_dask(X, chunk_rows: int | None = None):
    """A Dask array (n, d) with whole rows per block from a Dask array, LazyTable or numpy array."""
    da = require_dask().array
    from ._tables import LazyTable, _rows_per_block
    if isinstance(X, LazyTable):
        X = X.array
    elif hasattr(X, "source") and getattr(X, "is_lazy", False):
        X = X.source.array
    if not isinstance(X, da.Array):
        X = np.asarray(X)
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D (n_samples, n_features); got shape {X.shape}")
        X = da.from_array(X, chunks=(_rows_per_block(X.shape[1], None, chunk_rows), X.shape[1]))
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (n_samples, n_features); got shape {X.shape}")
    if X.numblocks[1] != 1:
        X = X.rechunk({1: -1})
    if X.dtype.kind not in "biuf":
        raise ValueError(f"X must hold numbers; got dtype {X.dtype}")
    return X


def _blocks(X):
    return list(X.to_delayed().ravel())


def project(X, components, mean):
    """Lazy scores (n, k) = (X - mean) @ components.T, block by block."""
    C, m = np.asarray(components, np.float64), np.asarray(mean, np.float64)
    return X.map_blocks(lambda B: (np.asarray(B, np.float64) - m) @ C.T, dtype=np.float64,
                        chunks=(X.chunks[0], (C.shape[0],)))


def _reduce(X, chunk_fn, merge, *args):
    from dask import delayed
    return red.tree_reduce([delayed(chunk_fn)(b, *args) for b in _blocks(X)], merge)


def _check_finite(M, what="X"):
    if not np.all(np.isfinite(M)):
        raise ValueError(f"{what} contains NaN or infinite values; remove or impute them before fitting")


def _is_lazy_input(X) -> bool:
    try:
        import dask.array as da
    except ImportError:
        return False
    from ._tables import LazyTable
    return isinstance(X, (da.Array, LazyTable)) or getattr(X, "is_lazy", False)


def _out_of_core_params(params) -> tuple:
    """An in-memory estimator's declaration with ``scale`` defaulting to "none": out of core the
    table is used as it is."""
    return tuple(scale_param("none") if q.name == "scale" else q for q in params)


def _unscaled(p, d) -> dict:
    """The scaling attributes of an unscaled fit (out of core the table is used as it is):
    scale "none", or "auto" (checked against the table by :func:`_check_auto_scale`)."""
    if p.get("scale", "none") not in ("none", "auto"):
        raise param_error("scale", "'none' or 'auto' for out-of-core data (rescale the table when "
                          "writing it, or load it into memory to let the estimator scale)", p["scale"])
    return {"scale_center_": np.zeros(d), "scale_": np.ones(d), "n_features_in_": d, "scaling_": "none"}


def _check_auto_scale(p, col_var, col_mean):
    """scale="auto" out of core: fine while the table's columns share a unit (auto then keeps
    them as they are, in memory too); refused, saying why, when auto would standardise."""
    if p.get("scale") == "auto" and mixed_units(np.sqrt(np.maximum(col_var, 0.0)), col_mean):
        raise ValueError("scale='auto' would standardise this table (its columns' spreads differ more "
                         "than 10x, i.e. mixed units), which out-of-core fits do not do; rescale the "
                         "table when writing it, load it into memory, or pass scale='none' to use it "
                         "in its own units")


def _raw_scores(est, X):
    """The estimator's raw outlier score (larger = more anomalous) of every row, lazily: the
    in-memory ``_outlier_score`` applied block by block."""
    return X.map_blocks(lambda B: est._outlier_score(np.asarray(B, np.float64)), dtype=np.float64,
                        drop_axis=1)


def lazy_spe_t2(est, X):
    """(SPE, T²) of every row of X against a fitted subspace model, lazily: the in-memory
    ``SubspaceModel._spe_t2`` block by block (out of core the table is used unscaled)."""
    check_is_fitted(est, "components_")
    X = as_dask(X)
    if X.shape[1] != est.n_features_in_:
        raise ValueError(f"X has {X.shape[1]} features, but {type(est).__name__} was fitted on "
                         f"{est.n_features_in_}")
    base = SubspaceModel._spe_t2
    out = X.map_blocks(lambda B: np.stack(base(est, np.asarray(B, np.float64)), axis=1),
                       dtype=np.float64, chunks=(X.chunks[0], (2,)))
    return out[:, 0], out[:, 1]


def _percentile(A, q):
    """np.percentile(A, q) (linear interpolation) of a 1-D Dask array, exactly."""
    n = A.shape[0]
    h = (n - 1) * q / 100.0
    lo = int(math.floor(h))
    v = order_statistics(A, sorted({lo, min(lo + 1, n - 1)}), message="contamination")[:, 0]
    return float(v[0] + (h - lo) * (v[-1] - v[0]))


def _dask_offset(est, p, X) -> dict:
    """``offset_`` as the in-memory fit sets it; a given contamination takes an exact percentile."""
    c = p.get("contamination", "auto")
    if c == "auto":
        return est._offset("auto", lambda: np.asarray(compute(_raw_scores(est, X), message="scores")[0]))
    return {"offset_": -_percentile(_raw_scores(est, X), 100.0 * (1.0 - c))}


class _LazyOutlier:
    """score_samples / decision_function / predict of the outlier API, lazy for lazy input."""

    def score_samples(self, X):
        if not _is_lazy_input(X):
            return super().score_samples(X)
        check_is_fitted(self)
        return -_raw_scores(self, as_dask(X))

    def decision_function(self, X):
        if not _is_lazy_input(X):
            return super().decision_function(X)
        return self.score_samples(X) - self.offset_

    def predict(self, X):
        if not _is_lazy_input(X):
            return super().predict(X)
        import dask.array as da
        return da.where(self.decision_function(X) < 0, -1, 1)


# -- PCA ---------------------------------------------------------------------------------------

def _spectrum(X, center: bool, solver: str, rep: Reporter, p=None):
    """(n, mean, variances (min(n,d),) descending, right singular vectors (rows), solver used);
    with the parameters ``p``, scale="auto" is checked on the way (no extra pass)."""
    n, mean, M2 = compute(_reduce(X, red.moments, red.merge_moments, True),
                          progress=rep.span(0.0, 0.5), message="covariance")[0]
    if p is not None:
        _check_auto_scale(p, np.diag(M2) / max(n - 1, 1), mean)
    if not center:
        # second moments about the origin, from those about the mean
        M2 = M2 + n * np.outer(mean, mean)
        mean = np.zeros_like(mean)
    _check_finite(M2)
    d = M2.shape[0]
    if n < 2:
        raise ValueError(f"X must have at least 2 sample(s) (rows); got {n}")
    w, V = np.linalg.eigh(M2)
    w, V = np.maximum(w[::-1], 0.0), V[:, ::-1]
    used = solver
    if solver == "auto":
        used = "tsqr" if w[-1] < GRAM_RCOND * w[0] else "gram"
    if used == "tsqr":
        R = compute(_reduce(X, red.r_factor, red.merge_r, mean), progress=rep.span(0.5, 1.0),
                    message="TSQR")[0]
        _, s, vt = np.linalg.svd(R, full_matrices=False)
        var = s ** 2
    else:
        var, vt = w, V.T
    k = min(n, d)
    return n, mean, var[:k] / max(n - 1, 1), vt[:k], used


class DaskPCA(_LazyOutlier, PCA):
    """PCA of a tall table, block by block (see the module doc for the numerics).

    Parameters: those of :class:`~robustcore.subspace.pca.PCA`, and ``solver`` ("auto",
    "gram" or "tsqr"). Fitted attributes: PCA's, and ``solver_`` (the solver used).
    """

    _params = _out_of_core_params(PCA._params) + (
        Param("solver", str, "auto", "Covariance from merged block moments (gram, one pass), TSQR "
              "(one more pass, full precision for tiny eigenvalues), or auto.",
              choices=("auto", "gram", "tsqr"), advanced=True),
    )

    def __init__(self, n_components: int | None = None, *, center: bool = True, scale: str = "none",
                 contamination="auto", solver: str = "auto"):
        super().__init__(n_components, center=center, scale=scale, contamination=contamination)
        self.solver = solver

    @fit_method()
    def fit(self, X, y=None, progress=None):
        p = self._start_fit()
        rep = Reporter(progress)
        X = as_dask(X)
        n, d = X.shape
        common = _unscaled(p, d)
        if p["n_components"] is not None:
            r = check_range("n_components", p["n_components"], 1, min(n, d), integer=True,
                            hint=f"at most min(n_samples, n_features) = {min(n, d)} for this data")
        n, mean, var, vt, used = _spectrum(X, p["center"], p["solver"], rep, p)
        if p["n_components"] is None:
            r = scree_elbow(var, rank_cap(n, d))
        total = var.sum()
        self._set_fitted(**common, components_=fix_signs(vt[:r]), mean_=mean,
                         singular_values_=np.sqrt(var[:r] * (n - 1)), explained_variance_=var[:r].copy(),
                         explained_variance_ratio_=(var[:r] / total) if total > 0 else np.zeros(r),
                         all_variances_=var, n_components_=r, n_samples_fit_=n, solver_=used,
                         **self._limit_fields(n, var[:r], var[r:], alpha=LIMIT_ALPHA))
        self._set_fitted(**_dask_offset(self, p, X))
        rep(1.0, "done")
        return self

    def transform(self, X):
        """Scores: a lazy Dask array (n, r) for lazy input, numpy otherwise."""
        if not _is_lazy_input(X):
            return super().transform(X)
        check_is_fitted(self, "components_")
        return project(as_dask(X), self.components_, self.mean_)


# -- SPE / T² ---------------------------------------------------------------------------------

def _calibration_stats(B, C, m, keep=None):
    """Per block: (moments of the kept rows, sum of t², E'E) against subspace C at centre m."""
    B = np.asarray(B, np.float64)
    if keep is not None:
        B = B[np.asarray(keep, bool)]
    Z = B - m
    T = Z @ C.T
    E = Z - T @ C
    return red.moments(B), np.einsum("ij,ij->j", T, T), E.T @ E


def _merge_calibration(*parts):
    return (red.merge_moments(*[p[0] for p in parts]), sum(p[1] for p in parts), sum(p[2] for p in parts))


class DaskResidualScorer(_LazyOutlier, ResidualScorer):
    """SPE and Hotelling T² with control limits, fitted block by block.

    Same parameters, attributes and limits as :class:`~robustcore.anomaly.ResidualScorer`
    (whose limit formulas it uses); ``scores``, ``spe`` and ``t2`` return lazy Dask arrays for
    lazy input (each block scored by the in-memory code).
    """

    _params = _out_of_core_params(ResidualScorer._params) + DaskPCA._params[-1:]

    def __init__(self, n_components=None, *, alpha=0.01, limit="jackson-mudholkar", t2_limit="new",
                 center=True, scale="none", contamination="auto", solver="auto"):
        super().__init__(n_components, alpha=alpha, limit=limit, t2_limit=t2_limit, center=center,
                         scale=scale, contamination=contamination)
        self.solver = solver

    @fit_method()
    def fit(self, X, y=None, progress=None):
        p = self._start_fit()
        rep = Reporter(progress)
        X = as_dask(X)
        n, d = X.shape
        common = _unscaled(p, d)
        if n < 2 or d < 2:
            raise ValueError(f"X must have at least 2 samples and 2 features; got {n} x {d}")
        if p["n_components"] is not None:
            self._check_rank(p, n, d)
        n, mean, var, vt, _ = _spectrum(X, p["center"], p["solver"], rep.span(0.0, 0.95), p)
        total = var.sum()
        if p["n_components"] is None:
            k = min(scree_elbow(var, rank_cap(n, d)), min(n, d) - 1)
        else:
            k = self._check_rank(p, n, d)
        comps = fix_signs(vt[:max(k, 2)])
        plane = np.eye(2) if d == 2 else comps[:2].copy()
        self._set_fitted(**common,
                         **self._limits(p, n, d, comps[:k], mean, var[:k].copy(), var[k:].copy(), plane))
        self._set_fitted(**_dask_offset(self, p, X))
        rep(1.0, "done")
        return self

    def fit_subspace(self, X, components, mean, progress=None, rows=None):
        """Limits for a subspace fitted elsewhere, calibrated on X (or on its ``rows``: a boolean
        per-row array, numpy, Zarr or Dask, e.g. all but the gross outliers)."""
        if not _is_lazy_input(X):
            Xs = np.asarray(X) if rows is None else np.asarray(X)[np.asarray(rows, bool)]
            return super().fit_subspace(Xs, components, mean, progress=progress)
        from dask import delayed
        p = self._start_fit()
        rep = Reporter(progress)
        X = as_dask(X)
        d = X.shape[1]
        common = _unscaled(p, d)
        C = np.asarray(components, np.float64)
        m = np.asarray(mean, np.float64)
        if p["n_components"] is None:
            p = {**p, "n_components": C.shape[0]}
        if C.ndim != 2 or C.shape[1] != d or m.shape != (d,):
            raise ValueError(f"components must be (k, {d}) and mean ({d},); got {C.shape} and {m.shape}")
        if np.abs(C @ C.T - np.eye(C.shape[0])).max() > 1e-6:
            raise ValueError("components must have orthonormal rows (C @ C.T = I)")
        if rows is None:
            parts = [delayed(_calibration_stats)(b, C, m) for b in _blocks(X)]
        else:
            keep = as_dask_rows(rows, X.chunks[0]) if not hasattr(rows, "dask") else rows
            parts = [delayed(_calibration_stats)(b, C, m, kb)
                     for b, kb in zip(_blocks(X), keep.to_delayed().ravel())]
        (n, cmean, M2), tt, EE = compute(red.tree_reduce(parts, _merge_calibration),
                                         progress=rep.span(0.0, 0.9), message="calibration")[0]
        if n < 2:
            raise ValueError(f"the calibration rows number {n}; at least 2 are needed")
        k = self._check_rank(p, n, d)
        if C.shape[0] != k:
            raise ValueError(f"components must have n_components = {k} rows; got {C.shape[0]}")
        var = tt / (n - 1)
        lam = np.maximum(np.linalg.eigvalsh(EE)[::-1] / (n - 1), 0.0)[: max(min(n, d) - k, 1)]
        if d == 2:
            plane = np.eye(2)
        else:
            _, V = np.linalg.eigh(M2)
            plane = fix_signs(V[:, ::-1][:, :2].T)
        self._set_fitted(**common, **self._limits(p, n, d, C.copy(), m.copy(), var, lam, plane))
        if rows is not None and p["contamination"] != "auto":
            mask = compute(keep)[0] if hasattr(keep, "dask") else np.asarray(rows[:], bool)
            X = X[np.asarray(mask, bool)]
        self._set_fitted(**_dask_offset(self, p, X))
        rep(1.0, "done")
        return self

    @classmethod
    def from_pca(cls, pca, alpha: float = 0.01):
        """Limits for a fitted (Dask)PCA's subspace calibrated on its own training data: the
        variances along and off the subspace are the PCA's eigenvalues, so no pass over the data
        is needed. None when the subspace leaves no residual."""
        r, d = pca.components_.shape
        n = pca.n_samples_fit_
        if r >= min(n, d):
            return None
        est = cls(r, alpha=alpha, center=pca.center)
        p = est._start_fit()
        plane = np.eye(2) if d == 2 else pca.components_[:2].copy()
        est._set_fitted(**_unscaled(p, d), **est._limits(p, n, d, pca.components_, pca.mean_,
                                                         pca.all_variances_[:r].copy(),
                                                         pca.all_variances_[r:].copy(), plane))
        est._set_fitted(**est._offset("auto", None))
        return est

    def _lazy_scores(self, X):
        return lazy_spe_t2(self, X)

    def scores(self, X):
        return self._lazy_scores(X) if _is_lazy_input(X) else super().scores(X)

    def spe(self, X):
        return self._lazy_scores(X)[0] if _is_lazy_input(X) else super().spe(X)

    def t2(self, X):
        return self._lazy_scores(X)[1] if _is_lazy_input(X) else super().t2(X)



# -- Coherence Pursuit (ℓ2) -------------------------------------------------------------------

def _norms(B, c):
    Z = np.asarray(B, np.float64) - c
    return Z, np.sqrt(np.einsum("ij,ij->i", Z, Z))


def _coherence_matrix(B, c):
    """Per block: (Σ x̂x̂ᵀ over rows with a nonzero norm, the largest norm, the smallest nonzero norm)."""
    Z, nrm = _norms(B, c)
    nz = nrm > 0
    Xn = Z[nz] / nrm[nz, None]
    top = float(nrm.max()) if nrm.size else 0.0
    low = float(nrm[nz].min()) if nz.any() else math.inf
    return red.gram(Xn), top, low


def _merge_coherence(*parts):
    return sum(p[0] for p in parts), max(p[1] for p in parts), min(p[2] for p in parts)


def _tiny_rows(B, c, cut):
    """Σ x̂x̂ᵀ of the rows that are degenerate (0 < norm <= cut) but were counted as valid."""
    Z, nrm = _norms(B, c)
    sel = (nrm > 0) & (nrm <= cut)
    Xn = Z[sel] / nrm[sel, None]
    return red.gram(Xn)


def _coherence_block(B, c, C, cut):
    """Coherence (ℓ2) and degenerate flag of each row of one block, as two columns:
    p_i² = x̂_iᵀ C x̂_i - |x̂_i|⁴, and |x̂_i| = 1 for every valid row."""
    Z, nrm = _norms(B, c)
    valid = nrm > cut
    Z /= np.where(valid, nrm, np.inf)[:, None]          # x̂ (degenerate rows become 0)
    q = np.einsum("ij,ij->i", Z @ C, Z)
    q -= valid
    score = np.sqrt(np.maximum(q, 0.0))
    return np.stack([score, (~valid).astype(np.float64)], axis=1)


def _selected_gram(B, c, cut, sel):
    Z, nrm = _norms(B, c)
    sel = np.asarray(sel, bool) & (nrm > cut)
    Xn = Z[sel] / nrm[sel, None]
    return red.gram(Xn)


def _selection_block(score, degenerate, tau, quota):
    """Rows above tau, plus the first ``quota`` rows equal to tau (index order, as a stable sort)."""
    score = np.asarray(score)
    valid = ~np.asarray(degenerate, bool)
    sel = valid & (score > tau)
    ties = np.flatnonzero(valid & (score == tau))
    sel[ties[:int(quota)]] = True
    return sel


def coherence_scores(X, center="median", progress=None, _both=False):
    """ℓ2 coherence of every row of X with all the others, as a lazy Dask array (n,).

    ``center``: "median" (exact, two passes), "mean" (one pass), "none", or a (d,) array (e.g. a
    DaskPCA's ``mean_``, costing no pass). Then one pass forms X̂ᵀX̂ (d x d); the returned array
    costs one more pass when computed, and can be computed together with other per-row scores
    (e.g. :meth:`DaskResidualScorer.scores`) so that the table is read once for all of them.
    Degenerate rows (equal to the centre) score 0, as in :class:`CoherencePursuit`.
    """
    rep = progress if isinstance(progress, Reporter) else Reporter(progress)
    X = as_dask(X)
    if isinstance(center, str):
        if center == "median":
            centre = median(X, progress=rep.span(0.0, 0.6))
        elif center == "mean":
            centre = compute(_reduce(X, red.moments, red.merge_moments, True), progress=rep.span(0.0, 0.5),
                             message="mean")[0][1]
        elif center == "none":
            centre = np.zeros(X.shape[1])
        else:
            raise param_error("center", "'median', 'mean', 'none' or an array of length n_features", center)
    else:
        centre = np.asarray(center, np.float64)
        if centre.shape != (X.shape[1],):
            raise ValueError(f"center must have shape ({X.shape[1]},); got {centre.shape}")
    _check_finite(centre, "the centre")
    # X̂ᵀX̂ over the valid rows (degenerate rows are known only once the largest norm is).
    C, top, low = compute(_reduce(X, _coherence_matrix, _merge_coherence, centre),
                          progress=rep.span(0.6, 0.95), message="coherence matrix")[0]
    _check_finite(C)
    cut = _DEGENERATE_RTOL * top if top > 0 else math.inf
    if low <= cut < math.inf:
        C = C - compute(_reduce(X, _tiny_rows, lambda *a: sum(a), centre, cut),
                        progress=rep.span(0.95, 1.0), message="degenerate rows")[0]
    both = X.map_blocks(_coherence_block, centre, C, cut, dtype=np.float64, chunks=(X.chunks[0], (2,)))
    if _both:
        return both, centre, cut
    return both[:, 0]


def order_statistics(A, ks, progress=None, message="order statistics"):
    """Exact ks-th smallest values (0-based) of each column of a Dask array (or of a 1-D one):
    two passes (sketch, then gather within the sketch's bounds). Returns (len(ks), d)."""
    from dask import delayed
    blocks = list(A.to_delayed().ravel())
    rep = progress if isinstance(progress, Reporter) else Reporter(progress)
    sk = compute(*[delayed(red.sketch)(b) for b in blocks], progress=rep.span(0, 0.5), message=message)
    lo, hi = red.bracket(list(sk), ks)
    g = compute(red.tree_reduce([delayed(red.gather)(b, lo, hi) for b in blocks], red.merge_gathered),
                progress=rep.span(0.5, 1.0), message=message)[0]
    return red.pick(g, ks)


def median(A, progress=None):
    """Exact column medians of a 2-D Dask array, or the median of a 1-D one (numpy's
    np.median along axis 0)."""
    n = A.shape[0]
    ks = [(n - 1) // 2, n // 2]
    v = order_statistics(A, ks, progress=progress, message="median")
    m = 0.5 * (v[0] + v[1])
    return float(m[0]) if A.ndim == 1 else m


def _residual_block(B, C, m):
    """Squared distance of each row of one block to the affine subspace m + span(C's rows)."""
    from ..subspace._base import residual_sq
    return residual_sq(np.asarray(B, np.float64) - m, C)


class DaskCoherencePursuit(_LazyOutlier, CoherencePursuit):
    """Coherence Pursuit with the ℓ2 coherence, block by block.

    The coherence of row i is x̂_iᵀ (X̂ᵀX̂) x̂_i - 1 (x̂ = centred, normalised rows): one d x d
    reduction, then a map over the blocks. Same parameters and attributes as
    :class:`~robustcore.subspace.coherence_pursuit.CoherencePursuit`, restricted to what has an
    out-of-core form: ``norm=2``, ``selection`` "count" or "fraction", ``refine=False``.
    ``coherence_`` and ``degenerate_`` are numpy arrays when they fit the memory budget, Zarr
    arrays otherwise; ``selected_`` is the boolean selection, and ``selected_indices_`` /
    ``inlier_indices_`` exist when the per-row results are in memory.

    Passes over the table: centre (median: two; mean: one; none: zero), X̂ᵀX̂ (one), scores
    (one), the selected rows' X̂ᵀX̂ (one), and for the SPE/T² limits the residuals (one, plus two
    for their exact median and MAD) and the calibration statistics (one).
    """

    _params = _out_of_core_params(CoherencePursuit._params)

    def __init__(self, n_components: int | None = None, *, norm: int = 2, selection: str = "count",
                 n_inliers: int | None = None, outlier_fraction: float = 0.5,
                 center: str = "none", refine: bool = False, refine_alpha: float = 0.01,
                 noise_threshold: float = 0.0, n_repeats: int = 1, chunk_size: int | None = None,
                 random_state=None, scale: str = "none", contamination="auto"):
        super().__init__(n_components, norm=norm, selection=selection, n_inliers=n_inliers,
                         outlier_fraction=outlier_fraction, center=center, refine=refine,
                         refine_alpha=refine_alpha, noise_threshold=noise_threshold,
                         n_repeats=n_repeats, chunk_size=chunk_size, random_state=random_state,
                         scale=scale, contamination=contamination)

    @fit_method()
    def fit(self, X, y=None, progress=None):
        if not _is_lazy_input(X):
            X = as_dask(X)
        p = self._start_fit()
        rep = Reporter(progress)
        if p["norm"] != 2:
            raise param_error("norm", "2 for out-of-core data (the ℓ1 coherence needs the n x n Gram "
                              "matrix; load the data into memory for norm=1)", p["norm"])
        if p["selection"] not in ("count", "fraction"):
            raise param_error("selection", "'count' or 'fraction' for out-of-core data (adaptive "
                              "sampling needs random access to rows)", p["selection"])
        if p["refine"]:
            raise param_error("refine", "False for out-of-core data (load the data into memory to refine)",
                              p["refine"])
        from dask import delayed
        X = as_dask(X)
        n, d = X.shape
        if n < 2 or d < 2:
            raise ValueError(f"X must have at least 2 samples and 2 features; got {n} x {d}")
        common = _unscaled(p, d)
        if p["scale"] == "auto":    # one pass of column moments to see whether auto would scale
            _, cm, M2 = compute(_reduce(X, red.moments, red.merge_moments, True), message="scale check")[0]
            _check_auto_scale(p, np.diag(M2) / max(n - 1, 1), cm)
        max_r = min(n, d) - 1
        estimate = p["n_components"] is None
        r = 1 if estimate else check_range("n_components", p["n_components"], 1, max_r, integer=True,
                                           hint=f"below min(n_samples, n_features) = {min(n, d)} for this data")
        both, centre, cut = coherence_scores(X, p["center"], progress=rep.span(0.0, 0.55), _both=True)
        rows = materialize({"coherence": both[:, 0], "degenerate": both[:, 1] > 0.5},
                           progress=rep.span(0.55, 0.75), message="coherence scores", name="coherence")
        score, degenerate = rows["coherence"], rows["degenerate"]
        sc = as_dask_rows(score, X.chunks[0])
        dg = as_dask_rows(degenerate, X.chunks[0])
        n_valid = n - int(compute(dg.sum(), message="counting")[0])
        if n_valid <= r:
            raise ValueError(f"X has only {n_valid} sample(s) that differ from the centre "
                             f"({p['center']}), but n_components = {r} needs at least {r + 1}")
        deg_note = f"; {n - n_valid} sample(s) are degenerate" if n_valid < n else ""
        if p["selection"] == "count":
            k = p["n_inliers"] if p["n_inliers"] is not None else max(r, math.ceil(n_valid / 2))
            k = check_range("n_inliers", k, r, n_valid, integer=True,
                            hint=f"between n_components and the {n_valid} usable samples{deg_note}")
        else:
            f = p["outlier_fraction"]
            k = n_valid - math.floor(f * n_valid)
            if k < r:
                raise param_error("outlier_fraction", f"a number in [0, {(n_valid - r) / n_valid:.4g}] so that "
                                  f"at least n_components = {r} of the {n_valid} usable samples remain", f)
        # The k-th largest valid score (degenerate rows sort below every valid one).
        ranked = da_where(dg, -np.inf, sc)
        tau = float(order_statistics(ranked, [n - k], progress=rep.span(0.75, 0.85),
                                     message="selection")[0, 0])
        above = compute(((sc > tau) & ~dg).sum(), message="selection")[0]
        ties = compute(*[delayed(lambda s, g: int(((np.asarray(s) == tau) & ~np.asarray(g, bool)).sum()))(s, g)
                         for s, g in zip(sc.to_delayed().ravel(), dg.to_delayed().ravel())], message="selection")
        need = k - int(above)
        quotas, used = [], 0
        for t in ties:
            q = min(t, max(need - used, 0))
            quotas.append(q)
            used += q
        sel = da_blocks(_selection_block, sc, dg, tau, quotas)
        G = compute(red.tree_reduce([delayed(_selected_gram)(b, centre, cut, s)
                                     for b, s in zip(_blocks(X), sel.to_delayed().ravel())],
                                    lambda *a: sum(a)), progress=rep.span(0.85, 0.98), message="subspace")[0]
        w, V = np.linalg.eigh(G)
        s = np.sqrt(np.maximum(w[::-1], 0.0))[:min(k, d)]
        vt = V[:, ::-1].T[:min(k, d)]
        if estimate:
            r = min(scree_elbow(s * s, rank_cap(n, d)), max_r)
        if s.size < r or s[r - 1] <= 1e-10 * s[0]:
            warnings.warn(f"the {k} selected samples span fewer than n_components = {r} directions; the "
                          f"basis is partly arbitrary. Select more samples or lower n_components",
                          RankDeficientWarning, stacklevel=2)
        selected = materialize({"selected": sel}, message="selection", name="selected")["selected"]
        extra = {}
        if isinstance(selected, np.ndarray):
            idx = np.flatnonzero(selected)
            extra = {"selected_indices_": idx, "inlier_indices_": idx}
        comps = fix_signs(vt[:r])
        limits, n_cal = self._calibrate(X, comps, centre, dg, n - n_valid, r, rep.span(0.98, 1.0))
        rep(1.0, "done")
        self._set_fitted(**common, **limits, n_calibration_=n_cal, n_components_=r,
                         components_=comps, mean_=centre,
                         coherence_=score, degenerate_=degenerate, selected_=selected,
                         singular_values_=s[:r].copy(), refine_limit_=None, n_refine_passes_=0,
                         converged_=True, n_samples_fit_=n, **extra)
        self._set_fitted(**_dask_offset(self, p, X))
        return self

    def _calibrate(self, X, comps, centre, dg, n_deg, r, rep):
        """SPE/T² limits on all usable rows but the gross outliers, as the in-memory fit's
        (``calibration_rows``: log residual above median + 3 MAD), with exact order statistics
        over the usable rows for the median and MAD (degenerate rows sort first, at -inf)."""
        from dask import delayed
        n_use = X.shape[0] - n_deg
        ks = [n_deg + (n_use - 1) // 2, n_deg + n_use // 2]

        def usable_median(A):
            v = order_statistics(da_where(dg, -np.inf, A), ks, message="calibration")[:, 0]
            return 0.5 * (v[0] + v[1])

        res = X.map_blocks(_residual_block, comps, centre, dtype=np.float64, drop_axis=1)
        log_res = np.log(np.maximum(res, np.finfo(float).tiny))
        cut = robust_threshold(log_res, median=usable_median)
        keep = ~dg & (log_res <= cut)
        n_keep = int(compute(keep.sum(), message="calibration")[0])
        if n_keep <= r + 1:
            keep, n_keep = ~dg, int(compute((~dg).sum(), message="calibration")[0])
        parts = [delayed(_calibration_stats)(b, comps, centre, kb)
                 for b, kb in zip(_blocks(X), keep.to_delayed().ravel())]
        (n_c, _, _), tt, EE = compute(red.tree_reduce(parts, _merge_calibration), progress=rep,
                                      message="calibration")[0]
        d = comps.shape[1]
        var = tt / (n_c - 1)
        lam = np.maximum(np.linalg.eigvalsh(EE)[::-1] / (n_c - 1), 0.0)[: max(min(n_c, d) - r, 1)]
        return self._limit_fields(n_c, var, lam, alpha=LIMIT_ALPHA), n_keep

    def transform(self, X):
        """Coordinates in the subspace: lazy (n, r) for lazy input, numpy otherwise."""
        if not _is_lazy_input(X):
            return super().transform(X)
        check_is_fitted(self, "components_")
        return project(as_dask(X), self.components_, self.mean_)


def da_where(cond, a, b):
    import dask.array as da
    return da.where(cond, a, b)


def da_blocks(fn, sc, dg, tau, quotas):
    """Apply ``fn(score_block, degenerate_block, tau, quota)`` block by block (quota per block)."""
    import dask.array as da
    from dask import delayed
    parts = [da.from_delayed(delayed(fn)(s, g, tau, q), shape=(size,), dtype=bool)
             for s, g, q, size in zip(sc.to_delayed().ravel(), dg.to_delayed().ravel(), quotas, sc.chunks[0])]
    return da.concatenate(parts)
