"""One pass of SCW over a stream, with as little per-sample Python work as the maths allows.

The learner is sequential: every update changes the state the next example is scored with. The
engines here still avoid touching every sample from Python:

* **Full covariance, blocked.** For a block of B rows, one GEMM gives ``S = X_B Sigma_0`` and the
  Gram matrix ``K = S X_B^T``. After updates ``Sigma = Sigma_0 - sum_i beta_i g_i g_i^T`` (g_i the
  ``Sigma x`` of the i-th update), each later row's score and ``v`` change by terms in
  ``h_i = g_i^T x_j = K[k_i, j] - sum_{l<i} beta_l h_l(k_i) h_l(j)``. Keeping the scores and
  ``v`` of the rest of the block current costs O(u B) numpy work per *update*; rows that need no
  update are skipped in one vectorised test. At the end of the block the g_i follow from one unit
  triangular solve and Sigma, mu get one rank-u update (a SYRK), so the result equals the plain
  sequential algorithm up to rounding.
* **Diagonal covariance, dense.** The same skip-ahead: an update at row k changes later rows'
  scores by ``X_B (s * x_k)`` and their ``v`` by ``X_B^2 (s * x_k)^2``.
* **Diagonal covariance, CSR, binary.** Rows are scheduled into "waves": a row's wave comes
  after the waves of all earlier rows it shares a column with, so the rows of one wave share
  no column and are learned in one vectorised step, and every column still sees its updates in
  stream order (see :func:`_sparse_waves`). Only the non-zeros are touched (no densifying).
* **Diagonal covariance, CSR, multi-class.** A loop over rows touching only their non-zeros.
* **Optional compiled kernels** (:mod:`._scw_jit`, when numba is installed) run the plain
  sequential loop for streams of at least ``JIT_MIN_ROWS`` rows.

An all-zero row has v = 0 and a zero score, hence no loss: it is never an update. With an
intercept (``run_stream(..., intercept=c)``) every row carries an extra constant feature c,
appended a chunk of rows at a time, so no row is all-zero.

States are updated in place. Every engine returns the pre-update scores of every row (what the
learner predicted before seeing the label), the pre-update ``v`` and which rows were updated.
Labels come in as ``codes``: +1/-1 floats for binary, class indices for multi-class.
"""
from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp
from scipy.linalg import solve_triangular

from .. import _jit
from ._scw_steps import binary_step, binary_step_array, loss_scale, multiclass_step

__all__ = ["run_stream", "StreamResult", "with_constant_column"]

# Rows per block for the full-covariance engine: large enough to amortise the GEMMs and the
# per-block solve, small enough that the O(u B) corrections per update stay cheap.
_BLOCK_FULL = 192
# Products below about this many multiply-adds stay single-threaded in OpenBLAS. Threads do not
# pay at these sizes and stall badly when the cores are busy (e.g. a GUI plus other work), so
# blocks are sized to stay under it while d allows.
_SMALL_GEMM = 262_144
# Rows per block of the dense diagonal engine.
_BLOCK_DIAG = 256
# Rows per scheduling chunk of the sparse binary engine: the schedule costs (chain depth) x
# (non-zeros) per chunk and the depth grows with the chunk, so chunks stay small. Must stay
# below 32768 (16-bit wave keys).
_SPARSE_CHUNK = 2048
# Waves shorter than this many rows on average are not worth scheduling (row loop instead).
_MIN_WAVE_ROWS = 8
# The progress callback is invoked about every this many samples.
_REPORT_EVERY = 1024


def _full_block_rows(d):
    b = min(math.sqrt(_SMALL_GEMM / d), _SMALL_GEMM / (d * d))
    return int(min(_BLOCK_FULL, max(32, b)))


class StreamResult:
    """Per-row outcome of one pass: pre-update scores (n, k), pre-update v (n,), updated (n,)."""

    __slots__ = ("scores", "v", "updated")

    def __init__(self, scores, v, updated):
        self.scores = scores
        self.v = v
        self.updated = updated


def _margins(Q, codes, multiclass):
    """Signed margins m and the competing class s (multi-class) for rows of pre-update scores."""
    if not multiclass:
        return codes * Q[:, 0], None
    rows = np.arange(Q.shape[0])
    true = Q[rows, codes]
    other = Q.copy()
    other[rows, codes] = -np.inf
    s = np.argmax(other, axis=1)
    return true - other[rows, s], s


