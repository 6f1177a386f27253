"""The steps of Coherence Pursuit that need random access to the rows (every row in memory).

Everything else of the fit (scaling, centre, degenerate rows, the number selected, the
selection, the limits) is the one route of ``_cop_fit.fit_cop``; these are only the steps
that read rows in an order no pass gives:

- :func:`coherence_scores`: the coherence from pairs of rows, blocks of the n x n Gram matrix
  (ℓ1, for which no d x d form exists, and tables with fewer than two rows per feature, where
  the n x n side is the smaller one);
- :func:`adaptive_sampling`: the paper's Algorithm 2, which picks rows one at a time from a
  sketch of all of them;
- :func:`refine`: refits on rows chosen anew at every step;
- :func:`svd_rows`: the subspace from the SVD of the selected rows themselves (when they are in
  memory anyway: as precise as the Gram matrix's eigenvectors, and d x d is never formed).
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from .._base import ConvergenceWarning
from .._outlier import residual_limit
from .._params import param_error
from .._progress import Reporter
from .._residual import residual_sq

__all__ = ["coherence_scores", "adaptive_sampling", "refine", "svd_rows", "Refined", "RankDeficientWarning"]

# Entries of one Gram block (rows x n); 1e7 doubles = 80 MB.
_GRAM_BLOCK_ENTRIES = 10_000_000
# Entries of one (rows x d) block in the d x d shortcut.
_ROW_BLOCK_ENTRIES = 4_000_000
# In adaptive sampling a sample whose sketch has shrunk below this fraction of its original
# length is already explained by the picked directions; only rounding is left of it.
_DEFLATION_FLOOR = 1e-8
# Refinement repeats calibrate-and-refit until the kept set stops changing, at most this often.
# The first limit comes from the few selected samples, whose residuals are biased low (they
# shaped the subspace), so it is too tight; each pass calibrates on a larger, less biased set.
REFINE_MAX_PASSES = 10


class RankDeficientWarning(UserWarning):
    """The selected samples span fewer than n_components directions."""


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


def svd_rows(Y):
    """Singular values and right singular vectors of Y; tall Y is reduced by QR first (faster)."""
    if Y.shape[0] > 2 * Y.shape[1]:
        Y = np.linalg.qr(Y, mode="r")
    _, s, vt = np.linalg.svd(Y, full_matrices=False)
    return s, vt


@dataclass
class Refined:
    """The subspace a fit ends with (after :func:`refine`, or the selection's own)."""

    components: np.ndarray
    mean: np.ndarray
    singular_values: np.ndarray
    inliers: np.ndarray
    limit: float | None = None
    passes: int = 0
    converged: bool = True


def refine(X, start: Refined, usable, r, p, rep) -> Refined:
    """Refit by PCA on every usable row of X (scaled, in memory) within a robust residual limit,
    until the kept set stops changing (CoherencePursuit's ``refine``)."""
    n, d = X.shape
    comps, mean, sing = start.components, start.mean, start.singular_values
    trusted = kept = start.inliers
    limit = None
    passes = 0
    for k in range(REFINE_MAX_PASSES):
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
                          RankDeficientWarning, stacklevel=5)
            break
        if k > 0 and np.array_equal(new, kept):
            break
        kept = new
        passes = k + 1
        mean = X[kept].mean(axis=0) if p["center"] != "none" else np.zeros(d)
        s, vt = svd_rows(X[kept] - mean)
        comps, sing = vt[:r], s[:r].copy()
        trusted = kept
        rep((k + 1) / REFINE_MAX_PASSES, "refining")
    else:
        warnings.warn(f"refinement did not settle within {REFINE_MAX_PASSES} passes (the kept "
                      f"set still changed); using the last pass", ConvergenceWarning, stacklevel=5)
        return Refined(comps, mean, sing, np.sort(kept), limit, passes, False)
    return Refined(comps, mean, sing, np.sort(kept), limit, passes, True)


def adaptive_sampling(Xn, score, usable, r, p, rng):
    """Algorithm 2 (adaptive column sampling), with Remark 1's repeats: the picked rows' indices
    (refused with a message when fewer than r rows add a new direction)."""
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
    if len(picked) < r:
        raise ValueError(f"adaptive sampling found only {len(picked)} sample(s) adding a new "
                         f"direction, fewer than n_components = {r}; lower noise_threshold "
                         f"(now {p['noise_threshold']:g}) or n_components")
    return np.array(picked, dtype=np.intp)
