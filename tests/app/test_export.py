"""Result export: atomic writes, no silent overwrite, and files that carry their provenance and
read back to exactly the numbers of the result."""
import csv
import io
import json
import os

import numpy as np
import pytest

from app import export
from robustcore.datasets import demo
from robustcore.methods import get_method


@pytest.fixture(scope="module")
def iris_pca():
    ds = demo("iris")
    return get_method("pca").run(ds, {"n_components": 2}), ds


@pytest.fixture(scope="module")
def clusters_esfs():
    ds = demo("clusters-3d")
    return get_method("esfs").run(ds, {}), ds


def _read_csv(path):
    lines = open(path, encoding="utf-8").read().splitlines()
    comments = [ln for ln in lines if ln.startswith("#")]
    body = [ln for ln in lines if not ln.startswith("#")]
    header = {}
    for ln in comments[1:]:
        key, _, value = ln[2:].partition(": ")
        header[key] = json.loads(value)
    rows = list(csv.reader(io.StringIO("\n".join(body))))
    return header, rows[0], rows[1:]


def test_atomic_write_replaces_in_one_step_and_leaves_no_temp(tmp_path, monkeypatch):
    folder = tmp_path / "out"
    folder.mkdir()
    p = folder / "out.csv"
    export.atomic_write_text(p, "first\n")
    assert p.read_text() == "first\n"

    def boom(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        export.atomic_write_text(p, "second\n")
    assert p.read_text() == "first\n"  # the old file is intact
    assert os.listdir(folder) == ["out.csv"]  # and the temporary file is gone


def test_disk_full_names_the_target_file_and_says_what_to_do(tmp_path, monkeypatch):
    import errno
    folder = tmp_path / "out"
    folder.mkdir()
    p = folder / "scores.csv"
    p.write_text("old\n")
    real_fsync = os.fsync

    def full(fd):
        # What a full disk does: the write-back fails, naming the file being written (the temporary).
        raise OSError(errno.ENOSPC, "No space left on device", str(folder / ".scores.csv.x.tmp"))

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError) as info:
        export.atomic_write_text(p, "new\n")
    err = info.value
    assert err.errno == errno.ENOSPC and err.filename == str(p)
    assert "disk is full" in str(err) and str(p) in str(err) and "free some space" in str(err)
    assert ".tmp" not in str(err)
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert p.read_text() == "old\n" and os.listdir(folder) == ["scores.csv"]


