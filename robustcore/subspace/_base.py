"""What every fitted affine subspace does, written once (PCA, Coherence Pursuit, ResidualScorer),
for rows in memory and out of core alike.

The model is ``mean_ + span(components_)`` in the estimator's scaled units (``ScaledInput``):
``transform`` gives coordinates, ``inverse_transform`` points back in original units, and
``_residual_sq`` the squared distance of scaled rows to the subspace.

The outlier score is the same for all of them: how far a sample lies OFF the subspace (SPE, the
squared residual) and how far ALONG it (Hotelling T², the scores in units of their variances),
each divided by its control limit, and the larger of the two kept:

    outlier score = max(SPE / Q_alpha, T² / T²_alpha),

so ``contamination="auto"`` (score above 1) flags exactly the samples above either limit, the
rule the window rings. Why both: SPE alone is blind to points far out ALONG the subspace (the
blind spot of reconstruction-error scoring) and scored below chance on two of fifteen public
outlier tables where T² alone scored 0.97; T² alone is blind to points off the subspace. On 32
real tables the larger ratio scored a mean ROC-AUC 0.02-0.07 above SPE alone, whatever the rank rule
(benchmarks/results_outliers.md). The limits come from calibration rows: all training rows for
PCA and ResidualScorer, all but the gross outliers for Coherence Pursuit
(:func:`robustcore.limits.control_limits`).

Per-row results of any X (:meth:`SubspaceModel.row_results`) come from ONE pass over X: SPE, T²,
the outlier score, the projection and the three flags. For lazy X (a Dask array, a LazyTable, a
LazyDataset of kind "table") they are numpy arrays when they fit the memory budget of
``robustcore.bigdata.settings``, :class:`robustcore.bigdata.StoredRows` (Zarr) otherwise; the
scoring methods (``transform``, ``score_samples``, ``predict``...) follow the same rule.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np
from sklearn.base import ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.validation import check_array, check_is_fitted

from .._blas_policy import fit_blas_threads
from .._fit_memory import check_fit_memory
from .._outlier import OUTPUTS, outlier_output
from .._passes import Rows, scratch
from .._order_stats import kth_values
from .._progress import Reporter
from .._residual import ResidualKernel, residual_sq, weighted_squares
from .._scaling import ScaledInput
from .._validation import nonfinite_error
from ..limits import control_limits
from ._scan import input_rows

__all__ = ["SubspaceModel", "RowResults", "residual_sq", "calibration_spectrum", "Calibration"]

ROW_FIELDS = ("outlier_score", "spe", "t2", "projection", "outlier", "outside_spe", "outside_t2")


class _NonFinite(ValueError):
    """A block of rows being scored holds a NaN or an infinity (the caller then counts them all
    to give check_finite's message)."""


@dataclass
class RowResults:
    """Per-row results of a fitted subspace model on X, from one pass over X.

    ``spe``, ``t2``, ``outlier_score`` (n,) float; ``projection`` (n, r) float (coordinates in
    the subspace); ``outlier``, ``outside_spe``, ``outside_t2`` (n,) bool (the outlier rule of
    ``predict``; SPE above ``spe_limit_``; T² above ``t2_limit_``). Coherence Pursuit's training
    rows add ``coherence`` (float), ``degenerate`` and ``selected`` (bool) in ``extra``.

    Each is a numpy array, or (lazy X beyond the memory budget) a
    :class:`robustcore.bigdata.StoredRows`: sliced and combined like numpy (``a | b`` works).
    ``passes``: passes over X these results cost (with the fit's, from ``fit_row_results``).
    """

    spe: object
    t2: object
    outlier_score: object
    projection: object
    outlier: object
    outside_spe: object
    outside_t2: object
    extra: dict = field(default_factory=dict)
    passes: int = 0

    @property
    def in_memory(self) -> bool:
        return all(isinstance(v, np.ndarray) for v in (self.spe, *self.extra.values()))

    @property
    def scores(self) -> dict:
        """name -> per-row score (larger = more abnormal, except coherence): the outlier score,
        Coherence Pursuit's coherence, SPE and T²."""
        out = {"outlier_score": self.outlier_score}
        if "coherence" in self.extra:
            out["coherence"] = self.extra["coherence"]
        out.update(spe=self.spe, t2=self.t2)
        return out

    @property
    def flags(self) -> dict:
        out = {"outlier": self.outlier, "outside_spe": self.outside_spe, "outside_t2": self.outside_t2}
        out.update({k: v for k, v in self.extra.items() if k != "coherence"})
        return out


class _RowKernel:
    """What the row pass computes for one block of raw rows (picklable: runs on Dask workers).

    Each wanted output (a key of ``_SPEC``) comes from one centring and one residual per block:
    scaling and centring happen in cache-sized scratch buffers, never on an n x d copy."""

    _SPEC = {"spe": ("f8", ()), "t2": ("f8", ()), "outlier_score": ("f8", ()), "projection": ("f8", None),
             "outlier": ("?", ()), "outside_spe": ("?", ()), "outside_t2": ("?", ()),
             "score_samples": ("f8", ()), "decision": ("f8", ()), "predict": ("i8", ())}

    def __init__(self, est, want, threshold=None):
        # ``est``: a fitted model, or any object with its attributes (scale_center_, scale_,
        # components_, mean_, variances_ and, for the outlier outputs, the limits)
        self.want = tuple(want)
        c, s = est.scale_center_, est.scale_
        self.scale = None if (not c.any() and np.all(s == 1.0)) else (c, s)
        self.kern = ResidualKernel(est.components_, est.mean_)
        need_t2 = any(w not in ("spe", "projection", "outside_spe") for w in self.want)
        self.inv = 1.0 / est.variances_ if need_t2 else None
        self.spe_limit = getattr(est, "spe_limit_", None)
        self.t2_limit = getattr(est, "t2_limit_", None)
        if threshold is None and any(w in ("outlier", "decision", "predict") for w in self.want):
            threshold = -est.offset_
        self.threshold = threshold
        self.need_spe = any(w not in ("t2", "projection", "outside_t2") for w in self.want)
        # ROBPCA scores distances, not squares, in units of their cut-offs (same flags)
        self.root = bool(getattr(est, "_distance_score", False))

    def spec(self):
        r = self.kern.k
        return {w: (np.dtype(self._SPEC[w][0]), (r,) if w == "projection" else ()) for w in self.want}

    def __call__(self, B, start, *extra):
        b, d = B.shape
        # With the SPE wanted, the check comes after: a NaN or infinity in a row reaches its
        # residual entry unchanged (e = z - mean - Cᵀt, formed explicitly) and so its SPE, which
        # saves two reductions over the block; an SPE that merely overflowed is told apart there.
        if not self.need_spe:
            _check_finite_block(B)
        if self.scale is not None:
            Z = np.subtract(B, self.scale[0], out=scratch(b, d, 3))
            Z /= self.scale[1]
        else:
            Z = B
        T, spe = self.kern(Z, scratch(b, d, 4), want_spe=self.need_spe)
        if self.need_spe and not np.isfinite(spe.sum()):
            _check_finite_block(B)
        out = {}
        t2 = weighted_squares(T, self.inv) if self.inv is not None else None
        for w in self.want:
            if w == "spe":
                out[w] = spe
            elif w == "t2":
                out[w] = t2
            elif w == "projection":
                out[w] = T
            elif w == "outside_spe":
                out[w] = spe > self.spe_limit
            elif w == "outside_t2":
                out[w] = t2 > self.t2_limit
        if any(w in ("outlier_score", "outlier", *OUTPUTS) for w in self.want):
            score = np.maximum(spe / self.spe_limit, t2 / self.t2_limit)
            if self.root:
                np.sqrt(score, out=score)
            for w in self.want:
                if w == "outlier_score":
                    out[w] = score
                elif w == "outlier":
                    out[w] = score > self.threshold
                elif w in OUTPUTS:
                    out[w] = outlier_output(score, w, self.threshold)
        return out


def _check_finite_block(B):
    if not (np.isfinite(B.min()) and np.isfinite(B.max())):
        raise _NonFinite("X contains NaN or infinite values")


def _derive_block(P, start, spe, inv, spe_limit, t2_limit, threshold):
    """The row results that follow from a row's SPE and projection P (t2, score, flags)."""
    t2 = weighted_squares(P, inv)
    return {"t2": t2, **_flags_block(t2, spe, spe_limit, t2_limit, threshold)}


def _flags_block(t2, spe, spe_limit, t2_limit, threshold):
    score = np.maximum(spe / spe_limit, t2 / t2_limit)
    return {"outlier_score": score, "outlier": score > threshold,
            "outside_spe": spe > spe_limit, "outside_t2": t2 > t2_limit}


def _flags_of_t2_block(T, start, spe, spe_limit, t2_limit, threshold):
    """_derive_block for a known T² (T: (rows, 1))."""
    return _flags_block(T[:, 0], spe, spe_limit, t2_limit, threshold)


class Calibration:
    """Accumulator of the calibration spectrum of rows about ``mean`` against ``components``:
    count, Σ t² along each component, and the lower triangle of EᵀE (E the explicit residuals).
    ``keep(B, start, *extra)`` (optional) picks the rows that count."""

    def __init__(self, components, mean, scale=None, keep=None):
        self.kern = ResidualKernel(components, mean)
        self.scale, self.keep = scale, keep
        d, k = self.kern.d, self.kern.k
        # EᵀE, its symmetric copy and eigvalsh's workspace: refused from the width alone.
        check_fit_memory(3 * 8 * d * d, "the fit", f"the {d:,} x {d:,} residual covariance of its control limits",
                         "select fewer features, or use PCA or ResidualScorer (they work on the n x n side "
                         "of a wide table)")
        self.n, self.tt = 0, np.zeros(k)
        self.EE = np.zeros((d, d), order="F")

    def add(self, B, start, *extra):
        own = False      # whether B is already a copy this pass may overwrite
        if self.keep is not None:
            rows = np.asarray(self.keep(B, start, *extra), bool)
            B = np.compress(rows, B, axis=0)     # (into a new array: faster than into a given one)
            own = True
        b, d = B.shape
        if b == 0:
            return
        if self.scale is not None:
            Z = np.subtract(B, self.scale[0], out=scratch(b, d, 3))
            Z /= self.scale[1]
            own = True
        else:
            Z = B
        # the residual is made in place in a copy already made (one sweep over the rows less)
        buf = Z if own else scratch(b, d, 4)
        T, E = self.kern.residuals(Z, buf)
        from .._row_stats import syrk_lower
        self.EE = syrk_lower(E, self.EE)
        self.tt += np.einsum("ij,ij->j", T, T)
        self.n += b

    def merge(self, other):
        self.n += other.n
        self.tt = self.tt + other.tt
        self.EE = self.EE + other.EE
        return self

    def spectrum(self, k):
        """(n, variances along the components, all residual eigenvalues, descending) as
        :func:`calibration_spectrum` gives them."""
        from .._row_stats import symmetric
        n, d = self.n, self.EE.shape[0]
        var = self.tt / (n - 1)
        lam = np.linalg.eigvalsh(symmetric(self.EE))[::-1] / (n - 1)
        return n, var, np.maximum(lam, 0.0)[: max(min(n, d) - k, 1)]


def calibration_spectrum(Z, components, mean):
    """Variances of calibration rows ``Z`` (n, d) along ``components`` (k, d) about ``mean``, and
    ALL eigenvalues of their residual covariance (descending): what the T² and SPE limits are
    made of (sums of squares divided by n - 1). One blocked pass, no n x d temporary."""
    Z = np.asarray(Z, dtype=np.float64)
    C = np.atleast_2d(np.asarray(components, dtype=np.float64))
    n, d = Z.shape
    if n < d:
        # A wide table: EEᵀ (n x n) has the same non-zero eigenvalues as EᵀE (d x d), which
        # would not fit in memory for d in the millions; the rest are zero.
        Zc = Z - np.asarray(mean, dtype=np.float64)
        T = Zc @ C.T
        E = Zc - T @ C
        lam = np.linalg.eigvalsh(E @ E.T)[::-1] / max(n - 1, 1)
        k = C.shape[0]
        return np.sum(T * T, axis=0) / max(n - 1, 1), np.maximum(lam, 0.0)[: max(min(n, d) - k, 1)]
    rows = Rows(Z)
    acc = rows.reduce(functools.partial(Calibration, C, np.asarray(mean, dtype=np.float64)))
    return acc.spectrum(C.shape[0])[1:]


class SubspaceModel(ClassNamePrefixFeaturesOutMixin, TransformerMixin, ScaledInput):
    """Mixin for estimators whose fit ends in ``components_`` (r, d, orthonormal rows) and
    ``mean_`` (d,), both in scaled units. Output features are named ``<class>0 ...``."""

    @property
    def _n_features_out(self):
        return self.components_.shape[0]

    # -- rows in, per-row results out ---------------------------------------------------------
    def _rows(self, X) -> Rows:
        check_is_fitted(self)
        # finiteness is checked by the row pass itself, block by block (_RowKernel), with the
        # same message (_count_nonfinite): not a third and fourth reduction over X beforehand
        return input_rows(self, X, reset=False, finite=False)

    def _row_pass(self, rows: Rows, want, progress=None, message="scores") -> dict:
        """One pass of :class:`_RowKernel` over ``rows``: name -> array (numpy or stored).

        Under the fits' BLAS thread rule (robustcore._blas_policy): thin products gain nothing
        from BLAS threads, and lose much when a core is busy."""
        kern = _RowKernel(self, want)
        try:
            with fit_blas_threads():
                return rows.map(kern, kern.spec(), progress=progress, message=message, name="scores")
        except _NonFinite:
            raise self._count_nonfinite(rows) from None

    @staticmethod
    def _count_nonfinite(rows: Rows):
        from .._row_stats import Moments
        mom = rows.reduce(functools.partial(Moments, rows.d, rows.shift(), False), message="checking values")
        return nonfinite_error(mom.bad, *mom.first_bad)

    def _one(self, X, what):
        out = self._row_pass(self._rows(X), (what,))[what]
        return out

    def transform(self, X):
        """Coordinates (n_samples, r) of X in the subspace: ``(scaled X - mean_) @ components_.T``."""
        return self._one(X, "projection")

    def _scored(self, X, what):
        """robustcore._outlier's ``score_samples``, ``decision_function`` and ``predict`` (defined
        there, once) from one row pass over X: in memory or out of core alike."""
        return self._one(X, what)

    def row_results(self, X, progress=None) -> RowResults:
        """SPE, T², outlier score, projection and flags of every row of X in ONE pass over X
        (see :class:`RowResults`; the module doc says where lazy results are kept)."""
        rows = self._rows(X)
        return self._results_of(rows, progress)

    def _results_of(self, rows: Rows, progress=None, extra=None) -> RowResults:
        before = rows.passes
        out = self._row_pass(rows, ROW_FIELDS, progress=progress, message="row results")
        return RowResults(**out, extra=extra or {}, passes=rows.passes - before)

    def fit_row_results(self, X, y=None, progress=None) -> RowResults:
        """``fit(X)`` and ``row_results(X)`` in as few passes over X as the method allows (as
        ``fit_predict`` is to ``fit`` and ``predict``); ``RowResults.passes`` counts them all."""
        rep = Reporter(progress)
        self._kept_rows = self._training_rows = self._training_t2 = None
        try:
            self.fit(X, progress=rep.span(0.0, 0.8))
            kept, t2 = self._kept_rows, self._training_t2
        finally:
            del self._kept_rows, self._training_rows, self._training_t2
        rows = kept["rows"]
        if "spe" in kept:
            # the calibration's T² of every row is the result's when made with the final variances
            same = t2 is not None and np.array_equal(t2[0], self.variances_)
            res = self._derive(kept["spe"], kept["projection"], rep.span(0.8, 1.0), t2=t2[1] if same else None)
            return RowResults(**res, spe=kept["spe"], projection=kept["projection"],
                              extra=kept.get("extra", {}), passes=rows.passes)
        res = self._results_of(rows, rep.span(0.8, 1.0), extra=kept.get("extra"))
        res.passes = rows.passes
        return res

    def _keep_rows(self, **kept):
        """Called by fit: what a following fit_row_results may reuse (the Rows, and per-row
        SPE and projection when the fit computed them for all rows)."""
        if hasattr(self, "_kept_rows"):
            made = getattr(self, "_training_rows", None)
            self._kept_rows = {**made, **kept} if made is not None and "spe" not in kept else kept

    def _derive(self, spe, projection, progress=None, threshold=None, t2=None) -> dict:
        """t2, outlier score and flags from stored SPE and projections (no pass over X); given
        ``t2`` (every row's, with these variances), the flags from it (projections not read)."""
        limits = (self.spe_limit_, self.t2_limit_, -self.offset_ if threshold is None else threshold)
        spec = {"outlier_score": ("f8", ()), "outlier": ("?", ()), "outside_spe": ("?", ()),
                "outside_t2": ("?", ())}
        P = _lazy_or_numpy(projection)
        if t2 is None:
            return Rows(P).map(_derive_block, {"t2": ("f8", ()), **spec}, 1.0 / self.variances_, *limits,
                               extra=(spe,), progress=progress, message="limits", name="scores")
        if not isinstance(P, np.ndarray):
            # out of core: element-wise in plain slices of the scores (a Dask T² computed once),
            # the budget ruling where the results go (30M rows with T² stored: 2.3-2.5 s of CPU
            # through Dask's blocks, ~1 s in slices)
            from ..bigdata._rows import fill_rows, sliceable
            t2 = sliceable(t2, "t2")
            out = fill_rows(functools.partial(_flags_block, spe_limit=limits[0], t2_limit=limits[1],
                                              threshold=limits[2]), spec, [t2, sliceable(spe, "spe")], name="scores",
                            direct=("outlier_score",))
            if progress is not None:
                Reporter(progress)(1.0, "limits")
            return {"t2": t2, **out}
        out = Rows(np.asarray(t2).reshape(-1, 1)).map(_flags_of_t2_block, spec, *limits, extra=(spe,),
                                                      progress=progress, message="limits", name="scores")
        return {"t2": t2, **out}

    def inverse_transform(self, X):
        """Points (n_samples, n_features) in ORIGINAL units for coordinates X (n_samples, r)."""
        check_is_fitted(self)
        T = check_array(X, dtype=np.float64)
        r = self.components_.shape[0]
        if T.shape[1] != r:
            raise ValueError(f"X has {T.shape[1]} columns, but {type(self).__name__} has {r} "
                             f"components; pass coordinates as returned by transform")
        return self._unscale(T @ self.components_ + self.mean_)

    def _residual_sq(self, Z):
        """Squared distance of scaled rows Z to the fitted affine subspace."""
        return residual_sq(Z, self.components_, self.mean_)

    # -- control limits and the outlier score ---------------------------------------------
    @staticmethod
    def _limit_fields(n, var, lam, *, alpha, limit="jackson-mudholkar", t2_kind="new",
                      strict=False, training=None, calibrate=True) -> dict:
        """The fitted limits (robustcore.limits.control_limits)."""
        return control_limits(n, var, lam, alpha=alpha, limit=limit, t2_kind=t2_kind, strict=strict,
                              training=training, calibrate=calibrate)

    def _spe_t2(self, Z, want_spe=True, want_t2=True):
        """SPE and T² of scaled rows Z, in blocks of rows (the one residual kernel)."""
        from .._residual import residual_scores
        spe, t2, _ = residual_scores(Z, self.components_, self.mean_, 1.0 / self.variances_,
                                     want_spe=want_spe, want_t2=want_t2)
        return spe, t2

    def _outlier_score(self, Z):
        """max(SPE / spe_limit_, T² / t2_limit_) of scaled rows Z (module doc)."""
        spe, t2 = self._spe_t2(Z)
        return np.maximum(spe / self.spe_limit_, t2 / self.t2_limit_)

    def _auto_threshold(self, training_scores):
        # the score is already in units of the limits: above 1 = above one of them
        return 1.0

    def _training_provider(self, rows: Rows, scaling: dict, components, mean, kept=None, exclude=None):
        """The ``training`` callable of robustcore.limits.control_limits for a fit on ``rows``:
        given the variances, the calibration rows' SPE and T² (from ``kept`` SPE and
        projections when the fit has them, else one row pass, made only if a rule asks)."""
        def training(variances):
            if kept is not None:
                inv = 1.0 / np.asarray(variances)
                if not isinstance(kept["projection"], np.ndarray):
                    return TrainingScores(functools.partial(self._sliced_t2, kept, variances, exclude),
                                          exclude=exclude, counting=True)

                def make():
                    t2 = Rows(kept["projection"]).map(
                        _t2_block, {"t2": ("f8", ())}, inv, message="training scores")["t2"]
                    self._remember_t2(variances, t2)
                    return {"spe": kept["spe"], "t2": t2}
            else:
                model = SimpleNamespace(**scaling, components_=components, mean_=mean, variances_=variances)
                reuse = hasattr(self, "_kept_rows")   # inside fit_row_results

                def make(limits=None):
                    # SPE and projections of every row too when inside fit_row_results: the row
                    # results derive from them (_keep_rows), so this pass is the one
                    # fit_row_results would make anyway
                    kern = _RowKernel(model, ("spe", "t2", "projection") if reuse else ("spe", "t2"))
                    out = _scores_pass(rows, kern, limits if exclude is None else None)
                    if reuse:
                        self._training_rows = {"spe": out["spe"], "projection": out["projection"]}
                        self._remember_t2(variances, out["t2"])
                    return {k: out[k] for k in ("spe", "t2", "histogram") if k in out}
                return TrainingScores(make, exclude=exclude, counting=True)
            return TrainingScores(make, exclude=exclude)
        return training

    def _sliced_t2(self, kept, variances, exclude, limits=None):
        """The kept rows' SPE and T² (``TrainingScores``' make) when their projections are not
        held whole (stored, or from a cluster): T² in plain slices of the projections, not
        Dask's blocks, and, given the nominal ``limits`` the calibration asks about, the
        combined score's histogram over the rows not excluded in the same sweep
        (``"histogram"``, with ``"histogram_excludes"``: _calibrate_stored's first pass). The
        same T², row by row, and the same counts as the pass each replaces."""
        from ..bigdata import _selection as sel
        from ..bigdata._rows import fill_rows, sliceable
        inv = 1.0 / np.asarray(variances)
        spe = sliceable(kept["spe"], "spe")
        arrays = [sliceable(kept["projection"], "projection"), spe]
        if exclude is not None:
            arrays.append(sliceable(exclude, "exclude"))
        part = [(0, np.zeros(0, np.int64))]

        def block(P, s, *e):
            t2 = _t2_block(P, 0, inv)["t2"]
            if limits is not None:
                combined = _combined_block(s, t2, *limits)
                part[0] = sel.merge_histograms(part[0], sel.histogram_block(combined, e[0] if e else None))
            return {"t2": t2}
        # slices of 2^18 rows: 2^20 made 60 MB of temporaries (the coordinates, buckets) at the
        # memory peak
        t2 = fill_rows(block, {"t2": ("f8", ())}, arrays, name="scores", step=1 << 18)["t2"]
        self._remember_t2(variances, t2)
        out = {"spe": spe, "t2": t2}
        if limits is not None:
            out.update(histogram=(tuple(limits), part[0]), histogram_excludes=True)
        return out

    def _remember_t2(self, variances, t2):
        """Inside fit_row_results: keep the calibration's T² of every row for the row results
        (made once: out of core it is a read of every stored projection)."""
        if hasattr(self, "_training_t2"):
            self._training_t2 = (np.array(variances, dtype=np.float64), t2)

    def _training_offset(self, contamination, rows: Rows, kept=None) -> dict:
        """``offset_`` at the end of a fit on ``rows`` (robustcore._outlier's rule): "auto"
        needs no pass (the limits are the rule); a fraction takes the exact percentile of the
        training outlier scores, from the fit's kept SPE and projections or one row pass."""
        kept = kept if kept is not None else getattr(self, "_training_rows", None)

        def training_scores():
            if kept is None and hasattr(self, "_kept_rows"):
                # inside fit_row_results: the SPE and projections of this pass are what the row
                # results derive from (_keep_rows), so it is the one pass it makes anyway
                kept_now = self._row_pass(rows, ("spe", "projection"), message="training scores")
                self._training_rows = kept_now
                return self._derive(kept_now["spe"], kept_now["projection"], threshold=np.inf)["outlier_score"]
            if kept is not None:
                return self._derive(kept["spe"], kept["projection"], threshold=np.inf)["outlier_score"]
            return self._row_pass(rows, ("outlier_score",), message="training scores")["outlier_score"]
        return self._offset(contamination, training_scores)


def _as_lazy(values):
    return values.to_dask() if hasattr(values, "to_dask") else values


def _lazy_or_numpy(values):
    return values if isinstance(values, np.ndarray) else _as_lazy(values)


def _scores_pass(rows: Rows, kern, limits=None) -> dict:
    """The calibration rows' scores, one pass (``rows.map`` of ``kern``). Out of core, given the
    nominal ``limits`` (spe_limit, t2_limit) the calibration will ask about, the same pass also
    counts the combined score's buckets (``"histogram"``: (limits, counts); _calibrate_stored's
    first pass, which then reads the stored scores once instead of twice)."""
    if not rows.lazy or limits is None:
        return rows.map(kern, kern.spec(), message="training scores", name="scores")
    from ..bigdata._selection import Histogram
    out, acc = rows.map(_CountingKernel(kern, *limits), kern.spec(), message="training scores", name="scores",
                        reduce=Histogram)
    return {**out, "histogram": (tuple(limits), acc.part)}


class _CountingKernel:
    """A row kernel that also adds each block's combined score (as _calibrate_stored makes it
    from the stored SPE and T²: the same values, the same buckets) to the pass's histogram."""

    def __init__(self, kern, spe_limit, t2_limit):
        self.kern, self.spe_limit, self.t2_limit = kern, spe_limit, t2_limit

    def __call__(self, B, start, *rest, acc):
        out = self.kern(B, start, *rest)
        acc.add(_combined_block(out["spe"], out["t2"], self.spe_limit, self.t2_limit))
        return out


def _t2_block(P, start, inv):
    return {"t2": weighted_squares(P, inv)}


class TrainingScores:
    """What the ``training`` callable of :func:`robustcore.limits.control_limits` returns: exact
    order statistics of the calibration rows' SPE and T², from per-row arrays (numpy or stored)
    made on the first call (a pass over the rows, or none when the fit kept them)."""

    def __init__(self, make, exclude=None, counting=False):
        # counting: make takes the nominal limits the calibration asks about (None when an
        # order statistic is asked first) and may count the combined score's histogram in its
        # pass (_scores_pass)
        self._make, self._values, self.exclude, self.counting = make, None, exclude, counting

    def _get(self, limits=None):
        if self._values is None:
            self._values = self._make(limits) if self.counting else self._make()
        return self._values

    def order_statistics(self, name: str, ks) -> np.ndarray:
        from .._passes import kth_smallest
        return kth_smallest(self._get()[name], ks, exclude=self.exclude, message="training scores")

    def calibrate(self, spe_limit: float, t2_limit: float, alpha: float):
        """robustcore._calibration.calibrate of the combined score max(SPE / spe_limit, T² /
        t2_limit) (nominal limit 1) of the calibration rows: exact order statistics and one
        count, in memory or over the stored scores alike."""
        from .._calibration import calibrate
        v = self._get((spe_limit, t2_limit))
        spe, t2 = v["spe"], v["t2"]
        trimmed = self.exclude is not None
        if not (isinstance(spe, np.ndarray) and isinstance(t2, np.ndarray)):
            limits, counted = v.get("histogram", (None, None))
            # a histogram counted over every row serves only when none is excluded
            same_rows = not trimmed or v.get("histogram_excludes", False)
            return _calibrate_stored(spe, t2, self.exclude, spe_limit, t2_limit, alpha, trimmed,
                                     counted if limits == (spe_limit, t2_limit) and same_rows else None)
        # one array of n scores at a time beside the inputs (30M rows: the temporaries of
        # the plain expression and the copies of kth_smallest made the run's memory peak)
        with np.errstate(divide="ignore", invalid="ignore"):
            combined = np.divide(spe, spe_limit)
            step = 1 << 20
            for s in range(0, combined.size, step):
                np.maximum(combined[s:s + step], np.divide(t2[s:s + step], t2_limit), out=combined[s:s + step])
        n = combined.size
        if trimmed:
            # the rows left out become +inf in place (no second array of n scores): below
            # n kept rows, the ks-th smallest and the counts under a finite cut are theirs
            left_out = np.asarray(self.exclude, dtype=bool)
            combined[left_out] = np.inf
            n -= int(np.count_nonzero(left_out))

        def count_le(cut):
            return int(np.count_nonzero(combined <= cut))

        def kth(ks):
            # combined is this call's own array: reordered in place if need be
            return kth_values(combined, ks, own=True)
        # rows left out by the caller are its gross outliers: the rest are trimmed (core_cut)
        trim = {"trimmed": True, "left_out": int(combined.shape[0]) - n} if trimmed else {}
        return calibrate(kth, count_le, n, 1.0, alpha, **trim)


def _calibrate_stored(spe, t2, exclude, spe_limit, t2_limit, alpha, trimmed, counted=None):
    """TrainingScores.calibrate over stored scores (or held beside stored ones): the combined
    score's exact order statistics and counts from a histogram of its float bits and one gather
    of the buckets the calibration asks about (robustcore.bigdata._selection), over plain slices
    of rows (30M rows: the gather took 0.55 s of CPU through Dask's blocks): two sweeps over the
    stored scores, the same numbers as in memory; one when the pass that made the scores counted
    the histogram (``counted``, :func:`_scores_pass`). Dask arrays are computed once first."""
    from .._calibration import calibrate
    from ..bigdata import _selection as sel
    from ..bigdata._rows import aligned_step, sliceable
    spe, t2, exclude = sliceable(spe, "spe"), sliceable(t2, "t2"), sliceable(exclude, "exclude")
    n = int(spe.shape[0])
    step = aligned_step([a for a in (spe, t2, exclude) if a is not None], 1 << 20)

    def slices():
        for s in range(0, n, step):
            yield (_combined_block(spe[s:s + step], t2[s:s + step], spe_limit, t2_limit),
                   None if exclude is None else np.asarray(exclude[s:s + step], dtype=bool))

    def histogram():
        if counted is not None:
            return counted
        return sel.merge_histograms(*[sel.histogram_block(b, e) for b, e in slices()])

    def gather(wanted):
        return sel.concat(*[sel.gather_block(b, wanted, e) for b, e in slices()])
    scores = sel.ScoreSelection(histogram, gather)
    trim = {"trimmed": True, "left_out": n - scores.n} if trimmed else {}
    return scores.run(lambda kth, count_le, n_kept: calibrate(kth, count_le, n_kept, 1.0, alpha, **trim))


def _combined_block(spe, t2, spe_limit, t2_limit):
    """The combined score of a block, as TrainingScores.calibrate makes it in memory."""
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.divide(spe, spe_limit)
        return np.maximum(out, np.divide(t2, t2_limit), out=out)
