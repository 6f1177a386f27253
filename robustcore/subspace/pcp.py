"""Principal Component Pursuit (robust PCA): split X into a low-rank L plus a sparse S.

Solves  minimise ||L||_* + lam * ||S||_1  subject to  L + S = X  (Candès, Li, Ma & Wright,
JACM 2011) by the inexact augmented Lagrange multiplier method (Lin, Chen & Ma), with the
reference code's settings: mu0 = 1.25 / ||X||_2, mu capped at 1e7 * mu0, rho = 1.5,
Y0 = X / J(X), and the sparse step before the low-rank step.

Speed comes from doing only the work the answer needs:

* singular value thresholding needs only the triplets above 1/mu. A rank prediction (the
  reference code's rule, with min(n, d) in place of n) sizes a partial SVD; the route is chosen
  each iteration by a flop count tuned for numpy/OpenBLAS (``_pcp_svt._choose_route``):
  - "gram": one syrk on the smaller side and a small symmetric eigensolver (large ranks:
    MNIST, video); the syrk is accumulated block by block inside the sweep that writes A, and
    only the wanted eigenvectors are back-transformed (``linalg.eigh_above``);
  - "randomized": a range finder warm-started from the previous call's whole right Ritz basis
    (the oversampled vectors included: one subspace iteration then suffices), grown and
    recomputed whenever every computed singular value survives the threshold, so the
    threshold is never truncated (small ranks: JACM Table I). Once the rank has stayed the
    same for an iteration, or the last SVD saw no value between 0.6 tau and tau, the
    previous basis is projected on without a power step (one product pair with A instead of
    two); the next size is predicted from the values computed (``SweepOptions.gap``);
* while the residual is above max(1e-5, 100 tol), the products whose rounding the iterate
  does not see run in single precision (twice the GEMM speed): the randomized route's range
  finder, and the products that form L in the sweep (from a float32 copy of A that the sweep
  writes as it goes); in the first sweeps, while (sigma_1 / tau)^2 is below 1e4 times the
  residual, also the Gram route's A^T A. The basis is orthonormalised and projected (Q^T A) in
  double precision, so singular values are double-precision Rayleigh-Ritz values, and the last
  iterations are all double;
* L is never stored densely during the iterations: it is kept as factors and formed block by
  block inside one fused pass that updates the multiplier, measures the residual and performs
  the next sparse step while the block is in cache. Four n x d buffers are used (X itself is
  not copied unless it has all-zero rows or columns, which are dropped: they stay exactly zero
  in L, S and Y, so removing them changes nothing but the cost);
* the sparse step is ``R - clip(R, -t, t)``, two passes instead of sign * max(|R| - t, 0);
  with numba installed (the optional ``fast`` extra) the whole elementwise part of a block is
  one compiled, vectorised pass (``_pcp_jit``: 1000 x 1000 in 1.4 ms instead of 8 ms), used
  when it is loaded in the process (the window's worker loads it at start; a fit of more than
  ~1.7e7 entries starts loading it on a background thread and never waits for it);
* wide data (n < d, e.g. video frames as rows) is solved transposed, so the sweep always
  works on contiguous row blocks; scratch arrays live for the whole fit (fresh
  multi-megabyte arrays cost page faults every iteration);
* the sweep, the Gram product and the randomized route's products run on ``n_jobs`` threads,
  each over its own range of rows (numpy releases the GIL in products and elementwise loops),
  while BLAS runs on one thread (robustcore's rule inside every fit; when the user chose more
  BLAS threads, ``n_jobs=None`` runs one thread of its own instead: ``_blas_policy``).
  Only the small eigenproblem stays on one core (scipy's
  LAPACK wrappers hold the GIL). With ``n_jobs=None`` a governor (``_threads.Governor``)
  decides pass by pass: threads only while they receive the CPU time of more than one core
  (another job on the machine, or a scheduler sharing the cores between users, makes two
  threads as slow as one plus their synchronisation), one thread otherwise, trying threads
  again after 4, 8, 16, ... passes. Measured figures: benchmarks/results_pcp.md.
"""
from __future__ import annotations

import contextlib
import hashlib
import math
import time
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from sklearn.base import OneToOneFeatureMixin, TransformerMixin

