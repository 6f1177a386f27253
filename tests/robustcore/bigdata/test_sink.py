"""FrameSink: per-frame results in memory or in a Zarr store that appears only when complete."""
import numpy as np
import pytest

from robustcore.bigdata import ArrayFrames, FrameSink, as_frame_source, open_frame_store

FIELDS = {"low_rank": np.float32, "mask": bool}


def test_memory_sink_tracks_leading_complete_frames():
    s = FrameSink(10, 4, FIELDS)
    assert s.in_memory and s.nbytes == 10 * 4 * 4 + 10 * 4
    s.write(4, low_rank=np.ones((3, 4)), mask=np.ones((3, 4), bool))
    assert s.n_written == 0                         # frames 0-3 are still missing
    s.write(0, low_rank=np.zeros((4, 4)), mask=np.zeros((4, 4), bool))
    assert s.n_written == 7
    np.testing.assert_array_equal(s.frame("low_rank", 5), np.ones(4, np.float32))
    with pytest.raises(IndexError):
        s.write(9, low_rank=np.ones((2, 4)), mask=np.ones((2, 4), bool))
    with pytest.raises(ValueError, match="unknown field"):
        s.write(0, sparse=np.ones((1, 4)))
    with pytest.raises(ValueError, match="shape"):
        s.write(0, low_rank=np.ones((1, 3)), mask=np.ones((1, 3), bool))


def test_zarr_store_is_written_aside_and_renamed_when_complete(tmp_path):
    pytest.importorskip("zarr")
    path = tmp_path / "r.zarr"
    s = FrameSink(6, 5, FIELDS, path=path, frame_shape=(1, 5), attrs={"method": "x"})
    s.write(0, low_rank=np.arange(30).reshape(6, 5), mask=np.eye(6, 5, dtype=bool))
    assert not path.exists() and (tmp_path / "r.zarr.partial").is_dir()
    # Readable while open (what a viewer does during a fit), once written (n_written says so).
    s.flush()
    assert s.n_written == 6
    np.testing.assert_array_equal(s.frame("low_rank", 2), np.arange(10, 15))
    with pytest.raises(FileNotFoundError, match="did not finish"):
        open_frame_store(path)
    s.set_attrs(threshold=1.5)
    s.close()
    assert path.is_dir() and not (tmp_path / "r.zarr.partial").exists()
    back = open_frame_store(path)
    assert back.attrs == {"method": "x", "threshold": 1.5} and back.n_written == 6
    np.testing.assert_array_equal(back.read("mask"), np.eye(6, 5, dtype=bool))
    with pytest.raises(FileExistsError):
        FrameSink(6, 5, FIELDS, path=path)


def test_abort_removes_the_partial_store(tmp_path):
    pytest.importorskip("zarr")
    s = FrameSink(3, 2, FIELDS, path=tmp_path / "a.zarr")
    s.write(0, low_rank=np.ones((1, 2)), mask=np.ones((1, 2), bool))
    s.abort()
    assert list(tmp_path.iterdir()) == []


def test_foreign_zarr_store_is_refused(tmp_path):
    zarr = pytest.importorskip("zarr")
    zarr.open_group(str(tmp_path / "other.zarr"), mode="w")
    with pytest.raises(ValueError, match="not one written"):
        open_frame_store(tmp_path / "other.zarr")


def test_array_frames_layout_and_batches():
    X = np.arange(60, dtype=float).reshape(5, 12)
    src = ArrayFrames(X, frame_shape=(2, 2), channels=3)
    assert src.display_shape == (6, 2) and src.value_range == (0.0, 59.0) and src.nbytes == 5 * 12 * 8
    assert [s for s, _ in src.iter_batches(2)] == [0, 2, 4]
    np.testing.assert_array_equal(src.read(1, 3), X[1:3])
    with pytest.raises(IndexError):
        src.read(3, 9)
    with pytest.raises(ValueError, match="needs 9 features per frame, but the frames have 12"):
        ArrayFrames(X, frame_shape=(3, 3))
    from robustcore.datasets import Dataset
    ds = Dataset(X=X, image_shape=(3, 4))
    assert as_frame_source(ds).frame_shape == (3, 4)


def test_buffers_in_memory_are_the_result_rows_themselves():
    s = FrameSink(10, 4, FIELDS)
    b = s.buffers(4, 7)
    assert np.shares_memory(b["low_rank"], s.array("low_rank")) and b["mask"].shape == (3, 4)
    b["low_rank"][:] = 2.0
    b["mask"][:] = True
    s.commit(4, b)
    assert s.n_written == 0                         # frames 0-3 are still missing
    a = s.buffers(0, 4)
    a["low_rank"][:] = 1.0
    a["mask"][:] = False
    s.commit(0, a)
    assert s.n_written == 7
    np.testing.assert_array_equal(s.read("low_rank", 0, 7), [[1.0] * 4] * 4 + [[2.0] * 4] * 3)
    with pytest.raises(ValueError, match="every field"):
        s.commit(7, {"low_rank": np.zeros((1, 4), np.float32)})
    with pytest.raises(ValueError, match="filled in place"):
        s.commit(7, {"low_rank": np.zeros((1, 4)), "mask": np.zeros((1, 4), bool)})   # float64, not float32
    with pytest.raises(IndexError):
        s.buffers(8, 11)


def test_buffers_for_a_store_are_reused_once_written(tmp_path):
    pytest.importorskip("zarr")
    s = FrameSink(9, 5, FIELDS, path=tmp_path / "b.zarr")
    rows = np.arange(45, dtype=np.float32).reshape(9, 5)
    first = s.buffers(0, 4)
    first["low_rank"][:] = rows[:4]
    first["mask"][:] = rows[:4] > 10
    s.commit(0, first)
    s.flush()
    again = s.buffers(4, 8)           # the writer gave the first set back: no new memory
    assert again["low_rank"] is first["low_rank"] and again["mask"] is first["mask"]
    again["low_rank"][:] = rows[4:8]
    again["mask"][:] = rows[4:8] > 10
    s.commit(4, again)
    last = s.buffers(8, 9)            # a short batch gets arrays of its own size
    assert last["low_rank"].shape == (1, 5)
    last["low_rank"][:] = rows[8:]
    last["mask"][:] = rows[8:] > 10
    s.commit(8, last)
    s.close()
    back = open_frame_store(tmp_path / "b.zarr")
    np.testing.assert_array_equal(back.read("low_rank"), rows)
    np.testing.assert_array_equal(back.read("mask"), rows > 10)
    with pytest.raises(ValueError, match="closed"):
        s.buffers(0, 1)