def _blocks(n, size, rep, n_done, n_total):
    """(start, stop) of consecutive blocks of rows, reporting progress about every
    ``_REPORT_EVERY`` rows."""
    next_report = 0
    for b0 in range(0, n, size):
        if b0 >= next_report:
            rep((n_done + b0) / n_total, f"sample {n_done + b0:,} of {n_total:,}")
            next_report = b0 + _REPORT_EVERY
        yield b0, min(b0 + size, n)


def _triggers(vv, margins, thr, step, phi, C, variant):
    """The rows of a block whose confidence loss is positive, in stream order, with their step
    sizes: ``(row, competing class or None, alpha, beta)``.

    ``margins(j)`` returns the current margins (and competing classes) of rows j: of the block.
    The caller applies each update, changing the later rows' scores and ``v`` in place, before
    the next trigger is looked for; rows that need no update are skipped in one vectorised test.
    """
    nb = vv.shape[0]
    j = 0
    while j < nb:
        m, s = margins(j)
        hit = np.flatnonzero(thr * vv[j:] > m * np.abs(m))
        if hit.size == 0:
            return
        h0 = int(hit[0])
        k = j + h0
        j = k + 1
        v = float(vv[k])
        if not v > 0.0:
            continue
        alpha, beta = step(float(m[h0]), v, phi, C, variant)
        yield k, (None if s is None else int(s[h0])), alpha, beta


def _rows_dense(X, a, b):
    if sp.issparse(X):
        return X[a:b].toarray()
    return X[a:b]


def _full_pass(X, codes, mean, cov, phi, C, variant, multiclass, rep, n_done, n_total):
    n, d = X.shape
    k_out = mean.shape[0]
    thr = phi * phi * loss_scale(multiclass)   # loss > 0  <=>  thr * v > m |m|  (v > 0)
    step = multiclass_step if multiclass else binary_step
    scores = np.empty((n, k_out))
    vs = np.empty(n)
    updated = np.zeros(n, dtype=bool)
    B = _full_block_rows(d)
    # Hs[i] = sqrt(beta_i) * h_i restricted to the columns from k_i on (zeros before).
    Hs = np.zeros((B, B))
    sb = np.empty(B)
    for b0, b1 in _blocks(n, B, rep, n_done, n_total):
        nb = b1 - b0
        Xb = _rows_dense(X, b0, b1)
        cb = codes[b0:b1]
        S = Xb @ cov                    # rows are (Sigma_0 x_j)^T; Sigma_0 symmetric
        G = S @ Xb.T                    # Gram matrix under Sigma_0
        vv = np.diagonal(G).copy()
        if multiclass:
            Q = Xb @ mean.T             # (nb, k) scores under mu_0
        else:
            M = cb * (Xb @ mean[0])     # signed margins under mu_0
        ks, alphas, wins = [], [], []
        u = 0
        if multiclass:
            margins = lambda j, Q=Q, cb=cb: _margins(Q[j:], cb[j:], True)  # noqa: E731
        else:
            margins = lambda j, M=M: (M[j:], None)  # noqa: E731
        for k, sk, alpha, beta in _triggers(vv, margins, thr, step, phi, C, variant):
            if u:
                hrow = G[k, k:nb] - Hs[:u, k] @ Hs[:u, k:nb]
            else:
                hrow = G[k, k:nb].copy()
            sbeta = math.sqrt(beta)
            hs = sbeta * hrow
            Hs[u, k:nb] = hs
            sb[u] = sbeta
            if k + 1 < nb:
                tail = hrow[1:]
                if multiclass:
                    r = int(cb[k])
                    Q[k + 1:, r] += alpha * tail
                    Q[k + 1:, sk] -= alpha * tail
                else:
                    M[k + 1:] += (alpha * cb[k]) * (cb[k + 1:] * tail)
                hs1 = hs[1:]
                vv[k + 1:] -= hs1 * hs1
            if multiclass:
                wins.append((int(cb[k]), sk))
            ks.append(k)
            alphas.append(alpha)
            u += 1
        scores[b0:b1] = Q if multiclass else (cb * M)[:, None]
        vs[b0:b1] = vv
        if u:
            kk = np.asarray(ks)
            sq = sb[:u]
            # T[i, l] = beta_l h_l(k_i) for l < i; (I + T) G_rows = S[k] gives the g_i = Sigma x.
            T = np.tril((Hs[:u][:, kk] * sq[:, None]).T, -1)
            Gr = solve_triangular(T, S[kk], lower=True, unit_diagonal=True, check_finite=False)
            W = Gr * sq[:, None]
            cov -= W.T @ W
            al = np.asarray(alphas)
            if multiclass:
                A = np.zeros((u, k_out))
                rs, ss = zip(*wins)
                A[np.arange(u), rs] = al
                A[np.arange(u), ss] = -al
                mean += A.T @ Gr
            else:
                mean[0] += (al * cb[kk]) @ Gr
            updated[b0 + kk] = True
            Hs[:u, :nb] = 0.0
    return StreamResult(scores, vs, updated)


