"""ROBPCA's fast paths against the plain computations they replace: C-steps of many candidates
at once on the points as columns, the leading eigenpairs only, the Cholesky test of the
smallest eigenvalue, and the univariate MCD's raw estimate from its window sums."""
import numpy as np
import pytest

from robustcore.subspace import _robpca_mcd as mcd
from robustcore.subspace import _robpca_steps as steps
from robustcore.subspace.robpca import _above, _spectrum


def _plain_c_steps(X, subset, max_iter=100):
    """Concentration steps written out: rows as rows, the h nearest by argpartition."""
    h = len(subset)
    idx = np.sort(subset)
    best = np.inf
    for _ in range(max_iter):
        loc = X[idx].mean(axis=0)
        cov = np.cov(X[idx].T, bias=True)
        sign, ld = np.linalg.slogdet(cov)
        ld = ld if sign > 0 else -np.inf
        if not ld < best - 1e-12 * max(1.0, abs(ld)):
            return idx, min(ld, best)
        best = ld
        d2 = np.einsum("ij,ij->i", (X - loc) @ np.linalg.inv(cov), X - loc)
        new = np.sort(np.argpartition(d2, h - 1)[:h])
        if np.array_equal(new, idx):
            return idx, best
        idx = new
    return idx, best


def test_c_steps_of_many_candidates_at_once_are_each_ones_plain_c_steps():
    rng = np.random.default_rng(7)
    X = np.r_[rng.standard_normal((300, 3)) * [3.0, 1.0, 0.3], rng.normal(5.0, 0.5, (100, 3))]
    h = 260
    subsets = np.stack([rng.choice(400, h, replace=False) for _ in range(6)])
    got = mcd._converge(mcd._columns(X), subsets)
    for sub, (idx, ld) in zip(subsets, got):
        want_idx, want_ld = _plain_c_steps(X, sub)
        np.testing.assert_array_equal(idx, want_idx)
        assert ld == pytest.approx(want_ld, rel=1e-12, abs=1e-12)
    # one at a time, the same as all at once
    for sub, (idx, ld) in zip(subsets, got):
        one, ld1 = mcd.c_steps(X, sub)
        np.testing.assert_array_equal(one, idx)
        assert ld1 == ld


def test_nearest_breaks_ties_at_the_cut_to_exactly_h():
    d2 = np.array([[0.5, 1.0, 1.0, 1.0, 3.0, 0.1], [4.0, 3.0, 2.0, 1.0, 0.0, 5.0]])
    idx = mcd._nearest(d2, 3)
    assert idx.shape == (2, 3)
    assert {0, 5} < set(idx[0]) and len(set(idx[0]) & {1, 2, 3}) == 1 and np.all(np.diff(idx[0]) > 0)
    np.testing.assert_array_equal(idx[1], [2, 3, 4])


def test_leading_eigenpairs_are_those_of_the_full_decomposition():
    rng = np.random.default_rng(3)
    B = rng.standard_normal((200, 30)) * np.linspace(5.0, 0.1, 30)
    G = B.T @ B
    full_ev, full_V = _spectrum(G, 200)
    for top in (1, 4, 10):
        ev, V = _spectrum(G, 200, top=top)
        np.testing.assert_allclose(ev, full_ev[:top], rtol=1e-12)
        np.testing.assert_allclose(np.abs(np.sum(V * full_V[:, :top], axis=0)), 1.0, atol=1e-10)
    # the rule for k from the leading kmax eigenvalues and the trace: as from all of them
    total = np.trace(G) / 199
    for kmax in (2, 5, 10):
        assert steps.choose_k(_spectrum(G, 200, top=kmax)[0], kmax, total=total) == steps.choose_k(full_ev, kmax)


def test_cholesky_test_of_the_smallest_eigenvalue():
    rng = np.random.default_rng(4)
    Q = np.linalg.qr(rng.standard_normal((12, 12)))[0]
    for smallest, floor, want in ((1.0, 0.999, True), (1.0, 1.001, False), (0.0, 1e-12, False),
                                  (-1e-3, 0.0, False), (1e-6, 0.0, True)):
        w = np.r_[smallest, np.linspace(2.0, 50.0, 11)]
        G = (Q * w) @ Q.T
        assert _above(G, floor) is want
        assert want == (np.linalg.eigvalsh(G)[0] > floor)


def _window_brute(y, h):
    """The raw univariate MCD: the h consecutive order statistics of least variance."""
    s = np.sort(y)
    var = [s[i:i + h].var() for i in range(len(s) - h + 1)]
    i = int(np.argmin(var))
    return s[i:i + h].mean(), var[i]


def test_raw_window_from_its_sums_keeps_its_digits_far_from_zero_and_beside_huge_tails():
    """The raw estimate from the window search's running sums (values about the median)
    against the window's own mean and variance, with the data 1e8 from zero and tails of 1e12:
    the reweighted location and scale (what the rest uses) to 1e-9."""
    rng = np.random.default_rng(6)
    y = np.r_[rng.standard_normal(300), 1e12 * rng.standard_normal(40), -1e12 * np.abs(rng.standard_normal(20))]
    for shift in (0.0, 1e8):
        z = y + shift
        h = 270
        mu, var = _window_brute(z, h)
        loc, scale = steps.unimcd(z, h)
        cut = np.sqrt(steps._CHI2_1_CRIT * var * steps.trim_factor(h / z.size, 1))
        kept = z[(z > mu - cut) & (z < mu + cut)]
        want_scale = np.sqrt(kept.var() * steps.trim_factor(kept.size / z.size, 1))
        assert loc == pytest.approx(kept.mean(), rel=1e-12, abs=1e-9)
        assert scale == pytest.approx(want_scale, rel=1e-9)


