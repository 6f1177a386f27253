"""Per-row results of a fitted subspace model in one pass, kept in memory or, beyond the memory
budget, stored in Zarr and still combined like numpy arrays (the branch a 30M-row run took)."""
import os

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
pytest.importorskip("zarr")

from robustcore import CoherencePursuit, PCA, ResidualScorer, datasets  # noqa: E402
from robustcore.bigdata import StoredRows, open_lazy, settings  # noqa: E402
from robustcore.methods import get_method  # noqa: E402

FIELDS = ("spe", "t2", "outlier_score", "projection", "outlier", "outside_spe", "outside_t2")


@pytest.fixture(scope="module")
def X():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((4000, 3)) @ rng.standard_normal((3, 10)) + 0.2 * rng.standard_normal((4000, 10)) + 2
    X[rng.choice(4000, 300, replace=False)] = 2 + 3 * rng.standard_normal((300, 10))
    return X


@pytest.fixture(scope="module")
def npy(X, tmp_path_factory):
    p = tmp_path_factory.mktemp("rows") / "table.npy"
    np.save(p, X.astype(np.float32))
    return p


def _same(a, b, tol=1e-8):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape
    if b.dtype.kind == "f":
        assert np.abs(a - b).max() <= tol * max(np.abs(b).max(), 1e-300)
    else:
        np.testing.assert_array_equal(a, b)


# passes over the table: PCA and SPE/T² one for the fit and one for the rows; Coherence Pursuit
# (defaults: no scaling for one-unit data, no centring) four (the calibration rides on the
# residual pass: subspace/_cop_calibration.py), three out of core (the selected rows' matrix
# rides on the coherence pass: subspace/_cop_selection.py), its rows from the kept SPE
PASSES = {PCA: 2, ResidualScorer: 2, CoherencePursuit: 4}
LAZY_PASSES = {**PASSES, CoherencePursuit: 3}


@pytest.mark.slow
@pytest.mark.parametrize("cls", [PCA, ResidualScorer, CoherencePursuit])
def test_row_results_on_disk_equal_those_in_memory(X, cls, tmp_path):
    mem = cls().fit_row_results(X)
    assert mem.in_memory and mem.passes == PASSES[cls]
    with settings(memory_budget=4096, store_dir=tmp_path):
        lazy = cls().fit_row_results(da.from_array(X, chunks=(900, 10)))
    assert not lazy.in_memory and lazy.passes == LAZY_PASSES[cls]
    for k in FIELDS:
        v = getattr(lazy, k)
        assert isinstance(v, StoredRows), k
        _same(v[:], getattr(mem, k))
    for k in mem.extra:
        _same(lazy.extra[k][:], mem.extra[k])
    # what the registry's adapters do with them (a flag takes 4000 bytes: beyond 3000, on disk)
    with settings(memory_budget=3000, store_dir=tmp_path):
        either = lazy.outside_spe | lazy.outside_t2
        assert isinstance(either, StoredRows)
        _same(either[:], mem.outside_spe | mem.outside_t2)
        assert lazy.outlier.count_nonzero() == int(mem.outlier.sum())
        _same((~lazy.outlier)[:], ~mem.outlier)
        _same((lazy.spe / 2.0)[:], mem.spe / 2.0)
    with settings(memory_budget=1 << 30):
        _same((lazy.spe > 1.0), mem.spe > 1.0)              # within the budget: numpy again
    assert not list(tmp_path.glob("*.partial"))
    # a new X (scoring, not fitting): one pass
    est = cls().fit(X)
    res = est.row_results(X[:1000])
    assert res.passes == 1
    for k in FIELDS:
        _same(getattr(res, k), getattr(mem, k)[:1000])


