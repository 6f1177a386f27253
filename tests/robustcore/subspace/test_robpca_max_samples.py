"""ROBPCA's ``max_samples`` in memory (robustcore.subspace._robpca_sample): tables of at most
100,000 rows are fitted on every row by default, without a draw, so their fits are as before the
rule; "all" is the fit on every row at any size; a larger table is fitted on the sample and every
row scored. The agreement with out of core: tests/robustcore/bigdata/test_robpca_max_samples.py."""
import pathlib

import numpy as np
import pytest

from robustcore import ROBPCA
from robustcore.subspace import _robpca_sample

DATA = pathlib.Path(__file__).resolve().parent / "data"
FITTED = ("components_", "mean_", "variances_", "explained_variance_ratio_", "residual_eigenvalues_",
          "sd_cutoff_", "od_cutoff_", "offset_", "n_components_", "h_", "rank_")


def _table(name):
    if name in ("octane", "glass"):
        with np.load(DATA / f"{name}.npz", allow_pickle=False) as z:
            return z["X"]
    n, d = {"10000x200": (10_000, 200), "50000x10": (50_000, 10)}[name]
    rng = np.random.default_rng(5)
    X = rng.standard_normal((n, 3)) @ rng.standard_normal((3, d)) + 0.3 * rng.standard_normal((n, d))
    X[: n // 20] += 5.0
    return X


def _same(a, b):
    for attr in FITTED:
        np.testing.assert_array_equal(getattr(a, attr), getattr(b, attr), err_msg=attr)


@pytest.mark.parametrize("name", ["octane", "glass", "10000x200", "50000x10"])
def test_tables_within_the_default_sample_are_fitted_on_every_row_without_a_draw(name):
    """"auto" on at most 100,000 rows takes no draw from the seed: the fit is "all"'s bit for bit
    (the octane and robpy checks and the speed benchmark's tables are unchanged)."""
    X = _table(name)
    a = ROBPCA(random_state=0).fit(X)
    assert a.n_samples_robust_ == a.n_samples_fit_ == X.shape[0]
    _same(a, ROBPCA(random_state=0, max_samples="all").fit(X))
    _same(a, ROBPCA(random_state=0, max_samples=X.shape[0]).fit(X))


def test_a_sample_larger_than_the_table_is_every_row():
    X = _table("glass")
    big = ROBPCA(random_state=2, max_samples=10 ** 9).fit(X)
    assert big.n_samples_robust_ == big.n_samples_fit_ == X.shape[0]     # no draw: every row
    _same(big, ROBPCA(random_state=2, max_samples="all").fit(X))


def test_beyond_the_sample_the_robust_stages_see_only_the_sample(monkeypatch):
    """A table of more than max_samples rows: the robust stages on the drawn rows (n_samples_robust_),
    the scaling on every row, every row scored with the sample's cut-offs; "all" on the same
    table is the fit on every row. The sample bound is lowered so that the table stays small."""
    monkeypatch.setattr(_robpca_sample, "SAMPLE_ROWS", 2000)
    X = _table("10000x200")[:, :20] * np.linspace(1.0, 40.0, 20)
    a = ROBPCA(random_state=0, scale="standard").fit(X)
    assert a.n_samples_robust_ == 2000 and a.n_samples_fit_ == 10_000 and a.scaling_ == "standard"
    np.testing.assert_allclose(a.scale_center_, X.mean(axis=0), rtol=1e-12)
    every = ROBPCA(random_state=0, scale="standard", max_samples="all").fit(X)
    assert every.n_samples_robust_ == 10_000
    assert not np.array_equal(a.components_, every.components_)
    # both estimate the same subspace: the sample costs precision, not the answer
    cos = np.linalg.svd(a.components_ @ every.components_.T, compute_uv=False)
    assert a.n_components_ == every.n_components_ and cos.min() > 0.999
    res = a.fit_row_results(X)
    np.testing.assert_array_equal(res.outlier, a.predict(X) == -1)
    assert res.outlier.shape == (10_000,)


def test_the_parameter_is_declared_once_for_forms_the_command_line_and_sessions():
    from robustcore.methods import METHODS
    p = {q.name: q for q in METHODS["robpca"].params()}["max_samples"]
    assert p.default == "auto" and p.parse("auto") == "auto" and p.parse("all") == "all"
    assert p.parse("5000") == 5000 and ROBPCA().get_params()["max_samples"] == "auto"
    assert "max_samples" in ROBPCA.__doc__
