"""Property-based: generated line terminators (issue 24).

Any mix of \\n, \\r\\n and lone \\r loads the table it writes, on the CSV fast path (no quotes)
and strict path (quotes), with the whitespace delimiter and in LIBSVM; the memory estimate
charges every line, whatever ends it; and a character that str.splitlines() would break on
inside a line is an error naming that line, never an extra row.
"""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from robustcore.datasets import LoadError, estimate_memory, load
from robustcore.datasets._limits import PER_SAMPLE, TEXT_COPIES
from robustcore.datasets._lines import INLINE_BREAKS

PROPS = settings(max_examples=60, deadline=None, derandomize=True, database=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
ENDS = st.sampled_from(["\n", "\r\n", "\r"])


@st.composite
def tables(draw, min_rows=2, max_rows=40):
    n = draw(st.integers(min_rows, max_rows))
    d = draw(st.integers(1, 6))
    X = np.array(draw(st.lists(st.integers(-999, 999), min_size=n * d, max_size=n * d)), dtype=float).reshape(n, d)
    ends = draw(st.lists(ENDS, min_size=n, max_size=n))
    last = draw(st.booleans())          # the last line with or without its end
    return X, ends, last


def _write(path, rows, ends, last):
    text = "".join(r + e for r, e in zip(rows, ends))
    if not last:
        text = text[: len(text) - len(ends[-1])]
    path.write_bytes(text.encode("utf-8"))
    return path


@pytest.mark.slow
@PROPS
@given(table=tables(), quoted=st.booleans(), delim=st.sampled_from([",", ";", " "]))
def test_any_line_ends_load_the_table(tmp_path_factory, table, quoted, delim):
    X, ends, last = table
    header = delim.join(f'"c{j}"' if quoted else f"c{j}" for j in range(X.shape[1]))
    rows = [header] + [delim.join(str(int(v)) for v in row) for row in X]
    p = _write(tmp_path_factory.mktemp("ends") / "t.csv", rows, ["\n"] + ends, last)
    ds = load(p, header=True)
    assert ds.X.shape == X.shape and np.array_equal(ds.X, X)
    # Every line is charged, whatever ends it (lone-CR files were charged as one line).
    size = p.stat().st_size
    assert estimate_memory(p, header=True) >= TEXT_COPIES * size + PER_SAMPLE * (X.shape[0] + 1)


@pytest.mark.slow
@PROPS
@given(table=tables())
def test_any_line_ends_load_a_libsvm_file(tmp_path_factory, table):
    X, ends, last = table
    rows = [" ".join(["1"] + [f"{j + 1}:{int(v)}" for j, v in enumerate(row) if v]) for row in X]
    p = _write(tmp_path_factory.mktemp("ends") / "t.svm", rows, ends, last)
    ds = load(p, n_features=X.shape[1])
    assert np.array_equal(ds.X.toarray(), X)
    size = p.stat().st_size
    assert estimate_memory(p) >= TEXT_COPIES * size + PER_SAMPLE * (X.shape[0] - (not last))   # every line end


@pytest.mark.slow
@PROPS
@given(table=tables(min_rows=3, max_rows=260), data=st.data(), ch=st.sampled_from(list(INLINE_BREAKS)),
       fmt=st.sampled_from(["csv", "csv-quoted", "whitespace", "libsvm"]))
def test_inline_separator_names_its_line(tmp_path_factory, table, data, ch, fmt):
    X, ends, last = table
    X = np.abs(X) + 1                    # no zero: every LIBSVM field is written
    if fmt == "libsvm":
        rows = [" ".join(["1"] + [f"{j + 1}:{int(v)}" for j, v in enumerate(row)]) for row in X]
    else:
        sep = " " if fmt == "whitespace" else ","
        rows = [sep.join(str(int(v)) for v in row) for row in X]
        if fmt == "csv-quoted":
            rows[0] = '"' + rows[0] + '"' if X.shape[1] == 1 else '"' + rows[0].replace(",", '",', 1)
    k = data.draw(st.integers(0, len(rows) - 1))
    at = data.draw(st.integers(1, len(rows[k]) - 1)) if len(rows[k]) > 1 else 1
    rows[k] = rows[k][:at] + ch + rows[k][at:]
    p = _write(tmp_path_factory.mktemp("sep") / ("t.svm" if fmt == "libsvm" else "t.csv"), rows, ends, last)
    try:
        load(p, **({"format": "libsvm"} if fmt == "libsvm" else {"format": "csv", "header": False}))
    except LoadError as exc:
        assert f"line {k + 1}: the character" in str(exc), str(exc)
    else:
        raise AssertionError(f"{ch!r} inside line {k + 1} was accepted")
