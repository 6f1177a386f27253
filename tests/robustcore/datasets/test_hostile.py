"""Hostile files for every loader, run in a child process under a memory cap and a time limit
(``tests/corpus``): each must be refused with a LoadError that says why, or loaded with what it
holds (and a warning for anything left out), within the budget of the bounded-resource policy."""
import os
import stat

import numpy as np
import pytest

from robustcore.datasets import LoadError, load
from tests.corpus.harness import corpus, problems, run_child
from tests.timing import budget

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs Linux (/proc, rlimit)")


@pytest.mark.slow
def test_corpus_loads_within_budget_and_time():
    cases, budget = corpus("load")
    lines = run_child({"cases": cases})
    assert not problems(cases, lines, budget), "\n".join(problems(cases, lines, budget))
    # The bombs were stopped early: inflated to 64 MiB they would have needed far more.
    bombs = [ln for ln in lines if "bomb" in ln["file"]]
    assert bombs and all(ln["peak"] < 1.25 * budget + 4 * 2 ** 20 for ln in bombs)


@pytest.mark.slow
@pytest.mark.timing
def test_special_files_are_refused_without_reading_or_waiting(tmp_path):
    limit = budget(5)        # a refusal reads nothing: it takes no time on an idle machine
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    (tmp_path / "zero.csv").symlink_to("/dev/zero")
    (tmp_path / "folder.csv").mkdir()
    cases = [{"file": "fifo", "path": str(fifo), "kind": "load", "expect": "refused", "match": "FIFO",
              "budget": 2 ** 24, "seconds": limit},
             {"file": "/dev/zero", "path": "/dev/zero", "kind": "load", "expect": "refused",
              "match": "character device", "budget": 2 ** 24, "options": {"format": "csv"}, "seconds": limit},
             {"file": "link to /dev/zero", "path": str(tmp_path / "zero.csv"), "kind": "load", "expect": "refused",
              "match": "character device", "budget": 2 ** 24, "seconds": limit},
             {"file": "folder", "path": str(tmp_path / "folder.csv"), "kind": "load", "expect": "refused",
              "match": "folder", "budget": 2 ** 24, "options": {"format": "csv"}, "seconds": limit}]
    lines = run_child({"cases": cases})
    assert not problems(cases, lines, 2 ** 24), "\n".join(problems(cases, lines, 2 ** 24))
    assert all(ln["seconds"] < limit for ln in lines)


@pytest.mark.slow
@pytest.mark.parametrize("search, examples", [("loader-options", 150), ("file-mutants", 150)])
def test_seeded_searches_give_only_load_errors(search, examples):
    # Options of every type and size; byte-level mutants of a valid file of every format (sizes
    # in headers made huge, zero or negative), all under the memory cap and a time limit.
    lines = run_child({"hypothesis": search, "examples": examples, "seconds": 20})
    # The child exits non-zero (run_child raises, printing the falsifying input) on any failure.
    assert lines == [{"hypothesis": search, "outcome": "ok", "examples": examples}]


def test_wide_libsvm_file_holds_no_string_per_feature(tmp_path):
    import tracemalloc
    p = tmp_path / "wide.svm"
    p.write_text("1 2000000000:1\n-1 1:2\n")
    with pytest.raises(LoadError, match=r"implies 2,000,000,000 features.*max_features=16,777,216"):
        load(p)
    tracemalloc.start()
    ds = load(p, max_features=3 * 10 ** 9)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert ds.X.shape == (2, 2_000_000_000) and ds.X.nnz == 2
    assert peak < 10 * 2 ** 20  # names are made on demand
    names = ds.feature_names
    assert len(names) == 2_000_000_000 and names[1_999_999_999] == "x1999999999" and names[-1] == "x1999999999"
    assert names[:3] == ["x0", "x1", "x2"] and "x5" in names and "x05" not in names and names.index("x7") == 7
    assert ds.sample_ids == ["0", "1"]


def test_options_that_imply_huge_sizes_are_refused_before_allocation(tmp_path):
    p = tmp_path / "small.svm"
    p.write_text("1 1:1 3:2\n-1 2:2\n")
    with pytest.raises(LoadError, match="implies 1,000,000,000,000 features"):
        load(p, n_features=10 ** 12)
    with pytest.raises(LoadError, match=r"'max_bytes' parameter must be an integer in \[1, "):
        load(p, max_bytes=10 ** 30)
    with pytest.raises(LoadError, match="'n_features' parameter must be .*out of range"):
        load(p, n_features=10 ** 400)
    q = tmp_path / "far.svm"
    q.write_text("1 100000000:1\n-1 1:2\n")
    with pytest.raises(LoadError, match="max_features"):
        load(q, dense=True)
    with pytest.raises(LoadError, match=r"dense 2 x 100000000 array needs about 1\.5 GB"):
        load(q, dense=True, max_features=10 ** 9, max_bytes=10 ** 9)