@pytest.mark.slow
@pytest.mark.parametrize("method", ["pca", "residual", "coherence-pursuit"])
def test_registry_runs_with_results_on_disk(npy, method, tmp_path):
    """The command line's out-of-core run, results beyond the budget: the residual method
    combines its stored flags (this raised TypeError on Zarr arrays after 2 minutes of a 30M-row
    run), and every score and flag equals the in-memory run's."""
    m = get_method(method)
    mem = m.run(datasets.load(npy), {})
    with settings(memory_budget=4096, store_dir=tmp_path):
        lazy = m.run(open_lazy(npy, chunk_rows=40), {})
    assert set(lazy.sample_scores) == set(mem.sample_scores) and set(lazy.flags) == set(mem.flags)
    for k, v in mem.sample_scores.items():
        assert isinstance(lazy.sample_scores[k], StoredRows), k
        _same(lazy.sample_scores[k][:], v)
    for k, v in mem.flags.items():
        _same(lazy.flags[k][:], v)
    assert lazy.summary["flagged"] == mem.summary["flagged"]


@pytest.mark.slow
def test_stored_rows_behave_like_numpy(tmp_path):
    from robustcore.bigdata import materialize
    a = np.arange(10_000, dtype=np.float64) % 7
    with settings(memory_budget=100, store_dir=tmp_path):
        s = materialize({"a": da.from_array(a, chunks=999)})["a"]
        assert isinstance(s, StoredRows) and s.shape == (10_000,) and s.dtype == np.float64 and len(s) == 10_000
        _same(s[5:17], a[5:17])
        _same(np.asarray(s), a)
        _same((s + s)[:], a + a)
        _same((1.0 - s)[:], 1.0 - a)
        _same((s >= 3)[:], a >= 3)
        assert s.sum() == a.sum() and s.max() == 6 and ((s > 5).count_nonzero()) == int((a > 5).sum())
        np.testing.assert_array_equal((s == 0).flatnonzero(), np.flatnonzero(a == 0))
        assert s.store is s.z.store                       # where it lives (sessions save it)


def test_a_stored_result_has_every_chunk_even_one_of_zeros(tmp_path):
    """Chunks holding only the fill value (0, False) are written like the others (no scan for
    them at write time), and read back as the values computed."""
    from robustcore.bigdata import materialize
    a = np.zeros(3000)
    a[2500:] = np.arange(500) + 1.0
    with settings(memory_budget=100, store_dir=tmp_path):
        out = materialize({"a": da.from_array(a, chunks=1000), "f": da.from_array(a > 0, chunks=1000)})
    for k, want in (("a", a), ("f", a > 0)):
        assert isinstance(out[k], StoredRows)
        _same(out[k][:], want)
        chunk_dir = os.path.join(out[k].store.root, out[k].path, "c")
        assert len(os.listdir(chunk_dir)) == 3            # two of them hold only the fill value


def test_results_held_in_memory_count_together_against_the_budget(tmp_path):
    """The results' share of the budget counts every per-row result held in memory, not each
    call's alone (one fit makes many; the peak is their sum), for as long as they are alive."""
    import gc

    from robustcore.bigdata import materialize
    from robustcore.bigdata._rows import RESULTS_SHARE, held_bytes
    a = np.arange(1000, dtype=np.float64)
    base = held_bytes()
    with settings(memory_budget=int((a.nbytes * 1.5 + base) / RESULTS_SHARE), store_dir=tmp_path):
        first = materialize({"a": da.from_array(a, chunks=300)})["a"]
        assert isinstance(first, np.ndarray) and held_bytes() == base + a.nbytes
        _same(first, a)
        second = materialize({"b": da.from_array(a + 1, chunks=300)})["b"]
        assert isinstance(second, StoredRows)          # both would take 2x, over the share
        _same(second[:], a + 1)
        del first
        gc.collect()
        assert held_bytes() == base
        third = materialize({"c": da.from_array(a + 2, chunks=300)})["c"]
        assert isinstance(third, np.ndarray)
        _same(third, a + 2)