from .._base import ConvergenceWarning, DegenerateFitWarning, Estimator, fit_protocol
from .._outlier import OutlierScores
from .._centering import column_location
from .._scaling import ScaledInput, frames_input, max_abs, pow2_factor
from .._blas_policy import blas_is_threaded
from .._threads import resolve_n_jobs
from .._validation import OVERFLOW_FIX, validate_X
from ..linalg import as_generator, spectral_norm
from ._pcp_svt import svd_threshold
from ._pcp_sweep import _BLOCK, _Sweeper
from ._pcp_params import PARAMS

__all__ = ["PCP", "svd_threshold"]


# With n_jobs=None, data below this many entries is fitted on one thread: measured on the
# 2-core machine, two threads were no faster on Table I n = 500 and 1000 (0.25e6 and 1e6
# entries) and 20 % slower with a second job running, and faster from MNIST's 2.35e6 on.
_THREADS_MIN_SIZE = 2_000_000


def _nonzero_lines(M):
    """Indices of the rows and columns of M holding a nonzero, or None when all do (or when
    dropping the few zero ones would not pay for the copy)."""
    n, d = M.shape
    nonzero = M != 0
    cols = np.flatnonzero(nonzero.any(axis=0))
    rows = np.flatnonzero(nonzero.any(axis=1))
    del nonzero
    if cols.size == 0 or rows.size == 0:
        return None, None
    if (rows.size * cols.size) > 0.95 * n * d:
        return None, None
    return (None if rows.size == n else rows), (None if cols.size == d else cols)


def _ix(rows, cols, n, d):
    return np.ix_(np.arange(n) if rows is None else rows, np.arange(d) if cols is None else cols)


def _expand(B, rows, cols, n, d):
    out = np.zeros((n, d))
    out[_ix(rows, cols, n, d)] = B
    return out


