"""PCP warns when its decomposition separated nothing (issue 23): an empty low-rank part (rank
0, S = X) or a full-rank one. On real sparse binary data (a cut of ADBench's InternetAds in
resources/) and on planted data whose answer is known in closed form."""
from __future__ import annotations

import warnings

import numpy as np

import robustcore as rc
from robustcore._base import DegenerateFitWarning
from robustcore.datasets import resources_dir


def _internetads():
    with np.load(resources_dir() / "internetads-200.npz", allow_pickle=False) as z:
        return z["X"].astype(np.float64), z["y"].astype(bool)


def _fit(X, **kw):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = rc.PCP(center="none", random_state=0, **kw).fit(X)
    return est, [w for w in caught if issubclass(w.category, DegenerateFitWarning)]


def test_sparse_binary_data_with_defaults_warns_that_l_is_empty():
    X, _ = _internetads()
    est, caught = _fit(X)
    assert est.rank_ == 0 and est.converged_
    assert np.linalg.norm(est.sparse_ - X) <= 1e-6 * np.linalg.norm(X)      # S = X
    assert len(caught) == 1
    msg = str(caught[0].message)
    assert "rank 0" in msg and "S = X" in msg
    lam = 1 / np.sqrt(1555)
    assert f"lam = {lam:.3g}" in msg and f"lam={3 * lam:.3g}" in msg      # what to change
    assert "scale='standard'" in msg and "PCA" in msg


def test_the_suggested_lambda_gives_a_low_rank_part_and_no_warning():
    X, _ = _internetads()
    est, caught = _fit(X, lam=3 / np.sqrt(1555))
    assert est.rank_ > 0 and caught == []


def test_a_lambda_too_large_for_any_sparse_part_warns_full_rank():
    # lam above every entry's worth: the optimum is S = 0 and L = X, of full rank
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 8))
    est, caught = _fit(X, lam=10.0, scale="none")
    assert est.rank_ == 8 and np.count_nonzero(est.sparse_) == 0
    assert len(caught) == 1 and "full rank (8" in str(caught[0].message)
    assert "lam=3.33" in str(caught[0].message)


def test_a_planted_low_rank_plus_sparse_matrix_does_not_warn():
    rng = np.random.default_rng(1)
    L0 = rng.standard_normal((200, 3)) @ rng.standard_normal((3, 40))
    S0 = np.where(rng.random((200, 40)) < 0.05, 10.0 * rng.standard_normal((200, 40)), 0.0)
    est, caught = _fit(L0 + S0, scale="none")
    assert est.rank_ == 3 and caught == []


def test_all_zero_data_is_not_called_degenerate():
    est, caught = _fit(np.zeros((10, 4)))
    assert est.rank_ == 0 and caught == []


def test_a_fit_stopped_early_warns_only_that_it_did_not_converge():
    X, _ = _internetads()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rc.PCP(center="none", random_state=0, lam=3 / np.sqrt(1555), max_iter=1).fit(X)
    kinds = {w.category.__name__ for w in caught}
    assert "ConvergenceWarning" in kinds and "DegenerateFitWarning" not in kinds


def test_a_planted_rank_of_a_tenth_recovered_exactly_does_not_warn():
    # Near the rule's side that must stay quiet: rank 0.1 min(n, d), recovered exactly.
    rng = np.random.default_rng(3)
    n, r = 120, 12
    L0 = rng.standard_normal((n, r)) @ rng.standard_normal((r, n)) / np.sqrt(n)
    S0 = np.where(rng.random((n, n)) < 0.02, 10.0 * rng.standard_normal((n, n)), 0.0)
    est, caught = _fit(L0 + S0, scale="none")
    assert est.rank_ == r and np.linalg.norm(est.low_rank_ - L0) <= 1e-4 * np.linalg.norm(L0)
    assert caught == []


def test_an_l_far_from_low_rank_warns_with_its_rank_and_what_to_change():
    # Gaussian noise has no low-rank part: PCP's L takes over half of the directions.
    rng = np.random.default_rng(0)
    X = rng.standard_normal((240, 80))
    est, caught = _fit(X, scale="none")
    assert 0.25 * 80 < est.rank_ < 80
    assert len(caught) == 1
    msg = str(caught[0].message)
    lam = 1 / np.sqrt(240)
    assert f"L has rank {est.rank_} of 80: far from low-rank" in msg
    assert f"lam={lam / 3:.3g}" in msg and "scale=" in msg
    # ... and the run's warnings carry it to the window, the command line and the session
    from robustcore.datasets import Dataset
    from robustcore.methods import get_method
    res = get_method("pcp").run(Dataset(X=X, name="noise"), {"scale": "none"})
    assert any("far from low-rank" in w for w in res.warnings)


def test_the_rank_of_l_counts_singular_values_above_a_thousandth_of_xs_largest():
    """A planted rank 3 plus noise and 1 % gross rows: the inexact ALM leaves six or so more
    singular values in L at 1e-9 to 1e-4 of ||X||_2, which were reported as "L has rank 9 of 20:
    far from low-rank" (rank 7 at 1,000,000 rows). The rank counts those above RANK_TOL of X's
    largest singular value; L, S, the scores and every singular value stay as the solver made them."""
    from robustcore.subspace.pcp import RANK_TOL
    rng = np.random.default_rng(5)
    n, d = 20_000, 20
    X = rng.normal(size=(n, 3)) @ rng.normal(size=(3, d)) + 0.1 * rng.normal(size=(n, d))
    bad = rng.random(n) < 0.01
    X[bad] += 5 * rng.normal(size=(int(bad.sum()), d))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = rc.PCP(random_state=0).fit(X)
    assert est.rank_ == 3 and not [w for w in caught if issubclass(w.category, DegenerateFitWarning)]
    top = np.linalg.norm(X - est.center_, 2)   # X's largest singular value in the fit's units
    sv = est.singular_values_
    assert sv.size > 3 and est.history_["svp"][-1] == sv.size            # the residue is kept ...
    assert np.all(sv[:3] > 0.1 * top) and np.all(sv[3:] < 0.2 * RANK_TOL * top)   # ... and far under
    np.testing.assert_allclose(np.linalg.svd(est.low_rank_ - est.center_, compute_uv=False)[:sv.size], sv,
                               rtol=1e-6, atol=1e-9 * top)   # L itself: its values as reported
    assert np.linalg.norm(X - est.low_rank_ - est.sparse_) <= 1e-6 * np.linalg.norm(X)   # X = L + S


def test_the_rank_per_iteration_counts_as_the_final_rank_does():
    """The L + S view's "rank of L per iteration" and the progress lines read ``history_["rank"]``:
    it counts L's singular values above RANK_TOL of X's largest at every iteration, as ``rank_``
    does, so its last entry is the rank reported (it counted the solver's residue: a planted
    rank 3 ended at 10 per iteration against rank_ 3). The solver's own count of the values it
    kept is ``history_["svp"]``."""
    rng = np.random.default_rng(5)
    n, d = 20_000, 20
    X = rng.normal(size=(n, 3)) @ rng.normal(size=(3, d)) + 0.1 * rng.normal(size=(n, d))
    bad = rng.random(n) < 0.01
    X[bad] += 5 * rng.normal(size=(int(bad.sum()), d))
    est = rc.PCP(random_state=0).fit(X)
    h = est.history_
    assert est.rank_ == 3 and h["rank"][-1] == est.rank_
    assert h["svp"][-1] == est.singular_values_.size > est.rank_   # the residue, kept apart
    assert all(r <= s for r, s in zip(h["rank"], h["svp"]))
    assert len(h["svp"]) == len(h["rank"]) == est.n_iter_
