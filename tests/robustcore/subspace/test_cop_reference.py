"""Coherence Pursuit against a reference written straight from the formulas, on small dense data.

The estimator takes one route (``_cop_fit.fit_cop``): passes over blocks of rows with d x d
matrices only (the coherence from C = Σ ŷŷᵀ, the subspace from the eigenvectors of the selected
rows' Σ ŷŷᵀ, the limits from EᵀE accumulated block by block), with the random-access steps in
memory (the coherence from pairs of rows for ℓ1 and wide tables, adaptive sampling, the
refinement). The reference here forms what the paper writes: the n x n Gram matrix of the
normalised rows, an SVD of the selected rows, the residual matrix of the calibration rows.
Every route (tall and wide in memory, ℓ1, adaptive, refinement, out of core) gives the same
subspace to 1e-8, the same selection, calibration rows and flags.
"""
import numpy as np
import pytest

from robustcore.limits import control_limits
from robustcore.subspace.coherence_pursuit import CoherencePursuit

R = 3


def _data(seed=3, n=600, d=9, offset=0.0):
    """Inliers near a 3-dim subspace (+ offset), a third of the rows Gaussian outliers."""
    rng = np.random.default_rng(seed)
    n_in = 2 * n // 3
    U = np.linalg.qr(rng.standard_normal((d, R)))[0]
    X = np.empty((n, d))
    X[:n_in] = rng.standard_normal((n_in, R)) * [3.0, 2.0, 1.5] @ U.T \
        + 0.05 * rng.standard_normal((n_in, d)) + offset
    X[n_in:] = 2.0 * rng.standard_normal((n - n_in, d)) + offset
    return X[rng.permutation(n)]


def _reference(X, center, norm, n_inliers, selected=None, refine_alpha=None):
    """Every fitted quantity of CoherencePursuit(scale="none"), the textbook way. ``selected``:
    the selection to use instead of the top n_inliers (adaptive sampling's, which draws a random
    sketch); ``refine_alpha``: refine as the paper's PCA step repeated on the rows within the
    robust residual limit, until the kept set stops changing."""
    n, d = X.shape
    c = {"none": np.zeros(d), "mean": X.mean(axis=0), "median": np.median(X, axis=0)}[center]
    Y = X - c
    length = np.linalg.norm(Y, axis=1)
    degenerate = length <= 1e-12 * length.max()
    Xn = np.where(degenerate[:, None], 0.0, Y / np.where(degenerate, 1.0, length)[:, None])
    G = Xn @ Xn.T                                   # n x n: every pair of rows
    np.fill_diagonal(G, 0.0)
    coherence = np.abs(G).sum(axis=1) if norm == 1 else np.sqrt((G * G).sum(axis=1))
    coherence[degenerate] = 0.0
    usable = np.flatnonzero(~degenerate)
    order = usable[np.argsort(-coherence[usable], kind="stable")]
    if selected is None:
        selected = np.sort(order[:n_inliers])
    V = np.linalg.svd(Xn[selected], full_matrices=False)[2][:R].T      # d x r
    if refine_alpha is not None:
        c, V = _refined(X, c, V, selected, ~degenerate, center, refine_alpha)
        Y = X - c
    E = Y - (Y @ V) @ V.T
    spe = np.einsum("ij,ij->i", E, E)
    # calibration rows: usable rows whose log SPE is at most median + 3 x 1.4826 MAD
    log_spe = np.log(np.maximum(spe[usable], np.finfo(float).tiny))
    med = np.median(log_spe)
    calib = usable[log_spe <= med + 3 * 1.4826 * np.median(np.abs(log_spe - med))]
    m = calib.size
    T = Y[calib] @ V
    var = (T * T).sum(axis=0) / (m - 1)
    lam = np.sort(np.linalg.eigvalsh(E[calib].T @ E[calib] / (m - 1)))[::-1][: d - R]
    limits = control_limits(m, var, np.maximum(lam, 0.0), alpha=0.01)
    t2 = ((Y @ V) ** 2 / limits["variances_"]).sum(axis=1)
    # the limits' calibration (robustcore._calibration): the calibration rows' combined score
    # max(SPE / Q, T² / T) has a robust core up to CORE_SPREADS spreads of its cube root (from
    # the quartile) above the median; the nominal limit 1 is clipped to the core's quantiles
    # at 1 - BAND alpha and 1 - alpha / BAND
    from robustcore._calibration import BAND, CORE_SPREADS
    comb = np.maximum(spe[calib] / limits["spe_limit_"], t2[calib] / limits["t2_limit_"])
    r50, r75 = np.cbrt(np.quantile(comb, [0.5, 0.75]))
    cut = (r50 + CORE_SPREADS * (r75 - r50) / 0.6744897501960817) ** 3
    f = np.mean(comb <= cut)
    low, high = np.quantile(comb, [f * (1 - BAND * 0.01), f * (1 - 0.01 / BAND)])
    factor = min(max(1.0, low), high)
    return dict(centre=c, V=V, coherence=coherence, selected=selected, calib=calib, spe=spe, t2=t2,
                spe_limit=limits["spe_limit_"] * factor, t2_limit=limits["t2_limit_"] * factor,
                calibration="kept" if factor == 1.0 else "raised" if factor > 1.0 else "lowered")


