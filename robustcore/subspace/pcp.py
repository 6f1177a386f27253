"""Principal Component Pursuit (robust PCA): split X into a low-rank L plus a sparse S.

Solves  minimise ||L||_* + lam * ||S||_1  subject to  L + S = X  (Candès, Li, Ma & Wright,
JACM 2011) by the inexact augmented Lagrange multiplier method (Lin, Chen & Ma), with the
reference code's settings: mu0 = 1.25 / ||X||_2, mu capped at 1e7 * mu0, rho = 1.5,
Y0 = X / J(X), and the sparse step before the low-rank step.

Speed comes from doing only the work the answer needs:

* singular value thresholding needs only the triplets above 1/mu. A rank prediction (the
  reference code's rule, with min(n, d) in place of n) sizes a partial SVD; the route is chosen
  each iteration by a flop count tuned for numpy/OpenBLAS (``_choose_route``):
  - "gram": one syrk on the smaller side and a small symmetric eigensolver (large ranks:
    MNIST, video); the syrk is accumulated block by block inside the sweep that writes A, and
    only the wanted eigenvectors are back-transformed (``linalg.eigh_above``);
  - "randomized": a range finder warm-started from the previous call's whole right Ritz basis
    (the oversampled vectors included: one subspace iteration then suffices), grown and
    recomputed whenever every computed singular value survives the threshold, so the
    threshold is never truncated (small ranks: JACM Table I). Once the rank has stayed the
    same for an iteration, or the last SVD saw no value between 0.6 tau and tau, the
    previous basis is projected on without a power step (one product pair with A instead of
    two); the next size is predicted from the values computed (``_GAP``);
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
  with BLAS held to one thread meanwhile. Only the small eigenproblem stays on one core (scipy's
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

from .. import _jit
from .._base import ConvergenceWarning, DegenerateFitWarning, Estimator, fit_method
from .._outlier import CONTAMINATION, OutlierScores
from .._params import Param, SeedParam
from .._progress import Reporter
from .._scaling import ScaledInput, max_abs, pow2_factor, scale_param
from .._threads import Governor, RowSplit, resolve_n_jobs, single_threaded_blas
from .._validation import validate_X
from ..linalg import as_generator, eigh_above, gram_svd, randomized_svd, spectral_norm

__all__ = ["PCP", "svd_threshold"]


_OVERSAMPLE = 10
# Rank prediction from the computed spectrum: when the randomized route's last Ritz value is
# below _GAP * tau, every value above _GAP * tau is known, and those (with a margin while the
# rank climbs) are the next iteration's candidates (its threshold is tau / rho). On Table I
# the values below the threshold sit at 0.43-0.50 tau, and the rule replaces the growth
# rule's overshoot after the rank's jump (n = 4000: 200 -> predicted 340, one iteration at
# twice the cost) by 217; n = 4000 fit 10.4 -> 9.1 s.
_GAP = 0.6
# The randomized route's range finder multiplies a float32 copy of A while the relative
# residual is above max(_SKETCH_RES, _SKETCH_TOLS * tol): its subspace is then accurate far
# beyond what the iterate needs, and the double-precision projection gives the values. Below
# that the float32 subspace would set a floor (~3e-8) under the reachable residual.
_SKETCH32 = True
_SKETCH_RES = 1e-5
_SKETCH_TOLS = 100.0
# Once the rank of L has stayed the same for an iteration, the previous right Ritz basis spans
# the wanted subspace to within the change of A between iterations, and the power step of the
# range finder is skipped (Table I n = 1000-2000: 20-30 % less time, same ranks and support,
# objective within 3e-8 of the fit with the step; benchmarks/results_pcp.md).
_SETTLED_SKIP = True
# In the same early phase (relative residual above max(_SKETCH_RES, _SKETCH_TOLS * tol)) the
# sweep forms L in single precision: the products that give L (A R Q on the Gram route, P Q on
# the randomized one) run on float32 copies, twice the GEMM speed, and L's rounding (~1e-7
# relative) stays two orders below the residual of those iterations; L is then added in double
# precision and every later iteration is all double.
_SINGLE_EARLY = True
# ... for data of at least this many entries: below it the products are cheap, and a small fit
# stays all double (its results then move with rounding at the 1e-16 level only).
_SINGLE_MIN_SIZE = 1 << 17
# The Gram route's A^T A is accumulated from the float32 copy of A while (sigma_1 / tau)^2 is
# below _GRAM32_RES times the residual (see _Sweeper.sweep): escalator video 3.5 % less time,
# objective moved by 2e-10.
_GRAM32 = True
_GRAM32_RES = 1e4


def svd_threshold(A, tau, *, sv=10, method="auto", init=None, random_state=None, products=None,
                  return_basis=False, sketch=None, settled=False):
    """Singular triplets of ``A`` (m, n) whose singular values exceed ``tau``.

    Parameters
    ----------
    A : ndarray (m, n)
    tau : float >= 0
    sv : int
        Predicted number of triplets above ``tau`` (sizes the partial SVD; grown as needed).
    method : "auto", "full", "gram" or "randomized"
    init : ndarray (n, j) or None
        Warm start for the randomized route (previous right singular vectors, transposed).
    random_state : numpy.random.Generator or seed
    products : how products with the tall side of A are computed in the randomized route
        (see :func:`robustcore.linalg.randomized_svd`); None means numpy's.
    settled : bool
        ``init`` spans the wanted subspace up to the change of A since it was computed (the
        caller's rank did not change over its last iterations): the randomized route then
        skips the power step (one product pair with A instead of two).
    return_basis : bool
        Also return the randomized route's whole right basis (every Ritz vector, including
        the oversampled ones below ``tau``; None for the other routes): the best warm start
        for the next call on a slightly changed A.

    Returns
    -------
    U : (m, r), s : (r,), Vt : (r, n), all singular values ``s > tau`` (descending), the
    route used, and (with ``return_basis``) the right basis (j, n) or None.
    """
    out = _svd_threshold(A, tau, sv, method, init, random_state, products, sketch, settled)
    return out[:5] if return_basis else out[:4]


def _svd_threshold(A, tau, sv, method, init, random_state, products, sketch, settled=False):
    m, n = A.shape
    small = min(m, n)
    sv = int(min(max(sv, 1), small))
    route = _choose_route(m, n, sv, warm=init is not None) if method == "auto" else method
    if route == "full":
        U, s, Vt = np.linalg.svd(A, full_matrices=False)
        r = int(np.count_nonzero(s > tau))
        return U[:, :r], s[:r], Vt[:r], route, None, s
    if route == "gram":
        U, s, Vt = gram_svd(A, threshold=tau)
        return U, s, Vt, route, None, s
    rng = as_generator(random_state)
    warm = init is not None and init.shape[1] > 0
    n_power = (0 if settled else 1) if warm else 2
    while True:
        if sv >= small or (method == "auto" and _choose_route(m, n, sv, warm=True) == "gram"):
            U, s, Vt = gram_svd(A, threshold=tau)
            return U, s, Vt, "gram", None, s
        # sv wanted + oversampling, all of them returned (the oversampled ones are the warm start)
        ell = min(sv + _OVERSAMPLE, small)
        U, s, Vt = randomized_svd(A, ell, n_oversamples=0, n_power_iter=n_power, init=init,
                                  random_state=rng, products=products, sketch=sketch)
        r = int(np.count_nonzero(s[:sv] > tau))
        if r < sv:
            return U[:, :r], s[:r], Vt[:r], route, Vt, s
        # Every computed value survived: the threshold may be truncated; grow and recompute,
        # warm-started from what was just found (the added directions are random: one power
        # step again).
        init = Vt.T
        n_power = 1
        sv = min(small, sv + max(1, round(0.05 * small)))


# With n_jobs=None, data below this many entries is fitted on one thread: measured on the
# 2-core machine, two threads were no faster on Table I n = 500 and 1000 (0.25e6 and 1e6
# entries) and 20 % slower with a second job running, and faster from MNIST's 2.35e6 on.
_THREADS_MIN_SIZE = 2_000_000
# Elements per block of the fused sweep (2 MB per array block). Smaller blocks stay in L2 but
# multiply the number of BLAS calls, which a multithreaded BLAS on a busy machine punishes.
_BLOCK = 1 << 18
# Below this many entries the numpy sweep is used even with numba installed.
_JIT_MIN_SIZE = 1 << 16
_JIT_MODULE = "robustcore.subspace._pcp_jit"
# From this many entries on, a fit starts loading the compiled sweep itself: it saves ~6 ns per
# entry and iteration, so ~30 iterations repay numba's start-up from ~1.5e7 entries on.
_JIT_LOAD_SIZE = 1 << 24


class _Sweeper:
    """The IALM state and its two steps, with X never copied and L never stored densely.

    Buffers (n x d each): W = Y / mu (scaled multiplier), A (the matrix whose SVT gives L),
    S_cur / S_nxt (the current sparse part and the one for the next iteration). L = P @ Q is
    held as factors; when the SVD came from the Gram matrix, one factor is a product with A
    and is formed block by block during the sweep, while that block of A is in cache.

    One iteration = ``lowrank_step`` (SVT of A) + ``sweep`` (multiplier update, residual and
    the next sparse step, fused into one pass over the data in blocks).

    ``PCP.fit`` always hands it a tall matrix (n >= d); the column-block path for wide input
    is kept so the class stays correct on any shape.

    With ``n_jobs`` > 1 (tall input only) the rows are cut into that many equal ranges, each
    swept by its own thread with its own scratch and its own part of the Gram matrix; numpy
    releases the GIL in the products and the elementwise loops, so the ranges run in parallel.
    Call ``close`` to stop the threads.
    """

    def __init__(self, M, lam, method, rng, n_jobs=1, adaptive=False, tol=1e-7):
        self.M = M
        self.lam = lam
        self._top = 0.0           # the largest singular value of the last A (0: none above tau)
        self._gram32 = False      # this sweep accumulates A^T A from the float32 copy of A
        self.n, self.d = M.shape
        self.small = min(self.n, self.d)
        self.tall = self.n >= self.d
        self.method = method
        self.rng = rng
        self.sv = 10
        self._last_svp = 0
        self._steady = 0          # consecutive iterations whose rank equalled the previous one
        self._gap_seen = False    # the last SVD found no value just below its threshold
        self._basis = None        # the randomized route's last right basis (warm start)
        self.last_res = math.inf  # relative residual after the last sweep
        self.tol = tol
        self._a32 = None
        self._a32_fresh = False   # _a32 holds the current A (the last sweep wrote it)
        self._single = None       # this sweep's float32 factors of L, or None (double)
        self._write32 = False     # this sweep writes the new A into _a32 too
        self.kind = None          # "PQ": L = P @ Q; "AR": P = A @ R; "LA": Q = Lm @ A
        self.P = self.Q = self.R = self.Lm = None
        self.sL = np.zeros(0)
        self._scratch = {}
        self._pbuf = None
        self._gram = None         # A^T A accumulated by the sweep (lower triangle), or None
        self._pool = None
        # Compiled sweep (numba, optional): used whenever it is already loaded in this process;
        # loading it (1-3 s of CPU for numba's start-up, on a background thread) is started
        # only for data big enough to repay that in one fit: on a busy machine the loading
        # thread takes its CPU time from the fit (Table I cold: 1.3 s of CPU instead of 0.7).
        self._jit_wanted = _jit.enabled() and M.size >= _JIT_MIN_SIZE
        if self._jit_wanted and M.size >= _JIT_LOAD_SIZE:
            _jit.kernels(_JIT_MODULE, wait=False)
        if self.tall:
            step = max(1, _BLOCK // self.d)
            # at least two blocks of rows per thread, or threads cost more than they bring
            jobs = max(1, min(int(n_jobs), -(-self.n // step) // 2))
            edges = np.linspace(0, self.n, jobs + 1).round().astype(int)
            self.groups = []
            for lo, hi in zip(edges[:-1].tolist(), edges[1:].tolist()):
                size = -(-(hi - lo) // -(-(hi - lo) // step))   # equal blocks within the range
                self.groups.append([np.s_[i:min(i + size, hi), :] for i in range(lo, hi, size)])
        else:
            step = max(1, _BLOCK // self.n)
            self.groups = [[np.s_[:, j:j + step] for j in range(0, self.d, step)]]
        self.n_jobs = len(self.groups)
        self.blocks = [b for grp in self.groups for b in grp]
        self.governor = Governor(self.n_jobs, adaptive=adaptive)
        self._threaded = self.governor.threaded()   # how the last pass ran

    def _executor(self):
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.n_jobs, thread_name_prefix="pcp-sweep")
        return self._pool

    def _products(self):
        """Products with A split over the sweep's row ranges and threads (None: one thread,
        also when the last pass found the threads not worth it)."""
        if not self._threaded:
            return None
        ranges = [(g[0][0].start, g[-1][0].stop) for g in self.groups]
        return RowSplit(self.n, ranges, self._executor())

    def close(self):
        """Stop the sweep threads (if any were started)."""
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None

    # -- state ----------------------------------------------------------------------------
    def start(self, w_scale, t):
        """First sparse step with L = 0 and Y = M / J (each thread group on its own blocks,
        which also spreads the first touch of the new arrays' pages over the threads)."""
        # explicit C order: M may be a transposed (Fortran-ordered) view of the caller's X
        shape = self.M.shape
        self.W, self.A, self.S_cur, self.S_nxt = (np.empty(shape) for _ in range(4))
        self.nnz_cur = self.nnz_nxt = sum(self._run(self._start_group, w_scale, t))

    def _start_group(self, g, w_scale, t):
        nnz = 0
        for b in self._blocks_of(g):
            Wb, Ab, Sb = self.W[b], self.A[b], self.S_cur[b]
            np.multiply(self.M[b], w_scale, out=Wb)
            np.add(self.M[b], Wb, out=Ab)
            np.clip(Ab, -t, t, out=Sb)
            np.subtract(Ab, Sb, out=Sb)
            np.subtract(Ab, Sb, out=Ab)
            nnz += int(np.count_nonzero(Sb))
            self.S_nxt[b].fill(0.0)
        return nnz

    def _blocks_of(self, g):
        """The blocks of thread group g (None: every block, the pass on one thread)."""
        return self.blocks if g is None else self.groups[g]

    def _run(self, fn, *args):
        """fn(g, *args) for every thread group g in the pool, or fn(None, *args) once when the
        governor keeps this pass on one thread (measured, to decide the next one)."""
        threaded = self.governor.threaded()
        self._threaded = threaded
        with self.governor.measure(threaded):
            if not threaded:
                return [fn(None, *args)]
            pool = self._executor()
            return [f.result() for f in [pool.submit(fn, g, *args) for g in range(self.n_jobs)]]

    def advance(self):
        self.S_cur, self.S_nxt = self.S_nxt, self.S_cur
        self.nnz_cur = self.nnz_nxt

    # -- low-rank step --------------------------------------------------------------------
    def lowrank_step(self, tau):
        """Threshold the singular values of A at tau; sets the factors of L. Returns rank(L)."""
        A = self.A
        sv = self.sv
        route = self.method
        if route == "auto":
            route = _choose_route(self.n, self.d, sv, warm=self.kind is not None)
        known = None              # how many values exceed _GAP * tau, when the route knows
        if route == "gram":
            kind, E, sig = _gram_eig(A, tau, G=self._gram)
            self._gram = self._basis = None
            svp = sig.size
            sL = sig - tau
            if svp == 0:
                self.kind = None
            elif kind == "right":      # E = V (d, k): L = (A V diag(sL/sig)) V^T
                self.kind, self.R, self.Q = "AR", E * (sL / sig), np.ascontiguousarray(E.T)
                self.P = self._p_buffer(svp)
            else:                      # E = U (n, k): L = U (diag(sL/sig) U^T A)
                self.kind, self.P = "LA", np.ascontiguousarray(E)
                self.Lm = np.ascontiguousarray((E * (sL / sig)).T)
                self.Q = np.empty((svp, self.d))
        else:
            Vt = self._basis if self._basis is not None else self._right_vectors()
            init = Vt.T if Vt is not None else None
            U, sig, Vt, _, self._basis, computed = _svd_threshold(
                A, tau, sv, route, init, self.rng, self._products(), self._sketch(A),
                _SETTLED_SKIP and (self._steady >= 1 or self._gap_seen))
            svp = sig.size
            if computed.size > svp and computed[-1] < _GAP * tau:
                known = int(np.count_nonzero(computed > _GAP * tau))
            sL = sig - tau
            if svp == 0:
                self.kind = None
            else:
                self.kind, self.P, self.Q = "PQ", U * sL, Vt
        self.sL = sL
        self._top = float(sig[0]) if svp else tau      # (an upper bound when none survived)
        # The reference code predicts svp + 1 (or + 5 % of the size when every computed value
        # survived). While the rank is still climbing (MNIST: 1, 6, 16, 31, 47, ...) that is
        # short every time, and the randomized route has to grow its SVD and recompute;
        # expecting the last step's growth again avoids most of those recomputations. When the
        # randomized route saw every value above _GAP * tau, those are counted instead (the
        # growth rule overshoots once the rank stops: Table I 60 -> 200 -> predicted 340).
        growth = max(1, svp - self._last_svp)
        self._steady = self._steady + 1 if svp == self._last_svp else 0
        # no value between _GAP * tau and tau: the basis is as settled as after a repeated rank
        self._gap_seen = known == svp
        self._last_svp = svp
        if known is not None:     # (a quarter more while the rank climbs: A changes too)
            nxt = max(known, svp) + 1 + max(0, known - svp) // 4
        else:
            nxt = svp + growth if svp < sv else svp + round(0.05 * self.small)
        self.sv = min(nxt, self.small)
        return svp

    def _early(self):
        """Whether the residual is still large enough for single-precision work."""
        return self.last_res > max(_SKETCH_RES, _SKETCH_TOLS * self.tol)

    def _single_ok(self):
        return _SINGLE_EARLY and self.tall and self.M.size >= _SINGLE_MIN_SIZE and self._early()

    def _a32_buffer(self):
        if self._a32 is None:
            self._a32 = np.empty(self.A.shape, np.float32)
        return self._a32

    def _sketch(self, A):
        """A float32 copy of A for the randomized route's range finder, or None."""
        if not _SKETCH32 or not self._early():
            return None
        if not self._a32_fresh:
            np.copyto(self._a32_buffer(), A, casting="same_kind")
            self._a32_fresh = True
        return self._a32

    def _single_factors(self):
        """float32 copies of the factors that give L in this sweep, or None (double)."""
        if not self._single_ok():
            return None
        if self.kind == "PQ":
            return {"P": self.P.astype(np.float32), "Q": self.Q.astype(np.float32)}
        if self.kind == "AR" and self._a32_fresh:
            return {"R": self.R.astype(np.float32), "Q": self.Q.astype(np.float32)}
        return None

    def _p_buffer(self, k):
        """An n x k C-ordered array carved from a buffer reused across iterations: a fresh
        multi-megabyte array every iteration costs page faults that rival the products."""
        size = self.n * k
        if self._pbuf is None or self._pbuf.size < size:
            cap = min(self.small, k + max(8, round(0.1 * self.small)))
            self._pbuf = np.empty(self.n * cap)
        return self._pbuf[:size].reshape(self.n, k)

    def _lowrank_block(self, b, out, g=None):
        """L restricted to block b, written into ``out`` (forming A-products as needed), or,
        when this sweep has float32 factors, a float32 scratch block holding it: the sweep's
        ufuncs and compiled kernel widen it exactly as they read it, so no double copy is
        written and read back (escalator: ~4 ms of each early sweep, one thread)."""
        kind = self.kind
        f32 = self._single
        if f32 is not None:
            rows = b[0]
            L32 = self._scratch_for(g, out.shape, 1, np.float32)[0]
            if kind == "PQ":
                np.matmul(f32["P"][rows], f32["Q"], out=L32)
            else:                      # "AR": P = A R is kept (in double) for the result
                k = self.R.shape[1]   # (k changes between iterations: carve from one buffer)
                P32 = self._scratch_for(g, (out.shape[0] * self.d,), 1, np.float32)[0]
                P32 = P32[:out.shape[0] * k].reshape(out.shape[0], k)
                np.matmul(self._a32[b], f32["R"], out=P32)
                self.P[rows] = P32
                np.matmul(P32, f32["Q"], out=L32)
            return L32
        if kind == "PQ":
            if self.tall:
                return np.matmul(self.P[b[0]], self.Q, out=out)
            return np.matmul(self.P, self.Q[b], out=out)
        if kind == "AR":               # tall: rows block
            Pb = np.matmul(self.A[b], self.R, out=self.P[b[0]])
            return np.matmul(Pb, self.Q, out=out)
        Qb = self.Lm @ self.A[b]       # "LA", wide: columns block
        self.Q[b] = Qb
        return np.matmul(self.P, Qb, out=out)

    def _scratch_for(self, g, shape, count=3, dtype=np.float64):
        """``count`` scratch arrays of ``shape`` owned by thread group g, allocated once per fit:
        fresh multi-megabyte arrays each sweep cost page faults."""
        key = (g, shape, count, np.dtype(dtype).char)
        if key not in self._scratch:
            self._scratch[key] = tuple(np.empty(shape, dtype) for _ in range(count))
        return self._scratch[key]

    # -- fused elementwise sweep ----------------------------------------------------------
    def sweep(self, c, t_next, final=False):
        """Y <- Y + mu Z (scaled by c = mu/mu_next), return ||Z||_F, and (unless ``final``)
        do the next sparse step S = soft(M + Y/mu - L, t_next) and A = M - S + Y/mu."""
        has_l = self.kind is not None
        route = self.method
        if route == "auto":
            route = _choose_route(self.n, self.d, self.sv, warm=has_l)
        want_gram = not final and self.tall and route == "gram"
        self._single = self._single_factors() if has_l else None
        self._write32 = not final and self._single_ok()
        if self._write32:
            self._a32_buffer()
        # The Gram matrix from the float32 copy (twice the syrk speed) while its error cannot
        # show: float32 sums over a block's rows perturb A^T A by ~2e-6 of its size, which
        # moves L by up to ~1e-6 (sigma_1 / tau)^2 of ||L|| near the threshold; allowed while
        # that stays two orders below the residual (escalator: the first ~9 iterations).
        ratio = self._top * self.lam / t_next if t_next > 0 else math.inf
        self._gram32 = (_GRAM32 and want_gram and self._write32
                        and ratio * ratio <= _GRAM32_RES * self.last_res)
        parts = self._run(self._sweep_group, c, t_next, final, has_l, want_gram)
        self._a32_fresh = self._write32
        gram = None
        if want_gram:
            gram = parts[0][2]
            for part in parts[1:]:
                gram += part[2]
        self._gram = gram
        self.nnz_nxt = sum(part[1] for part in parts)
        return math.sqrt(sum(part[0] for part in parts))

    def _sweep_group(self, g, c, t_next, final, has_l, want_gram):
        """The sweep over the blocks of group g: (sum of squared residuals, nnz of the new S,
        the group's share of A^T A (Fortran-ordered, lower triangle valid) or None)."""
        M, W, A, S = self.M, self.W, self.A, self.S_nxt
        blocks = self._blocks_of(g)
        acc = 0.0
        nnz = 0
        # A^T A is accumulated block by block while each new block of A is in cache, instead
        # of reading A again (~8 % less time for the Gram product on the escalator video).
        # numpy's matmul of Ab.T @ Ab calls BLAS syrk and releases the GIL, so the threads
        # accumulate their own parts in parallel (scipy's syrk wrapper holds the GIL).
        fused = want_gram
        gram = np.zeros((self.d, self.d)) if fused else None
        part = self._scratch_for(g, (self.d, self.d), 1)[0] if fused else None
        jit = _jit.ready(_JIT_MODULE) if self._jit_wanted and self.tall else None
        for b in blocks:
            T1, T2, T3 = self._scratch_for(g, M[b].shape)
            Ab = A[b]
            Wb = W[b]
            if jit is not None:                          # one compiled pass over the block
                if has_l:
                    Lb = self._lowrank_block(b, T3, g)
                else:
                    Lb = T3
                    Lb.fill(0.0)
                if final:
                    acc += jit.residual_block(Ab, Wb, Lb, c)
                    continue
                a, k = jit.sweep_block(M[b], Ab, Wb, S[b], Lb, c, t_next)
                acc += a
                nnz += k
                if self._write32:
                    np.copyto(self._a32[b], Ab, casting="same_kind")
                if fused:
                    gram += self._gram_block(Ab, b, part, g)
                continue
            if has_l:
                Lb = self._lowrank_block(b, T3, g)
                np.subtract(Ab, Lb, out=T1)              # G = Y_new / mu
            else:
                np.copyto(T1, Ab)
            np.subtract(Wb, T1, out=T2)                  # -(M - L - S)
            # one read pass, no squared copy; einsum's own loop, not BLAS (no thread wake-ups)
            acc += float(np.einsum("ij,ij->", T2, T2))
            np.multiply(T1, c, out=Wb)
            if final:
                continue
            if has_l:
                np.subtract(M[b], Lb, out=T2)
                T2 += Wb                                 # R = M + Y/mu - L
            else:
                np.add(M[b], Wb, out=T2)
            np.clip(T2, -t_next, t_next, out=T1)
            Sb = S[b]
            if self.tall:                                # contiguous rows: write S in place
                np.subtract(T2, T1, out=Sb)              # soft threshold of R
                nnz += int(np.count_nonzero(Sb))
            else:
                np.subtract(T2, T1, out=T2)
                nnz += int(np.count_nonzero(T2))         # (on the contiguous copy: faster)
                np.copyto(Sb, T2)
            if has_l:
                np.add(T1, Lb, out=Ab)                   # A = R - S + L
            else:
                np.copyto(Ab, T1)
            if self._write32:
                np.copyto(self._a32[b], Ab, casting="same_kind")
            if fused:
                gram += self._gram_block(Ab, b, part, g)
        # (symmetric: its transpose is the same matrix, Fortran-ordered as LAPACK wants it)
        return acc, nnz, None if gram is None else gram.T

    def _gram_block(self, Ab, b, part, g):
        """Ab^T Ab (d x d), in single precision from the float32 copy during _gram32 sweeps."""
        if not self._gram32:
            return np.matmul(Ab.T, Ab, out=part)
        a32 = self._a32[b]
        part32 = self._scratch_for(g, part.shape, 1, np.float32)[0]
        return np.matmul(a32.T, a32, out=part32)

    def _right_vectors(self):
        """Right singular vectors (k, d) of the current L, or None (warm start)."""
        if self.kind is None:
            return None
        return self.Q if self.kind != "LA" else self.Q / self.sL[:, None]

    def result(self):
        """(L dense, S, U, Vt, singular values of L) after the last sweep; U (n, k) and
        Vt (k, d) are the singular vectors of L, in descending order of the values."""
        S = self.S_cur
        self.S_nxt = None
        L = self.A
        self.A = None
        if self.kind is None:
            L.fill(0.0)
            return L, S, np.zeros((self.n, 0)), np.zeros((0, self.d)), np.zeros(0)
        products = self._products()
        if products is None:
            np.matmul(self.P, self.Q, out=L)
        else:
            products.dot(self.P, self.Q, out=L)
        sL = self.sL
        if self.kind == "LA":          # P = U, Q = diag(sL) Vt
            U, Vt = self.P, self.Q / sL[:, None]
        else:                          # P = U diag(sL), Q = Vt
            U, Vt = self.P / sL, self.Q
        order = np.argsort(-sL, kind="stable")
        return L, S, U[:, order], np.ascontiguousarray(Vt[order]), sL[order].copy()


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


def _choose_route(n, d, sv, warm):
    """Gram (syrk + eigh) or randomized subspace iteration, by a flop count tuned on numpy."""
    small, big = min(n, d), max(n, d)
    if small <= 64:
        return "gram"
    ell = sv + _OVERSAMPLE
    if ell >= small // 2:
        return "gram"
    q = 1 if warm else 2
    cost_gram = big * small * small + _EIGH_WEIGHT * small ** 3
    # skinny products re-read A from memory each time: they run well below GEMM speed
    cost_rand = _SKINNY_WEIGHT * ((2 * q + 2) * 2 * big * small * ell + (2 * q + 2) * big * ell * ell)
    return "gram" if cost_gram <= cost_rand else "randomized"


_EIGH_WEIGHT = 4.0   # LAPACK eigh runs at a fraction of GEMM speed (tridiagonal reduction)
_SKINNY_WEIGHT = 2.5


def _gram_eig(A, tau, G=None):
    """Eigenpairs of the smaller Gram matrix of A with singular value > tau.

    ``G`` is that Gram matrix if already known (only its lower triangle is read).
    Returns ("right", V (d, k), sigma) when d <= n (Gram = A^T A) or ("left", U (n, k), sigma).
    An exact dense eigensolver is used (``eigh_above``: every eigenvalue, only the wanted
    vectors back-transformed): a warm-started subspace step with Rayleigh-Ritz was tried and
    rejected, as it misses eigenvalues just above the threshold (MNIST: rank 244 instead of
    251) for a saving of under 10 %.
    """
    n, d = A.shape
    right = d <= n
    own = G is not None           # the sweep's Gram matrix is ours to overwrite
    if G is None:
        G = A.T @ A if right else A @ A.T
    t2 = tau * tau
    w, E = eigh_above(G, t2, overwrite=own)
    w, E = w[::-1], E[:, ::-1]
    sig = np.sqrt(w)
    keep = sig > tau
    return ("right" if right else "left"), E[:, keep], sig[keep]


class PCP(OneToOneFeatureMixin, TransformerMixin, OutlierScores, ScaledInput, Estimator):
    """Robust PCA by Principal Component Pursuit, solved by inexact ALM.

    Samples are rows: ``X`` (n_samples, n_features), e.g. a table, or an image/video stack with
    one flattened frame per row. Decomposes ``X = L + S`` with ``L`` low-rank and ``S`` sparse.

    Parameters
    ----------
    lam : float or None
        Weight of the l1 term; None means ``1 / sqrt(max(n_samples, n_features))`` (the JACM
        theorem's universal value). Larger values make S sparser.
    tol : float in (0, 1)
        Stop when ``||X - L - S||_F / ||X||_F < tol``.
    max_iter : int >= 1
        Iteration limit; reaching it warns with :class:`ConvergenceWarning`.
    mu : float or None
        Initial penalty; None means ``1.25 / ||X||_2``. It grows by ``rho`` per iteration up to
        ``1e7 * mu``.
    rho : float > 1
        Growth factor of the penalty (reference code: 1.5).
    svd : "auto", "gram", "randomized" or "full"
        How singular value thresholding is computed: "gram" = eigh of the smaller Gram matrix,
        "randomized" = warm-started range finder with rank prediction, "full" = LAPACK SVD each
        iteration (slow; for checking). "auto" chooses by the predicted rank.
    score_norm : "l1" or "l2"
        Per-sample outlier score from S: the l1 norm (default) or l2 norm of each row of S.
        (Called ``score`` in 0.1, which hid scikit-learn's ``score`` method.)
    random_state : None, int, numpy.random.Generator or RandomState
        Seed for the randomized SVD and the spectral norm estimate.
    n_jobs : int >= 1 or None
        Threads for the passes over the data. None: one thread for data of fewer than 2e6
        entries (threads did not pay there), else up to every core available to the process,
        each pass on one thread or on all of them as the machine's load allows (see the module
        notes); an int is used as given. While more than one thread may run, BLAS
        is held to one thread (with threadpoolctl installed), since BLAS's own threads would
        compete with them. Results do not depend on it beyond rounding (sums are split
        differently).
    scale : {"none", "standard", "robust", "auto"}, default "auto"
        Per-feature scaling inside the estimator (robustcore._scaling): the scaled matrix is
        decomposed, and L and S are returned in ORIGINAL units (L takes the centre: ``X = L + S``
        as in the scaled units). Scores are in the scaled units. "auto" standardises tables in
        mixed units and leaves pixels and video alone: the l1 penalty weighs every entry alike,
        so without it a column in small units never enters S (PCP scored ROC-AUC 0.04 on ODDS
        shuttle in random units; benchmarks/results_outliers.md).
    contamination : "auto" or float in (0, 0.5], default "auto"
        Outlier rule of ``predict``: "auto" flags samples whose score exceeds median + 3 MAD of
        the training scores (``robustcore.compare.robust_threshold``); a fraction c flags the
        share c of training samples with the largest scores.

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

    New samples
    -----------
    ``transform(X)`` returns the low-rank part of each row of X and ``score_samples`` minus the
    norm of its sparse part. A row the model was fitted on gets the decomposition's own L and S
    row (rows are recognised by their content), so ``fit_predict``, ``fit_transform`` and the
    training scores are exactly those of the fit. Any other row x (scaled) is split as
    ``x = c V + s`` with V = ``components_``, minimising ``sum_j c_j^2 / (2 sigma_j) +
    lam_ * |s|_1`` (sigma = ``singular_values_``): the l1 term is PCP's own, the first is the
    second-order increase of ||L||_* when the row is appended to L inside L's row space (exact
    as the row's weight in L goes to zero). It is solved for all rows at once by the same
    inexact augmented Lagrangian method as the fit (a few dozen vectorised iterations).

    Outlier score
    -------------
    ``_outlier_score``: the l1 (or l2, ``score_norm``) norm of each row's sparse part, in scaled
    units; for the training rows it is ``sample_scores_``.

    Fitted attributes
    -----------------
    low_rank_ : (n, d) the low-rank part L.
    sparse_ : (n, d) the sparse part S (exact zeros off its support).
    rank_ : int, rank of L.
    components_ : (rank, d) orthonormal right singular vectors of L (its row space).
    singular_values_ : (rank,) singular values of L, descending.
    sample_scores_ : (n,) row l1 (or l2) norms of S; large = sample carries gross errors.
    n_iter_ : int, iterations run.
    converged_ : bool, whether the tolerance was met.
    history_ : dict of equal-length lists, one entry per iteration: "residual"
        (||X - L - S||_F / ||X||_F), "rank" (of L), "nnz" (of S), "mu" (penalty used),
        "time" (seconds since the start of the fit).
    lam_ : float, the lambda used.
    mu_ : float, initial mu.
    mu_final_ : float, last mu used.
    scale_center_, scale_ : (d,) the scaling.
    scaling_ : str, the scaling used.
    offset_ : float.
    n_features_in_ : int
    """

    _params = (
        Param("lam", float, None, "Weight of the sparse term lambda (larger = sparser S).",
              low=0.0, low_inclusive=False, allow_none=True, none_label="1/sqrt(max(n, d))"),
        Param("tol", float, 1e-7, "Stop when ||X - L - S||_F / ||X||_F falls below this.",
              low=0.0, high=1.0, low_inclusive=False, high_inclusive=False),
        Param("max_iter", int, 1000, "Maximum number of iterations.", low=1),
        Param("mu", float, None, "Initial augmented-Lagrangian penalty mu.", low=0.0,
              low_inclusive=False, allow_none=True, none_label="1.25/||X||_2", advanced=True),
        Param("rho", float, 1.5, "Growth factor of mu per iteration.", low=1.0, low_inclusive=False,
              advanced=True),
        Param("svd", str, "auto", "SVD used for thresholding: auto, gram (eigh), randomized or full.",
              choices=("auto", "gram", "randomized", "full"), advanced=True),
        Param("score_norm", str, "l1", "Per-sample score from S: row l1 norm or row l2 norm.",
              choices=("l1", "l2")),
        SeedParam("Seed for the randomized SVD."),
        Param("n_jobs", int, None, "Threads for the passes over the data.", low=1, allow_none=True,
              none_label="all cores", advanced=True),
        scale_param("auto"),
        CONTAMINATION,
    )

    def __init__(self, lam=None, *, tol=1e-7, max_iter=1000, mu=None, rho=1.5, svd="auto",
                 score_norm="l1", random_state=None, n_jobs=None, scale="auto", contamination="auto"):
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
        self.contamination = contamination

    # ------------------------------------------------------------------------------------
    @fit_method()
    def fit(self, X, y=None, progress=None):
        """Decompose X (n_samples, n_features) into ``low_rank_ + sparse_``. Returns self."""
        p = self._start_fit()
        rep = Reporter(progress)
        X = validate_X(self, X, reset=True, min_samples=2)
        Z, scaling = self._fit_scaled(X, p["scale"])
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
        hist = {"residual": [], "rank": [], "nnz": [], "mu": [], "time": []}
        if norm_fro == 0.0:
            rep(1.0, "X is all zeros: L = S = 0")
            mu0 = float(p["mu"] or 1.0)
            self._publish(np.zeros((n, d)), np.zeros((n, d)), np.zeros((0, d)), np.zeros(0), p,
                          train_rows=train_rows,
                          lam=lam, mu=mu0, mu_final=mu0, n_iter=0, converged=True, hist=hist,
                          scaling=scaling, factor=f)
            return self

        jobs = resolve_n_jobs(p["n_jobs"])
        if p["n_jobs"] is None and M.size < _THREADS_MIN_SIZE:
            jobs = 1
        rep(0.0, "estimating ||X||_2")
        # (one BLAS thread here too: ARPACK's matrix-vector products with two spinning OpenBLAS
        # threads on a busy machine took seconds on Table I)
        with single_threaded_blas(jobs > 1):
            norm2 = spectral_norm(M, random_state=rng, top=top)
        mu = p["mu"] if p["mu"] is not None else 1.25 / norm2
        mu0 = mu
        mu_bar = mu0 * 1e7
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
        solver = _Sweeper(Mw, lam, p["svd"], rng, n_jobs=jobs, adaptive=p["n_jobs"] is None, tol=tol)
        res0 = None
        frac = 0.0
        converged = False
        it = 0
        # A Cancelled or FloatingPointError leaves through here too: the threads always stop.
        with single_threaded_blas(jobs > 1), contextlib.closing(solver):
            solver.start(1.0 / (J * mu), lam / mu)
            for it in range(1, max_iter + 1):
                mu_next = min(mu * rho, mu_bar)
                last = it == max_iter
                svp = solver.lowrank_step(1.0 / mu)
                res = solver.sweep(mu / mu_next, lam / mu_next, final=last) / norm_fro
                solver.last_res = res
                hist["residual"].append(res)
                hist["rank"].append(svp)
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
                rep(frac, f"iter {it}: residual {res:.1e}, rank {svp}")
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
        if converged:   # (a fit stopped early already warns, and its L is not the answer)
            _warn_if_degenerate(sL, norm_fro, lam, p["lam"] is None,
                                min(nw if rows is None else rows.size, dw if cols is None else cols.size))
        if rows is not None or cols is not None:
            L, S = _expand(L, rows, cols, nw, dw), _expand(S, rows, cols, nw, dw)
            U, Vt = _expand(U, rows, None, nw, U.shape[1]), _expand(Vt, None, cols, Vt.shape[0], dw)
        if flip:   # back to samples as rows: L and S become (Fortran-ordered) views
            L, S, Vt = L.T, S.T, U.T
        self._publish(L, S, Vt, sL, p, train_rows=train_rows, lam=lam, mu=mu0,
                      mu_final=hist["mu"][-1], n_iter=it, converged=converged, hist=hist,
                      scaling=scaling, factor=f)
        return self

    def _publish(self, L, S, Vt, sL, p, *, train_rows, lam, mu, mu_final, n_iter, converged, hist,
                 scaling, factor):
        """Scores in scaled units; L and S back in original units, in place (the work arrays).
        ``train_rows``: the future of the training rows' digests."""
        self._train_rows = train_rows.result()
        if factor != 1.0:
            L /= factor
            S /= factor
            sL = sL / factor
            mu, mu_final = mu * factor, mu_final * factor
        scores = _row_norms(S, p["score_norm"])
        center, scale = scaling["scale_center_"], scaling["scale_"]
        if center.any() or np.any(scale != 1.0):
            S *= scale
            L *= scale
            L += center
        self._set_fitted(
            **scaling,
            low_rank_=L,
            sparse_=S,
            rank_=int(sL.size),
            components_=np.ascontiguousarray(Vt),
            singular_values_=np.asarray(sL, dtype=np.float64).copy(),
            sample_scores_=scores,
            n_iter_=int(n_iter),
            converged_=bool(converged),
            history_=hist,
            lam_=float(lam),
            mu_=float(mu),
            mu_final_=float(mu_final),
        )
        self._set_fitted(**self._offset(p["contamination"], lambda: scores))

    # -- new samples ----------------------------------------------------------------------
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
        from ..compare import robust_threshold
        return robust_threshold(training_scores())


# A low-rank part this small against X (Frobenius norms) is rounding and tolerance: S is X.
_NEGLIGIBLE_L = 1e-6


def _warn_if_degenerate(sL, norm_x, lam, default_lam, full_rank):
    """DegenerateFitWarning when the decomposition separated nothing: L empty (rank 0, or so
    small that S equals X to rounding), or L of full rank (every direction of the nonzero data).
    ``sL``: singular values of L; ``norm_x``: ||X||_F in the same units; ``full_rank``: min of
    the numbers of nonzero rows and columns of X. The message says what to change."""
    which = "the default 1/sqrt(max(n_samples, n_features))" if default_lam else "the lam given"
    if sL.size == 0 or math.sqrt(float(np.dot(sL, sL))) <= _NEGLIGIBLE_L * norm_x:
        warnings.warn(
            f"PCP found no low-rank part: L is zero (rank {sL.size}) and S = X, so each sample's "
            f"score is only the size of its own row, not a departure from structure shared with "
            f"the others. With lam = {lam:.3g} ({which}) putting every entry into S costs less than "
            f"any low-rank part, as happens on sparse or binary data. Raise lam (e.g. "
            f"lam={3 * lam:.3g}), scale the columns (scale='standard'), or use PCA or Coherence "
            f"Pursuit, which always keep a subspace", DegenerateFitWarning, stacklevel=4)
    elif sL.size >= full_rank > 1:
        warnings.warn(
            f"PCP's low-rank part has full rank ({sL.size}, every direction of the data): L is "
            f"X with its largest entries shaved off, not low-rank structure, and the scores "
            f"compare those shavings. With lam = {lam:.3g} ({which}) the sparse part is too "
            f"expensive for these data. Lower lam (e.g. lam={lam / 3:.3g}), scale the columns "
            f"(scale='standard' or 'robust'), or fit a subspace of chosen rank (PCA with "
            f"n_components)", DegenerateFitWarning, stacklevel=4)


def _row_norms(S, kind):
    """l1 or l2 norm of each row of S, in blocks (no n x d temporary)."""
    n, d = S.shape
    out = np.empty(n)
    step = max(1, _BLOCK // max(d, 1))
    for i in range(0, n, step):
        blk = S[i:i + step]
        out[i:i + step] = (np.abs(blk).sum(axis=1) if kind == "l1"
                           else np.sqrt(np.einsum("ij,ij->i", blk, blk)))
    return out


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
