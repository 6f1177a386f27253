import numpy as np
import pytest

from robustcore.datasets import LoadError, load


def test_npy_round_trip_int_and_float(tmp_path):
    X = np.arange(20, dtype=np.int16).reshape(5, 4)
    np.save(tmp_path / "a.npy", X)
    ds = load(tmp_path / "a.npy")
    assert ds.X.dtype == np.float64 and np.array_equal(ds.X, X)
    assert ds.provenance.loader == "npy" and ds.name == "a"


def test_npy_image_stack_sets_image_shape(tmp_path):
    stack = np.random.default_rng(1).integers(0, 255, size=(6, 3, 5), dtype=np.uint8)
    np.save(tmp_path / "s.npy", stack)
    ds = load(tmp_path / "s.npy")
    assert ds.image_shape == (3, 5)
    assert np.array_equal(ds.X[2].reshape(3, 5), stack[2])


def test_npz_picks_data_and_labels(tmp_path):
    X = np.random.default_rng(2).normal(size=(8, 3))
    y = np.array(list("abababab"))
    np.savez_compressed(tmp_path / "d.npz", data=X, labels=y, other=np.zeros(3))
    ds = load(tmp_path / "d.npz")
    assert np.array_equal(ds.X, X) and ds.labels.tolist() == y.tolist()
    assert ds.provenance.options["array"] == "data" and ds.provenance.options["labels_array"] == "labels"
    assert load(tmp_path / "d.npz", labels_array="none").labels is None


def test_npz_ambiguous_and_missing_array_names(tmp_path):
    np.savez(tmp_path / "two.npz", A=np.zeros((3, 2)), B=np.ones((4, 2)))
    with pytest.raises(LoadError, match="several arrays.*array='NAME'"):
        load(tmp_path / "two.npz")
    assert load(tmp_path / "two.npz", array="B").X.shape == (4, 2)
    with pytest.raises(LoadError, match="array='C' is not in.*A \\(3, 2\\)"):
        load(tmp_path / "two.npz", array="C")
    np.savez(tmp_path / "bad_y.npz", X=np.zeros((3, 2)), y=np.zeros(5))
    with pytest.raises(LoadError, match="5 entries.*3 samples"):
        load(tmp_path / "bad_y.npz", labels_array="y")


def test_object_arrays_are_never_unpickled(tmp_path):
    # An .npy whose header declares an object array (as np.save writes for Python objects):
    # the payload would be a pickle stream; the loader must refuse from the header alone.
    with open(tmp_path / "o.npy", "wb") as fh:
        np.lib.format.write_array_header_1_0(fh, {"descr": "|O", "fortran_order": False, "shape": (2,)})
        fh.write(b"\x80\x04not-a-real-pickle.")
    with pytest.raises(LoadError, match="never unpickled"):
        load(tmp_path / "o.npy")


@pytest.mark.parametrize("arr,pattern", [
    (np.arange(5.0), "1-D"),
    (np.array(["a", "b"]).reshape(1, 2), "numeric"),
    (np.zeros((0, 3)), "no samples"),
    (np.array([[1.0, np.nan]]), "missing or non-finite"),
])
def test_bad_arrays(tmp_path, arr, pattern):
    np.save(tmp_path / "b.npy", arr)
    with pytest.raises(LoadError, match=pattern):
        load(tmp_path / "b.npy")


def test_truncated_npy_and_npz(tmp_path):
    np.save(tmp_path / "x.npy", np.ones((50, 50)))
    raw = (tmp_path / "x.npy").read_bytes()
    (tmp_path / "t.npy").write_bytes(raw[: len(raw) // 2])
    with pytest.raises(LoadError, match="damaged|truncated|readable"):
        load(tmp_path / "t.npy")
    np.savez_compressed(tmp_path / "x.npz", X=np.random.default_rng(0).normal(size=(100, 10)))
    raw = (tmp_path / "x.npz").read_bytes()
    (tmp_path / "t.npz").write_bytes(raw[: len(raw) // 2])
    with pytest.raises(LoadError):
        load(tmp_path / "t.npz")


def _npz_with(path, members):
    """An NPZ written member by member (zipfile warns about a repeated name, and writes it)."""
    import io
    import warnings
    import zipfile
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with zipfile.ZipFile(path, "w") as zf:
            for name, arr in members:
                buf = io.BytesIO()
                np.save(buf, arr)
                zf.writestr(name, buf.getvalue())
    return path


@pytest.mark.parametrize("second", ["X.npy", "X"])
def test_npz_with_two_members_of_one_name_is_refused(tmp_path, second):
    # zipfile reads the last "X.npy", np.load answers z["X"] with a member "X": either way one of
    # the two arrays would be loaded silently.
    p = _npz_with(tmp_path / "dup.npz", [("X.npy", np.zeros((4, 2))), (second, np.ones((4, 2)))])
    with pytest.raises(LoadError, match="'X'.*ambiguous"):
        load(p)


def test_session_npz_reader_refuses_duplicates(tmp_path):
    from robustcore.datasets import read_npz
    p = _npz_with(tmp_path / "dup.npz", [("L.npy", np.zeros(3)), ("L.npy", np.ones(3))])
    with pytest.raises(LoadError, match="'L' twice"):
        read_npz(p, 10 ** 6, "results file dup.npz")