def _diag_dense_pass(X, codes, mean, sdiag, phi, C, variant, multiclass, rep, n_done, n_total):
    n, d = X.shape
    k_out = mean.shape[0]
    thr = phi * phi * loss_scale(multiclass)
    step = multiclass_step if multiclass else binary_step
    scores = np.empty((n, k_out))
    vs = np.empty(n)
    updated = np.zeros(n, dtype=bool)
    for b0, b1 in _blocks(n, _BLOCK_DIAG, rep, n_done, n_total):
        Xb = np.asarray(X[b0:b1])
        X2 = Xb * Xb
        cb = codes[b0:b1]
        Q = Xb @ mean.T
        vv = X2 @ sdiag
        nb = b1 - b0
        margins = lambda j, Q=Q, cb=cb: _margins(Q[j:], cb[j:], multiclass)  # noqa: E731
        for k, sk, alpha, beta in _triggers(vv, margins, thr, step, phi, C, variant):
            g = sdiag * Xb[k]
            if k + 1 < nb:
                dm = Xb[k + 1:] @ g
                vv[k + 1:] -= beta * (X2[k + 1:] @ (g * g))
            if multiclass:
                r = int(cb[k])
                if k + 1 < nb:
                    Q[k + 1:, r] += alpha * dm
                    Q[k + 1:, sk] -= alpha * dm
                mean[r] += alpha * g
                mean[sk] -= alpha * g
            else:
                c = alpha * cb[k]
                if k + 1 < nb:
                    Q[k + 1:, 0] += c * dm
                mean[0] += c * g
            sdiag -= beta * (g * g)
            updated[b0 + k] = True
        scores[b0:b1] = Q
        vs[b0:b1] = vv
    return StreamResult(scores, vs, updated)


def _sparse_waves(indptr, indices, c0, c1):
    """Schedule rows c0:c1 of a CSR stream into waves of rows that can be learned together.

    Row r depends on an earlier row when they share a column (the earlier update changes r's
    score and v). Its wave is 1 + the largest wave of the rows it depends on, so rows of one wave
    share no column with each other, and every row they depend on is in an earlier wave. Taking
    the waves in order therefore applies each column's updates in stream order: the result is
    the sequential algorithm's, with one vectorised step per wave instead of per row.

    Returns (wave of each local row, or None when the waves would be too short to pay, local
    row of each non-zero).
    """
    p0, p1 = int(indptr[c0]), int(indptr[c1])
    L = c1 - c0
    counts = np.diff(indptr[c0:c1 + 1])
    rows = np.repeat(np.arange(L), counts)
    cols = indices[p0:p1]
    order = np.argsort(cols, kind="stable")          # each column's non-zeros in row order
    sc = cols[order]
    same = np.flatnonzero(sc[1:] == sc[:-1])
    # The rows holding one column form a chain, so a frequent column means long chains, few
    # rows per wave and a costly schedule: then row by row is faster (returns None).
    max_depth = L // _MIN_WAVE_ROWS + 1
    if same.size:
        breaks = np.flatnonzero(sc[1:] != sc[:-1])
        run = np.diff(np.concatenate(([-1], breaks, [sc.size - 1])))
        if int(run.max()) > max_depth:
            return None, rows
    dep_entry = order[same + 1]                       # non-zeros with an earlier row on their column
    wave = np.zeros(L, dtype=np.int64)
    if dep_entry.size == 0:
        return wave, rows
    prev_of = np.full(p1 - p0, -1, dtype=np.int64)
    prev_of[dep_entry] = rows[order[same]]            # ... and that earlier row
    dep_sorted = np.flatnonzero(prev_of >= 0)         # the same non-zeros, in row order
    dep_row = rows[dep_sorted]
    dep_prev = prev_of[dep_sorted]
    ustart = np.flatnonzero(np.diff(dep_row, prepend=-1))
    urows = dep_row[ustart]
    # Longest dependency chain by repeated relaxation from zero: converges in (depth + 1) sweeps.
    for _ in range(max_depth + 1):
        new = np.maximum.reduceat(wave[dep_prev], ustart) + 1
        if np.array_equal(new, wave[urows]):
            return wave, rows
        wave[urows] = new
    return None, rows


