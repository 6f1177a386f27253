"""Online robust PCA: low-rank + sparse, one batch of frames at a time, in memory that does not
grow with the number of frames.

OR-PCA (Feng, Xu & Yan, "Online Robust PCA via Stochastic Optimization", NIPS 2013). The
nuclear norm of PCP is replaced by its factorisation bound
||L||_* = min over L = U Rᵀ of (||U||_F² + ||R||_F²) / 2, which splits the batch problem into
one small problem per frame z (a row here):

    minimise over r, e   ½ ||z - U r - e||² + λ1/2 ||r||² + λ2 ||e||_1

solved in the paper by alternating a ridge solve r = (UᵀU + λ1 I)⁻¹ Uᵀ (z - e) and a soft
threshold e = soft(z - U r, λ2) (here: reweighted least squares on the equivalent Huber problem,
see ``_solve``); then the basis U (d x k) is updated by block coordinate descent on
½ tr(Uᵀ (A + λ1 I) U) - tr(Uᵀ B) with the running sums A = Σ r rᵀ (k x k) and
B = Σ (z - e) rᵀ (d x k). Memory: U, B and one batch, O(d k + b d), whatever the number of
frames. Frame t's outputs are L_t = U r_t (the background, exactly rank k) and S_t = e_t (the
foreground); what is left, X - L - S, is the dense residual within ±λ2 (noise).

Choices made here (not in the paper), each measured in benchmarks/results_bigdata.md:
* frames are processed in mini-batches (the per-frame solves are vectorised over the batch and
  the basis is updated once per batch) -- the same fixed point, far fewer Python steps;
* the basis starts from batch PCP on the first batch (its low-rank part's top factors) rather
  than at random, and the first batch is solved a few times before its outputs are written, so
  early frames are not wasted and objects present at the start stay out of the background;
* the λ's are in units of the data's range (``scale_``: 255 for 8-bit video), so the same
  defaults serve pixel values 0-255 and 0-1;
* ``forgetting`` < 1 down-weights old statistics (a slowly changing background, e.g. daylight).
"""
from __future__ import annotations

import math
import time
import warnings

import numpy as np
from sklearn.utils.validation import check_is_fitted

from sklearn.base import ClassNamePrefixFeaturesOutMixin, TransformerMixin

from .._base import Estimator, fit_protocol
from .._params import check_shape
from .._validation import check_finite, validate_X
from .pca import fix_signs
from ._online_rpca_params import PARAMS

__all__ = ["OnlineRPCA"]

# Passes over the first batch before its outputs are written (basis from its SVD, then refined).
_WARMUP_PASSES = 3
# Block-coordinate sweeps of the basis update per batch (each costs d k²; the fixed point moves little).
_BCD_SWEEPS = 3
# pixel_fraction=None estimates the coefficients from at most this many pixels per frame.
_AUTO_PIXELS = 20_000
# Bytes of one working block of a batch (b frames x some pixels, float64) in ``_finish``: its four
# buffers stay in cache and are reused, so the chain of element-wise steps that makes L, S and the
# mask neither passes over the whole batch (b x d) once per step nor maps fresh memory per batch.
# On the benchmark video 0.5-4 MiB were equally fast (3x the whole-batch steps); smaller blocks
# pay numpy's per-call cost, larger ones leave the cache.
_BLOCK_BYTES = 1 << 20


def _soft(R, t):
    """Soft threshold in place: R - clip(R, -t, t) (two passes, no sign/abs temporaries)."""
    C = np.clip(R, -t, t)
    R -= C
    return R


