"""The fast paths of Coherence Pursuit's fit and scores give the numbers of the exact ones.

- SPE as |y|² - |t|² (robustcore._residual) wherever that keeps SPE_RTOL, the explicit residual
  elsewhere: against the residual formed in extended precision, on rows where the difference
  cancels (exact fits, rows far from the origin with a tiny residual) and rows where it does not.
"""
import numpy as np
import pytest

from robustcore._residual import SPE_RTOL, ResidualKernel, residual_scores
from robustcore.subspace.coherence_pursuit import CoherencePursuit

U = 2.0 ** -53


def _explicit_long(Y, C):
    """|y - Cᵀ C y|² in extended precision (numpy's longdouble: 64-bit mantissa on x86)."""
    Yl, Cl = Y.astype(np.longdouble), C.astype(np.longdouble)
    E = Yl - (Yl @ Cl.T) @ Cl
    return (E * E).sum(axis=1)


def _rows_that_cancel(rng, d=50, k=5):
    """Rows of every kind for one subspace: generic, exact fits, far fits with small residuals,
    residuals just around the guard."""
    C = np.linalg.qr(rng.standard_normal((d, k)))[0].T
    generic = rng.standard_normal((300, d))
    exact = rng.standard_normal((100, k)) @ C                       # SPE 0 but for rounding
    far = 1e6 * rng.standard_normal((100, k)) @ C + 1e-3 * rng.standard_normal((100, d))
    ratios = np.logspace(-14, -1, 100)                             # |e|² / |y|² across the guard
    inside = rng.standard_normal((100, k)) @ C
    off = rng.standard_normal((100, d))
    off -= (off @ C.T) @ C
    off *= (np.linalg.norm(inside, axis=1) * np.sqrt(ratios) / np.linalg.norm(off, axis=1))[:, None]
    return np.vstack([generic, exact, far, inside + off]), C


@pytest.mark.parametrize("mean", ["zero", "offset"])
def test_spe_shortcut_matches_the_explicit_residual_where_it_cancels(mean):
    rng = np.random.default_rng(0)
    Y, C = _rows_that_cancel(rng)
    centre = np.zeros(Y.shape[1]) if mean == "zero" else 3.0 * rng.standard_normal(Y.shape[1])
    Z = Y + centre
    ref = _explicit_long(Y, C).astype(np.float64)
    fast = residual_scores(Z, C, centre, want_t2=False)[0]
    # the explicit residual in float64 (the former kernel), the standard the shortcut keeps to
    E = (Z - centre) - ((Z - centre) @ C.T) @ C
    explicit = np.einsum("ij,ij->i", E, E)
    s = np.einsum("ij,ij->i", Y, Y)
    # the explicit residual's own rounding: about d u |y| |e| (and the centring's u |z| |e|)
    floor = 8 * Y.shape[1] * U * np.sqrt(np.einsum("ij,ij->i", Z, Z) + s) * np.sqrt(ref) + 1e-300
    assert np.all(fast >= 0.0)
    assert np.all(np.abs(explicit - ref) <= SPE_RTOL * ref + floor)
    assert np.all(np.abs(fast - ref) <= SPE_RTOL * ref + floor)
    # where |y|² - |t|² alone would have lost every digit, it was not used
    naive = s - np.einsum("ij,ij->i", Y @ C.T, Y @ C.T)
    lost = np.abs(naive - ref) > 0.5 * ref
    assert lost[300:500].all() and not lost[:300].any()
    # the kernel's coordinates are the explicit ones
    T, _ = ResidualKernel(C, centre)(Z)
    np.testing.assert_allclose(T, Y @ C.T, rtol=1e-12, atol=1e-9 * np.abs(Y).max())


def test_spe_shortcut_keeps_non_finite_rows_as_the_explicit_residual_does():
    rng = np.random.default_rng(1)
    C = np.linalg.qr(rng.standard_normal((6, 2)))[0].T
    Z = rng.standard_normal((5, 6))
    Z[1, 2] = np.nan
    Z[3, 0] = 1e200        # |y|² overflows
    spe = residual_scores(Z, C, np.zeros(6), want_t2=False)[0]
    assert np.isnan(spe[1]) and spe[3] == np.inf and np.all(np.isfinite(spe[[0, 2, 4]]))


