"""One definition of a line for every text loader (robustcore.datasets._lines)."""
import bz2
import gzip

import numpy as np
import pytest

from robustcore.datasets import LoadError, load
from robustcore.datasets._lines import INLINE_BREAKS, LineEnds, split_lines


def _table(n=30, d=9, seed=0):
    return np.round(np.random.default_rng(seed).normal(size=(n, d)), 6)


def _text(X, end, header=False):
    rows = [",".join(f"c{j}" for j in range(X.shape[1]))] if header else []
    rows += [",".join(repr(float(v)) for v in row) for row in X]
    return end.join(rows) + end


@pytest.mark.parametrize("end", ["\r", "\n", "\r\n"])
@pytest.mark.parametrize("quoted", [False, True])
def test_lone_cr_csv_loads_with_its_real_width(tmp_path, end, quoted):
    X = _table()
    text = _text(X, end, header=True)
    if quoted:  # a quote sends the file down the strict (row by row) path
        text = text.replace("c0", '"c0"', 1)
    p = tmp_path / "mac.csv"
    p.write_bytes(text.encode())
    ds = load(p)
    assert ds.X.shape == (30, 9)
    assert np.array_equal(ds.X, X)
    assert ds.feature_names == [f"c{j}" for j in range(9)]


def test_lone_cr_csv_width_charged_per_line(tmp_path):
    # Today's count saw one 270-field line and refused it under a width limit of 20.
    p = tmp_path / "mac.csv"
    p.write_bytes(_text(_table(), "\r").encode())
    assert load(p, max_features=20).X.shape == (30, 9)


def test_lone_cr_bomb_is_refused_by_the_budget(tmp_path):
    # 2,000,000 one-cell lines in 4 MB of text: charged per line, far over 100 MB.
    p = tmp_path / "bomb.csv.gz"
    p.write_bytes(gzip.compress(b"1\r" * 2_000_000))
    with pytest.raises(LoadError, match="memory|more than"):
        load(p, max_bytes=100 * 1024 ** 2)
    # The same lines with \n were already refused: one rule for both.
    q = tmp_path / "bomb_lf.csv.gz"
    q.write_bytes(gzip.compress(b"1\n" * 2_000_000))
    with pytest.raises(LoadError, match="memory|more than"):
        load(q, max_bytes=100 * 1024 ** 2)


@pytest.mark.slow
def test_lone_cr_libsvm_bomb_is_refused(tmp_path):
    p = tmp_path / "bomb.svm.bz2"
    p.write_bytes(bz2.compress(b"1\r" * 2_000_000))
    with pytest.raises(LoadError, match="memory|more than"):
        load(p, format="libsvm", max_bytes=100 * 1024 ** 2)


def test_lone_cr_libsvm_loads(tmp_path):
    p = tmp_path / "mac.svm"
    p.write_bytes(b"1 1:0.5 3:2\r-1 2:1\r\n1 3:4\r")
    ds = load(p)
    assert ds.X.shape == (3, 3)
    assert np.array_equal(ds.X.toarray(), [[0.5, 0, 2], [0, 1, 0], [0, 0, 4]])


@pytest.mark.parametrize("ch", list(INLINE_BREAKS))
@pytest.mark.parametrize("line", [3, 250])
@pytest.mark.parametrize("quoted", [False, True])
def test_inline_separator_in_csv_names_its_line(tmp_path, ch, line, quoted):
    # Past line 200 the fast path used str.splitlines(): one row silently became two.
    X = _table(n=300, d=3)
    rows = _text(X, "\n").split("\n")
    rows[line - 1] = rows[line - 1].replace(",", "," + ch, 1)
    if quoted:
        rows[0] = '"' + rows[0].replace(",", '",', 1)
    p = tmp_path / "sep.csv"
    p.write_bytes("\n".join(rows).encode("utf-8"))
    with pytest.raises(LoadError, match=f"line {line}: the character"):
        load(p, format="csv")


@pytest.mark.parametrize("ch", list(INLINE_BREAKS))
@pytest.mark.parametrize("name,fmt,head,tail", [
    ("sep.txt", "csv", "1 2\r3 4\r5", " 6\r"),                 # whitespace-separated, lone CRs
    ("sep.svm", "libsvm", "1 1:1\n-1 2:1\r1 1:2", "2:3\n"),    # LIBSVM, mixed line ends
])
def test_inline_separator_names_its_line(tmp_path, ch, name, fmt, head, tail):
    p = tmp_path / name
    p.write_bytes((head + ch + tail).encode("utf-8"))
    with pytest.raises(LoadError, match="line 3: the character"):
        load(p, format=fmt)


@pytest.mark.parametrize("cut", range(1, 12))
def test_line_ends_counted_once_across_pieces(cut):
    data = b"a\r\nb\rc\nd\r\r\ne"
    ends = LineEnds()
    ends(data[:cut])
    ends(data[cut:])
    assert ends.count == 5 == len(split_lines(data.decode())) - 1


def test_windows_ellipsis_read_as_latin1_points_to_cp1252(tmp_path):
    p = tmp_path / "w.csv"
    p.write_bytes(b"a,b,name\n1,2,wait\x85\n3,4,x\n")
    with pytest.raises(LoadError, match=r"line 2: the character '\\x85'.*encoding='cp1252'"):
        load(p, encoding="latin-1", label_column="name")
    assert load(p, encoding="cp1252", label_column="name").labels.tolist() == ["wait\u2026", "x"]
