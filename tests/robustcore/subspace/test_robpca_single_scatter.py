"""ROBPCA's h-subset scatter from the rows' float32 copy (CentredRows.scatter while it holds
``rows32``) against the float64 scatter it replaces, and the gap rule that sends a fit back to
float64 where float32's rounding could turn its subspace (robpca._leading)."""
import numpy as np

from robustcore.subspace._robpca_rows import CentredRows, Lanes
from robustcore.subspace import robpca as robpca_module


def _rows(Z):
    rows = CentredRows(Z, Z.mean(axis=0))
    rows.survey(4)                     # (makes and holds the float32 copy)
    assert rows.rows32 is not None
    return rows


def _offset_table(n=3000, d=250, seed=43):
    rng = np.random.default_rng(seed)
    return 1e3 + rng.standard_normal((n, d)) * np.linspace(0.1, 10.0, d)


def test_float32_scatter_is_the_float64_one_to_float32s_rounding():
    """The subset's mean to 1e-7 of the rows' size and its scatter to 1e-6 of its largest entry
    (float32 products of blocks, float64 sums of them), over several blocks; ``exact`` and rows
    without the copy give the float64 scatter's bits."""
    Z = _offset_table()
    rows = _rows(Z)
    assert rows.rows_per_block() < 1500
    mask = np.random.default_rng(1).random(Z.shape[0]) < 0.75
    m32, G32 = rows.scatter(mask)
    m64, G64 = rows.scatter(mask, exact=True)
    size = np.abs(Z - Z.mean(axis=0)).max()
    assert 0 < np.abs(m32 - m64).max() <= 1e-7 * size
    assert 0 < np.abs(G32 - G64).max() <= 1e-6 * np.abs(G64).max()
    assert np.array_equal(G32, G32.T)
    plain = CentredRows(Z, Z.mean(axis=0))          # (no survey: no copy)
    m, G = plain.scatter(mask)
    np.testing.assert_array_equal(G, G64)
    np.testing.assert_array_equal(m, m64)


def test_float32_scatter_on_two_threads_is_one_threads_to_the_bit():
    Z = _offset_table(seed=47)
    rows = _rows(Z)
    mask = np.random.default_rng(2).random(Z.shape[0]) < 0.75
    m1, G1 = rows.scatter(mask, runner=Lanes(1, adaptive=False))
    m2, G2 = rows.scatter(mask, runner=Lanes(2, adaptive=False))
    np.testing.assert_array_equal(m2, m1)
    np.testing.assert_array_equal(G2, G1)
    assert not rows._lent


def _planted(second, n=4000, d=120, seed=5):
    """Rows about a 2-D plane, offset 2, whose two directions' sums of squares are exactly 9 n
    and ``second`` n (orthogonal, centred scores), with noise 0.01."""
    rng = np.random.default_rng(seed)
    U = np.linalg.qr(rng.standard_normal((d, 2)))[0]
    T = np.linalg.qr(rng.standard_normal((n, 2)) - rng.standard_normal((n, 2)).mean(axis=0))[0]
    T -= T.mean(axis=0)
    T = np.linalg.qr(T)[0] * np.sqrt([9.0 * n, second * n])
    return 2.0 + T @ U.T + 0.01 * rng.standard_normal((n, d))


def test_leading_keeps_the_float32_scatter_where_the_gap_holds_its_subspace():
    """k = 2 of a plane with a wide gap to the noise: the float32 scatter is kept, and its
    leading subspace is float64's to 1e-6 radians."""
    Z = _planted(4.0)
    rows = _rows(Z)
    H = np.random.default_rng(3).random(Z.shape[0]) < 0.75
    h = int(H.sum())
    mh, G0, ev, V, k = robpca_module._leading(rows, H, h, 2, 10)
    m64, G64 = rows.scatter(H, exact=True)
    assert k == 2 and not np.array_equal(G0, G64)
    m32, G32 = rows.scatter(H)
    np.testing.assert_array_equal(G0, G32)
    np.testing.assert_array_equal(mh, m32)
    ev64, V64 = robpca_module._spectrum(G64, h, top=2)
    cos = np.linalg.svd(V[:, :2].T @ V64[:, :2], compute_uv=False)
    assert np.sqrt(1.0 - cos.min() ** 2) < 1e-6
    np.testing.assert_allclose(ev, ev64, rtol=1e-6)


