"""Large loaded tables held as a read-only mapping of a file of this program, not in the window's
memory.

A 2,000,000 x 20 table is 305 MB of float64. Received whole from the worker process that loaded
it, it stayed in the window's own memory for as long as it was open, and went back through the
pipe at every Run (issue 33.2: the window held 526 MB more with such a table than with 20,000
rows, against a budget of 300 MB). Instead, the worker that loads a table of at least
:data:`SPILL_MIN_BYTES` writes it once as a plain ``.npy`` into the window's working folder
(:func:`app.out_of_core.working_dir`, on disk, removed when the window exits) and maps that file;
between the processes such an array travels as its file name (:func:`reduce`, used by
:mod:`app.bulk_pipe`). The window maps it read-only: pages the views read are the page cache's,
which the system can drop and read again, and the ones they never read cost nothing.

The file is a copy of the program's own, never the user's file: the user may rewrite or truncate
their file while it is open, and a mapping of a truncated file kills the process at the next read
(SIGBUS). A copy that has disappeared (the working folder was deleted) is refused with a message
when a process has to map it again; mappings already made keep their pages.
"""
from __future__ import annotations

import mmap
import os
import tempfile
import weakref

import numpy as np

__all__ = ["SPILL_MIN_BYTES", "RESULT_SPILL_MIN_BYTES", "spill", "spill_result", "forget_result", "mapped_file",
           "give_back", "trim_heap", "reduce", "forget", "release", "PRIVATE_WRITES"]

# Smaller tables stay in memory: writing and mapping a file is not worth it below this.
SPILL_MIN_BYTES = 64 << 20
# A result's arrays from this size (2,000,000 float64 values) are mapped too: a run at 30M rows
# returns several of 30-240 MB.
RESULT_SPILL_MIN_BYTES = 16 << 20

# True in the worker process (app.fit_process): a fit may write into its input, and a private
# (copy-on-write) mapping keeps those writes its own. The window maps read-only, so that nothing
# there can change a table whose file the workers map again.
PRIVATE_WRITES = False

_MAPPED: set[str] = set()   # files of ours that this process has mapped
_MAPPINGS: list = []        # weak references to their np.memmap objects


def _open(path: str) -> np.ndarray:
    if not os.path.isfile(path):
        raise ValueError(f"the program's copy of the table ({path}) has been removed, so it cannot be "
                         f"used any more; open the data file again")
    mm = np.load(path, mmap_mode="c" if PRIVATE_WRITES else "r", allow_pickle=False)
    _MAPPED.add(os.path.abspath(path))
    _MAPPINGS[:] = [r for r in _MAPPINGS if r() is not None] + [weakref.ref(mm)]
    return np.asarray(mm)


def release() -> None:
    """Give back the pages of our mapped tables that this process has read: a view that reads a
    whole table once (the SPE / T² map projects every sample) left all of it counted in the
    window's memory. The values stay where they are (the file, and the system's cache of it);
    a later read maps them again."""
    for ref in list(_MAPPINGS):
        give_back(ref())


def give_back(mm) -> None:
    """Unmap the pages of np.memmap ``mm`` from this process: what was written stays in the file
    (a shared mapping's pages are the system's cache of it), and a later access maps it again."""
    raw = getattr(mm, "_mmap", None)
    if raw is not None and hasattr(mmap, "MADV_DONTNEED"):
        try:
            raw.madvise(mmap.MADV_DONTNEED)
        except (OSError, ValueError):   # closed, or a platform without it: pages stay
            pass


_TRIM = None   # glibc's malloc_trim once looked up, or False


def trim_heap() -> None:
    """Hand the process's freed heap back to the system (glibc's ``malloc_trim``; elsewhere
    nothing). A worker thread's freed blocks stay in its own arena, counted in the window's
    memory: after a 5,000,000-row cloud's index was built, 68 MB of 381 were such blocks."""
    global _TRIM
    if _TRIM is None:
        try:
            import ctypes
            _TRIM = ctypes.CDLL("libc.so.6").malloc_trim
        except (OSError, AttributeError):   # not glibc
            _TRIM = False
    if _TRIM:
        _TRIM(0)


