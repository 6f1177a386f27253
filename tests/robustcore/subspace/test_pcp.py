"""PCP against planted low-rank + sparse structure (Candès et al. 2011, Table I) and the contracts.

These tests are about the paper's formulation (entries measured from zero), so they fit with
center="none"; the centre is tested in test_pcp_center.py."""
import warnings

import numpy as np
import pytest

from robustcore import Cancelled, NotFittedError
from robustcore._base import ConvergenceWarning
from robustcore.subspace.pcp import PCP, svd_threshold
from tests.planted import low_rank_plus_sparse


def check_exact_recovery(est, L0, S0, max_iter=30):
    assert est.converged_
    assert est.n_iter_ <= max_iter
    assert est.rank_ == np.linalg.matrix_rank(L0)
    assert np.count_nonzero(est.sparse_) == np.count_nonzero(S0)
    assert np.array_equal(est.sparse_ != 0, S0 != 0)
    assert np.linalg.norm(est.low_rank_ - L0) / np.linalg.norm(L0) < 1e-5
    assert np.linalg.norm(est.sparse_ - S0) / np.linalg.norm(S0) < 1e-5
    assert est.history_["residual"][-1] < 1e-7
    # rank_ agrees with the dense L it describes
    assert np.linalg.matrix_rank(est.low_rank_, tol=1e-9 * np.linalg.norm(est.low_rank_, 2)) == est.rank_


def fits_with(X, option, values, record=None, **params):
    """One-thread PCP fits of X with the sweep's speed-up ``option`` (a field of
    robustcore.subspace._pcp_sweep.SweepOptions) set to each value in turn; each fit carries
    ``.record``, what the spy list ``record`` (if any) collected during it."""
    from robustcore.subspace._pcp_sweep import SweepOptions
    fits = []
    for value in values:
        if record is not None:
            record.clear()
        est = PCP(center="none", random_state=0, n_jobs=1, **params).fit(X, _sweep=SweepOptions(**{option: value}))
        est.record = None if record is None else list(record)
        fits.append(est)
    return fits


@pytest.mark.slow
@pytest.mark.parametrize("frac", [0.05, 0.10])
def test_table1_n500(frac):
    L0, S0 = low_rank_plus_sparse(500, 500, 25, frac, seed=1)
    est = PCP(center="none", random_state=0).fit(L0 + S0)
    check_exact_recovery(est, L0, S0)


@pytest.mark.slow
def test_table1_n1000():
    L0, S0 = low_rank_plus_sparse(1000, 1000, 50, 0.05, seed=2)
    est = PCP(center="none", random_state=0).fit(L0 + S0)
    check_exact_recovery(est, L0, S0)


@pytest.mark.slow
@pytest.mark.parametrize("svd", ["gram", "randomized", "full"])
def test_every_svd_route_recovers(svd):
    L0, S0 = low_rank_plus_sparse(300, 300, 10, 0.05, seed=3)
    est = PCP(center="none", svd=svd, random_state=0).fit(L0 + S0)
    check_exact_recovery(est, L0, S0)


@pytest.mark.parametrize("shape", [(600, 200), (200, 600)])
def test_rectangular_samples_as_rows(shape):
    m, n = shape
    L0, S0 = low_rank_plus_sparse(m, n, 8, 0.05, seed=4)
    est = PCP(center="none", random_state=0).fit(L0 + S0)
    assert est.lam_ == pytest.approx(1 / np.sqrt(600))
    check_exact_recovery(est, L0, S0, max_iter=40)
    assert est.low_rank_.shape == shape and est.sparse_.shape == shape
    assert est.n_features_in_ == n
    # the row space of L is the planted one
    V = est.components_.T
    _, _, Vt0 = np.linalg.svd(L0, full_matrices=False)
    V0 = Vt0[:8].T
    assert np.linalg.norm(V0 - V @ (V.T @ V0)) < 1e-5
    np.testing.assert_allclose(V.T @ V, np.eye(8), atol=1e-8)


