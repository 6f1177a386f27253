"""Writes in progress: their temporary files and the marker of a set of files, so that a write
that was cut short (an error, SIGTERM, ``kill -9``, a power cut) says so and leaves no litter.

- A temporary file is hidden beside its target and named ``.rss-tmp-<process id>-<random><suffix>``
  (:func:`new_temp`). While it lives it is registered: the writer's own ``finally`` removes it on
  an exception, SIGTERM removes it before the process ends (:func:`install_termination_cleanup`,
  which the command line and the window install), and the next write into the folder removes
  those of a process that no longer runs (:func:`sweep_stale`, which also removes the older
  names, ``.tmp-*.mp4`` and ``.NAME.*.tmp``, once they are 10 minutes old).
- A set of files written together (a run folder, a results export, a folder of PNG frames) is
  written inside :func:`writing_set`: a marker ``WHAT.INCOMPLETE.txt`` is there from before the
  first file until after the last, so a folder whose writing was interrupted says so, in its own
  listing and in words inside the marker, and the files that made it look finished do not.
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import os
import re
import signal
import tempfile
import threading
import time

__all__ = ["TEMP_PREFIX", "MARKER_SUFFIX", "new_temp", "forget_temp", "remove_live_temps", "sweep_stale",
           "writing_set", "incomplete_sets", "install_termination_cleanup"]

TEMP_PREFIX = ".rss-tmp-"
MARKER_SUFFIX = ".INCOMPLETE.txt"
_OURS = re.compile(re.escape(TEMP_PREFIX) + r"(\d+)-")
# Names earlier versions gave their temporaries (tempfile's eight random characters), removed
# once old enough that no export still writes them.
_OLDER = re.compile(r"\.tmp-[a-z0-9_]{8}\.mp4|\..+\.[a-z0-9_]{8}\.tmp")
_OLDER_AGE = 600.0

_LIVE: set[str] = set()
_LOCK = threading.Lock()
_ending = threading.Event()


def new_temp(directory, suffix: str = "") -> tuple[int, str]:
    """``(fd, path)`` of a new hidden temporary file in ``directory``, registered until
    :func:`forget_temp` (tempfile.mkstemp's errors as they are)."""
    if _ending.is_set():   # SIGTERM arrived: nothing new to clean up after the sweep
        raise KeyboardInterrupt("the process is ending")
    with _LOCK:   # made and registered at once: a sweep on another thread never sees it unregistered
        fd, path = tempfile.mkstemp(prefix=f"{TEMP_PREFIX}{os.getpid()}-", suffix=suffix, dir=directory)
        _LIVE.add(os.path.abspath(path))
    return fd, path


def forget_temp(path: str) -> None:
    """``path`` was renamed into place or removed: no longer ours to clean up."""
    with _LOCK:
        _LIVE.discard(os.path.abspath(path))


def remove_live_temps() -> None:
    """Remove every temporary file this process has open (the SIGTERM path)."""
    with _LOCK:
        live = list(_LIVE)
        _LIVE.clear()
    for p in live:
        with contextlib.suppress(OSError):
            os.unlink(p)


def _running(pid: int) -> bool:
    if os.name != "posix":      # os.kill(pid, 0) ends the process on Windows: assume it runs
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:             # it runs, as another user
        return True
    return True


def sweep_stale(folder) -> list[str]:
    """Remove the temporaries that earlier writes into ``folder`` left behind (module doc);
    returns their paths."""
    removed = []
    try:
        names = os.listdir(folder)
    except OSError:
        return removed
    now = time.time()
    for name in names:
        path = os.path.join(folder, name)
        m = _OURS.match(name)
        if m:
            pid = int(m.group(1))
            with _LOCK:
                live = os.path.abspath(path) in _LIVE
            # (one of this process's that is not live was left by a write that failed to clean up)
            stale = not live and (pid == os.getpid() or not _running(pid))
        elif _OLDER.fullmatch(name):
            try:
                stale = now - os.lstat(path).st_mtime > _OLDER_AGE
            except OSError:
                stale = False
        else:
            continue
        if stale and os.path.isfile(path) and not os.path.islink(path):
            with contextlib.suppress(OSError):
                os.unlink(path)
                removed.append(path)
    return removed


def _marker_text(what: str, description: str) -> str:
    started = _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()
    return (f"Robust Subspace Studio is writing {description} in this folder (started {started}, process "
            f"{os.getpid()}).\nThis file is removed once the last of them is written. If it is still here, "
            f"the writing was interrupted: the files of {what} in this folder are not a complete set; "
            f"write them again.\n")


@contextlib.contextmanager
def writing_set(folder, what: str, description: str = ""):
    """Write a set of files into ``folder`` (created) inside the block: the marker
    ``WHAT.INCOMPLETE.txt`` is written first and removed only when the block ends without an
    error, after stale temporaries of earlier writes are swept. Yields the marker's path."""
    folder = os.fspath(folder)
    os.makedirs(folder, exist_ok=True)
    sweep_stale(folder)
    marker = os.path.join(folder, what + MARKER_SUFFIX)
    # (written in place: its name alone says the set is incomplete, even if its text were cut)
    with open(marker, "w", encoding="utf-8") as fh:
        fh.write(_marker_text(what, description or what))
    yield marker
    with contextlib.suppress(FileNotFoundError):
        os.unlink(marker)


def incomplete_sets(folder) -> list[str]:
    """The sets of files whose writing into ``folder`` was interrupted (their markers' names
    without the suffix); [] when there are none or the folder cannot be read."""
    try:
        return sorted(n[: -len(MARKER_SUFFIX)] for n in os.listdir(folder) if n.endswith(MARKER_SUFFIX))
    except OSError:
        return []


def install_termination_cleanup() -> None:
    """On SIGTERM: remove this process's temporaries (the markers stay: they say the writing was
    cut short), then end as SIGTERM ends a process. Only from the main thread (Python runs
    signal handlers there: the window keeps a timer so that it gets the chance)."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "SIGTERM"):
        return

    def on_term(signum, frame):
        _ending.set()
        remove_live_temps()
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)
    signal.signal(signal.SIGTERM, on_term)