def _refined(X, c, V, kept, usable, center, alpha):
    """The refinement from its definition: PCA of the usable rows whose squared residual is
    within residual_limit(those of the rows kept last, alpha), until the kept set is stable."""
    from robustcore._outlier import residual_limit
    for step in range(10):
        Y = X - c
        res = np.einsum("ij,ij->i", Y - (Y @ V) @ V.T, Y - (Y @ V) @ V.T)
        floor = 1e-20 * np.median(np.einsum("ij,ij->i", Y[kept], Y[kept]))
        new = np.flatnonzero(usable & (res <= max(residual_limit(res[kept], alpha), floor)))
        if step > 0 and np.array_equal(new, kept):
            break
        kept = new
        c = X[kept].mean(axis=0) if center != "none" else np.zeros(X.shape[1])
        V = np.linalg.svd(X[kept] - c, full_matrices=False)[2][:R].T
    return c, V


def _check(cop, res, ref, X, coherence_rtol=1e-9):
    """The fitted estimator and its row results equal the reference's."""
    assert cop.limit_calibration_["action"] == ref["calibration"]
    V = cop.components_.T
    assert np.linalg.norm(V @ V.T - ref["V"] @ ref["V"].T) < 1e-8
    np.testing.assert_allclose(cop.mean_, ref["centre"], rtol=0, atol=1e-12)
    np.testing.assert_allclose(cop.coherence_, ref["coherence"], rtol=coherence_rtol, atol=1e-12)
    np.testing.assert_array_equal(cop.calibration_indices_, ref["calib"])
    np.testing.assert_allclose(res.spe, ref["spe"], rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(res.t2, ref["t2"], rtol=1e-8)
    assert cop.spe_limit_ == pytest.approx(ref["spe_limit"], rel=1e-8)
    assert cop.t2_limit_ == pytest.approx(ref["t2_limit"], rel=1e-8)
    outside_spe = ref["spe"] > ref["spe_limit"]
    outside_t2 = ref["t2"] > ref["t2_limit"]
    assert 0 < outside_spe.sum() < X.shape[0]       # the flags are not trivially all or none
    np.testing.assert_array_equal(res.outside_spe, outside_spe)
    np.testing.assert_array_equal(res.outside_t2, outside_t2)
    np.testing.assert_array_equal(res.outlier, outside_spe | outside_t2)


@pytest.mark.parametrize("route", ["wide", "adaptive", "refine-none", "refine-mean", "out-of-core"])
def test_every_route_equals_the_textbook_formulas(route):
    """Wide tables (the coherence from pairs of rows), adaptive sampling, the refinement and
    the out-of-core passes: the same numbers as the formulas."""
    center = "mean" if route == "refine-mean" else "none"
    if route == "wide":
        X, k = _data(seed=4, n=60, d=80), 30
    else:
        X, k = _data(seed=5, n=900, d=9, offset=1.0 if center != "none" else 0.0), 450
    kw = dict(n_components=R, n_inliers=k, center=center, scale="none")
    if route == "adaptive":
        kw.update(selection="adaptive", n_repeats=3, random_state=0)
    if route.startswith("refine"):
        kw.update(refine=True, n_inliers=150)
    cop = CoherencePursuit(**kw)
    if route == "out-of-core":
        da = pytest.importorskip("dask.array")
        res = cop.fit_row_results(da.from_array(X, chunks=(128, 9)))
        res = type(res)(**{f: np.asarray(getattr(res, f)) for f in
                           ("outlier_score", "spe", "t2", "projection", "outlier", "outside_spe", "outside_t2")})
    else:
        res = cop.fit_row_results(X)
    selected = np.asarray(cop.selected_indices_)
    ref = _reference(X, center, 2, kw["n_inliers"], selected=selected if route == "adaptive" else None,
                     refine_alpha=0.01 if route.startswith("refine") else None)
    if route == "adaptive":
        # Algorithm 2 picks the most coherent row first, and r rows a round, each adding a direction
        assert selected.size == 3 * R and ref["coherence"].argmax() in selected
    else:
        np.testing.assert_array_equal(selected, ref["selected"])
    if route.startswith("refine"):
        assert cop.n_refine_passes_ >= 1 and cop.inlier_indices_.size > selected.size
    _check(cop, res, ref, X)


@pytest.mark.parametrize("norm", [2, 1])
@pytest.mark.parametrize("center", ["none", "mean", "median"])
def test_fit_equals_the_textbook_formulas(center, norm):
    X = _data(offset=1.0 if center != "none" else 0.0)
    k = 300
    ref = _reference(X, center, norm, k)
    cop = CoherencePursuit(n_components=R, norm=norm, n_inliers=k, center=center, scale="none")
    res = cop.fit_row_results(X)
    np.testing.assert_array_equal(cop.selected_indices_, ref["selected"])
    _check(cop, res, ref, X)
    # scoring the same rows again (the score pass, not the fit's kept results) agrees
    np.testing.assert_array_equal(cop.predict(X) == -1, res.outlier)


def test_tall_table_passes_equal_the_formulas_with_a_singular_coherence_matrix():
    """Rows in a 3-dim subspace of 6 dims, no outliers: C = Σ ŷŷᵀ is singular, so the coherence
    pass takes the general product instead of the Cholesky factor; still the same answer."""
    rng = np.random.default_rng(5)
    U = np.linalg.qr(rng.standard_normal((6, R)))[0]
    X = rng.standard_normal((400, R)) @ U.T
    cop = CoherencePursuit(n_components=R, n_inliers=200, scale="none").fit(X)
    ref = _reference(X, "none", 2, 200)
    np.testing.assert_allclose(cop.coherence_, ref["coherence"], rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(cop.selected_indices_, ref["selected"])
    V = cop.components_.T
    assert np.linalg.norm(V @ V.T - U @ U.T) < 1e-8


@pytest.mark.parametrize("band", ["estimated", "missed", "overflowing"])
def test_calibration_in_the_residual_pass_or_its_own_gives_the_same_limits(monkeypatch, band):
    """The calibration sums ride on the residual pass when the sampled band holds the cut; when
    it misses the cut or keeps too many rows, the calibration takes its own pass (one more)."""
    from robustcore.subspace import _cop_calibration
    if band == "missed":
        monkeypatch.setattr(_cop_calibration, "BAND_SIGMAS", 1e-9)
        monkeypatch.setattr(_cop_calibration, "SAMPLE_ROWS", 50)      # a poor estimate of the cut
    elif band == "overflowing":
        monkeypatch.setattr(_cop_calibration, "BAND_MAX_ROWS", 0)
    X = _data(seed=7, n=3000, d=9)
    ref = _reference(X, "none", 2, 1500)
    res = CoherencePursuit(n_components=R, n_inliers=1500, scale="none").fit_row_results(X)
    assert res.passes == (4 if band == "estimated" else 5)
    np.testing.assert_allclose(res.spe, ref["spe"], rtol=1e-8, atol=1e-12)
    np.testing.assert_array_equal(res.outside_spe, ref["spe"] > ref["spe_limit"])
    np.testing.assert_array_equal(res.outside_t2, ref["t2"] > ref["t2_limit"])


@pytest.mark.parametrize("band", ["estimated", "missed", "overflowing", "ties"])
def test_subspace_summed_in_the_coherence_pass_or_its_own_gives_the_same_fit(monkeypatch, band):
    """The selected rows' Σ ŷŷᵀ rides on the coherence pass (out of core; asked for here in
    memory) when the sampled band holds the selection cut; otherwise the subspace takes its own pass."""
    from robustcore.subspace import _cop_passes, _cop_selection
    used = []
    gram_at = _cop_selection.SelectionBand.gram_at

    def spy(self, tau, k):
        G = gram_at(self, tau, k)
        used.append(G is not None)
        return G
    monkeypatch.setattr(_cop_selection.SelectionBand, "gram_at", spy)
    X = _data(seed=11, n=3000, d=9)
    if band == "missed":        # a band far above every coherence
        monkeypatch.setattr(_cop_passes, "selection_band", lambda coherence, left_out: (1e9, 2e9))
    elif band == "overflowing":
        monkeypatch.setattr(_cop_selection, "BAND_MAX_BYTES", 0)
    k = 1500
    if band == "ties":
        # 41 equal rows, and k puts the cut inside them: ties at the cut are taken in index order
        X[:40] = X[40]
        coh = CoherencePursuit(n_components=R, n_inliers=k, scale="none").fit(X).coherence_
        assert np.all(coh[:41] == coh[40])
        k = int(np.count_nonzero(coh > coh[40])) + 20
        apart = CoherencePursuit(n_components=R, n_inliers=k, scale="none").fit(X)
        assert np.isin(np.arange(41), apart.selected_indices_).sum() == 20
    assert used == []                     # not in memory unless asked for
    ref = _reference(X, "none", 2, k)
    cop = CoherencePursuit(n_components=R, n_inliers=k, scale="none").fit(X, _selection_band_in_memory=True)
    assert used == [band in ("estimated", "ties")]
    res = cop.row_results(X)
    if band == "ties":        # the separate pass's selection (the reference's ties may round apart)
        np.testing.assert_array_equal(cop.selected_indices_, apart.selected_indices_)
        np.testing.assert_allclose(cop.components_, apart.components_, atol=1e-10)
        return
    np.testing.assert_array_equal(cop.selected_indices_, ref["selected"])
    V = cop.components_.T
    assert np.linalg.norm(V @ V.T - ref["V"] @ ref["V"].T) < 1e-8
    np.testing.assert_array_equal(res.outside_spe, ref["spe"] > ref["spe_limit"])
    np.testing.assert_array_equal(res.outside_t2, ref["t2"] > ref["t2_limit"])


def test_selection_band_keeps_rows_as_read_and_caps_the_merged_total():
    """The band's rows are kept as read (float32 when exact) and normalised once the cut is
    known: the same Σ ŷŷᵀ as summing the selected rows' ŷ directly. Its cap holds for the
    merged sums, not only for each block's (30M rows: blocks under it, the total 360 MB)."""
    from robustcore._row_stats import symmetric
    from robustcore.subspace._cop_selection import SelectionBand

    def normalised(B, start, rows):
        Y = np.compress(np.asarray(rows, bool), B, axis=0)
        return Y / np.linalg.norm(Y, axis=1)[:, None]

    rng = np.random.default_rng(5)
    B = rng.standard_normal((400, 6)).astype(np.float32).astype(np.float64)
    coh = rng.random(400)
    usable = np.ones(400, bool)
    k = 150
    tau = np.sort(coh)[-k]
    parts = [SelectionBand(6, normalised, (0.5, 0.8)) for _ in range(2)]
    parts[0].feed(B[:200], 0, coh[:200], usable[:200])
    parts[1].feed(B[200:], 200, coh[200:], usable[200:])
    assert parts[0].kept[0][2].dtype == np.float32
    whole = parts[1].merge(parts[0])              # merged out of order: ties go by index all the same
    want = normalised(B, 0, coh >= tau)
    np.testing.assert_allclose(symmetric(whole.gram_at(tau, k)), want.T @ want, rtol=1e-12, atol=1e-12)
    # each half under the cap, both over it: the merged band overflows and gives no sum
    each = parts[0].n_bytes
    small = [SelectionBand(6, normalised, (0.5, 0.8), max_bytes=int(each * 1.5)) for _ in range(2)]
    small[0].feed(B[:200], 0, coh[:200], usable[:200])
    small[1].feed(B[:200], 0, coh[:200], usable[:200])
    assert not small[0].overflow and not small[1].overflow
    merged = small[0].merge(small[1])
    assert merged.overflow and merged.kept == [] and merged.gram_at(tau, k) is None


def test_calibration_band_caps_the_merged_total():
    """The calibration band's cap on kept rows holds for the merged sums too."""
    from robustcore.subspace._cop_calibration import CalibrationBand
    rng = np.random.default_rng(2)
    comps = np.linalg.qr(rng.standard_normal((6, 2)))[0].T
    Y, T = rng.standard_normal((80, 6)), rng.standard_normal((80, 2))
    log_spe = rng.uniform(0.0, 1.0, 80)
    spe, sq = np.exp(log_spe), np.einsum("ij,ij->i", Y, Y)
    usable = np.ones(80, bool)
    inside = int(np.count_nonzero((log_spe > 0.2) & (log_spe <= 0.9)))
    a, b = (CalibrationBand(comps, np.zeros(6), (0.2, 0.9), max_rows=inside + inside // 2) for _ in range(2))
    a.feed(Y, T, spe, sq, usable)
    b.feed(Y, T, spe, sq, usable)
    assert not a.overflow and not b.overflow and a.n_kept == inside
    merged = a.merge(b)
    assert merged.overflow and merged.kept == []
    assert merged.spectrum_at(0.5, 2 * int(np.count_nonzero(log_spe <= 0.5)), 2) is None
