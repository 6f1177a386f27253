"""A digest of the whole content of data opened out of core, taken in a pass that reads it anyway.

A table on disk (:class:`~robustcore.bigdata.LazyTable` of a file) has no digest when it is
opened. The first computation (:func:`robustcore.bigdata.compute`) that reads every block of it
also runs one small task per block that hashes the block (its bytes, in the file's dtype) and
depends on the same Dask key as the block's read: the block is read once, for both.
The table's reads are tasks that Dask never fuses into their consumers (:func:`read_task`), so
no graph optimisation can give the hash its own copy of a read. The digest is the hash of the
table's shape, dtype, block size and the block hashes in order: it depends on the data, not on
the method, its passes, or the scheduler (tasks return hashes; nothing happens in a worker but
hashing). A computation that reads only part of the table (a preview) leaves it for later.

A table's digest is in one of two formats, named by its prefix (:data:`TABLE_FORMATS`):
``xxh3-blocks`` (xxHash's 128-bit XXH3, about 7x faster than sha256: a 6 GB table costs 0.6 s of
CPU instead of 4.3) when the ``xxhash`` package is installed, else ``sha256-blocks``. The digest
detects changed data between a run and its replay; it is not a signature, so a fast
non-cryptographic 128-bit hash serves. A recorded digest is always checked in its own format:
a table armed with one (:func:`expect_digest`) is hashed that way, whatever is installed.

A video (:class:`~robustcore.datasets.VideoFrames`) is digested when it is opened: the pass that
counts its frames reads every packet of the video stream, and the digest hashes those packets
(the compressed frames, their timestamps) and the stream's codec and size. Hashing the file's
compressed packets rather than decoded frames keeps the digest independent of the FFmpeg
version and of the colour/scale options, and costs nothing more than the probe.

:func:`robustcore.bigdata.content_digest` (in :mod:`._dask`, which runs passes) returns a data set's digest
(taking one pass of its own only when no
computation has read it whole yet), :func:`describe_digest` says what a digest covers, and
:func:`expect_digest` arms a table so that the pass that computes its digest fails at once with
:class:`DataChangedError` when the digest is not the expected one (a replay then stops after its
first pass, not after the whole fit).
"""
from __future__ import annotations

import hashlib
import re
import threading
import weakref
from typing import NamedTuple

import numpy as np

from ..datasets._errors import LoadError

__all__ = ["DataChangedError", "describe_digest", "expect_digest", "digest_rows",
           "ReadTask", "read_task", "register", "plan", "finish", "block_digest", "TABLE_FORMATS",
           "default_format", "table_format", "digest_format", "DigestFormatError"]

_PENDING: weakref.WeakSet = weakref.WeakSet()
_LOCK = threading.Lock()
_TABLE = re.compile(r"^(sha256-blocks|xxh3-blocks):(\d+):(\d+)x(\d+):([<>|=]?[a-z]\d+):([0-9a-f]+)$")
_VIDEO = re.compile(r"^sha256-packets:(\d+):([0-9a-f]{64})$")


class DataChangedError(LoadError):
    """The data's digest is not the one recorded: its content changed (``expected``, ``actual``)."""

    def __init__(self, message: str, expected: str | None = None, actual: str | None = None):
        super().__init__(message)
        self.expected, self.actual = expected, actual


class DigestFormatError(LoadError):
    """A recorded digest's format cannot be computed here (its hash's package is missing)."""


# -- the formats ------------------------------------------------------------------------------------

def _xxh3(data=b""):
    try:
        import xxhash
    except ImportError:
        raise DigestFormatError("a digest in xxh3-blocks format needs the xxhash package: pip install xxhash "
                                "(or the project's extra: pip install -e \".[big]\")") from None
    return xxhash.xxh3_128(data)


#: Table digest formats (the prefix), best first: (name of the hash for messages, its
#: constructor, hex digits of its digest).
TABLE_FORMATS = {"xxh3-blocks": ("xxh3_128", _xxh3, 32), "sha256-blocks": ("sha256", hashlib.sha256, 64)}


