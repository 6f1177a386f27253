"""ESFS against ground truth: finite differences of the eigenvalues, the dense vs edge-list forms on
one graph, a planted informative feature, and the error/cancel contracts."""

import numpy as np
import pytest
import scipy.linalg as sla
import scipy.sparse as sp
from scipy.spatial.distance import pdist

from robustcore import Cancelled, NotFittedError
from robustcore.features import _graph, _spectral
from robustcore.features.esfs import ESFS


def _standardize(X):
    Z = X - X.mean(0)
    return Z / Z.std(0)


def _two_clusters(seed, n=300, d=6, shift=5.0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X[: n // 2, 0] += shift
    return X


def _pencil_eigenvalues(Xc, w, sigma):
    """All eigenvalues of L q = λ B q by the generalised LAPACK solver (another route than ESFS's)."""
    S = _graph.dense_affinity(_graph.sq_distances(Xc * w), sigma)
    deg = S.sum(1)
    B = _spectral.mass_matrix(deg)
    return sla.eigh(np.diag(deg) - S, np.diag(B), eigvals_only=True)


def _dense_all_pairs(Xc, sigma):
    n = Xc.shape[0]
    S = _graph.dense_affinity(_graph.sq_distances(Xc), sigma)
    c, labels = _spectral.graph_components(S)
    lam, Q, B, ok = _spectral.smallest_eigenpairs(S, S.sum(1), labels, c, n - c,
                                                  rng=np.random.default_rng(0), solver="dense")
    return S, lam, Q, B


def test_derivatives_match_central_differences_for_every_eigenpair():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((40, 4)) * [1.0, 2.0, 0.5, 1.0]
    Xc = _standardize(X)
    sigma = 1.3
    S, lam, Q, B = _dense_all_pairs(Xc, sigma)
    assert lam.size == 40
    np.testing.assert_allclose(lam, _pencil_eigenvalues(Xc, np.ones(4), sigma), atol=1e-10)
    analytic = _spectral.derivatives_dense(Xc, S, lam, Q, sigma)
    h = 1e-5
    fd = np.empty_like(analytic)
    for t in range(4):
        e = np.zeros(4)
        e[t] = h
        fd[:, t] = (_pencil_eigenvalues(Xc, 1 + e, sigma) - _pencil_eigenvalues(Xc, 1 - e, sigma)) / (2 * h)
    scale = np.abs(analytic).max()
    assert scale > 1e-3
    assert np.abs(analytic - fd).max() <= 1e-6 * scale
    # the trivial pair (λ = 0, q constant) never moves
    assert np.abs(analytic[0]).max() <= 1e-12 * scale


def test_eigenvectors_are_d_normalised_dense_and_knn():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((700, 5))
    X[:350, 1] += 3
    for graph in ("dense", "knn"):
        est = ESFS(graph=graph, n_eigenpairs=3, random_state=0).fit(X)
        Q, B = est.eigenvectors_, est.degrees_
        assert np.abs(Q.T @ (B[:, None] * Q) - np.eye(Q.shape[1])).max() < 1e-8
        assert est.eigenvalues_[0] == 0.0
        assert np.all(np.diff(est.eigenvalues_) >= -1e-12)
        assert est.graph_ == graph


def test_lanczos_route_matches_dense_eigensolver_on_a_knn_graph():
    rng = np.random.default_rng(2)
    X = _standardize(rng.standard_normal((800, 6)))
    idx, _ = _graph.knn_indices(X, 8)
    rows, cols = _graph.knn_edges(idx, 800)
    w = _graph.edge_affinity(_graph.edge_sq_distances(X, rows, cols), 1.0)
    S = sp.coo_matrix((np.r_[w, w], (np.r_[rows, cols], np.r_[cols, rows])), shape=(800, 800)).tocsr()
    deg = np.asarray(S.sum(1)).ravel()
    c, labels = _spectral.graph_components(S)
    out = [_spectral.smallest_eigenpairs(S, deg, labels, c, 6, rng=np.random.default_rng(0), solver=s)
           for s in ("dense", "lanczos")]
    np.testing.assert_allclose(out[0][0], out[1][0], atol=1e-8)
    # eigenvectors agree up to sign
    Qd, Ql = out[0][1], out[1][1]
    np.testing.assert_allclose(np.abs(np.sum(Qd * deg[:, None] * Ql, 0)), 1.0, atol=1e-6)


def test_dense_and_edge_forms_agree_on_the_same_knn_graph():
    rng = np.random.default_rng(4)
    X = rng.standard_normal((250, 7))
    X[:100, 2] += 4
    est = ESFS(graph="knn", n_neighbors=6, n_eigenpairs=3, scale="standard", random_state=0).fit(X)
    Xc = _standardize(X)
    idx, _ = _graph.knn_indices(Xc, 6)
    rows, cols = _graph.knn_edges(idx, 250)
    w = _graph.edge_affinity(_graph.edge_sq_distances(Xc, rows, cols), est.sigma_)
    S = sp.coo_matrix((np.r_[w, w], (np.r_[rows, cols], np.r_[cols, rows])), shape=(250, 250)).toarray()
    sel = est.selected_eigenpairs_
    lam, Q = est.eigenvalues_[sel], est.eigenvectors_[:, sel]
    dense = _spectral.derivatives_dense(Xc, S, lam, Q, est.sigma_)
    edges = _spectral.derivatives_edges(Xc, rows, cols, w, lam, Q, est.sigma_)
    assert np.abs(dense).max() > 1e-4
    np.testing.assert_allclose(edges, dense, rtol=0, atol=1e-10 * np.abs(dense).max())
    np.testing.assert_allclose(est.derivatives_, edges, rtol=0, atol=1e-10 * np.abs(dense).max())
    # the eigenpairs solve L q = λ D q on this graph
    deg = S.sum(1)
    resid = (np.diag(deg) - S) @ Q - est.degrees_[:, None] * Q * lam
    assert np.abs(resid).max() < 1e-8
    np.testing.assert_allclose(est.scores_, np.abs(est.derivatives_).sum(0))


@pytest.mark.slow
def test_informative_feature_ranks_first_for_20_seeds():
    # methods.md §4.5 acceptance: standardised data, sigma pinned at 0.5 x median pairwise
    # distance, k = 1 and k = 2. The k = 1 scores are the first row of the k = 2 derivatives
    # (same graph, same pairs).
    for seed in range(20):
        X = _two_clusters(seed)
        sigma = 0.5 * np.median(pdist(_standardize(X)))
        est = ESFS(sigma=sigma, n_eigenpairs=2, graph="dense", scale="standard", min_support=0).fit(X)
        assert est.ranking_[0] == 0, f"seed {seed}, k=2: ranking {est.ranking_}"
        assert np.argmax(np.abs(est.derivatives_[0])) == 0, f"seed {seed}, k=1"
        assert est.sigma_ == pytest.approx(sigma)


def test_default_sigma_is_half_the_median_pairwise_distance():
    X = _two_clusters(0)
    # one unit everywhere (spreads within 10x): scale="auto" keeps it
    est = ESFS().fit(X)
    assert est.graph_ == "dense"
    assert not est.scale_center_.any() and np.all(est.scale_ == 1.0)
    assert est.sigma_ == pytest.approx(0.5 * np.median(pdist(X)), rel=1e-9)
    assert est.ranking_[0] == 0
    # two groups: the eigengap picks one non-trivial pair
    assert est.derivatives_.shape == (1, 6)
    assert list(est.selected_eigenpairs_) == [1]
    assert est.eigenvalues_.shape == (1 + 12,) == est.eigenvector_support_.shape
    est = ESFS(scale="standard").fit(X)
    assert est.sigma_ == pytest.approx(0.5 * np.median(pdist(_standardize(X))), rel=1e-9)


def test_auto_graph_is_dense_up_to_a_size_then_knn(monkeypatch):
    from robustcore.features import esfs as esfs_mod
    assert esfs_mod.AUTO_DENSE_MAX_SAMPLES == 3000
    assert ESFS().fit(_two_clusters(0, n=300)).graph_ == "dense"
    monkeypatch.setattr(esfs_mod, "AUTO_DENSE_MAX_SAMPLES", 299)
    assert ESFS(random_state=0).fit(_two_clusters(0, n=300)).graph_ == "knn"
    assert ESFS(random_state=0).fit(_two_clusters(0, n=299)).graph_ == "dense"


def test_knn_default_sigma_is_the_median_kth_neighbour_distance():
    from scipy.spatial import cKDTree
    X = _two_clusters(3)
    est = ESFS(graph="knn", n_neighbors=7, scale="standard", random_state=0).fit(X)
    dist, _ = cKDTree(_standardize(X)).query(_standardize(X), 8)
    assert est.sigma_ == pytest.approx(np.median(dist[:, 7]), rel=1e-9)
    assert est.ranking_[0] == 0


def test_constant_feature_scores_zero_without_nan():
    X = _two_clusters(1, n=120)
    X[:, 3] = 7.25
    for scale in ("standard", "robust", "none"):
        for graph in ("dense", "knn"):
            est = ESFS(scale=scale, graph=graph, random_state=0).fit(X)
            assert est.constant_features_.tolist() == [False, False, False, True, False, False]
            assert est.scores_[3] == 0.0
            assert np.all(np.isfinite(est.scores_)) and np.all(np.isfinite(est.derivatives_))
            assert np.all(np.isfinite(est.eigenvalues_))
            assert est.ranking_[-1] == 3


def test_transform_keeps_the_top_features():
    X = _two_clusters(2)
    est = ESFS(n_features_to_select=1)
    Z = est.fit_transform(X)
    np.testing.assert_array_equal(Z, X[:, [0]])
    est = ESFS().fit(X)
    Z = est.transform(X)
    assert Z.shape == (300, 3)
    np.testing.assert_array_equal(est.get_support(indices=True), np.sort(est.ranking_[:3]))
    np.testing.assert_array_equal(Z, X[:, est.support_])
    with pytest.raises(ValueError, match="features"):
        est.transform(X[:, :4])


def test_knn_graph_with_two_components_skips_both_zero_eigenvalues():
    rng = np.random.default_rng(5)
    X = rng.standard_normal((200, 3))
    X[:100, 0] += 50
    with pytest.warns(UserWarning, match="2 connected components"):
        est = ESFS(graph="knn", n_neighbors=5, n_eigenpairs=2, random_state=0).fit(X)
    assert est.n_graph_components_ == 2
    assert np.all(est.eigenvalues_[:2] == 0) and est.eigenvalues_[2] > 1e-6
    assert list(est.selected_eigenpairs_) == [2, 3]
    assert np.all(np.isfinite(est.scores_)) and est.scores_.max() > 0


def test_duplicate_rows_never_are_their_own_neighbours():
    X = np.repeat(np.arange(12.0).reshape(6, 2), 3, axis=0)
    for d in (2, 12):
        Y = np.tile(X, (1, d // 2))
        idx, dist = _graph.knn_indices(Y, 3)
        assert not np.any(idx == np.arange(18)[:, None])
        assert idx.shape == (18, 3)


@pytest.mark.parametrize("kwargs, X_shape, match", [
    ({}, (1, 4), r"1 sample\(s\) .* minimum of 2"),
    ({}, (10, 1), r"1 feature\(s\) .* minimum of 2"),
    ({"sigma": 0.0}, (10, 3), r"'sigma' parameter of \w+ must be a number > 0.*Got 0"),
    ({"sigma": -1.0}, (10, 3), r"'sigma' parameter of \w+ must be .*Got -1"),
    ({"n_eigenpairs": 0}, (10, 3), r"'n_eigenpairs' parameter of \w+ must be an integer >= 1.*Got 0"),
    ({"n_eigenpairs": 10}, (10, 3), r"'n_eigenpairs' parameter must be an integer in \[1, 9\].*Got 10"),
    ({"n_neighbors": 0, "graph": "knn"}, (10, 3), r"'n_neighbors' parameter of \w+ must be .*Got 0"),
    ({"n_neighbors": 10, "graph": "knn"}, (10, 3), r"'n_neighbors' parameter must be an integer in \[1, 9\].*Got 10"),
    ({"graph": "full"}, (10, 3), r"'graph' parameter of \w+ must be one of 'auto', 'dense', 'knn'\. Got 'full'"),
    ({"n_features_to_select": 4}, (10, 3), r"'n_features_to_select' parameter must be an integer in \[1, 3\].*Got 4"),
    ({"random_state": "x"}, (10, 3), "random_state"),
])
def test_bad_input_names_parameter_range_and_value(kwargs, X_shape, match):
    X = np.random.default_rng(0).standard_normal(X_shape)
    with pytest.raises(ValueError, match=match):
        ESFS(**kwargs).fit(X)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_nan_or_inf_rejected(bad):
    X = np.random.default_rng(0).standard_normal((10, 3))
    X[4, 1] = bad
    with pytest.raises(ValueError, match="NaN or infinite"):
        ESFS().fit(X)


def test_all_constant_features_rejected():
    with pytest.raises(ValueError, match="non-constant"):
        ESFS().fit(np.ones((10, 3)))


@pytest.mark.parametrize("graph, n", [("dense", 200), ("knn", 900)])
def test_cancel_leaves_the_estimator_unfitted(graph, n):
    X = _two_clusters(0, n=n)
    est = ESFS(graph=graph, random_state=0).fit(X)
    seen = []

    def record(f, msg):
        seen.append((f, msg))

    est.fit(X, progress=record)
    fr = [f for f, _ in seen]
    assert fr[0] == 0.0 and fr[-1] == 1.0 and all(0 <= f <= 1 for f in fr)
    assert all(b >= a for a, b in zip(fr, fr[1:]))
    for step in ("graph", "eigensolver", "derivatives"):
        calls = []

        def stop(f, msg, step=step):
            calls.append(msg)
            return False if step in msg else None

        with pytest.raises(Cancelled):
            est.fit(X, progress=stop)
        assert any(step in m for m in calls)
        assert not hasattr(est, "scores_")
        with pytest.raises(NotFittedError):
            est.transform(X)


def test_params_declared_once_and_random_state_generator_accepted():
    names = [p.name for p in ESFS.param_specs()]
    assert names == ["sigma", "sigma_scale", "n_eigenpairs", "min_support", "graph", "n_neighbors",
                     "scale", "n_features_to_select", "random_state"]
    assert all(p.help for p in ESFS.param_specs())
    est = ESFS(n_eigenpairs=3)
    assert est.get_params()["n_eigenpairs"] == 3
    X = _two_clusters(0, n=700)
    a = ESFS(graph="knn", random_state=np.random.default_rng(1)).fit(X)
    b = ESFS(graph="knn", random_state=1).fit(X)
    np.testing.assert_allclose(a.scores_, b.scores_, rtol=1e-8)
    assert a.ranking_[0] == 0


def test_registry_runs_esfs_on_a_dataset():
    from robustcore.datasets._dataset import Dataset
    from robustcore.methods import get_method
    X = _two_clusters(6, n=150)
    ds = Dataset(X=X, name="two", feature_names=[f"f{i}" for i in range(6)])
    res = get_method("esfs").run(ds, {"n_eigenpairs": 1})
    assert res.summary["top feature"] == "f0"
    assert res.feature_scores["evsc"].shape == (6,)
    assert res.arrays["derivatives"].shape == (1, 6)


def test_repeated_eigenvalue_warns():
    # points evenly spaced on a circle: the graph is circulant, its eigenvalues come in equal pairs
    t = np.linspace(0, 2 * np.pi, 24, endpoint=False)
    X = np.c_[np.cos(t), np.sin(t)]
    with pytest.warns(UserWarning, match="repeated"):
        est = ESFS(n_eigenpairs=1).fit(X)
    assert est.eigenvalues_[1] == pytest.approx(est.eigenvalues_[2], rel=1e-9)


def test_smallest_problems_work():
    est = ESFS(n_eigenpairs=1).fit(np.array([[0.0, 1.0], [1.0, 3.0]]))
    assert est.eigenvalues_.shape == (2,) and np.all(np.isfinite(est.scores_))
    # n = 2: λ_2 = 2 whatever the similarity, so nothing moves it
    assert est.eigenvalues_[1] == pytest.approx(2.0)
    assert np.abs(est.scores_).max() < 1e-9


# -- the defaults on planted and bundled data (issue 11) ---------------------------------------

def _clusters_3d(seed):
    """The bundled clusters-3d demo's recipe (robustcore.datasets._demos): 100 points around
    (2, -1, 0) and 100 around (-2, 1, 0); z is pure noise."""
    rng = np.random.default_rng(seed)
    centres = np.array([[2.0, -1.0, 0.0], [-2.0, 1.0, 0.0]])
    return np.vstack([c + rng.standard_normal((100, 3)) for c in centres])


def test_defaults_rank_iris_petals_first_and_sepal_width_not_first():
    from robustcore.datasets import demo
    ds = demo("iris")
    est = ESFS().fit(ds.X)
    names = [ds.feature_names[i] for i in est.ranking_]
    assert {names[0], names[1]} == {"petal_length_cm", "petal_width_cm"}, names
    assert names[0] != "sepal_width_cm"


def test_defaults_rank_the_noise_feature_of_two_clusters_last_for_20_seeds():
    from robustcore.datasets import demo
    for seed in range(20):
        est = ESFS().fit(_clusters_3d(seed))
        assert est.ranking_[-1] == 2, f"seed {seed}: ranking {est.ranking_}"
    est = ESFS().fit(demo("clusters-3d").X)
    assert est.ranking_[-1] == 2


def test_defaults_rank_the_shifted_feature_first_for_20_seeds():
    # methods.md §4.5's acceptance data with every parameter at its default
    for seed in range(20):
        est = ESFS().fit(_two_clusters(seed))
        assert est.ranking_[0] == 0, f"seed {seed}: ranking {est.ranking_}"


@pytest.mark.parametrize("share", [0.10, 0.05])
def test_defaults_find_a_small_cluster(share):
    # min_support must keep the eigenvector of a cluster holding 5-10 % of the samples
    for seed in range(10):
        rng = np.random.default_rng(seed)
        X = rng.standard_normal((300, 6))
        X[: int(share * 300), 0] += 5.0
        est = ESFS().fit(X)
        assert est.ranking_[0] == 0, f"seed {seed}: ranking {est.ranking_}"
        assert est.eigenvector_support_[est.selected_eigenpairs_[0]] >= 0.02


def test_eigenvectors_on_a_few_outlying_samples_are_skipped():
    # two groups along feature 0, and three samples far out along noise feature 5: the smallest
    # non-trivial eigenvector singles out those three and, summed, ranks feature 5 first
    for seed in range(10):
        rng = np.random.default_rng(seed)
        X = rng.standard_normal((300, 6))
        X[:150, 0] += 5.0
        X[:3, 5] += 12.0
        every = ESFS(min_support=0.0, n_eigenpairs=1).fit(X)
        assert every.ranking_[0] == 5 and list(every.selected_eigenpairs_) == [1]
        # its support is about 3 of 300 samples
        assert 0.005 < every.eigenvector_support_[1] < 0.02
        est = ESFS(n_eigenpairs=1).fit(X)
        assert list(est.selected_eigenpairs_) == [2] and est.ranking_[0] == 0
        np.testing.assert_allclose(est.eigenvalues_, every.eigenvalues_)


def test_support_fraction_closed_forms():
    n = 200
    B = np.full(n, 3.0)
    # a two-valued B-orthogonal-to-constant vector splitting off a share p: support
    # (p a² + (1-p) b²)² / (p a⁴ + (1-p) b⁴) with b = -p a / (1-p)
    for p in (0.5, 0.1, 0.05):
        m = int(p * n)
        a, b = 1.0, -p / (1 - p)
        q = np.where(np.arange(n) < m, a, b)
        q /= np.sqrt(B @ (q * q))
        expect = (p * a**2 + (1 - p) * b**2) ** 2 / (p * a**4 + (1 - p) * b**4)
        assert _spectral.support_fraction(q[:, None], B)[0] == pytest.approx(expect, rel=1e-12)
    one = np.zeros(n)
    one[7] = 1 / np.sqrt(3.0)
    flat = np.full(n, 1 / np.sqrt(3.0 * n))
    np.testing.assert_allclose(_spectral.support_fraction(np.c_[one, flat], B), [1 / n, 1.0])


def test_choose_eigenpairs_skips_localised_pairs_and_cuts_at_the_largest_gap():
    lam = np.array([0.0, 0.01, 0.02, 0.03, 0.05, 0.5, 0.6, 0.7])
    support = np.array([1.0, 0.004, 0.5, 0.4, 0.01, 0.3, 0.3, 0.3])
    # candidates 2, 3, 5, 6, 7 (λ .02 .03 .5 .6 .7): ratios 1.5, 16.7, 1.2, 1.17 -> two pairs
    sel, fell_back = _spectral.choose_eigenpairs(lam, support, 1, "auto", 0.02, 5)
    assert list(sel) == [2, 3] and not fell_back
    assert list(_spectral.choose_eigenpairs(lam, support, 1, 3, 0.02, 5)[0]) == [2, 3, 5]
    assert list(_spectral.choose_eigenpairs(lam, support, 1, 2, 0.0, 5)[0]) == [1, 2]
    assert list(_spectral.choose_eigenpairs(lam, support, 1, "auto", 0.0, 5)[0]) == [1, 2, 3, 4]
    sel, fell_back = _spectral.choose_eigenpairs(lam, support, 1, 1, 0.99, 5)
    assert fell_back and list(sel) == [1]


@pytest.mark.parametrize("groups", [2, 3])
def test_eigengap_counts_well_separated_groups(groups):
    centres = {2: [[0, 0], [6, 0]], 3: [[0, 0], [6, 0], [3, 5.2]]}[groups]
    for seed in range(5):
        rng = np.random.default_rng(seed)
        g = rng.integers(0, groups, 400)
        X = rng.standard_normal((400, 6))
        X[:, :2] += np.array(centres, float)[g]
        est = ESFS().fit(X)
        assert len(est.selected_eigenpairs_) == groups - 1
        assert set(est.ranking_[: groups - 1]) <= {0, 1} and est.ranking_[0] in (0, 1)


def test_localised_spectrum_falls_back_with_a_warning():
    X = np.random.default_rng(0).standard_normal((40, 3))
    with pytest.warns(UserWarning, match="every computed eigenvector lives on less than min_support"):
        est = ESFS(min_support=0.99, n_eigenpairs=2).fit(X)
    assert list(est.selected_eigenpairs_) == [1, 2]     # the smallest non-trivial pairs


@pytest.mark.slow
def test_sparse_eigensolver_reports_its_budget_and_stops_at_it(monkeypatch):
    """Issue 24: on a tall table of few features (200,000 x 3) the eigensolver ran past 60 s
    with a progress fraction stuck near its end. The fraction is the share of a product budget
    spent, with the time the rest would take; past the budget the fit is refused by name."""
    from robustcore.features import _spectral
    rng = np.random.default_rng(0)
    X = rng.normal(size=(4000, 3))
    seen = []
    ESFS(graph="knn").fit(X, progress=lambda f, m: seen.append((f, m)))
    eig = [(f, m) for f, m in seen if "products" in m]
    assert eig and all("of at most 8,000 products" in m and " s left" in m for _, m in eig)
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and 0.0 <= fractions[0] and fractions[-1] == 1.0
    monkeypatch.setattr(_spectral, "product_budget", lambda n: 30)
    with pytest.raises(ValueError, match="did not converge within 30 products.*random subset"):
        ESFS(graph="knn").fit(X)


def test_product_budget_shrinks_with_the_graph():
    from robustcore.features import _spectral
    assert _spectral.product_budget(4000) == 8000 and _spectral.product_budget(200_000) == 800
    assert _spectral.product_budget(20_000) >= 5 * 510      # 5x what a 20,000-sample fit took
