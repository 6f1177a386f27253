"""Loading of the optional compiled kernels."""
import pytest

from robustcore import _jit


def test_a_missing_kernel_module_means_numpy():
    assert _jit.kernels("robustcore._no_such_kernels") is None
    assert _jit.kernels("robustcore._no_such_kernels", wait=False) is None


def test_background_loading_hands_out_the_module_once_ready(monkeypatch):
    pytest.importorskip("numba")
    name = "robustcore.subspace._pcp_jit"
    monkeypatch.setattr(_jit, "_loaded", {})
    monkeypatch.setattr(_jit, "_loading", {})
    first = _jit.kernels(name, wait=False)        # None while loading, or the module if fast
    _jit._loading[name].join(timeout=120)
    mod = _jit.kernels(name, wait=False)
    assert mod is not None and hasattr(mod, "sweep_block")
    assert first in (None, mod)
    assert _jit.kernels(name) is mod


@pytest.mark.parametrize("value, on", [("", True), ("0", True), ("1", False), ("yes", False)])
def test_environment_switch(monkeypatch, value, on):
    monkeypatch.setenv("ROBUSTCORE_NO_JIT", value)
    assert _jit.enabled() is on


def test_preload_names_modules_that_exist():
    import importlib.util
    for module in _jit.MODULES:
        assert importlib.util.find_spec(module) is not None
