import bz2

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import dump_svmlight_file, load_svmlight_file

from robustcore.datasets import LoadError, load


def random_sparse(seed=0, n=40, d=30):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.2, random_state=seed, format="csr")
    y = rng.choice([-1, 1], size=n)
    return X, y


def test_round_trip_against_sklearn_writer(tmp_path):
    X, y = random_sparse()
    p = tmp_path / "d.svm"
    dump_svmlight_file(X, y, str(p), zero_based=False)
    ds = load(p, n_features=30)
    assert sp.issparse(ds.X) and ds.X.shape == (40, 30)
    assert abs(ds.X - X).max() < 1e-12
    assert ds.labels.tolist() == y.tolist()
    assert ds.provenance.options["zero_based"] is False


def test_agrees_with_sklearn_reader_on_compressed_file(tmp_path):
    X, y = random_sparse(3, 60, 25)
    raw = tmp_path / "raw"
    dump_svmlight_file(X, y, str(raw), zero_based=False, comment="made for a test")
    p = tmp_path / "d.t.bz2"
    p.write_bytes(bz2.compress(raw.read_bytes()))
    ours = load(p)
    Xr, yr = load_svmlight_file(str(raw), zero_based=False)
    assert ours.X.shape == Xr.shape and abs(ours.X - Xr).max() == 0
    assert np.array_equal(ours.labels, yr)
    assert ours.provenance.loader == "libsvm"


def test_zero_based_detection_and_option(tmp_path):
    p = tmp_path / "z.svm"
    p.write_text("1 0:1.5 2:2\n-1 1:3\n")
    auto = load(p)
    assert auto.provenance.options["zero_based"] is True
    assert np.array_equal(auto.X.toarray(), [[1.5, 0, 2], [0, 3, 0]])
    with pytest.raises(LoadError, match="indices start at 1.*zero_based=True"):
        load(p, zero_based=False)


def test_dense_option_and_memory_limit(tmp_path):
    p = tmp_path / "d.svm"
    p.write_text("2 1:1 3:4 # a comment\n3 qid:7 2:5\n")
    d = load(p, dense=True)
    assert isinstance(d.X, np.ndarray) and np.array_equal(d.X, [[1, 0, 4], [0, 5, 0]])
    assert d.labels.tolist() == [2, 3]
    big = tmp_path / "big.svm"
    big.write_text("1 100000:1\n" * 100)
    with pytest.raises(LoadError, match=r"needs about 76\.3 MB.*max_bytes=1000000"):
        load(big, dense=True, max_bytes=1_000_000)
    sparse = load(big)
    assert sparse.X.shape == (100, 100000)
    with pytest.raises(ValueError, match="max_bytes=1000"):
        sparse.dense(max_bytes=1000)


@pytest.mark.parametrize("text,pattern", [
    ("a 1:2\n", "line 1: the label 'a'"),
    ("1 1:2\n1 x:2\n", "line 2.*'x:2'.*not an integer"),
    ("1 1:2 3\n", "'3' is not of the form"),
    ("1 1:abc\n", "not a number"),
    ("1 2:1 2:3\n", "index 2 appears more than once"),
    ("1 1:nan\n", "not finite"),
    ("1,2 1:1\n", "multi-label"),
    ("# nothing\n\n", "no data lines"),
])
def test_bad_lines(tmp_path, text, pattern):
    p = tmp_path / "bad.svm"
    p.write_text(text)
    with pytest.raises(LoadError, match=pattern):
        load(p)


def test_n_features_too_small(tmp_path):
    p = tmp_path / "n.svm"
    p.write_text("1 5:1\n")
    with pytest.raises(LoadError, match="n_features=3 is too small.*index 5"):
        load(p, n_features=3)