def _diag_sparse_binary_waves(X, codes, mean, sdiag, phi, C, variant, rep, n_done, n_total):
    """Binary diagonal SCW on CSR rows, a wave of column-disjoint rows at a time (exact)."""
    n = X.shape[0]
    mu = mean[0]
    indptr, indices, data = X.indptr, X.indices, X.data
    scores = np.zeros((n, 1))
    vs = np.zeros(n)
    updated = np.zeros(n, dtype=bool)
    thr = phi * phi
    squared = variant == "II"
    chunk = _SPARSE_CHUNK
    for c0 in range(0, n, chunk):
        rep((n_done + c0) / n_total, f"sample {n_done + c0:,} of {n_total:,}")
        c1 = min(c0 + chunk, n)
        wave, rows = _sparse_waves(indptr, indices, c0, c1)
        if wave is None:
            _sparse_rows_binary(X, codes, mu, sdiag, phi, C, variant, scores[:, 0], vs, updated, c0, c1)
            continue
        p0 = int(indptr[c0])
        cols = indices[p0:int(indptr[c1])]
        vals = data[p0:int(indptr[c1])]
        y_chunk = codes[c0:c1]
        f_chunk = np.zeros(c1 - c0)
        v_chunk = np.zeros(c1 - c0)
        # Waves are small integers (at most the chunk size): 16-bit keys get numpy's radix sort.
        wave16 = wave.astype(np.int16)
        ent_order = np.argsort(wave16[rows], kind="stable")
        row_order = np.argsort(wave16, kind="stable")
        n_waves = int(wave.max()) + 1
        ent_bounds = np.searchsorted(wave[rows][ent_order], np.arange(n_waves + 1))
        row_bounds = np.searchsorted(wave[row_order], np.arange(n_waves + 1))
        for w in range(n_waves):
            ents = ent_order[ent_bounds[w]:ent_bounds[w + 1]]
            if ents.size == 0:
                continue
            rws = row_order[row_bounds[w]:row_bounds[w + 1]]
            pos = np.searchsorted(rws, rows[ents])        # entry -> index of its row in rws
            cl = cols[ents]
            xv = vals[ents]
            k = rws.size
            si = sdiag[cl]
            sx = si * xv
            v = np.bincount(pos, sx * xv, minlength=k)
            mi = mu[cl]
            f = np.bincount(pos, mi * xv, minlength=k)
            y = y_chunk[rws]
            m = y * f
            f_chunk[rws] = f
            v_chunk[rws] = v
            hit = np.flatnonzero((v > 0.0) & (thr * v > m * np.abs(m)))
            if hit.size == 0:
                continue
            al, be = binary_step_array(m[hit], v[hit], phi, C, squared)
            coef = np.zeros(k)
            bet = np.zeros(k)
            coef[hit] = al * y[hit]
            bet[hit] = be
            # Columns are distinct within a wave, so plain fancy assignment is exact.
            mu[cl] = mi + coef[pos] * sx
            sdiag[cl] = si - bet[pos] * (sx * sx)
            updated[c0 + rws[hit]] = True
        scores[c0:c1, 0] = f_chunk
        vs[c0:c1] = v_chunk
    return StreamResult(scores, vs, updated)


def _sparse_rows_binary(X, codes, mu, sdiag, phi, C, variant, sc, vs, updated, start, stop):
    """Binary diagonal SCW on CSR rows start:stop, one row at a time (only its non-zeros)."""
    thr = phi * phi
    indptr = X.indptr[start:stop + 1].tolist()
    indices = X.indices
    data = X.data
    ycodes = codes[start:stop].tolist()
    for t in range(stop - start):
        a = indptr[t]
        b = indptr[t + 1]
        if a == b:
            continue
        i = start + t
        idx = indices[a:b]
        x = data[a:b]
        si = sdiag[idx]
        sx = si * x
        v = float(sx.dot(x))
        mi = mu[idx]
        f = float(mi.dot(x))
        sc[i] = f
        vs[i] = v
        y = ycodes[t]
        m = y * f
        if v > 0.0 and thr * v > m * abs(m):
            alpha, beta = binary_step(m, v, phi, C, variant)
            mu[idx] = mi + (alpha * y) * sx
            sdiag[idx] = si - beta * (sx * sx)
            updated[i] = True