def test_cop_scores_of_planted_rows_with_spe_near_zero_equal_the_explicit_ones():
    """A planted subspace with exact inliers (SPE 0 but for rounding) far from the origin, and
    outliers: the fit's limits and every row's score as from explicit residuals."""
    rng = np.random.default_rng(2)
    d, r = 20, 3
    B = np.linalg.qr(rng.standard_normal((d, r)))[0]
    X = np.vstack([1e4 * rng.standard_normal((600, r)) @ B.T,
                   1e4 * rng.standard_normal((200, r)) @ B.T + rng.standard_normal((200, d)),
                   1e4 * rng.standard_normal((200, d))])
    cop = CoherencePursuit(n_components=r, scale="none").fit(X)
    C = cop.components_
    ref = _explicit_long(X - cop.mean_, C).astype(np.float64)
    t = (X - cop.mean_) @ C.T
    t2 = np.einsum("ij,ij,j->i", t, t, 1.0 / cop.variances_)
    want = np.maximum(ref / cop.spe_limit_, t2 / cop.t2_limit_)
    got = -cop.score_samples(X)
    floor = 8 * d * U * np.linalg.norm(X - cop.mean_, axis=1) * np.sqrt(ref) / cop.spe_limit_
    assert np.all(np.abs(got - want) <= 1e-9 * want + floor)
    np.testing.assert_array_equal(cop.predict(X) == -1, want > -cop.offset_)


# -- the selection from bounds on the coherence (_cop_bounds) ---------------------------------

def _planted(seed=3, n=3000, d=24, r=4, ties=0):
    """80 % of the rows near an r-dim subspace (noise 0.01), the rest Gaussian outliers; with
    ``ties``, that many copies of one inlier (equal coherence)."""
    rng = np.random.default_rng(seed)
    B = np.linalg.qr(rng.standard_normal((d, r)))[0]
    n1 = int(0.8 * n)
    X = np.vstack([rng.standard_normal((n1, r)) * [3.0, 2.0, 1.5, 1.2][:r] @ B.T
                   + 0.01 * rng.standard_normal((n1, d)), rng.standard_normal((n - n1, d))])
    if ties:
        X[1:ties + 1] = X[0]
    return X


def _exact_fit(monkeypatch, X, **kw):
    """The same fit with every row's exact coherence form (the bounds never decide)."""
    from robustcore.subspace import _cop_bounds
    with monkeypatch.context() as m:
        m.setattr(_cop_bounds, "MAX_UNDECIDED", -1.0)
        return CoherencePursuit(**kw).fit(X)


@pytest.mark.parametrize("ties", [0, 40])
def test_selection_from_bounds_equals_the_exact_selection(monkeypatch, ties):
    from robustcore.subspace import _cop_bounds
    X = _planted(ties=ties)
    kw = dict(n_components=4, scale="none")
    if ties:
        # k puts the cut inside the 41 equal rows: ties at the cut go in index order
        coh = _exact_fit(monkeypatch, X, **kw).coherence_
        kw["n_inliers"] = int(np.count_nonzero(coh > coh[0])) + 17
    undecided = []
    decide = _cop_bounds.decide

    def spy(*a):
        out = decide(*a)
        undecided.append(int(out[1].sum()))
        return out
    monkeypatch.setattr(_cop_bounds, "decide", spy)
    fast = CoherencePursuit(**kw).fit(X)
    assert "_coherence_maker" in fast.__dict__ and len(undecided) == 1     # the bounds decided
    assert 0 < undecided[0] < 0.05 * X.shape[0]
    exact = _exact_fit(monkeypatch, X, **kw)
    assert "_coherence_maker" not in exact.__dict__
    np.testing.assert_array_equal(fast.selected_indices_, exact.selected_indices_)
    if ties:
        assert np.isin(np.arange(41), fast.selected_indices_).sum() == 17
    np.testing.assert_array_equal(fast.components_, exact.components_)
    assert fast.spe_limit_ == exact.spe_limit_ and fast.t2_limit_ == exact.t2_limit_
    # coherence_, made when first read, is the exact pass's, and the textbook's
    np.testing.assert_array_equal(fast.coherence_, exact.coherence_)
    Xn = X / np.linalg.norm(X, axis=1, keepdims=True)
    G = Xn @ Xn.T
    np.fill_diagonal(G, 0.0)
    np.testing.assert_allclose(fast.coherence_, np.sqrt((G * G).sum(axis=1)), rtol=1e-9)
    assert "_coherence_maker" not in fast.__dict__