def test_transposed_problem_gives_transposed_answer():
    L0, S0 = low_rank_plus_sparse(240, 160, 6, 0.05, seed=5)
    a = PCP(center="none", random_state=0).fit(L0 + S0)
    b = PCP(center="none", random_state=0).fit((L0 + S0).T)
    np.testing.assert_allclose(a.low_rank_, b.low_rank_.T, atol=1e-6)
    assert np.array_equal(a.sparse_ != 0, b.sparse_.T != 0)


def test_outlier_rows_get_the_largest_scores():
    rng = np.random.default_rng(6)
    n, d, r = 300, 40, 3
    X = rng.standard_normal((n, r)) @ rng.standard_normal((r, d))
    bad = rng.choice(n, 10, replace=False)
    X[bad[:, None], rng.choice(d, 6, replace=False)[None, :]] += 8.0 * rng.choice([-1, 1], (10, 6))
    for score in ("l1", "l2"):
        est = PCP(center="none", score_norm=score, random_state=0).fit(X)
        top = np.argsort(-est.sample_scores_)[:10]
        assert set(top) == set(bad)
        S = est.sparse_
        expect = np.abs(S).sum(1) if score == "l1" else np.sqrt((S ** 2).sum(1))
        np.testing.assert_allclose(est.sample_scores_, expect)


def test_history_and_attributes():
    L0, S0 = low_rank_plus_sparse(200, 150, 5, 0.05, seed=7)
    X = L0 + S0
    est = PCP(center="none", random_state=0).fit(X)
    h = est.history_
    lengths = {len(v) for v in h.values()}
    assert lengths == {est.n_iter_}
    assert {"residual", "rank", "nnz", "mu", "time"} <= set(h)
    assert h["rank"][-1] == est.rank_
    assert h["nnz"][-1] == np.count_nonzero(est.sparse_)
    # residual history is the real residual of the returned pair
    assert np.linalg.norm(X - est.low_rank_ - est.sparse_) / np.linalg.norm(X) == pytest.approx(
        h["residual"][-1], rel=1e-3, abs=1e-12)
    norm2 = np.linalg.norm(X, 2)
    assert est.mu_ == pytest.approx(1.25 / norm2, rel=1e-8)
    assert est.mu_final_ == pytest.approx(h["mu"][-1])
    np.testing.assert_allclose(np.diff(np.log(h["mu"])), np.log(1.5), rtol=1e-12)
    assert est.lam_ == pytest.approx(1 / np.sqrt(200))
    # the factored description of L matches the dense one
    U, s, Vt = np.linalg.svd(est.low_rank_, full_matrices=False)
    np.testing.assert_allclose(est.singular_values_, s[:est.rank_], rtol=1e-8)
    np.testing.assert_allclose(np.abs(est.components_ @ Vt[:est.rank_].T), np.eye(est.rank_), atol=1e-6)
    assert np.all(np.isfinite(est.low_rank_)) and np.all(np.isfinite(est.sparse_))
    np.testing.assert_array_equal(PCP(center="none", random_state=0).fit_transform(X), est.low_rank_)


def test_planted_pair_does_not_beat_the_solution():
    """The returned pair is feasible and its objective ||L||_* + lam ||S||_1 is not beaten by the
    planted pair (which is itself feasible), nor by L = X, S = 0 or L = 0, S = X."""
    L0, S0 = low_rank_plus_sparse(200, 200, 5, 0.05, seed=8)
    X = L0 + S0
    est = PCP(center="none", random_state=0, tol=1e-9).fit(X)
    lam = est.lam_

    def obj(L, S):
        return np.linalg.svd(L, compute_uv=False).sum() + lam * np.abs(S).sum()

    best = obj(est.low_rank_, est.sparse_)
    assert best <= obj(L0, S0) * (1 + 1e-7)
    assert best < obj(X, 0 * X) and best < obj(0 * X, X)
    assert np.linalg.norm(X - est.low_rank_ - est.sparse_) < 1e-8 * np.linalg.norm(X)


