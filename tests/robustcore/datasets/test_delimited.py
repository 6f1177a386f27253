import gzip
import json

import numpy as np
import pytest

from robustcore.datasets import LOADERS, LoadError, load


def write(tmp_path, name, text, encoding="utf-8"):
    p = tmp_path / name
    p.write_bytes(text.encode(encoding) if isinstance(text, str) else text)
    return p


@pytest.mark.parametrize("delim,ext", [(",", "csv"), ("\t", "tsv"), (";", "csv"), ("|", "txt"), (" ", "txt")])
def test_round_trip_with_header_and_labels(tmp_path, delim, ext):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 4))
    labels = rng.choice(["a", "b", "c"], size=30)
    lines = [delim.join(["f1", "f2", "cls", "f3", "f4"])]
    for x, y in zip(X, labels):
        lines.append(delim.join([repr(float(x[0])), repr(float(x[1])), y, repr(float(x[2])), repr(float(x[3]))]))
    p = write(tmp_path, f"t.{ext}", "\n".join(lines) + "\n")
    ds = load(p, label_column="cls")
    assert np.array_equal(ds.X, X)  # repr round-trips float64 exactly
    assert ds.labels.tolist() == labels.tolist()
    assert ds.feature_names == ["f1", "f2", "f3", "f4"]
    assert ds.provenance.loader == "csv"
    assert ds.provenance.options["header"] is True
    assert ds.provenance.options["delimiter"] == {" ": "whitespace", "\t": "tab"}.get(delim, delim)
    json.dumps(ds.provenance.to_dict())


def test_no_header_numeric_labels_by_negative_index(tmp_path):
    X = np.arange(12, dtype=float).reshape(4, 3)
    y = np.array([1, 2, 1, 2])
    p = tmp_path / "n.csv"
    np.savetxt(p, np.column_stack([X, y]), delimiter=",")
    ds = load(p, label_column=-1)
    assert np.array_equal(ds.X, X)
    assert ds.labels.dtype.kind == "i" and ds.labels.tolist() == y.tolist()
    assert ds.feature_names == ["x0", "x1", "x2"]
    assert ds.provenance.options["header"] is False


def test_explicit_header_and_id_column_and_comments(tmp_path):
    p = write(tmp_path, "h.csv", "# made by hand\nid,a,b\ns1,1,2\n\ns2,3,4\n")
    ds = load(p, id_column="id", header=True)
    assert ds.sample_ids == ["s1", "s2"]
    assert np.array_equal(ds.X, [[1, 2], [3, 4]])
    with pytest.raises(LoadError, match="line 3.*'s1'"):
        load(p)


def test_quoted_fields_with_delimiters_inside(tmp_path):
    p = write(tmp_path, "q.csv", 'a,b,name\n1,2,"x, y"\n3,4,"z"\n')
    ds = load(p, label_column="name")
    assert ds.labels.tolist() == ["x, y", "z"]


def test_missing_values_error_drop_median(tmp_path):
    p = write(tmp_path, "m.csv", "a,b\n1,10\n2,NA\n3,\n4,40\n5,inf\n6,60\n")
    with pytest.raises(LoadError) as err:
        load(p)
    msg = str(err.value)
    assert "line 3" in msg and "'b'" in msg and "missing='drop'" in msg and "3 missing" in msg
    d = load(p, missing="drop")
    assert np.array_equal(d.X, [[1, 10], [4, 40], [6, 60]])
    assert d.sample_ids == ["2", "5", "7"]  # file line numbers of the rows kept
    m = load(p, missing="median")
    assert np.array_equal(m.X[:, 1], [10, 40, 40, 40, 40, 60])  # median of 10, 40, 60
    assert np.array_equal(m.X[:, 0], np.arange(1, 7))


def test_median_of_all_missing_column_is_refused(tmp_path):
    p = write(tmp_path, "m.csv", "a,b\n1,NA\n2,NA\n")
    with pytest.raises(LoadError, match="'b'.*no finite value"):
        load(p, missing="median")


