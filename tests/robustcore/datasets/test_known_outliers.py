"""A 0/1 labels variable with a minority of ones, as outlier benchmarks (ODDS) store it, is read as
the known outliers of a MATLAB or NPZ table; the Dataset says where they came from, and an option
switches the recognition off. Files are made here, shaped like ODDS tables (X and a y column)."""
import numpy as np
import pytest
import scipy.io as sio

from robustcore.datasets import LoadError, load


def odds_table(n=200, d=6, outliers=17, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = np.zeros((n, 1))
    idx = rng.choice(n, outliers, replace=False)
    y[idx] = 1
    X[idx] += 6
    return X, y


def test_odds_mat_table_gives_known_outliers(tmp_path):
    X, y = odds_table()
    sio.savemat(tmp_path / "t.mat", {"X": X, "y": y})
    ds = load(tmp_path / "t.mat")
    np.testing.assert_array_equal(ds.outliers, y.ravel() == 1)
    assert ds.outliers.sum() == 17 and ds.outliers_from == "y: 1 = outlier"
    assert ds.labels.tolist() == y.ravel().astype(int).tolist()  # still the labels, too
    assert ds.summary()["known outliers"] == 17 and ds.summary()["known outliers from"] == "y: 1 = outlier"
    assert ds.provenance.options["known_outliers"] is True
    off = load(tmp_path / "t.mat", known_outliers=False)
    assert off.outliers is None and off.outliers_from is None and off.labels is not None


def test_odds_npz_table_gives_known_outliers(tmp_path):
    X, y = odds_table(n=50, outliers=4)
    np.savez(tmp_path / "t.npz", X=X, y=y.ravel().astype(bool))
    ds = load(tmp_path / "t.npz")
    assert ds.outliers.sum() == 4 and ds.outliers_from == "y: 1 = outlier"


@pytest.mark.parametrize("y", [
    np.r_[np.ones(30), np.zeros(20)],        # ones are the majority: classes, not outliers
    np.r_[np.ones(25), np.zeros(25)],        # a tie is not a minority
    np.r_[np.zeros(40), np.ones(5), 2 * np.ones(5)],  # three classes
    np.r_[np.zeros(45), -np.ones(5)],        # 0 / -1 is not the outlier convention
])
def test_other_labels_stay_labels(tmp_path, y):
    np.savez(tmp_path / "c.npz", X=np.random.default_rng(1).standard_normal((50, 2)), y=y)
    ds = load(tmp_path / "c.npz")
    assert ds.outliers is None and ds.labels is not None


def test_outlier_label_marks_any_value_and_says_so(tmp_path):
    X, _ = odds_table(n=12, outliers=2)
    labels = np.array(list("aabbbbbbbbbb"))
    np.savez(tmp_path / "l.npz", X=X, labels=labels)
    ds = load(tmp_path / "l.npz", outlier_label="a")
    assert ds.outliers.sum() == 2 and ds.outliers_from == "label = a"
    miss = load(tmp_path / "l.npz", outlier_label="z")
    assert not miss.outliers.any() and "matches no label" in miss.warnings[0]
    np.savez(tmp_path / "n.npz", X=X)
    with pytest.raises(LoadError, match="has no labels"):
        load(tmp_path / "n.npz", outlier_label="1")


def test_csv_labels_are_not_guessed_to_be_outliers(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("a,b,y\n" + "".join(f"{i},{i % 3},{int(i < 3)}\n" for i in range(20)))
    ds = load(p, label_column="y")
    assert ds.outliers is None  # a column the user chose as labels is not reinterpreted
    assert load(p, label_column="y", outlier_label="1").outliers.sum() == 3
