"""Files of per-row results written and read around the page cache (O_DIRECT): for results a
run writes once and reads at most once more (the projections, the distances, the outlier score).

A file written through the page cache takes a fresh page of memory per 4 KB. On this project's
benchmark machine, a virtual machine whose host takes back the guest's free memory (free page
reporting), each such page is one the host must supply again: about 2 CPU s per GB written,
several times the copy itself (30M rows x 50, Coherence Pursuit: 2.9 GB of results, about 5 s of
system time; benchmarks/results_bigdata.md 3.22). With O_DIRECT the bytes go from a small buffer
of this process, reused, to the disk (about 0.02 CPU s per GB here), and the page cache keeps
what it held: the table the passes read, above all. A file written so is read the same way
(:func:`is_direct`): a buffered read of a file that is not cached takes fresh pages again (1.6
CPU s per GB here). The price is the disk's own time (0.4-0.5 s per GB each way here), in the
thread that writes or reads.

Where O_DIRECT is refused (tmpfs, some network file systems, not Linux) the caller writes and
reads the ordinary way.
"""
from __future__ import annotations

import mmap
import os
import threading

__all__ = ["write_file", "read_into", "mark", "is_direct", "moved"]

# O_DIRECT wants the buffer, the file offset and the length aligned to the device's logical
# block; a page covers every common one.
_ALIGN = 4096
# Bytes per system call, through a page-aligned buffer of this size per thread.
_PIECE = 1 << 20
_O_DIRECT = getattr(os, "O_DIRECT", 0)
_local = threading.local()

# Chunk folders this process wrote with O_DIRECT (their reads go around the cache too).
_folders: set[str] = set()
_lock = threading.Lock()


def _buffer() -> memoryview:
    buf = getattr(_local, "buf", None)
    if buf is None:
        buf = _local.buf = mmap.mmap(-1, _PIECE)
    return memoryview(buf)


def write_file(path: str, data) -> bool:
    """A new file at ``path`` holding the bytes of the contiguous buffer ``data``, written with
    O_DIRECT; False, and no file, where the file system refuses O_DIRECT."""
    if not _O_DIRECT:
        return False
    src = memoryview(data).cast("B")
    n = src.nbytes
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _O_DIRECT, 0o644)
    except OSError:
        return False
    buf = _buffer()
    try:
        for at in range(0, n, _PIECE):
            k = min(_PIECE, n - at)
            buf[:k] = src[at:at + k]
            whole = -(-k // _ALIGN) * _ALIGN        # the last block padded, cut off below
            buf[k:whole] = bytes(whole - k)
            done = 0
            while done < whole:
                done += os.pwrite(fd, buf[done:whole], at + done)
        if n % _ALIGN:
            os.ftruncate(fd, n)
    except OSError:
        os.close(fd)
        os.unlink(path)
        return False
    finally:
        buf.release()
    os.close(fd)
    return True


def read_into(path: str, out) -> int:
    """Fill the writable contiguous buffer ``out`` from the start of the file at ``path`` (at
    most its size) with O_DIRECT; the bytes read, or -1 (nothing read) where O_DIRECT is
    refused. A missing file raises FileNotFoundError."""
    if not _O_DIRECT:
        return -1
    dst = memoryview(out).cast("B")
    n = dst.nbytes
    try:
        fd = os.open(path, os.O_RDONLY | _O_DIRECT)
    except FileNotFoundError:
        raise
    except OSError:
        return -1
    buf = _buffer()
    got = 0
    try:
        while got < n:
            k = min(_PIECE, n - got)
            r = os.preadv(fd, [buf[:-(-k // _ALIGN) * _ALIGN]], got)
            if r <= 0:
                break
            r = min(r, k)
            dst[got:got + r] = buf[:r]
            got += r
    except OSError:
        return -1
    finally:
        buf.release()
        os.close(fd)
    return got


def mark(folder: str) -> None:
    """Files under ``folder`` were written here with O_DIRECT."""
    with _lock:
        _folders.add(folder)


def is_direct(folder: str) -> bool:
    """Whether files under ``folder`` were written here with O_DIRECT (read them so)."""
    return folder in _folders


def moved(old: str, new: str) -> None:
    """The folder ``old`` (a store written under a temporary name) is now ``new``."""
    old, new = os.path.join(old, ""), os.path.join(new, "")
    with _lock:
        for f in [f for f in _folders if f.startswith(old)]:
            _folders.discard(f)
            _folders.add(new + f[len(old):])