def test_progress_is_monotone_and_cancel_leaves_unfitted():
    L0, S0 = low_rank_plus_sparse(200, 200, 5, 0.05, seed=9)
    seen = []
    est = PCP(center="none", random_state=0).fit(L0 + S0, progress=lambda f, msg: seen.append((f, msg)))
    fr = [f for f, _ in seen]
    assert all(b >= a for a, b in zip(fr, fr[1:]))
    assert fr[-1] == 1.0 and 0.0 <= fr[0] <= 1.0
    assert any(msg.startswith("iter 3: residual") and "rank" in msg for _, msg in seen)

    def stop_at_5(f, msg):
        if msg.startswith("iter 5:"):
            return False
    with pytest.raises(Cancelled):
        est.fit(L0 + S0, progress=stop_at_5)
    with pytest.raises(AttributeError):
        _ = est.low_rank_
    assert not hasattr(est, "n_iter_")


def test_max_iter_warns_and_flags_not_converged():
    L0, S0 = low_rank_plus_sparse(100, 80, 3, 0.05, seed=10)
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        est = PCP(center="none", max_iter=2, random_state=0).fit(L0 + S0)
    assert est.converged_ is False and est.n_iter_ == 2
    assert len(est.history_["residual"]) == 2
    assert np.all(np.isfinite(est.low_rank_)) and np.all(np.isfinite(est.sparse_))


def test_zero_matrix_and_constant():
    est = PCP(center="none").fit(np.zeros((5, 4)))
    assert est.converged_ and est.rank_ == 0 and not est.sparse_.any() and not est.low_rank_.any()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = PCP(center="none", random_state=0).fit(np.full((30, 20), 3.0))
    np.testing.assert_allclose(est.low_rank_, 3.0, atol=1e-5)
    assert est.rank_ == 1


@pytest.mark.parametrize("kwargs, text", [
    (dict(lam=0.0), r"'lam' parameter of \w+ must be a number > 0"),
    (dict(lam=-1.0), r"'lam' parameter of \w+ must be"),
    (dict(tol=0.0), r"'tol' parameter of \w+ must be a number in (0, 1)"),
    (dict(tol=1.0), r"'tol' parameter of \w+ must be"),
    (dict(rho=1.0), r"'rho' parameter of \w+ must be a number > 1"),
    (dict(max_iter=0), r"'max_iter' parameter of \w+ must be an integer >= 1"),
    (dict(mu=0.0), r"'mu' parameter of \w+ must be"),
    (dict(svd="lanczos"), r"'svd' parameter of \w+ must be one of"),
    (dict(score_norm="max"), r"'score_norm' parameter of \w+ must be one of"),
    (dict(random_state=-3), "random_state"),
    (dict(n_jobs=0), r"'n_jobs' parameter of \w+ must be an integer >= 1"),
    (dict(n_jobs=1.5), r"'n_jobs' parameter of \w+ must be"),
])
def test_bad_parameters(kwargs, text):
    X = np.random.default_rng(0).standard_normal((10, 5))
    with pytest.raises(ValueError, match=text.replace("(", r"\(").replace(")", r"\)")):
        PCP(center="none", **kwargs).fit(X)


def test_bad_input():
    X = np.random.default_rng(0).standard_normal((10, 5))
    for bad, text in [(np.where(np.eye(10, 5) > 0, np.nan, X), "NaN"),
                      (np.where(np.eye(10, 5) > 0, np.inf, X), "infinite"),
                      (np.zeros((0, 5)), r"0 sample\(s\)"),
                      (X[:1], r"1 sample\(s\) .* minimum of 2"),
                      (X[:, 0], "Expected a 2-dimensional container|2D array")]:
        with pytest.raises(ValueError, match=text):
            PCP(center="none").fit(bad)
    with pytest.raises(NotFittedError):
        PCP(center="none").transform(X)


