"""Residual (SPE, also called Q) and Hotelling T² anomaly scores against a subspace, with limits.

SPE measures how far a sample is from the subspace; T² measures how far it is along the
subspace, in units of the training spread. Each is blind to what the other sees: SPE does not
change when a sample moves along the subspace, however far. So both are reported and a sample is
flagged when either exceeds its control limit.
"""
from __future__ import annotations

import functools

import numpy as np
from sklearn.utils.validation import check_array, check_is_fitted

from ._base import Estimator, fit_protocol
from ._outlier import OutlierScores
from ._params import check_shape
# The limit formulas live in robustcore.limits; their names stay importable from here.
from .limits import (box_limit, jackson_mudholkar_limit, spe_limit, t2_limit_new,  # noqa: F401
                     t2_limit_training)
from .rank import rank_cap, scree_elbow
from ._anomaly_params import PARAMS
from .subspace._base import Calibration, SubspaceModel
from .subspace._scan import input_rows, scan

__all__ = ["ResidualScorer", "jackson_mudholkar_limit", "box_limit", "spe_limit", "t2_limit_new",
           "t2_limit_training"]

# Tolerance on orthonormality of user-supplied bases.
_ORTHO_TOL = 1e-6


class ResidualScorer(SubspaceModel, OutlierScores, Estimator):
    """SPE (squared reconstruction error) and Hotelling T² scores with control limits.

    With ``z = x - mean_`` (x scaled, see ``scale``), scores ``t = components_ @ z`` and residual
    ``e = z - components_.T @ t``: ``SPE(x) = |e|²`` and ``T²(x) = sum_j t_j² / variances_[j]``.
    SPE is exactly unchanged by moves along the subspace, T² by moves orthogonal to it: look at
    both (``flag``).

    Attributes
    ----------
    components_ : ndarray (p, d)
        Orthonormal rows spanning the subspace.
    mean_ : ndarray (d,)
        The centre of the subspace (zeros when ``center=False``).
    variances_ : ndarray (p,)
        Training variance along each component (sum of squared scores / (n - 1)).
    residual_eigenvalues_ : ndarray (k,)
        Eigenvalues (descending) of the training residual covariance, all of them: what the
        Jackson-Mudholkar θ's are made of.
    thetas_ : ndarray (3,)
        θ1, θ2, θ3 = sums of the residual eigenvalues to the powers 1, 2, 3.
    spe_limit_, t2_limit_ : float
        The control limits of SPE and T² at false-alarm rate ``alpha``.
    spe_limit_method_ : str
        "jackson-mudholkar", or "box" (asked for, or where Jackson-Mudholkar is undefined).
    limit_calibration_ : dict
        What ``calibrate`` did: "action" ("kept", "raised", "lowered", "uncalibrated" or
        "off"), "factor" (both Gaussian limits were multiplied by it) and "reason".
    plane_ : ndarray (2, d)
        Default plane of ``grid``: the unit axes for 2-D data, otherwise the first two principal
        directions of the training data.
    scale_center_, scale_ : ndarray (d,)
        The centre subtracted from and the spread divided into each column.
    scaling_ : str
        The scaling used ("none", "standard" or "robust"; "auto" resolved).
    offset_ : float
        ``score_samples - offset_ = decision_function`` (robustcore._outlier).
    n_samples_fit_, n_features_in_ : int
        Training samples and features seen by ``fit``.

    Notes
    -----
    **Outlier score.** ``max(SPE / spe_limit_, T² / t2_limit_)`` (robustcore.subspace._base):
    the larger of the two scores in units of their limits. ``score_samples`` is minus that;
    ``spe`` and ``t2`` give the two scores themselves.
    """

    _params = PARAMS  # declared in _anomaly_params.py (read by the registry without this module)

    def __init__(self, n_components: int | None = None, *, alpha: float = 0.01,
                 limit: str = "jackson-mudholkar", t2_limit: str = "new", calibrate: bool = True,
                 center: bool = True,
                 scale: str = "auto", contamination="auto"):
        self.n_components = n_components
        self.alpha = alpha
        self.limit = limit
        self.t2_limit = t2_limit
        self.calibrate = calibrate
        self.center = center
        self.scale = scale
        self.contamination = contamination

    # -- fitting --------------------------------------------------------------------------
    @fit_protocol
    def fit(self, X, y=None, progress=None, *, p):
        """PCA subspace of X (n_samples, n_features) and limits calibrated on X, in memory or
        lazy (robustcore.subspace._base). Returns self."""
        # the inner PCA checks the values (finiteness and magnitude) and scales, see PCA._fit_rows
        rows = input_rows(self, X, reset=True, min_samples=2, min_features=2)
        n, d = rows.n, rows.d
        # every component (the eigh or SVD computes them all anyway); the rank is checked after
        # the values, as before the checks moved into the PCA
        pca = _inner_pca(rows, min(n, d), p, progress.span(0.0, 0.9))
        if p["n_components"] is None:
            k = min(scree_elbow(pca.all_variances_, rank_cap(n, d)), min(n, d) - 1)
        else:
            k = self._check_rank(p, n, d)
        comps = pca.components_[:k]
        plane = np.eye(2) if d == 2 else pca.components_[:2].copy()
        scaling = dict(scale_center_=pca.scale_center_, scale_=pca.scale_, scaling_=pca.scaling_)
        # all_variances_ holds every nonzero eigenvalue (min(n, d) of them): the rest are zero.
        fitted = self._limits(p, n, d, comps, pca.mean_, pca.all_variances_[:k].copy(),
                              pca.all_variances_[k:].copy(), plane,
                              self._training_provider(rows, scaling, comps, pca.mean_))
        progress(1.0, "done")
        self._set_fitted(**scaling, **fitted)
        self._set_fitted(**self._training_offset(p["contamination"], rows))
        self._keep_rows(rows=rows)
        return self

    @fit_protocol
    def fit_subspace(self, X, components, mean, progress=None, *, p):
        """Use a subspace fitted elsewhere; calibrate variances and limits on training data X.

        Parameters
        ----------
        X : array (n_samples, n_features), or lazy input
            Training data for calibration (ideally clean: outliers widen both limits).
        components : array (n_components, n_features)
            Orthonormal rows, e.g. ``CoherencePursuit().components_``, in the units of X after
            this estimator's ``scale``.
        mean : array (n_features,)
            The centre of the subspace, in the same units.

        Returns self. The variances along the components and the residual eigenvalues are
        those of X about ``mean`` (sums of squares divided by n - 1). Two passes over X: the
        column moments (scaling, checks, the principal plane) and the calibration spectrum.
        """
        rows = input_rows(self, X, reset=True, min_samples=2, min_features=2)
        n, d = rows.n, rows.d
        sc = scan(rows, p["scale"], method="ResidualScorer", scatter=True, progress=progress.span(0.0, 0.4))
        C = check_array(components, dtype=np.float64, input_name="components")
        if p["n_components"] is None:
            p = {**p, "n_components": C.shape[0]}
        k = self._check_rank(p, n, d)
        if C.shape != (k, d):
            raise ValueError(f"components must have shape (n_components, n_features) = ({k}, {d}); "
                             f"got {C.shape}")
        if np.abs(C @ C.T - np.eye(k)).max() > _ORTHO_TOL:
            raise ValueError("components must have orthonormal rows (C @ C.T = I); got a basis that "
                             "is not orthonormal -- orthonormalise it first, e.g. np.linalg.qr(C.T)")
        m = np.asarray(mean, dtype=np.float64)
        if m.shape != (d,) or not np.all(np.isfinite(m)):
            raise ValueError(f"mean must be a finite array of shape ({d},); got shape {m.shape}")
        progress(0.4, "calibration spectrum")
        scale = None if sc.identity else (sc.center, sc.scale)
        acc = rows.reduce(functools.partial(Calibration, C, m, scale), progress=progress.span(0.4, 1.0),
                          message="calibration spectrum")
        _, var, lam = acc.spectrum(k)
        plane = _principal_plane(sc)
        fitted = self._limits(p, n, d, C.copy(), m.copy(), var, lam, plane,
                              self._training_provider(rows, sc.scaling, C, m))
        progress(1.0, "done")
        self._set_fitted(**sc.scaling, **fitted)
        self._set_fitted(**self._training_offset(p["contamination"], rows))
        return self

    @staticmethod
    def _check_rank(p, n, d):
        return check_shape(PARAMS, "n_components", p, n, d)

    def _limits(self, p, n, d, comps, mean, var, lam, plane, training=None):
        return dict(components_=comps, mean_=mean, plane_=plane, n_samples_fit_=n,
                    **self._limit_fields(n, var, lam, alpha=p["alpha"], limit=p["limit"],
                                         t2_kind=p["t2_limit"], strict=True, training=training,
                                         calibrate=p["calibrate"]))

    # -- scores ---------------------------------------------------------------------------
    def scores(self, X):
        """``(spe, t2)`` in one pass over X (faster than calling ``spe`` and ``t2``)."""
        out = self._row_pass(self._rows(X), ("spe", "t2"))
        return out["spe"], out["t2"]

    def spe(self, X):
        """Squared prediction error ``|x - mean_ - projection|²`` (n_samples,); larger = more anomalous."""
        return self._one(X, "spe")

    def t2(self, X):
        """Hotelling T² = sum_j t_j² / variances_[j] (n_samples,); larger = more anomalous."""
        return self._one(X, "t2")

    def contributions(self, X):
        """Per-feature squared residuals (n_samples, n_features); each row sums to the SPE."""
        check_is_fitted(self)
        Z = self._input(X) - self.mean_
        Z -= (Z @ self.components_.T) @ self.components_
        return Z * Z

    def flag(self, X):
        """Which samples exceed each limit: ``{"spe", "t2", "either"}`` -> bool (n_samples,)."""
        out = self._row_pass(self._rows(X), ("outside_spe", "outside_t2"))
        return {"spe": out["outside_spe"], "t2": out["outside_t2"],
                "either": out["outside_spe"] | out["outside_t2"]}

    def grid(self, xs, ys, plane=None):
        """SPE and T² on the grid ``mean_ + x u + y v`` for x in xs, y in ys.

        Parameters
        ----------
        xs, ys : 1-D arrays
            Offsets FROM ``mean_`` along u and v.
        plane : array (2, d) or None
            Orthonormal rows u, v. None: ``plane_`` (the feature axes for 2-D data, otherwise the
            first two principal directions of the training data, so that with n_components = 1
            the SPE blind spot along PC1 is visible).

        Returns
        -------
        spe_grid, t2_grid : ndarrays (len(ys), len(xs))

        Both are quadratic forms in (x, y), evaluated in closed form: O(len(xs) * len(ys)) work
        and memory whatever d is.
        """
        check_is_fitted(self)
        xs = np.asarray(xs, dtype=np.float64).ravel()
        ys = np.asarray(ys, dtype=np.float64).ravel()
        if not (np.all(np.isfinite(xs)) and np.all(np.isfinite(ys))):
            raise ValueError("xs and ys must be finite")
        d = self.n_features_in_
        if plane is None:
            P = self.plane_
        else:
            P = np.asarray(plane, dtype=np.float64)
            if P.shape != (2, d) or not np.all(np.isfinite(P)):
                raise ValueError(f"plane must be a finite array of shape (2, {d}); got shape {P.shape}")
            if np.abs(P @ P.T - np.eye(2)).max() > _ORTHO_TOL:
                raise ValueError("plane must have two orthonormal rows (plane @ plane.T = I)")
        from .compare import spe_t2_grid
        return spe_t2_grid(self.components_, self.mean_, self.variances_, P, xs, ys)


def _inner_pca(rows, k, p, rep):
    """PCA of ResidualScorer's validated rows with its ``scale`` and ``center``; the PCA also
    makes the finiteness and magnitude checks (in the messages under ResidualScorer's name)."""
    from .subspace.pca import PCA
    pca = PCA(k, center=p["center"], scale=p["scale"])
    pca.n_features_in_ = rows.d
    return pca._fit_rows(rows, pca._start_fit(), rep, method="ResidualScorer", calibrate=False)


def _principal_plane(sc) -> np.ndarray:
    """The plane (2, d) where the scaled rows vary most about their mean, from the scatter
    matrix of the first pass (the feature axes themselves for 2-D data)."""
    from ._row_stats import symmetric
    from .linalg import fix_signs
    d = sc.mom.d
    if d == 2:
        return np.eye(2)
    s = np.ldexp(sc.scale, -sc.mom.e)
    _, V = np.linalg.eigh(symmetric(sc.mom.M2) / np.outer(s, s))
    return fix_signs(V[:, ::-1][:, :2].T)
