"""scale="auto": standardise only columns in mixed units (spreads more than 10x apart)."""
import math

import numpy as np
import pytest

from robustcore._scaling import AUTO_SPREAD_RATIO, fit_scaling, mixed_units, resolve_scaling


def _mixed(X):
    return mixed_units(X.std(axis=0), X.mean(axis=0))


def test_auto_keeps_one_unit_and_standardises_mixed_units():
    rng = np.random.default_rng(0)
    # pixels: one unit, spreads within 10x of each other (and a constant border pixel)
    pixels = rng.random((200, 30)) * np.linspace(0.2, 1.0, 30)
    pixels[:, 0] = 0.0
    std = pixels[:, 1:].std(0)
    assert std.max() < AUTO_SPREAD_RATIO * np.median(std)
    assert not _mixed(pixels) and resolve_scaling(pixels, "auto") == "none"
    center, scale = fit_scaling(pixels, "auto")
    assert not center.any() and np.all(scale == 1.0)
    # mixed units: one column in grams next to columns in kilograms
    mixed = rng.standard_normal((200, 5)) * np.array([1.0, 1.2, 0.9, 1.1, 1000.0])
    assert _mixed(mixed) and resolve_scaling(mixed, "auto") == "standard"
    center, scale = fit_scaling(mixed, "auto")
    np.testing.assert_allclose(center, mixed.mean(0))
    np.testing.assert_allclose(scale, mixed.std(0))
    # the threshold is on the largest over the median spread
    edge = np.c_[rng.standard_normal((500, 3)), 9.0 * rng.standard_normal(500)]
    s = edge.std(0)
    assert _mixed(edge) == (s.max() > AUTO_SPREAD_RATIO * np.median(s))
    assert not _mixed(np.ones((5, 3)))
    # an explicit choice is kept as given
    assert resolve_scaling(pixels, "robust") == "robust"


def test_column_moments_match_numpy_on_offsets_blocks_and_constant_columns():
    """The one-pass block merge gives numpy's mean and std (ddof 0): offset columns (where a
    sum-of-squares formula would cancel), several blocks with a short last one, one block,
    and constant columns (zero spread up to rounding)."""
    from robustcore._scaling import column_moments
    rng = np.random.default_rng(5)
    X = np.hstack([rng.standard_normal((10_007, 3)) * [1.0, 1e-3, 50.0] + [0.0, 1e6, -3.0],
                   np.full((10_007, 1), 0.1)])
    mean, std = column_moments(X, block=4096)          # 1024 rows per block, the last short
    exact = np.array([math.fsum(col) for col in X.T]) / X.shape[0]   # correctly rounded sums
    np.testing.assert_allclose(mean, exact, rtol=1e-13)
    exact_std = np.array([math.sqrt(math.fsum((col - m) ** 2) / col.size) for col, m in zip(X.T, exact)])
    np.testing.assert_allclose(std[:3], exact_std[:3], rtol=1e-8)
    assert std[3] < 1e-13 * 0.1
    mean1, std1 = column_moments(X[:50], block=4096)   # one block: numpy's own
    np.testing.assert_array_equal(mean1, X[:50].mean(axis=0))
    np.testing.assert_array_equal(std1, X[:50].std(axis=0))


def _video(seed=0, n=60, h=8, w=10):
    """Frames x pixels in 0..255 whole numbers: a static background (a third of the pixels
    exactly constant, the rest with a little sensor noise) and a bright block moving across."""
    rng = np.random.default_rng(seed)
    bg = rng.integers(20, 200, size=h * w).astype(float)
    X = np.tile(bg, (n, 1))
    noisy = rng.random(h * w) > 0.33
    X[:, noisy] += rng.integers(-1, 2, size=(n, int(noisy.sum())))
    for i in range(n):
        c = i % (w - 2)
        img = X[i].reshape(h, w)
        img[2:5, c:c + 2] = 250.0
    return X, (h, w)


