"""PCP's inexact-ALM iterations over the data: the state, the low-rank step and the fused sweep.

:class:`_Sweeper` holds the IALM state (X never copied, L never stored densely) and performs one
iteration as ``lowrank_step`` (singular value thresholding, :mod:`._pcp_svt`) plus ``sweep``
(multiplier update, residual and the next sparse step, fused into one pass over the data in
blocks). :class:`_RowBlocks` cuts the data into those blocks, one range of rows per thread, and
runs a pass on the threads or on one (``_threads.Governor``). The reasons for each choice are in
the module notes of :mod:`robustcore.subspace.pcp`; measured figures in benchmarks/results_pcp.md.
"""
from __future__ import annotations

from dataclasses import dataclass

import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .. import _jit
from .._threads import Governor, RowSplit
from ._pcp_svt import _choose_route, _gram_eig, _svd_threshold

# Rank prediction from the computed spectrum: when the randomized route's last Ritz value is
# below gap * tau, every value above gap * tau is known, and those (with a margin while the
# rank climbs) are the next iteration's candidates (its threshold is tau / rho). On Table I
# the values below the threshold sit at 0.43-0.50 tau, and the rule replaces the growth
# rule's overshoot after the rank's jump (n = 4000: 200 -> predicted 340, one iteration at
# twice the cost) by 217; n = 4000 fit 10.4 -> 9.1 s.
# (SweepOptions.gap)
# The randomized route's range finder multiplies a float32 copy of A while the relative
# residual is above max(_SKETCH_RES, _SKETCH_TOLS * tol): its subspace is then accurate far
# beyond what the iterate needs, and the double-precision projection gives the values. Below
# that the float32 subspace would set a floor (~3e-8) under the reachable residual.
# (SweepOptions.sketch32)
_SKETCH_RES = 1e-5
_SKETCH_TOLS = 100.0
# Once the rank of L has stayed the same for an iteration, the previous right Ritz basis spans
# the wanted subspace to within the change of A between iterations, and the power step of the
# range finder is skipped (Table I n = 1000-2000: 20-30 % less time, same ranks and support,
# objective within 3e-8 of the fit with the step; benchmarks/results_pcp.md).
# (SweepOptions.settled_skip)
# In the same early phase (relative residual above max(_SKETCH_RES, _SKETCH_TOLS * tol)) the
# sweep forms L in single precision: the products that give L (A R Q on the Gram route, P Q on
# the randomized one) run on float32 copies, twice the GEMM speed, and L's rounding (~1e-7
# relative) stays two orders below the residual of those iterations; L is then added in double
# precision and every later iteration is all double.
# (SweepOptions.single_early)
# ... for data of at least this many entries: below it the products are cheap, and a small fit
# stays all double (its results then move with rounding at the 1e-16 level only).
_SINGLE_MIN_SIZE = 1 << 17
# The Gram route's A^T A is accumulated from the float32 copy of A while (sigma_1 / tau)^2 is
# below _GRAM32_RES times the residual (see _Sweeper.sweep): escalator video 3.5 % less time,
# objective moved by 2e-10.
# (SweepOptions.gram32)
_GRAM32_RES = 1e4

@dataclass(frozen=True)
class SweepOptions:
    """The sweep's speed-ups (each explained where its constants are, above), all on by
    default; the tests turn one off to check that it changes the time only."""

    gap: float = 0.6
    sketch32: bool = True
    settled_skip: bool = True
    single_early: bool = True
    gram32: bool = True


# Elements per block of the fused sweep (2 MB per array block). Smaller blocks stay in L2 but
# multiply the number of BLAS calls, which a multithreaded BLAS on a busy machine punishes.
_BLOCK = 1 << 18
# Below this many entries the numpy sweep is used even with numba installed.
_JIT_MIN_SIZE = 1 << 16
_JIT_MODULE = "robustcore.subspace._pcp_jit"
# From this many entries on, a fit starts loading the compiled sweep itself: it saves ~6 ns per
# entry and iteration, so ~30 iterations repay numba's start-up from ~1.5e7 entries on.
_JIT_LOAD_SIZE = 1 << 24


