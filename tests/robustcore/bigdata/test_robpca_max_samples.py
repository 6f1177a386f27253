"""ROBPCA's sample rule (``max_samples``, robustcore.subspace._robpca_sample) is one rule in
memory and out of core: the same table gives the same k, subspace, cut-offs and flags either way,
and a bad value or a sample beyond the memory budget gets the same message wherever it is set."""
import numpy as np
import pytest

pytest.importorskip("dask.array")

from robustcore import ROBPCA  # noqa: E402
from robustcore._params import validate_params  # noqa: E402
from robustcore.datasets import Dataset  # noqa: E402
from robustcore.bigdata import open_lazy, open_table, settings  # noqa: E402
from robustcore.subspace import _robpca_sample  # noqa: E402
from robustcore.subspace._robpca_params import PARAMS  # noqa: E402

from .test_robpca_out_of_core import planted  # noqa: E402


def lazy(tmp_path, X, rows=7000, name="t.npy"):
    p = tmp_path / name
    np.save(p, X)
    return open_table(p, chunk_rows=rows)


def assert_same_fit(a, b, rtol=1e-10):
    """The same fit to ``rtol`` of each attribute's size (the scaling's moments are summed in
    another order out of core: rounding, 1e-13 at 150,000 rows)."""
    for attr in ("n_components_", "h_", "rank_", "n_samples_robust_", "n_samples_fit_", "scaling_"):
        assert getattr(b, attr) == getattr(a, attr), attr
    for attr in ("components_", "mean_", "variances_", "residual_eigenvalues_", "scale_", "scale_center_"):
        x, y = getattr(a, attr), getattr(b, attr)
        assert np.max(np.abs(x - y)) <= rtol * max(np.max(np.abs(x)), 1e-300), attr
    for attr in ("sd_cutoff_", "od_cutoff_", "offset_"):
        assert getattr(b, attr) == pytest.approx(getattr(a, attr), rel=rtol), attr


def test_beyond_100000_rows_in_memory_and_out_of_core_give_the_same_fit(tmp_path):
    """150,000 planted rows, columns in different units (the scaling fitted on every row): the
    default sample of 100,000 rows is drawn alike, so the k, subspace, cut-offs and every row's
    flag agree; before the rule the in-memory fit used every row (another k on t2m.npy)."""
    X, _, truth = planted(150_000)
    X[:, 0] *= 50.0
    a = ROBPCA(random_state=0).fit(X)
    b = ROBPCA(random_state=0)
    res = b.fit_row_results(lazy(tmp_path, X))
    assert a.n_samples_robust_ == 100_000 and a.n_samples_fit_ == 150_000 and a.scaling_ == "standard"
    assert_same_fit(a, b)
    mem = a.row_results(X)
    np.testing.assert_array_equal(np.asarray(res.outlier), mem.outlier)
    np.testing.assert_allclose(np.asarray(res.outlier_score), mem.outlier_score, rtol=1e-9)
    assert np.mean(mem.outlier[truth]) > 0.9


@pytest.mark.parametrize("contamination", ["auto", "cutoffs", 0.05])
def test_a_given_sample_size_is_the_same_draw_in_memory_and_out_of_core(tmp_path, contamination):
    """max_samples=1500 of 6000 rows: the same sorted indices from the same seed, the robust
    stages on them, every row scored (the offset of a contamination from every row's score), in
    memory through fit_row_results too (the fit's kept rows are the sample's, not every row's)."""
    X, _, _ = planted(6000)
    kw = dict(max_samples=1500, random_state=4, contamination=contamination)
    a = ROBPCA(**kw)
    mem = a.fit_row_results(X)
    b = ROBPCA(**kw)
    ooc = b.fit_row_results(lazy(tmp_path, X, rows=400))
    assert a.n_samples_robust_ == 1500 and a.n_samples_fit_ == 6000
    assert_same_fit(a, b, rtol=1e-12)
    # in memory, the row results are every row's under the sampled model
    again = a.row_results(X)
    np.testing.assert_array_equal(mem.outlier, again.outlier)
    np.testing.assert_array_equal(mem.outlier_score, again.outlier_score)
    np.testing.assert_array_equal(np.asarray(ooc.outlier), mem.outlier)
    if contamination == 0.05:
        assert np.mean(mem.outlier) == pytest.approx(0.05, abs=1 / 6000)
    # the sample is the one draw of sample_index from the fit's Generator, the scaled rows of it
    seed = np.random.default_rng(_seed_of(4))
    idx = _robpca_sample.sample_index(seed, 6000, 1500)
    assert idx.size == 1500 and np.all(np.diff(idx) > 0)