def test_auto_leaves_frames_and_pixel_ranges_unscaled():
    """Frames (told by an image shape, or values in one pixel range) are not standardised,
    though static and moving pixels' spreads are far more than AUTO_SPREAD_RATIO apart; a table
    in mixed units still is."""
    from robustcore.datasets import Dataset
    from robustcore.subspace.pcp import PCP
    X, shape = _video()
    assert _mixed(X)                              # by spreads alone it would be standardised
    assert resolve_scaling(X, "auto") == "none"   # whole numbers in 0..255
    assert resolve_scaling(X / 255.0, "auto") == "none"   # values in 0..1
    # the same frames shifted off the pixel range are only frames when they say so
    shifted = X - 100.0
    assert resolve_scaling(shifted, "auto") == "standard"
    assert resolve_scaling(shifted, "auto", frames=True) == "none"
    auto = PCP(random_state=0).fit(Dataset(X=shifted, name="clip", image_shape=shape))
    none = PCP(random_state=0, scale="none").fit(shifted)
    assert auto.scaling_ == "none"
    def objective(m):
        return np.linalg.svd(m.low_rank_, compute_uv=False).sum() + m.lam_ * np.abs(m.sparse_).sum()

    assert objective(auto) == pytest.approx(objective(none), rel=1e-6)
    np.testing.assert_allclose(auto.sample_scores_, none.sample_scores_, rtol=1e-6, atol=1e-6)
    # pixels as a plain array: the same answer as scale="none"
    plain = PCP(random_state=0).fit(X)
    assert plain.scaling_ == "none"
    assert objective(plain) == pytest.approx(objective(PCP(random_state=0, scale="none").fit(X)), rel=1e-6)
    # a mixed-units table in whole numbers within 0..255 is not a pixel range when it has
    # non-integers, and one beyond 255 is not either: both still standardised
    rng = np.random.default_rng(1)
    table = np.c_[rng.normal(40, 10, 300), rng.normal(1.5, 0.01, 300), rng.normal(70, 0.5, 300)]
    assert resolve_scaling(table, "auto") == "standard"
    assert PCP(random_state=0).fit(table).scaling_ == "standard"
    counts = np.c_[rng.integers(0, 3, 300), rng.integers(0, 4, 300), rng.integers(0, 5000, 300)].astype(float)
    assert resolve_scaling(counts, "auto") == "standard"


def test_pixel_range_test_read_in_steps_agrees_with_the_whole_table(monkeypatch):
    """one_range stops at the first step of rows holding a value below every pixel range; its
    answer is the whole table's, wherever that value (or a NaN, or the largest value) sits."""
    import scipy.sparse as sp

    from robustcore import _scaling

    def whole(X):        # the rule read off the whole table at once
        lo, hi = float(np.min(X)), float(np.max(X))
        return bool(lo >= 0 and (hi <= 1 or (hi <= 255 and np.all(np.mod(X, 1) == 0))))
    monkeypatch.setattr(_scaling, "_RANGE_STEP_ENTRIES", 12)     # steps of 3 rows of 4
    base = np.random.default_rng(0).integers(0, 256, size=(10, 4)).astype(float)
    cases = {"pixels": base, "unit": base / 255.0, "fraction": base / 255.0 + 0.5}
    for row in (0, 5, 9):            # first step, middle, last (partial) step
        for value in (-1e-300, np.nan, 256.0, 17.5):     # (17.5: the one fraction)
            X = base.copy()
            X[row, 3] = value
            cases[f"{value} at row {row}"] = X
    for name, X in cases.items():
        expect = False if np.isnan(X).any() else whole(X)
        assert _scaling.one_range(X) is expect, name
        assert _scaling.one_range(sp.csr_matrix(X)) is expect, name


def test_mixed_units_test_reads_the_rescaled_moments_in_one_sweep():
    """The mixed-units test takes the moments of X itself and rescales by powers of two only
    the columns whose moments cannot rule out values beyond pow2_factor's range: every mean
    and spread equals the rescaled table's (the rule as first written), bit for bit, on
    columns far below, far above, across and near both ends of that range, beside ordinary
    ones, in several blocks of rows."""
    from robustcore._scaling import _decision_moments, column_moments, column_pow2_factors, mixed_units

    def rescaled(X, block):         # every column's extremes, then the rescaled table's moments
        f = column_pow2_factors(X)
        with np.errstate(over="ignore", invalid="ignore"):
            mean, sd = column_moments(X * f if np.any(f != 1.0) else X, block)
            return mean / f, sd / f

    rng = np.random.default_rng(3)
    n = 3_001
    g = rng.standard_normal(n)
    one_big = np.zeros(n)
    one_big[1_700] = 3e151                  # one value above the range among zeros
    mixed_ends = np.where(g > 0, 1e200, 1e-200) * g
    cols = [g, 5.0 + 1e-3 * g, 1e-200 * g, 1e-160 * (1.0 + 0.1 * g), 1e200 * g, 1e153 * (2.0 + g),
            1e300 * g, one_big, mixed_ends, np.zeros(n), np.full(n, 7.0), 1e-151 * np.ones(n),
            0.9e150 * g, 1.1e-150 * g]
    X = np.column_stack(cols)
    for block in (1 << 12, 1 << 16):        # several blocks (the last short), one block
        got, want = _decision_moments(X, block), rescaled(X, block)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
    # the decision on tables of ordinary columns beside one beyond either end: the first rule's
    decisions = []
    ordinary = rng.standard_normal((500, 4))
    for extreme in (1e-200, 1e200, 1.0, 30.0):
        T = np.c_[ordinary, extreme * rng.standard_normal(500)]
        f = column_pow2_factors(T)
        with np.errstate(over="ignore"):
            m, s = column_moments(T * f)
            expect = mixed_units(s / f, m / f)
        assert resolve_scaling(T, "auto") == ("standard" if expect else "none")
        decisions.append(expect)
    assert decisions == [False, True, False, True]
