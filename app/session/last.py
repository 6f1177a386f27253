"""Reopening the last session when the window starts: remembered in the window's settings store
(QSettings, imported only when called, so the command line stays Qt-free)."""
from __future__ import annotations

import os

__all__ = ["remember_session", "set_reopen_last", "reopen_last_enabled", "last_session"]


def _settings():
    # The window's own settings store (same file, same environment override).
    from app.settings import Settings
    return Settings().qs


def remember_session(path: str | os.PathLike) -> None:
    """Record ``path`` as the last session saved or opened."""
    _settings().setValue("session/last", os.path.abspath(os.fspath(path)))


def set_reopen_last(enabled: bool) -> None:
    """The user's choice: reopen the last session when the window starts."""
    _settings().setValue("session/reopen_last", bool(enabled))


def reopen_last_enabled() -> bool:
    v = _settings().value("session/reopen_last", False)
    return v in (True, "true", "1", 1)


def last_session(only_if_enabled: bool = True) -> str | None:
    """The last session's path if it still exists (and the user asked for reopening)."""
    if only_if_enabled and not reopen_last_enabled():
        return None
    p = _settings().value("session/last", None)
    return str(p) if p and os.path.isfile(str(p)) else None
