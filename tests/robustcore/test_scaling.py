"""scale="auto": standardise only columns in mixed units (spreads more than 10x apart)."""
import math

import numpy as np

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
