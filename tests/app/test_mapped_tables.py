"""A large loaded table is a read-only mapping of a file of the program's, not a float64 copy in
the window's memory (issue 33.2's memory budget), and it crosses the worker pipe as its name."""
import multiprocessing as mp
import multiprocessing.connection
import os

import numpy as np
import pytest

from app import mapped_tables
from robustcore.datasets import Dataset

from .test_bulk_pipe import _roundtrip


@pytest.fixture
def sent_bytes(monkeypatch):
    """Bytes written through any pipe (send and send_bytes both write through _send_bytes)."""
    sent = []
    orig = mp.connection.Connection._send_bytes

    def counting(self, buf):
        sent.append(memoryview(buf).nbytes)
        return orig(self, buf)

    monkeypatch.setattr(mp.connection.Connection, "_send_bytes", counting)
    return sent


def test_a_spilled_table_is_mapped_read_only_and_travels_as_its_file_name(tmp_path, sent_bytes):
    rng = np.random.default_rng(3)
    X = rng.standard_normal((5000, 40))          # 1.6 MB: out of band if sent as bytes
    ds = mapped_tables.spill(Dataset(X=X.copy(), name="t"), str(tmp_path), min_bytes=1)
    path = mapped_tables.mapped_file(ds.X)
    assert path is not None and os.path.dirname(path) == str(tmp_path)
    assert not ds.X.flags.writeable and not ds.X.flags.owndata
    np.testing.assert_array_equal(ds.X, X)
    got = _roundtrip(ds)
    assert sum(sent_bytes) < 50_000                       # the name, not 1.6 MB of values
    np.testing.assert_array_equal(got.X, X)
    assert mapped_tables.mapped_file(got.X) == path
    sent_bytes.clear()
    part = _roundtrip(ds.X[::2])                 # a part of it travels as its values
    np.testing.assert_array_equal(part, X[::2])
    assert sum(sent_bytes) >= part.nbytes and mapped_tables.mapped_file(part) is None


def test_small_tables_stay_in_memory_and_a_removed_copy_is_refused_clearly(tmp_path):
    X = np.ones((10, 3))
    ds = mapped_tables.spill(Dataset(X=X), str(tmp_path))
    assert mapped_tables.mapped_file(ds.X) is None and ds.X.flags.writeable
    big = mapped_tables.spill(Dataset(X=np.ones((100, 3))), str(tmp_path), min_bytes=1)
    path = mapped_tables.mapped_file(big.X)
    mapped_tables.forget(big)
    assert not os.path.exists(path)
    assert big.X.sum() == 300.0                  # the mapping keeps its pages
    with pytest.raises(ValueError, match="removed.*open the data file again"):
        mapped_tables._open(path)