def test_coherence_made_when_first_read_survives_copies_and_refits(monkeypatch):
    import copy
    import pickle
    X = _planted(seed=4)
    cop = CoherencePursuit(n_components=4, scale="none").fit(X)
    assert "_coherence_maker" in cop.__dict__
    twin = pickle.loads(pickle.dumps(cop))
    np.testing.assert_array_equal(twin.coherence_, copy.deepcopy(cop).coherence_)
    # a fit that fails leaves no coherence of the previous one behind
    with pytest.raises(ValueError):
        cop.set_params(n_inliers=10 ** 7).fit(X)
    assert not hasattr(cop, "coherence_")
    # fit_row_results holds every row's coherence (made in the fit, not later)
    res = CoherencePursuit(n_components=4, scale="none").fit_row_results(X)
    np.testing.assert_array_equal(res.extra["coherence"], twin.coherence_)


# -- the fused passes (issue 36): |y|² made once, blocks that do not divide the table ----------

def _same(a, b, rtol=1e-10):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    scale = np.maximum(np.abs(a), np.abs(b))
    assert np.all(np.abs(a - b) <= rtol * scale), float(np.max(np.abs(a - b) / np.maximum(scale, 1e-300)))


def _assert_fits_agree(fast, exact, X, rtol=1e-10):
    """Same selection; subspace, limits, spectrum and every row's score to ``rtol`` relative."""
    np.testing.assert_array_equal(fast.selected_indices_, exact.selected_indices_)
    np.testing.assert_array_equal(fast.calibration_indices_, exact.calibration_indices_)
    _same(fast.components_, exact.components_, rtol)
    for name in ("spe_limit_", "t2_limit_", "residual_eigenvalues_", "variances_", "singular_values_"):
        _same(getattr(fast, name), getattr(exact, name), rtol)
    _same(fast.score_samples(X), exact.score_samples(X), rtol)


@pytest.mark.parametrize("chunk", [997, None])
def test_fused_passes_across_block_boundaries_equal_the_exact_route(monkeypatch, chunk):
    """Blocks of 997 rows (6,007 rows: the last block short) and the default blocks: the fit
    from bounds, with |y|² handed from the bounds pass to the subspace and residual passes,
    gives the exact route's selection and numbers, and the same as other block sizes."""
    from robustcore.subspace import _cop_calibration
    X = _planted(seed=5, n=6007, d=24, r=4)
    kw = dict(n_components=4, scale="none", chunk_size=chunk)
    handed = []
    block = _cop_calibration.residual_block_sq

    def spy(B, start, degenerate, sq, *a, **k):
        handed.append(B.shape[0])
        return block(B, start, degenerate, sq, *a, **k)
    monkeypatch.setattr(_cop_calibration, "residual_block_sq", spy)
    from robustcore.subspace import _cop_fit
    monkeypatch.setattr(_cop_fit, "residual_block_sq", spy)
    fast = CoherencePursuit(**kw).fit(X)
    assert "_coherence_maker" in fast.__dict__                    # selected from bounds
    assert sum(handed) == X.shape[0]                              # every row read its |y|²
    if chunk:
        assert len(handed) == 7 and handed[-1] == 6007 - 6 * 997
    exact = _exact_fit(monkeypatch, X, **kw)
    _assert_fits_agree(fast, exact, X)
    other = CoherencePursuit(n_components=4, scale="none", chunk_size=1500).fit(X)
    _assert_fits_agree(fast, other, X)
    # the training rows' results of fit_row_results (no bounds: every row's exact coherence)
    res = CoherencePursuit(**kw).fit_row_results(X)
    _same(res.outlier_score, -fast.score_samples(X))
    np.testing.assert_array_equal(res.extra["coherence"], fast.coherence_)


