"""The one error type every loader raises for bad files and bad options, and the two helpers
that keep what its messages echo from an input short: :func:`shown` (one value, cut to
:data:`ECHO_CHARS` characters) and :func:`listing` (names, the first :data:`LISTED` of them and
how many more). A file that names 20,000 datasets, or an option 100 KB long, still gets a
one-line error."""
from __future__ import annotations

import reprlib

__all__ = ["LoadError", "shown", "listing", "ECHO_CHARS", "LISTED"]

ECHO_CHARS = 80
LISTED = 10


class LoadError(ValueError):
    """A file could not be loaded; the message says what is wrong and how to fix it.

    Subclasses ``ValueError`` so callers that already handle bad input keep working.
    """


def shown(value, limit: int = ECHO_CHARS) -> str:
    """``repr(value)`` cut to ``limit`` characters (an ellipsis says it was cut), built by
    :mod:`reprlib` only as far as needed: a list of a million items is not printed whole."""
    text = _REPR.repr(value).replace("\n", "\\n").replace("\r", "\\r")
    return text if len(text) <= limit else text[:limit - 1] + "…"


_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxlist, _REPR.maxtuple, _REPR.maxdict, _REPR.maxset = 3, 8, 8, 8, 8
_REPR.maxstring = _REPR.maxother = _REPR.maxlong = ECHO_CHARS


def listing(names, limit: int = LISTED, empty: str = "none") -> str:
    """``a, b, c … and 19,990 more`` (each name cut as :func:`shown` cuts a value), or ``empty``."""
    items = list(names) if not isinstance(names, (list, tuple)) else names
    if not items:
        return empty
    head = ", ".join(str(n) if len(str(n)) <= ECHO_CHARS else str(n)[:ECHO_CHARS - 1] + "…"
                     for n in items[:limit])
    more = len(items) - limit
    return head + (f" … and {more:,} more" if more > 0 else "")
