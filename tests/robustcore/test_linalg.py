"""Partial SVD helpers against numpy's full SVD on matrices with a known spectrum."""
import numpy as np
import pytest

from robustcore import linalg
from robustcore.linalg import as_generator, gram_svd, partial_svd, randomized_svd, spectral_norm


def known_spectrum(m, n, s, seed):
    rng = np.random.default_rng(seed)
    r = len(s)
    U, _ = np.linalg.qr(rng.standard_normal((m, r)))
    V, _ = np.linalg.qr(rng.standard_normal((n, r)))
    return (U * s) @ V.T, U, np.asarray(s, float), V


def assert_same_triplets(U, s, Vt, A, k, rtol=1e-9, vtol=1e-7):
    U0, s0, Vt0 = np.linalg.svd(A, full_matrices=False)
    np.testing.assert_allclose(s, s0[:k], rtol=rtol)
    # singular vectors agree up to sign
    np.testing.assert_allclose(np.abs(np.sum(U * U0[:, :k], axis=0)), 1.0, atol=vtol)
    np.testing.assert_allclose(np.abs(np.sum(Vt * Vt0[:k], axis=1)), 1.0, atol=vtol)
    np.testing.assert_allclose(U.T @ U, np.eye(k), atol=1e-9)
    np.testing.assert_allclose(Vt @ Vt.T, np.eye(k), atol=1e-9)
    # A v_i = s_i u_i
    np.testing.assert_allclose(A @ Vt.T, U * s, atol=1e-8 * s[0])


@pytest.mark.parametrize("shape", [(300, 120), (120, 300)])
def test_gram_svd_leading_triplets(shape):
    m, n = shape
    A, *_ = known_spectrum(m, n, np.geomspace(50, 0.5, 40), seed=0)
    A = A + 1e-3 * np.random.default_rng(1).standard_normal(shape)
    U, s, Vt = gram_svd(A, k=10)
    assert U.shape == (m, 10) and s.shape == (10,) and Vt.shape == (10, n)
    assert_same_triplets(U, s, Vt, A, 10)


def test_gram_svd_threshold_keeps_values_above():
    A, _, s0, _ = known_spectrum(200, 150, np.linspace(10, 1, 30), seed=2)
    tau = (s0[11] + s0[12]) / 2
    U, s, Vt = gram_svd(A, threshold=tau)
    assert s.size == 12
    assert_same_triplets(U, s, Vt, A, 12)
    U, s, Vt = gram_svd(A, threshold=100.0)
    assert U.shape == (200, 0) and s.size == 0 and Vt.shape == (0, 150)


@pytest.mark.parametrize("shape", [(400, 250), (250, 400)])
def test_randomized_svd_leading_triplets(shape):
    m, n = shape
    spectrum = np.r_[np.geomspace(100, 10, 15), np.full(60, 0.01)]  # a clear gap after 15
    A, *_ = known_spectrum(m, n, spectrum, seed=3)
    U, s, Vt = randomized_svd(A, 15, n_power_iter=2, random_state=0)
    assert_same_triplets(U, s, Vt, A, 15, rtol=1e-10, vtol=1e-8)


def test_randomized_svd_warm_start_needs_no_power_iterations():
    A, U0, s0, V0 = known_spectrum(300, 200, np.geomspace(10, 1, 8), seed=4)
    A = A + 1e-6 * np.random.default_rng(5).standard_normal(A.shape)
    U, s, Vt = randomized_svd(A, 8, n_power_iter=0, init=V0, random_state=0)
    assert_same_triplets(U, s, Vt, A, 8, rtol=1e-9, vtol=1e-8)


def test_randomized_svd_slow_decay_is_close():
    rng = np.random.default_rng(6)
    A = rng.standard_normal((300, 200))
    U, s, Vt = randomized_svd(A, 5, n_power_iter=6, random_state=rng)
    s0 = np.linalg.svd(A, compute_uv=False)
    np.testing.assert_allclose(s, s0[:5], rtol=2e-2)