def default_format() -> str:
    """The format new table digests are taken in: the first of :data:`TABLE_FORMATS` whose hash
    is installed."""
    for fmt, (_, new, _) in TABLE_FORMATS.items():
        try:
            new()
        except DigestFormatError:
            continue
        return fmt
    raise AssertionError("sha256 is always available")


def table_format(table) -> str:
    """The format ``table`` is digested in: that of the digest it is armed with, else the default."""
    exp = getattr(table, "expected_digest", None)
    m = _match_table(exp[0]) if exp else None
    return m.group(1) if m else default_format()


def digest_format(digest: str | None) -> str | None:
    """A digest's format: its prefix (``xxh3-blocks``, ``sha256-blocks``, ``sha256-packets``)."""
    return digest.split(":", 1)[0] if digest else None


def _match_table(digest: str | None):
    m = _TABLE.match(digest or "")
    return m if m and len(m.group(6)) == TABLE_FORMATS[m.group(1)][2] else None


# -- the tasks ------------------------------------------------------------------------------------

try:
    from dask._task_spec import Task as _Task
except ImportError:  # without Dask there is no out-of-core table to read
    _Task = object


class ReadTask(_Task):
    """A Dask task that reads a block and is never fused into its consumers, so the block's key
    stays in every optimised graph and a hash task depending on it shares the read."""

    __slots__ = ()

    @property
    def block_fusion(self) -> bool:
        return True


def read_task(key, func, *args):
    """The task reading one block: ``func(*args)`` under ``key`` (see :class:`ReadTask`)."""
    return ReadTask(key, func, *args)


def block_digest(block, fmt: str) -> np.ndarray:
    """The hash of one block's bytes (C order, its own dtype) in the table digest format ``fmt``,
    as a 1-element object array."""
    a = np.ascontiguousarray(block)
    out = np.empty(1, dtype=object)
    out[0] = TABLE_FORMATS[fmt][1](a.reshape(-1).view(np.uint8)).digest()
    return out


def _digest_array(table, fmt: str):
    """One hash task per block of ``table.array``, each depending on that block's read key."""
    import dask.array as da
    from dask._task_spec import Task, TaskRef
    from dask.highlevelgraph import HighLevelGraph
    X = table.array
    name = f"digest-{fmt}-{X.name}"
    layer = {(name, i): Task((name, i), block_digest, TaskRef((X.name, i, 0)), fmt)
             for i in range(X.numblocks[0])}
    graph = HighLevelGraph.from_collections(name, layer, dependencies=[X])
    return da.Array(graph, name, ((1,) * X.numblocks[0],), meta=np.empty((0,), object))


def _combine(table, hashes, fmt: str) -> str:
    n, d = table.shape
    rows = table.chunk_rows
    h = TABLE_FORMATS[fmt][1](f"robust-studio table {n}x{d} {table.dtype.str} {rows}\n".encode())
    for b in hashes:
        h.update(b)
    return f"{fmt}:{rows}:{n}x{d}:{table.dtype.str}:{h.hexdigest()}"


# -- the hook in compute() --------------------------------------------------------------------------

def register(table) -> None:
    """Digest ``table`` in the first computation that reads all of it."""
    with _LOCK:
        _PENDING.add(table)


def _dask_collections(objs) -> list:
    """The Dask collections in ``objs`` (what dask.compute accepts: collections, and lists,
    tuples and dicts holding them, and plain values)."""
    from dask.base import is_dask_collection
    out, todo = [], list(objs)
    while todo:
        o = todo.pop()
        if is_dask_collection(o):
            out.append(o)
        elif isinstance(o, (list, tuple, set)):
            todo.extend(o)
        elif isinstance(o, dict):
            todo.extend(o.values())
    return out


