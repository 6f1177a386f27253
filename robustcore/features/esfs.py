"""Eigenvalue Sensitive Feature Selection (ESFS): rank features by how much the small
eigenvalues of a similarity-graph Laplacian move when the feature is re-weighted (Jiang & Ren 2011).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from sklearn.feature_selection import SelectorMixin
from sklearn.utils.validation import check_is_fitted

from .._base import ConvergenceWarning, Estimator, fit_protocol
from .._params import check_shape
from .._scaling import ScaledInput
from .._validation import check_magnitude, check_random_state, validate_X
from . import _graph, _spectral
from ._esfs_params import AUTO_DENSE_MAX_SAMPLES, DEFAULT_MIN_SUPPORT, PARAMS

__all__ = ["ESFS", "AUTO_DENSE_MAX_SAMPLES", "AUTO_MAX_EIGENPAIRS", "DEFAULT_MIN_SUPPORT"]

# AUTO_DENSE_MAX_SAMPLES (declared in _esfs_params with the rule it feeds) is read from this
# module's namespace by fit, where tests may lower it.

# n_eigenpairs=None picks k <= AUTO_MAX_EIGENPAIRS by the largest relative eigengap.
AUTO_MAX_EIGENPAIRS = 5

# Eigenvectors spread over less than this share of the samples are skipped (min_support).
# Measured: vectors concentrated on a few outlying samples had a support of 0.001-0.01
# (1-15 samples); the vector that splits off a cluster holding a share p of the samples has a
# support of about p, so 0.02 keeps clusters down to about 2 % of the data.

# Relative tie tolerance under which two eigenvalues count as repeated.
_TIE_RTOL = 1e-6


def _constant_columns(X: np.ndarray) -> np.ndarray:
    """Columns whose spread is zero or only rounding noise relative to their magnitude."""
    # Halves: max - min of values near float64's largest would overflow (the magnitude check
    # after this refuses such data by name).
    half_spread = X.max(axis=0) / 2 - X.min(axis=0) / 2
    scale = np.abs(X).max(axis=0)
    return half_spread <= 0.5e-12 * scale


@dataclass
class _Graph:
    """The similarity graph: S (dense or CSR), its degrees, and for kNN its edge list."""

    kind: str
    S: object
    degrees: np.ndarray
    sigma: float
    rows: np.ndarray | None = None
    cols: np.ndarray | None = None
    weights: np.ndarray | None = None


class ESFS(SelectorMixin, ScaledInput, Estimator):
    """Eigenvalue Sensitive Feature Selection: unsupervised feature ranking by EVSC scores.

    Each feature t gets a weight w_t (evaluated at w = 1) inside a Gaussian similarity graph
    S_ij = exp(-Σ_t w_t² (x_it - x_jt)² / (2σ²)) (no self-loops). With degrees D = diag(S·1) and
    L = D - S, the generalised eigenproblem L q = λ D q is solved with D-normalised eigenvectors
    (qᵀDq = 1), and the score of feature t is the eigenvalue sensitivity::

        EVSC(t) = Σ_{r in R} |dλ_r/dw_t|,
        dλ_r/dw_t = -(1/σ²) Σ_{i<j} S_ij (x_it - x_jt)² [(q_ri - q_rj)² - λ_r (q_ri² + q_rj²)].

    A large score means re-weighting the feature reshapes the cluster structure that the small
    eigenvalues describe; features are ranked by decreasing score.

    Attributes
    ----------
    scores_ : ndarray (d,)
        EVSC score per feature (>= 0); exactly 0 for constant features.
    ranking_ : ndarray (d,) of int
        Feature indices, best (largest score) first; ties keep the original order.
    eigenvalues_ : ndarray (c + m,)
        All eigenvalues computed, ascending: the c trivial zeros (one per connected component;
        c = 1 for a connected graph), then the m smallest non-trivial ones (m = k + max(k, 5) for
        an int k, 12 for None, as far as the data allow), so the spectrum and the gap after the
        chosen set can be shown.
    eigenvectors_ : ndarray (n, c + m)
        The matching D-normalised eigenvectors (columns).
    eigenvector_support_ : ndarray (c + m,)
        Share of the samples each eigenvector lives on (see ``min_support``).
    selected_eigenpairs_ : ndarray (k,) of int
        Positions in ``eigenvalues_`` of the pairs summed in EVSC (ascending; localised pairs
        are skipped, so they need not be consecutive).
    derivatives_ : ndarray (k, d)
        dλ_r/dw_t for the chosen pairs (signed); ``scores_ = abs(derivatives_).sum(0)``.
    degrees_ : ndarray (n,)
        Diagonal of the mass matrix D (graph degrees plus a 1e-12 relative guard).
    sigma_ : float
        The σ actually used.
    graph_ : str
        "dense" or "knn", the graph actually built.
    n_graph_components_ : int
        Connected components of the graph (their λ = 0 pairs are skipped).
    constant_features_ : ndarray (d,) of bool
        Features with no spread; scored 0.
    support_ : ndarray (d,) of bool
        Features kept by :meth:`transform` (``get_support()``).
    scale_center_, scale_ : ndarray (d,)
        The per-feature scaling (robustcore._scaling).
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of str
        The column names, when X had string column names.
    converged_ : bool
        False if the iterative eigensolver stopped before full accuracy (a ConvergenceWarning is
        issued).

    References
    ----------
    Y. Jiang and J. Ren, "Eigenvalue sensitive feature selection", Proceedings of the 28th
    International Conference on Machine Learning (ICML), 2011.
    """

    # Each parameter's help is written once, here: the docstring's Parameters section is rendered
    # from these declarations (robustcore._docstring).
    _params = PARAMS  # declared in _esfs_params.py (read by the registry without this module)

    def __init__(self, sigma=None, *, sigma_scale=None, n_eigenpairs=None, min_support=DEFAULT_MIN_SUPPORT,
                 graph="auto", n_neighbors=10, scale="auto", n_features_to_select=None,
                 random_state=None):
        self.sigma = sigma
        self.sigma_scale = sigma_scale
        self.n_eigenpairs = n_eigenpairs
        self.min_support = min_support
        self.graph = graph
        self.n_neighbors = n_neighbors
        self.scale = scale
        self.n_features_to_select = n_features_to_select
        self.random_state = random_state

    @fit_protocol
    def fit(self, X, y=None, progress=None, *, p):
        """Score and rank the features of X (n_samples, n_features). ``y`` is ignored.

        ``progress(fraction, message)`` is called during the graph, eigensolver and derivative
        steps; returning False (or raising Cancelled) cancels and leaves the estimator unfitted.
        Returns self.
        """
        X = validate_X(self, X, reset=True, min_samples=2, min_features=2)
        n, d = X.shape
        k = check_shape(PARAMS, "n_eigenpairs", p, n, d)
        n_select = check_shape(PARAMS, "n_features_to_select", p, n, d)
        if n_select is None:
            n_select = max(1, d // 2)
        graph = p["graph"]
        if graph == "auto":
            graph = "dense" if n <= AUTO_DENSE_MAX_SAMPLES else "knn"
        check_shape(PARAMS, "n_neighbors", {**p, "graph": graph}, n, d)

        progress(0.0, "preparing data")
        Xc, constant, scaling = self._prepared(X, p["scale"])
        g = self._graph(Xc, graph, p, progress.span(0.0, 0.35))
        lam, Q, B, vec_support, chosen, n_comp, converged = self._eigenpairs(g, k, p, progress.span(0.35, 0.8))
        der_rep = progress.span(0.8, 1.0)
        der_rep(0.0, "derivatives")
        if g.kind == "dense":
            deriv = _spectral.derivatives_dense(Xc, g.S, lam[chosen], Q[:, chosen], g.sigma)
        else:
            deriv = _spectral.derivatives_edges(Xc, g.rows, g.cols, g.weights, lam[chosen],
                                                Q[:, chosen], g.sigma, der_rep)
        deriv[:, constant] = 0.0
        scores = np.abs(deriv).sum(axis=0)
        ranking = np.argsort(-scores, kind="stable")
        support = np.zeros(d, dtype=bool)
        support[ranking[:n_select]] = True
        der_rep(1.0, "done")
        self._set_fitted(
            **scaling,
            scores_=scores,
            ranking_=ranking,
            eigenvalues_=lam,
            eigenvectors_=Q,
            eigenvector_support_=vec_support,
            selected_eigenpairs_=chosen,
            derivatives_=deriv,
            degrees_=B,
            sigma_=float(g.sigma),
            graph_=g.kind,
            n_graph_components_=n_comp,
            constant_features_=constant,
            support_=support,
            converged_=bool(converged),
        )
        return self

    def _prepared(self, X, how):
        """Scaled, centred data with constant features zeroed; the mask of constant features."""
        constant = _constant_columns(X)
        if constant.all():
            raise ValueError(f"X must have at least one non-constant feature to rank; all "
                             f"{X.shape[1]} features are constant")
        Z, scaling = self._fit_scaled(X, how)
        check_magnitude(Z, method="ESFS", fix="Use scale='standard' or 'robust'.")
        Xc = Z - Z.mean(axis=0)
        Xc[:, constant] = 0.0
        return Xc, constant, scaling

    @staticmethod
    def _graph(Xc, kind, p, rep) -> _Graph:
        """The dense Gaussian graph or the kNN graph, with sigma chosen when it is None."""
        n = Xc.shape[0]
        scale = p["sigma_scale"]
        if scale is None:
            scale = 0.5 if kind == "dense" else 1.0
        if kind == "dense":
            rep(0.0, "dense graph: distances")
            D2 = _graph.sq_distances(Xc)
            typical = _graph.median_pairwise_distance(D2)
            sigma = p["sigma"]
            if sigma is None:
                sigma = scale * typical
                if not sigma > 0:
                    raise ValueError("X has only identical samples; no similarity graph to analyse")
            _check_sigma(sigma, typical)
            rep(0.6, "dense graph: similarities")
            S = _graph.dense_affinity(D2, sigma, out=D2)
            g = _Graph("dense", S, S.sum(axis=1), sigma)
        else:
            idx, dist = _graph.knn_indices(Xc, p["n_neighbors"], rep.span(0.0, 0.8))
            kth = dist.max(axis=1)
            kth = kth[kth > 0]
            typical = float(np.median(kth)) if kth.size else 0.0
            sigma = p["sigma"]
            if sigma is None:
                if kth.size == 0:
                    raise ValueError("X has only duplicate samples within every neighbourhood; "
                                     "pass sigma explicitly or increase n_neighbors")
                sigma = scale * typical
            _check_sigma(sigma, typical)
            rep(0.8, "kNN graph: edges")
            rows, cols = _graph.knn_edges(idx, n)
            del idx, dist
            weights = _graph.edge_affinity(_graph.edge_sq_distances(Xc, rows, cols), sigma)
            S = sp.coo_matrix((np.concatenate([weights, weights]),
                               (np.concatenate([rows, cols]), np.concatenate([cols, rows]))),
                              shape=(n, n)).tocsr()
            g = _Graph("knn", S, np.asarray(S.sum(axis=1)).ravel(), sigma, rows, cols, weights)
        if not g.degrees.max() > 0:
            raise ValueError(f"sigma = {sigma:g} is so small that every similarity "
                             f"exp(-distance^2 / (2 sigma^2)) underflows to 0 (the graph has no "
                             f"edges); use a sigma near the typical distance between samples "
                             f"({typical:.3g} here), or sigma=None to choose it")
        rep(1.0, "graph built")
        return g

    def _eigenpairs(self, g: _Graph, k, p, rep):
        """The trivial pairs and the smallest non-trivial ones, with the support of each and the
        chosen pairs; warns on ties, disconnected graphs, localised spectra and an eigensolver
        short of full accuracy."""
        n = g.degrees.size
        n_comp, labels = _spectral.graph_components(g.S)
        if k is not None and n_comp + k > n:
            raise ValueError(f"n_eigenpairs must be an integer in [1, {n - n_comp}] (the graph has "
                             f"{n_comp} connected components, each with a trivial eigenvalue 0; "
                             f"increase sigma or n_neighbors to connect it); got {k}")
        if n_comp > 1:
            warnings.warn(f"the {g.kind} similarity graph has {n_comp} connected components; their "
                          f"{n_comp} zero eigenvalues are skipped, and separation between components "
                          f"does not enter the scores (increase "
                          f"{'n_neighbors' if g.kind == 'knn' else 'sigma'} to connect them)",
                          UserWarning, stacklevel=4)
        # Spare pairs beyond the k wanted (or the AUTO_MAX_EIGENPAIRS + 1 the eigengap compares)
        # so that skipping localised ones still leaves enough, and the spectrum after the chosen
        # set can be shown; each costs eigensolver time on large kNN graphs.
        base = k if k is not None else AUTO_MAX_EIGENPAIRS + 1
        n_wanted = min(base + max(base, 5), n - n_comp)
        lam, Q, B, converged = _spectral.smallest_eigenpairs(
            g.S, g.degrees, labels, n_comp, n_wanted,
            rng=check_random_state(p["random_state"]), rep=rep)
        support = _spectral.support_fraction(Q, B)
        chosen, fell_back = _spectral.choose_eigenpairs(
            lam, support, n_comp, "auto" if k is None else k, p["min_support"], AUTO_MAX_EIGENPAIRS)
        if fell_back:
            warnings.warn(f"every computed eigenvector lives on less than min_support = "
                          f"{p['min_support']:g} of the samples (they single out a few outlying "
                          f"samples); the smallest ones are used anyway. Try a larger sigma, "
                          f"another scale, or remove the outlying samples", UserWarning, stacklevel=4)
        elif k is not None and chosen.size < k:
            warnings.warn(f"only {chosen.size} of the {lam.size - n_comp} eigenvectors computed "
                          f"live on at least min_support = {p['min_support']:g} of the samples; "
                          f"EVSC sums those {chosen.size} instead of n_eigenpairs = {k}",
                          UserWarning, stacklevel=4)
        self._warn_ties(lam, chosen, n_comp)
        if not converged:
            warnings.warn("the eigensolver stopped before full accuracy; scores may be inexact",
                          ConvergenceWarning, stacklevel=4)
        return lam, Q, B, support, chosen, n_comp, converged

    @staticmethod
    def _warn_ties(lam, chosen, n_comp):
        """Warn when a chosen eigenvalue is repeated (ties with a neighbour in the spectrum): |dλ|
        of a single pair of a repeated eigenvalue is then ill-defined."""
        tol = _TIE_RTOL * max(float(np.abs(lam).max()), 1e-300)
        for r in chosen:
            for s in (r - 1, r + 1):
                if n_comp <= s < lam.size and abs(lam[s] - lam[r]) <= tol:
                    warnings.warn("some chosen eigenvalues are repeated (or tie with a neighbouring "
                                  "one); the individual derivatives, and so the scores, depend on an "
                                  "arbitrary basis of the repeated eigenspace; change n_eigenpairs "
                                  "to include or exclude the whole group", UserWarning, stacklevel=3)
                    return

    def _get_support_mask(self):
        check_is_fitted(self)
        return self.support_


def _check_sigma(sigma, typical):
    """Refuse a sigma whose 1 / (2 sigma^2) cannot be formed in float64."""
    if not 0.0 < 2.0 * sigma * sigma < np.inf:
        raise ValueError(f"sigma = {sigma:g} is outside the range float64 can square "
                         f"(about 1e-154 to 1e154); use a sigma near the typical distance between "
                         f"samples ({typical:.3g} here), or sigma=None to choose it")
