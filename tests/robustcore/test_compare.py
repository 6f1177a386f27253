"""robustcore.compare against closed forms and planted structure."""
import numpy as np
import pytest

from robustcore import compare
from robustcore.anomaly import ResidualScorer


def _rotated_pair(theta_deg, d=7, seed=0):
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    t = np.radians(theta_deg)
    A = Q[:, [0, 1]].T
    B = np.vstack([Q[:, 0], np.cos(t) * Q[:, 1] + np.sin(t) * Q[:, 2]])
    return A, B


@pytest.mark.parametrize("theta", [0.0, 12.5, 45.0, 90.0])
def test_principal_angles_of_a_planted_rotation(theta):
    A, B = _rotated_pair(theta)
    ang = compare.principal_angles(A, B)
    np.testing.assert_allclose(ang, [0.0, theta], atol=1e-6)
    # Independent of the basis chosen inside each subspace.
    R = np.array([[np.cos(1.0), -np.sin(1.0)], [np.sin(1.0), np.cos(1.0)]])
    np.testing.assert_allclose(compare.principal_angles(R @ A, B), ang, atol=1e-6)


def test_principal_angles_reject_different_spaces():
    with pytest.raises(ValueError, match="same space"):
        compare.principal_angles(np.eye(3)[:2], np.eye(4)[:2])


@pytest.mark.parametrize("n,d", [(40, 300), (300, 12)])  # both the Gram and the covariance routes
def test_lowrank_subspace_recovers_a_planted_subspace(n, d):
    rng = np.random.default_rng(3)
    U, _ = np.linalg.qr(rng.standard_normal((d, 3)))
    offset = rng.standard_normal(d)
    L = offset + rng.standard_normal((n, 3)) @ U.T
    out = compare.lowrank_subspace(L)
    assert out["components"].shape == (3, d)  # the numerical rank is found
    np.testing.assert_allclose(compare.principal_angles(out["components"], U.T), 0.0, atol=1e-5)
    # The projection reconstructs L exactly (L lies in its own affine subspace).
    np.testing.assert_allclose(out["mean"] + out["projection"] @ out["components"], L, atol=1e-9)
    np.testing.assert_allclose(out["components"] @ out["components"].T, np.eye(3), atol=1e-10)
    assert compare.lowrank_subspace(L, n_components=2)["components"].shape == (2, d)


def test_reconstruction_is_an_orthogonal_projection():
    rng = np.random.default_rng(5)
    C, _ = np.linalg.qr(rng.standard_normal((6, 2)))
    C = C.T
    m = rng.standard_normal(6)
    X = rng.standard_normal((20, 6))
    R = compare.reconstruct(X, C, m)
    np.testing.assert_allclose(compare.reconstruct(R, C, m), R, atol=1e-12)  # idempotent
    np.testing.assert_allclose((X - R) @ C.T, 0.0, atol=1e-12)  # residual orthogonal to the subspace
    contrib = compare.residual_contributions(X, C, m)
    err = compare.reconstruction_errors(X, C, m)
    np.testing.assert_allclose(contrib.sum(axis=1), err, rtol=1e-10)


def test_reconstruction_errors_equal_the_scorers_spe():
    rng = np.random.default_rng(7)
    X = rng.standard_normal((200, 5)) @ np.diag([5, 3, 1, 0.5, 0.2])
    sc = ResidualScorer(n_components=2).fit(X)
    np.testing.assert_allclose(compare.reconstruction_errors(X, sc.components_, sc.mean_), sc.spe(X), rtol=1e-9)


def test_robust_threshold_closed_form():
    s = np.array([1.0, 2.0, 3.0, 4.0, 100.0])
    # median 3, MAD = median(|s - 3|) = median(2, 1, 0, 1, 97) = 1
    assert compare.robust_threshold(s) == pytest.approx(3 + 3 * 1.4826)
    np.testing.assert_array_equal(compare.flags_above(s, compare.robust_threshold(s)), [0, 0, 0, 0, 1])
    assert compare.robust_threshold(np.zeros(10)) == 0.0
    with pytest.raises(ValueError, match="empty"):
        compare.robust_threshold([])


def test_plane_coordinates_of_points_in_the_plane():
    C = np.eye(4)[[1, 3]]
    m = np.array([1.0, 2.0, 3.0, 4.0])
    P = compare.component_plane(np.eye(4), 1, 3)
    np.testing.assert_array_equal(P, C)
    X = m + np.array([[2.0, -1.0]]) @ C
    np.testing.assert_allclose(compare.plane_coordinates(X, m, P), [[2.0, -1.0]])
