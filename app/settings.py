"""Settings kept between launches: window geometry, recent files, last folder, last parameters,
the out-of-core budget and scheduler, and the last session (and whether to reopen it at start).

Stored with QSettings in INI format under a ``settings_version`` key. Values are written as JSON
text where they are not plain strings, because INI round-trips of lists and numbers differ
between platforms. Nothing is ever reset silently: a value that cannot be read is left in the
file untouched and reported through :attr:`Settings.problems` (the window shows them in its
status bar); settings written by a newer release are read as far as they are understood and
their version number is never lowered. A method's parameters are written key by key, only
those this window changed, so two windows on one file never undo each other's.

Tests and the command line can point at a file with ``Settings(path)`` or the environment
variable ``RSS_SETTINGS_FILE``.
"""
from __future__ import annotations

import json
import os
from typing import Any
from collections.abc import Callable, Iterable

from PySide6.QtCore import QByteArray, QSettings

from .out_of_core import DEFAULT_BUDGET, check_budget, check_scheduler

__all__ = ["Settings", "SETTINGS_VERSION", "MAX_RECENT"]

SETTINGS_VERSION = 1
MAX_RECENT = 10


def _migrate_0_to_1(qs: QSettings) -> None:
    # Version 0 is "no version key": nothing was ever released without one, so there is nothing
    # to convert; the step exists so that the next format change has a place to go.
    return None


# from-version -> function bringing a QSettings from that version to the next one.
MIGRATIONS: dict[int, Callable[[QSettings], None]] = {0: _migrate_0_to_1}


