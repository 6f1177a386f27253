"""The declared data type: Dataset and LazyDataset are both DatasetLike, and say what they are."""
import typing

import numpy as np
import pytest

from robustcore.datasets import KINDS, Dataset, DatasetLike, Kind, Provenance, is_lazy_dataset


def test_the_kinds_are_the_literal_s_values():
    assert set(KINDS) == set(typing.get_args(Kind)) == {"table", "frames"}


def test_a_dataset_in_memory_is_a_table_or_frames():
    X = np.arange(24.0).reshape(4, 6)
    table, frames = Dataset(X=X), Dataset(X=X, image_shape=(2, 3))
    for ds in (table, frames):
        assert isinstance(ds, DatasetLike) and ds.is_lazy is False and not is_lazy_dataset(ds)
        assert ds.kind in KINDS and isinstance(ds.provenance, Provenance)
    assert (table.kind, frames.kind) == ("table", "frames")
    # the fingerprint is of the content: the same rows, the same identity; other rows, another
    assert table.fingerprint() == Dataset(X=X.copy()).fingerprint() != Dataset(X=X + 1).fingerprint()


@pytest.mark.parametrize("thing", [np.zeros((3, 2)), None, "data.csv", {"is_lazy": True}])
def test_what_is_not_a_data_set_is_not_lazy(thing):
    assert not isinstance(thing, DatasetLike) and not is_lazy_dataset(thing)


def test_data_opened_out_of_core_are_lazy_tables_or_frames(tmp_path):
    pytest.importorskip("dask.array")
    from robustcore.bigdata import LazyDataset, open_lazy
    from robustcore.bigdata._frames import ArrayFrames
    X = np.random.default_rng(0).normal(size=(50, 6))
    np.save(tmp_path / "t.npy", X)
    table = open_lazy(tmp_path / "t.npy")
    # (a video's frames as a source on disk would be; its file's hash is its identity)
    frames = LazyDataset(ArrayFrames(X, frame_shape=(2, 3)), "clip", Provenance(loader="video", sha256="ab" * 32))
    for ds in (table, frames):
        assert isinstance(ds, DatasetLike) and ds.is_lazy is True and is_lazy_dataset(ds)
        assert ds.n_samples == 50 and ds.n_features == 6 and isinstance(ds.provenance, Provenance)
        assert isinstance(ds.fingerprint(), str) and ds.fingerprint()
    assert (table.kind, frames.kind) == ("table", "frames") and frames.fingerprint() == "ab" * 32
    # the file's identity does not depend on how it is opened: the lazy table's is its content's
    assert table.fingerprint() == open_lazy(tmp_path / "t.npy").fingerprint()


def test_the_row_passes_recognise_lazy_input_by_its_type():
    """robustcore._passes.is_lazy: a data set opened out of core, a LazyTable or a Dask array,
    recognised by type (not by a class's name)."""
    from robustcore._passes import is_lazy
    assert not is_lazy(np.zeros((3, 2))) and not is_lazy(Dataset(X=np.zeros((3, 2))))

    class LazyTable:   # a stranger with the name is not the table
        is_lazy = True
    assert not is_lazy(LazyTable())
    da = pytest.importorskip("dask.array")
    assert is_lazy(da.zeros((3, 2)))
