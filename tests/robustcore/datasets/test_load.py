import gzip
import json
import os

import numpy as np
import pytest
import scipy.io as sio

from robustcore._params import Param
from robustcore.datasets import (LOADERS, Dataset, LoadError, Provenance, detect_format, estimate_memory,
                                 file_sha256, formats, load)


def test_loaders_registry_shape():
    assert list(LOADERS) == ["csv", "npy", "libsvm", "idx", "mat", "tiff", "images", "video"]
    for name, ld in LOADERS.items():
        assert ld.name == name and ld.label and ld.extensions
        assert all(isinstance(o, Param) for o in ld.options)
        assert any(o.name == "max_bytes" for o in ld.options)
        for o in ld.options:  # every declared default passes its own validation
            assert o.validate(o.default) == o.default


def test_formats_for_the_open_dialog():
    f = formats()
    assert f[0] == ("CSV / TSV", LOADERS["csv"].patterns and list(LOADERS["csv"].patterns))
    assert all(isinstance(lbl, str) and all(p.startswith("*") for p in pats) for lbl, pats in f)
    assert any("*.mat" in pats for _, pats in f) and any("*.npz" in pats for _, pats in f)


def test_provenance_is_filled_and_json_round_trips(tmp_path):
    p = tmp_path / "d.csv"
    p.write_text("a,b\n1,2\n3,4\n")
    ds = load(str(p))
    prov = ds.provenance
    assert prov.path == str(p.resolve()) and os.path.isabs(prov.path)
    assert prov.size == p.stat().st_size and prov.sha256 == file_sha256(p)
    assert prov.loader == "csv" and prov.demo is None
    d = json.loads(json.dumps(prov.to_dict()))
    assert Provenance.from_dict(d) == prov
    # The recorded loader and options reload the same data.
    again = load(prov.path, format=prov.loader, **prov.options)
    assert np.array_equal(again.X, ds.X)


def test_extension_checked_against_content(tmp_path):
    np.save(tmp_path / "x.npy", np.ones((2, 2)))
    (tmp_path / "looks.csv").write_bytes((tmp_path / "x.npy").read_bytes())
    with pytest.raises(LoadError, match="content looks like NumPy.*format='npy'"):
        load(tmp_path / "looks.csv")
    assert load(tmp_path / "looks.csv", format="npy").X.shape == (2, 2)
    (tmp_path / "text.mat").write_text("1,2\n3,4\n")
    with pytest.raises(LoadError, match="MATLAB file but its content looks like CSV"):
        load(tmp_path / "text.mat")
    (tmp_path / "fake.h5").write_bytes(b"\x89HDF\r\n\x1a\n" + b"\0" * 64)
    with pytest.raises(LoadError, match="HDF5"):
        load(tmp_path / "fake.h5")


def test_unknown_extension_resolved_by_content(tmp_path):
    (tmp_path / "a8a").write_text("-1 3:1 11:1\n+1 5:1\n")
    assert detect_format(tmp_path / "a8a") == "libsvm"
    (tmp_path / "table.data").write_text("1,2\n3,4\n")
    assert load(tmp_path / "table.data").X.shape == (2, 2)
    sio.savemat(tmp_path / "m.bin", {"X": np.ones((3, 2))})
    assert detect_format(tmp_path / "m.bin") == "mat"
    (tmp_path / "junk.xyz").write_bytes(bytes(range(256)) * 4)
    with pytest.raises(LoadError, match="cannot tell the format.*format=NAME"):
        load(tmp_path / "junk.xyz")
    (tmp_path / "libsvm.txt").write_text("1 1:0.5 2:1\n")
    assert detect_format(tmp_path / "libsvm.txt") == "libsvm"


def test_missing_empty_and_bad_paths(tmp_path):
    with pytest.raises(LoadError, match="no such file"):
        load(tmp_path / "nope.csv")
    (tmp_path / "empty.csv").write_bytes(b"")
    with pytest.raises(LoadError, match="empty"):
        load(tmp_path / "empty.csv")
    with pytest.raises(LoadError, match="format must be one of"):
        load(tmp_path / "empty.csv", format="excel")
    with pytest.raises(LoadError, match="path must be"):
        load(None)
    (tmp_path / "bad.csv.gz").write_bytes(b"\x1f\x8b\x08\x00garbage")
    with pytest.raises(LoadError, match="truncated or corrupted"):
        load(tmp_path / "bad.csv.gz")


def test_memory_estimate_and_refusal(tmp_path):
    np.save(tmp_path / "big.npy", np.zeros((100, 50), dtype=np.uint8))
    # The uint8 array as read and its float64 copy, from the header alone.
    assert estimate_memory(tmp_path / "big.npy") == 100 * 50 * (1 + 8)
    with pytest.raises(LoadError) as err:
        load(tmp_path / "big.npy", max_bytes=10_000)
    msg = str(err.value)
    assert "43.9 KB" in msg and "max_bytes=10000" in msg
    images = np.zeros((7, 28, 28), np.uint8)
    head = bytes([0, 0, 8, 3]) + b"".join(int(s).to_bytes(4, "big") for s in images.shape)
    (tmp_path / "x-images-idx3-ubyte.gz").write_bytes(gzip.compress(head + images.tobytes()))
    est = estimate_memory(tmp_path / "x-images-idx3-ubyte.gz")
    assert est >= 7 * 784 * 8
    csv = tmp_path / "t.csv"
    csv.write_text("1,2,3\n" * 1000)
    assert estimate_memory(csv) >= 3000 * 8
    with pytest.raises(LoadError, match=r"'max_bytes' parameter must be an integer in \[1, "):
        estimate_memory(csv, max_bytes=0)


def test_dataset_dense_guard_and_plain_arrays():
    ds = Dataset(X=np.ones((2, 3)))
    assert ds.dense() is ds.X


@pytest.mark.slow
def test_imaging_libraries_are_imported_only_when_images_are_loaded():
    import subprocess
    import sys
    code = ("import sys, robustcore.datasets as d; d.demo('iris'); "
            "assert 'PIL' not in sys.modules and 'tifffile' not in sys.modules, 'eager import'")
    subprocess.run([sys.executable, "-c", code], check=True)
