"""A structural check of MATLAB v5/v7 files before scipy reads them.

scipy's compiled MAT reader trusts the sizes written in the file: a damaged file can make it
read past its buffers and crash the whole process (found by this package's fuzz tests, e.g. a
flipped "complex" flag on a real matrix). This walk over the file's element tags checks every
size and type against the file's bounds and the matrix dimensions, so a damaged file becomes a
LoadError instead. It reads only tags and the few small arrays that sizes depend on.

A compressed variable is inflated only as far as its own header allows: the first bytes give
its class and dimensions, which bound the size of a numeric, character or sparse matrix, and
a variable claiming more than that (or more than the memory budget) is refused before the rest
is inflated. So a small file cannot make this check, or scipy after it, inflate gigabytes.
"""
from __future__ import annotations

import zlib

import numpy as np

from ._errors import LoadError
from ._limits import check_memory

__all__ = ["check_mat5"]

# miTYPE -> item size (bytes) for numeric data elements.
_ITEM = {1: 1, 2: 1, 3: 2, 4: 2, 5: 4, 6: 4, 7: 4, 9: 8, 12: 8, 13: 8, 16: 1, 17: 2, 18: 4}
_MATRIX, _COMPRESSED = 14, 15
_INT8, _INT32, _UINT32 = 1, 5, 6
# mxCLASS ids
_CELL, _STRUCT, _OBJECT, _CHAR, _SPARSE = 1, 2, 3, 4, 5
_NUMERIC = set(range(6, 16))
_MAX_DEPTH = 64


class _Bad(Exception):
    pass