def test_generator_seed_and_declared_params():
    X = low_rank_plus_sparse(60, 50, 2, 0.05, seed=11)
    X = X[0] + X[1]
    est = PCP(center="none", random_state=np.random.default_rng(3)).fit(X)
    assert est.converged_
    names = [p.name for p in PCP.param_specs()]
    assert names == ["lam", "tol", "max_iter", "mu", "rho", "svd", "score_norm", "random_state", "n_jobs",
                     "scale", "center", "contamination"]
    assert all(p.help for p in PCP.param_specs())
    seed = next(p for p in PCP.param_specs() if p.name == "random_state")
    assert seed.parse("7") == 7


def test_svd_threshold_keeps_exactly_the_values_above_tau():
    rng = np.random.default_rng(12)
    m, n = 400, 300
    Ut, _ = np.linalg.qr(rng.standard_normal((m, n)))
    Vt, _ = np.linalg.qr(rng.standard_normal((n, n)))
    s = np.geomspace(100, 1e-3, n)
    A = (Ut * s) @ Vt.T
    tau = s[37] * 0.999  # 38 values above
    for method in ("gram", "randomized", "full", "auto"):
        # a too-small prediction must be grown, never truncating the threshold
        U, sv, V, _ = svd_threshold(A, tau, sv=5, method=method, random_state=0)
        assert sv.size == 38, method
        # a slowly decaying spectrum is the randomized route's worst case (it is warm-started
        # inside PCP, where it is accurate); the deterministic routes are exact
        rtol = 1e-3 if method in ("randomized", "auto") else 1e-9
        np.testing.assert_allclose(sv, s[:38], rtol=rtol)
        if rtol < 1e-6:
            np.testing.assert_allclose(np.abs(np.sum(V * Vt[:, :38].T, axis=1)), 1.0, atol=1e-8)
        np.testing.assert_allclose(U.T @ U, np.eye(38), atol=1e-8)


def test_all_zero_rows_and_columns_are_exact_zeros_and_change_nothing_else():
    """Blank lines (image borders) stay zero at every iteration, so they are dropped from the work:
    the answer must equal PCP on the reduced matrix with the full-shape lambda."""
    L0, S0 = low_rank_plus_sparse(150, 120, 4, 0.05, seed=13)
    X = L0 + S0
    X[:, :20] = 0.0
    X[10:25] = 0.0
    est = PCP(center="none", random_state=0).fit(X)
    assert est.low_rank_.shape == X.shape
    assert not est.low_rank_[:, :20].any() and not est.sparse_[:, :20].any()
    assert not est.low_rank_[10:25].any() and not est.sparse_[10:25].any()
    assert not est.components_[:, :20].any()
    rows = np.r_[0:10, 25:150]
    ref = PCP(center="none", lam=1 / np.sqrt(150), random_state=0).fit(X[rows][:, 20:])
    assert est.n_iter_ == ref.n_iter_ and est.rank_ == ref.rank_
    np.testing.assert_allclose(est.low_rank_[rows][:, 20:], ref.low_rank_, atol=1e-12)
    np.testing.assert_allclose(est.sparse_[rows][:, 20:], ref.sparse_, atol=1e-12)
    assert est.history_["residual"] == pytest.approx(ref.history_["residual"], rel=1e-9)


def test_seeds_agree_and_a_seed_repeats_exactly():
    L0, S0 = low_rank_plus_sparse(300, 300, 10, 0.05, seed=14)
    a = PCP(center="none", random_state=1, svd="randomized").fit(L0 + S0)
    b = PCP(center="none", random_state=2, svd="randomized").fit(L0 + S0)
    c = PCP(center="none", random_state=1, svd="randomized").fit(L0 + S0)
    assert np.linalg.norm(a.low_rank_ - b.low_rank_) / np.linalg.norm(a.low_rank_) < 1e-6
    np.testing.assert_array_equal(a.low_rank_, c.low_rank_)


