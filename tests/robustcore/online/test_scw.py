"""SCW-I / SCW-II: closed-form steps against a numerical minimiser of the SCW objectives, the fast
stream engines against a plain sequential loop, and learning behaviour on planted streams."""
from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize

from robustcore import Cancelled, NotFittedError
from robustcore.online import _scw_stream
from robustcore.online._scw_steps import binary_step, multiclass_step, phi_from_eta
from robustcore.online._scw_stream import run_stream
from robustcore.online.scw import DEFAULT_ETA, SCW


def _has_numba():
    try:
        import numba  # noqa: F401
        return True
    except ImportError:
        return False


@pytest.fixture(params=["numpy", pytest.param("jit", marks=pytest.mark.skipif(
    not _has_numba(), reason="numba (optional) is not installed"))])
def backend(request, monkeypatch):
    """Run a test on the numpy engines and, when numba is installed, on the compiled kernels."""
    if request.param == "numpy":
        monkeypatch.setattr(_scw_stream, "USE_JIT", False)
    else:
        monkeypatch.setattr(_scw_stream, "USE_JIT", True)
        monkeypatch.setattr(_scw_stream, "JIT_MIN_ROWS", 0)
        monkeypatch.setattr(_scw_stream, "_JIT_CHUNK", 97)    # several chunks per stream
        assert _scw_stream._jit_module() is not None
    return request.param


# -- numerical minimiser of the SCW objectives (methods.md section 3.1) ------------------------

def _kl(mu, S, mu0, S0):
    d = len(mu)
    S0i = np.linalg.inv(S0)
    dm = mu0 - mu
    return 0.5 * (np.linalg.slogdet(S0)[1] - np.linalg.slogdet(S)[1] + np.trace(S0i @ S)
                  + dm @ S0i @ dm - d)