class _Reader:
    def __init__(self, buf: bytes, order: str, limit: int):
        self.buf = buf
        self.order = order
        self.limit = limit
        self.u32 = np.dtype(order + "u4")
        self.i32 = np.dtype(order + "i4")

    def word(self, pos: int) -> int:
        return int(np.frombuffer(self.buf, self.u32, 1, pos)[0])

    def tag(self, pos: int, end: int) -> tuple[int, int, int, int]:
        """(mdtype, nbytes, data_start, next_pos) of the element at ``pos``."""
        if pos + 8 > end:
            raise _Bad(f"an element tag at byte {pos} runs past the end of its container")
        first = self.word(pos)
        if first >> 16:  # small data element: type and size packed in one word, data in the next
            mdtype, nbytes = first & 0xFFFF, first >> 16
            if nbytes > 4:
                raise _Bad(f"a small data element at byte {pos} claims {nbytes} bytes (at most 4)")
            return mdtype, nbytes, pos + 4, pos + 8
        mdtype, nbytes = first, self.word(pos + 4)
        start = pos + 8
        if start + nbytes > end:
            raise _Bad(f"an element at byte {pos} claims {nbytes} bytes but only {end - start} remain")
        nxt = start + nbytes
        if mdtype != _COMPRESSED:
            nxt += (-nbytes) % 8
        return mdtype, nbytes, start, min(nxt, end)

    def numeric(self, pos: int, end: int, count: int | None, what: str, at_least: int = 0) -> int:
        """Check a numeric data element (exactly ``count`` items, or at least ``at_least``)."""
        mdtype, nbytes, start, nxt = self.tag(pos, end)
        if mdtype not in _ITEM:
            raise _Bad(f"{what} has data type {mdtype}, which is not numeric")
        if nbytes % _ITEM[mdtype]:
            raise _Bad(f"{what} holds {nbytes} bytes, not a whole number of items")
        n = nbytes // _ITEM[mdtype]
        if mdtype not in (16, 17):  # UTF-8/16 text is variable-width
            if count is not None and n != count:
                raise _Bad(f"{what} holds {n} values but its dimensions need {count}")
            if n < at_least:
                raise _Bad(f"{what} holds {n} values but the matrix needs {at_least}")
        return nxt

    def ints(self, pos: int, end: int, what: str) -> tuple[np.ndarray, int]:
        mdtype, nbytes, start, nxt = self.tag(pos, end)
        if mdtype not in (_INT32, _UINT32) or nbytes % 4:
            raise _Bad(f"{what} is not a list of 32-bit integers")
        return np.frombuffer(self.buf, self.i32, nbytes // 4, start).astype(np.int64), nxt

    def matrix(self, start: int, end: int, depth: int) -> str:
        """Check one miMATRIX body occupying [start, end); return its name."""
        if depth > _MAX_DEPTH:
            raise _Bad("cells or structs nested too deeply")
        if start == end:
            return ""  # an empty placeholder matrix
        mdtype, nbytes, fstart, pos = self.tag(start, end)
        if mdtype != _UINT32 or nbytes != 8:
            raise _Bad(f"the array flags at byte {start} are malformed")
        cls = self.buf[fstart] if self.order == "<" else self.buf[fstart + 3]
        flags = self.buf[fstart + 1] if self.order == "<" else self.buf[fstart + 2]
        complex_ = bool(flags & 0x08)
        dims, pos = self.ints(pos, end, "the dimensions")
        if len(dims) < 2 or np.any(dims < 0):
            raise _Bad(f"the dimensions {dims.tolist()} are invalid")
        count = int(np.prod(dims, dtype=np.float64))
        if count > self.limit and cls != _SPARSE:  # a sparse matrix costs its stored entries only
            raise _Bad(f"a matrix of {count} elements exceeds the memory limit")
        mdtype, nbytes, nstart, pos = self.tag(pos, end)
        if mdtype != _INT8:
            raise _Bad("the array name is malformed")
        name = bytes(self.buf[nstart:nstart + nbytes]).decode("latin-1")
        if cls in _NUMERIC:
            pos = self.numeric(pos, end, count, "the real part")
            if complex_:
                self.numeric(pos, end, count, "the imaginary part")
        elif cls == _CHAR:
            self.numeric(pos, end, count, "the character data")
        elif cls == _SPARSE:
            if len(dims) != 2:
                raise _Bad("a sparse matrix must be 2-D")
            ir, pos = self.ints(pos, end, "the sparse row indices")
            jc, pos = self.ints(pos, end, "the sparse column pointers")
            if len(jc) != dims[1] + 1 or np.any(np.diff(jc) < 0) or (len(jc) and (jc[0] != 0 or jc[-1] > len(ir))):
                raise _Bad("the sparse column pointers are inconsistent")
            nnz = int(jc[-1]) if len(jc) else 0
            if np.any(ir[:nnz] < 0) or np.any(ir[:nnz] >= max(dims[0], 1)):
                raise _Bad("a sparse row index is out of range")
            pos = self.numeric(pos, end, None, "the sparse values", at_least=nnz)
            if complex_:
                self.numeric(pos, end, None, "the sparse imaginary values", at_least=nnz)
        elif cls == _CELL:
            for _ in range(count):
                pos = self.child(pos, end, depth)
        elif cls in (_STRUCT, _OBJECT):
            if cls == _OBJECT:
                mdtype, _, _, pos = self.tag(pos, end)
                if mdtype != _INT8:
                    raise _Bad("the object's class name is malformed")
            lens, pos = self.ints(pos, end, "the field name length")
            if len(lens) != 1 or lens[0] <= 0:
                raise _Bad("the field name length is invalid")
            mdtype, nbytes, _, pos = self.tag(pos, end)
            if mdtype != _INT8 or nbytes % int(lens[0]):
                raise _Bad("the field names are malformed")
            for _ in range(count * (nbytes // int(lens[0]))):
                pos = self.child(pos, end, depth)
        else:
            raise _Bad(f"matrix class {cls} (function handle, opaque object or unknown) is not supported")
        return name

    def child(self, pos: int, end: int, depth: int) -> int:
        mdtype, nbytes, start, nxt = self.tag(pos, end)
        if mdtype != _MATRIX:
            raise _Bad(f"expected a matrix element at byte {pos}, found type {mdtype}")
        self.matrix(start, start + nbytes, depth + 1)
        return nxt


def _bound(head: bytes, order: str, limit: int) -> int:
    """Most bytes a compressed variable's miMATRIX body may hold, from its first inflated bytes
    (``head``, starting at the body): its class, dimensions and name. Cells, structs and objects
    are bounded by the memory budget only."""
    r = _Reader(head, order, limit)
    end = len(head)
    try:
        _, _, fstart, pos = r.tag(0, end)
        cls = head[fstart] if order == "<" else head[fstart + 3]
        complex_ = bool((head[fstart + 1] if order == "<" else head[fstart + 2]) & 0x08)
        nzmax = r.word(fstart + 4)
        dims, pos = r.ints(pos, end, "the dimensions")
        _, _, _, pos = r.tag(pos, end)  # the name
    except (_Bad, IndexError, ValueError):
        return limit  # a header longer than the first bytes: the full check will judge it
    count = int(np.prod(dims, dtype=np.float64)) if len(dims) else 0
    parts = 2 if complex_ else 1
    if cls in _NUMERIC:
        return pos + parts * (16 + 8 * count)
    if cls == _CHAR:
        return pos + 16 + 4 * count
    if cls == _SPARSE and len(dims) == 2:
        return pos + 16 + 4 * nzmax + 16 + 4 * (int(dims[1]) + 1) + parts * (16 + 8 * nzmax)
    return limit


# Inflated bytes read first from a compressed variable: enough for its class, dimensions and name.
_HEAD = 4096


def _inflate(raw: bytes, start: int, nbytes: int, order: str, limit: int, pos: int) -> bytes:
    """The miMATRIX element inside the compressed element at ``pos``, inflated under its bound."""
    d = zlib.decompressobj()
    src = memoryview(raw)[start:start + nbytes]
    try:
        head = d.decompress(src, 8 + _HEAD)
        if len(head) < 8:
            raise _Bad(f"a compressed variable at byte {pos} is empty or truncated")
        imd, inb = (int(v) for v in np.frombuffer(head, order + "u4", 2))
        if imd != _MATRIX:
            raise _Bad(f"a compressed variable at byte {pos} does not hold a matrix")
        bound = _bound(head[8:], order, limit)
        if inb > bound:
            raise _Bad(f"a compressed variable at byte {pos} claims {inb} bytes, more than its dimensions "
                       f"allow ({bound})")
        check_memory(inb, limit, f"a compressed variable at byte {pos}", "load a smaller file")
        rest = d.decompress(d.unconsumed_tail, 8 + inb - len(head)) if len(head) < 8 + inb else b""
    except zlib.error as exc:
        raise _Bad(f"a compressed variable at byte {pos} is corrupted ({exc})") from None
    return head[:8 + inb] + rest


def check_mat5(raw: bytes, name: str, limit: int) -> dict:
    """Raise LoadError unless ``raw`` is a structurally sound MATLAB v5/v7 file.

    Returns each variable's name -> the bytes its matrix takes uncompressed.
    """
    if len(raw) < 128 or not raw.startswith(b"MATLAB 5.0"):
        raise LoadError(f"{name} is not a MATLAB 5.0/7 MAT-file (its header does not say so); MATLAB v4 "
                        f"files are not supported: re-save it in MATLAB with save(..., '-v7')")
    order = {b"IM": "<", b"MI": ">"}.get(raw[126:128])
    if order is None:
        raise LoadError(f"{name}: the MAT-file header's byte-order mark is damaged")
    top = _Reader(raw, order, limit)
    pos, end = 128, len(raw)
    sizes = {}
    try:
        while pos < end:
            if end - pos < 8:
                break  # scipy ignores trailing padding
            mdtype, nbytes, start, nxt = top.tag(pos, end)
            if mdtype == _COMPRESSED:
                inner = _inflate(raw, start, nbytes, order, limit, pos)
                sub = _Reader(inner, order, limit)
                imd, inb, istart, _ = sub.tag(0, len(inner))
                sizes[sub.matrix(istart, istart + inb, 0)] = inb
            elif mdtype == _MATRIX:
                sizes[top.matrix(start, start + nbytes, 0)] = nbytes
            else:
                raise _Bad(f"expected a variable at byte {pos}, found data type {mdtype}")
            pos = nxt
    except _Bad as exc:
        raise LoadError(f"{name} is damaged: {exc}; re-save or copy the file again") from None
    return sizes