def test_leading_makes_the_scatter_in_float64_where_the_gap_is_narrow():
    """k = 1 where the first two eigenvalues are within 1e-4 of the trace: float32's rounding
    could turn the leading direction, so the scatter is made again in float64 (its bits)."""
    Z = _planted(9.0)
    rows = _rows(Z)
    H = np.ones(Z.shape[0], bool)                 # (every row: the tie is the subset's)
    h = int(H.sum())
    mh, G0, ev, V, k = robpca_module._leading(rows, H, h, 1, 10)
    m64, G64 = rows.scatter(H, exact=True)
    assert k == 1 and rows.rows32 is None           # (the reweighting's update in float64 too)
    np.testing.assert_array_equal(G0, G64)
    np.testing.assert_array_equal(mh, m64)
    assert not robpca_module._gap_holds(robpca_module._spectrum(G64, h, top=2)[0], 1, np.trace(G64) / (h - 1))


def test_a_fit_with_the_float32_scatter_is_the_float64_fits_to_rounding(monkeypatch):
    """A whole fit with the float32 scatter against the same fit with every scatter in float64
    (the gap rule made impossible to meet): the same k, h-subset sizes and flags, the subspace
    within 1e-6 radians, the centre and distances to 1e-6; and no fit keeps the copy."""
    from robustcore import ROBPCA
    rng = np.random.default_rng(11)
    X = 3.0 + rng.standard_normal((3000, 4)) @ rng.standard_normal((4, 150)) + 0.1 * rng.standard_normal((3000, 150))
    X[:150] += 2.0 * rng.standard_normal(150)
    seen = []
    real = robpca_module._stages

    def spy(Z, *a):
        out = real(Z, *a)
        seen.append(out)
        return out
    monkeypatch.setattr(robpca_module, "_stages", spy)
    fast = ROBPCA(random_state=0, scale="none")
    res_fast = fast.fit_row_results(X)
    monkeypatch.setattr(robpca_module, "_SINGLE_GAP", np.inf)
    exact = ROBPCA(random_state=0, scale="none")
    res_exact = exact.fit_row_results(X)
    assert fast.n_components_ == exact.n_components_ == 4 and fast.h_ == exact.h_
    cos = np.linalg.svd(fast.components_ @ exact.components_.T, compute_uv=False)
    assert np.sqrt(max(0.0, 1.0 - cos.min() ** 2)) < 1e-6
    assert not np.array_equal(fast.components_, exact.components_)
    np.testing.assert_allclose(fast.mean_, exact.mean_, rtol=0, atol=1e-6)
    np.testing.assert_allclose(fast.explained_variance_, exact.explained_variance_, rtol=1e-6)
    np.testing.assert_allclose(fast.od_cutoff_, exact.od_cutoff_, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(res_fast.outlier_score), np.asarray(res_exact.outlier_score), rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(res_fast.outlier), np.asarray(res_exact.outlier))
    assert len(seen) == 2