def _whole_mapping(a: np.ndarray):
    """The np.memmap of one of our files that ``a`` is all of, or None."""
    base = a.base
    while base is not None and not isinstance(base, np.memmap):
        base = getattr(base, "base", None)
    if base is None or getattr(base, "filename", None) not in _MAPPED:
        return None
    same = (a.shape == base.shape and a.strides == base.strides and a.dtype == base.dtype
            and a.__array_interface__["data"][0] == base.__array_interface__["data"][0])
    return base if same else None


def mapped_file(a) -> str | None:
    """The file of ours that array ``a`` maps as a whole, or None (an array in memory, or a part)."""
    if type(a) is not np.ndarray or a.base is None:
        return None
    mm = _whole_mapping(a)
    return None if mm is None else mm.filename


def reduce(obj):
    """A pickle reduction for an array mapping one of our files as a whole (its file name, which
    the receiving process maps), or NotImplemented (pickled as usual: bytes)."""
    path = mapped_file(obj)
    return NotImplemented if path is None else (_open, (path,))


def _spilled(a, folder: str, min_bytes: int, prefix: str):
    """``a`` written into a file of ``folder`` and mapped from there, when it is a plain numpy
    array (no objects) of at least ``min_bytes`` not mapped already; else ``a`` itself."""
    if type(a) is not np.ndarray or a.nbytes < min_bytes or a.dtype.hasobject or mapped_file(a) is not None:
        return a
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=prefix, suffix=".npy.partial")
    try:
        with os.fdopen(fd, "wb") as fh:
            np.lib.format.write_array(fh, np.ascontiguousarray(a), allow_pickle=False)
        path = tmp[:-len(".partial")]
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    return _open(path)


def spill(dataset, folder: str, min_bytes: int = SPILL_MIN_BYTES):
    """``dataset`` with a dense table of at least ``min_bytes`` moved into a file of ``folder``
    and mapped from there (in place: the in-memory table is released); others as they are."""
    dataset.X = _spilled(dataset.X, folder, min_bytes, "table-")
    return dataset


def _each_array(result, fn) -> None:
    """``fn`` applied to every array of ``result`` (a RunResult), in place: in its dicts and in
    its typed parts, an array shared by both given to ``fn`` once."""
    import dataclasses
    done: dict = {}

    def moved(a):
        if id(a) not in done:
            done[id(a)] = (a, fn(a))   # the original kept: ids stay unique
        return done[id(a)][1]

    for d in (result.sample_scores, result.flags, result.arrays):
        for k, v in list(d.items()):
            d[k] = moved(v)
    for f in dataclasses.fields(result):
        part = getattr(result, f.name)
        if dataclasses.is_dataclass(part) and not isinstance(part, type):
            for g in dataclasses.fields(part):
                v = getattr(part, g.name)
                if type(v) is np.ndarray:
                    object.__setattr__(part, g.name, moved(v))   # typed parts may be frozen


def spill_result(result, folder: str, min_bytes: int = RESULT_SPILL_MIN_BYTES):
    """``result`` (a RunResult) with every per-run array of at least ``min_bytes`` (scores,
    flags, distances ...) moved into a file of ``folder`` and mapped, in place. Out of core at
    30,000,000 rows the window held the ones a fit returns in memory (a score, the flags:
    286 MB) for as long as the result was open."""
    _each_array(result, lambda a: _spilled(a, folder, min_bytes, "result-"))
    return result


def forget_result(result) -> None:
    """Remove the files of ``result``'s mapped arrays (when the window drops the result: a new
    run of its method, or new data). Without it a session of many 30M-row runs kept every
    run's files (hundreds of MB each) until the window exited. Mappings already made keep
    their pages."""
    def gone(a):
        path = mapped_file(a)
        if path is not None and os.path.basename(path).startswith("result-"):
            _unlink(path)
        return a
    _each_array(result, gone)


def _unlink(path: str) -> None:
    _MAPPED.discard(path)
    try:
        os.unlink(path)
    except OSError:   # removed already (the working folder went first): nothing left to free
        pass


def forget(dataset) -> None:
    """Remove the file of ``dataset``'s mapped table (when the window lets the data set go):
    mappings already made keep their pages, and the disk space is returned once they end."""
    if dataset.is_lazy:   # read from its own file; its X refuses to load the whole table
        return
    path = mapped_file(dataset.X)
    if path is not None:
        _unlink(path)