def test_two_c_steps_of_all_parts_at_once_are_each_parts_own():
    rng = np.random.default_rng(8)
    P0 = rng.standard_normal((4, 60, 3)) * [2.0, 1.0, 0.5]
    P0[:, :8] += 6.0
    P0[2, :, 2] = np.round(P0[2, :, 2])          # ties in one coordinate
    starts = [mcd._random_starts(P0[p], 25, rng) for p in range(4)]
    starts[3] = (starts[3][0][:0], starts[3][1][:0])      # a part left with no start
    got = mcd._two_csteps_parts(P0, starts, 40)
    # with the starts' inverses given (every part with its starts): the same bits
    full = [mcd._random_starts(P0[p], 25, np.random.default_rng(p)) for p in range(4)]
    inverses = np.stack([np.linalg.inv(c) for _, c in full])
    for a, b in zip(mcd._two_csteps_parts(P0, full, 40, inverses), mcd._two_csteps_parts(P0, full, 40)):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)
    for p in range(4):
        loc, cov, ld, _ = mcd._two_csteps(mcd._Features(P0[p]), *starts[p], 40)
        np.testing.assert_allclose(got[p][0], loc, rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(got[p][1], cov, rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(got[p][2], ld, rtol=1e-12, atol=1e-13)


def test_regularity_from_the_inverse_is_the_eigenvalue_rule():
    rng = np.random.default_rng(9)
    Q = np.linalg.qr(rng.standard_normal((4, 4)))[0]
    conds = [1.0, 1e6, 1e11, 2e11, 5e11, 1e13, 1e16, np.inf]
    cov = np.stack([(Q * np.r_[1.0 / c if np.isfinite(c) else 0.0, 0.5, 0.7, 1.0]) @ Q.T for c in conds])
    ld, keep, A = mcd._regular(cov)
    w = np.linalg.eigvalsh(cov)
    np.testing.assert_array_equal(keep, w[:, 0] > 1e-12 * w[:, -1])
    # the log determinants: the matrices' own (eigenvalues of 1e-11 hold about 5 digits after
    # rounding the entries, so both ways agree to about 1e-5 there)
    exact = np.array([np.log(0.35 / c) if np.isfinite(c) else -np.inf for c in conds])
    np.testing.assert_allclose(ld[keep], exact[keep], atol=1e-4)
    np.testing.assert_allclose(A[keep], np.linalg.inv(cov[keep]), rtol=1e-6)


@pytest.mark.parametrize("k", [1, 3, 6])
def test_regularity_of_a_large_batch_from_cholesky_is_the_lu_routes(k, monkeypatch):
    """From _CHOLESKY_BATCH covariances on, _regular takes the log determinants and inverses
    from one batched Cholesky factorisation: the LU route's numbers to rounding and the same
    decisions, also with near-singular and singular matrices in the batch (then a matrix is
    not positive definite, and the LU route decides every one)."""
    rng = np.random.default_rng(11)
    b = mcd._CHOLESKY_BATCH + 20
    X = rng.standard_normal((b, 40, k)) * rng.uniform(0.1, 10.0, (b, 1, k))
    cov = np.einsum("bni,bnj->bij", X, X) / 40
    ld, keep, A = mcd._cholesky_inverse(cov)
    assert keep.all()
    np.testing.assert_allclose(ld, np.linalg.slogdet(cov)[1], rtol=0, atol=1e-12)
    np.testing.assert_allclose(A, np.linalg.inv(cov), rtol=1e-11, atol=1e-11 * np.abs(A).max())
    got, want = mcd._regular(cov), _regular_by_lu(cov, monkeypatch)
    np.testing.assert_array_equal(got[1], want[1])
    np.testing.assert_allclose(got[0], want[0], rtol=0, atol=1e-12)
    # near-singular (decided by the eigenvalue rule) and singular members
    Q = np.linalg.qr(rng.standard_normal((k, k)))[0]
    for i, c in enumerate([1e11, 1e13, np.inf][:k + 1]):
        w = np.linspace(1.0, 2.0, k)
        w[0] = 1.0 / c if np.isfinite(c) else 0.0
        cov[i] = (Q * w) @ Q.T
    got, want = mcd._regular(cov), _regular_by_lu(cov, monkeypatch)
    np.testing.assert_array_equal(got[1], want[1])
    np.testing.assert_allclose(got[0][got[1]], want[0][want[1]], rtol=0, atol=1e-9)
    if k > 1:
        assert not got[1][1:3].any() and got[1][3:].all()


def _regular_by_lu(cov, monkeypatch):
    """_regular as it was for every batch: numpy's slogdet and inv (LU), matrix by matrix."""
    with monkeypatch.context() as m:
        m.setattr(mcd, "_CHOLESKY_BATCH", 10 ** 9)
        return mcd._regular(cov)


def _starts_one_part_at_a_time(S0, parts, count, rng):
    return [mcd._random_starts(S0[rows], count, rng) for rows in parts]


@pytest.mark.parametrize("singular", [False, True])
def test_every_parts_starts_at_once_are_each_parts_own_with_the_same_draws(singular):
    """The batch of all parts' random starts against drawing them part by part: the same
    starts to the bit and the generator left in the same state, also when some (k+1)-subset is
    singular (then the batch gives way, from the state it began with, to the part-by-part
    draws that grow the singular starts)."""
    rng = np.random.default_rng(10)
    S0 = rng.standard_normal((600, 3)) * [2.0, 1.0, 0.5]
    if singular:
        S0[:400] = np.round(S0[:400])          # many repeated rows: some starts are flat
    parts = np.array_split(rng.permutation(600), 4)
    a, b = np.random.default_rng(3), np.random.default_rng(3)
    got, inverses = mcd._part_starts(S0, parts, 30, a)
    want = _starts_one_part_at_a_time(S0, parts, 30, b)
    assert len(got) == len(want) == 4
    for p, ((gl, gc), (wl, wc)) in enumerate(zip(got, want)):
        np.testing.assert_array_equal(gl, wl)
        np.testing.assert_array_equal(gc, wc)
        if inverses is not None:
            # (the batch's inverse covariances, for the first C-step: its own to rounding)
            np.testing.assert_allclose(inverses[p], np.linalg.inv(gc), rtol=1e-12,
                                       atol=1e-12 * np.abs(inverses[p]).max())
    assert a.random() == b.random()
    assert (inverses is None) == singular
    # the case each parameter is for did occur: singular starts grown (more draws) or none
    assert _grown_starts(S0, parts, 30) == singular


def _grown_starts(S0, parts, count):
    """Whether drawing the starts part by part grows some singular start (it draws more)."""
    a, b = np.random.default_rng(3), np.random.default_rng(3)
    _starts_one_part_at_a_time(S0, parts, count, a)
    for rows in parts:
        b.random((count, rows.size))
    return a.random() != b.random()


def test_window_sums_find_the_window_of_least_variance_of_every_row():
    """The raw window of the univariate MCD from its running sums, against every window's
    variance computed on its own, on rows with ties, a far outlying block and a shift."""
    rng = np.random.default_rng(11)
    R = rng.standard_normal((5, 400))
    R[1, :120] = 30.0 + rng.standard_normal(120)         # a clustered outlying block
    R[2] = np.round(R[2] * 2.0)                          # ties
    R[3] += 1e6
    h = 300
    loc, _ = steps.unimcd_rows(R, h)
    for i in range(R.shape[0]):
        z = R[i]
        mu, var = _window_brute(z, h)
        cut = np.sqrt(steps._CHI2_1_CRIT * var * steps.trim_factor(h / z.size, 1))
        kept = z[(z > mu - cut) & (z < mu + cut)]
        assert loc[i] == pytest.approx(kept.mean(), rel=1e-12, abs=1e-9)


def test_centred_rows_read_as_the_stored_copy_would():
    """CentredRows (Z - mean made where it is read) against the stored copy, over several
    blocks: rows by index and by mask, the float32 copy and the blocks to the bit, the sum of
    squares, a Gram matrix of spread rows and the projections to rounding; with no shift, Z
    itself."""
    from robustcore.subspace._robpca_rows import CentredRows, dense
    rng = np.random.default_rng(13)
    Z = 1e3 + rng.standard_normal((2000, 300)) * np.linspace(0.1, 10.0, 300)
    mean = Z.mean(axis=0)
    Zc = Z - mean
    rows = CentredRows(Z, mean)
    assert rows.rows_per_block() < 1000                  # three blocks or more
    idx = rng.choice(2000, 700, replace=False)
    mask = rng.random(2000) < 0.6
    np.testing.assert_array_equal(rows[idx], Zc[idx])
    np.testing.assert_array_equal(rows[mask], Zc[mask])
    assert np.array_equal(rows[mask][0], Zc[mask][0]) and Z[0, 0] > 900.0    # Z left as it was
    np.testing.assert_array_equal(rows.astype(np.float32), Zc.astype(np.float32))
    np.testing.assert_array_equal(np.vstack([B.copy() for _, B in rows.blocks()]), Zc)
    np.testing.assert_array_equal(dense(rows), Zc)
    # one read for the affine span's test and the outlyingness: the sum of squares, the Gram
    # matrix of every 3rd row, and the float32 copy, handed to the next astype (then made anew)
    sq, G, err = rows.survey(3)
    assert sq == pytest.approx(np.einsum("ij,ij->", Zc, Zc), rel=1e-12)
    # (the Gram matrix from the float32 copy's products, within the error the survey states)
    assert 0.0 < np.linalg.norm(G - Zc[::3].T @ Zc[::3], 2) <= err < 1e-5 * sq
    kept = rows.astype(np.float32)
    np.testing.assert_array_equal(kept, Zc.astype(np.float32))
    again = rows.astype(np.float32)
    assert again is not kept and np.array_equal(again, kept)
    V = np.linalg.qr(rng.standard_normal((300, 4)))[0]
    P, none = rows.project(V)
    np.testing.assert_allclose(P, V.T @ Zc.T, rtol=1e-12, atol=1e-9)
    assert none is None
    plain = CentredRows(Zc)
    np.testing.assert_array_equal(plain.project(V)[0], V.T @ Zc.T)
    # with a centre, the same read (and product) gives the projections about it and each row's
    # squared distance to centre + span(V), as the explicit residual gives it (with or without
    # a shift)
    about = rng.standard_normal(300)
    E = (Zc - about) - ((Zc - about) @ V) @ V.T
    for source in (rows, plain):
        P2, spe = source.project(V, about=about)
        np.testing.assert_allclose(P2, V.T @ (Zc - about).T, rtol=0, atol=1e-12 * np.abs(Zc).max())
        np.testing.assert_allclose(spe, np.einsum("ij,ij->i", E, E), rtol=1e-10)
    assert dense(plain) is Zc and plain.astype(np.float32).dtype == np.float32


def test_scatter_of_a_subset_read_by_blocks_is_the_copied_rows_scatter():
    """CentredRows.scatter (the subset's sums by blocks, less count x its mean's outer product)
    against the mean and scatter of the copied, centred rows, for the h least outlying rows of
    offset columns over several blocks (the mask uneven across them): the mean to 1e-13 of the
    rows' size, the matrix to 1e-13 of its largest entry; and _rescatter through it when most
    rows change. Without a shift the rows are copied out, as before (the same bits)."""
    from robustcore.subspace._robpca_rows import CentredRows
    from robustcore.subspace.robpca import _rescatter, _scatter, _subset_scatter
    rng = np.random.default_rng(17)
    Z = 1e3 + rng.standard_normal((3000, 250)) * np.linspace(0.1, 10.0, 250)
    Z[:300] += 30.0                                    # a cluster off the centre, all in one block
    mean = Z.mean(axis=0)
    rows = CentredRows(Z, mean)
    assert rows.rows_per_block() < 1500
    mask = rng.random(3000) < 0.75
    mask[:300] = False
    m0, G0 = _scatter((Z - mean)[mask])
    m1, G1 = _subset_scatter(rows, mask)
    np.testing.assert_allclose(m1, m0, rtol=0, atol=1e-13 * np.abs(Z - mean).max())
    np.testing.assert_allclose(G1, G0, rtol=0, atol=1e-13 * np.abs(G0).max())
    assert np.array_equal(G1, G1.T)
    new = ~mask
    m2, G2 = _rescatter(rows, mask, m1, G1, new)          # most rows change: taken afresh
    m3, G3 = _scatter((Z - mean)[new])
    np.testing.assert_allclose(G2, G3, rtol=0, atol=1e-13 * np.abs(G3).max())
    np.testing.assert_allclose(m2, m3, rtol=0, atol=1e-13 * np.abs(Z - mean).max())
    plain = CentredRows(Z - mean)
    m4, G4 = _subset_scatter(plain, mask)
    np.testing.assert_array_equal(G4, G0)
    np.testing.assert_array_equal(m4, m0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_univariate_mcds_with_reused_scratch_are_each_chunks_own(dtype):
    """unimcd_rows with one Scratch reused over chunks of rows (a smaller last chunk, as the
    outlyingness's chunks; float32 projections and float64 rows) against a fresh call per
    chunk, to the bit; and the row given is left as it was."""
    rng = np.random.default_rng(23)
    R = (rng.standard_normal((29, 1500)) * rng.uniform(0.5, 50.0, (29, 1)) + 1e3).astype(dtype)
    R[3, :1200] = 7.0                                  # an exact fit: scale 0
    before = R.copy()
    h = 1130
    work = steps.Scratch()
    for c in range(0, 29, 12):
        got = steps.unimcd_rows(R[c:c + 12], h, work)
        want = steps.unimcd_rows(R[c:c + 12].copy(), h)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
    np.testing.assert_array_equal(R, before)
    assert steps.unimcd_rows(R[3:4], h, work)[1][0] == 0.0


def test_surveys_float32_copy_and_its_largest_entry_are_the_plain_ones():
    """single_rows takes survey's float32 copy with its largest |entry| (kept block by block)
    once: the copy of the centred rows and abs_max of it, to the bit, also for an entry beyond
    float32's range (inf); then, and for an array, it makes them anew."""
    from robustcore.subspace._robpca_rows import CentredRows, single_rows
    rng = np.random.default_rng(29)
    Z = rng.standard_normal((3000, 120)) * np.linspace(0.1, 30.0, 120) - 5.0
    Z[2500, 7] = -4e3                                   # the largest |entry|, in the last block
    mean = Z.mean(axis=0)
    Zc = Z - mean
    rows = CentredRows(Z, mean)
    assert rows.rows_per_block() < 2500
    rows.survey(4)
    X32, size = single_rows(rows)
    np.testing.assert_array_equal(X32, Zc.astype(np.float32))
    assert size == steps.abs_max(Zc.astype(np.float32)) == float(np.float32(abs(Zc[2500, 7])))
    again, size2 = single_rows(rows)
    assert again is not X32 and np.array_equal(again, X32) and size2 == size
    assert single_rows(Zc)[1] == size
    Z[10, 3] = 1e39                                     # beyond float32: inf in the copy
    rows = CentredRows(Z, Z.mean(axis=0))
    with np.errstate(over="ignore"):
        rows.survey(4)
    assert single_rows(rows)[1] == np.inf


def test_random_starts_are_the_first_rows_of_each_random_order():
    """FastMCD's (k+1)-subsets by a selection and a comparison against argpartition's: from
    the same uniforms, the same rows of each start (as sorted indices), k + 1 distinct ones."""
    rng = np.random.default_rng(21)
    U = rng.random((400, 300))
    got = mcd._nearest(U, 6)
    want = np.sort(np.argpartition(U, 5, axis=1)[:, :6], axis=1)
    np.testing.assert_array_equal(got, want)
    S0 = rng.standard_normal((300, 5))
    loc, cov = mcd._random_starts(S0, 400, np.random.default_rng(4))
    starts = mcd._nearest(np.random.default_rng(4).random((400, 300)), 6)
    np.testing.assert_allclose(loc, S0[starts].mean(axis=1), rtol=0, atol=1e-15)
    np.testing.assert_allclose(cov[7], np.cov(S0[starts[7]].T, bias=True), rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("shape, rank", [((3000, 40), None), ((300, 40), None), ((3000, 40), 20)])
def test_final_rows_from_the_projection_pass_are_the_residual_kernels(shape, rank):
    """Every row's SPE and coordinates as the fit keeps them (from the MCD stage's projection
    pass when the rows are their own coordinates: a tall table read by blocks or a short one
    stored, _final_projection) against robustcore._residual's kernel on the fitted model, and
    a table whose rows span fewer directions (coordinates in their span: the kernel itself)."""
    from robustcore import ROBPCA
    from robustcore._residual import residual_scores
    rng = np.random.default_rng(22)
    n, d = shape
    X = 5.0 + rng.standard_normal((n, 4)) * [4.0, 3.0, 2.0, 1.0] @ rng.standard_normal((4, d))
    if rank is None:
        X += 0.1 * rng.standard_normal((n, d))
    else:
        X += 0.1 * rng.standard_normal((n, rank)) @ rng.standard_normal((rank, d))
    X[:n // 20] += 8.0
    m = ROBPCA(n_components=3, random_state=0, scale="none")
    res = m.fit_row_results(X)
    spe, _, T = residual_scores(X, m.components_, m.mean_, want_t2=False, want_projection=True)
    size = np.sqrt(np.max(spe + np.einsum("ij,ij->i", T, T)))
    np.testing.assert_allclose(res.spe, spe, rtol=1e-9, atol=1e-12 * size ** 2)
    np.testing.assert_allclose(res.t2, np.sum(T ** 2 / m.explained_variance_, axis=1), rtol=1e-12)
    np.testing.assert_array_equal(res.outlier, m.predict(X) == -1)


def test_centred_rows_share_one_block_buffer():
    """Every read by blocks uses one buffer (and the scatter too), each read's numbers as if
    it had its own."""
    from robustcore.subspace._robpca_rows import CentredRows
    rng = np.random.default_rng(23)
    Z = 3.0 + rng.standard_normal((1500, 300))
    mean = Z.mean(axis=0)
    rows = CentredRows(Z, mean)
    first = [B.copy() for _, B in rows.blocks()]
    mask = rng.random(1500) < 0.5
    m, G = rows.scatter(mask)
    again = [B.copy() for _, B in rows.blocks()]
    assert all(np.array_equal(a, b) for a, b in zip(first, again))
    np.testing.assert_array_equal(np.vstack(again), Z - mean)
    Zm = (Z - mean)[mask]
    Zc = Zm - Zm.mean(axis=0)
    np.testing.assert_allclose(G, Zc.T @ Zc, rtol=0, atol=1e-10 * np.abs(G).max())
    bufs = {id(rows._buf)}
    for _, B in rows.blocks():
        assert np.shares_memory(B, rows._buf)
    rows.project(np.eye(300)[:, :2], about=np.zeros(300))
    assert {id(rows._buf)} == bufs


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_univariate_mcds_from_one_arena_are_those_of_separate_slots(dtype):
    """A Scratch cut from one 2 MB-aligned arena of unimcd_scratch's size holds every slot of
    unimcd_rows (none falls back to an array of its own), and gives the numbers of a Scratch
    whose slots are separate arrays, to the bit, over chunks with a smaller last one."""
    rng = np.random.default_rng(29)
    m, n, h = 13, 40_000, 30_000            # (the slots take 11 MB in float32: an arena of huge pages)
    R = (rng.standard_normal((30, n)) * rng.uniform(0.5, 50.0, (30, 1)) + 1e3).astype(dtype)
    arena = steps.Scratch(steps.unimcd_scratch(m, n, h, dtype))
    plain = steps.Scratch()
    for c in range(0, 30, m):
        for g, w in zip(steps.unimcd_rows(R[c:c + m], h, arena), steps.unimcd_rows(R[c:c + m], h, plain)):
            np.testing.assert_array_equal(g, w)
    assert arena._arena.ctypes.data % (1 << 21) == 0
    assert all(np.shares_memory(buf, arena._arena) for buf in arena._bufs.values())
    assert len(arena._bufs) == (4 if dtype == np.float64 else 5)
    assert arena._used <= arena._arena.size


def test_outlyingness_mcds_take_their_scratch_from_the_rows_block_buffer(monkeypatch):
    """The outlyingness's univariate MCDs cut their scratch from the centred rows' block buffer,
    memory an earlier read touched (CentredRows.spare_bytes), in chunks small enough to fit it,
    rather than from a fresh arena; the outlyingness is that of plain rows with an arena of
    their own, to the bit."""
    from robustcore.subspace import _robpca_rows
    from robustcore.subspace._robpca_rows import CentredRows, dense
    # (one thread: on two, the helper's Scratch is cut from a second block buffer of the rows)
    monkeypatch.setattr(_robpca_rows, "pass_threads", lambda environ=None: 1)
    rng = np.random.default_rng(31)
    Z = 3.0 + rng.standard_normal((4000, 100)) * rng.uniform(0.5, 3.0, 100)
    Z[:300] += 8.0
    rows = CentredRows(Z, Z.mean(axis=0))
    rows.survey(4)                                  # (the read that makes the block buffer)
    seen = []
    work_of = steps._mcd_work

    def spy(m, n, h, dtype, spare):
        chunk, work = work_of(m, n, h, dtype, spare)
        seen.append((m, chunk, work))
        return chunk, work
    monkeypatch.setattr(steps, "_mcd_work", spy)
    h = 3000
    got = steps.outlyingness(rows, h, np.random.default_rng(5))
    (m, chunk, work), = seen
    assert work._arena is not None and np.shares_memory(work._arena, rows._buf)
    assert m // 2 <= chunk < m and steps.unimcd_scratch(chunk, 4000, h, np.float32) <= rows._buf.nbytes
    assert all(np.shares_memory(buf, rows._buf) for buf in work._bufs.values())
    want = steps.outlyingness(dense(rows), h, np.random.default_rng(5))
    assert seen[1][2]._arena is not None and not np.shares_memory(seen[1][2]._arena, rows._buf)
    np.testing.assert_array_equal(got, want)


def test_a_block_of_projections_is_one_huge_page(monkeypatch):
    """The outlyingness makes its float32 projections in blocks of at most 2 MB, each starting
    on a 2 MB boundary: one huge page of fresh memory (8.4 MB at 10,000 rows before)."""
    from robustcore.subspace import _robpca_rows
    made = []

    def spy(shape, dtype):
        out = _robpca_rows.huge_empty(shape, dtype)
        made.append(out)
        return out
    monkeypatch.setattr(steps, "huge_empty", spy)
    rng = np.random.default_rng(37)
    X = rng.standard_normal((10_000, 30))
    steps.outlyingness(X, 7_500, np.random.default_rng(1))
    # (one buffer per lane running at once: one on one thread, two on two)
    blocks = [a for a in made if a.shape[1:] == (10_000,)]
    assert 1 <= len(blocks) <= 2
    for Y in blocks:
        assert Y.dtype == np.float32 and Y.nbytes <= 1 << 21 and Y.shape[0] >= 50
        assert Y.ctypes.data % (1 << 21) == 0


def test_huge_empty_starts_on_a_huge_page_and_is_an_ordinary_array():
    """Arrays of 2 MB or more start on a 2 MB boundary (small ones are plain np.empty), with the
    shape, dtype and C order asked for, and hold what is written to them."""
    from robustcore.subspace._robpca_rows import huge_empty
    big = huge_empty((209, 10_000), np.float32)
    assert big.ctypes.data % (1 << 21) == 0
    assert big.shape == (209, 10_000) and big.dtype == np.float32 and big.flags.c_contiguous
    big[...] = np.arange(10_000, dtype=np.float32)
    np.testing.assert_array_equal(big[208], np.arange(10_000, dtype=np.float32))
    small = huge_empty((10, 10), np.float64)
    assert small.shape == (10, 10) and small.flags.owndata
    # 1-2 MB (the rows' block buffer, a block of projections): one huge page, from its start
    block = huge_empty((1310, 200), np.float64)
    assert block.ctypes.data % (1 << 21) == 0 and block.shape == (1310, 200)


@pytest.fixture
def two_threads(monkeypatch):
    """Pass threads on two cores, whatever this machine's load (the governor's first look at
    the machine sees it idle): lanes run side by side on the lane pool."""
    import robustcore._threads as threads_module
    from robustcore.subspace import _robpca_rows
    monkeypatch.setattr(_robpca_rows, "pass_threads", lambda environ=None: 2)
    monkeypatch.setattr(threads_module, "busy_elsewhere", lambda samples=3: 0.0)


def _runner(jobs):
    from robustcore.subspace._robpca_rows import Lanes
    return Lanes(jobs, adaptive=False)


def _threads_of(monkeypatch, module, name, helper=False):
    """The threads that call module.name from now on (a spy in its place). With ``helper``, the
    caller's first call waits (up to 5 s) for a call from another thread, so that the helper
    thread takes a block before the caller has taken them all."""
    import threading
    seen = set()
    real = getattr(module, name)
    caller = threading.get_ident()
    helped = threading.Event()

    def spy(*a, **kw):
        me = threading.get_ident()
        if me != caller:
            helped.set()
        elif caller not in seen and helper:
            helped.wait(5.0)
        seen.add(me)
        return real(*a, **kw)
    monkeypatch.setattr(module, name, spy)
    return seen



def test_blocks_on_two_threads_add_in_the_blocks_order_and_a_slow_thread_holds_one_block():
    """Lanes: each thread takes the next block not yet taken; what a block adds to a sum waits
    for the blocks before it (in_turn), so the sum is one thread's to the bit even when blocks
    finish out of order; a helper that sleeps through its block leaves every other block to the
    caller."""
    import threading
    import time
    caller = threading.get_ident()
    values = np.random.default_rng(3).standard_normal(12) * 10.0 ** np.arange(12)
    for slow in ("caller", "helper"):
        lanes = _runner(2)
        order, who, total = [], {}, np.zeros(1)

        def block(state, i, lanes=lanes, order=order, who=who, total=total, slow=slow):
            mine = threading.get_ident() == caller
            who[i] = mine
            if (slow == "caller") == mine and i < 2:
                time.sleep(0.2 if slow == "helper" else 0.02)
            with lanes.in_turn(i):
                order.append(i)
                np.add(total, values[i], out=total)
        states = lanes.run(lambda: None, block, 12)
        assert len(states) == 2 and order == list(range(12))
        want = np.zeros(1)
        for v in values:
            np.add(want, v, out=want)
        assert total[0] == want[0]
        helped = sum(not mine for mine in who.values())
        # (a slow caller: the helper takes the blocks after its first; a slow helper: its one)
        assert helped >= 1 if slow == "caller" else helped <= 1


def test_outlyingness_on_two_threads_is_one_threads_to_the_bit(monkeypatch):
    """The blocks of directions on one thread and on two: the same bits (each direction's MCD is
    its own, the maximum exact); against one block of every direction, the same to float32's
    rounding of the products."""
    import threading
    rng = np.random.default_rng(41)
    X = (3.0 + rng.standard_normal((3000, 40)) * rng.uniform(0.5, 3.0, 40)).astype(np.float32)
    X[:200] += 6.0
    A = steps.pair_directions(X, np.random.default_rng(2)).astype(np.float32)
    h = 2250
    single = steps._outlyingness(X, A, h, 0.0, None)            # 250 directions, one block
    monkeypatch.setattr(steps, "_BLOCK_ENTRIES", 3000 * 20)     # 20 directions a block
    seen = _threads_of(monkeypatch, steps, "_chunk_outlyingness")
    one = steps._outlyingness(X, A, h, 0.0, None, runner=_runner(1))
    assert seen == {threading.get_ident()}
    seen = _threads_of(monkeypatch, steps, "_chunk_outlyingness", helper=True)
    two = steps._outlyingness(X, A, h, 0.0, None, runner=_runner(2))
    assert len(seen) == 2
    np.testing.assert_array_equal(two, one)
    np.testing.assert_allclose(one, single, rtol=1e-5)


def test_outlyingness_on_two_threads_redoes_in_float64_what_float32_cannot_resolve(monkeypatch, two_threads):
    """A lane that meets a direction float32 cannot resolve stops both lanes, and the whole
    outlyingness is redone in float64 (as on one thread)."""
    rng = np.random.default_rng(5)
    X = rng.standard_normal((3000, 3))
    monkeypatch.setattr(steps, "_BLOCK_ENTRIES", 3000 * 20)
    exact = steps.outlyingness(X, 2250, np.random.default_rng(1), single=False)
    monkeypatch.setattr(steps, "_SINGLE_FLOOR", 1.0)
    np.testing.assert_array_equal(steps.outlyingness(X, 2250, np.random.default_rng(1)), exact)


def test_reads_of_the_rows_on_two_threads_are_one_threads_to_the_bit():
    """The scatter of a subset and every read by blocks (each_block) on one thread and on two:
    the same bits, the rows' shared buffer handed back."""
    from robustcore.subspace._robpca_rows import CentredRows
    rng = np.random.default_rng(43)
    Z = 1e3 + rng.standard_normal((3000, 250)) * np.linspace(0.1, 10.0, 250)
    mean = Z.mean(axis=0)
    rows = CentredRows(Z, mean)
    assert rows.rows_per_block() < 1500                  # three blocks
    mask = rng.random(3000) < 0.75
    m1, G1 = rows.scatter(mask, runner=_runner(1))
    m2, G2 = rows.scatter(mask, runner=_runner(2))
    np.testing.assert_array_equal(m2, m1)
    np.testing.assert_array_equal(G2, G1)
    Zm = (Z - mean)[mask]
    np.testing.assert_allclose(G1, (Zm - Zm.mean(axis=0)).T @ (Zm - Zm.mean(axis=0)), rtol=0,
                               atol=1e-12 * np.abs(G1).max())
    for runner in (_runner(1), _runner(2)):
        got = np.empty_like(Z)
        rows.each_block(lambda s, B, buf: got.__setitem__(slice(s, s + B.shape[0]), B), runner=runner)
        np.testing.assert_array_equal(got, Z - mean)
    assert len(rows._free) <= 1 and not rows._lent      # (a second buffer only if the threads overlapped)


def test_a_fit_on_two_threads_is_one_threads_to_the_bit(monkeypatch):
    """A whole fit (outlyingness, scatter, orthogonal distances, projections in lanes) gives the
    same fitted attributes and row results, to the bit, with one pass thread and with two."""
    import robustcore._threads as threads_module
    from robustcore import ROBPCA
    from robustcore.subspace import _robpca_rows
    rng = np.random.default_rng(47)
    X = 2.0 + rng.standard_normal((3000, 4)) @ rng.standard_normal((4, 200)) + 0.1 * rng.standard_normal((3000, 200))
    X[:150] += 3.0 * rng.standard_normal(200)
    monkeypatch.setattr(threads_module, "busy_elsewhere", lambda samples=3: 0.0)
    # every read on the threads asked for: on a loaded machine the governor would otherwise put
    # the outlyingness on one thread after an earlier read got less than 1.4 cores from two
    monkeypatch.setattr(threads_module.Governor, "threaded", lambda self: self.jobs > 1)
    fits = []
    for jobs in (1, 2):
        monkeypatch.setattr(_robpca_rows, "pass_threads", lambda environ=None, jobs=jobs: jobs)
        seen = _threads_of(monkeypatch, steps, "_chunk_outlyingness", helper=jobs > 1)
        m = ROBPCA(n_components=4, random_state=0, scale="none")
        res = m.fit_row_results(X)
        assert len(seen) == jobs
        fits.append((m, res))
    (a, ra), (b, rb) = fits
    for name in ("components_", "mean_", "explained_variance_", "residual_eigenvalues_", "od_cutoff_",
                 "sd_cutoff_", "offset_", "n_components_", "h_"):
        np.testing.assert_array_equal(getattr(b, name), getattr(a, name), err_msg=name)
    np.testing.assert_array_equal(np.asarray(rb.outlier_score), np.asarray(ra.outlier_score))
    np.testing.assert_array_equal(np.asarray(rb.outlier), np.asarray(ra.outlier))


def test_outlyingness_of_few_directions_a_chunk_stays_on_one_thread(monkeypatch):
    """Where a chunk holds fewer than _THREADED_CHUNK directions (many rows), the outlyingness
    runs on the caller's thread alone even when two are offered (the GIL-bound steps would only
    add hand-offs)."""
    import threading
    rng = np.random.default_rng(53)
    X = rng.standard_normal((20_000, 3)).astype(np.float32)
    A = steps.pair_directions(X, np.random.default_rng(4)).astype(np.float32)
    assert steps._CHUNK_ENTRIES // 20_000 < steps._THREADED_CHUNK
    seen = _threads_of(monkeypatch, steps, "_chunk_outlyingness")
    two = steps._outlyingness(X, A, 15_000, 0.0, None, runner=_runner(2))
    assert seen == {threading.get_ident()}
    np.testing.assert_array_equal(two, steps._outlyingness(X, A, 15_000, 0.0, None, runner=_runner(1)))


def test_univariate_trim_factor_by_erfinv_is_the_chi2_quantiles(monkeypatch):
    """trim_factor(delta, 1) (chi2_1's quantile as 2 erfinv(delta)², not the incomplete gamma's
    slow inverse) against delta / P(chi2_3 <= chi2_1's quantile by scipy.stats) over shares from
    1e-9 to 1 - 1e-9: within 1e-13; 1 at 0 and 1; other k as before."""
    from scipy import stats
    delta = np.concatenate([np.geomspace(1e-9, 0.5, 400), 1.0 - np.geomspace(1e-9, 0.5, 400)])
    want = delta / stats.chi2.cdf(stats.chi2.ppf(delta, 1), 3)
    want3 = delta[::50] / stats.chi2.cdf(stats.chi2.ppf(delta[::50], 3), 5)
    real = steps.special.gammaincinv

    def only_for_other_k(a, p):
        assert np.all(np.asarray(a) != 0.5), "chi2_1's quantile by gammaincinv"
        return real(a, p)
    monkeypatch.setattr(steps.special, "gammaincinv", only_for_other_k)
    np.testing.assert_allclose(steps.trim_factor(delta, 1), want, rtol=1e-13)
    np.testing.assert_array_equal(steps.trim_factor(np.array([0.0, 1.0]), 1), [1.0, 1.0])
    np.testing.assert_allclose(steps.trim_factor(delta[::50], 3), want3, rtol=1e-13)


def test_the_cutoffs_quantiles_are_scipy_stats_numbers_without_its_wrappers(monkeypatch):
    # the normal and chi-squared quantiles of the cut-offs come from the special functions
    # scipy.stats calls, to the bit, and a fit calls no stats wrapper (30 us a call)
    from scipy import stats

    from robustcore import ROBPCA
    from robustcore.subspace._robpca_params import CRIT
    assert steps._NORMAL_CRIT == float(stats.norm.ppf(CRIT))
    for k in range(1, 31):
        assert float(steps.chi2_ppf(CRIT, k)) == float(stats.chi2.ppf(CRIT, k))
    want = float(np.sqrt(stats.chi2.ppf(CRIT, 2)))

    def refused(*a, **kw):
        raise AssertionError("a stats wrapper was called")
    monkeypatch.setattr(stats.norm, "ppf", refused)
    monkeypatch.setattr(stats.chi2, "ppf", refused)
    X = np.random.default_rng(3).standard_normal((400, 6)) @ np.diag([3.0, 2.0, 1.0, 0.5, 0.2, 0.1])
    m = ROBPCA(n_components=2, random_state=0).fit(X)
    assert m.sd_cutoff_ == want
    assert m.od_cutoff_ > 0.0


def test_an_integer_seed_makes_its_randomstate_once_and_gives_that_randomstates_fit(monkeypatch):
    # the fit's Generator is seeded by the first draw below 2^31 of scikit-learn's RandomState of
    # the seed; for an integer seed that draw is made once (seeding the Mersenne Twister took
    # 85 us of every fit), and a fit gives the numbers of the RandomState route
    from robustcore import ROBPCA
    from robustcore.subspace import robpca as mod
    made = []
    real = mod.check_random_state

    def counted(seed):
        made.append(seed)
        return real(seed)
    monkeypatch.setattr(mod, "check_random_state", counted)
    X = np.random.default_rng(8).standard_normal((300, 5)) @ np.diag([3.0, 2.0, 1.0, 0.3, 0.1])
    seed = 918_273
    first = ROBPCA(n_components=2, random_state=seed).fit(X)
    again = ROBPCA(n_components=2, random_state=np.int64(seed)).fit(X)
    assert made == [seed]
    legacy = ROBPCA(n_components=2, random_state=np.random.RandomState(seed)).fit(X)
    for m in (again, legacy):
        np.testing.assert_array_equal(m.components_, first.components_)
        np.testing.assert_array_equal(m.mean_, first.mean_)


def test_the_mcd_stage_takes_its_largest_temporaries_from_a_given_scratch():
    # the parts' uniform draws, distances, selections and masks are cut from memory the fit
    # touched already (the rows' float32 copy, robpca._stages), so a process's first fit faults
    # in no fresh pages for them; the numbers are those of fresh arrays, to the bit
    rng = np.random.default_rng(41)
    n, k = 4000, 4
    X2T = rng.standard_normal((k, n)) * np.array([[3.0], [2.0], [1.0], [0.5]])
    X2T[:, :300] += 6.0
    ev = np.array([9.0, 4.0, 1.0, 0.25])
    h = 3000
    arena = np.empty(8 << 20, np.uint8)
    work = steps.Scratch(arena)
    got = mcd.mcd_subspace(X2T, ev, h, np.random.default_rng(3), work=work)
    want = mcd.mcd_subspace(X2T, ev, h, np.random.default_rng(3))
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    assert {"draws", "select", "d2", "mask"} <= set(work._bufs)
    assert all(np.shares_memory(buf, arena) for buf in work._bufs.values())


def test_a_fit_hands_the_rows_float32_copy_to_the_mcd_stage_as_scratch(monkeypatch):
    # robpca._stages gives the MCD stage a Scratch cut from the survey's float32 copy (released
    # after it); the fit is the one without it, to the bit
    from robustcore import ROBPCA
    from robustcore.subspace import robpca as mod
    seen = []
    real = mod.mcd_subspace

    def spy(*a, work=None, **kw):
        seen.append(work)
        return real(*a, work=work, **kw)

    def without(*a, work=None, **kw):
        return real(*a, **kw)
    rng = np.random.default_rng(12)
    X = 2.0 + rng.standard_normal((6000, 30)) * np.linspace(3.0, 0.2, 30)
    X[:300] += 5.0
    monkeypatch.setattr(mod, "mcd_subspace", without)
    want = ROBPCA(n_components=3, random_state=0).fit(X)
    monkeypatch.setattr(mod, "mcd_subspace", spy)
    got = ROBPCA(n_components=3, random_state=0).fit(X)
    (work,) = seen
    assert work is not None and work._arena.nbytes >= 6000 * 30 * 4
    for a in ("components_", "mean_", "explained_variance_", "od_cutoff_"):
        np.testing.assert_array_equal(getattr(got, a), getattr(want, a))