class PCP(OneToOneFeatureMixin, TransformerMixin, OutlierScores, ScaledInput, Estimator):
    """Robust PCA by Principal Component Pursuit, solved by inexact ALM.

    Samples are rows: ``X`` (n_samples, n_features), e.g. a table, or an image/video stack with
    one flattened frame per row. Decomposes ``X = L + S`` with ``L`` low-rank and ``S`` sparse.

    Attributes
    ----------
    low_rank_ : ndarray of shape (n_samples, n_features)
        The low-rank part L, in original units.
    sparse_ : ndarray of shape (n_samples, n_features)
        The sparse part S (exact zeros off its support), in original units.
    rank_ : int
        Rank of L: its singular values above ``RANK_TOL`` (1e-3) times X's largest singular value
        (both in the scaled, centred units the decomposition works in). Smaller ones are the
        solver's residue, not structure: on noisy data the inexact ALM leaves a few at 1e-9 to
        7e-4 of X's scale (a planted rank 3 came out as "rank 7, far from low-rank"). They stay
        in L, ``components_`` and ``singular_values_``; ``history_["rank"]`` counts as this does
        at every iteration (its last entry is ``rank_``), ``history_["svp"]`` counts them too.
    components_ : ndarray of shape (n_singular, n_features)
        Orthonormal right singular vectors of L in the scaled units (its row space), one per
        nonzero singular value (``n_singular >= rank_``).
    singular_values_ : ndarray of shape (n_singular,)
        Nonzero singular values of L, descending (the first ``rank_`` above the tolerance).
    sample_scores_ : ndarray of shape (n_samples,)
        Row l1 (or l2, ``score_norm``) norms of S in scaled units; large = the sample carries
        gross errors.
    limit_calibration_ : dict
        With ``contamination="auto"`` (else None): what the limit's calibration did ("action", "core_share",
        "reason") and its "caveat" ("" or why the share flagged among clean rows may be far
        from alpha; robustcore._calibration.rate_caveat).
    n_iter_ : int
        Iterations run.
    converged_ : bool
        Whether the tolerance was met.
    history_ : dict of equal-length lists
        One entry per iteration: "residual" (||X - L - S||_F / ||X||_F), "rank" (of L, counted as
        ``rank_`` is), "svp" (the singular values the thresholding kept, the solver's residue
        included), "nnz" (of S), "mu" (penalty used), "time" (seconds since the start of the fit).
    lam_ : float
        The lambda used.
    mu_ : float
        The initial mu.
    mu_final_ : float
        The last mu used.
    scale_center_, scale_ : ndarray of shape (n_features,)
        The scaling (robustcore._scaling).
    scaling_ : str
        The scaling used.
    center_ : ndarray of shape (n_features,)
        The column locations subtracted before the decomposition (``center``), in scaled units;
        zeros for ``center="none"``. L takes them back, S never holds them.
    offset_ : float
        ``decision_function = score_samples - offset_``.
    n_features_in_ : int
        Number of features seen in ``fit``.

    Notes
    -----
    Memory: X (not copied when it is a C-ordered float64 array) plus four n x d work arrays
    and a float32 copy of one of them (while the residual is large),
    and one reduced copy of X when it has all-zero rows or columns (these are dropped from the
    work; they come back as exact zeros of L and S). The returned L and S reuse work arrays;
    for wide X (n_samples < n_features) they are Fortran-ordered (transposed work arrays).
    Results are deterministic for a given ``random_state``; different seeds agree to about
    the tolerance. Values too large or too small to square in float64 are brought near 1 by a
    power of two before the decomposition and back after it (PCP is scale-equivariant, so this
    is exact).

    **New samples.** ``transform(X)`` returns the low-rank part of each row of X and
    ``score_samples`` minus the norm of its sparse part. A row the model was fitted on gets the
    decomposition's own L and S row (rows are recognised by their content), so ``fit_predict``,
    ``fit_transform`` and the training scores are exactly those of the fit. Any other row x
    (scaled) is split as ``x = c V + s`` with V = ``components_``, minimising ``sum_j c_j^2 /
    (2 sigma_j) + lam_ * |s|_1`` (sigma = ``singular_values_``): the l1 term is PCP's own, the
    first is the second-order increase of ||L||_* when the row is appended to L inside L's row
    space (exact as the row's weight in L goes to zero). It is solved for all rows at once by the
    same inexact augmented Lagrangian method as the fit (a few dozen vectorised iterations).

    **Outlier score.** ``_outlier_score``: the l1 (or l2, ``score_norm``) norm of each row's
    sparse part, in scaled units; for the training rows it is ``sample_scores_``.

    References
    ----------
    E. J. Candès, X. Li, Y. Ma and J. Wright, "Robust principal component analysis?", Journal of
    the ACM 58(3), 2011. Z. Lin, M. Chen and Y. Ma, "The augmented Lagrange multiplier method for
    exact recovery of corrupted low-rank matrices", arXiv:1009.5055, 2010.
    """

    # Each parameter's help is written once, here: the docstring's Parameters section is rendered
    # from these declarations (robustcore._docstring).
    _params = PARAMS  # declared in _pcp_params.py (read by the registry without this module)

    def __init__(self, lam=None, *, tol=1e-7, max_iter=1000, mu=None, rho=1.5, svd="auto",
                 score_norm="l1", random_state=None, n_jobs=None, scale="auto", center="median",
                 contamination="auto"):
        self.lam = lam
        self.tol = tol
        self.max_iter = max_iter
        self.mu = mu
        self.rho = rho
        self.svd = svd
        self.score_norm = score_norm
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.scale = scale
        self.center = center
        self.contamination = contamination

    # ------------------------------------------------------------------------------------
    @fit_protocol
    def fit(self, X, y=None, progress=None, *, _sweep=None, p):
        """Decompose X (n_samples, n_features) into ``low_rank_ + sparse_``. Returns self.
        ``_sweep`` (tests): the sweep's speed-ups (``_pcp_sweep.SweepOptions``), all on when None."""
        X, frames = frames_input(X)
        X = validate_X(self, X, reset=True, min_samples=2)
        Z, scaling = self._fit_scaled(X, p["scale"], frames)
        # The column locations are taken out in the scaled units and given back to L (class doc).
        location = column_location(Z, p["center"])
        if location.any():
            with np.errstate(over="ignore", invalid="ignore"):   # checked just below
                Z = Z - location
            if not math.isfinite(max_abs(Z)):
                raise ValueError("X's values are too near float64's largest value to take each column's "
                                 "location out (center): the differences overflow. Multiply X by a constant "
                                 "that brings its values near 1, or set center='none'")
        # The training rows' digests (0.09 s at 4000 x 4000) are hashed on a thread of their
        # own while the fit starts: hashlib releases the GIL, and the spectral norm before the
        # iterations leaves the second core idle.
        hasher = ThreadPoolExecutor(1, thread_name_prefix="pcp-rows")
        train_rows = hasher.submit(_row_index, Z)
        hasher.shutdown(wait=False)
        top = max_abs(Z) if Z.size else 0.0
        f = pow2_factor(Z, top)     # exact rescaling of extreme values, undone in _publish
        M = np.ascontiguousarray(Z * f if f != 1.0 else Z)   # row blocks want C order
        top *= f                    # (exact: f is a power of two)
        n, d = M.shape
        rng = as_generator(p["random_state"])
        t_start = time.perf_counter()
        lam = p["lam"] if p["lam"] is not None else 1.0 / math.sqrt(max(n, d))
        tol, rho, max_iter = p["tol"], p["rho"], p["max_iter"]

        norm_fro = float(np.sqrt(np.dot(M.ravel(), M.ravel()))) if M.flags.c_contiguous \
            else float(np.linalg.norm(M))
        hist = {"residual": [], "rank": [], "svp": [], "nnz": [], "mu": [], "time": []}
        if norm_fro == 0.0:
            progress(1.0, "X is all zeros: L = S = 0")
            mu0 = float(p["mu"] or 1.0)
            self._publish(np.zeros((n, d)), np.zeros((n, d)), np.zeros((0, d)), np.zeros(0), p, rank=0,
                          train_rows=train_rows,
                          lam=lam, mu=mu0, mu_final=mu0, n_iter=0, converged=True, hist=hist,
                          scaling=scaling, factor=f, location=location)
            return self

        jobs = resolve_n_jobs(p["n_jobs"])
        # (one thread of our own when threads did not pay, or when the user chose a threaded
        # BLAS: its threads then have the cores; the rule is robustcore._blas_policy's)
        if p["n_jobs"] is None and (M.size < _THREADS_MIN_SIZE or blas_is_threaded()):
            jobs = 1
        progress(0.0, "estimating ||X||_2")
        norm2 = spectral_norm(M, random_state=rng, top=top)
        mu = p["mu"] if p["mu"] is not None else 1.25 / norm2
        mu0 = mu
        mu_bar = mu0 * 1e7
        if not math.isfinite(mu_bar * f):
            # mu_ and mu_final_ are published in the data's units (x f, the rescaling): below
            # about 1e-302 they pass float64's largest value. Refused, as the other estimators
            # refuse values whose squares underflow, before any iteration.
            raise ValueError(f"X's largest value is {top / f:.3g}; at this scale PCP's penalty mu, which "
                             f"grows as 1 / X (up to {mu_bar:.3g} / {top / f:.3g} here), overflows float64. "
                             f"{OVERFLOW_FIX}")
        J = max(norm2, top / lam)

        # All-zero rows and columns (blank image borders, dead pixels) stay exactly zero in L, S
        # and Y at every iteration and at the optimum, so they are dropped from the work; lam
        # keeps the full shape.
        # Wide data (e.g. video frames as rows) is solved transposed, as PCP is symmetric under
        # transposition (lam already uses max(n, d)): the fused sweep then works on contiguous
        # row blocks, ~10 % faster on the 200 x 20800 escalator video than column blocks.
        # M.T is a view; the work arrays are C-ordered in the transposed shape.
        flip = n < d
        Mt = M.T if flip else M
        nw, dw = Mt.shape
        rows, cols = _nonzero_lines(Mt)
        Mw = Mt if rows is None and cols is None else Mt[_ix(rows, cols, nw, dw)]
        solver = _Sweeper(Mw, lam, p["svd"], rng, n_jobs=jobs, adaptive=p["n_jobs"] is None, tol=tol,
                          options=_sweep)
        res0 = None
        frac = 0.0
        converged = False
        it = 0
        # A Cancelled or FloatingPointError leaves through here too: the threads always stop.
        with contextlib.closing(solver):
            solver.start(1.0 / (J * mu), lam / mu)
            for it in range(1, max_iter + 1):
                mu_next = min(mu * rho, mu_bar)
                last = it == max_iter
                svp = solver.lowrank_step(1.0 / mu)
                # counted as rank_ is (RANK_TOL): the last iteration's is the rank reported
                rank = int(np.count_nonzero(solver.sL > RANK_TOL * norm2))
                res = solver.sweep(mu / mu_next, lam / mu_next, final=last) / norm_fro
                solver.last_res = res
                hist["residual"].append(res)
                hist["rank"].append(rank)
                hist["svp"].append(svp)
                hist["nnz"].append(solver.nnz_cur)
                hist["mu"].append(mu)
                hist["time"].append(time.perf_counter() - t_start)
                if not np.isfinite(res):
                    raise FloatingPointError(f"PCP diverged at iteration {it} (residual {res}); "
                                             "check the scale of X and the mu/rho settings")
                if res0 is None:
                    res0 = res
                if res < tol:
                    converged = True
                    frac = 1.0
                elif res < res0:
                    frac = max(frac, min(1.0, math.log(res0 / res) / math.log(res0 / tol)))
                progress(frac, f"iter {it}: residual {res:.1e}, rank {rank}")
                if converged:
                    break
                solver.advance()
                mu = mu_next
            L, S, U, Vt, sL = solver.result()

        if not converged:
            warnings.warn(f"PCP did not converge in {max_iter} iterations (relative residual "
                          f"{hist['residual'][-1]:.2e} > tol {tol:g}); increase max_iter or tol",
                          ConvergenceWarning, stacklevel=2)
        del solver, Mw
        rank = int(np.count_nonzero(sL > RANK_TOL * norm2))
        if converged:   # (a fit stopped early already warns, and its L is not the answer)
            _warn_if_degenerate(sL, rank, norm_fro, lam, p["lam"] is None,
                                min(nw if rows is None else rows.size, dw if cols is None else cols.size))
        if rows is not None or cols is not None:
            L, S = _expand(L, rows, cols, nw, dw), _expand(S, rows, cols, nw, dw)
            U, Vt = _expand(U, rows, None, nw, U.shape[1]), _expand(Vt, None, cols, Vt.shape[0], dw)
        if flip:   # back to samples as rows: L and S become (Fortran-ordered) views
            L, S, Vt = L.T, S.T, U.T
        self._publish(L, S, Vt, sL, p, rank=rank, train_rows=train_rows, lam=lam, mu=mu0,
                      mu_final=hist["mu"][-1], n_iter=it, converged=converged, hist=hist,
                      scaling=scaling, factor=f, location=location)
        return self

    def _publish(self, L, S, Vt, sL, p, *, rank, train_rows, lam, mu, mu_final, n_iter, converged, hist,
                 scaling, factor, location):
        """Scores in scaled units; L and S back in original units, in place (the work arrays).
        ``rank``: L's rank (``rank_``); ``train_rows``: the future of the training rows' digests."""
        self._train_rows = train_rows.result()
        if factor < 1.0:
            # Back in the data's units, L, S or L's singular values may pass float64's largest
            # value (data near it: a low-rank fit can exceed the entries it fits).
            ceiling = np.finfo(np.float64).max * factor
            top = max(max_abs(L), max_abs(S), float(np.max(sL, initial=0.0)))
            if top >= ceiling:
                raise ValueError("PCP's low-rank and sparse parts of these data exceed float64's largest value "
                                 "in the data's units (X holds values at or near it). Multiply X by a constant "
                                 "that brings its values near 1")
        if factor != 1.0:
            L /= factor
            S /= factor
            sL = sL / factor
            mu, mu_final = mu * factor, mu_final * factor
        scores = _row_norms(S, p["score_norm"])
        if not np.all(np.isfinite(scores)):
            raise ValueError(f"PCP's scores (the {p['score_norm']} norms of the rows of S) exceed float64's "
                             f"largest value: X's values (up to {max_abs(S):.3g} in S) are too near it to add "
                             f"up. Multiply X by a constant that brings its values near 1")
        if location.any():
            L += location
        center, scale = scaling["scale_center_"], scaling["scale_"]
        if center.any() or np.any(scale != 1.0):
            S *= scale
            L *= scale
            L += center
        self._set_fitted(
            **scaling,
            low_rank_=L,
            sparse_=S,
            rank_=int(rank),
            components_=np.ascontiguousarray(Vt),
            singular_values_=np.asarray(sL, dtype=np.float64).copy(),
            sample_scores_=scores,
            n_iter_=int(n_iter),
            converged_=bool(converged),
            history_=hist,
            center_=location,
            lam_=float(lam),
            mu_=float(mu),
            mu_final_=float(mu_final),
        )
        self._set_fitted(**self._offset(p["contamination"], lambda: scores))

    # -- new samples ----------------------------------------------------------------------
    def _scaled(self, X):
        Z = super()._scaled(X)
        return Z - self.center_ if self.center_.any() else Z

    def _unscale(self, Z):
        return super()._unscale(Z + self.center_ if self.center_.any() else Z)

    def _training_rows(self, Z):
        """Index of each scaled row of Z among the training rows (-1 for a new row)."""
        return np.array([self._train_rows.get(_row_key(z), -1) for z in Z], dtype=np.intp)

    def transform(self, X):
        """The low-rank part (n_samples, n_features) of each row of X, in original units: the
        fit's L for training rows, the per-row projection for others (class doc)."""
        Z = self._input(X)
        idx = self._training_rows(Z)
        known = idx >= 0
        out = np.empty_like(Z)
        out[known] = self.low_rank_[idx[known]]
        if not known.all():
            L, _ = project_rows(Z[~known], self.components_, self.singular_values_, self.lam_)
            out[~known] = self._unscale(L)
        return out

    def _outlier_score(self, Z):
        idx = self._training_rows(Z)
        known = idx >= 0
        out = np.empty(Z.shape[0])
        out[known] = self.sample_scores_[idx[known]]
        if not known.all():
            _, S = project_rows(Z[~known], self.components_, self.singular_values_, self.lam_)
            out[~known] = _row_norms(S, self.score_norm)
        return out

    def _auto_threshold(self, training_scores):
        return self._rate_limit(training_scores()).limit

    @staticmethod
    def _rate_limit(scores):
        from .._calibration import rate_limit
        from .._contamination import LIMIT_ALPHA
        return rate_limit(scores, LIMIT_ALPHA)

    def _offset(self, contamination, training_scores) -> dict:
        if contamination == "mad":
            from ..compare import robust_threshold
            return {"offset_": -float(robust_threshold(training_scores())), "limit_calibration_": None}
        if contamination == "auto":
            # the limit and what the calibration says of it (limit_calibration_["caveat"])
            cal = self._rate_limit(training_scores())
            return {"offset_": -float(cal.limit), "limit_calibration_": {
                "action": cal.action, "core_share": float(cal.core_share), "reason": cal.reason,
                "caveat": cal.caveat}}
        return {**super()._offset(contamination, training_scores), "limit_calibration_": None}


