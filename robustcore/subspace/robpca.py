"""ROBPCA: robust principal components from projection pursuit and the MCD (Hubert, Rousseeuw &
Vanden Branden, "ROBPCA: a new approach to robust principal component analysis",
Technometrics 47 (2005) 64-79), the robust PCA of R's rrcov (``PcaHubert``), MATLAB's LIBRA and
Python's robpy.

The fit, in the estimator's scaled units (the stages are in :mod:`._robpca_steps` and
:mod:`._robpca_mcd`):

1. the rows are reduced to their affine span (an SVD of the centred rows; r = its rank);
2. every row gets its Stahel-Donoho outlyingness over directions through pairs of rows (all
   pairs, or 250 seeded ones), each measured from the univariate MCD of the projections; the h
   least outlying rows give a covariance whose eigenvalues choose k (unless given);
3. if k < r, every row's orthogonal distance to that k-dimensional subspace is cut at its
   Wilson-Hilferty cut-off, and the covariance of the rows within it gives a reweighted subspace;
4. the rows are projected on it, and the reweighted MCD of the k-dimensional projections (C-steps
   from the paper's start, and FastMCD's 500 random starts; the smaller determinant wins) gives
   the final centre, loadings and eigenvalues.

On more than ``max_samples`` rows (100,000 by default), stages 1-4 run on a seeded random
sample of that many, in memory and out of core alike, and every row is scored with the sample's
cut-offs (:mod:`._robpca_sample`).

Why our own FastMCD rather than scikit-learn's MinCovDet, on measurement (benchmarks/
results_robpca.md): on glass's 3-D projections MinCovDet's 30 starts (n < 500) stopped at a
subset of larger determinant where ours found the smaller one, and it was far slower on large
tables.
"""
from __future__ import annotations

import functools
import numbers

import numpy as np
from scipy import linalg
from sklearn.utils import check_random_state

from .._base import Estimator, fit_protocol
from .._outlier import OutlierScores
from .._params import check_range, check_shape
from .._residual import ResidualKernel, residual_scores
from .._validation import OVERFLOW_FIX, check_finite, check_magnitude, finite_in_range
from ..limits import calibration_record
from ..linalg import fix_signs
from ._base import SubspaceModel
from ._robpca_mcd import mcd_subspace, nearest_mask
from ._robpca_params import CRIT, CUTOFFS, PARAMS
from ._robpca_rows import CentredRows
from ._robpca_sample import check_budget, sample_index, sample_size, sampled_rows
from ._robpca_steps import Scratch, chi2_ppf, choose_k, h_size, od_cutoff, outlyingness
from ._scan import constant_error, input_rows, load_rows

__all__ = ["ROBPCA"]