class _RowBlocks:
    """The blocks of one pass over an n x d matrix, cut into one range of rows per thread, and
    the threads that run a pass over them.

    Tall input (n >= d): blocks of rows, in ``n_jobs`` equal ranges (fewer when a range would
    hold less than two blocks: threads then cost more than they bring), each swept by its own
    thread with its own scratch; numpy releases the GIL in the products and the elementwise
    loops, so the ranges run in parallel. Wide input: blocks of columns, on one thread. The
    governor (``_threads.Governor``) decides pass by pass whether the threads pay; ``close``
    stops them.
    """

    def __init__(self, shape, n_jobs=1, adaptive=False):
        self.n, self.d = shape
        self.tall = self.n >= self.d
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
        self.threaded = self.governor.threaded()   # how the last pass ran
        self._pool = None
        self._scratch = {}

    def _executor(self):
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.n_jobs, thread_name_prefix="pcp-sweep")
        return self._pool

    def products(self):
        """Products with a matrix of these rows split over the ranges and threads (None: one
        thread, also when the last pass found the threads not worth it)."""
        if not self.threaded:
            return None
        ranges = [(g[0][0].start, g[-1][0].stop) for g in self.groups]
        return RowSplit(self.n, ranges, self._executor())

    def close(self):
        """Stop the threads (if any were started)."""
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None

    def blocks_of(self, g):
        """The blocks of thread group g (None: every block, the pass on one thread)."""
        return self.blocks if g is None else self.groups[g]

    def run(self, fn, *args):
        """fn(g, *args) for every thread group g in the pool, or fn(None, *args) once when the
        governor keeps this pass on one thread (measured, to decide the next one)."""
        threaded = self.governor.threaded()
        self.threaded = threaded
        with self.governor.measure(threaded):
            if not threaded:
                return [fn(None, *args)]
            pool = self._executor()
            return [f.result() for f in [pool.submit(fn, g, *args) for g in range(self.n_jobs)]]

    def scratch(self, g, shape, count=3, dtype=np.float64):
        """``count`` scratch arrays of ``shape`` owned by thread group g, allocated once per fit:
        fresh multi-megabyte arrays each sweep cost page faults."""
        key = (g, shape, count, np.dtype(dtype).char)
        if key not in self._scratch:
            self._scratch[key] = tuple(np.empty(shape, dtype) for _ in range(count))
        return self._scratch[key]


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

    Its passes run over ``rows`` (:class:`_RowBlocks`): with ``n_jobs`` > 1 (tall input only)
    each thread sweeps its own range of rows and accumulates its own part of the Gram matrix.
    Call ``close`` to stop the threads.
    """

    def __init__(self, M, lam, method, rng, n_jobs=1, adaptive=False, tol=1e-7, options=None):
        self.opt = options or SweepOptions()
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
        self._pbuf = None
        self._gram = None         # A^T A accumulated by the sweep (lower triangle), or None
        # Compiled sweep (numba, optional): used whenever it is already loaded in this process;
        # loading it (1-3 s of CPU for numba's start-up, on a background thread) is started
        # only for data big enough to repay that in one fit: on a busy machine the loading
        # thread takes its CPU time from the fit (Table I cold: 1.3 s of CPU instead of 0.7).
        self._jit_wanted = _jit.enabled() and M.size >= _JIT_MIN_SIZE
        if self._jit_wanted and M.size >= _JIT_LOAD_SIZE:
            _jit.kernels(_JIT_MODULE, wait=False)
        self.rows = _RowBlocks(M.shape, n_jobs, adaptive)

    # -- state ----------------------------------------------------------------------------
    def start(self, w_scale, t):
        """First sparse step with L = 0 and Y = M / J (each thread group on its own blocks,
        which also spreads the first touch of the new arrays' pages over the threads)."""
        # explicit C order: M may be a transposed (Fortran-ordered) view of the caller's X
        shape = self.M.shape
        self.W, self.A, self.S_cur, self.S_nxt = (np.empty(shape) for _ in range(4))
        self.nnz_cur = self.nnz_nxt = sum(self.rows.run(self._start_group, w_scale, t))

    def _start_group(self, g, w_scale, t):
        nnz = 0
        for b in self.rows.blocks_of(g):
            Wb, Ab, Sb = self.W[b], self.A[b], self.S_cur[b]
            np.multiply(self.M[b], w_scale, out=Wb)
            np.add(self.M[b], Wb, out=Ab)
            np.clip(Ab, -t, t, out=Sb)
            np.subtract(Ab, Sb, out=Sb)
            np.subtract(Ab, Sb, out=Ab)
            nnz += int(np.count_nonzero(Sb))
            self.S_nxt[b].fill(0.0)
        return nnz

    def close(self):
        """Stop the sweep threads (if any were started)."""
        self.rows.close()

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
        known = None              # how many values exceed gap * tau, when the route knows
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
                A, tau, sv, route, init, self.rng, self.rows.products(), self._sketch(A),
                self.opt.settled_skip and (self._steady >= 1 or self._gap_seen))
            svp = sig.size
            if computed.size > svp and computed[-1] < self.opt.gap * tau:
                known = int(np.count_nonzero(computed > self.opt.gap * tau))
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
        # randomized route saw every value above gap * tau, those are counted instead (the
        # growth rule overshoots once the rank stops: Table I 60 -> 200 -> predicted 340).
        growth = max(1, svp - self._last_svp)
        self._steady = self._steady + 1 if svp == self._last_svp else 0
        # no value between gap * tau and tau: the basis is as settled as after a repeated rank
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
        return self.opt.single_early and self.tall and self.M.size >= _SINGLE_MIN_SIZE and self._early()

    def _a32_buffer(self):
        if self._a32 is None:
            self._a32 = np.empty(self.A.shape, np.float32)
        return self._a32

    def _sketch(self, A):
        """A float32 copy of A for the randomized route's range finder, or None."""
        if not self.opt.sketch32 or not self._early():
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
            L32 = self.rows.scratch(g, out.shape, 1, np.float32)[0]
            if kind == "PQ":
                np.matmul(f32["P"][rows], f32["Q"], out=L32)
            else:                      # "AR": P = A R is kept (in double) for the result
                k = self.R.shape[1]   # (k changes between iterations: carve from one buffer)
                P32 = self.rows.scratch(g, (out.shape[0] * self.d,), 1, np.float32)[0]
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
        self._gram32 = (self.opt.gram32 and want_gram and self._write32
                        and ratio * ratio <= _GRAM32_RES * self.last_res)
        parts = self.rows.run(self._sweep_group, c, t_next, final, has_l, want_gram)
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
        blocks = self.rows.blocks_of(g)
        acc = 0.0
        nnz = 0
        # A^T A is accumulated block by block while each new block of A is in cache, instead
        # of reading A again (~8 % less time for the Gram product on the escalator video).
        # numpy's matmul of Ab.T @ Ab calls BLAS syrk and releases the GIL, so the threads
        # accumulate their own parts in parallel (scipy's syrk wrapper holds the GIL).
        fused = want_gram
        gram = np.zeros((self.d, self.d)) if fused else None
        part = self.rows.scratch(g, (self.d, self.d), 1)[0] if fused else None
        jit = _jit.ready(_JIT_MODULE) if self._jit_wanted and self.tall else None
        for b in blocks:
            T1, T2, T3 = self.rows.scratch(g, M[b].shape)
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
        part32 = self.rows.scratch(g, part.shape, 1, np.float32)[0]
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
        products = self.rows.products()
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
