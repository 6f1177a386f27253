"""Fits estimate what they allocate beyond their input and refuse it over the fit budget
(robustcore._fit_memory), before numpy is asked for it."""
import functools

import numpy as np
import pytest

from robustcore import PCA, SCW, CoherencePursuit
from robustcore._fit_memory import ENV, FitMemoryError, fit_budget
from robustcore._passes import Rows
from robustcore.datasets import load
from robustcore.methods import METHODS
from robustcore.subspace._base import Calibration, calibration_spectrum


@pytest.mark.parametrize("text,value", [("100M", 100 * 2 ** 20), ("8G", 8 * 2 ** 30), ("8GiB", 8 * 2 ** 30),
                                        ("123456", 123456), ("1.5k", 1536)])
def test_budget_from_the_environment(monkeypatch, text, value):
    monkeypatch.setenv(ENV, text)
    assert fit_budget() == value


@pytest.mark.parametrize("text", ["lots", "-5G", "0", "8X"])
def test_malformed_budget_is_named(monkeypatch, text):
    monkeypatch.setenv(ENV, text)
    with pytest.raises(ValueError, match=ENV):
        fit_budget()


def test_default_budget_is_at_most_2_gib(monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    assert 0 < fit_budget() <= 2 * 2 ** 30


@pytest.mark.parametrize("method", ["pca", "residual", "coherence-pursuit", "pcp"])
def test_densifying_sparse_data_is_estimated_first(tmp_path, monkeypatch, method):
    # A few bytes of LIBSVM with one large index: 3 x 2,000,000 dense is 48 MB, its fit ~7 times that.
    p = tmp_path / "wide.svm"
    p.write_bytes(b"1 2000000:1\n-1 1:1\n1 7:2\n")
    ds = load(p)
    monkeypatch.setenv(ENV, "100M")
    with pytest.raises(FitMemoryError, match=r"45\.8 MiB.*fit memory budget of 100\.0 MiB.*sparse data"):
        METHODS[method].run(ds, {})


def test_scw_full_covariance_refused_before_allocation():
    X = np.random.default_rng(0).normal(size=(10, 200_000))
    y = np.array([0, 1] * 5)
    with pytest.raises(FitMemoryError, match=r"200,001 x 200,001.*covariance='diagonal'"):
        SCW().fit(X, y)
    # The way out the message names works.
    assert SCW(covariance="diagonal").fit(X, y).predict(X).shape == (10,)


def test_wide_calibration_spectrum_equals_the_covariance_one():
    rng = np.random.default_rng(1)
    Z = rng.normal(size=(8, 30))
    C = np.linalg.qr(rng.normal(size=(30, 2)))[0].T
    m = Z.mean(axis=0)
    var, lam = calibration_spectrum(Z, C, m)
    acc = Rows(Z).reduce(functools.partial(Calibration, C, m))
    _, var_ref, lam_ref = acc.spectrum(2)
    np.testing.assert_allclose(var, var_ref, rtol=1e-10)
    np.testing.assert_allclose(lam, lam_ref, rtol=1e-10, atol=1e-12)


@pytest.mark.slow
def test_coherence_pursuit_on_a_wide_table_fits():
    # 10 x 200,000: the d x d residual covariance would be 298 GiB; the n x n side is used.
    rng = np.random.default_rng(2)
    X = rng.normal(size=(10, 3)) @ rng.normal(size=(3, 200_000))
    X[0] += 5 * rng.normal(size=200_000)
    cp = CoherencePursuit(n_components=2).fit(X)
    s = cp.score_samples(X)
    assert np.all(np.isfinite(s)) and np.isfinite(cp.spe_limit_)
    assert PCA(n_components=2).fit(X).components_.shape == (2, 200_000)


def test_calibration_accumulator_refuses_a_huge_width(monkeypatch):
    monkeypatch.setenv(ENV, "1M")
    with pytest.raises(FitMemoryError, match="1,000 x 1,000 residual covariance"):
        Calibration(np.eye(1, 1000), np.zeros(1000))
