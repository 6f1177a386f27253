"""Reading ``.npy`` headers and whole ``.npz`` archives within a memory budget, never unpickling.

An NPZ member is inflated only as far as its own ``.npy`` header says, and every header is
checked against the budget before any array is read, so a small archive cannot inflate to
gigabytes. The session files (results and data stored beside a session) and the NumPy loader
read NPZ through here.
"""
from __future__ import annotations

import io
import os
import warnings
import zipfile

import numpy as np

from ._errors import LoadError
from ._limits import check_memory, open_regular

__all__ = ["npy_header", "read_npz", "npy_members"]


def npy_members(zf: zipfile.ZipFile, what: str, error=LoadError) -> list[zipfile.ZipInfo]:
    """The ``.npy`` members of an open NPZ, refused when two members answer to one name.

    A zip may hold two entries with the same file name (zipfile warns and reads the last one),
    and ``np.load`` answers ``z["X"]`` with a member ``X`` as readily as with ``X.npy``: either
    way which array is "X" would depend on the reader, so such an archive is ambiguous.
    """
    seen: dict[str, str] = {}
    for info in zf.infolist():
        name = info.filename
        key = name[:-4] if name.endswith(".npy") else name
        if key in seen:
            same = "twice" if seen[key] == name else f"as {seen[key]!r} and {name!r}"
            raise error(f"{what} holds the array {key!r} {same}, so which one is meant is ambiguous; "
                        f"save the archive again with one member per name")
        seen[key] = name
    return [i for i in zf.infolist() if i.filename.endswith(".npy")]


def npy_header(fh) -> tuple[tuple[int, ...], np.dtype]:
    """(shape, dtype) from the header of the ``.npy`` stream ``fh`` (which is left after it)."""
    version = np.lib.format.read_magic(fh)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a damaged header may hold deprecated aliases or escapes
        if version == (1, 0):
            shape, _, dtype = np.lib.format.read_array_header_1_0(fh)
        elif version in ((2, 0), (3, 0)):
            shape, _, dtype = np.lib.format.read_array_header_2_0(fh)
        else:
            raise ValueError(f"unsupported .npy format version {version}")
    return shape, dtype


def read_npz(source, budget: int, what: str, error=LoadError) -> dict[str, np.ndarray]:
    """Every array of an NPZ (a path, bytes or a binary file object), name -> array.

    Refused with ``error`` (a ValueError subclass; its message names ``what``) when the archive
    is damaged, holds Python objects (never unpickled), or its arrays together would take more
    than ``budget`` bytes.
    """
    fh = None
    try:
        if isinstance(source, (bytes, bytearray, memoryview)):
            fh = io.BytesIO(source)
        elif isinstance(source, (str, os.PathLike)):
            fh = open_regular(source)
        else:
            fh = source
        with zipfile.ZipFile(fh) as zf:
            members = npy_members(zf, what, error)
            heads = {}
            for info in members:
                with zf.open(info) as m:
                    shape, dtype = npy_header(m)
                if dtype.hasobject:
                    raise error(f"{what}: array {info.filename[:-4]!r} holds Python objects, which are never "
                                f"unpickled (unsafe)")
                heads[info.filename] = np.prod(shape, dtype=np.float64) * dtype.itemsize
            try:
                check_memory(sum(heads.values()), budget, what)
            except LoadError as exc:
                raise error(str(exc)) from None
            out = {}
            for info in members:
                with zf.open(info) as m:
                    out[info.filename[:-4]] = np.lib.format.read_array(m, allow_pickle=False)
            return out
    except error:
        raise
    except LoadError as exc:  # open_regular: a device, a FIFO...
        raise error(str(exc)) from None
    except MemoryError:
        raise error(f"{what} is too large to read in the memory available") from None
    except Exception as exc:  # noqa: BLE001 - zipfile, zlib and numpy's header parser raise many types
        raise error(f"{what} is damaged or not an NPZ archive ({type(exc).__name__}: {exc})") from None
    finally:
        if fh is not None and fh is not source:
            fh.close()
