"""The automatic rank rule on planted subspaces, where the right answer is known."""
import numpy as np
import pytest

from robustcore.rank import rank_cap, scree_elbow


def _planted_spectrum(d, r, noise, seed, n=2000):
    rng = np.random.default_rng(seed)
    basis = np.linalg.qr(rng.normal(size=(d, r)))[0]
    signal = rng.normal(size=(n, r)) * np.sqrt(np.linspace(10.0, 4.0, r))
    X = signal @ basis.T + noise * rng.normal(size=(n, d))
    return np.linalg.eigvalsh(np.cov(X.T))


@pytest.mark.parametrize("d, r, noise", [(20, 1, 0.1), (20, 3, 0.1), (50, 5, 0.3), (50, 8, 0.05),
                                         (100, 10, 0.5), (10, 2, 0.2)])
def test_finds_the_planted_rank(d, r, noise):
    for seed in range(3):
        assert scree_elbow(_planted_spectrum(d, r, noise, seed)) == r


def test_wide_noise_spectrum():
    # d / n = 0.1: the noise eigenvalues spread over a factor ~4 (Marchenko-Pastur), so the log
    # scree is not flat after the signal and the chord's elbow sits a component late; the
    # sharpest drop next to it is the planted rank
    for seed in range(3):
        assert scree_elbow(_planted_spectrum(200, 12, 0.3, seed)) == 12


def test_exactly_low_rank_data_without_noise():
    # rounding-level eigenvalues past the rank must not create an elbow of their own
    lam = _planted_spectrum(30, 4, 0.0, 0)
    assert scree_elbow(lam) == 4


def test_an_exact_drop_after_a_noisy_spectrum_is_not_the_rank():
    # constant pixels give exact zeros after a long noisy spectrum (USPS ones, MNIST): the
    # elbow is searched in the spectrum before them
    s = np.r_[10.0, 9.0, 8.0, np.geomspace(0.5, 0.05, 40), 1e-12, 1e-13]
    assert scree_elbow(s * s) == 3


def test_cap_order_and_degenerate_spectra():
    lam = _planted_spectrum(50, 8, 0.05, 1)
    assert scree_elbow(lam, max_rank=3) == 3
    assert scree_elbow(np.random.default_rng(0).permutation(lam)) == 8
    assert scree_elbow([5.0, 1.0]) == 1
    assert scree_elbow([0.0, 0.0, 0.0]) == 1
    assert scree_elbow([]) == 1
    assert rank_cap(1000, 9) == 4 and rank_cap(3, 100) == 1 and rank_cap(1, 1) == 1



def test_a_collinear_column_does_not_make_a_table_exactly_low_rank():
    # one derived column (an exact zero eigenvalue) in a noisy 21-column table: the elbow rule
    # applies, not "every non-zero direction is signal"
    rng = np.random.default_rng(4)
    X = rng.standard_normal((2000, 20)) * np.r_[6.0, 5.0, np.full(18, 0.5)]
    X = np.c_[X, X[:, 0] + X[:, 1]]
    assert scree_elbow(np.linalg.eigvalsh(np.cov(X.T)), 10) == 2


# -- linear (uncentred) fits: the offset takes one direction --------------------------------------

def _affine_uncentred_spectrum(d, r, seed, n=1000, noise=0.05):
    """Eigenvalues of the normalised rows' second moments (what Coherence Pursuit with
    center="none" ranks) for data near an r-dim AFFINE subspace far from the origin."""
    rng = np.random.default_rng(seed)
    basis = np.linalg.qr(rng.normal(size=(d, r)))[0]
    X = 5 * rng.normal(size=d) + (2 * rng.normal(size=(n, r))) @ basis.T + noise * rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return np.linalg.eigvalsh(X.T @ X)


@pytest.mark.parametrize("r", [1, 2, 3, 5])
def test_linear_rank_counts_the_offset_and_the_affine_directions(r):
    from robustcore.rank import linear_rank
    for seed in range(3):
        lam = _affine_uncentred_spectrum(20, r, seed)
        assert linear_rank(lam) == r + 1


@pytest.mark.parametrize("r", [1, 2, 3])
def test_coherence_pursuit_without_centring_keeps_the_offset_and_the_affine_directions(r):
    # inliers near an r-dim affine subspace 5 units from the origin, 10 % outliers around it:
    # the elbow of the uncentred spectrum stopped at the offset (rank 1 for r = 1 and 2)
    from robustcore import CoherencePursuit
    rng = np.random.default_rng(0)
    for _ in range(3):
        U = np.linalg.qr(rng.standard_normal((20, r)))[0]
        m = 5 * rng.standard_normal(20)
        inl = m + (2 * rng.standard_normal((400, r))) @ U.T + 0.05 * rng.standard_normal((400, 20))
        X = np.vstack([inl, m + 3 * rng.standard_normal((40, 20))])
        est = CoherencePursuit().fit(X)
        assert est.n_components_ == r + 1
        # the fitted linear subspace contains the inliers' affine one: residuals at noise level
        E = (inl - m) - (inl - m) @ est.components_.T @ est.components_
        assert np.sqrt(np.mean(E * E)) < 0.3


def test_linear_rank_of_a_subspace_through_the_origin_is_its_rank():
    from robustcore.rank import linear_rank
    for d, r, noise in [(20, 3, 0.1), (50, 5, 0.3), (10, 2, 0.2)]:
        assert linear_rank(_planted_spectrum(d, r, noise, 0)) == r
    exact = np.r_[5.0, 3.0, 2.0, np.zeros(17)]
    assert linear_rank(exact) == 3
    assert linear_rank([4.0, 1.0, 0.5, 0.1], max_rank=1) == 1
    assert linear_rank([4.0]) == 1 and linear_rank([4.0, 0.0, 0.0]) == 1


def test_linear_rank_of_rows_that_are_all_the_same_is_the_offset_alone():
    """Identical rows: one direction (the offset), the rest rounding; counting the rounding as a
    second direction made Coherence Pursuit warn that its rank-1 selection spans too little."""
    from robustcore.rank import linear_rank
    X = np.tile(np.arange(1.0, 7.0), (500, 1))
    X += 1e-13 * np.random.default_rng(0).standard_normal(X.shape)
    lam = np.linalg.svd(X, compute_uv=False) ** 2
    assert linear_rank(lam, 3) == 1