@pytest.mark.parametrize("method", ["auto", "full", "gram", "randomized"])
def test_partial_svd_methods_agree(method):
    spectrum = np.r_[np.geomspace(30, 3, 12), np.full(20, 1e-3)]
    A, *_ = known_spectrum(260, 180, spectrum, seed=7)
    U, s, Vt = partial_svd(A, 12, method=method, random_state=0)
    assert_same_triplets(U, s, Vt, A, 12, rtol=1e-9, vtol=1e-7)


def test_spectral_norm():
    rng = np.random.default_rng(8)
    for shape in [(50, 30), (30, 50), (500, 420), (420, 500)]:
        A = rng.standard_normal(shape)
        assert spectral_norm(A, random_state=0) == pytest.approx(np.linalg.norm(A, 2), rel=1e-10)
    assert spectral_norm(np.zeros((3, 4))) == 0.0


def test_spectral_norm_of_large_matrices_at_the_ends_of_the_range():
    """The ARPACK route multiplies a float32 copy: values beyond float32's range (or below
    it) are brought near 1 by a power of two first; an all-zero matrix is 0, not an error."""
    x = np.arange(1.0, 401.0)
    for scale in (1e-300, 1.0, 1e300):
        A = np.outer(x, x[:350]) * scale
        exact = np.linalg.norm(x) * np.linalg.norm(x[:350]) * scale
        assert spectral_norm(A, random_state=0) == pytest.approx(exact, rel=1e-12)
    assert spectral_norm(np.zeros((400, 350))) == 0.0
    A = np.ones((400, 350))
    A[5, 7] = np.nan
    with pytest.raises(ValueError, match="NaN or infinite"):
        spectral_norm(A)


@pytest.mark.parametrize("top", ["pair 1e-7 apart", "flat", "square-root edge"])
def test_spectral_norm_hard_spectra(top):
    """ARPACK runs at a loose residual tolerance (the value converges with its square): the
    value must still be within 1e-7 where the top of the spectrum gives Lanczos the least
    room (nearly equal leading values, a flat top, a continuous edge)."""
    k = 380
    s = {"pair 1e-7 apart": np.r_[1.0, 1.0 - 1e-7, np.linspace(0.9, 0.5, k - 2)],
         "flat": 1.0 - np.linspace(0.0, 1e-3, k),
         "square-root edge": np.sqrt(1.0 - np.linspace(0.0, 1.0, k, endpoint=False))}[top]
    A, *_ = known_spectrum(420, 400, s, seed=3)
    for seed in range(3):
        assert spectral_norm(A, random_state=seed) == pytest.approx(1.0, rel=1e-7)


def test_bad_arguments():
    A = np.ones((5, 4))
    with pytest.raises(ValueError, match="'k' parameter must be an integer in \\[1, 4\\]"):
        partial_svd(A, 5)
    with pytest.raises(ValueError, match="'k' parameter must be"):
        randomized_svd(A, 0)
    with pytest.raises(ValueError, match="method must be one of"):
        partial_svd(A, 2, method="lanczos")
    with pytest.raises(ValueError, match="random_state"):
        as_generator(-1)
    with pytest.raises(ValueError, match="init must have shape"):
        randomized_svd(A, 2, init=np.ones((3, 2)))
    g = np.random.default_rng(0)
    assert as_generator(g) is g


def test_orthonormalize_spans_the_columns_even_when_ill_conditioned():
    from robustcore.linalg import orthonormalize
    rng = np.random.default_rng(9)
    Y = rng.standard_normal((500, 30)) * np.geomspace(1, 1e-7, 30)
    Q = orthonormalize(Y)
    assert Q.shape == (500, 30)
    np.testing.assert_allclose(Q.T @ Q, np.eye(30), atol=1e-12)
    # every column of Y lies in span(Q), to its own scale
    R = Y - Q @ (Q.T @ Y)
    assert np.all(np.linalg.norm(R, axis=0) <= 1e-8 * np.linalg.norm(Y, axis=0) + 1e-15)
    Z = orthonormalize(np.hstack([Y[:, :5], Y[:, :5] @ rng.standard_normal((5, 3))]))
    assert Z.shape[1] == 5   # dependent columns dropped