def test_libsvm_non_finite_labels_are_refused(tmp_path):
    for label in ("nan", "-inf", "NaN"):
        p = tmp_path / "n.svm"
        p.write_text(f"1 1:1\n{label} 1:2\n")
        with pytest.raises(LoadError, match=r"line 2: the label .* is not a finite number"):
            load(p)


def test_tiff_pages_of_another_size_are_reported_not_dropped(tmp_path):
    tifffile = pytest.importorskip("tifffile")
    p = tmp_path / "mixed.tif"
    with tifffile.TiffWriter(p) as tw:
        for _ in range(3):
            tw.write(np.zeros((8, 6), np.uint8), photometric="minisblack", contiguous=True)
        tw.write(np.ones((16, 16), np.uint8), photometric="minisblack")
    ds = load(p)
    assert ds.X.shape == (3, 48)
    assert len(ds.warnings) == 1 and "1 series of another size: shape 16x16 (16x16)" in ds.warnings[0]
    assert "the 3 frame(s) of 8x6 pixels were loaded" in ds.warnings[0]
    assert ds.summary()["warnings"] == ds.warnings


def test_tiff_written_page_by_page_loads_every_page_of_the_first_size(tmp_path):
    tifffile = pytest.importorskip("tifffile")
    p = tmp_path / "pages.tif"
    with tifffile.TiffWriter(p) as tw:  # each write is a series of its own
        for k in range(4):
            tw.write(np.full((5, 7), k, np.uint16), photometric="minisblack")
        tw.write(np.zeros((3, 3), np.uint16), photometric="minisblack")
        tw.write(np.full((5, 7), 9, np.uint16), photometric="minisblack")
    ds = load(p)
    assert ds.X.shape == (5, 35) and ds.X[:, 0].tolist() == [0, 1, 2, 3, 9]
    assert "shape 3x3" in ds.warnings[0]
    assert load(p, max_samples=2).X.shape == (2, 35)


def test_label_arrays_of_the_wrong_length_warn_or_refuse(tmp_path):
    import scipy.io as sio
    X = np.arange(30.0).reshape(10, 3)
    np.savez(tmp_path / "a.npz", X=X, labels=np.arange(9))
    ds = load(tmp_path / "a.npz")
    assert ds.labels is None and "'labels' looks like labels but holds 9 entries for 10 samples" in ds.warnings[0]
    with pytest.raises(LoadError, match="9 entries but 'X' has 10 samples"):
        load(tmp_path / "a.npz", labels_array="labels")
    sio.savemat(tmp_path / "a.mat", {"X": X, "y": np.ones((1, 3))})
    ds = load(tmp_path / "a.mat")
    assert ds.labels is None and "holds 3 entries for 10 samples" in ds.warnings[0]
    assert "transpose=True" in ds.warnings[0]  # 3 = the number of columns: maybe samples are columns


def test_images_of_another_size_are_refused_before_decoding(tmp_path):
    Image = pytest.importorskip("PIL.Image")
    folder = tmp_path / "imgs"
    folder.mkdir()
    Image.new("L", (4, 3)).save(folder / "a.png")
    Image.new("1", (9000, 9000)).save(folder / "b.png")  # 81 Mpixel, 648 MB as float64
    with pytest.raises(LoadError, match="b.png is 9000x9000 .* but a.png is 3x4"):
        load(folder)


def test_special_file_kinds_are_named(tmp_path):
    with pytest.raises(LoadError, match="character device, not a regular file"):
        load("/dev/null", format="csv")
    fifo = tmp_path / "p.svm"
    os.mkfifo(fifo)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    with pytest.raises(LoadError, match="FIFO"):
        load(fifo)


def test_corpus_cases_needing_a_missing_package_are_left_out(monkeypatch):
    """Without PyAV (an extra) the video cases are not run, instead of failing on 'install av'."""
    import importlib.util

    from tests.corpus import harness
    with_av = {c["file"] for c in corpus("load")[0]} if importlib.util.find_spec("av") else None
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "av" else real(name, *a))
    without = {c["file"] for c in corpus("load")[0]}
    assert not any(f.endswith(".mp4") for f in without) and "frame-4096.mp4" not in without
    assert len(without) > 30
    if with_av is not None:
        assert with_av - without == {"frame-4096.mp4", "frame-8192.mp4"}
    assert harness._installed(None) and not harness._installed("av")