# A low-rank part this small against X (Frobenius norms) is rounding and tolerance: S is X.
_NEGLIGIBLE_L = 1e-6
# L's rank counts its singular values above this share of X's largest (PCP.rank_). Those below
# are the inexact ALM's residue: on 100,000 and 300,000 x 20 rows of a planted rank 3 plus noise,
# 4 and 7 more at 1e-9 to 6e-5 of ||X||_2 (reported as "rank 7 / 10, far from low-rank"); on a8a
# a second one at 4.5e-4, while L varied by under 4e-8 of X's range in 117 of 123 columns. Every
# value dropped is at most 0.1 % of X's largest direction: L changes by less than that.
RANK_TOL = 1e-3
# Above this share of min(n, d) the rank of L is not low. On planted square data with 2 %
# gross errors PCP recovered L0 exactly up to rank 0.2 n and failed from 0.25 n on, returning
# an L of rank about 0.54 n whatever L0's rank (n = 200, default lam); Candès et al.'s bound
# rank <= rho n(2) / (mu log^2 n(1)) is stricter still for tall data.
FAR_FROM_LOW_RANK = 0.25


def _warn_if_degenerate(sL, rank, norm_x, lam, default_lam, full_rank):
    """DegenerateFitWarning when the decomposition separated nothing: L empty (rank 0, or so
    small that S equals X to rounding), L of full rank (every direction of the nonzero data),
    or L far from low-rank (rank above FAR_FROM_LOW_RANK of the full rank).
    ``sL``: singular values of L; ``rank``: how many of them count (RANK_TOL); ``norm_x``:
    ||X||_F in the same units; ``full_rank``: min of the numbers of nonzero rows and columns of
    X. The message says what to change."""
    which = "the default 1/sqrt(max(n_samples, n_features))" if default_lam else "the lam given"
    if rank == 0 or math.sqrt(float(np.dot(sL, sL))) <= _NEGLIGIBLE_L * norm_x:
        warnings.warn(
            f"PCP found no low-rank part: L is zero (rank {rank}) and S = X, so each sample's "
            f"score is only the size of its own row, not a departure from structure shared with "
            f"the others. With lam = {lam:.3g} ({which}) putting every entry into S costs less than "
            f"any low-rank part, as happens on sparse or binary data. Raise lam (e.g. "
            f"lam={3 * lam:.3g}), scale the columns (scale='standard'), or use PCA or Coherence "
            f"Pursuit, which always keep a subspace", DegenerateFitWarning, stacklevel=4)
    elif rank >= full_rank > 1:
        warnings.warn(
            f"PCP's low-rank part has full rank ({rank}, every direction of the data): L is "
            f"X with its largest entries shaved off, not low-rank structure, and the scores "
            f"compare those shavings. With lam = {lam:.3g} ({which}) the sparse part is too "
            f"expensive for these data. Lower lam (e.g. lam={lam / 3:.3g}), scale the columns "
            f"(scale='standard' or 'robust'), or fit a subspace of chosen rank (PCA with "
            f"n_components)", DegenerateFitWarning, stacklevel=4)
    elif rank > FAR_FROM_LOW_RANK * full_rank:
        warnings.warn(
            f"L has rank {rank} of {full_rank}: far from low-rank (above a quarter of "
            f"min(n_samples, n_features), where PCP no longer recovers a planted low-rank part), "
            f"so L is not a summary of structure shared by the samples. With lam = {lam:.3g} "
            f"({which}) lower lam (e.g. lam={lam / 3:.3g}) or check the scaling (scale='standard' "
            f"or 'robust')", DegenerateFitWarning, stacklevel=4)


