"""One estimator, two array types: every method with an out-of-core path gives the same answer on
a table in memory and on the same table as a Dask array of several row blocks (issue 22 1.).

Default parameters throughout. Scores agree to 1e-8 relative, flags are identical, and where an
input is refused, both paths refuse it with the same message. No output is ever NaN.
"""
import warnings

import numpy as np
import pytest

da = pytest.importorskip("dask.array")

from robustcore import PCA, ROBPCA, CoherencePursuit, ResidualScorer  # noqa: E402

TOL = 1e-8
# ROBPCA: its tables (3,000 rows) are below its out-of-core sample size, so the lazy table is
# read and fitted as in memory (robustcore.subspace._robpca_sample): the same numbers
METHODS = {"pca": PCA, "residual": ResidualScorer, "coherence-pursuit": CoherencePursuit,
           "robpca": lambda: ROBPCA(random_state=0)}


def _planted(seed=0, n=3000, d=8):
    """Rank-3 inliers near an offset, 8 % outliers off the subspace."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3)) @ rng.standard_normal((3, d)) + 0.2 * rng.standard_normal((n, d)) + 4.0
    out = rng.choice(n, n // 12, replace=False)
    X[out] = 4.0 + 3.0 * rng.standard_normal((out.size, d))
    return X


def _mixed(X):
    return X * np.geomspace(1e-3, 1e5, X.shape[1])            # columns in eight units


def _constant(X):
    Y = X.copy()
    Y[:, 2] = 7.25                                          # a constant column
    Y[:, 5] = 0.0                                           # and a column of zeros
    return Y


TABLES = {
    "one unit": lambda: _planted(),
    "mixed units": lambda: _mixed(_planted(1)),
    "constant columns": lambda: _constant(_planted(2)),
    "constant columns, mixed units": lambda: _constant(_mixed(_planted(3))),
    "near 1e-300": lambda: _planted(4) * 1e-300,
    "near 1e-300, mixed units": lambda: _mixed(_planted(5)) * 1e-297,
    "near 1e140": lambda: _planted(6) * 1e140,
    "near 1e140, mixed units": lambda: _mixed(_planted(7)) * 1e135,
    "beyond 1e150": lambda: _planted(8) * 1e152,
    "a NaN": lambda: _with(_planted(9), (1234, 3), np.nan),
    "an infinity": lambda: _with(_planted(10), (2999, 7), -np.inf),
    "all rows equal": lambda: np.tile(np.arange(1.0, 9.0), (3000, 1)),
    "all zeros": lambda: np.zeros((3000, 8)),
    "no features": lambda: np.zeros((5, 0)),
    "one row": lambda: _planted(11)[:1],
    "one feature": lambda: _planted(12)[:, :1],
}


def _with(X, at, value):
    X[at] = value
    return X


def _outcome(cls, X):
    """Everything a default fit gives per row (or the refusal's message), with warnings as
    errors: a RuntimeWarning (overflow, 0/0) would be a defect."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        try:
            est = cls().fit(X)
        except ValueError as exc:
            return str(exc)
        res = est.row_results(X)
        return {"score_samples": np.asarray(est.score_samples(X)), "predict": np.asarray(est.predict(X)),
                "spe": np.asarray(res.spe), "t2": np.asarray(res.t2), "outlier_score": np.asarray(res.outlier_score),
                "projection": np.asarray(res.projection), "outlier": np.asarray(res.outlier),
                "outside_spe": np.asarray(res.outside_spe), "outside_t2": np.asarray(res.outside_t2),
                "scale_": est.scale_, "limits": np.array([est.spe_limit_, est.t2_limit_])}


@pytest.mark.slow
@pytest.mark.parametrize("table", list(TABLES))
@pytest.mark.parametrize("method", list(METHODS))
def test_in_memory_and_out_of_core_give_the_same_answer(method, table):
    X = TABLES[table]()
    cls = METHODS[method]
    mem = _outcome(cls, X)
    chunks = (max(1, X.shape[0] // 4 + 1), max(X.shape[1], 1))
    lazy = _outcome(cls, da.from_array(X, chunks=chunks))
    if isinstance(mem, str) or isinstance(lazy, str):
        assert lazy == mem                       # refused both ways, in the same words
        return
    for k, v in mem.items():
        w = lazy[k]
        assert w.shape == v.shape, k
        if k == "limits" and isinstance(cls(), ROBPCA):
            # ROBPCA's SPE limit is infinite when k is the rank (no orthogonal part: one feature)
            np.testing.assert_array_equal(w, v, err_msg=k)
            continue
        if v.dtype.kind == "f":
            assert np.all(np.isfinite(v)) and np.all(np.isfinite(w)), k      # never NaN (nor inf)
            # relative to the values, or to their limit where all of them are far below it (the
            # SPE of rows that lie in the subspace exactly is rounding noise, 1e-26 of 1e-18)
            floor = {"spe": mem["limits"][0], "t2": mem["limits"][1], "outlier_score": 1.0}.get(k, 0.0)
            scale = max(float(np.abs(v).max()), floor, np.finfo(float).tiny)
            assert float(np.abs(w - v).max()) <= TOL * scale, (k, float(np.abs(w - v).max()) / scale)
        else:
            np.testing.assert_array_equal(w, v, err_msg=k)


EXPECTED_REFUSALS = {
    "beyond 1e150": "X holds values as large as 1.29e+153",
    "a NaN": "X contains 1 NaN or infinite value(s) (first: NaN at row 1234, column 3)",
    "an infinity": "(first: infinite at row 2999, column 7)",
    "all rows equal": "all 3000 rows of X are equal",
    "all zeros": "all 3000 rows of X are equal",
    "no features": "Found array with 0 feature(s)",
    "one row": "Found array with 1 sample(s)",
    "near 1e-300": "underflow",
}


@pytest.mark.parametrize("table", list(EXPECTED_REFUSALS))
@pytest.mark.parametrize("method", ["pca", "residual"])
def test_refusals_name_the_problem_and_the_way_out(method, table):
    """What both paths refuse, and that the words say what is wrong (the equality test above
    checks that both paths use the same words)."""
    with pytest.raises(ValueError) as exc:
        METHODS[method]().fit(TABLES[table]())
    assert EXPECTED_REFUSALS[table] in str(exc.value)
    if table in ("beyond 1e150", "near 1e-300"):
        assert "Pass scale='standard' or 'robust'" in str(exc.value)
    if table.startswith("all"):
        assert "check that the right data were loaded" in str(exc.value)