def _unpack(z, d, k):
    mus = z[:k * d].reshape(k, d)
    L = np.zeros((d, d))
    L[np.tril_indices(d)] = z[k * d:k * d + d * (d + 1) // 2]
    L[np.diag_indices(d)] = np.exp(L[np.diag_indices(d)])
    return mus, L @ L.T


def _pack(mus, S):
    L = np.linalg.cholesky(S).copy()
    L[np.diag_indices(len(S))] = np.log(np.diag(L))
    return np.concatenate([np.ravel(mus), L[np.tril_indices(len(S))]])


def _loss(mus, S, x, sign, phi, scale):
    m = sum(sign[i] * mus[i] @ x for i in range(len(mus)))
    return phi * math.sqrt(scale * x @ S @ x) - m


def _objective(mus, S, mus0, S0, x, sign, phi, C, power, scale):
    f = sum(_kl(mus[i], S, mus0[i], S0) for i in range(len(mus)))
    return f + C * max(0.0, _loss(mus, S, x, sign, phi, scale)) ** power


def _numerical_minimiser(mus0, S0, x, sign, phi, C, power, scale):
    """Minimise KL + C*loss^power over (means, Cholesky of Sigma), from the old state.

    The linear loss has a kink where the unclipped SCW-I optimum sits, so SCW-I is solved in
    epigraph form (min KL + C t, t >= loss, t >= 0), which is smooth.
    """
    k, d = mus0.shape
    if power == 1:
        def f(z):
            mus, S = _unpack(z[:-1], d, k)
            return sum(_kl(mus[i], S, mus0[i], S0) for i in range(k)) + C * z[-1]

        cons = [{"type": "ineq", "fun": lambda z: z[-1] - _loss(*_unpack(z[:-1], d, k), x, sign, phi, scale)},
                {"type": "ineq", "fun": lambda z: z[-1]}]
        z0 = np.append(_pack(mus0, S0), max(0.0, _loss(mus0, S0, x, sign, phi, scale)))
        r = minimize(f, z0, method="SLSQP", constraints=cons, options={"ftol": 1e-14, "maxiter": 2000})
        return _unpack(r.x[:-1], d, k)
    r = minimize(lambda z: _objective(*_unpack(z, d, k), mus0, S0, x, sign, phi, C, power, scale),
                 _pack(mus0, S0), method="BFGS", options={"gtol": 1e-10})
    return _unpack(r.x, d, k)


def _random_problem(rng, d, k, scale, sign):
    A = rng.normal(size=(d, d))
    S0 = A @ A.T / d + 0.3 * np.eye(d)
    mus0 = rng.normal(size=(k, d)) * 0.5
    x = rng.normal(size=d)
    phi = phi_from_eta(rng.uniform(0.6, 0.95))
    if _loss(mus0, S0, x, sign, phi, scale) <= 0:
        mus0 = -mus0          # make the example violate the margin so an update happens
    return mus0, S0, x, phi


def _check_against_minimiser(mus0, S0, x, sign, phi, C, variant, scale, step):
    k = len(mus0)
    v = float(x @ S0 @ x)
    m = float(sum(sign[i] * mus0[i] @ x for i in range(k)))
    alpha, beta = step(m, v, phi, C, variant)
    g = S0 @ x
    mus = mus0 + alpha * sign[:, None] * g[None, :]
    S = S0 - beta * np.outer(g, g)
    power = 1 if variant == "I" else 2
    mus_n, S_n = _numerical_minimiser(mus0, S0, x, sign, phi, C, power, scale)
    f_closed = _objective(mus, S, mus0, S0, x, sign, phi, C, power, scale)
    f_num = _objective(mus_n, S_n, mus0, S0, x, sign, phi, C, power, scale)
    # The closed form is never worse than the optimiser, and lands on the same point.
    assert f_closed <= f_num + 1e-9
    assert f_num <= f_closed + 1e-7
    np.testing.assert_allclose(mus, mus_n, atol=1e-5)
    np.testing.assert_allclose(S, S_n, atol=1e-5)
    return alpha


def _regime_C(step, mus0, S0, x, sign, phi, regime):
    """A C that clips SCW-I's step (regime "clipped") or leaves it free."""
    v = float(x @ S0 @ x)
    m = float(sum(sign[i] * mus0[i] @ x for i in range(len(mus0))))
    alpha_cw, _ = step(m, v, phi, math.inf, "I")
    return 0.3 * alpha_cw if regime == "clipped" else 3.0 * alpha_cw + 0.5


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("d", [2, 3])
@pytest.mark.parametrize("variant", ["I", "II"])
@pytest.mark.parametrize("regime", ["clipped", "free"])
def test_binary_step_is_the_exact_minimiser(seed, d, variant, regime):
    rng = np.random.default_rng(1000 * seed + 10 * d + (variant == "II"))
    sign = np.array([rng.choice([-1.0, 1.0])])
    mus0, S0, x, phi = _random_problem(rng, d, 1, 1.0, sign)
    C = _regime_C(binary_step, mus0, S0, x, sign, phi, regime)
    alpha = _check_against_minimiser(mus0, S0, x, sign, phi, C, variant, 1.0, binary_step)
    if variant == "I":
        assert (alpha == C) == (regime == "clipped")


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("d", [2, 3])
@pytest.mark.parametrize("variant", ["I", "II"])
@pytest.mark.parametrize("regime", ["clipped", "free"])
def test_multiclass_step_is_the_exact_minimiser(seed, d, variant, regime):
    # Shared covariance, loss on the score difference (variance 2 v): both class means and the
    # one covariance are the variables.
    rng = np.random.default_rng(7000 + 1000 * seed + 10 * d + (variant == "II"))
    sign = np.array([1.0, -1.0])
    mus0, S0, x, phi = _random_problem(rng, d, 2, 2.0, sign)
    C = _regime_C(multiclass_step, mus0, S0, x, sign, phi, regime)
    alpha = _check_against_minimiser(mus0, S0, x, sign, phi, C, variant, 2.0, multiclass_step)
    if variant == "I":
        assert (alpha == C) == (regime == "clipped")


def test_numerical_check_rejects_the_circulating_scw2_typo():
    # Guard against a vacuous test: LIBOL's SCW2 gamma (v*2 for v^2, phi*2 for phi^2) must fail it.
    def typo_step(m, v, phi, C, variant):
        n = v + 0.5 / C
        gamma = math.sqrt(phi**4 * m * m * v * 2 + 4 * n * v * phi**2 * (n + v * phi * 2))
        alpha = max(0.0, (-(2 * m * n + phi**2 * m * v) + gamma) / (2 * (n * n + n * v * phi**2)))
        _, beta = binary_step(m, v, phi, math.inf, "I")
        avp = alpha * v * phi
        root_u = 2 * v / (avp + math.sqrt(avp * avp + 4 * v))
        return alpha, alpha * phi / (root_u + avp)

    rng = np.random.default_rng(3)
    failures = 0
    for _ in range(4):
        sign = np.array([1.0])
        mus0, S0, x, phi = _random_problem(rng, 3, 1, 1.0, sign)
        try:
            _check_against_minimiser(mus0, S0, x, sign, phi, 2.0, "II", 1.0, typo_step)
        except AssertionError:
            failures += 1
    assert failures >= 3


def _weights(est):
    """(k, D) weights over the features and, with an intercept, the constant feature 1 (last)."""
    W = np.atleast_2d(est.mean_)
    if est.fit_intercept:
        W = np.hstack([W, np.reshape(est.intercept_, (-1, 1))])
    return W


def _augmented(x, est):
    return np.append(x, 1.0) if est.fit_intercept else x


@pytest.mark.slow
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_estimator_transitions_are_exact_minimisers(fit_intercept, backend):
    # End to end: each partial_fit on one example moves (weights, covariance_) to the minimiser;
    # with an intercept the weights and x carry the constant feature 1.
    rng = np.random.default_rng(11)
    X = rng.normal(size=(6, 3))
    y = np.array([1, 0, 1, 1, 0, 0])
    for variant in ("I", "II"):
        est = SCW(variant=variant, C=0.8, eta=0.8, a=0.7, fit_intercept=fit_intercept)
        est.partial_fit(X[:1], y[:1], classes=[0, 1])
        assert est.covariance_.shape == ((4, 4) if fit_intercept else (3, 3))
        for i in range(1, len(X)):
            W0, S0 = _weights(est), est.covariance_.copy()
            x = _augmented(X[i], est)
            sign = np.array([1.0 if y[i] == 1 else -1.0])
            if _loss(W0, S0, x, sign, est.phi_, 1.0) <= 0:
                est.partial_fit(X[i:i + 1], y[i:i + 1])
                np.testing.assert_array_equal(_weights(est), W0)
                continue
            est.partial_fit(X[i:i + 1], y[i:i + 1])
            power = 1 if variant == "I" else 2
            mus_n, S_n = _numerical_minimiser(W0, S0, x, sign, est.phi_, 0.8, power, 1.0)
            np.testing.assert_allclose(_weights(est), mus_n, atol=1e-5)
            np.testing.assert_allclose(est.covariance_, S_n, atol=1e-5)
            np.testing.assert_allclose(est.decision_function(X[i:i + 1]), mus_n[0] @ x, atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_multiclass_estimator_transition_is_exact_minimiser(fit_intercept, backend):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(5, 3))
    y = np.array([0, 1, 2, 1, 0])
    est = SCW(variant="II", C=0.5, eta=0.7, fit_intercept=fit_intercept)
    est.partial_fit(X[:2], y[:2], classes=[0, 1, 2])
    for i in range(2, 5):
        M0, S0 = _weights(est), est.covariance_.copy()
        x = _augmented(X[i], est)
        r = y[i]
        scores = M0 @ x
        others = [c for c in range(3) if c != r]
        s = others[int(np.argmax(scores[others]))]
        pair = np.vstack([M0[r], M0[s]])
        sign = np.array([1.0, -1.0])
        est.partial_fit(X[i:i + 1], y[i:i + 1])
        if _loss(pair, S0, x, sign, est.phi_, 2.0) <= 0:
            np.testing.assert_array_equal(_weights(est), M0)
            continue
        mus_n, S_n = _numerical_minimiser(pair, S0, x, sign, est.phi_, 0.5, 2, 2.0)
        W = _weights(est)
        np.testing.assert_allclose(W[r], mus_n[0], atol=1e-5)
        np.testing.assert_allclose(W[s], mus_n[1], atol=1e-5)
        untouched = [c for c in range(3) if c not in (r, s)]
        np.testing.assert_array_equal(W[untouched], M0[untouched])
        np.testing.assert_allclose(est.covariance_, S_n, atol=1e-5)


# -- phi -------------------------------------------------------------------------------------

@pytest.mark.parametrize("eta, phi", [(0.55, 0.1257), (0.70, 0.5244), (0.75, 0.6745), (0.80, 0.8416),
                                      (0.90, 1.2816), (0.95, 1.6449)])
def test_phi_is_the_inverse_normal_cdf(eta, phi):
    assert phi_from_eta(eta) == pytest.approx(phi, abs=5e-5)
    X = np.array([[1.0, 0.0], [0.0, 1.0]])
    assert SCW(eta=eta).fit(X, [0, 1]).phi_ == pytest.approx(phi, abs=5e-5)


def test_eta_default_depends_on_variant():
    X = np.array([[1.0, 0.0], [0.0, 1.0]])
    assert SCW(variant="I").fit(X, [0, 1]).eta_ == DEFAULT_ETA["I"] == 0.75
    assert SCW(variant="II").fit(X, [0, 1]).eta_ == DEFAULT_ETA["II"] == 0.90


# -- the stream engines against a plain sequential loop ----------------------------------------

def _reference_pass(X, codes, mean, cov, phi, C, variant, multiclass):
    """The textbook loop, one example at a time (full or diagonal covariance)."""
    mean = mean.copy()
    cov = cov.copy()
    scale = 2.0 if multiclass else 1.0
    step = multiclass_step if multiclass else binary_step
    scores, updated = [], []
    for x, c in zip(X, codes):
        q = mean @ x
        scores.append(q.copy())
        g = cov @ x if cov.ndim == 2 else cov * x
        v = float(x @ g)
        if multiclass:
            r = int(c)
            other = q.copy()
            other[r] = -np.inf
            s = int(np.argmax(other))
            m = q[r] - q[s]
        else:
            m = c * q[0]
        if v <= 0 or phi * math.sqrt(scale * v) - m <= 0:
            updated.append(False)
            continue
        alpha, beta = step(float(m), v, phi, C, variant)
        if multiclass:
            mean[r] += alpha * g
            mean[s] -= alpha * g
        else:
            mean[0] += alpha * c * g
        if cov.ndim == 2:
            cov -= beta * np.outer(g, g)
        else:
            cov -= beta * g * g
        updated.append(True)
    return mean, cov, np.array(scores), np.array(updated)


def _stream(rng, n, d, k, zero_rows=()):
    X = rng.normal(size=(n, d))
    X[list(zero_rows)] = 0.0
    if k == 2:
        w = rng.normal(size=d)
        codes = np.sign(X @ w + 0.5 * rng.normal(size=n))
        codes[codes == 0] = 1.0
    else:
        W = rng.normal(size=(k, d))
        codes = np.argmax(X @ W.T + 0.5 * rng.normal(size=(n, k)), axis=1)
    return X, codes


@pytest.mark.slow
@pytest.mark.parametrize("covariance", ["full", "diagonal"])
@pytest.mark.parametrize("k", [2, 4])
@pytest.mark.parametrize("variant", ["I", "II"])
@pytest.mark.parametrize("intercept", [0.0, 1.0])
def test_fast_engine_equals_sequential_loop(covariance, k, variant, intercept, backend, monkeypatch):
    # With an intercept the reference loop runs on X with the constant column written out; the
    # engines append it a chunk at a time (several chunks here).
    monkeypatch.setattr(_scw_stream, "_INTERCEPT_CHUNK", 256)
    rng = np.random.default_rng(42 + k)
    n, d = 700, 6
    X, codes = _stream(rng, n, d, k, zero_rows=(0, 3, 250))
    multi = k > 2
    kk = k if multi else 1
    D = d + (intercept != 0)
    mean0 = np.zeros((kk, D))
    cov0 = 0.5 * np.eye(D) if covariance == "full" else np.full(D, 0.5)
    phi = phi_from_eta(0.8)
    Xref = np.hstack([X, np.full((n, 1), intercept)]) if intercept else X
    ref_mean, ref_cov, ref_scores, ref_upd = _reference_pass(Xref, codes, mean0, cov0, phi, 1.3, variant, multi)
    mean, cov = mean0.copy(), cov0.copy()
    from robustcore._progress import Reporter
    res = run_stream(X, codes, mean, cov, phi=phi, C=1.3, variant=variant, multiclass=multi,
                     rep=Reporter(None), intercept=intercept)
    np.testing.assert_array_equal(res.updated, ref_upd)
    np.testing.assert_allclose(res.scores, ref_scores, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(mean, ref_mean, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(cov, ref_cov, rtol=1e-9, atol=1e-12)
    # all-zero rows: skipped without an intercept, a loss like any other with one (v > 0)
    assert res.updated[[0, 3, 250]].any() == bool(intercept)
    assert 0.05 < ref_upd.mean() < 0.95     # a mix of updated and skipped rows


@pytest.mark.slow
@pytest.mark.parametrize("k", [2, 3])
def test_csr_equals_dense_for_diagonal(k, backend):
    rng = np.random.default_rng(9)
    n, d = 600, 40
    X = sp.random(n, d, density=0.15, format="csr", random_state=np.random.RandomState(1))
    X = X.toarray()
    X[[5, 17]] = 0.0
    y = rng.integers(0, k, size=n)
    dense = SCW(covariance="diagonal", random_state=0).fit(X, y)
    csr = SCW(covariance="diagonal", random_state=0).fit(sp.csr_matrix(X), y)
    np.testing.assert_allclose(csr.mean_, dense.mean_, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(csr.intercept_, dense.intercept_, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(csr.covariance_diag_, dense.covariance_diag_, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(csr.history_["updates"], dense.history_["updates"])
    np.testing.assert_allclose(csr.history_["mistake_rate"], dense.history_["mistake_rate"])
    np.testing.assert_array_equal(csr.predict(sp.csr_matrix(X)), dense.predict(X))


def test_sparse_waves_respect_every_shared_column():
    X = sp.random(400, 300, density=0.01, format="csr", random_state=np.random.RandomState(3))
    wave, rows = _scw_stream._sparse_waves(X.indptr, X.indices, 50, 390)
    sub = X[50:390]
    np.testing.assert_array_equal(rows, np.repeat(np.arange(340), np.diff(sub.indptr)))
    assert wave.max() >= 2
    supports = [set(sub[i].indices) for i in range(340)]
    for r in range(340):
        deps = [q for q in range(r) if supports[q] & supports[r]]
        # after every row it shares a column with, and as early as that allows
        assert wave[r] == (max(wave[q] for q in deps) + 1 if deps else 0)


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["I", "II"])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_sparse_high_dimensional_stream_equals_sequential_loop(variant, fit_intercept, backend):
    # Few non-zeros in many columns: long runs of support-disjoint rows, processed together
    # (without an intercept; the intercept's column is in every row, so then row by row).
    rng = np.random.default_rng(21)
    n, d = 900, 3000
    X = sp.random(n, d, density=0.002, format="csr", random_state=np.random.RandomState(4),
                  data_rvs=rng.standard_normal)
    w = rng.normal(size=d)
    codes = np.sign(X @ w + 0.1 * rng.normal(size=n))
    codes[codes == 0] = 1.0
    phi = phi_from_eta(0.7)
    Xref = np.hstack([X.toarray(), np.ones((n, 1))]) if fit_intercept else X.toarray()
    D = Xref.shape[1]
    ref_mean, ref_cov, ref_scores, ref_upd = _reference_pass(Xref, codes, np.zeros((1, D)),
                                                             np.full(D, 2.0), phi, 0.6, variant, False)
    est = SCW(variant=variant, covariance="diagonal", eta=0.7, C=0.6, a=2.0, shuffle=False,
              fit_intercept=fit_intercept).fit(X, codes)
    np.testing.assert_allclose(_weights(est)[0], ref_mean[0], rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(est.covariance_diag_, ref_cov, rtol=1e-10, atol=1e-13)
    np.testing.assert_array_equal(np.diff(est.history_["updates"], prepend=0).astype(bool), ref_upd)
    assert ref_upd.sum() > 100


def test_sparse_stream_mixing_waves_and_row_by_row_equals_sequential_loop(monkeypatch):
    # Chunks with a frequent column go row by row, the others in waves; one fit uses both.
    monkeypatch.setattr(_scw_stream, "USE_JIT", False)
    monkeypatch.setattr(_scw_stream, "_SPARSE_CHUNK", 200)
    rng = np.random.default_rng(22)
    n, d = 800, 2000
    X = sp.random(n, d, density=0.002, format="lil", random_state=np.random.RandomState(5),
                  data_rvs=rng.standard_normal)
    X[200:400, 7] = 1.0                     # a column present in every row of the second chunk
    X = X.tocsr()
    assert _scw_stream._sparse_waves(X.indptr, X.indices, 200, 400)[0] is None
    assert _scw_stream._sparse_waves(X.indptr, X.indices, 0, 200)[0] is not None
    codes = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    phi = phi_from_eta(0.75)
    ref_mean, ref_cov, _, ref_upd = _reference_pass(X.toarray(), codes, np.zeros((1, d)), np.ones(d),
                                                    phi, 1.0, "I", False)
    est = SCW(covariance="diagonal", shuffle=False, fit_intercept=False).fit(X, codes)
    np.testing.assert_allclose(est.mean_, ref_mean[0], rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(est.covariance_diag_, ref_cov, rtol=1e-10, atol=1e-13)
    assert est.history_["updates"][-1] == ref_upd.sum()


def test_step_array_equals_scalar_steps():
    from robustcore.online._scw_steps import binary_step_array
    rng = np.random.default_rng(2)
    m = rng.normal(size=50) * 2
    v = rng.random(50) * 3 + 1e-3
    for squared, variant in ((False, "I"), (True, "II")):
        al, be = binary_step_array(m, v, 0.9, 0.7, squared)
        ref = np.array([binary_step(mi, vi, 0.9, 0.7, variant) for mi, vi in zip(m, v)])
        np.testing.assert_allclose(al, ref[:, 0], rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(be, ref[:, 1], rtol=1e-13, atol=1e-15)


def test_csr_input_is_not_densified(monkeypatch):
    # The diagonal engine must never call toarray on the stream.
    X = sp.random(300, 5000, density=0.002, format="csr", random_state=np.random.RandomState(2))
    y = np.arange(300) % 2
    called = []
    monkeypatch.setattr(_scw_stream, "_rows_dense", lambda *a: called.append(1) or a[0][a[1]:a[2]].toarray())
    orig = sp.csr_matrix.toarray

    def spy(self, *a, **kw):
        called.append(self.shape)
        return orig(self, *a, **kw)

    monkeypatch.setattr(sp.csr_matrix, "toarray", spy)
    SCW(covariance="diagonal").fit(X, y)
    assert called == []


def test_covariance_stays_positive_definite_over_a_stream(backend):
    rng = np.random.default_rng(0)
    X, codes = _stream(rng, 3000, 8, 2)
    X[::7] *= 50.0                       # large-norm examples make beta*v approach 1
    y = (codes > 0).astype(int)
    for variant in ("I", "II"):
        est = SCW(variant=variant, C=10.0, eta=0.95).fit(X, y)
        assert np.all(np.linalg.eigvalsh(est.covariance_) > 0)
        np.testing.assert_array_equal(est.covariance_, est.covariance_.T)
        diag = SCW(variant=variant, C=10.0, eta=0.95, covariance="diagonal").fit(X, y)
        assert np.all(diag.covariance_diag_ > 0)
        assert np.all(diag.covariance_diag_ <= 1.0)
        assert np.all(np.isfinite(est.mean_)) and np.all(np.isfinite(diag.mean_))


def test_all_zero_example_is_skipped_without_intercept(backend):
    rng = np.random.default_rng(4)
    X = rng.normal(size=(20, 4))
    y = rng.integers(0, 2, size=20)
    for cov in ("full", "diagonal"):
        est = SCW(covariance=cov, fit_intercept=False).fit(X, y)
        mean, diag, upd = est.mean_.copy(), est.covariance_diag_.copy(), est.history_["updates"][-1]
        est.partial_fit(np.zeros((3, 4)), [0, 1, 1])
        np.testing.assert_array_equal(est.mean_, mean)
        np.testing.assert_array_equal(est.covariance_diag_, diag)
        assert est.history_["updates"][-1] == upd
        assert len(est.history_["updates"]) == 23
        assert np.all(est.history_["loss"][-3:] == 0.0)


# -- fit / partial_fit behaviour --------------------------------------------------------------

@pytest.mark.parametrize("covariance", ["full", "diagonal"])
@pytest.mark.parametrize("k", [2, 3])
def test_partial_fit_in_chunks_equals_fit(covariance, k, backend):
    rng = np.random.default_rng(8)
    X, y = _stream(rng, 500, 5, k)
    full = SCW(covariance=covariance, shuffle=False).fit(X, y)
    classes = np.unique(y)
    part = SCW(covariance=covariance)
    for a, b in [(0, 1), (1, 130), (130, 131), (131, 500)]:
        part.partial_fit(X[a:b], y[a:b], classes=classes if a == 0 else None)
    np.testing.assert_allclose(part.mean_, full.mean_, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(part.intercept_, full.intercept_, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(part.covariance_diag_, full.covariance_diag_, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(part.class_counts_, np.bincount(np.unique(y, return_inverse=True)[1]))
    for key in ("mistake_rate", "updates", "loss", "mistake"):
        np.testing.assert_allclose(part.history_[key], full.history_[key], rtol=1e-9, atol=1e-12)
    assert part.n_samples_seen_ == 500


def test_history_counts_online_mistakes_and_updates(backend):
    rng = np.random.default_rng(6)
    X, codes = _stream(rng, 400, 5, 2)
    y = np.where(codes > 0, "yes", "no")
    est = SCW(shuffle=False).fit(X, y)
    h = est.history_
    assert set(h) >= {"mistake_rate", "updates", "loss"}
    assert all(len(v) == 400 for v in h.values())
    # Recompute the online predictions with the reference loop (X with the intercept's constant
    # column written out): scores before each update. The first score is exactly 0 with nothing
    # seen yet: the lower class, "no"; no later score is exactly 0.
    Xa = np.hstack([X, np.ones((400, 1))])
    _, _, scores, upd = _reference_pass(Xa, np.where(y == "yes", 1.0, -1.0), np.zeros((1, 6)), np.eye(6),
                                        est.phi_, 1.0, "I", False)
    assert scores[0, 0] == 0.0 and np.all(scores[1:, 0] != 0.0)
    pred = np.where(scores[:, 0] > 0, "yes", "no")
    np.testing.assert_allclose(h["mistake_rate"], np.cumsum(pred != y) / np.arange(1, 401))
    np.testing.assert_array_equal(h["updates"], np.cumsum(upd))
    assert list(est.classes_) == ["no", "yes"]
    assert est.mean_.shape == (5,) and est.covariance_.shape == (6, 6)
    assert isinstance(est.intercept_, float)
    assert set(est.predict(X)) <= {"yes", "no"}
    # Every mistake is an update (a wrong sign means a positive loss).
    assert np.all(upd[h["mistake"]])


def test_multiclass_shapes_and_learning():
    rng = np.random.default_rng(10)
    X, y = _stream(rng, 3000, 10, 4)
    est = SCW(variant="I", random_state=0).fit(X, y)
    assert est.mean_.shape == (4, 10) and est.covariance_.shape == (11, 11)
    assert est.intercept_.shape == (4,)
    assert est.decision_function(X).shape == (3000, 4)
    assert est.score(X, y) > 0.8
    assert est.history_["mistake_rate"][-1] < 0.35


def test_ovr_equals_independent_binary_models():
    rng = np.random.default_rng(12)
    X, y = _stream(rng, 400, 6, 3)
    for cov in ("full", "diagonal"):
        ovr = SCW(multiclass="ovr", covariance=cov, variant="II", shuffle=False).fit(X, y)
        for c in range(3):
            b = SCW(covariance=cov, variant="II", shuffle=False).fit(X, (y == c).astype(int))
            np.testing.assert_allclose(ovr.mean_[c], b.mean_, rtol=1e-12)
            np.testing.assert_allclose(ovr.intercept_[c], b.intercept_, rtol=1e-12)
            np.testing.assert_allclose(ovr.covariance_diag_[c], b.covariance_diag_, rtol=1e-12)
        scores = ovr.decision_function(X)
        np.testing.assert_array_equal(ovr.predict(X), np.argmax(scores, axis=1))


def test_shuffle_is_reproducible_and_records_order():
    rng = np.random.default_rng(13)
    X, y = _stream(rng, 200, 4, 2)
    a = SCW(shuffle=True, random_state=3).fit(X, y)
    b = SCW(shuffle=True, random_state=np.random.default_rng(3)).fit(X, y)
    np.testing.assert_array_equal(a.mean_, b.mean_)
    assert sorted(a.order_) == list(range(200)) and list(a.order_) != list(range(200))
    c = SCW(shuffle=False).fit(X[a.order_], y[a.order_])
    np.testing.assert_allclose(a.mean_, c.mean_)
    assert list(SCW(shuffle=False).fit(X, y).order_) == list(range(200))


def test_progress_and_cancel_leave_estimator_unfitted(backend):
    rng = np.random.default_rng(14)
    X, y = _stream(rng, 5000, 5, 2)
    seen = []
    SCW().fit(X, y, progress=lambda f, msg: seen.append(f))
    assert len(seen) >= 4 and seen == sorted(seen) and seen[-1] == 1.0
    for cov in ("full", "diagonal"):
        est = SCW(covariance=cov)
        calls = []

        def stop(f, msg):
            calls.append(f)
            return False if len(calls) > 2 else None

        with pytest.raises(Cancelled):
            est.fit(X, y, progress=stop)
        with pytest.raises(NotFittedError):
            est.predict(X)
        assert not hasattr(est, "mean_")
    # A cancelled partial_fit keeps the previous state untouched.
    est = SCW().fit(X[:100], y[:100])
    mean = est.mean_.copy()
    with pytest.raises(Cancelled):
        est.partial_fit(X, y, progress=lambda f, m: False)
    np.testing.assert_array_equal(est.mean_, mean)
    assert est.n_samples_seen_ == 100


def test_sparse_input_csr_full_covariance_matches_dense():
    rng = np.random.default_rng(15)
    X = rng.normal(size=(300, 5)) * (rng.random((300, 5)) < 0.4)
    y = rng.integers(0, 2, size=300)
    a = SCW(random_state=1).fit(sp.csr_matrix(X), y)
    b = SCW(random_state=1).fit(X, y)
    np.testing.assert_allclose(a.mean_, b.mean_, rtol=1e-10)
    np.testing.assert_allclose(a.predict_proba(sp.csr_matrix(X)), b.predict_proba(X), rtol=1e-10)


# -- learning quality: SCW-I against CW and PA-I on the same stream ----------------------------

def _pa1_mistake_rate(X, y, C=1.0):
    w = np.zeros(X.shape[1])
    mistakes = 0
    for x, t in zip(X, y):
        f = w @ x
        mistakes += (1.0 if f >= 0 else -1.0) != t
        loss = max(0.0, 1.0 - t * f)
        if loss > 0:
            w += min(C, loss / (x @ x)) * t * x
    return mistakes / len(y)


@pytest.mark.slow
def test_scw1_makes_fewer_online_mistakes_than_cw_and_pa1(backend):
    from robustcore._progress import Reporter
    rates = {"scw": [], "cw": [], "pa": []}
    for seed in range(3):
        rng = np.random.default_rng(100 + seed)
        n, d = 5000, 20
        X = rng.normal(size=(n, d))
        w = rng.normal(size=d)
        y = np.sign(X @ w)
        y[rng.random(n) < 0.10] *= -1            # 10 % label noise
        est = SCW(variant="I", shuffle=False, fit_intercept=False).fit(X, y)
        rates["scw"].append(est.history_["mistake_rate"][-1])
        mean, cov = np.zeros((1, d)), np.eye(d)
        res = run_stream(X, y, mean, cov, phi=est.phi_, C=math.inf, variant="I", multiclass=False,
                         rep=Reporter(None))
        rates["cw"].append(np.mean((np.where(res.scores[:, 0] >= 0, 1.0, -1.0)) != y))
        rates["pa"].append(_pa1_mistake_rate(X, y))
    scw, cw, pa = (np.mean(rates[k]) for k in ("scw", "cw", "pa"))
    assert scw < cw
    assert scw < pa
    assert scw < 0.2          # near the 10 % noise floor, far from chance


# -- bad input --------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, match", [
    ({"eta": 0.5}, r"'eta' parameter of \w+ must be a number in \(0.5, 1\).*Got 0.5"),
    ({"eta": 1.0}, r"'eta' parameter of \w+ must be .*Got 1"),
    ({"eta": 0.3}, r"'eta' parameter of \w+ must be .*Got 0.3"),
    ({"C": 0.0}, r"'C' parameter of \w+ must be a number > 0.*Got 0"),
    ({"C": -1.0}, r"'C' parameter of \w+ must be a number > 0.*Got -1"),
    ({"a": 0.0}, r"'a' parameter of \w+ must be a number > 0"),
    ({"variant": "III"}, r"'variant' parameter of \w+ must be one of 'I', 'II'.*Got 'III'"),
    ({"covariance": "sparse"}, r"'covariance' parameter of \w+ must be one of"),
    ({"multiclass": "ovo"}, r"'multiclass' parameter of \w+ must be one of"),
    ({"random_state": "x"}, r"'random_state' parameter of \w+ must be"),
])
def test_bad_parameters(kwargs, match):
    X = np.eye(3)
    with pytest.raises(ValueError, match=match):
        SCW(**kwargs).fit(X, [0, 1, 1])


def test_bad_data():
    X = np.random.default_rng(0).normal(size=(10, 3))
    y = np.arange(10) % 2
    with pytest.raises(ValueError, match=r"1 sample\(s\) .* minimum of 2"):
        SCW().fit(X[:1], y[:1])
    with pytest.raises(ValueError, match=r"1 feature\(s\) .* minimum of 2"):
        SCW().fit(X[:, :1], y)
    with pytest.raises(ValueError,
                       match=r"y must contain labels of at least 2 distinct classes; got only the class 0.0"):
        SCW().fit(X, np.zeros(10))
    Xn = X.copy()
    Xn[2, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        SCW().fit(Xn, y)
    Xn[2, 1] = np.inf
    with pytest.raises(ValueError, match="infinite"):
        SCW(covariance="diagonal").fit(sp.csr_matrix(Xn), y)
    with pytest.raises(ValueError, match="one label per sample"):
        SCW().fit(X, y[:5])
    with pytest.raises(ValueError, match="'classes' parameter must be"):
        SCW().partial_fit(X, y)
    with pytest.raises(ValueError, match="'classes' parameter must be at least 2"):
        SCW().partial_fit(X, y, classes=[1])
    est = SCW().partial_fit(X, y, classes=[0, 1])
    with pytest.raises(ValueError, match=r"not among the classes.*7"):
        est.partial_fit(X[:2], [0, 7])
    with pytest.raises(ValueError, match="X has 4 features, but SCW is expecting 3"):
        est.partial_fit(np.ones((2, 4)), [0, 1])
    with pytest.raises(ValueError, match="X has 2 features, but SCW is expecting 3"):
        est.predict(np.ones((2, 2)))
    with pytest.raises(ValueError, match="'classes' parameter must be the classes of the first call"):
        est.partial_fit(X[:2], [0, 1], classes=[0, 1, 2])
    with pytest.raises(NotFittedError):
        SCW().decision_function(X)


def test_params_declared_once_with_help():
    names = [p.name for p in SCW.param_specs()]
    assert names == ["variant", "C", "eta", "covariance", "a", "multiclass", "fit_intercept", "shuffle",
                     "random_state"]
    assert all(p.help for p in SCW.param_specs())
    est = SCW(variant="II", C=2.0)
    assert est.get_params()["C"] == 2.0 and est.get_params()["eta"] is None


def test_partial_fit_one_example_at_a_time_keeps_earlier_history():
    rng = np.random.default_rng(31)
    X, y = _stream(rng, 300, 4, 2)
    est = SCW()
    snapshots = []
    for i in range(300):
        est.partial_fit(X[i:i + 1], y[i:i + 1], classes=[-1.0, 1.0] if i == 0 else None)
        if i in (10, 150):
            snapshots.append({k: v.copy() for k, v in est.history_.items()})
            snapshots.append(est.history_)              # the published arrays themselves
    ref = SCW(shuffle=False).fit(X, y)
    for k in ref.history_:
        np.testing.assert_allclose(est.history_[k], ref.history_[k], rtol=1e-10)
    for copy, live in zip(snapshots[::2], snapshots[1::2]):
        for k in copy:
            np.testing.assert_array_equal(copy[k], live[k])    # later calls never rewrite them
    np.testing.assert_allclose(est.mean_, ref.mean_, rtol=1e-10)


def test_partial_fit_refuses_a_changed_model_kind():
    rng = np.random.default_rng(32)
    X, y = _stream(rng, 50, 4, 3)
    est = SCW().fit(X, y)
    est.set_params(covariance="diagonal")
    with pytest.raises(ValueError, match="'covariance' parameter must be 'full', as when this model started"):
        est.partial_fit(X, y)
    est.set_params(covariance="full", multiclass="ovr")
    with pytest.raises(ValueError, match="'multiclass' parameter must be 'shared'"):
        est.partial_fit(X, y)
    est.set_params(multiclass="shared", fit_intercept=False)
    with pytest.raises(ValueError, match="'fit_intercept' parameter must be True, as when this model started"):
        est.partial_fit(X, y)
    est = SCW().fit(X, np.array(["a", "b", "c"])[y])
    with pytest.raises(ValueError, match="not among the classes"):
        est.partial_fit(X[:2], [1, 2])


@pytest.mark.slow
def test_registry_runs_scw_dense_and_sparse():
    from robustcore.datasets import Dataset
    from robustcore.methods import get_method
    rng = np.random.default_rng(30)
    X = rng.normal(size=(300, 6))
    y = np.where(X @ rng.normal(size=6) > 0, "a", "b")
    method = get_method("scw")
    res = method.run(Dataset(X, labels=y), {"variant": "II"})
    assert 0.0 <= res.summary["online mistake rate"] < 0.2
    assert res.arrays["mean"].shape == (6,) and res.subspace is None
    # 25 % held out by default: the stream is the other 225, test accuracy measured along it.
    assert len(res.arrays["history_mistake_rate"]) == 225
    assert res.summary["test samples"] == 75 and res.summary["test accuracy"] > 0.8
    assert np.all(np.diff(res.arrays["history_test_seen"]) > 0)
    # the majority-class baseline on the same stream, recomputed by a plain loop
    stream = y[res.arrays["order"]]
    counts, wrong = {"a": 0, "b": 0}, []
    for lab in stream:
        guess = "b" if counts["b"] > counts["a"] else "a"
        wrong.append(guess != lab)
        counts[lab] += 1
    np.testing.assert_allclose(res.arrays["history_majority_rate"], np.cumsum(wrong) / np.arange(1, 226))
    top = "b" if counts["b"] > counts["a"] else "a"
    test = np.setdiff1d(np.arange(300), res.arrays["order"])
    assert res.summary["majority-class test accuracy"] == pytest.approx(np.mean(y[test] == top))
    assert res.summary["majority-class online mistake rate"] > res.summary["online mistake rate"]
    res = method.run(Dataset(X, labels=y), {"variant": "II", "test_fraction": 0.0})
    assert len(res.arrays["history_mistake_rate"]) == 300 and "test accuracy" not in res.summary
    res = method.run(Dataset(sp.csr_matrix(X), labels=y), {"covariance": "diagonal"})
    assert res.summary["training accuracy"] > 0.8


# -- zero margins, ties, the majority baseline, sorted labels ----------------------------------

def _web_like_stream(seed, n=4000, d=30, pos=0.03, zero=0.085):
    """Sparse-ish rows, 3 % positives shifted along a planted direction (so a bias is needed),
    and 8.5 % all-zero rows (as the w8a web-page set: 4,203 of 49,749 rows)."""
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < pos, 1, -1)
    X = rng.normal(size=(n, d)) * (rng.random((n, d)) < 0.3)
    X[y > 0, :5] += 2.0
    zero_rows = rng.random(n) < zero
    X[zero_rows] = 0.0
    return X, y, zero_rows


@pytest.mark.slow
@pytest.mark.parametrize("covariance", ["full", "diagonal"])
def test_all_zero_rows_get_the_learned_bias_not_the_positive_class(covariance, backend):
    majority_online = []
    for seed in range(3):
        X, y, zero_rows = _web_like_stream(seed)
        est = SCW(covariance=covariance, shuffle=False).fit(X, y)
        wrong = est.history_["mistake"]
        # LIBOL's rule (a zero score predicts +1) would miss every negative all-zero row
        fiat = int(np.sum(zero_rows & (y < 0)))
        assert fiat > 200
        # an all-zero positive row cannot be told from a negative one: those are the mistakes,
        # plus a few while the bias is learned
        assert wrong[zero_rows & (y < 0)].sum() <= 5
        assert wrong[zero_rows].sum() <= np.sum(zero_rows & (y > 0)) + 5
        assert est.intercept_ < 0 and est.predict(np.zeros((1, 30)))[0] == -1
        # every all-zero row is a loss like any other (v > 0 from the intercept): an update
        # happens whenever its margin is below phi * sqrt(v)
        assert np.all(est.history_["loss"][zero_rows] >= 0)
        assert np.diff(est.history_["updates"], prepend=0)[zero_rows].any()
        # and the learner beats always predicting the class seen most so far
        seen_pos = np.concatenate([[0], np.cumsum(y > 0)[:-1]])
        guess = np.where(seen_pos > np.arange(len(y)) - seen_pos, 1, -1)
        majority_online.append(np.mean(guess != y))
        assert est.history_["mistake_rate"][-1] < majority_online[-1]
    # without an intercept an all-zero row scores exactly 0: the tie goes to the prior so far
    X, y, zero_rows = _web_like_stream(0)
    est = SCW(covariance=covariance, shuffle=False, fit_intercept=False).fit(X, y)
    assert est.history_["mistake"][zero_rows & (y < 0)].sum() <= 5
    assert est.predict(np.zeros((2, 30))).tolist() == [-1, -1]


def test_tie_breaking_equals_a_plain_loop():
    from robustcore.online._order import tie_broken_predictions
    rng = np.random.default_rng(40)
    for k in (2, 3, 5):
        n = 400
        idx = rng.integers(0, k, size=n)
        start = rng.integers(0, 4, size=k)
        scores = rng.integers(-1, 2, size=(n, k)).astype(float)    # many exact ties
        if k == 2:
            scores = rng.integers(-1, 2, size=n).astype(float)
        expect = []
        counts = start.astype(float).copy()
        for t in range(n):
            s = np.array([-scores[t], scores[t]]) if k == 2 else scores[t]
            best = [c for c in range(k) if s[c] == s.max()]
            expect.append(max(best, key=lambda c: (counts[c], -c)))
            counts[idx[t]] += 1
        np.testing.assert_array_equal(tie_broken_predictions(scores, start, idx), expect)
        fixed = [max([c for c in range(k) if (np.array([-scores[t], scores[t]]) if k == 2 else scores[t])[c]
                      == (np.array([-scores[t], scores[t]]) if k == 2 else scores[t]).max()],
                     key=lambda c: (start[c], -c)) for t in range(n)]
        np.testing.assert_array_equal(tie_broken_predictions(scores, start, None), fixed)


def test_predict_breaks_exact_ties_by_the_class_counts_learned_from():
    rng = np.random.default_rng(41)
    X = rng.normal(size=(300, 4))
    y = np.array(["a"] * 60 + ["b"] * 200 + ["c"] * 40)[rng.permutation(300)]
    est = SCW(fit_intercept=False, random_state=0).fit(X, y)
    np.testing.assert_array_equal(est.class_counts_, [60, 200, 40])
    assert est.predict(np.zeros((3, 4))).tolist() == ["b", "b", "b"]
    yb = np.where(y == "b", "b", "z")
    est = SCW(fit_intercept=False, random_state=0).fit(X, yb)
    assert est.predict(np.zeros((1, 4)))[0] == "b"       # the more frequent class, not classes_[1]


def test_expected_label_changes_of_a_random_order():
    # looks_sorted compares against E[changes] = (n^2 - sum n_c^2) / n: check that formula by
    # simulation before trusting it.
    from robustcore.online._order import label_changes
    rng = np.random.default_rng(42)
    labels = np.repeat([0, 1, 2], [70, 20, 10])
    sims = [label_changes(rng.permutation(labels), None) for _ in range(4000)]
    counts = np.bincount(labels)
    expected = (100 ** 2 - np.sum(counts ** 2)) / 100
    assert np.mean(sims) == pytest.approx(expected, rel=0.01)


@pytest.mark.slow
def test_labels_sorted_by_class_warn_once_and_shuffled_ones_never():
    rng = np.random.default_rng(43)
    X = rng.normal(size=(150, 4))
    y = np.repeat([0, 1, 2], 50)                            # iris as stored
    with pytest.warns(UserWarning, match=r"long runs of one class \(2 label changes in 150 samples"):
        SCW(shuffle=False).fit(X, y)
    import warnings as _w
    with _w.catch_warnings():
        _w.simplefilter("error")
        est = SCW(random_state=0).fit(X, y)                 # shuffle=True is the default
        assert sorted(est.order_) == list(range(150)) and list(est.order_) != list(range(150))
        for seed in range(30):                               # random orders stay quiet
            p = np.random.default_rng(seed).permutation(150)
            SCW(shuffle=False).fit(X[p], y[p])
            part = SCW()
            for chunk in np.array_split(p, 10):
                part.partial_fit(X[chunk], y[chunk], classes=[0, 1, 2])
    # class by class through partial_fit: quiet while one class is all there is, then one warning
    est = SCW()
    with _w.catch_warnings():
        _w.simplefilter("error")
        est.partial_fit(X[:50], y[:50], classes=[0, 1, 2])
    with pytest.warns(UserWarning, match="sorted by class"):
        est.partial_fit(X[50:100], y[50:100])
    with _w.catch_warnings():
        _w.simplefilter("error")
        est.partial_fit(X[100:], y[100:])                   # warned once already


def test_intercept_constant_speaks_the_units_of_data_far_from_unit_scale():
    from scipy.stats import norm
    rng = np.random.default_rng(44)
    X = rng.normal(size=(400, 4))
    y = np.where(X @ [1.0, -1.0, 0.5, 0.0] + 0.8 > 0, 1, -1)
    ref = SCW(random_state=0).fit(X, y)
    assert ref.intercept_scaling_ == 1.0                      # unit scale: the constant is 1
    assert SCW(fit_intercept=False).fit(X, y).intercept_scaling_ == 0.0
    for factor in (1e-100, 1e-6, 1e6):
        Xs = X * factor
        est = SCW(random_state=0).fit(Xs, y)
        m = np.median(np.abs(Xs))
        assert est.intercept_scaling_ == 2.0 ** np.round(np.log2(m))
        # the bias does not drown the features (SCW itself is not scale-free: Sigma starts at a I,
        # so tiny features learn slower): better than without an intercept, both classes predicted
        plain = SCW(random_state=0, fit_intercept=False).fit(Xs, y)
        assert est.score(Xs, y) > plain.score(Xs, y) + 0.05 and len(set(est.predict(Xs))) == 2
        # the covariance's last coordinate is the constant feature's, of value intercept_scaling_
        Xa = np.c_[Xs[:10], np.full(10, est.intercept_scaling_)]
        w = np.r_[est.mean_, est.intercept_ / est.intercept_scaling_]
        v = np.einsum("ij,jk,ik->i", Xa, est.covariance_, Xa)
        np.testing.assert_allclose(est.predict_proba(Xs[:10])[:, 1], norm.cdf(Xa @ w / np.sqrt(v)), rtol=1e-10)
        # partial_fit fixes the constant from its first chunk and continues the same stream
        part = SCW().partial_fit(Xs[:200], y[:200], classes=[-1, 1]).partial_fit(Xs[200:], y[200:])
        whole = SCW(shuffle=False).fit(Xs, y)
        np.testing.assert_allclose(part.intercept_, whole.intercept_, rtol=1e-9)