def _row_norms(S, kind):
    """l1 or l2 norm of each row of S, in blocks (no n x d temporary)."""
    n, d = S.shape
    out = np.empty(n)
    step = max(1, _BLOCK // max(d, 1))
    # Entries near float64's largest value (PCP accepts them, rescaling inside) would make the
    # sums overflow to an infinite score, subnormal ones their squares underflow to 0: extreme
    # entries are summed scaled by a power of two (exact), the norms scaled back.
    f = pow2_factor(S) if S.size else 1.0
    for i in range(0, n, step):
        blk = S[i:i + step] if f == 1.0 else S[i:i + step] * f
        out[i:i + step] = (np.abs(blk).sum(axis=1) if kind == "l1"
                           else np.sqrt(np.einsum("ij,ij->i", blk, blk)))
    with np.errstate(over="ignore"):     # an overflow is refused by name by the caller
        return out if f == 1.0 else out / f


def _row_key(z) -> bytes:
    # SHA-256 runs in hardware on current CPUs (2.3x blake2b here), and a memoryview of a
    # contiguous row is hashed without a copy
    return hashlib.sha256(memoryview(np.ascontiguousarray(z))).digest()


def _row_index(Z) -> dict:
    """Digest of each row's bytes -> its first row index (recognises the training rows)."""
    out: dict = {}
    for i, z in enumerate(Z):
        out.setdefault(_row_key(z), i)
    return out


def project_rows(Z, V, sigma, lam, *, tol=1e-7, max_iter=500, rho=1.5):
    """Split each row z of Z (m, d) as ``c V + s`` minimising
    ``sum_j c_j^2 / (2 sigma_j) + lam * |s|_1`` (V: (r, d) orthonormal rows, sigma > 0).

    Inexact ALM with one penalty per row (mu_i = 1.25 / |z_i|, growing by ``rho``); the c-step
    is exact (V orthonormal), the s-step a soft threshold. Stops when every row's constraint
    residual |z - cV - s| / |z| is below ``tol``. Returns (cV, s).
    """
    Z = np.asarray(Z, dtype=np.float64)
    m, d = Z.shape
    if m == 0:
        return Z.copy(), Z.copy()
    norms = np.sqrt(np.einsum("ij,ij->i", Z, Z))
    live = norms > 0
    norms[~live] = 1.0
    mu = (1.25 / norms)[:, None]
    mu_bar = mu * 1e7
    inv_sigma = 1.0 / np.asarray(sigma, dtype=np.float64)
    Y = np.zeros_like(Z)
    S = np.zeros_like(Z)
    LV = np.zeros_like(Z)
    for _ in range(max_iter):
        if V.shape[0]:
            C = ((Z - S + Y / mu) @ V.T) * (mu / (mu + inv_sigma))
            LV = C @ V
        R = Z - LV + Y / mu
        S = R - np.clip(R, -lam / mu, lam / mu)
        E = Z - LV - S
        Y += mu * E
        mu = np.minimum(mu * rho, mu_bar)
        if np.all(np.sqrt(np.einsum("ij,ij->i", E, E)) <= tol * norms):
            break
    S[~live] = 0.0
    LV[~live] = 0.0
    return LV, S
