"""The window's out-of-core policy (no Qt here: the worker process runs part of it).

When a file is opened, :func:`offer_reason` decides, in the loading worker, whether it should be
read out of core instead of loaded: HDF5 and Zarr tables always (the in-memory loaders do not
read them), a ``.npy`` table or a video whose float64 copy would take more than the memory
budget. The window then offers "Open out of core" with that reason (:class:`LazyOffer`).

The memory budget and the dask.distributed scheduler address are window settings, validated
here (:func:`check_budget`, :func:`check_scheduler`); :func:`bigdata_settings` turns them into
the keyword arguments of :func:`robustcore.bigdata.settings` for one fit, with the folder where
results too large for memory go (:func:`results_dir`).
"""
from __future__ import annotations

import atexit
import os
import re
import shutil
import socket
import sys
import tempfile
from dataclasses import dataclass, field

# The default memory budget: what one data set may take in memory before the window offers to
# read it out of core (robustcore.bigdata plans its chunks within the same number): the library's.
from robustcore.datasets._limits import DEFAULT_MEMORY_BUDGET as DEFAULT_BUDGET

__all__ = ["DEFAULT_BUDGET", "MIN_BUDGET", "LazyOffer", "check_budget", "parse_size", "check_scheduler",
           "offer_reason", "method_restrictions", "results_dir", "working_dir", "bigdata_settings", "format_bytes"]

MiB = 1 << 20
GiB = 1 << 30
MIN_BUDGET = 1 * MiB
MAX_BUDGET = 1 << 50

_TABLE_ONLY = (".h5", ".hdf5", ".he5", ".zarr")


def format_bytes(n) -> str:
    from robustcore.datasets._limits import format_bytes as fb
    return fb(n)


@dataclass(frozen=True)
class LazyOffer:
    """What a load job returns instead of data when the file should be read out of core."""
    path: str
    reason: str
    options: dict = field(default_factory=dict)
    can_load: bool = False   # False: the in-memory loaders cannot read this file at all


def check_budget(nbytes) -> int:
    """A memory budget in bytes, or ValueError saying what is wrong and what would do."""
    if isinstance(nbytes, bool) or not isinstance(nbytes, int):
        raise ValueError(f"the memory budget must be a whole number of bytes; got {nbytes!r}")
    if nbytes < MIN_BUDGET:
        raise ValueError(f"a memory budget of {format_bytes(max(nbytes, 0))} is too small to hold one "
                         f"chunk; give at least {format_bytes(MIN_BUDGET)}")
    if nbytes > MAX_BUDGET:
        raise ValueError(f"a memory budget of {format_bytes(nbytes)} is beyond any machine; give the "
                         f"memory you mean this program to use, e.g. 4 GB")
    return nbytes


_UNITS = {"": 1, "b": 1, "byte": 1, "bytes": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10,
          "m": MiB, "mb": MiB, "mib": MiB,
          "g": GiB, "gb": GiB, "gib": GiB, "t": 1 << 40, "tb": 1 << 40, "tib": 1 << 40}


def parse_size(text: str) -> int:
    """"512 MB", "2GB", "1.5 g", "1048576" -> bytes (binary units); ValueError otherwise."""
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([A-Za-z]*)\s*", str(text))
    if not m or m.group(2).lower() not in _UNITS:
        raise ValueError(f"{text!r} is not a size; write a number and a unit, e.g. 512 MB or 4 GB")
    return check_budget(int(float(m.group(1)) * _UNITS[m.group(2).lower()]))


def check_scheduler(address) -> str | None:
    """A dask.distributed scheduler address ("tcp://host:8786", "host:8786"), or None for the
    local threads (empty text). ValueError in one line otherwise (the rules of
    :func:`robustcore.bigdata.check_address`: a port, a Dask scheme, not the dashboard's http://).
    Whether a scheduler answers there is found when a fit connects: within 30 s, in one line."""
    if address is None:
        return None
    text = str(address).strip()
    if not text:
        return None
    from robustcore.bigdata._dask import check_address
    try:
        return check_address(text)
    except ValueError as exc:
        raise ValueError(f"{exc} (leave it empty to run on this machine's threads)") from None


def _npy_bytes(path: str) -> int:
    """Bytes of a .npy array as float64, from its header alone (never pickle)."""
    import numpy as np
    from numpy.lib import format as npf

    from robustcore.datasets import open_regular
    with open_regular(path) as fh:   # a FIFO named .npy is refused, not waited on
        version = npf.read_magic(fh)
        read = npf.read_array_header_1_0 if version == (1, 0) else npf.read_array_header_2_0
        shape, _, dtype = read(fh)
    if dtype.hasobject:
        return 0   # the loader refuses it with its own message
    return int(np.prod(shape, dtype=np.float64)) * 8


