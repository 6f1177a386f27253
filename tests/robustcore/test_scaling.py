"""scale="auto": standardise only columns in mixed units (spreads more than 10x apart)."""
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