@pytest.mark.parametrize("text,pattern", [
    ("", "empty"),
    ("\n\n# only a comment\n", "no data rows"),
    ("a,b\n", "header but no data"),
    ("a,b,c\n1,2,3\n4,5\n", "line 3: 2 field.*line 1 has 3"),
    ("a,b\n1,2\n3,x7\n", "line 3, column 'b'.*'x7' is not a number"),
    ("a,a\n1,2\n", "'a' appears twice"),
    ("a,,c\n1,2,3\n", "header cell 2.*empty"),
    ('a,b\n1,"2\n', "quot"),
])
def test_bad_files_give_specific_errors(tmp_path, text, pattern):
    p = write(tmp_path, "bad.csv", text)
    with pytest.raises(LoadError, match=pattern):
        load(p)


def test_label_column_that_does_not_exist(tmp_path):
    p = write(tmp_path, "l.csv", "a,b\n1,2\n")
    with pytest.raises(LoadError, match="'species' is not a column.*'a', 'b'"):
        load(p, label_column="species")
    with pytest.raises(LoadError, match=r"index in \[-2, 1\]"):
        load(p, label_column=5)
    with pytest.raises(LoadError, match="no feature columns"):
        load(write(tmp_path, "one.csv", "y\n1\n"), label_column="y")


def test_bad_options_are_load_errors_in_param_style(tmp_path):
    p = write(tmp_path, "o.csv", "1,2\n")
    with pytest.raises(LoadError, match="'missing' parameter must be one of"):
        load(p, missing="guess")
    with pytest.raises(LoadError, match="unknown option 'sep'"):
        load(p, sep=",")


def test_encodings(tmp_path):
    p = write(tmp_path, "e.csv", "größe,b\n1,2\n", encoding="latin-1")
    with pytest.raises(LoadError, match="encoding='latin-1'"):
        load(p)
    assert load(p, encoding="latin-1").feature_names == ["größe", "b"]
    bom = write(tmp_path, "bom.csv", "\ufeffa,b\n1,2\n")
    assert load(bom).feature_names == ["a", "b"]
    with pytest.raises(LoadError, match="encoding must be"):
        load(p, encoding="no-such-codec")


def test_gzip_round_trip_and_truncated_gzip(tmp_path):
    p = tmp_path / "z.csv.gz"
    with gzip.open(p, "wt") as fh:
        fh.write("a,b\n" + "1,2\n3,4\n" * 200)
    assert load(p).X.shape == (400, 2)
    bad = tmp_path / "bad.csv.gz"
    bad.write_bytes(p.read_bytes()[:30])
    with pytest.raises(LoadError, match="truncated or corrupted"):
        load(bad)


def test_options_are_declared_params():
    names = [o.name for o in LOADERS["csv"].options]
    assert names[:4] == ["delimiter", "header", "label_column", "id_column"]
    assert "missing" in names and "max_bytes" in names


def test_delimiter_aliases_and_image_shape(tmp_path):
    p = write(tmp_path, "t.txt", "1\t2\t3\t4\n5\t6\t7\t8\n")
    for spelling in ("\t", "tab"):
        ds = load(p, delimiter=spelling, image_shape="2x2")
        assert ds.provenance.options["delimiter"] == "tab"
        assert ds.image_shape == (2, 2) and np.array_equal(ds.X[1].reshape(2, 2), [[5, 6], [7, 8]])
    assert load(p).provenance.options["delimiter"] == "tab"


def test_trailing_delimiter_on_every_line_is_not_a_column(tmp_path):
    p = write(tmp_path, "t.csv", "a,b,\n1,2,\n3,4,\n")
    ds = load(p)
    assert ds.feature_names == ["a", "b"] and np.array_equal(ds.X, [[1, 2], [3, 4]])
    q = write(tmp_path, "q.csv", "a,b,\n1,2,\n3,4,5\n")  # not every line: the header is at fault
    with pytest.raises(LoadError, match="header cell 3"):
        load(q)
    big = write(tmp_path, "big.csv", "1,2,\n" * 300 + "3,4,x\n")  # beyond the head: a ragged line
    with pytest.raises(LoadError, match="line 301: 3 field"):
        load(big)
