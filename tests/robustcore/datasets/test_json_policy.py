"""The JSON scan behind parse_json: nesting and cost counted outside strings, in slices."""
import json

import pytest

from robustcore.datasets import LoadError, parse_json
from robustcore.datasets import _limits


def _reference(text):
    """Depth, values and string bytes by walking the characters (the scan's ground truth)."""
    depth = level = 0
    inside = escaped = False
    string_bytes, values = 0, 1
    for ch in text:
        if inside:
            string_bytes += 1
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                inside = False
        elif ch == '"':
            inside, string_bytes = True, string_bytes + 1
        elif ch in "[{":
            level, values = level + 1, values + 1
            depth = max(depth, level)
        elif ch in "]}":
            level -= 1
        elif ch in ",:":
            values += 1
    return depth, values, string_bytes


DOCS = [
    {"a": "[[[{{{", "b": [1, [2, [3]]]},
    ["\\", "\\\"", "x\\\\\"[", {"k\\": [[["]]]"]]]}],
    {"s": "\\" * 7 + '"' + "[" * 5, "t": [[], {}, [[]]]},
    "plain",
    [1.5, -2e-3, True, None, {"": ""}],
]


@pytest.mark.parametrize("doc", DOCS)
@pytest.mark.parametrize("slice_bytes", [1, 2, 3, 5, 1 << 20])
def test_scan_matches_a_character_walk(monkeypatch, doc, slice_bytes):
    # Tiny slices put every escape, quote and bracket across a slice boundary somewhere.
    monkeypatch.setattr(_limits, "_JSON_SLICE", slice_bytes)
    text = json.dumps(doc)
    shape = _limits._shape(text.encode())
    assert (shape.depth, shape.values, shape.string_bytes) == _reference(text)


def test_long_string_is_scanned_not_matched():
    # 3 MB in one string: the old regular expression backtracked through it (3.6 GB for 30 MB).
    text = json.dumps({"a": "x" * 3_000_000, "b": [[1]]})
    assert _limits._depth(text) == 3
    assert parse_json(text, "t")["b"] == [[1]]


@pytest.mark.parametrize("numeral", ["1e99999999", "-1e400", "1.7976931348623159e308"])
def test_overflowing_numerals_refused_like_infinity(numeral):
    with pytest.raises(LoadError, match="overflows to infinity"):
        parse_json(f'{{"x": [0.5, {numeral}]}}', "t")
    assert parse_json('{"x": 1e-99999}', "t") == {"x": 0.0}   # underflow is a number, zero
