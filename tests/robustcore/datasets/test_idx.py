import gzip

import numpy as np
import pytest

from robustcore.datasets import LoadError, load


def idx_bytes(arr: np.ndarray) -> bytes:
    codes = {np.dtype("u1"): 0x08, np.dtype("i1"): 0x09, np.dtype(">i2"): 0x0B, np.dtype(">i4"): 0x0C,
             np.dtype(">f4"): 0x0D, np.dtype(">f8"): 0x0E}
    dt = arr.dtype.newbyteorder(">") if arr.dtype.itemsize > 1 else arr.dtype
    head = bytes([0, 0, codes[dt], arr.ndim]) + b"".join(int(s).to_bytes(4, "big") for s in arr.shape)
    return head + arr.astype(dt).tobytes()


@pytest.fixture
def mnist_like(tmp_path):
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, size=(12, 4, 5), dtype=np.uint8)
    labels = rng.integers(0, 10, size=12, dtype=np.uint8)
    (tmp_path / "train-images-idx3-ubyte.gz").write_bytes(gzip.compress(idx_bytes(images)))
    (tmp_path / "train-labels-idx1-ubyte.gz").write_bytes(gzip.compress(idx_bytes(labels)))
    return tmp_path, images, labels


def test_gzipped_round_trip_with_labels_beside(mnist_like):
    root, images, labels = mnist_like
    ds = load(root / "train-images-idx3-ubyte.gz")
    assert ds.image_shape == (4, 5)
    assert np.array_equal(ds.X, images.reshape(12, 20))
    assert ds.labels.tolist() == labels.tolist()
    assert ds.provenance.loader == "idx"
    assert ds.provenance.options["labels_file"] == "train-labels-idx1-ubyte.gz"  # relative: survives a move
    again = load(root / "train-images-idx3-ubyte.gz", format="idx", **ds.provenance.options)
    assert np.array_equal(again.labels, ds.labels)
    few = load(root / "train-images-idx3-ubyte.gz", max_samples=5)
    assert few.X.shape == (5, 20) and few.labels.tolist() == labels[:5].tolist()


def test_raw_file_with_other_dtypes(tmp_path):
    arr = np.linspace(-1, 1, 24).reshape(6, 4).astype(">f8")
    (tmp_path / "data.idx").write_bytes(idx_bytes(arr))
    ds = load(tmp_path / "data.idx")
    assert ds.image_shape is None and np.array_equal(ds.X, arr)
    arr16 = np.arange(-6, 6, dtype=">i2").reshape(3, 2, 2)
    (tmp_path / "s-images-idx3-ubyte").write_bytes(idx_bytes(arr16))
    assert np.array_equal(load(tmp_path / "s-images-idx3-ubyte", labels_file="none").X, arr16.reshape(3, 4))


def test_truncated_and_corrupt_idx(mnist_like, tmp_path):
    root, images, _ = mnist_like
    raw = idx_bytes(images)
    (tmp_path / "cut-ubyte").write_bytes(raw[:-7])
    with pytest.raises(LoadError, match="truncated.*240 bytes.*233"):
        load(tmp_path / "cut-ubyte")
    (tmp_path / "long-ubyte").write_bytes(raw + b"xx")
    with pytest.raises(LoadError, match="more bytes than"):
        load(tmp_path / "long-ubyte")
    (tmp_path / "magic-ubyte").write_bytes(b"\x01\x02" + raw[2:])
    with pytest.raises(LoadError, match="magic"):
        load(tmp_path / "magic-ubyte")
    gz = gzip.compress(raw)
    (tmp_path / "cut-images-idx3-ubyte.gz").write_bytes(gz[: len(gz) // 2])
    with pytest.raises(LoadError, match="truncated or corrupted"):
        load(tmp_path / "cut-images-idx3-ubyte.gz")


def test_label_mismatch_and_labels_file_given(mnist_like):
    root, _, _ = mnist_like
    (root / "short-labels").write_bytes(idx_bytes(np.zeros(3, np.uint8)))
    with pytest.raises(LoadError, match="3 labels.*12 samples"):
        load(root / "train-images-idx3-ubyte.gz", labels_file="short-labels")
    with pytest.raises(LoadError, match="does not exist"):
        load(root / "train-images-idx3-ubyte.gz", labels_file="nope")
    with pytest.raises(LoadError, match="labels file"):
        load(root / "train-labels-idx1-ubyte.gz")
