"""How much of a file the page cache holds (for tests of writes made around it)."""
import ctypes
import ctypes.util
import gc
import mmap
import os

import pytest


def cached_pages(path) -> int:
    """Pages of the file at ``path`` in the page cache: mincore over a mapping never touched
    (skips the test where mincore is not available)."""
    size = os.path.getsize(path)
    if size == 0:
        return 0
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    vec = (ctypes.c_ubyte * -(-size // mmap.PAGESIZE))()
    with open(path, "r+b") as fh, mmap.mmap(fh.fileno(), size) as m:
        view = ctypes.c_char.from_buffer(m)
        try:
            failed = libc.mincore(ctypes.c_void_p(ctypes.addressof(view)), ctypes.c_size_t(size), vec) != 0
        finally:
            del view
            gc.collect()            # the ctypes view must go before the mapping closes
    if failed:
        pytest.skip("mincore is not available here")
    return sum(v & 1 for v in vec)
