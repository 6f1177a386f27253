"""Decoding one stored chunk of a table (Zarr, HDF5) to exactly the size its metadata declares.

A compressed chunk says nothing trustworthy about how large it inflates: 2 MB of zlib can hold
4 GB of zeros. So every chunk is decoded here, never by the format library, with the output
bounded by the size the array's metadata declares for it (checked against the memory budget
when the table was opened): a stream that would inflate further is stopped after at most one
byte more and refused, one that ends short is refused as truncated. Codecs whose output cannot
be bounded this way are not read (the caller names them and says how to rewrite the data).

The codecs: none, zlib, gzip (and HDF5's deflate filter, which is zlib), bz2, lzma/xz, zstd
(the frame header's content size is checked first; without one, the output buffer has the
declared size and decoding fails if it overflows), blosc and lz4 (their headers carry the
decoded size, checked before decoding).
"""
from __future__ import annotations

import bz2
import lzma
import struct
import zlib

import numpy as np

from ..datasets._errors import LoadError

__all__ = ["CODECS", "decode"]

#: Names of the codecs :func:`decode` bounds (Zarr ids; HDF5's deflate is "zlib").
CODECS = ("zlib", "gzip", "bz2", "lzma", "zstd", "blosc", "lz4")


def _bad(what: str, why: str) -> LoadError:
    return LoadError(f"{what}: {why}; the file is damaged or was not written by a Zarr/HDF5 writer")


def _inflate(decompressor, data, nbytes: int, what: str, name: str) -> bytes:
    """Run a stdlib decompressor object with its output capped at ``nbytes + 1``."""
    try:
        out = decompressor.decompress(bytes(data), nbytes + 1)
    except (zlib.error, OSError, EOFError, lzma.LZMAError, ValueError) as exc:
        raise _bad(what, f"its {name} stream cannot be decoded ({exc})") from None
    if len(out) > nbytes:
        raise LoadError(f"{what} inflates to more than the {nbytes:,} bytes its metadata declares "
                        f"(a decompression bomb or a damaged file); decoding was stopped there")
    if len(out) < nbytes or not getattr(decompressor, "eof", True):
        raise _bad(what, f"its {name} stream ends after {len(out):,} of the {nbytes:,} bytes declared")
    return out


def _zstd_content_size(data) -> int | None:
    """The decoded size a zstd frame header declares, or None when it declares none."""
    b = bytes(data[:18])
    if len(b) < 6 or b[:4] != b"\x28\xb5\x2f\xfd":
        return None
    desc = b[4]
    fcs_flag, single, dict_flag = desc >> 6, (desc >> 5) & 1, desc & 3
    pos = 5 + (0 if single else 1) + (0, 1, 2, 4)[dict_flag]
    size = (1 if single else 0, 2, 4, 8)[fcs_flag]
    if size == 0 or len(b) < pos + size:
        return None
    value = int.from_bytes(b[pos:pos + size], "little")
    return value + 256 if size == 2 else value


def decode(codec: str | None, data, nbytes: int, what: str):
    """The decoded bytes of one chunk (a bytes-like of exactly ``nbytes``), or LoadError.

    ``codec`` is None (stored raw) or one of :data:`CODECS`; ``what`` names the chunk in
    messages (file and chunk index).
    """
    nbytes = int(nbytes)
    if codec is None:
        if len(data) != nbytes:
            raise _bad(what, f"it holds {len(data):,} bytes where {nbytes:,} are declared")
        return data
    if codec == "zlib":
        return _inflate(zlib.decompressobj(), data, nbytes, what, "zlib")
    if codec == "gzip":
        return _inflate(zlib.decompressobj(16 + zlib.MAX_WBITS), data, nbytes, what, "gzip")
    if codec == "bz2":
        return _inflate(bz2.BZ2Decompressor(), data, nbytes, what, "bz2")
    if codec == "lzma":
        return _inflate(lzma.LZMADecompressor(), data, nbytes, what, "lzma")
    if codec == "zstd":
        from numcodecs import zstd
        declared = _zstd_content_size(data)
        if declared is not None and declared != nbytes:
            raise LoadError(f"{what}: its zstd frame declares {declared:,} bytes, its metadata {nbytes:,}; "
                            f"it was not decoded (a decompression bomb or a damaged file)")
        out = np.empty(nbytes, np.uint8)
        try:
            zstd.decompress(data, out)
        except (RuntimeError, ValueError) as exc:
            raise _bad(what, f"its zstd stream does not decode to the {nbytes:,} bytes declared ({exc})") from None
        return out
    if codec == "blosc":
        from numcodecs import blosc
        if len(data) < 16:
            raise _bad(what, "its blosc header is cut short")
        declared, _, cbytes = struct.unpack("<3I", bytes(data[4:16]))
        if declared != nbytes or cbytes != len(data):
            raise LoadError(f"{what}: its blosc header declares {declared:,} bytes decoded from {cbytes:,}, "
                            f"the metadata {nbytes:,} from the {len(data):,} stored; it was not decoded")
        try:
            return blosc.decompress(data)
        except RuntimeError as exc:
            raise _bad(what, f"its blosc stream cannot be decoded ({exc})") from None
    if codec == "lz4":
        from numcodecs import lz4
        declared = int.from_bytes(bytes(data[:4]), "little") if len(data) >= 4 else -1
        if declared != nbytes:
            raise LoadError(f"{what}: its lz4 header declares {declared:,} bytes, the metadata {nbytes:,}; "
                            f"it was not decoded")
        try:
            return lz4.decompress(data)
        except RuntimeError as exc:
            raise _bad(what, f"its lz4 stream cannot be decoded ({exc})") from None
    raise LoadError(f"{what}: codec {codec!r} is not one this program can bound ({', '.join(CODECS)})")