def test_fused_passes_keep_the_explicit_residual_where_the_difference_cancels(monkeypatch):
    """Inliers 1e4 from the origin with residuals of 1e-3 (|e|² / |y|² about 1e-13: |y|² - |t|²
    keeps about 3 digits), blocks of 777 rows: the fast route's SPE of every training row is the
    explicit residual's, to SPE_RTOL, and its selection and limits are the exact route's."""
    rng = np.random.default_rng(6)
    d, r = 20, 3
    B = np.linalg.qr(rng.standard_normal((d, r)))[0]
    X = np.vstack([1e4 * rng.standard_normal((3000, r)) @ B.T + 1e-3 * rng.standard_normal((3000, d)),
                   1e4 * rng.standard_normal((1001, d))])
    kw = dict(n_components=r, scale="none", chunk_size=777)
    fast = CoherencePursuit(**kw).fit(X)
    assert "_coherence_maker" in fast.__dict__
    exact = _exact_fit(monkeypatch, X, **kw)
    _assert_fits_agree(fast, exact, X, rtol=1e-9)
    C = fast.components_
    ref = _explicit_long(X, C).astype(np.float64)
    s = np.einsum("ij,ij->i", X, X)
    naive = s - np.einsum("ij,ij->i", X @ C.T, X @ C.T)
    # the difference loses far more than SPE_RTOL here: only the explicit residual keeps it
    assert np.median(np.abs(naive[:3000] - ref[:3000]) / ref[:3000]) > 1e4 * SPE_RTOL
    floor = 8 * d * U * np.sqrt(s) * np.sqrt(ref)
    # (fit_row_results makes every row's exact coherence, not the bounds: its subspace agrees to
    # about 1e-13, which moves these SPE by 1e-5; each is checked against its own subspace)
    est = CoherencePursuit(**kw)
    res = est.fit_row_results(X)
    ref_res = _explicit_long(X, est.components_).astype(np.float64)
    assert np.all(np.abs(res.spe - ref_res) <= SPE_RTOL * ref_res + floor)
    t = X @ C.T
    want = np.maximum(ref / fast.spe_limit_, np.einsum("ij,ij,j->i", t, t, 1.0 / fast.variances_) / fast.t2_limit_)
    got = -fast.score_samples(X)
    assert np.all(np.abs(got - want) <= 1e-9 * want + floor / fast.spe_limit_)


@pytest.mark.parametrize("released", [False, True])
def test_thin_products_in_either_orientation_give_the_plain_product(released):
    """The coordinates and residuals of the kernels (robustcore._residual.thin_product, scipy's
    product with Y's transpose flag or numpy's C Yᵀ where the GIL is released) equal Y Cᵀ and
    Y - Y Cᵀ C formed in extended precision, on rows that do and do not cancel, float32 rows
    too; and the bounds pass's products equal the plain ones."""
    from robustcore._passes import _GilFree
    from robustcore._residual import thin_product
    from robustcore.subspace._cop_bounds import CoherenceBounds, bounds_block
    from robustcore.subspace._cop_passes import _Prep
    rng = np.random.default_rng(3)
    Y, C = _rows_that_cancel(rng)
    Cl, Yl = C.astype(np.longdouble), Y.astype(np.longdouble)
    kern = ResidualKernel(C, np.zeros(C.shape[1]))
    with _GilFree(released):
        T = thin_product(np.ascontiguousarray(Y), kern.C, kern.CT)
        T2, E = kern.residuals(Y)
        T3, spe = kern(Y.astype(np.float32))
        G = Y.T @ Y
        bnd = CoherenceBounds(G / np.trace(G))
        out = bounds_block(Y, 0, _Prep(None, np.zeros(C.shape[1])), bnd, 0.0)
    exact_T = Yl @ Cl.T
    scale = np.abs(Yl).sum(axis=1)[:, None] * 64 * U       # a few d u |y| per entry
    for got in (T, T2):
        assert got.shape == exact_T.shape
        assert np.all(np.abs(got - exact_T) <= scale)
    exact_E = Yl - exact_T @ Cl
    assert np.all(np.abs(E - exact_E) <= scale)
    Y32 = Y.astype(np.float32).astype(np.longdouble)
    assert np.all(np.abs(T3 - Y32 @ Cl.T) <= scale)
    sq = np.einsum("ij,ij->i", Y, Y)
    np.testing.assert_array_equal(out["sq"], sq)
    Yn = Yl / np.sqrt((Yl * Yl).sum(axis=1))[:, None]
    q = np.einsum("ij,ij->i", Yn @ (G / np.trace(G)).astype(np.longdouble), Yn)
    assert np.all(out["q_lo"] <= q) and np.all(q <= out["q_hi"])
    assert np.median(out["q_hi"] - out["q_lo"]) < 0.5 * np.ptp(q)     # bounds that decide something