def _reads_whole(table, collections) -> bool:
    from dask.core import flatten
    from dask.highlevelgraph import HighLevelGraph
    from dask.optimization import cull
    name = table.array.name
    graphs = [c.__dask_graph__() for c in collections]
    # Cheap refusal first: most computations never touch the table.
    if not any(name in getattr(g, "layers", {}) or any(isinstance(k, tuple) and k and k[0] == name
                                                       for k in g.keys()) for g in graphs):
        return False
    keys = list(flatten([c.__dask_keys__() for c in collections]))
    culled, _ = cull(dict(HighLevelGraph.merge(*graphs)), keys)
    return all((name, i, 0) in culled for i in range(table.array.numblocks[0]))


class Planned(NamedTuple):
    """A table to digest in a computation: the collection of its block hashes, in format ``fmt``."""
    table: object
    hashes: object
    fmt: str


def plan(collections) -> list[Planned]:
    """What to digest for each table still without a digest that ``collections`` read whole."""
    with _LOCK:
        pending = [t for t in list(_PENDING) if t.content_digest is None]
    collections = _dask_collections(collections)
    if not pending or not collections:
        return []
    out = []
    for t in pending:
        if _reads_whole(t, collections):
            fmt = table_format(t)
            out.append(Planned(t, _digest_array(t, fmt), fmt))
    return out


def finish(planned, values) -> None:
    """Record the digests computed with ``plan``'s collections; raise DataChangedError for a
    table armed by :func:`expect_digest` whose digest is not the expected one."""
    for (table, _, fmt), hashes in zip(planned, values):
        digest = _combine(table, list(hashes), fmt)
        with _LOCK:
            table.content_digest = digest
            _PENDING.discard(table)
        _check_expected(table)


def _check_expected(table) -> None:
    exp = getattr(table, "expected_digest", None)
    if exp is None or table.content_digest is None:
        return
    expected, since = exp
    if table.content_digest != expected:
        raise DataChangedError(f"the data changed since {since}: {describe_digest(expected)} differs "
                               f"(now {_short(table.content_digest)}…, was {_short(expected)}…)",
                               expected=expected, actual=table.content_digest)


def _short(digest: str) -> str:
    return digest.rsplit(":", 1)[-1][:12]


# -- the public functions -----------------------------------------------------------------------------

def _source(data):
    return getattr(data, "source", data)


def expect_digest(data, digest: str, since: str = "it was recorded") -> None:
    """Arm ``data`` so that the pass computing its digest raises :class:`DataChangedError`
    ("the data changed since {since}: ...") when it differs from ``digest``; checked at once
    when the digest is known already (a video: when it was opened). A table is then hashed in
    ``digest``'s format; :class:`DigestFormatError` when that format's hash is not installed."""
    src = _source(data)
    m = _match_table(digest)
    if m:
        TABLE_FORMATS[m.group(1)][1]()
    rows = digest_rows(digest)
    if rows is not None and getattr(src, "chunk_rows", rows) != rows:
        raise LoadError(f"the data must be opened with chunk_rows={rows} (the block size its digest was taken "
                        f"with) to be checked; it was opened with chunk_rows={src.chunk_rows}")
    src.expected_digest = (digest, since)
    _check_expected(src)


def digest_rows(digest: str | None) -> int | None:
    """The block size (rows) a table's digest was taken with; None for other digests."""
    m = _match_table(digest)
    return int(m.group(2)) if m else None


def describe_digest(digest: str | None) -> str:
    """What a digest covers, for messages and the session's description of its data."""
    m = _match_table(digest)
    if m:
        rows, n, d, dtype = int(m.group(2)), int(m.group(3)), int(m.group(4)), np.dtype(m.group(5))
        return (f"the {TABLE_FORMATS[m.group(1)][0]} of every value of the table ({n:,} x {d:,}, {dtype.name}), "
                f"hashed in blocks of {rows:,} rows in the pass that read it")
    m = _VIDEO.match(digest or "")
    if m:
        return (f"the sha256 of the video stream's {int(m.group(1)):,} compressed frames (packets), their "
                f"timestamps, codec and frame size")
    return "no digest of the content"