class ROBPCA(SubspaceModel, OutlierScores, Estimator):
    """ROBPCA: robust principal component analysis (Hubert, Rousseeuw & Vanden Branden 2005).

    Attributes
    ----------
    components_ : ndarray of shape (k, d)
        Robust loadings, orthonormal rows, sign-fixed (largest absolute loading positive).
    mean_ : ndarray of shape (d,)
        The robust centre (scaled units).
    explained_variance_, variances_ : ndarray of shape (k,)
        Robust eigenvalues: the variances of the scores along the loadings (from the
        reweighted MCD), the denominators of the score distance.
    explained_variance_ratio_ : ndarray of shape (k,)
        Each eigenvalue's share of the robust total variance (the k eigenvalues plus those
        left out at stage 3).
    n_components_ : int
        k, given or chosen by the paper's rule.
    h_ : int
        The size of every h-subset.
    rank_ : int
        Rank r of the centred training rows (the dimension of stage 2).
    sd_cutoff_, od_cutoff_ : float
        Cut-offs of the score distance, sqrt(chi2_k(0.975)), and of the orthogonal distance,
        the Wilson-Hilferty cut-off from the univariate MCD of the training rows' OD^(2/3)
        (0.0 when k = r: no row has an orthogonal part, so OD cannot flag).
    t2_limit_, spe_limit_ : float
        Their squares: the limits of T² = SD² and SPE = OD² of robustcore.subspace._base
        (``spe_limit_`` is infinite when ``od_cutoff_`` is 0).
    spe_limit_method_ : str
        "wilson-hilferty".
    residual_eigenvalues_ : ndarray
        The robust eigenvalues of stage 3 beyond k (what the subspace leaves out).
    scale_center_, scale_ : ndarray of shape (d,)
        The centre subtracted from and the spread divided into each column.
    scaling_ : str
        The scaling used ("none", "standard" or "robust"; "auto" resolved).
    offset_ : float
        ``score_samples - offset_ = decision_function``: minus the outlier score's limit, with
        ``contamination="auto"`` the cut-offs calibrated at alpha = 1 - 0.975 (``_offset``).
    limit_calibration_ : dict or None
        What the calibration of "auto" did (robustcore.limits.calibration_record: "kept",
        "raised" or "lowered" by ``factor`` on the squared score, and its "caveat"); None for
        another contamination.
    n_features_in_, n_samples_fit_ : int
        Features and training samples seen by ``fit``.
    n_samples_robust_ : int
        Rows the robust stages were fitted on: every training row, or a seeded random sample of
        ``max_samples`` of them when there are more (in memory and out of core alike;
        robustcore.subspace._robpca_sample).
    feature_names_in_ : ndarray of str
        Column names, when X had string column names.

    Notes
    -----
    **Outlier score.** ``max(SD / sd_cutoff_, OD / od_cutoff_)``: the score distance (the
    robust Mahalanobis distance within the subspace) and the orthogonal distance (to it), each
    in units of its cut-off; above 1 is outside the regular region of the outlier map.
    ``score_samples`` is minus that.
    """

    _params = PARAMS  # declared in _robpca_params.py (read by the registry without this module)
    # the row kernel takes the square root of max(SPE / spe_limit_, T² / t2_limit_): distances,
    # not their squares, in units of their cut-offs (robustcore.subspace._base)
    _distance_score = True

    def __init__(self, n_components: int | None = None, *, kmax: int = 10, alpha: float = 0.75,
                 max_samples="auto", random_state=None, scale: str = "auto", contamination="auto"):
        self.n_components = n_components
        self.kmax = kmax
        self.alpha = alpha
        self.max_samples = max_samples
        self.random_state = random_state
        self.scale = scale
        self.contamination = contamination

    @fit_protocol
    def fit(self, X, y=None, progress=None, *, p):
        """Fit on X (n_samples, n_features). Returns self. ``progress(fraction, message)``
        may cancel (robustcore._progress)."""
        rows = input_rows(self, X, reset=True, min_samples=2)
        check_shape(PARAMS, "n_components", p, rows.n, rows.d)   # the rank's bound by shape, declared
        rng = np.random.default_rng(_seed(p["random_state"]))
        # the robust stages on a seeded random sample of m rows when the data have more (None:
        # every row), by one rule in memory and out of core (module doc of _robpca_sample)
        m = sample_size(p["max_samples"], rows.n)
        if rows.lazy:
            check_budget(rows, m, p["max_samples"])
        if rows.lazy and m is not None:
            # the rows scored later in one pass (fit_row_results, row_results)
            Z, scaling = sampled_rows(rows, p["scale"], rng, progress.span(0.0, 0.3), m)
            progress = progress.span(0.3, 1.0)
        else:
            X = load_rows(rows, "ROBPCA", "needs every row for its outlyingness")
            # (one pass that proves both checks fine, 0.2-0.45 ms less at 10,000 x 200; where it
            # does not, the checks run as ever, in their order and with their messages)
            proven = finite_in_range(X)
            bounds = None if proven else check_finite(X)
            Z, scaling = self._fit_scaled(X, p["scale"])
            if not (proven and Z is X):
                check_magnitude(Z, method="ROBPCA", fix=OVERFLOW_FIX, bounds=bounds if Z is X else None)
            if m is not None:
                # the out-of-core draw, after the same checks and scaling of every row
                Z = Z[sample_index(rng, rows.n, m)]
        fitted, kept = _stages(Z, p, rng, progress, rows.n)
        self._set_fitted(**scaling, **fitted, n_samples_fit_=rows.n, n_samples_robust_=int(Z.shape[0]))
        # the SPE and projection of every training row, when Z holds them all: the row results
        # and a contamination's offset derive from them (fit_row_results makes no second pass);
        # from a sample, every row is scored in a pass of its own, in memory as out of core
        kept = kept if Z.shape[0] == rows.n else {}
        self._set_fitted(**self._training_offset(p["contamination"], rows, kept=kept or None))
        self._keep_rows(rows=rows, **kept)
        progress(1.0, "done")
        return self

    def _outlier_score(self, Z):
        """max(SD / sd_cutoff_, OD / od_cutoff_) of scaled rows Z."""
        spe, t2 = self._spe_t2(Z)
        return np.sqrt(np.maximum(spe / self.spe_limit_, t2 / self.t2_limit_))

    def _derive(self, spe, projection, progress=None, threshold=None, t2=None) -> dict:
        # The row results from the fit's SPE and projections (in memory only: _keep_rows), where
        # robustcore.subspace._base scores squares: its score is the square of ours, so it is
        # compared with the square of our threshold and its root returned.
        limit = -self.offset_ if threshold is None else threshold
        out = super()._derive(spe, projection, progress, threshold=limit * limit if limit > 0 else limit, t2=t2)
        out["outlier_score"] = np.sqrt(out["outlier_score"])
        return out

    def _offset(self, contamination, training_scores) -> dict:
        # "auto": the cut-offs (nominal limit 1) calibrated by the rule of every method's limits,
        # on the squared score as for the others, at the cut-offs' own rate; CUTOFFS: the
        # paper's as they are (the outlier map's regions and the distances keep them either way)
        if contamination == "auto":
            cal = _calibrated(training_scores(), 1.0 - CRIT)
            return {"offset_": -float(np.sqrt(cal.limit)), "limit_calibration_": calibration_record(cal)}
        if contamination == CUTOFFS:
            return {"offset_": -1.0, "limit_calibration_": None}
        return {**super()._offset(contamination, training_scores), "limit_calibration_": None}


