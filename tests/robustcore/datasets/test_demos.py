import json
from pathlib import Path

import numpy as np
import pytest

from robustcore.datasets import Dataset, LoadError, demo, demos, resources_dir

EXPECTED = {
    # name: (shape, image_shape, n_outliers or None, class_names or None)
    "usps-1-vs-8": ((314, 256), (16, 16), 50, ["1", "8"]),
    "mnist-3000": ((3000, 784), (28, 28), None, list(range(10))),
    "escalator": ((200, 20800), (130, 160), None, None),
    "iris": ((150, 4), None, None, ["setosa", "versicolor", "virginica"]),
    "cardio": ((1831, 21), None, 176, ["inlier", "outlier"]),
    "clusters-3d": ((200, 3), None, None, [0, 1]),
    "gaussian-2d": ((1000, 2), None, None, None),
}


def test_demo_names_and_menu_order():
    names = list(demos())
    assert names == list(EXPECTED)
    assert all(isinstance(v, str) and v and "\n" not in v for v in demos().values())


@pytest.mark.parametrize("name", list(EXPECTED))
def test_demo_loads_with_expected_shape_labels_and_provenance(name):
    shape, image_shape, n_out, classes = EXPECTED[name]
    ds = demo(name)
    assert isinstance(ds, Dataset)
    assert ds.X.shape == shape and ds.X.dtype == np.float64
    assert np.all(np.isfinite(ds.X))
    assert ds.image_shape == image_shape
    assert ds.name == name and ds.description
    if n_out is None:
        assert ds.outliers is None
    else:
        assert int(ds.outliers.sum()) == n_out
    if classes is None:
        assert ds.labels is None
    else:
        assert list(ds.class_names) == classes
        assert set(np.unique(ds.labels).tolist()) == set(classes)
    assert len(ds.feature_names) == shape[1] and len(ds.sample_ids) == shape[0]
    prov = ds.provenance
    assert prov.demo == name
    json.dumps(prov.to_dict())
    if name in ("clusters-3d", "gaussian-2d"):
        assert prov.path is None
    else:
        assert Path(prov.path).is_file() and prov.size == Path(prov.path).stat().st_size
        assert len(prov.sha256) == 64


def test_usps_outliers_are_the_eights_and_values_in_range():
    ds = demo("usps-1-vs-8")
    assert np.array_equal(ds.outliers, ds.labels == "8")
    assert (ds.labels == "1").sum() == 264
    assert ds.X.min() >= -1 and ds.X.max() <= 1
    assert ds.feature_names[:2] == ["p0", "p1"]


def test_image_demos_hold_pixels():
    m = demo("mnist-3000")
    assert m.X.min() == 0 and m.X.max() == 255 and np.all(m.X == np.round(m.X))
    assert m.labels[:5].tolist() == [5, 0, 4, 1, 9]  # the well-known first MNIST training labels
    e = demo("escalator")
    assert np.array_equal(e.frame_order, np.arange(200))
    assert 0 <= e.X.min() and e.X.max() <= 255


def test_iris_and_cardio_details():
    iris = demo("iris")
    assert iris.feature_names == ["sepal_length_cm", "sepal_width_cm", "petal_length_cm", "petal_width_cm"]
    assert [int((iris.labels == c).sum()) for c in iris.class_names] == [50, 50, 50]
    assert np.allclose(iris.X[0], [5.1, 3.5, 1.4, 0.2])
    cardio = demo("cardio")
    assert np.array_equal(cardio.outliers, cardio.labels == "outlier")


def test_generated_demos_follow_their_specification_and_are_reproducible():
    c = demo("clusters-3d")
    assert np.array_equal(c.X, demo("clusters-3d").X)
    for k, centre in enumerate([(2, -1, 0), (-2, 1, 0)]):
        pts = c.X[c.labels == k]
        assert len(pts) == 100
        # 100 unit-variance points: the mean is within ~4 standard errors (0.1 each) of the centre.
        assert np.all(np.abs(pts.mean(axis=0) - centre) < 0.4)
    g = demo("gaussian-2d")
    assert np.array_equal(g.X, demo("gaussian-2d").X)
    assert np.allclose(g.X.mean(axis=0), [3, 10], atol=0.4)
    assert np.allclose(np.cov(g.X.T), [[8, 4], [4, 7]], atol=1.2)


def test_unknown_demo_lists_valid_names():
    with pytest.raises(LoadError) as err:
        demo("usps")
    assert "usps-1-vs-8" in str(err.value) and "gaussian-2d" in str(err.value)
    with pytest.raises(LoadError):
        demo(3)


def test_missing_resource_folder_is_a_load_error(monkeypatch, tmp_path):
    monkeypatch.setenv("ROBUST_STUDIO_RESOURCES", str(tmp_path))
    with pytest.raises(LoadError, match="missing"):
        demo("iris")
    (tmp_path / "iris.npz").write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(LoadError, match="damaged"):
        demo("iris")


def test_resources_folder_is_small_and_documented():
    root = resources_dir()
    total = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    assert total < 15 * 1024 * 1024
    readme = (root / "README.md").read_text(encoding="utf-8")
    for name in EXPECTED:
        assert f"`{name}`" in readme
    for npz in root.glob("*.npz"):  # never pickled: every array loads with allow_pickle=False
        with np.load(npz, allow_pickle=False) as z:
            assert all(z[k].dtype.kind != "O" for k in z.files)