def test_unwritable_folder_error_names_the_target_not_the_temporary(tmp_path, monkeypatch):
    import errno
    import tempfile

    def denied(*args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied", str(tmp_path / ".x.csv.abc.tmp"))

    monkeypatch.setattr(tempfile, "mkstemp", denied)
    target = tmp_path / "x.csv"
    with pytest.raises(PermissionError) as info:
        export.atomic_write_text(target, "a\n")
    assert info.value.filename == str(target) and ".tmp" not in str(info.value)
    assert "Permission denied" in str(info.value) and str(target) in str(info.value)


def test_written_file_has_ordinary_permissions(tmp_path):
    p = export.atomic_write_bytes(tmp_path / "a.bin", b"x")
    mask = os.umask(0)
    os.umask(mask)
    assert os.stat(p).st_mode & 0o777 == 0o666 & ~mask


def test_existing_files_are_never_overwritten_silently(tmp_path, iris_pca):
    res, ds = iris_pca
    target = tmp_path / "scores.csv"
    target.write_text("keep me")
    with pytest.raises(FileExistsError):
        export.export_results(res, ds, target)
    assert target.read_text() == "keep me"
    export.export_results(res, ds, target, overwrite=True)
    assert target.read_text().startswith("# Robust Subspace Studio export")


def test_samples_csv_reads_back_exactly_with_provenance(tmp_path, iris_pca):
    res, ds = iris_pca
    (path,) = export.export_results(res, ds, tmp_path / "iris-pca.csv")
    header, cols, rows = _read_csv(path)
    assert header["method"] == "pca"
    assert header["params"] == {"n_components": 2, "center": True, "scale": "auto",
                                "contamination": "auto"}
    assert header["score directions"]["spe"].startswith("higher = farther from the subspace")
    assert header["data"]["sha256"] == ds.provenance.sha256 and header["data"]["demo"] == "iris"
    assert set(header["versions"]) == {"robust-subspace-studio", "numpy", "scipy", "PySide6", "pyqtgraph"}
    assert header["versions"]["numpy"] == np.__version__
    assert cols[:3] == ["index", "sample_id", "label"]
    assert len(rows) == ds.n_samples
    spe = np.array([float(r[cols.index("spe")]) for r in rows])
    np.testing.assert_array_equal(spe, res.sample_scores["spe"])  # shortest round-trip repr: exact
    assert [r[2] for r in rows] == list(ds.labels)


@pytest.mark.slow
def test_a_tall_samples_csv_reads_back_exactly_across_its_blocks(tmp_path):
    """The table is written a block of 65,536 rows at a time: 70,001 rows cross a block's end."""
    from robustcore.datasets import Dataset
    rng = np.random.default_rng(4)
    n = 70_001
    ds = Dataset(X=rng.standard_normal((n, 4)) * [1e-3, 1, 1e3, 1e6], name="tall",
                 labels=np.where(rng.random(n) < 0.5, "a,b", "c"))   # a comma: quoted
    res = get_method("pca").run(ds, {"n_components": 2})
    (path,) = export.export_results(res, ds, tmp_path / "tall.csv")
    _, cols, rows = _read_csv(path)
    assert len(rows) == n and [int(r[0]) for r in rows] == list(range(n))
    for name in ("spe", "t2"):
        np.testing.assert_array_equal([float(r[cols.index(name)]) for r in rows], res.sample_scores[name])
    flags = np.asarray(res.flags["outlier"])
    assert [r[cols.index("flag_outlier")] for r in rows] == ["1" if f else "0" for f in flags]
    assert [r[cols.index("label")] for r in rows] == list(ds.labels)


def test_flags_are_written_as_0_1_columns(tmp_path):
    ds = demo("gaussian-2d")
    res = get_method("residual").run(ds, {"n_components": 1})
    (path,) = export.export_results(res, ds, tmp_path / "flags.csv")
    _, cols, rows = _read_csv(path)
    col = cols.index("flag_outside_either")
    got = np.array([r[col] == "1" for r in rows])
    np.testing.assert_array_equal(got, res.flags["outside_either"])
    assert {r[col] for r in rows} <= {"0", "1"}


def test_npz_holds_arrays_and_metadata_without_pickle(tmp_path, iris_pca):
    res, ds = iris_pca
    (path,) = export.export_results(res, ds, tmp_path / "iris-pca.npz")
    with np.load(path, allow_pickle=False) as z:
        np.testing.assert_array_equal(z["components"], res.subspace.components)
        np.testing.assert_array_equal(z["projection"], res.arrays["projection"])
        np.testing.assert_array_equal(z["score_t2"], res.sample_scores["t2"])
        meta = json.loads(str(z["metadata"]))
    assert meta["method"] == "pca" and meta["data"]["sha256"] == ds.provenance.sha256


def test_npz_deflates_only_what_compression_shrinks_and_reads_back_exactly(tmp_path):
    """Float64 results barely compress (PCP's L and S at 1,000,000 x 20 took 28-30 s of zlib for
    3 % less): they are stored; flags, masks, indices and mostly-zero arrays are deflated. np.load
    and the project's own budgeted reader read every member back bit for bit, without pickle."""
    import zipfile

    from robustcore.datasets import read_npz
    rng = np.random.default_rng(0)
    arrays = {"low_rank": rng.normal(size=(300_000, 4)),                       # 9.6 MB of noise digits
              "sparse": np.where(rng.random((300_000, 4)) < 0.02, rng.normal(size=(300_000, 4)), 0.0),
              "flag_outlier": rng.random(300_000) < 0.01,
              "order": np.argsort(rng.random(1000)),
              "fortran": np.asfortranarray(rng.normal(size=(50, 3))),
              "empty": np.zeros((0, 3)), "scalar": np.array(2.5), "metadata": np.array('{"method": "pcp"}')}
    path = export.atomic_write_bytes(tmp_path / "a.npz", export.npz_bytes(arrays))
    with zipfile.ZipFile(path) as zf:
        kinds = {i.filename[:-4]: i.compress_type for i in zf.infolist()}
    assert kinds["low_rank"] == zipfile.ZIP_STORED and kinds["fortran"] == zipfile.ZIP_STORED
    assert kinds["sparse"] == kinds["flag_outlier"] == zipfile.ZIP_DEFLATED
    with np.load(path, allow_pickle=False) as z:
        assert sorted(z.files) == sorted(arrays)
        for k, a in arrays.items():
            assert z[k].dtype == a.dtype and z[k].shape == a.shape
            np.testing.assert_array_equal(z[k], a)
    for k, a in read_npz(path, 1 << 30, "the export").items():
        np.testing.assert_array_equal(a, arrays[k])
    size = os.path.getsize(path)
    assert size < sum(a.nbytes for a in arrays.values()) - 0.8 * (arrays["sparse"].nbytes + 300_000)
    with pytest.raises(ValueError, match="pickle"):
        export.npz_bytes({"bad": np.array([{"a": 1}], dtype=object)})


def test_evsc_csv_is_in_ranking_order(tmp_path, clusters_esfs):
    res, ds = clusters_esfs
    (path,) = export.export_results(res, ds, tmp_path / "evsc.csv")
    header, cols, rows = _read_csv(path)
    assert cols == ["rank", "feature_index", "feature_name", "evsc"]
    assert [int(r[1]) for r in rows] == list(res.arrays["ranking"])
    assert [r[2] for r in rows] == [ds.feature_names[j] for j in res.arrays["ranking"]]
    np.testing.assert_array_equal([float(r[3]) for r in rows], res.feature_scores["evsc"][res.arrays["ranking"]])
    assert header["method"] == "esfs"


def test_folder_export_writes_every_kind_or_nothing(tmp_path, clusters_esfs, iris_pca):
    res, ds = iris_pca
    written = export.export_results(res, ds, tmp_path)
    assert sorted(os.path.basename(p) for p in written) == ["pca-arrays.npz", "pca-samples.csv"]
    res2, ds2 = clusters_esfs
    (tmp_path / "esfs-features.csv").write_text("old")
    with pytest.raises(FileExistsError):
        export.export_results(res2, ds2, tmp_path)
    assert not (tmp_path / "esfs-arrays.npz").exists()  # nothing written when one target exists


def test_result_of_other_data_and_bad_paths_are_refused(tmp_path, iris_pca):
    res, _ = iris_pca
    with pytest.raises(ValueError, match="computed on other data"):
        export.export_results(res, demo("clusters-3d"), tmp_path / "x.csv")
    with pytest.raises(ValueError, match="end in .csv or .npz"):
        export.export_results(res, demo("iris"), tmp_path / "x.xlsx")


def test_library_versions_name_pyside6_without_importing_qt():
    # a command-line run records the versions in its run.json; importing Qt for PySide6's
    # version (pip installs it as PySide6-Essentials, no "PySide6" metadata) cost 0.05-0.1 s
    import subprocess
    import sys
    code = ("import sys; from app.export import library_versions as v; got = v(); "
            "import PySide6.QtCore as q; print(got['PySide6'] == q.__version__, 'shiboken6' in before)")
    code = code.replace("import PySide6.QtCore", "before = set(sys.modules); import PySide6.QtCore")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["True", "False"]