def _seed_of(random_state):
    from robustcore.subspace.robpca import _seed
    return _seed(random_state)


def test_all_fits_every_row_in_memory_and_out_of_core_within_the_budget(tmp_path, monkeypatch):
    """"all" is the fit on every row: in memory the same numbers as a max_samples of at least n
    (no draw), out of core the in-memory fit bit for bit (the rows are read into memory)."""
    monkeypatch.setattr(_robpca_sample, "SAMPLE_ROWS", 1500)
    X, _, _ = planted(6000)
    a = ROBPCA(max_samples="all", random_state=1).fit(X)
    assert a.n_samples_robust_ == 6000
    c = ROBPCA(max_samples=6000, random_state=1).fit(X)
    b = ROBPCA(max_samples="all", random_state=1).fit(lazy(tmp_path, X, rows=400))
    for m in (b, c):
        for attr in ("components_", "mean_", "variances_", "sd_cutoff_", "od_cutoff_", "offset_", "n_components_"):
            np.testing.assert_array_equal(getattr(m, attr), getattr(a, attr))
    # and "auto" with the bound at 1500 samples, as an int of 1500 does
    d = ROBPCA(random_state=1).fit(X)
    e = ROBPCA(max_samples=1500, random_state=1).fit(X)
    assert d.n_samples_robust_ == 1500
    np.testing.assert_array_equal(d.components_, e.components_)


def test_rows_beyond_the_budget_are_refused_out_of_core_with_how_to_fix_it(tmp_path):
    """Out of core the robust stages' rows must fit the memory budget: "all" (or a sample) beyond
    it is refused before any pass, naming max_samples; in memory the rows are already there."""
    X, _, _ = planted(6000)
    t = lazy(tmp_path, X, rows=400)
    with settings(memory_budget=8 * 3000 * 12):
        with pytest.raises(ValueError) as all_rows:
            ROBPCA(max_samples="all").fit(t)
        with pytest.raises(ValueError) as sample:
            ROBPCA(max_samples=4000).fit(t)
        ROBPCA(max_samples=2000).fit(t)              # within the budget
        assert ROBPCA(max_samples="all").fit(X).n_samples_robust_ == 6000
    msg = str(all_rows.value)
    assert msg.startswith("ROBPCA fits its robust stages on 6000 rows (max_samples='all'), 1 MB as float64")
    assert "set a smaller max_samples ('auto' samples 100000 rows), raise the budget" in msg
    assert "on 4000 rows (max_samples=4000)" in str(sample.value)


BAD = [0, 1, -5, 2.5, "some", "ALL", True, None, float("nan")]
ALLOWED = "must be 'auto', 'all' or an integer >= 2"


@pytest.mark.parametrize("value", BAD, ids=repr)
def test_bad_values_get_the_same_message_in_memory_out_of_core_and_from_the_declaration(tmp_path, value):
    """The estimator's message names its owner (as for every parameter); the declaration's is
    what the registry, the command line and the window's form show (tests/app: the same)."""
    X, _, _ = planted(300)
    with pytest.raises(ValueError) as mem:
        ROBPCA(max_samples=value).fit(X)
    with pytest.raises(ValueError) as ooc:
        ROBPCA(max_samples=value).fit(lazy(tmp_path, X, rows=100))
    with pytest.raises(ValueError) as declared:
        validate_params(PARAMS, {"max_samples": value})
    assert str(mem.value) == str(ooc.value) == str(declared.value).replace(" parameter ", " parameter of ROBPCA ")
    assert str(declared.value).startswith(f"The 'max_samples' parameter {ALLOWED}. Got ")


def test_the_registry_passes_max_samples_out_of_core(tmp_path):
    from robustcore.methods import get_method
    X, _, _ = planted(4000)
    p = tmp_path / "t.npy"
    np.save(p, X)
    res = get_method("robpca").run(open_lazy(p, chunk_rows=500), {"random_state": 0, "max_samples": 1000})
    mem = get_method("robpca").run(Dataset(X=X, name="t"), {"random_state": 0, "max_samples": 1000})
    assert res.estimator.n_samples_robust_ == mem.estimator.n_samples_robust_ == 1000
    np.testing.assert_array_equal(np.asarray(res.flags["outlier"]), np.asarray(mem.flags["outlier"]))