def _seed(random_state) -> int:
    """The seed of the fit's Generator: the first draw below 2^31 of scikit-learn's
    check_random_state(random_state), a RandomState (made once per integer seed: seeding its
    Mersenne Twister took 85 us of every fit)."""
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, (bool, np.bool_)):
        return _int_seed(int(random_state))
    return int(check_random_state(random_state).randint(2 ** 31))


@functools.lru_cache(maxsize=64)
def _int_seed(seed: int) -> int:
    return int(check_random_state(seed).randint(2 ** 31))


def _calibrated(score, alpha):
    """robustcore._calibration.calibrate of the squared outlier scores (per-row, numpy or stored:
    exact order statistics either way; squaring keeps their order)."""
    from .._calibration import calibrate
    from .._passes import count_true, kth_smallest, rowwise
    return calibrate(lambda ks: np.square(kth_smallest(score, ks, message="training scores")),
                     lambda cut: count_true(rowwise(lambda d: d * d <= cut, score)), int(score.shape[0]), 1.0, alpha)


def _stages(Z, p, rng, rep, n_total):
    """The fitted attributes of ROBPCA's stages (module doc) on the scaled rows Z (every
    training row in memory, a random sample of them out of core; ``n_total`` rows in all),
    and the SPE and projection of the rows of Z ({"spe", "projection"})."""
    n = Z.shape[0]
    rep(0.0, "affine span")
    mean0, rot, X0 = _affine_span(Z, n)
    r = X0.shape[1]
    if r == 0:
        raise constant_error("ROBPCA", n_total, True)
    k = p["n_components"]
    if k is not None:
        k = check_range("n_components", k, 1, r, integer=True,
                        hint=f"at most the rank of the centred data, here {r}")
    kmax = min(p["kmax"], r)
    h = h_size(n, p["alpha"], k if k is not None else kmax)
    out = outlyingness(X0, h, rng, rep.span(0.05, 0.7))
    # (the h least outlying as a mask by a selection: argpartition only when ties cross the cut)
    H0 = nearest_mask(out[None, :], h)[0]
    mh, G0, ev, V, k = _leading(X0, H0, h, k, kmax)
    rep(0.7, "reweighting")
    m1, ev1, V1 = mh, ev, V
    if k < r:
        od = _orthogonal(X0, V[:, :k], mh)
        keep = od <= od_cutoff(od, h)
        m1, G1 = _rescatter(X0, H0, mh, G0, keep)
        # (every eigenvalue: those beyond k are the residual eigenvalues; vectors only for k)
        ev1, V1 = _spectrum(G1, int(keep.sum()), top=k, every_value=True)
        if _single_scatter(X0) and not _gap_holds(ev1, k, ev1.sum()):
            # (G1 carries G0's float32 rounding: _leading)
            m1, G1 = X0.scatter(keep, exact=True)
            ev1, V1 = _spectrum(G1, int(keep.sum()), top=k, every_value=True)
        k = min(k, int(np.sum(ev1 > ev1[0] * 1e-12)))
    # (the float32 copy's last reader was the scatter: its memory, touched already, becomes the
    # MCD stage's scratch; fresh, those temporaries cost a process's first fit about 1 ms)
    spare = X0.rows32
    X0.rows32 = None
    # the projections about m1 as columns (k, n): the MCD stage's layout (_robpca_mcd._columns);
    # when the rows are their own coordinates, the same read gives every row's SPE about m1 +
    # span(V1): the final subspace is that span and its centre differs from m1 within it, so
    # that is the final SPE (one pass over the rows fewer: _final_projection)
    if rot is None:
        X2T, spe = X0.project(V1[:, :k], about=m1)
    else:
        X2T, spe = X0.project(V1[:, :k])
        X2T -= (m1 @ V1[:, :k])[:, None]
    rep(0.75, "MCD")
    work = None if spare is None else Scratch(spare.reshape(-1).view(np.uint8))
    loc2, cov2, _ = mcd_subspace(X2T, ev1, h, rng, work=work)
    del spare, work
    lam, P = np.linalg.eigh(cov2)
    lam, P = lam[::-1], P[:, ::-1]
    if not lam[-1] > 0:
        raise ValueError(f"ROBPCA found {h} samples (h) lying exactly in a subspace of fewer than "
                         f"k = {k} dimensions, so their robust scatter is singular and no score "
                         f"distance can be measured; choose a smaller n_components or a larger alpha")
    raw = (V1[:, :k] @ P).T
    if rot is None:
        comps = fix_signs(raw)
        mean = mean0 + (m1 + V1[:, :k] @ loc2)
        T = _final_projection(X2T, loc2, P, comps, raw)
    else:
        comps = fix_signs(raw @ rot)
        mean = mean0 + (m1 + V1[:, :k] @ loc2) @ rot
        spe, _, T = residual_scores(Z, comps, mean, want_t2=False, want_projection=True)
    od_train = np.sqrt(spe)
    rep(0.95, "cut-offs")
    # ODs at rounding level of the rows' own size: the subspace spans the data (k = r)
    size = float(np.sqrt(np.max(spe + np.einsum("ij,ij->i", T, T))))
    od_cut = od_cutoff(od_train, h) if od_train.max() > 1e-10 * max(size, 1e-300) else 0.0
    # (chi2_ppf: scipy.stats.chi2.ppf's number without the wrapper's 30 us)
    sd_cut = float(np.sqrt(chi2_ppf(CRIT, k)))
    rest = ev1[k:][ev1[k:] > 0]
    total = lam.sum() + rest.sum()
    return dict(
        components_=comps,
        mean_=mean,
        variances_=lam.copy(),
        explained_variance_=lam,
        explained_variance_ratio_=lam / total,
        n_components_=int(k),
        h_=int(h),
        rank_=int(r),
        sd_cutoff_=sd_cut,
        od_cutoff_=od_cut,
        t2_limit_=sd_cut ** 2,
        spe_limit_=od_cut ** 2 if od_cut > 0 else np.inf,
        spe_limit_method_="wilson-hilferty",
        residual_eigenvalues_=rest,
    ), {"spe": spe, "projection": T}