def _diag_sparse_pass(X, codes, mean, sdiag, phi, C, variant, multiclass, rep, n_done, n_total):
    n, d = X.shape
    k_out = mean.shape[0]
    thr = phi * phi * loss_scale(multiclass)
    scores = np.zeros((n, k_out))
    vs = np.zeros(n)
    updated = np.zeros(n, dtype=bool)
    indptr = X.indptr.tolist()
    indices = X.indices
    data = X.data
    next_report = 0
    if not multiclass:
        for i in range(0, n, _REPORT_EVERY):
            rep((n_done + i) / n_total, f"sample {n_done + i:,} of {n_total:,}")
            _sparse_rows_binary(X, codes, mean[0], sdiag, phi, C, variant, scores[:, 0], vs, updated,
                                i, min(i + _REPORT_EVERY, n))
        return StreamResult(scores, vs, updated)
    # Multi-class: class weights kept feature-major so one row's non-zeros gather contiguously.
    Mt = np.ascontiguousarray(mean.T)
    clist = codes.tolist()
    for i in range(n):
        if i >= next_report:
            rep((n_done + i) / n_total, f"sample {n_done + i:,} of {n_total:,}")
            next_report = i + _REPORT_EVERY
        a = indptr[i]
        b = indptr[i + 1]
        if a == b:
            continue
        idx = indices[a:b]
        x = data[a:b]
        si = sdiag[idx]
        sx = si * x
        v = float(sx.dot(x))
        Mi = Mt[idx]
        q = x @ Mi
        scores[i] = q
        vs[i] = v
        r = clist[i]
        true = q[r]
        q[r] = -np.inf
        s = int(np.argmax(q))
        m = float(true - q[s])
        if v > 0.0 and thr * v > m * abs(m):
            alpha, beta = multiclass_step(m, v, phi, C, variant)
            Mi[:, r] += alpha * sx
            Mi[:, s] -= alpha * sx
            Mt[idx] = Mi
            sdiag[idx] = si - beta * (sx * sx)
            updated[i] = True
    mean[...] = Mt.T
    return StreamResult(scores, vs, updated)


def _jit_module():
    """The compiled kernels, or None when numba is not installed (or disabled)."""
    return _jit.kernels("robustcore.online._scw_jit")


# Set ``USE_JIT = False`` to force the numpy engines.
USE_JIT = _jit.enabled()
# Below this many rows the numpy engines are used even with numba present: the one-off compile
# would cost more than it saves, and small interactive fits stay on one code path.
JIT_MIN_ROWS = 4096
# Rows per compiled call: progress and cancellation are checked between calls.
_JIT_CHUNK = 2048


def _jit_pass(jit, X, codes, mean, cov, phi, C, variant, multiclass, rep, n_done, n_total):
    n = X.shape[0]
    k_out = mean.shape[0]
    scores = np.zeros((n, k_out))
    vs = np.zeros(n)
    updated = np.zeros(n, dtype=bool)
    if multiclass:
        yi = np.ascontiguousarray(codes, dtype=np.int64)
        yf = np.zeros(n)
    else:
        yf = np.ascontiguousarray(codes, dtype=np.float64)
        yi = np.zeros(n, dtype=np.int64)
    squared = variant == "II"
    if sp.issparse(X):
        ip, ind, dat = X.indptr, X.indices, X.data     # int32 or int64 indices, no copy

        def kernel(a, b):
            jit.diag_sparse_pass(ip, ind, dat, yf, yi, mean, cov, phi, C, squared, multiclass,
                                 scores, vs, updated, a, b)
    else:
        Xc = np.ascontiguousarray(X)
        fn = jit.full_pass if cov.ndim == 2 else jit.diag_dense_pass

        def kernel(a, b):
            fn(Xc, yf, yi, mean, cov, phi, C, squared, multiclass, scores, vs, updated, a, b)
    for a in range(0, n, _JIT_CHUNK):
        rep((n_done + a) / n_total, f"sample {n_done + a:,} of {n_total:,}")
        kernel(a, min(a + _JIT_CHUNK, n))
    return StreamResult(scores, vs, updated)


