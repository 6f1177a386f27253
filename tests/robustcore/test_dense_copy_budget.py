"""Fits never densify sparse data beyond the fit budget (issue 34.4): every method that needs
dense rows charges the dense copy and its working copies (robustcore._fit_memory.check_dense_copy,
asked by Method.run) before the copy exists; only fits that take sparse input as it is skip it."""
import numpy as np
import pytest
import scipy.sparse as sp

from robustcore._fit_memory import ENV, FitMemoryError, check_dense_copy
from robustcore.datasets import Dataset, load
from robustcore.methods import METHODS

# The issue's 20 bytes: one large index makes a 2 x 16,777,216 matrix, 256 MiB dense.
WIDE = b"1 16777216:1\n-1 1:1\n"


@pytest.fixture
def wide(tmp_path):
    p = tmp_path / "wide.svm"
    p.write_bytes(WIDE)
    ds = load(p)
    assert sp.issparse(ds.X) and ds.X.shape == (2, 16_777_216)
    return ds


@pytest.fixture
def no_dense(monkeypatch):
    """Any dense copy of sparse data fails the test: the refusal must come first."""
    def refuse(*a, **k):
        raise AssertionError("a dense copy was made before the fit budget was asked")
    for cls in (sp.csr_matrix, sp.csr_array, sp.coo_matrix):
        monkeypatch.setattr(cls, "toarray", refuse)
    monkeypatch.setattr(Dataset, "dense", refuse)


@pytest.mark.parametrize("method", ["pca", "residual", "coherence-pursuit"])
def test_the_issues_20_bytes_are_refused_at_the_default_budget(wide, no_dense, monkeypatch, method):
    monkeypatch.setenv(ENV, "2G")   # the default on a machine with 4 GB or more
    with pytest.raises(FitMemoryError) as err:
        METHODS[method].run(wide, {})
    msg = str(err.value)
    assert "a dense copy of the 2 x 16,777,216 sparse data (256.0 MiB)" in msg
    assert "more than the fit memory budget of 2.0 GiB" in msg
    # the ways out: fewer features, a larger budget, a method that takes sparse data
    assert "fewer features" in msg and f"{ENV}=" in msg and "covariance='diagonal'" in msg


@pytest.mark.parametrize("method", sorted(METHODS))
def test_every_method_that_densifies_charges_before_the_copy(wide, no_dense, monkeypatch, method):
    m = METHODS[method]
    values = {"covariance": "full"} if m.accepts_sparse else {}
    assert not m.takes_sparse(m.validate(values))
    monkeypatch.setenv(ENV, "512M")   # below every charge: at least the copy and two working copies
    with pytest.raises(FitMemoryError, match=r"would need [\d.,]+ [MG]iB for a dense copy of the 2 x 16,777,216"):
        m.run(wide, values)


@pytest.mark.slow
def test_sparse_input_taken_as_it_is_is_not_charged(wide, monkeypatch):
    monkeypatch.setenv(ENV, "1M")
    m = METHODS["scw"]
    assert m.takes_sparse(m.validate({"covariance": "diagonal"}))
    res = m.run(wide, {"covariance": "diagonal"})
    assert res.method == "scw"


def test_the_charge_is_the_copy_and_its_working_copies(monkeypatch):
    monkeypatch.setenv(ENV, str(10 * 80_000))
    check_dense_copy((10, 1000), 9, "m")          # exactly the budget: 10 copies of 80,000 bytes
    with pytest.raises(FitMemoryError, match=r"m would need 859\.4 KiB for a dense copy of the 10 x 1,000 "
                       r"sparse data \(78\.1 KiB\) and the 10 working copies"):
        check_dense_copy((10, 1000), 10, "m")
    assert np.isclose(859.4, 11 * 80_000 / 1024, atol=0.05)
