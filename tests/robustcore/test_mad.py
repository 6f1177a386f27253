"""The MAD's normal consistency constant, defined once (robustcore._mad)."""
import numpy as np
import pytest
from scipy import stats

from robustcore._mad import MAD_NORMAL, Z75


def test_the_constants_are_the_normal_quartile_and_its_inverse():
    assert Z75 == pytest.approx(stats.norm.ppf(0.75), rel=1e-15)
    assert MAD_NORMAL == pytest.approx(1.0 / stats.norm.ppf(0.75), rel=1e-15)
    x = np.random.default_rng(0).normal(size=1001)
    assert MAD_NORMAL * np.median(np.abs(x - np.median(x))) == pytest.approx(
        stats.median_abs_deviation(x, scale="normal"), rel=1e-14)


def test_mad_normal_times_the_mad_estimates_the_standard_deviation():
    x = 2.5 * np.random.default_rng(1).standard_normal(400_000) + 7.0
    assert MAD_NORMAL * np.median(np.abs(x - np.median(x))) == pytest.approx(2.5, rel=0.01)


@pytest.mark.parametrize("module", ["robustcore._contamination", "robustcore._outlier", "robustcore._calibration",
                                    "robustcore._scaling", "robustcore.outlier_map", "robustcore.methods._pcp"])
def test_every_robust_spread_reads_the_one_constant(module):
    """No module writes the number again: the ones that use it take it from robustcore._mad."""
    import importlib
    import inspect
    import re
    mod = importlib.import_module(module)
    code = re.sub(r'"""[\s\S]*?"""|#.*|"[^"\n]*"', "", inspect.getsource(mod))   # not docs, comments, words
    assert not re.search(r"1\.4826|0\.6744|ppf\(0\.75\)", code), f"{module} restates the MAD constant"
    assert getattr(mod, "MAD_NORMAL", None) is MAD_NORMAL or getattr(mod, "_Z75", None) is Z75