def _final_projection(X2T, loc2, P, comps, raw):
    """Every row's coordinates (n, k) on the final loadings ``comps`` (``raw`` before
    fix_signs), from its projections X2T (k, n) on V1 about m1: the final centre is m1 + V1
    loc2 and ``raw`` = (V1 P)ᵀ, so the coordinates are (X2 - loc2) P, each column's sign as
    fix_signs left it. The same numbers as robustcore._residual's kernel on the final model
    to rounding (test_robpca_fast_paths; benchmarks/results_robpca.md, round 8)."""
    signs = np.where(np.sum(comps * raw, axis=1) < 0, -1.0, 1.0)
    T = (X2T - loc2[:, None]).T @ P
    T *= signs
    return T


def _affine_span(Z, n):
    """(mean, rot (r, d) orthonormal rows spanning the centred rows, or None when the rows
    are their own coordinates, and the coordinates (n, r) as CentredRows: Z - mean itself,
    not stored, when they span every direction)."""
    mean = Z.mean(axis=0)
    d = Z.shape[1]
    if n > 2 * d:
        # Tall rows span every direction unless a column depends on others: then the rows are
        # their own coordinates (every later stage is rotation equivariant). The rule: the
        # smallest eigenvalue of the Gram matrix above 1e-8 times its largest. Every row's
        # term is positive semi-definite, so a spread-out tenth of the rows (at least 4 d of
        # them) bounds the smallest from below, and the sum of squares bounds the largest from
        # above: when those bounds already pass, the full Gram matrix (3/4 of this stage at
        # 10,000 x 200) is not needed. (A tenth rather than a fifth: 1.6 ms less at 10,000 x
        # 200; where only the larger part would pass, the full test gives the same rows.)
        step = min(10, n // (4 * d))
        if step > 1:
            rows = CentredRows(Z, mean)
            # (one read: the sum of squares, the tenth's Gram matrix and the outlyingness's
            # float32 copy, which the rows keep). The Gram matrix is float32's products to
            # within ``err`` (spectral norm): the exact one's smallest eigenvalue is at least
            # the computed one's less err, so the test with the floor raised by err passes
            # only where the exact one would (at 10,000 x 200 err is 9e-7 of the sum of
            # squares, the tenth's smallest eigenvalue 8e-6 of it, the floor 1e-8); where
            # that margin is not there, the tenth's float64 Gram matrix decides as before.
            sq, part_gram, err = rows.survey(step)
            if _above(part_gram, 1e-8 * sq + err):
                return mean, None, rows
            if err > 0.0:
                P = Z[::step] - mean
                if _above(P.T @ P, 1e-8 * sq):
                    return mean, None, rows
        Zc = Z - mean
        w = np.linalg.eigvalsh(Zc.T @ Zc)
        if w[0] > 1e-8 * w[-1]:
            return mean, None, CentredRows(Zc)
        # the R factor has the same right singular vectors, and its SVD is d x d
        _, s, vt = np.linalg.svd(np.linalg.qr(Zc, mode="r"), full_matrices=False)
    else:
        Zc = Z - mean
        _, s, vt = np.linalg.svd(Zc, full_matrices=False)
    r = int(np.sum(s > s[0] * max(Zc.shape) * np.finfo(float).eps)) if s.size and s[0] > 0 else 0
    rot = vt[:r]
    return mean, rot, CentredRows(Zc @ rot.T)


def _above(G, floor):
    """Whether the smallest eigenvalue of the symmetric G is above ``floor``: G - floor I is
    positive definite exactly when its Cholesky factorisation exists (a fifth of the
    eigenvalues' cost at 200 x 200)."""
    G = G - floor * np.eye(G.shape[0])
    try:
        np.linalg.cholesky(G)
    except np.linalg.LinAlgError:
        return False
    return True


def _scatter(X):
    """Mean and scatter matrix (sum of outer products about it) of the rows of X (a copy the
    caller gives away: it is centred in place, saving a second n x d array)."""
    m = X.mean(axis=0)
    X -= m
    return m, X.T @ X


def _subset_scatter(X, mask, exact=False):
    """_scatter of the rows X[mask] (X an array or CentredRows): of centred rows a block at a
    time (CentredRows.scatter, no copy of the rows; the same matrix to about 1e-15 of its
    largest entry, or from the rows' float32 copy while they hold one and not ``exact``, to
    about 1e-7), else of their copy (the rows' coordinates in their affine span, octane's and
    glass's case: as ever)."""
    if isinstance(X, CentredRows) and X.shift is not None:
        return X.scatter(mask, exact=exact)
    return _scatter(X[mask])


def _single_scatter(X) -> bool:
    """Whether _subset_scatter of X is float32's product (CentredRows.scatter)."""
    return isinstance(X, CentredRows) and X.shift is not None and X.rows32 is not None


# Narrowest gap between the k-th and (k+1)-th eigenvalue of an h-subset's covariance, as a share
# of its trace, that keeps the eigenvectors of a scatter made by float32 products: an error E
# turns the k-dimensional subspace by about |E| / gap, and float32's is about 1e-7 of the
# largest entry (on 10,000 x 200 its subspace was float64's within 1e-8 radians, the gap there
# 5 % of the trace), so at 1e-3 of the trace it turns by at most about 1e-4 radians (subspace
# cosines above 0.99999999). A narrower gap: the scatter is made again in float64.
_SINGLE_GAP = 1e-3


def _gap_holds(ev, k: int, total: float) -> bool:
    """Whether the eigenvalues ``ev`` (descending, at least k + 1 unless k is all of them)
    leave a gap of at least _SINGLE_GAP of ``total`` after the k-th."""
    return k >= ev.size or ev[k - 1] - ev[k] >= _SINGLE_GAP * total


def _leading(X0, H0, h, k, kmax):
    """The h-subset H0's mean and scatter (mh, G0), the leading eigenvalues and vectors of its
    covariance (ev, V: k's, or kmax's for the rule; only those are used) and k (given, or by the
    paper's rule). From the float32 scatter when the rows hold their float32 copy and the gap
    after k holds its eigenvectors (_SINGLE_GAP; one eigenvalue more is asked for to see it),
    else from the float64 scatter, and the copy is let go (the reweighting's update in float64
    too)."""
    top = k if k is not None else kmax
    for exact in (False, True):
        if exact and isinstance(X0, CentredRows):
            X0.rows32 = None
        single = not exact and _single_scatter(X0)
        mh, G0 = _subset_scatter(X0, H0, exact=exact)
        ev, V = _spectrum(G0, h, top=top + 1 if single else top)
        total = np.trace(G0) / max(h - 1, 1)
        got = choose_k(ev[:top], kmax, total=total) if k is None else k
        got = min(got, int(np.sum(ev[:top] > ev[0] * 1e-12)))
        if not single or _gap_holds(ev, got, total):
            return mh, G0, ev[:top], V[:, :top], got


def _rescatter(X, old, centre, G, new):
    """Mean and scatter of the rows X[new] from those of X[old] (``centre``, ``G``; boolean
    masks): the rows that differ are added and taken out about ``centre`` (at 10,000 x 200 about
    1,700 rows against 8,800), unless they are more than half the new set."""
    add, drop = new & ~old, old & ~new
    count = int(new.sum())
    if int(add.sum() + drop.sum()) > count // 2:
        return _subset_scatter(X, new)
    if isinstance(X, CentredRows) and X.shift is not None:
        # each set's sums about ``centre`` from its scatter, read by blocks through the rows'
        # buffer (float32 products while the rows hold their copy, as G's): the rows' copies
        # were 3 MB of fresh memory, whose first touch cost 1-4 ms at 10,000 x 200
        part = []
        for mask in (add, drop):
            n_set = int(mask.sum())
            if n_set == 0:
                part.append((np.zeros(G.shape[0]), np.zeros_like(G)))
                continue
            m, S = _subset_scatter(X, mask)
            a = m - centre
            part.append((n_set * a, S + n_set * np.outer(a, a)))
        (sa, Sa), (sd, Sd) = part
    else:
        # (rows by a mask are a new array, never a view: centred in place, no second copy)
        A = X[add]
        A -= centre
        D = X[drop]
        D -= centre
        sa, sd, Sa, Sd = A.sum(axis=0), D.sum(axis=0), A.T @ A, D.T @ D
    shift = (sa - sd) / count       # new mean - centre
    G = G + Sa - Sd - count * np.outer(shift, shift)
    return centre + shift, G


def _spectrum(G, count, top=None, every_value=False):
    """Eigenvalues (descending, clipped at 0) and eigenvectors of the covariance (divided by
    count - 1) with scatter matrix G; with ``top``, only the ``top`` largest (LAPACK's
    relatively robust representations: a third of the full decomposition's time at 200 x 200
    for a few), and with ``every_value`` too the other eigenvalues, without their vectors (the
    two calls together take 0.7 of the full decomposition's time at 200 x 200)."""
    C = G / max(count - 1, 1)
    d = C.shape[0]
    if top is None or top >= d:
        w, V = np.linalg.eigh(C)
        return np.maximum(w[::-1], 0.0), V[:, ::-1]
    w, V = linalg.eigh(C, subset_by_index=[d - top, d - 1], driver="evr", check_finite=False)
    w, V = w[::-1], V[:, ::-1]
    if every_value:
        w = np.concatenate([w, np.linalg.eigvalsh(C)[::-1][top:]])
    return np.maximum(w, 0.0), V


def _orthogonal(X, V, centre):
    """Distances of the rows of X (CentredRows) to ``centre + span(V)`` (V's columns
    orthonormal), in blocks of rows less the centre (robustcore._residual's kernel, as
    residual_scores), in lanes (CentredRows.each_block)."""
    kern = ResidualKernel(V.T, np.zeros(V.shape[0]))
    spe = np.empty(X.shape[0])

    def block(s, B, buf):
        # (the block comes centred in the lane's buffer: the kernel reads it as it is)
        spe[s:s + B.shape[0]] = kern(B, buf)[1]
    X.each_block(block, kern.rows_per_block(), about=centre)
    return np.sqrt(spe)