class OnlineRPCA(ClassNamePrefixFeaturesOutMixin, TransformerMixin, Estimator):
    """Online robust PCA (OR-PCA) for long recordings: rows of X are frames, fed in batches.

    Attributes
    ----------
    components_ : ndarray (k, d)
        Orthonormal rows spanning the learned low-rank subspace, sign-fixed.
    basis_ : ndarray (d, k)
        The factor U, in units of the data range.
    scale_, lambda1_, lambda2_, mask_threshold_ : float
        The data range and the lambdas and mask threshold used, in data units.
    n_frames_seen_ : int
        Frames learned from so far.
    sample_scores_ : ndarray (n_frames,)
        Row l1 norm of S per frame, as PCP's score (large = much foreground).
    foreground_fraction_ : ndarray (n_frames,)
        Share of each frame's pixels in the mask.
    sink_ : FrameSink
        The per-frame ``low_rank``, ``sparse`` and ``mask`` (in memory or a Zarr store).
    history_ : dict of lists
        One entry per batch: "frames" (seen so far), "basis_change" (sine of the largest
        principal angle between the subspaces before and after the batch), "residual"
        (||X - L - S||_F / ||X||_F of the batch on the coefficient pixels: the dense noise share),
        "inner" (reweighting steps used), "foreground" (mask share of the batch), "time" (seconds).
    n_features_in_ : int
        Number of features (pixels per frame).

    References
    ----------
    J. Feng, H. Xu and S. Yan, "Online robust PCA via stochastic optimization", Advances in
    Neural Information Processing Systems 26 (NIPS), 2013.
    """

    # Each parameter's help is written once, here: the docstring's Parameters section is rendered
    # from these declarations (robustcore._docstring).
    _params = PARAMS  # declared in _online_rpca_params.py (read by the registry without this module)

    FIELDS = {"low_rank": np.float32, "sparse": np.float32, "mask": np.bool_}

    def __init__(self, n_components: int = 1, *, lambda1: float | None = None, lambda2: float | None = None,
                 batch_size: int = 64, forgetting: float = 0.99, max_inner: int = 30, tol: float = 1e-3,
                 pixel_fraction: float | None = None, mask_threshold: float | None = None,
                 data_scale: float | None = None):
        self.n_components = n_components
        self.lambda1 = lambda1
        self.lambda2 = lambda2
        self.batch_size = batch_size
        self.forgetting = forgetting
        self.max_inner = max_inner
        self.tol = tol
        self.pixel_fraction = pixel_fraction
        self.mask_threshold = mask_threshold
        self.data_scale = data_scale

    # -- the numerics ----------------------------------------------------------------------
    def _solve(self, Z, U, pixels=None):
        """(R, E, iterations) minimising ½||Z - R Uᵀ - E||² + λ1/2 ||R||² + λ2 ||E||_1 for fixed U.

        With E eliminated, each frame's r minimises the Huber loss of z - U r (quadratic within
        ±λ2, linear outside) plus λ1/2 ||r||². That is solved by iteratively reweighted least
        squares, all frames of the batch at once: weights w = min(1, λ2 / |z - U r|) per pixel,
        then r = (Uᵀ W U + λ1 I)⁻¹ Uᵀ W z (one b x d by d x k² product gives every frame's
        k x k system). Each step minimises a quadratic that lies above the Huber loss and
        touches it at the current r, so the objective never increases. The paper's alternation
        r = (UᵀU + λ1 I)⁻¹ Uᵀ (z - e), e = soft(z - U r) is the same scheme with weight 1
        everywhere, a looser bound: on video with large moving objects it needed 30+ passes
        where this needs about ten (benchmarks/results_bigdata.md).

        ``pixels``: the k coefficients of a frame are estimated from these pixels only (as
        GRASTA does); E is then formed on every pixel once.
        """
        Zs, Us = (Z, U) if pixels is None else (Z[:, pixels], U[pixels])
        R, it = self._coefficients(Zs, Us)
        E = R @ U.T
        np.subtract(Z, E, out=E)
        _soft(E, self._lam2)
        return R, E, it

    def _coefficients(self, Zs, Us):
        """(R, iterations): the IRLS of ``_solve`` on the coefficient pixels (Zs, Us)."""
        lam1, lam2 = self._lam1, self._lam2
        b, k = Zs.shape[0], Us.shape[1]
        eye = lam1 * np.eye(k)
        UU = (Us[:, :, None] * Us[:, None, :]).reshape(Us.shape[0], k * k)   # (d, k²): u uᵀ per pixel
        R = np.linalg.solve(Us.T @ Us + eye, Us.T @ Zs.T).T
        W = np.empty_like(Zs)
        it = 0
        for it in range(1, self._p["max_inner"] + 1):  # noqa: B007 - the count is read after the loop
            np.matmul(R, Us.T, out=W)
            np.subtract(Zs, W, out=W)                     # residual z - U r
            np.abs(W, out=W)
            np.maximum(W, lam2, out=W)
            np.divide(lam2, W, out=W)                     # Huber weights min(1, λ2/|res|)
            H = (W @ UU).reshape(b, k, k) + eye
            W *= Zs
            R_new = np.linalg.solve(H, (W @ Us)[:, :, None])[:, :, 0]
            change = np.linalg.norm(R_new - R) / max(np.linalg.norm(R_new), 1e-300)
            R = R_new
            if change <= self._p["tol"]:
                break
        return R, it

    def _update_basis(self, U, A, B):
        """Block coordinate descent on ½ tr(Uᵀ(A + λ1 I)U) - tr(UᵀB), column by column."""
        At = A + self._lam1 * np.eye(A.shape[0])
        for _ in range(_BCD_SWEEPS):
            for j in range(U.shape[1]):
                U[:, j] += (B[:, j] - U @ At[:, j]) / At[j, j]
        return U

    def _init_basis(self, Z):
        """U from the first batch: the top-k factors of batch PCP's low-rank part (a robust start:
        moving objects in the first frames stay out of the basis), balanced as U = V sqrt(s)."""
        from .pcp import PCP
        k = self._p["n_components"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")       # a loose tolerance suffices for a starting point
            L0 = PCP(tol=1e-4, max_iter=100, n_jobs=1, random_state=0).fit(Z).low_rank_
        # Right singular vectors through the small b x b Gram matrix (b frames << d pixels).
        w, V = np.linalg.eigh(L0 @ L0.T)
        w, V = np.maximum(w[::-1], 0.0), V[:, ::-1]
        s = np.sqrt(w)
        keep = s > 1e-9 * max(s[0], 1e-300)
        vt = np.zeros((s.size, Z.shape[1]))
        vt[keep] = (V[:, keep].T @ L0) / s[keep, None]
        U = np.zeros((Z.shape[1], k))
        m = min(k, int(np.count_nonzero(keep)))
        U[:, :m] = vt[:m].T * np.sqrt(s[:m])
        if m < k:
            # The first batch needs fewer directions: the rest start as small fixed vectors
            # (deterministic, so fits repeat) and grow if later frames need them.
            rng = np.random.default_rng(0)
            U[:, m:] = 1e-3 * rng.standard_normal((Z.shape[1], k - m)) / math.sqrt(Z.shape[1])
        return U

    def _step(self, rows, first, out=None):
        """One batch of frames (raw rows, b x d): solve, accumulate, update the basis.

        Returns (R, inner iterations, sine of the basis change, residual share on the
        coefficient pixels, row sums of |S| and of the mask: see ``_finish``)."""
        k = self._p["n_components"]
        px = self._pixels
        if first:
            Z = rows / self._scale
            U = self._init_basis(Z)
            for _ in range(_WARMUP_PASSES):
                R, E, it = self._solve(Z, U, px)
                U = self._update_basis(U, R.T @ R, (Z - E).T @ R)
            del Z, E
            self._U, self._A, self._B = U, np.zeros((k, k)), np.zeros((rows.shape[1], k))
        old = self._U.copy()
        # (np.take gathers the pixel subset 3x faster than fancy indexing)
        Zs = (rows if px is None else np.take(rows, px, axis=1)) / self._scale
        Us = old if px is None else old[px]
        R, it = self._coefficients(Zs, Us)
        # The dense residual share ||Z - L - E|| / ||Z|| = ||clip(Z - L, ±λ2)|| / ||Z||, on the
        # coefficient pixels (a pass over the whole frame costs more).
        Ts = R @ Us.T
        np.clip(np.subtract(Zs, Ts, out=Ts), -self._lam2, self._lam2, out=Ts)
        resid = float(np.linalg.norm(Ts) / max(np.linalg.norm(Zs), 1e-300))
        BtR, l1, count = _finish(rows, R, old, self._scale, self._lam2, self._mask_t, out)
        beta = self._p["forgetting"] ** rows.shape[0]
        self._A *= beta
        self._A += R.T @ R
        self._B *= beta
        self._B += BtR
        self._U = self._update_basis(self._U, self._A, self._B)
        return R, it, _subspace_change(old, self._U), resid, l1, count

    # -- public API ------------------------------------------------------------------------
    def _prepare(self, d, scale_hint=None, first_batch=None):
        p = self._p
        if p["data_scale"] is not None:
            scale = float(p["data_scale"])
        elif scale_hint is not None and scale_hint[1] > scale_hint[0]:
            scale = float(scale_hint[1] - scale_hint[0])
        else:
            span = float(np.max(first_batch) - np.min(first_batch)) if first_batch is not None else 0.0
            scale = span if span > 0 else 1.0
        self._scale = scale
        self._lam1 = p["lambda1"] if p["lambda1"] is not None else 1.0 / math.sqrt(d)
        self._lam2 = p["lambda2"] if p["lambda2"] is not None else 0.02
        self._mask_t = p["mask_threshold"] if p["mask_threshold"] is not None else 0.1 * scale
        frac = p["pixel_fraction"] if p["pixel_fraction"] is not None else min(1.0, _AUTO_PIXELS / d)
        m = max(int(round(frac * d)), min(d, 4 * p["n_components"]))
        # A fixed random subset (seeded: fits repeat), sorted for cache-friendly gathers.
        self._pixels = None if m >= d else np.sort(np.random.default_rng(0).choice(d, m, replace=False))

    @fit_protocol
    def fit(self, X, y=None, progress=None, sink=None, store=None, on_frames=None, *, p):
        """Stream all frames of X through the estimator, writing L, S and the mask per frame.

        Parameters
        ----------
        X : array (n_frames, n_features), a Dataset, or a FrameSource (e.g. ``open_video(...)``)
            Read one batch at a time; a FrameSource is never read whole.
        progress : callable ``progress(fraction, message)``, optional
            Called once per batch; returning False (or raising Cancelled) stops the fit, which
            leaves the estimator unfitted and deletes a partial store.
        sink : FrameSink, optional
            Where the per-frame outputs go (fields ``low_rank``, ``sparse``, ``mask``). The
            caller keeps a reference and may read finished frames while the fit runs
            (``sink.n_written``).
        store : str or Path, optional
            Without ``sink``: write the outputs to a new Zarr store at this path. Without either,
            outputs are kept in memory when they take at most 1 GiB (float32 L and S), and the
            fit refuses otherwise, asking for a store.
        on_frames : callable ``on_frames(start, stop, sink)``, optional
            Called from the fitting thread when frames ``start:stop`` of the outputs are final
            and readable in ``sink`` (a store is written on a thread of its own: frames are
            announced once they are in it, not when they are handed to it). Calls come in frame
            order and cover every frame once. Each frame is written once, after its batch, and
            never changed by later batches: what is announced is what the finished fit holds.
            None: the ``frames`` hook of ``progress``, if it has one (:mod:`robustcore._progress`).

        Returns self.
        """
        from ..bigdata._frames import FrameSource, as_frame_source
        from ..bigdata._sink import DEFAULT_RESULT_MEMORY, FrameSink

        self._p = p
        if on_frames is None:
            on_frames = progress.hook("frames")
        if on_frames is not None and not callable(on_frames):
            raise ValueError(f"on_frames must be a callable on_frames(start, stop, sink) or None; got {on_frames!r}")
        if not isinstance(X, FrameSource) and not hasattr(X, "image_shape"):
            X = validate_X(self, X, reset=True, min_features=2)   # arrays: scikit-learn's checks
        source = as_frame_source(X)
        n, d = source.n_frames, source.n_features
        if n < 1 or d < 2:
            raise ValueError(f"X must have at least 1 frame of at least 2 pixels; got {n} x {d}")
        check_shape(PARAMS, "n_components", self._p, n, d)
        own_sink = sink is None
        if sink is None:
            need = FrameSink.estimate_bytes(n, d, self.FIELDS)
            if store is None and need > DEFAULT_RESULT_MEMORY:
                raise ValueError(f"the per-frame results (L, S, mask) of {n} frames take "
                                 f"{need / 2**30:.1f} GiB; pass store=PATH to write them to a Zarr store")
            sink = FrameSink(n, d, self.FIELDS, path=store, frame_shape=getattr(source, "display_shape", None))
        elif (sink.n_frames, sink.n_features) != (n, d) or set(sink.fields) != set(self.FIELDS):
            raise ValueError(f"sink must hold fields {sorted(self.FIELDS)} of shape ({n}, {d}); got "
                             f"{sorted(sink.fields)} of shape ({sink.n_frames}, {sink.n_features})")
        scores = np.zeros(n)
        fg = np.zeros(n)
        hist = {"frames": [], "basis_change": [], "residual": [], "inner": [], "foreground": [], "time": []}
        t0 = time.perf_counter()
        b = self._p["batch_size"]
        announced = 0

        def announce():
            nonlocal announced
            ready = sink.n_written
            if on_frames is not None and ready > announced:
                on_frames(announced, ready, sink)
                announced = ready
        try:
            for start, rows in source.iter_batches(b):
                rows = np.asarray(rows, dtype=np.float64)
                check_finite(rows, "frames")
                _check_float32_range(rows, start)
                first = start == 0
                if first:
                    self._prepare(d, getattr(source, "value_range", None), rows)
                stop = start + rows.shape[0]
                out = sink.buffers(start, stop)
                _, it, change, resid, l1, count = self._step(rows, first, out)
                sink.commit(start, out)
                announce()
                scores[start:stop] = l1
                fg[start:stop] = count / d
                for key, val in (("frames", stop), ("basis_change", change), ("residual", resid), ("inner", it),
                                 ("foreground", float(count.sum() / (count.size * d))),
                                 ("time", time.perf_counter() - t0)):
                    hist[key].append(val)
                progress(stop / n, f"frame {stop} of {n}")
            sink.set_attrs(method="OnlineRPCA", params=self.get_params(), scale=self._scale,
                           lambda1=self._lam1, lambda2=self._lam2, mask_threshold=self._mask_t)
            announce()   # set_attrs waited for the writer: the last frames are in the store
        except BaseException:
            if own_sink:
                sink.abort()
            raise
        if own_sink:
            sink.close()
        self._publish(d, n, scores, fg, hist, sink)
        return self

    def _publish(self, d, n_seen, scores, fg, hist, sink):
        U = self._U
        Q, _ = np.linalg.qr(U)
        self._set_fitted(components_=fix_signs(Q.T), basis_=U.copy(), scale_=self._scale,
                         lambda1_=float(self._lam1), lambda2_=float(self._lam2),
                         mask_threshold_=float(self._mask_t), n_frames_seen_=int(n_seen),
                         sample_scores_=scores, foreground_fraction_=fg, history_=hist, sink_=sink,
                         stats_=(self._A.copy(), self._B.copy()), pixels_=self._pixels, n_features_in_=d)

    @fit_protocol(partial=True)
    def partial_fit(self, X, y=None, *, p):
        """Update the basis with one batch of frames X (n, d); no outputs are stored.

        The first call fixes the data scale (``data_scale`` or the batch's max - min) and starts
        the basis from the batch's SVD. Returns self.
        """
        fitted = hasattr(self, "basis_")
        if not fitted:
            self._p = p
        X = validate_X(self, X, reset=not fitted, min_features=1 if fitted else 2)
        if not fitted:
            self._prepare(X.shape[1], None, X)
            check_shape(PARAMS, "n_components", self._p, *X.shape)
        else:
            self._restore()
        self._step(X, first=not fitted)
        seen = (self.n_frames_seen_ if fitted else 0) + X.shape[0]
        names = {"feature_names_in_": self.feature_names_in_} if hasattr(self, "feature_names_in_") else {}
        self._clear_fit()
        Q, _ = np.linalg.qr(self._U)
        self._set_fitted(components_=fix_signs(Q.T), basis_=self._U.copy(), scale_=self._scale,
                         lambda1_=float(self._lam1), lambda2_=float(self._lam2),
                         mask_threshold_=float(self._mask_t), n_frames_seen_=int(seen),
                         stats_=(self._A.copy(), self._B.copy()), pixels_=self._pixels,
                         n_features_in_=X.shape[1], **names)
        return self

    def _restore(self):
        """Internal state from the fitted attributes (after a fit or partial_fit)."""
        from .._params import validate_params
        self._p = validate_params(self._params, self.get_params())
        self._U = self.basis_.copy()
        self._A, self._B = (a.copy() for a in self.stats_)
        self._scale, self._lam1, self._lam2 = self.scale_, self.lambda1_, self.lambda2_
        self._mask_t = self.mask_threshold_
        self._pixels = self.pixels_

    def decompose(self, X):
        """(L, S) of frames X (n, d) against the current basis, without updating it: L = U r is
        exactly rank k, S the sparse part; X - L - S is the residual within ±lambda2 (noise)."""
        check_is_fitted(self, "basis_")
        X = validate_X(self, X, reset=False)
        self._restore()
        R, E, _ = self._solve(X / self._scale, self._U, self._pixels)
        return (R @ self._U.T) * self._scale, E * self._scale

    def transform(self, X):
        """Coordinates (n, k) of X in the learned subspace: ``X @ components_.T``."""
        check_is_fitted(self, "components_")
        return validate_X(self, X, reset=False) @ self.components_.T

    @property
    def _n_features_out(self):
        return self.components_.shape[0]


def _finish(rows, R, U, scale, lam2, mask_t, out=None):
    """What a batch's coefficients R (against basis U) give, pixel block by pixel block.

    Returns ((Z - E)ᵀ R, the d x k term of the basis statistics, with Z = rows / scale and
    E = soft(Z - R Uᵀ, λ2)); with ``out`` (arrays ``low_rank``, ``sparse`` (b, d) of any float
    type and ``mask`` (b, d) bool) also fills L = R Uᵀ and S = E in data units and the mask
    |S| > mask_t, and returns the row sums of |S| and of the mask as well. The same arithmetic as
    forming Z, E, L and S whole, element for element, on blocks that stay in cache: one pass over
    the batch instead of a dozen, and no b x d temporaries.
    """
    b, d = rows.shape
    k = R.shape[1]
    cols = max(16, min(d, _BLOCK_BYTES // (8 * b)))
    bufs = np.empty((4, b * cols))
    BtR = np.empty((d, k))
    l1 = np.zeros(b)
    count = np.zeros(b, dtype=np.int64)
    for j0 in range(0, d, cols):
        j1 = min(j0 + cols, d)
        z, lo, e, c = (buf[:b * (j1 - j0)].reshape(b, j1 - j0) for buf in bufs)
        np.divide(rows[:, j0:j1], scale, out=z)
        np.matmul(R, U[j0:j1].T, out=lo)
        np.subtract(z, lo, out=e)
        np.subtract(e, np.clip(e, -lam2, lam2, out=c), out=e)     # E = soft(Z - L)
        np.matmul(np.subtract(z, e, out=z).T, R, out=BtR[j0:j1])
        if out is None:
            continue
        np.multiply(lo, scale, out=out["low_rank"][:, j0:j1])
        np.multiply(e, scale, out=e)
        out["sparse"][:, j0:j1] = e
        np.abs(e, out=e)
        m = np.greater(e, mask_t, out=out["mask"][:, j0:j1])
        l1 += e.sum(axis=1)
        count += np.count_nonzero(m, axis=1)
    return BtR, l1, count


# L and S are kept as float32 (robustcore.bigdata._sink): values beyond its range would be
# stored as infinity, and a data range beyond float64's (max - min of +-1.8e308) as a NaN scale.
_FLOAT32_MAX = float(np.finfo(np.float32).max)


def _check_float32_range(rows, start: int) -> None:
    top = max(float(rows.max()), -float(rows.min())) if rows.size else 0.0
    if top > _FLOAT32_MAX / 2:
        raise ValueError(f"frames from {start} on hold values as large as {top:.3g}; OR-PCA stores its "
                         f"low-rank and sparse parts as float32, whose largest value is {_FLOAT32_MAX:.3g} "
                         f"(and the data's range must stay below float64's). Multiply X by a constant that "
                         f"brings its values near 1 (e.g. X / {top:.0e})")


def _subspace_change(U0, U1) -> float:
    """Sine of the largest principal angle between span(U0) and span(U1)."""
    Q0, _ = np.linalg.qr(U0)
    Q1, _ = np.linalg.qr(U1)
    s = np.linalg.svd(Q0.T @ Q1, compute_uv=False)
    return float(np.sqrt(max(0.0, 1.0 - min(1.0, float(s.min()) ** 2))))