def test_outlyingness_in_float64_leaves_the_scatter_in_float64():
    """Rows whose float32 copy cannot resolve a direction's spread (the outlyingness redone in
    float64), or that float32 cannot hold, let the copy go: the scatters after it are float64's."""
    from robustcore.subspace import _robpca_steps as steps
    rng = np.random.default_rng(13)
    Z = rng.standard_normal((2000, 30))
    Z[:1800] = Z[0] + 1e-6 * rng.standard_normal((1800, 30))   # most rows at a point: spreads float32 cannot see
    rows = _rows(Z)
    assert steps._outlyingness(rows.rows32, steps.pair_directions(rows.rows32, np.random.default_rng(0)),
                               1500, 1e-4 * steps.abs_max(rows.rows32), None) is None
    steps.outlyingness(rows, 1500, np.random.default_rng(0))
    assert rows.rows32 is None
    Z = rng.standard_normal((2000, 30))
    Z[5, 3] = 1e39                                             # beyond float32's range
    with np.errstate(over="ignore"):
        rows = _rows(Z)
    steps.outlyingness(rows, 1500, np.random.default_rng(0))
    assert rows.rows32 is None


def test_rescatter_by_blocks_is_the_scatter_of_the_new_rows():
    """_rescatter of centred rows (the rows that move read by blocks, their sums about the centre
    from their scatters) against the scatter of the new rows: with the float32 copy within 1e-6
    of its largest entry, without it within 1e-12; with nothing taken out; rows without a shift
    (octane's and glass's coordinates): the copied rows' update as before (its bits)."""
    from robustcore.subspace.robpca import _rescatter
    Z = _offset_table(seed=53)
    rng = np.random.default_rng(4)
    old = rng.random(Z.shape[0]) < 0.75
    new = old.copy()
    new[rng.choice(Z.shape[0], 200, replace=False)] ^= True     # a few rows move
    size = np.abs(Z - Z.mean(axis=0)).max()
    for rows, tol in ((_rows(Z), 1e-6), (CentredRows(Z, Z.mean(axis=0)), 1e-12)):
        m0, G0 = rows.scatter(old)
        m64, G64 = rows.scatter(new, exact=True)
        m1, G1 = _rescatter(rows, old, m0, G0, new)
        np.testing.assert_allclose(G1, G64, rtol=0, atol=tol * np.abs(G64).max())
        np.testing.assert_allclose(m1, m64, rtol=0, atol=tol * size)
        grown = old | new                                          # rows added only
        m2, G2 = _rescatter(rows, old, m0, G0, grown)
        np.testing.assert_allclose(G2, rows.scatter(grown, exact=True)[1], rtol=0, atol=tol * np.abs(G64).max())
    plain = CentredRows(Z - Z.mean(axis=0))
    p0, P0 = robpca_module._subset_scatter(plain, old)
    p1, P1 = _rescatter(plain, old, p0, P0, new)
    A, D = plain[new & ~old] - p0, plain[old & ~new] - p0
    shift = (A.sum(axis=0) - D.sum(axis=0)) / int(new.sum())
    np.testing.assert_array_equal(P1, P0 + A.T @ A - D.T @ D - int(new.sum()) * np.outer(shift, shift))
    np.testing.assert_array_equal(p1, p0 + shift)


def test_reads_less_a_centre_are_the_rows_less_it_to_rounding():
    """each_block with ``about``: every row less the centre, in one subtraction (with a shift
    and without), to rounding; and project's projections and distances about a centre from that
    read, against the explicit ones."""
    rng = np.random.default_rng(59)
    Z = 1e3 + rng.standard_normal((3000, 120)) * np.linspace(0.1, 10.0, 120)
    mean = Z.mean(axis=0)
    about = rng.standard_normal(120)
    want = (Z - mean) - about
    V = np.linalg.qr(rng.standard_normal((120, 3)))[0]
    E = want - (want @ V) @ V.T
    for rows in (CentredRows(Z, mean), CentredRows(Z - mean)):
        got = np.empty_like(Z)
        rows.each_block(lambda s, B, buf: got.__setitem__(slice(s, s + B.shape[0]), B), about=about)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12 * np.abs(Z).max())
        P, spe = rows.project(V, about=about)
        np.testing.assert_allclose(P, V.T @ want.T, rtol=0, atol=1e-11 * np.abs(Z).max())
        np.testing.assert_allclose(spe, np.einsum("ij,ij->i", E, E), rtol=1e-10)