def test_small_results_stay_in_memory_beside_a_wide_one_on_disk(tmp_path):
    """One pass, two results: the scores (n floats) fit the results' share and stay numpy, the
    projections (n x 6) do not and go to disk; both hold the values computed. (A 30M-row Coherence
    Pursuit run stored its SPE with its projections, and every order statistic and flag after
    it then read the store: 6 s of a 31 s run.)"""
    import gc

    from robustcore.bigdata import materialize
    from robustcore.bigdata._rows import RESULTS_SHARE, held_bytes
    gc.collect()
    spe = np.arange(2000, dtype=np.float64) / 7
    proj = np.arange(12000, dtype=np.float64).reshape(2000, 6) % 11
    base = held_bytes()
    with settings(memory_budget=int((spe.nbytes * 2 + base) / RESULTS_SHARE), store_dir=tmp_path):
        out = materialize({"projection": da.from_array(proj, chunks=(700, 6)),
                           "spe": da.from_array(spe, chunks=700)})
    assert list(out) == ["projection", "spe"]
    assert isinstance(out["spe"], np.ndarray) and isinstance(out["projection"], StoredRows)
    _same(out["spe"], spe)
    _same(out["projection"][:], proj)
    assert held_bytes() == base + spe.nbytes
    assert not list(tmp_path.glob("*.partial"))


def test_fill_rows_keeps_what_fits_and_stores_the_rest(tmp_path):
    """Element-wise results of numpy scores without Dask: slices written into a held array or a
    store, by the same budget rule as materialize; values as numpy computes them whole."""
    import gc

    from robustcore.bigdata._rows import RESULTS_SHARE, fill_rows, held_bytes
    gc.collect()
    rng = np.random.default_rng(5)
    a, b = rng.random(2500), rng.random(2500)
    base = held_bytes()
    spec = {"both": ("f8", ()), "over": ("?", ()), "pair": ("f8", (2,))}

    def fn(x, y):
        return {"both": np.maximum(x, y), "over": x > y, "pair": np.stack([x, y], axis=1)}

    # room for the flags (2,500 bytes) but not for the 20,000-byte maximum
    with settings(memory_budget=int((6000 + base) / RESULTS_SHARE), store_dir=tmp_path):
        out = fill_rows(fn, spec, [a, b], name="t", step=700)
    assert isinstance(out["over"], np.ndarray) and isinstance(out["both"], StoredRows)
    assert isinstance(out["pair"], StoredRows)
    np.testing.assert_array_equal(out["over"], a > b)
    np.testing.assert_array_equal(out["both"][:], np.maximum(a, b))
    np.testing.assert_array_equal(out["pair"][:], np.stack([a, b], axis=1))
    assert held_bytes() == base + a.size
    assert not list(tmp_path.glob("*.partial"))


@pytest.mark.slow
@pytest.mark.parametrize("lazy", [False, True])
@pytest.mark.parametrize("cls", [PCA, CoherencePursuit])
def test_limits_can_read_exact_order_statistics_of_the_training_scores(X, cls, lazy, monkeypatch):
    """The one place the limits are set (robustcore.limits.control_limits) is handed the
    calibration rows' SPE and T², whose order statistics are exact in memory and out of core:
    a distribution-robust rule for contamination="auto" can be dropped in there."""
    import robustcore.limits as limits
    seen = {}
    real = limits.control_limits

    def spy(n, var, lam, **kw):
        seen["training"], seen["var"] = kw["training"], var
        return real(n, var, lam, **kw)
    monkeypatch.setattr(limits, "control_limits", spy)
    import robustcore.subspace._base as base
    monkeypatch.setattr(base, "control_limits", spy)
    with settings(memory_budget=4096):
        est = cls().fit(da.from_array(X, chunks=(900, 10)) if lazy else X)
        stats = seen["training"](seen["var"])
        ks = [0, 17, 1999, 2500]
        got_spe = stats.order_statistics("spe", ks)
        got_t2 = stats.order_statistics("t2", ks)
    rows = getattr(est, "calibration_indices_", np.arange(X.shape[0]))
    spe, t2 = ResidualScorer._spe_t2(est, (X[rows] - est.scale_center_) / est.scale_)
    np.testing.assert_allclose(got_spe, np.sort(spe)[ks], rtol=1e-10)
    np.testing.assert_allclose(got_t2, np.sort(t2)[ks], rtol=1e-10)