def test_wide_input_with_blank_lines_matches_the_reduced_problem():
    """Wide data is solved transposed and blank lines are dropped; both must be invisible."""
    L0, S0 = low_rank_plus_sparse(120, 150, 4, 0.05, seed=15)
    X = L0 + S0
    X[:20] = 0.0
    X[:, 10:25] = 0.0
    est = PCP(center="none", random_state=0).fit(X)
    assert est.low_rank_.shape == X.shape and est.components_.shape == (est.rank_, 150)
    assert not est.low_rank_[:20].any() and not est.sparse_[:, 10:25].any()
    cols = np.r_[0:10, 25:150]
    ref = PCP(center="none", lam=1 / np.sqrt(150), random_state=0).fit(X[20:][:, cols])
    assert est.n_iter_ == ref.n_iter_ and est.rank_ == ref.rank_
    np.testing.assert_allclose(est.low_rank_[20:][:, cols], ref.low_rank_, atol=1e-12)
    np.testing.assert_array_equal(est.sparse_[20:][:, cols] != 0, ref.sparse_ != 0)
    # components_ are the right singular vectors of L (rows = samples)
    _, s, Vt = np.linalg.svd(est.low_rank_, full_matrices=False)
    np.testing.assert_allclose(est.singular_values_, s[:est.rank_], rtol=1e-8)
    np.testing.assert_allclose(np.abs(est.components_ @ Vt[:est.rank_].T), np.eye(est.rank_), atol=1e-6)