@pytest.mark.slow
def test_the_window_holds_a_large_table_as_a_mapping_not_a_float64_copy(qtbot, window, tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20_000, 12)) @ np.diag(np.linspace(3, 0.1, 12))
    src = tmp_path / "t.npy"
    np.save(src, X)
    monkeypatch.setattr(mapped_tables, "SPILL_MIN_BYTES", X.nbytes // 2)   # the LoadJob carries it
    with qtbot.waitSignal(window.datasetLoaded, timeout=60000):
        window.open_path(str(src))
    ds = window.state.dataset
    path = mapped_tables.mapped_file(ds.X)
    assert path is not None and path != str(src)  # a copy of the program's, never the user's file
    assert not ds.X.flags.writeable and not ds.X.flags.owndata
    np.testing.assert_array_equal(ds.X, X)
    from robustcore.datasets import load
    assert window.state.data_fingerprint() == load(str(src)).fingerprint()   # the same data set
    # A fit in the worker reads the mapped table and gives the in-memory table's answer.
    window.method_panel.set_method("pca")
    with qtbot.waitSignal(window.runFinished, timeout=120000):
        window.run()
    res = window.state.results["pca"]
    from robustcore.methods import get_method
    ref = get_method("pca").run(Dataset(X=X), res.params)
    assert set(res.sample_scores) == set(ref.sample_scores)
    for name, score in ref.sample_scores.items():
        np.testing.assert_allclose(res.sample_scores[name], score, rtol=1e-7, atol=1e-9)
    # Letting the data set go removes the copy.
    with qtbot.waitSignal(window.datasetLoaded, timeout=30000):
        window.load_demo("iris")
    assert not os.path.exists(path)


def test_pages_read_are_given_back_and_the_values_stay(tmp_path):
    X = np.arange(4_000_000, dtype=np.float64).reshape(-1, 8)   # 32 MB
    ds = mapped_tables.spill(Dataset(X=X.copy()), str(tmp_path), min_bytes=1)

    def resident_mb():
        with open("/proc/self/status") as fh:
            return next(int(line.split()[1]) for line in fh if line.startswith("RssFile:")) / 1024

    before = resident_mb()
    assert ds.X.sum() == X.sum()            # every page read
    read = resident_mb()
    mapped_tables.release()
    assert read - resident_mb() > 24       # most of the 32 MB no longer counted
    assert resident_mb() < before + 8
    np.testing.assert_array_equal(ds.X[::997], X[::997])   # read again from the file


def test_a_results_large_arrays_are_mapped_once_each_and_travel_as_file_names(tmp_path, sent_bytes):
    """Out of core, a fit's per-row arrays (scores, flags, distances) go back to the window
    mapped from files, an array the result holds twice in one file, small ones in memory."""
    from robustcore.methods import get_method

    X = np.random.default_rng(4).standard_normal((20_000, 5))
    res = get_method("pca").run(Dataset(X=X, name="t"), {})
    res.arrays["again"] = res.sample_scores["spe"]    # one array held in two places
    want = {(d, k): np.array(v) for d in ("sample_scores", "flags", "arrays") for k, v in getattr(res, d).items()}
    large = {id(v) for d in ("sample_scores", "flags", "arrays") for v in getattr(res, d).values()
             if v.nbytes >= 100_000}
    mapped_tables.spill_result(res, str(tmp_path), min_bytes=100_000)
    for (d, k), v in want.items():
        got = getattr(res, d)[k]
        np.testing.assert_array_equal(got, v)
        assert (mapped_tables.mapped_file(got) is not None) == (v.nbytes >= 100_000), (d, k)
    assert res.arrays["again"] is res.sample_scores["spe"]
    files = {mapped_tables.mapped_file(a) for d in ("sample_scores", "flags", "arrays")
             for a in getattr(res, d).values()} - {None}
    assert len(files) == len(list(tmp_path.glob("result-*.npy"))) == len(large) >= 5
    sent_bytes.clear()
    got = _roundtrip(res)
    assert sum(sent_bytes) < 100_000                 # names, not the 1.3 MB of values
    for (d, k), v in want.items():
        np.testing.assert_array_equal(getattr(got, d)[k], v)
    assert mapped_tables.mapped_file(got.sample_scores["t2"]) is not None


def test_a_dropped_results_files_are_removed_and_the_kept_ones_stay(qapp, tmp_path):
    """A result replaced by a new run of its method, or dropped with its data, takes its mapped
    files with it (a session of 30M-row runs kept every run's files until the window exited);
    the current results' files and the table's stay, and the values read from a mapping made
    before keep reading."""
    from app.state import AppState
    from robustcore.methods import get_method

    X = np.random.default_rng(5).standard_normal((20_000, 5))
    ds = Dataset(X=X, name="t")
    state = AppState()
    state.set_dataset(ds)

    def run(method):
        res = get_method(method).run(ds, {})
        return mapped_tables.spill_result(res, str(tmp_path), min_bytes=100_000)

    def files(res):
        return {mapped_tables.mapped_file(a) for d in ("sample_scores", "flags", "arrays")
                for a in getattr(res, d).values()} - {None}

    first, other = run("pca"), run("residual")
    assert state.add_result(first) and state.add_result(other)
    spe = first.sample_scores["spe"]
    want, replaced = np.array(spe), files(first)
    second = run("pca")
    assert state.add_result(second)
    left = set(map(str, tmp_path.glob("result-*.npy")))
    assert replaced and not replaced & left                   # the replaced run's files are gone
    assert files(second) | files(other) == left               # the current ones stay
    np.testing.assert_array_equal(spe, want)                  # an old mapping still reads
    state.set_dataset(Dataset(X=X[:100], name="u"))
    assert not list(tmp_path.glob("result-*.npy"))            # new data: every result's files go