def with_constant_column(X, value: float):
    """``X`` (n, d) with one more column, d, holding ``value`` in every row.

    CSR input stays CSR (the new entry is the last of each row, so indices stay sorted);
    nothing is densified.
    """
    n, d = X.shape
    if not sp.issparse(X):
        out = np.empty((n, d + 1))
        out[:, :d] = X
        out[:, d] = value
        return out
    indptr = X.indptr.astype(np.int64)
    new_indptr = indptr + np.arange(n + 1)
    last = np.zeros(X.nnz + n, dtype=bool)
    last[new_indptr[1:] - 1] = True
    idx_dtype = np.int64 if d + 1 > np.iinfo(np.int32).max else X.indices.dtype
    indices = np.empty(X.nnz + n, dtype=idx_dtype)
    data = np.empty(X.nnz + n)
    indices[~last] = X.indices
    indices[last] = d
    data[~last] = X.data
    data[last] = value
    out = sp.csr_matrix((data, indices, new_indptr.astype(idx_dtype, copy=False)), shape=(n, d + 1))
    out.has_sorted_indices = True
    return out


# Rows per augmented chunk when the model has an intercept (a constant extra column is appended
# a chunk at a time, so the whole X is never copied).
_INTERCEPT_CHUNK = 8192


def run_stream(X, codes, mean, cov, *, phi, C, variant, multiclass, rep, n_done=0, n_total=None,
               intercept=0.0):
    """One pass of SCW over the rows of ``X`` in order, updating ``mean`` and ``cov`` in place.

    Parameters
    ----------
    X : (n, d) float64 array or CSR matrix (canonical: sorted, no duplicate indices).
    codes : (n,) labels: float +1/-1 (binary) or int class indices (multi-class).
    mean : (k, D) weights; k = 1 for binary, n_classes for shared multi-class; D = d, or d + 1
        with an intercept (its weight is the last column).
    cov : (D, D) full covariance, or (D,) its diagonal (diagonal variant).
    phi, C, variant : confidence Phi^-1(eta), aggressiveness (``math.inf`` gives CW), "I" or "II".
    multiclass : shared-covariance multi-class update (else binary).
    rep : a Reporter (may raise Cancelled).
    n_done, n_total : samples before this call and in the whole run, for progress fractions.
    intercept : 0 for none; otherwise every row gets an extra constant feature of this value
        (learned like any other weight, so an all-zero row still has v > 0 and gets the bias).

    Returns
    -------
    StreamResult with ``scores`` (n, k) pre-update decision values, ``v`` (n,) pre-update
    x^T Sigma x and ``updated`` (n,) bool.
    """
    n = X.shape[0]
    n_total = n if n_total is None else n_total
    use_jit = USE_JIT and n >= JIT_MIN_ROWS
    if not intercept:
        return _dispatch(X, codes, mean, cov, phi, C, variant, multiclass, rep, n_done, n_total,
                         use_jit, False)
    step = _INTERCEPT_CHUNK
    if not sp.issparse(X):
        step = max(256, min(step, _BLOCK_ENTRIES_AUG // (X.shape[1] + 1)))
    parts = []
    for a in range(0, n, step):
        b = min(a + step, n)
        Xa = with_constant_column(X[a:b], intercept)
        parts.append(_dispatch(Xa, codes[a:b], mean, cov, phi, C, variant, multiclass, rep,
                               n_done + a, n_total, use_jit, True))
    if len(parts) == 1:
        return parts[0]
    return StreamResult(np.concatenate([r.scores for r in parts]), np.concatenate([r.v for r in parts]),
                        np.concatenate([r.updated for r in parts]))


# Entries per dense augmented chunk (32 MB).
_BLOCK_ENTRIES_AUG = 1 << 22


def _dispatch(X, codes, mean, cov, phi, C, variant, multiclass, rep, n_done, n_total, use_jit,
              shared_column):
    args = (X, codes, mean, cov, phi, C, variant, multiclass, rep, n_done, n_total)
    dense_full_from_sparse = cov.ndim == 2 and sp.issparse(X)
    if use_jit and not dense_full_from_sparse:
        jit = _jit_module()
        if jit is not None:
            return _jit_pass(jit, *args)
    if cov.ndim == 2:
        return _full_pass(*args)
    if sp.issparse(X):
        # A column shared by every row (the intercept) chains all rows: no two rows could share
        # a wave, so go row by row straight away.
        if not multiclass and not shared_column:
            return _diag_sparse_binary_waves(X, codes, mean, cov, phi, C, variant, rep, n_done, n_total)
        return _diag_sparse_pass(*args)
    return _diag_dense_pass(*args)