@pytest.mark.parametrize("s, lower", [(40, True), (200, True), (200, False)])
def test_eigh_above_matches_eigh_on_the_wanted_part(s, lower):
    rng = np.random.default_rng(7)
    B = rng.standard_normal((s + 30, s))
    G = B.T @ B
    w_all, V_all = np.linalg.eigh(G)
    thr = float(np.median(w_all))
    H = np.tril(G) if lower else np.triu(G)      # only the named triangle may be read
    w, E = linalg.eigh_above(np.asfortranarray(H), thr, lower=lower)
    keep = w_all > thr
    np.testing.assert_allclose(w, w_all[keep], rtol=1e-10)
    np.testing.assert_allclose(G @ E, E * w, atol=1e-9 * w_all[-1])
    np.testing.assert_allclose(E.T @ E, np.eye(w.size), atol=1e-10)
    assert linalg.eigh_above(G, 2 * w_all[-1])[1].shape == (s, 0)


@pytest.mark.parametrize("center", [True, False])
def test_covariance_eigh_matches_the_svd_of_the_centred_data(center, monkeypatch):
    """One blocked pass (several blocks here) gives the SVD's squared singular values and its
    right singular vectors, also for data far from the origin."""
    monkeypatch.setattr(linalg, "_COV_BLOCK_ENTRIES", 12 * 700)
    rng = np.random.default_rng(7)
    X = rng.standard_normal((3000, 12)) * np.linspace(5, 0.2, 12) + 40.0
    mean, w, V = linalg.covariance_eigh(X, center=center)
    Z = X - X.mean(axis=0) if center else X
    _, s, vt = np.linalg.svd(Z, full_matrices=False)
    np.testing.assert_allclose(mean, X.mean(axis=0) if center else 0.0, rtol=1e-13)
    np.testing.assert_allclose(w, s**2, rtol=1e-9)
    np.testing.assert_allclose(np.abs(V.T @ vt.T), np.eye(12), atol=1e-8)
    np.testing.assert_allclose(V.T @ V, np.eye(12), atol=1e-12)
    # a Fortran-ordered copy (blocks copied to C order) gives the same axes
    mean_f, w_f, V_f = linalg.covariance_eigh(np.asfortranarray(X), center=center)
    np.testing.assert_allclose(w_f, w, rtol=1e-9)
    np.testing.assert_allclose(np.abs(V_f.T @ V), np.eye(12), atol=1e-8)


def test_covariance_eigh_centres_a_constant_column_exactly():
    """The means are corrected by the centred blocks' sums: a constant column far from zero
    has no spread at all (X.mean alone leaves a few ulps, i.e. a spurious variance)."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((5000, 6))
    X[:, 2] = 1e6 + 0.1
    mean, G = linalg.centred_scatter(X)
    assert mean[2] == 1e6 + 0.1
    # (its row of the scatter matrix is rounding of the other columns' corrections only)
    top = np.diagonal(G).max()
    assert np.abs(G[2, :3]).max() < 1e-18 * top and np.abs(G[2:, 2]).max() < 1e-18 * top
    _, w, V = linalg.covariance_eigh(X)
    assert w[-1] < 1e-14 * w[0] and abs(V[2, -1]) == pytest.approx(1.0, abs=1e-12)
    bad = X.copy()
    bad[7, 4] = np.inf
    assert linalg.centred_scatter(bad)[1] is None
    with pytest.raises(ValueError, match="NaN, infinite"):
        linalg.covariance_eigh(bad)
