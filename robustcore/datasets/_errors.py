"""The one error type every loader raises for bad files and bad options."""
from __future__ import annotations

__all__ = ["LoadError"]


class LoadError(ValueError):
    """A file could not be loaded; the message says what is wrong and how to fix it.

    Subclasses ``ValueError`` so callers that already handle bad input keep working.
    """
