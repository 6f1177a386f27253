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

from .._base import ConvergenceWarning, Estimator, fit_method
from .._params import Param, SeedParam, check_range
from .._progress import Reporter
from .._scaling import ScaledInput, scale_param
from .._validation import check_magnitude, check_random_state, validate_X
from . import _graph, _spectral

__all__ = ["ESFS", "AUTO_DENSE_FACTOR"]

# graph="auto" builds the dense graph only while n <= AUTO_DENSE_FACTOR x n_neighbors (a kNN graph
# would then hold a large share of all pairs anyway), the kNN graph beyond. Measured
# (benchmarks/results_esfs.md): kNN is 4-7x faster at n = 1000-6000 and ranked class-separating
# features above average on 7 of 7 real data sets, where the dense graph failed on 2 of 4 USPS pairs.
AUTO_DENSE_FACTOR = 5

# Relative tie tolerance under which two eigenvalues count as repeated.
_TIE_RTOL = 1e-6


def _constant_columns(X: np.ndarray) -> np.ndarray:
    """Columns whose spread is zero or only rounding noise relative to their magnitude."""
    spread = X.max(axis=0) - X.min(axis=0)
    scale = np.abs(X).max(axis=0)
    return spread <= 1e-12 * scale


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

    Parameters
    ----------
    sigma : float or None
        Width σ of the Gaussian similarity (> 0). None (default) chooses it from the data:
        ``sigma_scale`` x the median pairwise distance (dense graph) or x the median distance to
        the ``n_neighbors``-th neighbour (kNN graph), both measured after standardising.
    sigma_scale : float or None
        Multiplier of the automatic σ (ignored when ``sigma`` is given). None (default) means 0.5
        for the dense graph and 1.0 for the kNN graph. Why: on two clusters separated along one
        feature (methods.md §4.5), σ = 1.0 x the median pairwise distance put a noise feature
        first in 9 of 20 seeds (k = 1) while 0.5 x median ranked correctly in 20 of 20 (also
        measured here, benchmarks/results_esfs.md); for kNN the K-th neighbour distance is
        already a local scale, and scales 0.5 to 2 ranked alike there, so 1.0 is kept.
    n_eigenpairs : int
        k, the number of eigenpairs summed in EVSC: the k smallest **non-trivial** ones, i.e. after
        skipping the λ = 0 pair of each connected component of the graph. Set it to the expected
        number of clusters minus one; default 1 (two groups). Why: c well-separated groups are
        described by the c - 1 smallest non-trivial pairs; further pairs describe the spread
        *within* groups, which noise features share. On the bundled ``clusters-3d`` demo (two
        groups, one pure-noise feature) k = 1 ranks x, y, z for both graphs, while k = 2 and 3
        put the noise feature z first. For four groups, k = 2 or 3 did better than 1
        (benchmarks/results_esfs.md): raise it when more groups are expected.
        Must satisfy 1 <= k < n_samples (and k + components <= n_samples).
    graph : {"auto", "dense", "knn"}
        "dense": all n² similarities (O(n²) memory). "knn": the symmetrised (union) graph of the
        ``n_neighbors`` nearest neighbours, with ARPACK on a deflated operator; memory O(n·K).
        "auto" (default): kNN, except dense for tiny data (n_samples <= 5 x n_neighbors). Why:
        measured, kNN was 4-7x faster at every size from 1000 to 6000 samples, ranked planted
        features as well as dense on synthetic clusters, and ranked class-separating features
        above average on every real data set tried, where the dense graph (whose small
        eigenvectors tend to localise on a few outlying samples) ranked them far below average on
        2 of 4 USPS digit pairs (3 of 4 with k = 1; benchmarks/results_esfs.md).
    n_neighbors : int
        K for the kNN graph, 1 <= K < n_samples (default 10). The derivative treats the set of kNN
        edges as fixed (it changes discontinuously with the weights).
    n_features_to_select : int or None
        How many top-ranked features :meth:`transform` keeps; None (default) keeps half of them
        (``max(1, n_features // 2)``, scikit-learn's RFE convention), so transform always reduces.
    random_state : None, int, numpy.random.Generator or RandomState
        Seed of the eigensolver's starting vector (kNN graph / large problems only).
    scale : {"standard", "robust", "none"}, default "standard"
        Per-feature scaling before the graph is built (robustcore._scaling): "standard"
        z-scores every feature (otherwise large-scale features dominate both the graph and the
        derivatives), "robust" uses median / MAD, "none" keeps the units. Constant features
        get scale 1 and score 0. (Sessions of 0.1 said ``standardize=True/False``.)

    Attributes
    ----------
    scores_ : ndarray (d,)
        EVSC score per feature (>= 0); exactly 0 for constant features.
    ranking_ : ndarray (d,) of int
        Feature indices, best (largest score) first; ties keep the original order.
    eigenvalues_ : ndarray (c + k + m,)
        All eigenvalues computed, ascending: the c trivial zeros (one per connected component;
        c = 1 for a connected graph), then the k chosen ones, then m = min(max(5, k), 20) more (as
        far as the data allow) so the spectrum and the gap after the chosen set can be shown.
    eigenvectors_ : ndarray (n, c + k + m)
        The matching D-normalised eigenvectors (columns).
    selected_eigenpairs_ : ndarray (k,) of int
        Positions in ``eigenvalues_`` of the pairs summed in EVSC.
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
    n_features_in_ : int; ``feature_names_in_`` when X had string column names.
    converged_ : bool
        False if the iterative eigensolver stopped before full accuracy (a ConvergenceWarning is
        issued).
    """

    _params = (
        Param("sigma", float, None, "Gaussian width σ of the similarity graph.", low=0.0,
              low_inclusive=False, allow_none=True, none_label="sigma_scale x median distance"),
        Param("sigma_scale", float, None, "Multiplier of the automatic σ.", low=0.0,
              low_inclusive=False, allow_none=True, none_label="0.5 dense, 1.0 kNN",
              advanced=True),
        Param("n_eigenpairs", int, 1, "Number of smallest non-trivial eigenpairs summed in EVSC.",
              low=1),
        Param("graph", str, "auto", "Similarity graph: all pairs (dense) or k nearest neighbours.",
              choices=("auto", "dense", "knn")),
        Param("n_neighbors", int, 10, "Neighbours per sample in the kNN graph.", low=1),
        scale_param("standard"),
        Param("n_features_to_select", int, None, "Top-ranked features kept by transform.", low=1,
              allow_none=True, none_label="half of the features"),
        SeedParam("Seed of the eigensolver's starting vector."),
    )

    def __init__(self, sigma=None, *, sigma_scale=None, n_eigenpairs=1, graph="auto",
                 n_neighbors=10, scale="standard", n_features_to_select=None, random_state=None):
        self.sigma = sigma
        self.sigma_scale = sigma_scale
        self.n_eigenpairs = n_eigenpairs
        self.graph = graph
        self.n_neighbors = n_neighbors
        self.scale = scale
        self.n_features_to_select = n_features_to_select
        self.random_state = random_state

    @fit_method()
    def fit(self, X, y=None, progress=None):
        """Score and rank the features of X (n_samples, n_features). ``y`` is ignored.

        ``progress(fraction, message)`` is called during the graph, eigensolver and derivative
        steps; returning False (or raising Cancelled) cancels and leaves the estimator unfitted.
        Returns self.
        """
        p = self._start_fit()
        rep = Reporter(progress)
        X = validate_X(self, X, reset=True, min_samples=2, min_features=2)
        n, d = X.shape
        k = check_range("n_eigenpairs", p["n_eigenpairs"], 1, n - 1, integer=True,
                        hint=f"fewer than n_samples = {n}")
        n_select = p["n_features_to_select"]
        if n_select is not None:
            n_select = check_range("n_features_to_select", n_select, 1, d, integer=True,
                                   hint=f"at most n_features = {d}")
        else:
            n_select = max(1, d // 2)
        graph = p["graph"]
        if graph == "auto":
            graph = "dense" if n <= AUTO_DENSE_FACTOR * p["n_neighbors"] else "knn"
        if graph == "knn":
            check_range("n_neighbors", p["n_neighbors"], 1, n - 1, integer=True,
                        hint=f"fewer than n_samples = {n}")

        rep(0.0, "preparing data")
        Xc, constant, scaling = self._prepared(X, p["scale"])
        g = self._graph(Xc, graph, p, rep.span(0.0, 0.35))
        lam, Q, B, chosen, n_comp, converged = self._eigenpairs(g, k, p, rep.span(0.35, 0.8))
        der_rep = rep.span(0.8, 1.0)
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
        """The trivial pairs, the k chosen ones and a few more; warns on ties, disconnected
        graphs and an eigensolver short of full accuracy."""
        n = g.degrees.size
        n_comp, labels = _spectral.graph_components(g.S)
        if n_comp + k > n:
            raise ValueError(f"n_eigenpairs must be an integer in [1, {n - n_comp}] (the graph has "
                             f"{n_comp} connected components, each with a trivial eigenvalue 0; "
                             f"increase sigma or n_neighbors to connect it); got {k}")
        if n_comp > 1:
            warnings.warn(f"the {g.kind} similarity graph has {n_comp} connected components; their "
                          f"{n_comp} zero eigenvalues are skipped, and separation between components "
                          f"does not enter the scores (increase "
                          f"{'n_neighbors' if g.kind == 'knn' else 'sigma'} to connect them)",
                          UserWarning, stacklevel=4)
        m_extra = min(max(5, k), 20, n - n_comp - k)
        lam, Q, B, converged = _spectral.smallest_eigenpairs(
            g.S, g.degrees, labels, n_comp, k + m_extra,
            rng=check_random_state(p["random_state"]), rep=rep)
        chosen = np.arange(n_comp, n_comp + k)
        self._warn_ties(lam, chosen)
        if not converged:
            warnings.warn("the eigensolver stopped before full accuracy; scores may be inexact",
                          ConvergenceWarning, stacklevel=4)
        return lam, Q, B, chosen, n_comp, converged

    @staticmethod
    def _warn_ties(lam, chosen):
        """Warn when a chosen eigenvalue is repeated: |dλ| of a single pair is then ill-defined."""
        lo, hi = int(chosen[0]), int(chosen[-1])
        span = lam[lo: min(hi + 2, lam.size)]
        if span.size < 2:
            return
        gaps = np.diff(span)
        tol = _TIE_RTOL * max(float(np.abs(span).max()), 1e-300)
        if np.any(gaps <= tol):
            warnings.warn("some chosen eigenvalues are repeated (or tie with the next one); the "
                          "individual derivatives, and so the scores, depend on an arbitrary basis "
                          "of the repeated eigenspace; change n_eigenpairs to include or exclude "
                          "the whole group", UserWarning, stacklevel=3)

    def _get_support_mask(self):
        check_is_fitted(self)
        return self.support_


def _check_sigma(sigma, typical):
    """Refuse a sigma whose 1 / (2 sigma^2) cannot be formed in float64."""
    if not 0.0 < 2.0 * sigma * sigma < np.inf:
        raise ValueError(f"sigma = {sigma:g} is outside the range float64 can square "
                         f"(about 1e-154 to 1e154); use a sigma near the typical distance between "
                         f"samples ({typical:.3g} here), or sigma=None to choose it")