def offer_reason(path: str, budget: int) -> LazyOffer | None:
    """Whether ``path`` should be offered out of core under ``budget`` bytes, and why."""
    from robustcore.datasets._video import VIDEO_SUFFIXES
    p = os.path.abspath(path)
    low = p.lower().rstrip(os.sep)
    if low.endswith(_TABLE_ONLY) or (os.path.isdir(p) and os.path.exists(os.path.join(p, "zarr.json"))):
        kind = "Zarr" if low.endswith(".zarr") or os.path.isdir(p) else "HDF5"
        return LazyOffer(p, f"{kind} tables are read out of core, a block of rows at a time: they are "
                            f"never loaded whole into memory.")
    try:
        if low.endswith(".npy"):
            need, what = _npy_bytes(p), "this table"
        elif low.endswith(VIDEO_SUFFIXES):
            from robustcore.datasets import open_video
            v = open_video(p)
            try:
                need, what = v.n_frames * v.n_features * 8, f"these {v.n_frames:,} frames"
            finally:
                v.close()
        else:
            return None
    except (OSError, ValueError):
        return None   # the loader reports what is wrong with the file
    if need <= budget:
        return None
    return LazyOffer(p, f"Loading {what} would take {format_bytes(need)} of memory as float64, more than "
                        f"the memory budget of {format_bytes(budget)}. Out of core, the data stay on disk "
                        f"and are read a block at a time.", can_load=True)


def method_restrictions(methods: dict, dataset) -> dict:
    """name -> why the method cannot run on ``dataset`` ({} for data in memory): the registry's
    words (robustcore.methods.refusal). No data set yet: nothing is refused."""
    from robustcore.methods import refusal
    if dataset is None:
        return {}
    why = {name: refusal(m, dataset) for name, m in methods.items()}
    return {name: w for name, w in why.items() if w is not None}


def results_dir(session_path: str | None) -> str:
    """Where results too large for memory go: the session's stores folder once there is a session
    (``work.rss.json`` -> ``work.lazy``, where saving it keeps them), else this program's working
    folder (:func:`working_dir`), from which saving a session links or copies them
    (:mod:`app.session.stores`)."""
    if session_path:
        from app.session import STORES_SUFFIX, side_name
        return side_name(session_path, STORES_SUFFIX)
    return working_dir()


_working: str | None = None


def _cache_root() -> str:
    """The user's cache folder: on disk, where results too large for memory belong (the temporary
    folder is often held in memory, tmpfs), and usually on the file system of the user's files,
    so that saving a session links its results instead of copying them."""
    home = os.path.expanduser("~")
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or os.path.join(home, "AppData", "Local")
    elif sys.platform == "darwin":
        base = os.path.join(home, "Library", "Caches")
    else:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(home, ".cache")
    return os.path.join(base, "robust-studio", "unsaved-results")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


def working_dir() -> str:
    """This program's folder for results too large for memory before a session is saved.

    In the user's cache folder (the temporary folder if that cannot be written), named after this
    machine and process; removed when the program exits (unsaved results go with it, as unsaved
    work does). Folders left on this machine by processes that no longer run are removed the first
    time this is called.
    """
    global _working
    if _working is not None:
        return _working
    host = re.sub(r"[^A-Za-z0-9_.-]", "_", socket.gethostname() or "host")
    for root in (_cache_root(), os.path.join(tempfile.gettempdir(), f"robust-studio-{_user()}")):
        try:
            os.makedirs(root, exist_ok=True)
        except OSError:
            continue
        prefix = f"window-{host}-"
        for name in os.listdir(root):
            pid = name[len(prefix):]
            if name.startswith(prefix) and pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
                shutil.rmtree(os.path.join(root, name), ignore_errors=True)
        _working = os.path.join(root, f"{prefix}{os.getpid()}")
        atexit.register(shutil.rmtree, _working, ignore_errors=True)
        return _working
    raise OSError("neither the cache folder nor the temporary folder can be written; results too "
                  "large for memory have nowhere to go: save the session first, so they go beside it")


def _user() -> str:
    return str(os.getuid()) if hasattr(os, "getuid") else "user"


def bigdata_settings(budget: int, scheduler: str | None, store_dir: str) -> dict:
    """Keyword arguments of robustcore.bigdata.settings for one out-of-core fit."""
    return {"memory_budget": int(budget), "scheduler": scheduler, "store_dir": store_dir}