# -- the calibration EᵀE from the rows' own scatter (_cop_calibration: P A P) -----------------

def _band_spectrum(Y, C, max_ratio=None, monkeypatch=None):
    """CalibrationBand's spectrum of every row of Y (centred) against components C, every row
    below the band, fed in blocks of 97 rows as the residual pass feeds it."""
    from robustcore.subspace import _cop_calibration
    from robustcore.subspace._cop_calibration import CalibrationBand
    if max_ratio is not None:
        monkeypatch.setattr(_cop_calibration, "PAP_MAX_RATIO", max_ratio)
    kern = ResidualKernel(C, np.zeros(C.shape[1]))
    acc = CalibrationBand(C, np.zeros(C.shape[1]), (np.inf, np.inf))
    for s in range(0, Y.shape[0], 97):
        B = np.ascontiguousarray(Y[s:s + 97])
        T = kern._coordinates(B)
        sq = np.einsum("ij,ij->i", B, B)
        acc.feed(B, T, kern.spe(B, T, s=sq), sq, np.ones(B.shape[0], bool))
    return acc.spectrum_at(np.inf, Y.shape[0], C.shape[0])


def _thetas(lam):
    return np.array([np.sum(np.asarray(lam, dtype=np.longdouble) ** p) for p in (1, 2, 3)], dtype=np.float64)


@pytest.mark.parametrize("kind", ["generic", "near", "exact"])
def test_calibration_spectrum_from_the_rows_scatter_equals_the_explicit_residuals(monkeypatch, kind):
    """EᵀE as P A P (A the rows' scatter) where a row's |y|² / SPE keeps A's rounding small,
    the explicit residual elsewhere: the residual eigenvalues and the limits' θ (their sums of
    powers) of the extended-precision residuals, to 1e-10, on generic rows with some of every
    kind, on rows only near the subspace (|e|² / |y|² from 1e-14 to 0.1, and rows 1e6 from the
    origin with residuals of 1e-3: the spectrum is the small residuals themselves), and on
    rows exactly in it with a few off it."""
    rng = np.random.default_rng(11)
    Y, C = _rows_that_cancel(rng)
    if kind == "near":
        Y = Y[400:]
    elif kind == "exact":
        Y = np.vstack([Y[300:400], Y[:60]])
    E = Y.astype(np.longdouble) - (Y.astype(np.longdouble) @ C.T.astype(np.longdouble)) @ C.astype(np.longdouble)
    ref = np.linalg.eigvalsh((E.T @ E).astype(np.float64))[::-1][: Y.shape[1] - C.shape[0]] / (Y.shape[0] - 1)
    n, var, lam = _band_spectrum(Y, C)
    assert n == Y.shape[0]
    # each to 1e-10 relative, or a few units of rounding of the largest (eigvalsh's own), or
    # the explicit residuals' own rounding (about d u |y| |e| a row: the far rows')
    e = np.sqrt((E * E).sum(axis=1)).astype(np.float64)
    floor = 8 * Y.shape[1] * U * np.sum(np.linalg.norm(Y, axis=1) * e) / (Y.shape[0] - 1)
    assert np.all(np.abs(lam - ref) <= 1e-10 * ref + 1e-13 * ref[0] + floor)
    if kind == "generic":
        _same(_thetas(lam), _thetas(ref), 1e-10)
    # the explicit residual of every row (the route before): the same numbers
    _, var_e, lam_e = _band_spectrum(Y, C, max_ratio=0.0, monkeypatch=monkeypatch)
    _same(var, var_e, 1e-12)
    _same(_thetas(lam), _thetas(lam_e), 1e-10)


