"""What can be wrong with a session or its data: the errors every part of the session package
raises (the format, its files, the checks of its data), in a module of their own so that each
part can raise them without importing the others."""
from __future__ import annotations

from collections.abc import Iterable

__all__ = ["SessionError", "DataMissingError", "DataNeedsConfirmation", "DataMismatchError"]


class SessionError(ValueError):
    """A session file cannot be used: malformed, from a newer version, or its data is unusable."""


class DataMissingError(SessionError):
    """The session's data file (or stored data) cannot be found.

    ``ref`` is the :class:`DatasetRef`; ``searched`` the paths that were tried.
    """

    def __init__(self, message: str, ref: object = None, searched: Iterable[str] = ()):
        super().__init__(message)
        self.ref = ref
        self.searched = list(searched)


class DataNeedsConfirmation(DataMissingError):
    """The session names a data file outside its own folder: it is read only once the user
    confirms it (the window asks; the command line takes ``--data PATH``).

    ``path`` is the file the session names; pass it back as ``data_path`` to confirm it.
    """

    def __init__(self, message: str, ref: object = None, path: str | None = None):
        super().__init__(message, ref=ref, searched=[path] if path else [])
        self.path = path


class DataMismatchError(SessionError):
    """A data file was found but is not the data the session was made from (hash or shape differ).

    ``path`` is the file that was checked, ``expected`` and ``actual`` the two fingerprints.
    """

    def __init__(self, message: str, ref: object = None, path: str | None = None,
                 expected: str | None = None, actual: str | None = None):
        super().__init__(message)
        self.ref = ref
        self.path = path
        self.expected = expected
        self.actual = actual
