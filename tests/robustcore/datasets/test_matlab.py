import numpy as np
import pytest
import scipy.io as sio
import scipy.sparse as sp

from robustcore.datasets import LoadError, load


def test_round_trip_with_labels_and_outlier_label(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 5))
    y = (rng.random(20) < 0.3).astype(float)
    sio.savemat(tmp_path / "o.mat", {"X": X, "y": y.reshape(-1, 1)})
    ds = load(tmp_path / "o.mat", outlier_label="1")
    assert np.array_equal(ds.X, X)
    assert ds.labels.tolist() == y.astype(int).tolist()
    assert np.array_equal(ds.outliers, y == 1)
    assert ds.provenance.options["variable"] == "X" and ds.provenance.options["labels_variable"] == "y"


def test_transpose_sparse_and_char_labels(tmp_path):
    D = np.arange(12.0).reshape(3, 4)  # 4 samples in columns
    sio.savemat(tmp_path / "t.mat", {"D": D, "S": sp.csc_matrix(np.eye(4)),
                                     "names": np.array(["ab", "cd", "ab", "ef"])})
    ds = load(tmp_path / "t.mat", variable="D", transpose=True, labels_variable="names")
    assert np.array_equal(ds.X, D.T) and ds.labels.tolist() == ["ab", "cd", "ab", "ef"]
    s = load(tmp_path / "t.mat", variable="S", labels_variable="none")
    assert sp.issparse(s.X) and np.array_equal(s.X.toarray(), np.eye(4))
    with pytest.raises(LoadError, match="4 entries but the data has 3.*transpose=True"):
        load(tmp_path / "t.mat", variable="D", labels_variable="names")


def test_choosing_variables(tmp_path):
    sio.savemat(tmp_path / "m.mat", {"A": np.ones((3, 4)), "B": np.ones((5, 2)), "s": "text"})
    with pytest.raises(LoadError, match="A 3x4 double.*variable='NAME'"):
        load(tmp_path / "m.mat")
    with pytest.raises(LoadError, match="variable='Z' is not in"):
        load(tmp_path / "m.mat", variable="Z")
    with pytest.raises(LoadError, match="numeric"):
        load(tmp_path / "m.mat", variable="s")


def test_v73_and_damaged_files(tmp_path):
    header = b"MATLAB 7.3 MAT-file, Platform: GLNXA64, Created on: Mon Jan  1 00:00:00 2024 HDF5 schema 1.00 ."
    (tmp_path / "v73.mat").write_bytes(header.ljust(512, b" ") + b"\x89HDF\r\n\x1a\n" + b"\0" * 100)
    with pytest.raises(LoadError, match="v7.3.*-v7"):
        load(tmp_path / "v73.mat")
    sio.savemat(tmp_path / "ok.mat", {"X": np.random.default_rng(0).normal(size=(40, 30))})
    raw = (tmp_path / "ok.mat").read_bytes()
    (tmp_path / "cut.mat").write_bytes(raw[: len(raw) // 2])
    with pytest.raises(LoadError):
        load(tmp_path / "cut.mat")
    with pytest.raises(LoadError, match="non-finite"):
        sio.savemat(tmp_path / "nan.mat", {"X": np.array([[1.0, np.nan]])})
        load(tmp_path / "nan.mat")


def test_matlab_column_major_frames_become_upright_images(tmp_path):
    rng = np.random.default_rng(5)
    frames = rng.integers(0, 255, size=(4, 3, 5)).astype(np.uint8)  # 4 frames of 3 x 5 (h x w)
    cols = np.stack([f.ravel(order="F") for f in frames], axis=1)  # MATLAB: one frame per column
    sio.savemat(tmp_path / "v.mat", {"X": cols})
    ds = load(tmp_path / "v.mat", transpose=True, image_shape="3x5")
    assert ds.image_shape == (3, 5)
    assert np.array_equal(ds.X.reshape(4, 3, 5), frames)
    with pytest.raises(LoadError, match="needs 16 pixels.*15 features"):
        load(tmp_path / "v.mat", transpose=True, image_shape="4x4")
    with pytest.raises(LoadError, match="HEIGHTxWIDTH"):
        load(tmp_path / "v.mat", transpose=True, image_shape="tall")


def test_damaged_sizes_are_refused_before_scipy_reads_them(tmp_path):
    # Regression: a "complex" flag set on a real matrix made scipy's compiled reader crash the
    # process (found by test_fuzz). The structure check turns it into a LoadError.
    sio.savemat(tmp_path / "ok.mat", {"X": np.arange(12.0).reshape(4, 3)}, do_compression=False)
    raw = bytearray((tmp_path / "ok.mat").read_bytes())
    assert raw[128] == 14 and raw[144] == 6  # miMATRIX, then class double in the array flags
    raw[145] |= 0x08
    (tmp_path / "complex.mat").write_bytes(bytes(raw))
    with pytest.raises(LoadError, match="complex.mat is damaged: an element tag .* runs past the end"):
        load(tmp_path / "complex.mat")
    raw = bytearray((tmp_path / "ok.mat").read_bytes())
    raw[160] = 9  # first dimension 4 -> 9: the data no longer matches the dimensions
    (tmp_path / "dims.mat").write_bytes(bytes(raw))
    with pytest.raises(LoadError, match="damaged: the real part holds 12 values but its dimensions need 27"):
        load(tmp_path / "dims.mat")


@pytest.mark.parametrize("compress", [False, True])
def test_structure_check_accepts_every_kind_of_variable(tmp_path, compress):
    variables = {"X": np.arange(6.0).reshape(3, 2), "c": np.array([1 + 2j, 3]), "s": "hello", "u": "ünï",
                 "cell": np.array([[np.ones(2), "ab"]], dtype=object), "st": {"a": np.ones(3), "b": "x"},
                 "sp": sp.random(5, 4, density=0.3, format="csc", random_state=0),
                 "b": np.array([True, False]), "i8": np.arange(5, dtype=np.int8), "e": np.zeros((0, 3))}
    sio.savemat(tmp_path / "all.mat", variables, do_compression=compress)
    ds = load(tmp_path / "all.mat")
    assert np.array_equal(ds.X, variables["X"])
    with pytest.raises(LoadError, match="numeric"):
        load(tmp_path / "all.mat", variable="st")
    assert np.allclose(load(tmp_path / "all.mat", variable="sp").X.toarray(), variables["sp"].toarray())


def test_complex_data_is_refused_not_truncated(tmp_path):
    sio.savemat(tmp_path / "c.mat", {"D": np.array([[1 + 2j, 3]]), "S": sp.csc_matrix(np.array([[1j, 0], [0, 2]]))})
    for var in ("D", "S"):
        with pytest.raises(LoadError, match="real"):
            load(tmp_path / "c.mat", variable=var, labels_variable="none")


def test_matlab_3d_stack_is_height_width_frames(tmp_path):
    frames = np.random.default_rng(9).normal(size=(5, 3, 4))  # 5 frames of 3 x 4
    sio.savemat(tmp_path / "stack.mat", {"V": np.moveaxis(frames, 0, -1)})  # MATLAB: 3 x 4 x 5
    ds = load(tmp_path / "stack.mat")
    assert ds.image_shape == (3, 4) and ds.X.shape == (5, 12)
    assert np.array_equal(ds.X.reshape(5, 3, 4), frames)