def test_calibration_spectrum_from_the_scatter_alone_would_lose_the_near_rows(monkeypatch):
    """Without the explicit residual of the rows whose |y|² / SPE is large (every row into A),
    the near rows' spectrum loses its digits: what the ratio's guard is for."""
    Y, C = _rows_that_cancel(np.random.default_rng(11))
    Y = Y[400:]
    _, _, lam = _band_spectrum(Y, C)
    _, _, lam_a = _band_spectrum(Y, C, max_ratio=np.inf, monkeypatch=monkeypatch)
    assert abs(_thetas(lam_a)[0] - _thetas(lam)[0]) > 1e-6 * _thetas(lam)[0]


def _tables():
    """Planted tables (80 % inliers, the rest Gaussian outliers): noise 0.1 (every calibration
    row through A), noise 0.01 (|y|² / SPE about 1e4: rows on both sides), inliers exactly in
    the subspace 1e4 from the origin (every inlier explicit)."""
    rng = np.random.default_rng(12)
    d, r = 24, 4
    B = np.linalg.qr(rng.standard_normal((d, r)))[0]
    out = {}
    for name, scale, noise in (("noise 0.1", 1.0, 0.1), ("noise 0.01", 1.0, 0.01), ("exact", 1e4, 0.0)):
        inl = scale * rng.standard_normal((4000, r)) * [3.0, 2.0, 1.5, 1.2] @ B.T
        inl += noise * rng.standard_normal((4000, d))
        out[name] = np.vstack([inl, scale * rng.standard_normal((1000, d))])
    return out


@pytest.mark.parametrize("name", ["noise 0.1", "noise 0.01", "exact"])
def test_residual_pass_without_explicit_residuals_equals_the_explicit_route(monkeypatch, name):
    """The fit's residual pass forms no explicit residual where |y|² - |t|² and P A P keep their
    digits (none on the noise-0.1 table: before, every row's), and its selection, limits,
    spectrum and scores are those of the explicit route (every row's residual), to 1e-10."""
    from robustcore._residual import ResidualKernel as K
    from robustcore.subspace import _cop_calibration
    X = _tables()[name]
    kw = dict(n_components=4, scale="none", chunk_size=701)
    made = {"pass": 0, "update": 0}
    pass_, update = K._pass, K._update

    def spy_pass(self, B, buf, want_residual):
        made["pass"] += B.shape[0] if want_residual else 0
        return pass_(self, B, buf, want_residual)

    def spy_update(self, Bc, T):
        made["update"] += Bc.shape[0]
        return update(self, Bc, T)
    with monkeypatch.context() as m:
        m.setattr(K, "_pass", spy_pass)
        m.setattr(K, "_update", spy_update)
        fast = CoherencePursuit(**kw).fit(X)
    assert made["pass"] == 0
    if name == "noise 0.1":
        assert made["update"] <= 0.001 * X.shape[0]
    with monkeypatch.context() as m:
        m.setattr(_cop_calibration, "PAP_MAX_RATIO", 0.0)
        exact = CoherencePursuit(**kw).fit(X)
    _assert_fits_agree(fast, exact, X)


