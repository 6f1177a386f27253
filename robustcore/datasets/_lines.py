"""What a line is, for every text loader (CSV fast and strict paths, LIBSVM) and their costs.

One definition, written down once:

* A line ends at ``\\r\\n``, a lone ``\\n`` or a lone ``\\r`` (classic Mac files), and only there.
  The budget counts the same line ends (:class:`LineEnds`), so a file of lone-CR lines is charged
  per line like any other.
* The other characters that ``str.splitlines()`` treats as line breaks (vertical tab, form feed,
  the file/group/record separators ``\\x1c``-``\\x1e``, NEL ``\\x85``, U+2028 and U+2029) are not
  line ends and not whitespace: one inside a line is an error that names its line
  (:func:`check_no_inline_breaks`), on every path, before either path parses the text. A quoted
  CSV cell is no exception: these characters never belong in a numeric table, and accepting them
  in one place only would let the two paths disagree.
"""
from __future__ import annotations

import re

import numpy as np

from ._errors import LoadError

__all__ = ["INLINE_BREAKS", "LineEnds", "split_lines", "line_of", "first_inline_break", "check_no_inline_breaks",
           "head_end"]

#: Characters ``str.splitlines()`` breaks on that are not line ends here.
INLINE_BREAKS = "\v\f\x1c\x1d\x1e\x85\u2028\u2029"
_INLINE = re.compile("[" + re.escape(INLINE_BREAKS) + "]")
_END = re.compile(r"\r\n?|\n")
_CR, _LF = 13, 10


def first_inline_break(text: str) -> int:
    """Position of the first in-line separator of ``text``, -1 if none. ASCII text (the usual
    table) is searched for its five candidates by ``str.find`` (a memchr each, several times
    faster than one character-class search)."""
    if text.isascii():
        found = [i for i in (text.find(c) for c in "\v\f\x1c\x1d\x1e") if i >= 0]
        return min(found) if found else -1
    m = _INLINE.search(text)
    return -1 if m is None else m.start()


def split_lines(text: str) -> list[str]:
    """The lines of ``text`` without their ends (``\\r\\n``, ``\\n`` or ``\\r``); a final empty
    piece after the last line end is dropped, as ``str.splitlines()`` does."""
    if "\r" not in text:
        lines = text.split("\n")
    elif first_inline_break(text) < 0:
        # Without in-line separators str.splitlines() breaks exactly at \r\n, \n and \r (4x
        # faster than the regular expression).
        return text.splitlines()
    else:
        lines = _END.split(text)
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def line_of(text: str, pos: int) -> int:
    """1-based number of the line holding character ``pos`` of ``text``."""
    head = text[:pos]
    return head.count("\n") + head.count("\r") - head.count("\r\n") + 1


def check_no_inline_breaks(text: str, name: str) -> None:
    """LoadError naming the line of the first in-line separator of ``text``, if any."""
    at = first_inline_break(text)
    if at >= 0:
        # Byte 0x85 read as latin-1 is NEL; in Windows-1252 text it is an ellipsis.
        hint = " (if the file is Windows text, pass encoding='cp1252')" if text[at] == "\x85" else ""
        raise LoadError(f"{name}, line {line_of(text, at)}: the character {text[at]!r} is not allowed "
                        f"inside a line (lines end only at \\n, \\r\\n or \\r){hint}; remove it or replace "
                        f"it with a line end or a delimiter")


def head_end(text: str, n: int) -> int:
    """Index just past the end of the ``n``-th line end of ``text``, or -1 if it has fewer."""
    count = 0
    for m in _END.finditer(text):
        count += 1
        if count >= n:
            return m.start()
    return -1


class LineEnds:
    """Counts line ends in bytes read piece by piece: ``\\n``, ``\\r\\n`` (once) and a lone ``\\r``.

    ``ends(a)`` gives the positions in the uint8 array ``a`` (the next piece of the stream) at
    which a line ends, a ``\\r\\n`` counted at its ``\\n`` and one split across two pieces once.
    """

    def __init__(self):
        self.count = 0
        self._after_cr = False  # the previous piece ended with \r (already counted as an end)

    def ends(self, a: np.ndarray) -> np.ndarray:
        if a.size == 0:
            return np.empty(0, dtype=np.intp)
        lf = a == _LF
        cr = a == _CR
        # A \n right after a \r closes the same line the \r already ended: not a second end.
        lf_after_cr = np.zeros_like(lf)
        lf_after_cr[1:] = lf[1:] & cr[:-1]
        lf_after_cr[0] = lf[0] and self._after_cr
        # A \r is counted at once; a following \n is then skipped (above), which also works across pieces.
        marks = (lf & ~lf_after_cr) | cr
        self._after_cr = bool(cr[-1])
        out = np.flatnonzero(marks)
        self.count += out.size
        return out

    def __call__(self, piece: bytes) -> int:
        """Line ends in ``piece`` (for a counting callback)."""
        return self.ends(np.frombuffer(piece, dtype=np.uint8)).size