class Settings:
    """Typed access to the window's persistent settings.

    Parameters
    ----------
    path : str or None
        INI file to use; default: ``$RSS_SETTINGS_FILE`` or the per-user location.
    """

    def __init__(self, path: str | None = None):
        from ._qt import APPLICATION, ORGANIZATION

        path = path or os.environ.get("RSS_SETTINGS_FILE")
        if path:
            self.qs = QSettings(str(path), QSettings.Format.IniFormat)
        else:
            self.qs = QSettings(QSettings.Format.IniFormat, QSettings.Scope.UserScope,
                                ORGANIZATION, APPLICATION)
        self.problems: list[str] = []
        self.read_only_version = False
        # Per method, the values this window last read or wrote: what it changed since is what
        # it writes, so two windows on one file never write one's stale values over the other's.
        self._known: dict[str, dict] = {}
        self._check_version()

    @property
    def path(self) -> str:
        return self.qs.fileName()

    # -- versioning -------------------------------------------------------------------------
    def _check_version(self) -> None:
        if self.qs.status() != QSettings.Status.NoError:
            self.problems.append(f"the settings file {self.path} could not be read; "
                                 f"using defaults and leaving the file as it is")
            return
        raw = self.qs.value("settings_version")
        fresh = not self.qs.allKeys()
        if raw is None:
            version = SETTINGS_VERSION if fresh else 0
        else:
            try:
                version = int(str(raw))
            except ValueError:
                self.problems.append(f"settings_version {raw!r} is not a number; reading the "
                                     f"settings as version {SETTINGS_VERSION}")
                self.read_only_version = True
                return
        if version > SETTINGS_VERSION:
            self.problems.append(f"settings were written by a newer release (format {version}, this "
                                 f"one reads {SETTINGS_VERSION}); what this release understands is "
                                 f"used and the rest is kept")
            self.read_only_version = True
            return
        while version < SETTINGS_VERSION:
            MIGRATIONS[version](self.qs)
            version += 1
        self.qs.setValue("settings_version", SETTINGS_VERSION)

    def version(self) -> int | None:
        raw = self.qs.value("settings_version")
        try:
            return int(str(raw))
        except (TypeError, ValueError):
            return None

    # -- low level ----------------------------------------------------------------------------
    def _json(self, key: str, default: Any, check: Callable[[Any], bool]) -> Any:
        raw = self.qs.value(key)
        if raw is None:
            return default
        try:
            value = json.loads(str(raw))
        except ValueError:
            value = _NOPE
        if value is _NOPE or not check(value):
            self.problems.append(f"setting {key!r} could not be read and was left as it is")
            return default
        return value

    def _set_json(self, key: str, value: Any) -> None:
        self.qs.setValue(key, json.dumps(value))

    def sync(self) -> None:
        self.qs.sync()

    # -- window -------------------------------------------------------------------------------
    def geometry(self) -> QByteArray | None:
        v = self.qs.value("window/geometry")
        return v if isinstance(v, QByteArray) and not v.isEmpty() else None

    def window_state(self) -> QByteArray | None:
        v = self.qs.value("window/state")
        return v if isinstance(v, QByteArray) and not v.isEmpty() else None

    def set_window(self, geometry: QByteArray, state: QByteArray) -> None:
        self.qs.setValue("window/geometry", geometry)
        self.qs.setValue("window/state", state)

    # -- files --------------------------------------------------------------------------------
    def recent_files(self) -> list[str]:
        files = self._json("files/recent", [], lambda v: isinstance(v, list)
                           and all(isinstance(s, str) for s in v))
        return files[:MAX_RECENT]

    def add_recent_file(self, path: str) -> list[str]:
        path = os.path.abspath(path)
        files = [path] + [f for f in self.recent_files() if f != path]
        files = files[:MAX_RECENT]
        self._set_json("files/recent", files)
        return files

    def remove_recent_file(self, path: str) -> list[str]:
        files = [f for f in self.recent_files() if f != path]
        self._set_json("files/recent", files)
        return files

    def clear_recent_files(self) -> None:
        self._set_json("files/recent", [])

    def last_directory(self) -> str:
        v = self.qs.value("files/last_directory")
        return str(v) if v and os.path.isdir(str(v)) else os.path.expanduser("~")

    def set_last_directory(self, path: str) -> None:
        folder = path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
        self.qs.setValue("files/last_directory", folder)

    # -- out of core --------------------------------------------------------------------------
    def memory_budget(self) -> int:
        """Bytes the window lets a data set take in memory; larger files are offered out of core."""
        v = self._json("out_of_core/memory_budget", DEFAULT_BUDGET, lambda v: isinstance(v, int))
        try:
            return check_budget(v)
        except ValueError as exc:
            self.problems.append(f"setting 'out_of_core/memory_budget' not used: {exc}")
            return DEFAULT_BUDGET

    def set_memory_budget(self, nbytes: int) -> None:
        self._set_json("out_of_core/memory_budget", check_budget(nbytes))

    def scheduler(self) -> str | None:
        """Address of a dask.distributed scheduler for out-of-core fits, or None (local threads)."""
        raw = self.qs.value("out_of_core/scheduler")
        try:
            return check_scheduler(str(raw)) if raw else None
        except ValueError as exc:
            self.problems.append(f"setting 'out_of_core/scheduler' not used: {exc}")
            return None

    def set_scheduler(self, address: str | None) -> None:
        self.qs.setValue("out_of_core/scheduler", check_scheduler(address) or "")

    # -- sessions -----------------------------------------------------------------------------
    def remember_session(self, path: str | os.PathLike) -> None:
        """Record ``path`` as the last session saved or opened."""
        self.qs.setValue("session/last", os.path.abspath(os.fspath(path)))

    def reopen_last(self) -> bool:
        """The user's choice: reopen the last session when the window starts."""
        v = self.qs.value("session/reopen_last", False)
        return v in (True, "true", "1", 1)

    def set_reopen_last(self, enabled: bool) -> None:
        self.qs.setValue("session/reopen_last", bool(enabled))

    def last_session(self, only_if_enabled: bool = True) -> str | None:
        """The last session's path if it still exists (and the user asked for reopening)."""
        if only_if_enabled and not self.reopen_last():
            return None
        p = self.qs.value("session/last", None)
        return str(p) if p and os.path.isfile(str(p)) else None

    # -- methods ------------------------------------------------------------------------------
    def keep_params_on_new_data(self) -> bool:
        """The user's choice for parameters set on one data set when another is loaded: False
        (default) puts them back to the new data's defaults; True keeps them, and the Method
        panel says they were kept."""
        v = self.qs.value("methods/keep_params_on_new_data", False)
        return v in (True, "true", "1", 1)

    def set_keep_params_on_new_data(self, keep: bool) -> None:
        self.qs.setValue("methods/keep_params_on_new_data", bool(keep))

    def last_method(self) -> str | None:
        v = self.qs.value("methods/last")
        return str(v) if v else None

    def set_last_method(self, name: str) -> None:
        self.qs.setValue("methods/last", name)

    def method_params(self, method: str) -> dict:
        """The raw saved values (JSON types) for one method; the caller validates them."""
        return self._json(f"params/{method}", {}, lambda v: isinstance(v, dict))

    def set_method_params(self, method: str, values: dict) -> None:
        """Save the values of ``method`` that this window changed since it last read or wrote
        them, merged key by key into what the file holds now (another window may have written
        other keys since). A method this window never read is written whole."""
        values = {k: _jsonable(v) for k, v in values.items()}
        known = self._known.get(method)
        changed = values if known is None else {k: v for k, v in values.items()
                                                if k not in known or known[k] != v}
        self._known[method] = values
        if not changed:
            return
        self.qs.sync()   # what other processes wrote since
        self._set_json(f"params/{method}", {**self.method_params(method), **changed})

    def restore_params(self, method: str, specs: Iterable) -> tuple[dict, list[str]]:
        """Saved parameters that are still valid for ``specs`` (Param declarations).

        Returns (values, messages): a value that no longer validates, or a parameter the method
        no longer has, is skipped with a message saying so (the default is used instead).
        """
        from robustcore.methods import upgrade_params
        saved = upgrade_params(method, self.method_params(method))
        by_name = {p.name: p for p in specs}
        values, messages = {}, []
        known = {p.name: _jsonable(p.default) for p in by_name.values()}
        for name, raw in saved.items():
            p = by_name.get(name)
            if p is None:
                messages.append(f"{method}: saved parameter {name!r} no longer exists; ignored")
                continue
            try:
                values[name] = p.validate(raw)
            except ValueError as exc:
                messages.append(f"{method}: saved value not used, {exc}; using the default {p.default!r}")
                continue
            known[name] = _jsonable(values[name])
        self._known[method] = known   # what the form now shows: the base of what changes
        return values, messages


_NOPE = object()


def _jsonable(v: Any) -> Any:
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    try:
        import numpy as np

        if isinstance(v, np.generic):
            return v.item()
    except ImportError:  # pragma: no cover - numpy is a dependency
        pass
    return str(v)