def test_t2_and_t_squares_of_every_route_come_from_one_kernel():
    """T² of the score pass, of the fit's training rows (fit_row_results) and of residual_scores,
    and |t|² inside the SPE, are robustcore._residual.weighted_squares of the coordinates: the
    same bits on every route (one square and a product, not the three-operand einsum)."""
    from robustcore._residual import weighted_squares
    X = _tables()["noise 0.1"]
    cop = CoherencePursuit(n_components=4, scale="none")
    res = cop.fit_row_results(X)
    T = cop.transform(X)
    want = weighted_squares(T, 1.0 / cop.variances_)
    np.testing.assert_array_equal(res.t2, want)
    np.testing.assert_array_equal(cop.row_results(X).t2, want)
    spe, t2, _ = residual_scores(X, cop.components_, cop.mean_, 1.0 / cop.variances_)
    np.testing.assert_array_equal(t2, want)
    kern = ResidualKernel(cop.components_, cop.mean_)
    np.testing.assert_array_equal(kern.spe(X - cop.mean_, T), res.spe)


def test_index_arrays_are_made_when_first_read_in_memory_too(monkeypatch):
    """On the route of the bounds the fit leaves selected_indices_, inlier_indices_ and
    calibration_indices_ to be made when first read (a fit that only scores never needs them):
    the arrays of the route that makes them at once (fit_row_results), and their count known
    before."""
    X = _planted(seed=5)
    fast = CoherencePursuit(n_components=4, scale="none").fit(X)
    makers = fast.__dict__.get("_index_makers", {})
    assert set(makers) == {"selected_indices_", "inlier_indices_", "calibration_indices_"}
    n_cal = fast._calibration_size()
    est = CoherencePursuit(n_components=4, scale="none")
    est.fit_row_results(X)
    assert "_index_makers" not in est.__dict__
    for name in ("selected_indices_", "inlier_indices_", "calibration_indices_"):
        got = getattr(fast, name)
        assert isinstance(got, np.ndarray) and got.dtype == np.intp
        np.testing.assert_array_equal(got, getattr(est, name))
    assert n_cal == fast.calibration_indices_.size
    assert fast.selected_indices_ is fast.inlier_indices_
    assert "_index_makers" not in fast.__dict__
    # a refit on other rows: its own indices, not the arrays the first fit's reads left
    Y = _planted(seed=6)
    fast.fit(Y)
    other = CoherencePursuit(n_components=4, scale="none")
    other.fit_row_results(Y)
    np.testing.assert_array_equal(fast.selected_indices_, other.selected_indices_)
    np.testing.assert_array_equal(fast.calibration_indices_, other.calibration_indices_)


@pytest.mark.parametrize("busy", [0.0, 5.0])
def test_calibration_mask_on_two_halves_gives_the_plain_sweeps_bits(monkeypatch, busy):
    """The calibration mask's sweeps (log SPE, deviations, both masks) on the rows' two halves,
    side by side or one after the other: the values of the plain whole-array expressions."""
    import robustcore._lanes as lanes_mod
    import robustcore._order_stats as os_mod
    import robustcore._threads as threads_mod
    from robustcore._outlier import log_residual
    from robustcore.subspace import _cop_passes
    from robustcore.subspace._cop_calibration import bounds_cut, calibration_cut
    monkeypatch.setattr(os_mod, "SPLIT_MIN", 1000)
    monkeypatch.setattr(lanes_mod, "pass_threads", lambda environ=None: 2)
    monkeypatch.setattr(threads_mod, "busy_elsewhere", lambda samples=3: busy)
    rng = np.random.default_rng(6)
    n = 100_001
    spe = rng.chisquare(3, n) * 1e-4
    spe[rng.random(n) < 0.2] *= 1e4          # gross outliers
    spe[:50] = 0.0                           # exact fits
    degenerate = rng.random(n) < 0.01
    keep, n_keep, cut, left_out = _cop_passes._calibration_mask(spe, degenerate, int((~degenerate).sum()), 3)
    log_spe = log_residual(spe)
    u = log_spe[~degenerate]
    med = np.median(u)
    mad = np.median(np.abs(u - med))
    assert cut == calibration_cut(med, mad)
    np.testing.assert_array_equal(keep, ~degenerate & (log_spe <= cut))
    assert n_keep == int(keep.sum())
    np.testing.assert_array_equal(left_out, ~(~degenerate & (log_spe <= bounds_cut(med, mad))))
    np.testing.assert_array_equal(_cop_passes._halves(_cop_passes._log_into, np.float64, spe), log_spe)