@pytest.mark.parametrize("shape", [(400, 90), (90, 400)])
def test_gram_route_with_sweep_accumulated_gram_matches_full_svd(shape):
    """The Gram matrix is accumulated block by block during the sweep; it must give the
    same iterates as LAPACK's full SVD of the same matrix."""
    L0, S0 = low_rank_plus_sparse(*shape, 5, 0.05, seed=16)
    a = PCP(center="none", svd="gram", random_state=0).fit(L0 + S0)
    b = PCP(center="none", svd="full", random_state=0).fit(L0 + S0)
    assert a.n_iter_ == b.n_iter_ and a.rank_ == b.rank_ == 5
    np.testing.assert_allclose(a.low_rank_, b.low_rank_, atol=1e-8)
    assert a.history_["rank"] == b.history_["rank"]


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of a few rows, so small test matrices are cut into many blocks and threads."""
    import robustcore.subspace._pcp_sweep as sweep
    import robustcore.subspace.pcp as pcp
    monkeypatch.setattr(sweep, "_BLOCK", 1 << 11)
    monkeypatch.setattr(pcp, "_THREADS_MIN_SIZE", 0)


def sweep_threads():
    import threading
    return [t for t in threading.enumerate() if t.name.startswith("pcp-sweep")]


@pytest.mark.slow
@pytest.mark.parametrize("svd", ["gram", "randomized"])
def test_threads_give_the_serial_iterates(small_blocks, svd):
    """Each thread sweeps its own rows and its share of the Gram matrix; the sums are only
    split differently, so the iterates match the one-thread solve to rounding (double
    rounding: the single-precision range finder is switched off here, its own rounding is
    larger; see the next test)."""
    from robustcore.subspace._pcp_sweep import SweepOptions
    double = SweepOptions(sketch32=False)
    L0, S0 = low_rank_plus_sparse(600, 120, 6, 0.05, seed=21)
    one = PCP(center="none", svd=svd, random_state=0, n_jobs=1).fit(L0 + S0, _sweep=double)
    three = PCP(center="none", svd=svd, random_state=0, n_jobs=3).fit(L0 + S0, _sweep=double)
    check_exact_recovery(three, L0, S0, max_iter=40)
    assert three.n_iter_ == one.n_iter_
    assert three.history_["rank"] == one.history_["rank"]
    assert three.history_["nnz"] == one.history_["nnz"]
    np.testing.assert_allclose(three.history_["residual"], one.history_["residual"], rtol=1e-6)
    np.testing.assert_allclose(three.low_rank_, one.low_rank_, atol=1e-10)
    assert not sweep_threads()


def test_threads_stop_when_a_fit_is_cancelled(small_blocks):
    L0, S0 = low_rank_plus_sparse(600, 120, 6, 0.05, seed=22)
    alive = []

    def stop_at_4(f, msg):
        alive.append(len(sweep_threads()))
        if msg.startswith("iter 4:"):
            return False
    est = PCP(center="none", random_state=0, n_jobs=2)
    with pytest.raises(Cancelled):
        est.fit(L0 + S0, progress=stop_at_4)
    assert max(alive) == 2          # the sweep really ran on two threads
    assert not sweep_threads() and not hasattr(est, "n_iter_")


def test_compiled_sweep_gives_the_numpy_iterates(monkeypatch):
    """The optional numba sweep does the numpy sweep's arithmetic in one pass: same ranks and
    support sizes at every iteration, L to rounding (only the residual's sum is reassociated)."""
    pytest.importorskip("numba")
    import robustcore.subspace._pcp_sweep as sweep
    from robustcore import _jit
    monkeypatch.setattr(sweep, "_JIT_MIN_SIZE", 0)
    assert _jit.kernels(sweep._JIT_MODULE) is not None      # loaded: every sweep is compiled
    L0, S0 = low_rank_plus_sparse(400, 300, 8, 0.05, seed=31)
    fits = {}
    for flag in ("0", "1"):
        monkeypatch.setenv("ROBUSTCORE_NO_JIT", flag)
        fits[flag] = PCP(center="none", random_state=0, n_jobs=1).fit(L0 + S0)
    jit, plain = fits["0"], fits["1"]
    check_exact_recovery(jit, L0, S0)
    assert jit.n_iter_ == plain.n_iter_
    assert jit.history_["rank"] == plain.history_["rank"]
    assert jit.history_["nnz"] == plain.history_["nnz"]
    np.testing.assert_allclose(jit.history_["residual"], plain.history_["residual"], rtol=1e-9)
    np.testing.assert_allclose(jit.low_rank_, plain.low_rank_, atol=1e-11)


@pytest.mark.slow
@pytest.mark.parametrize("shape", [(500, 500), (700, 300)])
def test_single_precision_range_finder_changes_rounding_only(shape, monkeypatch):
    """While the residual is large the randomized route finds its subspace with float32
    products; the projection and the last iterations stay in double precision, so the fit
    matches the all-double one: same iterations, ranks and support, L to ~1e-7."""
    L0, S0 = low_rank_plus_sparse(*shape, 12, 0.05, seed=32)
    single, double = fits_with(L0 + S0, "sketch32", (True, False), svd="randomized")
    check_exact_recovery(single, L0, S0)
    assert single.n_iter_ == double.n_iter_
    assert single.history_["rank"] == double.history_["rank"]
    assert single.history_["nnz"] == double.history_["nnz"]
    assert np.linalg.norm(single.low_rank_ - double.low_rank_) < 1e-6 * np.linalg.norm(double.low_rank_)


def test_auto_threads_on_a_busy_machine_give_the_one_thread_fit(small_blocks, monkeypatch):
    """n_jobs=None lets the governor run passes on one thread when no core is free; the fit is
    then the n_jobs=1 fit (up to the order of the Gram sums)."""
    import robustcore._threads as threads
    monkeypatch.setattr(threads, "busy_elsewhere", lambda: 8.0)
    L0, S0 = low_rank_plus_sparse(600, 120, 6, 0.05, seed=33)
    auto = PCP(center="none", random_state=0).fit(L0 + S0)
    one = PCP(center="none", random_state=0, n_jobs=1).fit(L0 + S0)
    assert auto.n_iter_ == one.n_iter_ and auto.history_["rank"] == one.history_["rank"]
    np.testing.assert_allclose(auto.low_rank_, one.low_rank_, atol=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("shape,rank,frac", [((600, 600), 30, 0.05), ((800, 500), 40, 0.10)])
def test_skipping_the_power_step_once_the_rank_settled_keeps_the_solution(shape, rank, frac, monkeypatch):
    """After the rank of L stayed the same for an iteration (or the last SVD saw no value
    between 0.6 tau and tau), the randomized route projects on the previous basis without a
    power step. The planted solution is recovered exactly and the objective equals the one
    of the fit that always takes the step (to 1e-7)."""
    import robustcore.linalg as linalg
    import robustcore.subspace._pcp_svt as svt
    L0, S0 = low_rank_plus_sparse(*shape, rank, frac, seed=41)
    powers = []

    def counting(*args, **kwargs):
        powers.append(kwargs["n_power_iter"])
        return linalg.randomized_svd(*args, **kwargs)

    monkeypatch.setattr(svt, "randomized_svd", counting)
    fast, slow = fits_with(L0 + S0, "settled_skip", (True, False), powers,
                           svd="randomized")
    fast.powers, slow.powers = fast.record, slow.record
    check_exact_recovery(fast, L0, S0)
    check_exact_recovery(slow, L0, S0)
    assert 0 in fast.powers and 0 not in slow.powers
    # the step was skipped only after an iteration whose rank equalled the previous one, or
    # once after each change of rank (when that iteration's SVD showed the gap)
    ranks = fast.history_["svp"]   # the thresholding's own count, what the skip follows
    assert fast.powers.count(0) <= len(ranks) - 1
    assert fast.powers.count(0) - sum(a == b for a, b in zip(ranks, ranks[1:])) <= sum(
        a != b for a, b in zip(ranks, ranks[1:]))

    def objective(est):
        return np.linalg.svd(est.low_rank_, compute_uv=False).sum() + est.lam_ * np.abs(est.sparse_).sum()

    assert abs(objective(fast) - objective(slow)) < 1e-7 * objective(slow)


@pytest.mark.slow
@pytest.mark.parametrize("svd,shape,rank", [("gram", (1200, 200), 8), ("randomized", (600, 500), 10)])
def test_single_precision_low_rank_products_change_rounding_only(svd, shape, rank, monkeypatch):
    """While the residual is large the sweep forms L from float32 copies of its factors (and
    of A on the Gram route); the last iterations are all double, so the fit equals the
    all-double one up to rounding: same iterations and ranks, exact recovery, L to 1e-6."""
    import robustcore.subspace._pcp_sweep as sweep
    L0, S0 = low_rank_plus_sparse(*shape, rank, 0.05, seed=43)
    used = []
    original = sweep._Sweeper._single_factors

    def spy(self):
        out = original(self)
        used.append(out is not None)
        return out

    monkeypatch.setattr(sweep._Sweeper, "_single_factors", spy)
    single, double = fits_with(L0 + S0, "single_early", (True, False), used, svd=svd)
    assert sum(single.record) >= 3 and sum(double.record) == 0
    check_exact_recovery(single, L0, S0)
    assert single.n_iter_ == double.n_iter_
    assert single.history_["rank"] == double.history_["rank"]
    assert np.linalg.norm(single.low_rank_ - double.low_rank_) < 1e-6 * np.linalg.norm(double.low_rank_)


def test_small_data_is_fitted_on_one_thread_unless_threads_are_asked_for(monkeypatch):
    """Threads did not pay below 2e6 entries on the 2-core machine (benchmarks/results_pcp.md):
    n_jobs=None then sweeps on one thread, while an explicit n_jobs is used as given."""
    import robustcore.subspace._pcp_sweep as sweep
    import robustcore.subspace.pcp as pcp
    jobs = []
    original = sweep._Sweeper.__init__

    def spy(self, *args, **kwargs):
        original(self, *args, **kwargs)
        jobs.append(self.rows.n_jobs)

    monkeypatch.setattr(sweep._Sweeper, "__init__", spy)
    monkeypatch.setattr(sweep, "_BLOCK", 1 << 11)          # enough blocks for two threads
    monkeypatch.setattr(pcp, "resolve_n_jobs", lambda n: 2 if n is None else n)
    L0, S0 = low_rank_plus_sparse(300, 200, 4, 0.05, seed=44)
    PCP(center="none", random_state=0).fit(L0 + S0)
    PCP(center="none", random_state=0, n_jobs=2).fit(L0 + S0)
    monkeypatch.setattr(pcp, "_THREADS_MIN_SIZE", 1000)
    PCP(center="none", random_state=0).fit(L0 + S0)
    assert jobs == [1, 2, 2]


@pytest.mark.slow
def test_rank_prediction_from_the_spectrum_does_not_overshoot_after_a_jump(monkeypatch):
    """When the randomized route's last Ritz value lies below 0.6 tau, the next iteration's
    size comes from the values it knows, not from the last step's growth: after the rank of
    L jumps to its final value, no later SVD is sized for many more triplets than that rank.
    The planted solution is still recovered exactly, with the objective of the growth rule."""
    import robustcore.linalg as linalg
    import robustcore.subspace._pcp_svt as svt
    from robustcore.subspace._pcp_sweep import SweepOptions
    L0, S0 = low_rank_plus_sparse(1000, 1000, 50, 0.05, seed=2)
    sizes = []

    def recording(A, k, **kwargs):
        sizes.append(k)
        return linalg.randomized_svd(A, k, **kwargs)

    monkeypatch.setattr(svt, "randomized_svd", recording)
    # (gap = 0: the spectrum is never known, the growth rule alone)
    new, old = fits_with(L0 + S0, "gap", (SweepOptions().gap, 0.0), sizes, svd="randomized")
    for est in (new, old):    # the SVDs of the iterations after the one whose rank reached 50
        est.later = est.record[-(est.n_iter_ - 1 - est.history_["svp"].index(50)):]
    check_exact_recovery(new, L0, S0)
    check_exact_recovery(old, L0, S0)
    assert max(new.later) <= 50 + 1 + svt._OVERSAMPLE
    assert max(old.later) > 50 + 1 + svt._OVERSAMPLE       # (the growth rule's overshoot)

    def objective(est):
        return np.linalg.svd(est.low_rank_, compute_uv=False).sum() + est.lam_ * np.abs(est.sparse_).sum()

    assert abs(objective(new) - objective(old)) < 1e-7 * objective(old)


def test_gram_from_the_float32_copy_only_while_its_error_cannot_show(monkeypatch):
    """On the Gram route the first sweeps accumulate A^T A from the float32 copy of A, and
    stop once (sigma_1 / tau)^2 exceeds 1e4 times the residual; the fit then equals the
    all-double one up to rounding: same iterations and ranks, exact recovery, L to 1e-6."""
    import robustcore.subspace._pcp_sweep as sweep
    L0, S0 = low_rank_plus_sparse(1200, 200, 8, 0.05, seed=44)
    flags = []
    original = sweep._Sweeper._gram_block

    def spy(self, Ab, b, part, g):
        flags.append((self._gram32, self._write32))
        return original(self, Ab, b, part, g)

    monkeypatch.setattr(sweep._Sweeper, "_gram_block", spy)
    single, double = fits_with(L0 + S0, "gram32", (True, False), flags, svd="gram")
    used = [f for f, _ in single.record]
    assert any(used) and not all(used) and not any(f for f, _ in double.record)
    first = used.index(False)
    assert first > 0 and not any(used[first:])             # the early sweeps only
    assert single.record[first][1]    # ended by the (sigma_1 / tau)^2 rule, not with float32 A
    check_exact_recovery(single, L0, S0)
    assert single.n_iter_ == double.n_iter_
    assert single.history_["rank"] == double.history_["rank"]
    assert np.linalg.norm(single.low_rank_ - double.low_rank_) < 1e-6 * np.linalg.norm(double.low_rank_)
