"""The bounded-resource policy: what reading one input may cost, written down once.

Every loader and the session reader (``app.session``) asks this module before it allocates, so
no file (truncated, damaged, hostile or merely huge) can take more memory or time than the
numbers below, and a refusal always says which limit was hit and how to raise it.

=====================  =======================================================================
What                   Limit, and how it is enforced
=====================  =======================================================================
Memory of one load     ``max_bytes`` (loader option; default 4 GiB, at most 2**50). Every size
                       that a file's header or a loader option implies is charged *before*
                       anything that large is allocated (:func:`charge`, :func:`check_memory`):
                       binary formats from their headers (the raw array plus its float64
                       copy, labels included), text formats while they are read (below).
Features               ``max_features`` (loader option; default 2**24 = 16,777,216). A LIBSVM
                       index, an ``n_features`` option or a header claiming more is refused
                       before a matrix of that width exists. Default feature names and sample
                       ids are made on demand (:func:`numbered`), never one string per column.
Samples                at most 2**31 - 1; each costs ``PER_SAMPLE`` bytes of bookkeeping
                       (labels, ids, line numbers) in the memory charge of text formats.
Decompression          gzip, bz2 and xz streams are inflated in ``READ_CHUNK`` pieces; the
                       inflated bytes, and for text what parsing them will cost, are charged as
                       they arrive, and reading stops at the first piece over the budget
                       (:func:`read_stream`). A compressed MATLAB variable is inflated no
                       further than its own header's dimensions allow; an NPZ member no further
                       than its ``.npy`` header (checked against the budget first).
Text parsing cost      ``TEXT_COPIES`` bytes per byte of text (the bytes, the decoded string,
                       the split lines) + ``PER_CELL`` per field + ``PER_SAMPLE`` per line;
                       LIBSVM: ``PER_ENTRY`` per ``index:value`` pair instead of per field.
                       A line ends at ``\n``, ``\r\n`` or a lone ``\r``, and only there; the
                       other breaks of ``str.splitlines()`` inside a line are an error naming
                       it (:mod:`robustcore.datasets._lines`).
What may be read       regular files only (and folders, for the image loader): devices such as
                       ``/dev/zero``, FIFOs and sockets are refused before they are opened
                       (:func:`regular_file`) and again on the open descriptor, which is
                       opened non-blocking so a FIFO cannot hang (:func:`open_regular`).
Sessions               at most ``SESSION_MAX_BYTES`` (64 MiB) of JSON, nested at most
                       ``JSON_MAX_DEPTH`` (64) deep, integers of at most ``JSON_MAX_DIGITS``
                       (30) digits, no NaN/Infinity nor numerals that overflow to it
                       (``1e99999``), and at most ``JSON_PARSE_BUDGET`` (1 GiB) of parsed
                       objects by a cost model counted before ``json.loads`` runs
                       (:func:`parse_json`, :func:`json_parse_cost`).
Session paths          a session reads its own side files only: a bare file name (no folder
                       part, no ``..``, not absolute) naming a regular file whose real path
                       (symlinks resolved) is inside the session's folder (:func:`side_file`).
                       Its data file is read without asking only when it lies inside the
                       session's folder (:func:`inside`); anywhere else the user must confirm
                       it (the window asks; the command line takes ``--data PATH``).
Time                   bounded by the bytes: every parser is linear in what it is allowed to
                       read, and nothing waits on a file (no FIFO, no device).
Out of core            the same rules for data read a block at a time (``.npy``, HDF5, Zarr,
                       video; :mod:`robustcore.bigdata._tables`), with the out-of-core memory
                       budget (``robustcore.bigdata.settings(memory_budget=...)``, default 1 GiB)
                       for ``max_bytes``: regular files only, checked again at every block read;
                       the declared width against ``max_features`` and one decoded chunk and one
                       block of rows (float64) against the budget before anything is decoded;
                       chunks decoded by us (never by the format library) to exactly their
                       declared size, a longer stream stopped one byte past it
                       (:mod:`robustcore.bigdata._codecs`); only data inside the file or store:
                       HDF5 external storage, external links and virtual datasets are refused,
                       Zarr chunk and metadata files must be regular files whose real path is in
                       the store (:func:`read_confined`); a missing chunk is an error naming it,
                       not the fill value (``missing_chunks="fill"`` accepts it knowingly); a
                       ``.npy`` must hold exactly the bytes its header declares; a video frame's
                       size is checked before one is decoded. What a table declares is charged
                       before anything is planned from it (:mod:`robustcore.bigdata._bounds`):
                       a chunk twice its decoded bytes, at most 4,096 blocks, chunk reads per
                       chunk as well as per byte, soft links 16 in all; its first and last
                       chunks looked up at open.
Refusing in memory     data that can be read out of core (a ``.npy`` table, a video) refused for
                       its size names that way out first (:data:`OUT_OF_CORE_HINT`).
=====================  =======================================================================

The fuzz suite (``tests/robustcore/datasets/test_hostile.py``, corpus in ``tests/corpus``)
runs every loader and the session reader on hostile files under a memory cap and a time limit
and accepts only :class:`LoadError` and the session's own errors;
``tests/robustcore/bigdata/test_policy.py`` does the same for the out-of-core readers with the
sources of ``tests/corpus/lazy_cases.py`` (FIFOs, links out of a store, HDF5 external data,
decompression bombs, lying headers).
"""
from __future__ import annotations

import errno
import json
import math
import os
import stat
from pathlib import Path
from typing import NamedTuple
from collections.abc import Callable, Sequence

import numpy as np

from .._params import Param
from ._errors import LoadError, shown

# Files robustcore.bigdata.open_lazy reads out of core (tables and videos): the way out a
# refusal of one of them names first.
OUT_OF_CORE_SUFFIXES = (".zarr", ".h5", ".hdf5", ".he5", ".npy", ".mp4", ".m4v", ".mov", ".avi", ".mkv", ".webm")

__all__ = ["OUT_OF_CORE_HINT", "DEFAULT_MAX_BYTES", "DEFAULT_MEMORY_BUDGET",
           "MAX_BYTES_CEILING", "DEFAULT_MAX_FEATURES", "MAX_SAMPLES", "READ_CHUNK",
           "TEXT_COPIES", "PER_CELL", "PER_ENTRY", "PER_SAMPLE", "SESSION_MAX_BYTES",
           "JSON_MAX_DEPTH", "JSON_MAX_DIGITS", "JSON_PARSE_BUDGET", "JSON_PER_VALUE", "json_parse_cost", "MAX_BYTES",
           "MAX_FEATURES", "LIMIT_OPTIONS", "Cost", "format_bytes",
           "check_memory", "check_features", "check_samples", "charge", "regular_file", "open_regular",
           "read_stream", "read_confined", "numbered", "parse_json", "inside", "side_file", "bare_name"]

GiB = 1024 ** 3

DEFAULT_MAX_BYTES = 4 * GiB
#: The memory budget: what data may take in memory before they are better read out of core (the
#: window and the command line offer it above this), and what out-of-core work plans to hold at
#: once (chunks in flight, per-row results kept in memory). One number for the library, the
#: window and the command line; robustcore.bigdata.settings(memory_budget=...), the window's
#: setting and --memory-budget override it. 1 GiB: the in-memory fits hold 5 to 10 copies of
#: their rows at their peak (robustcore.methods.Method.dense_copies, as measured), so a table
#: loaded whole up to this size peaks under about 10 GiB, what a 16 GB machine can give; at
#: 2 GiB it would not.
DEFAULT_MEMORY_BUDGET = 1 * GiB
MAX_BYTES_CEILING = 2 ** 50
DEFAULT_MAX_FEATURES = 2 ** 24
MAX_SAMPLES = 2 ** 31 - 1
READ_CHUNK = 1 << 20

TEXT_COPIES = 4
PER_CELL = 100
PER_ENTRY = 96
PER_SAMPLE = 160

SESSION_MAX_BYTES = 64 * 1024 ** 2
JSON_MAX_DEPTH = 64
JSON_MAX_DIGITS = 30
# What parsing a session may take (json.loads' objects), estimated before it runs: 16 times the
# largest session, and JSON_PER_VALUE bytes per value (a float or int object and its slot, with
# room: 15 million one-digit integers measured 37 bytes each).
JSON_PARSE_BUDGET = 1024 ** 3
JSON_PER_VALUE = 64

MAX_BYTES = Param("max_bytes", int, DEFAULT_MAX_BYTES,
                  "refuse to load when the data would take more memory than this many bytes",
                  low=1, high=MAX_BYTES_CEILING, advanced=True)

MAX_FEATURES = Param("max_features", int, DEFAULT_MAX_FEATURES,
                     "refuse files that imply more features (columns) than this",
                     low=1, high=2 ** 40, advanced=True)


#: The policy's two loader options; every loader declares them (last, under Advanced).
LIMIT_OPTIONS = (MAX_FEATURES, MAX_BYTES)


class Cost(NamedTuple):
    """What a load will take: peak bytes, and the samples and features it implies (when known)."""

    nbytes: int
    samples: int | None = None
    features: int | None = None


def format_bytes(n: int | float) -> str:
    n = float(n)
    for unit in ("bytes", "KB", "MB", "GB", "TB"):
        if n < 1024 or unit == "TB":
            return f"{int(n)} bytes" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TB"


#: The way out named first when data that can be read out of core is refused in memory.
OUT_OF_CORE_HINT = ("open it out of core instead, where it stays on disk and is read a block at a time "
                    "(robustcore.bigdata.open_lazy; --lazy on the command line)")


def check_memory(nbytes: int | float, limit: int, what: str, hint: str = "", out_of_core: bool = False) -> None:
    """Refuse before allocating: the message names the size needed and the limit.

    ``out_of_core``: the data can be read out of core (a .npy table, a video), which the message
    then offers first, before a larger ``max_bytes`` and ``hint``.
    """
    if nbytes > limit:
        extra = f" or {hint}" if hint else ""
        first = f"{OUT_OF_CORE_HINT}, or " if out_of_core else ""
        raise LoadError(f"{what} needs about {format_bytes(nbytes)} of memory, more than the limit "
                        f"max_bytes={limit} ({format_bytes(limit)}); {first}pass a larger max_bytes{extra}")


def check_features(d: int | float, limit: int, what: str, why: str = "") -> None:
    if d > limit:
        because = f" ({why})" if why else ""
        raise LoadError(f"{what} implies {int(d):,} features{because}, more than the limit max_features={limit:,}; "
                        f"if the file really is that wide pass a larger max_features")


def check_samples(n: int | float, what: str) -> None:
    if n > MAX_SAMPLES:
        raise LoadError(f"{what} implies {int(n):,} samples, more than the {MAX_SAMPLES:,} this program "
                        f"handles; load a subset")


def charge(cost: Cost | int, opts: dict, what: str, hint: str = "", out_of_core: bool = False) -> int:
    """Check a :class:`Cost` (or plain bytes) against the load's ``max_bytes``/``max_features``
    (``out_of_core``: see :func:`check_memory`)."""
    if not isinstance(cost, Cost):
        cost = Cost(int(cost))
    if cost.features is not None:
        check_features(cost.features, opts.get("max_features", DEFAULT_MAX_FEATURES), what)
    if cost.samples is not None:
        check_samples(cost.samples, what)
    check_memory(cost.nbytes, opts.get("max_bytes", DEFAULT_MAX_BYTES), what, hint, out_of_core)
    return int(cost.nbytes)


# -- what may be opened ---------------------------------------------------------------------------

_KINDS = ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"))


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def regular_file(path, what: str = "", allow_dir: bool = False) -> Path:
    """``path`` as a Path when it is an existing regular file (or folder with ``allow_dir``).

    Devices (``/dev/zero``), FIFOs and sockets are refused by ``stat`` alone: nothing is opened.
    """
    try:
        p = Path(os.fspath(path))
    except TypeError:
        raise LoadError(f"path must be a file path (str or os.PathLike); got {shown(path)}") from None
    label = what or str(p)
    try:
        st = p.stat()
    except FileNotFoundError:
        raise LoadError(f"no such file or folder: {p}") from None
    except (OSError, ValueError) as exc:  # ValueError: an embedded NUL byte
        raise LoadError(f"cannot read {label}: {getattr(exc, 'strerror', None) or exc}") from None
    if stat.S_ISDIR(st.st_mode):
        if allow_dir:
            return p
        raise LoadError(f"{label} is a folder; a file was expected here")
    if not stat.S_ISREG(st.st_mode):
        raise LoadError(f"{label} is {_kind(st.st_mode)}, not a regular file; only regular files are read")
    return p


def open_regular(path, what: str = ""):
    """Open a regular file for binary reading; anything else is refused without blocking.

    The descriptor is opened non-blocking (a FIFO opens at once instead of waiting for a
    writer) and checked with ``fstat``, so a file swapped for a device after
    :func:`regular_file` looked at it is still refused.
    """
    p = regular_file(path, what)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(p, flags)
    except OSError as exc:
        raise LoadError(f"cannot open {what or p}: {exc.strerror or exc}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise LoadError(f"{what or p} is {_kind(mode)}, not a regular file; only regular files are read")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_stream(fh, limit: int, what: str, cost: Callable[[bytes], int] | None = None,
                hint: str = "load a subset of the data", errors: tuple = (),
                over: Callable[[int], None] | None = None) -> tuple[bytes, int]:
    """All bytes of ``fh`` (a plain or decompressing stream), read in pieces under a budget.

    Each piece is charged its length times ``TEXT_COPIES`` when ``cost`` is given (text will be
    decoded and split), plus ``cost(piece)``; reading stops with a LoadError as soon as the
    running charge passes ``limit``, so a decompression bomb is refused after inflating at most
    about ``limit`` bytes (``over(bytes_read)``, when given, raises its own error instead).
    Returns the bytes and the total charge. ``errors`` are the exception types of a damaged
    stream, re-raised as LoadError. Never asks the stream for more than ``READ_CHUNK`` at once:
    ``read(n)`` of a plain file sets aside ``n`` bytes before it reads any.
    """
    pieces: list[bytes] = []
    total = 0
    while True:
        try:
            piece = fh.read(READ_CHUNK)
        except errors as exc:
            raise LoadError(f"{what}: the data is truncated or corrupted ({exc}); copy the file again") from None
        if not piece:
            break
        pieces.append(piece)
        total += len(piece) * (TEXT_COPIES if cost is not None else 1)
        if cost is not None:
            total += int(cost(piece))
        if total > limit:
            if over is not None:
                over(sum(map(len, pieces)))
            check_memory(total, limit, f"{what} (stopped after reading {format_bytes(sum(map(len, pieces)))})", hint)
    return b"".join(pieces), total



def read_confined(folder, relative, what: str, limit: int) -> bytes | None:
    """The bytes of the regular file ``folder/relative``, None when no such entry exists.

    The file's real path (symlinks resolved) must lie inside ``folder``'s: a chunk of a Zarr
    store that is a link to ``/etc/passwd`` or ``/dev/zero`` is refused, as is a device, FIFO or
    socket (opened non-blocking, :func:`open_regular`), and a file larger than ``limit`` bytes
    is refused from its size before it is read.
    """
    p = Path(os.fspath(folder)) / relative
    if not os.path.lexists(p):
        return None
    if not inside(p, folder):
        raise LoadError(f"{what} is a link to {os.path.realpath(p)}, outside {os.path.realpath(folder)}; "
                        f"only files inside the store are read")
    with open_regular(p, what) as fh:
        size = os.fstat(fh.fileno()).st_size
        if size > limit:
            raise LoadError(f"{what} is {format_bytes(size)} on disk, more than the {format_bytes(limit)} it may "
                            f"take; the file is damaged or hostile")
        data, _ = read_stream(fh, limit, what)
    return data

# -- names made on demand ---------------------------------------------------------------------------

class numbered(Sequence):
    """The names ``prefix0, prefix1, ...`` (``n`` of them), made only when one is asked for.

    A data set with two billion columns then holds no two billion strings. Compares equal to a
    list of the same names; slicing gives a list.
    """

    __slots__ = ("prefix", "n")

    def __init__(self, prefix: str, n: int):
        self.prefix = prefix
        self.n = int(n)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [f"{self.prefix}{k}" for k in range(*i.indices(self.n))]
        k = int(i)
        if k < 0:
            k += self.n
        if not 0 <= k < self.n:
            raise IndexError(f"name index {i} out of range for {self.n} names")
        return f"{self.prefix}{k}"

    def __iter__(self):
        return (f"{self.prefix}{k}" for k in range(self.n))

    def __contains__(self, name) -> bool:
        s = str(name)
        if not s.startswith(self.prefix):
            return False
        digits = s[len(self.prefix):]
        return digits.isdigit() and (digits == "0" or not digits.startswith("0")) and int(digits) < self.n

    def index(self, name, *args) -> int:
        if name not in self:
            raise ValueError(f"{name!r} is not one of the names")
        return int(str(name)[len(self.prefix):])

    def __eq__(self, other) -> bool:
        if isinstance(other, numbered):
            return (self.prefix, self.n) == (other.prefix, other.n) or (self.n == other.n == 0)
        if isinstance(other, (list, tuple)):
            return len(other) == self.n and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __hash__(self):
        return hash((self.prefix, self.n))

    def __repr__(self) -> str:
        return f"numbered({self.prefix!r}, {self.n})"


# -- session files ------------------------------------------------------------------------------------

class _TooDeep(Exception):
    pass


# Bytes of text scanned at a time for nesting and the parse's cost (bounds the scan's int32 arrays:
# a few MB of temporaries per slice).
_JSON_SLICE = 1 << 18
_QUOTE, _BACKSLASH = ord('"'), ord("\\")


class _JsonShape:
    """One pass over a JSON text's bytes, a slice at a time: the deepest nesting of [ and {
    outside strings, how many values it holds (commas, colons and openings: every value but a
    document's lone one follows one of them) and how many bytes are inside strings. No regular
    expression: a backtracking match over one long string took 3.6 GB for a 30 MB session."""

    def __init__(self):
        self.depth = self.level = 0
        self.values = 1
        self.string_bytes = 0
        self._in_string = False
        self._run = 0            # backslashes just before the slice (inside a string)

    def add(self, b: np.ndarray) -> None:
        bs = b == _BACKSLASH
        c = np.cumsum(bs, dtype=np.int32)                 # backslashes in [0, i]
        last = np.maximum.accumulate(np.where(bs, 0, c))  # that count at the last other byte <= i
        seen_other = np.cumsum(~bs, dtype=np.int32) > 0   # some other byte in [0, i]
        # Backslashes right before byte i (the run may have begun in the previous slice).
        before = np.empty(b.size, dtype=np.int32)
        before[0] = self._run
        before[1:] = c[:-1] - last[:-1] + np.where(seen_other[:-1], 0, self._run)
        # A quote starts or ends a string unless an odd run of backslashes escapes it.
        quote = (b == _QUOTE) & (before % 2 == 0)
        flips = np.cumsum(quote, dtype=np.int32) % 2 == 1
        inside = (flips ^ self._in_string) | quote        # the quotes count as string bytes
        self.string_bytes += int(np.count_nonzero(inside))
        step = np.zeros(b.size, dtype=np.int8)
        step[(b == ord("[")) | (b == ord("{"))] = 1
        step[(b == ord("]")) | (b == ord("}"))] = -1
        step[inside] = 0
        self.values += int(np.count_nonzero(step == 1)) + int(np.count_nonzero(
            ((b == ord(",")) | (b == ord(":"))) & ~inside))
        levels = np.cumsum(step, dtype=np.int32)  # within the slice (it is under 2**31 bytes)
        self.depth = max(self.depth, self.level + int(levels.max(initial=0)))
        self.level += int(levels[-1])
        self._in_string = bool(flips[-1]) ^ self._in_string
        self._run = int(c[-1] - last[-1] + (0 if seen_other[-1] else self._run))


def _shape(data: bytes) -> _JsonShape:
    shape = _JsonShape()
    view = memoryview(data)
    for start in range(0, len(view), _JSON_SLICE):
        shape.add(np.frombuffer(view[start:start + _JSON_SLICE], dtype=np.uint8))
    return shape


def _depth(text: str) -> int:
    """Deepest nesting of [ and { outside strings (a scan, so depth costs no recursion)."""
    return _shape(text.encode("utf-8", "surrogatepass")).depth


def json_parse_cost(text: str) -> int:
    """Bytes ``json.loads(text)`` may take beyond the text: ``JSON_PER_VALUE`` per value (the
    object, its slot in a list or dict) and the characters of every string (four bytes each when
    the text is not ASCII, as a Python string may need)."""
    shape = _shape(text.encode("utf-8", "surrogatepass"))
    return JSON_PER_VALUE * shape.values + shape.string_bytes * (1 if text.isascii() else 4)


def parse_json(text: str, what: str, error=LoadError):
    """``json.loads`` within the policy: size, depth, digits, no NaN/Infinity.

    Every violation is an ``error`` (a ValueError subclass) whose message names ``what``; no
    RecursionError, OverflowError or "Exceeds the limit (4300 digits)" can escape.
    """
    if len(text) > SESSION_MAX_BYTES:
        raise error(f"{what} is {format_bytes(len(text))}, more than the {format_bytes(SESSION_MAX_BYTES)} "
                    f"a session may be; it is not a file this program wrote")
    shape = _shape(text.encode("utf-8", "surrogatepass"))
    depth = shape.depth
    cost = JSON_PER_VALUE * shape.values + shape.string_bytes * (1 if text.isascii() else 4)
    if cost > JSON_PARSE_BUDGET:
        raise error(f"{what} would take about {format_bytes(cost)} to parse ({shape.values:,} values), more "
                    f"than the {format_bytes(JSON_PARSE_BUDGET)} a session may; it is not a file this program "
                    f"wrote (large arrays are stored beside a session, not in it)")
    if depth > JSON_MAX_DEPTH:
        raise error(f"{what} nests {depth} levels deep, more than the {JSON_MAX_DEPTH} a session may; "
                    f"it is damaged or not a file this program wrote")

    def integer(s: str) -> int:
        if len(s.lstrip("-")) > JSON_MAX_DIGITS:
            raise error(f"{what} holds a {len(s.lstrip('-'))}-digit number ({s[:12]}…); numbers in a session "
                        f"have at most {JSON_MAX_DIGITS} digits")
        return int(s)

    def number(s: str) -> float:
        if len(s) > 64:
            raise error(f"{what} holds a {len(s)}-character number ({s[:12]}…); it is damaged")
        value = float(s)
        if not math.isfinite(value):
            # 1e99999999 is JSON, but it reads as infinity: refused as Infinity is.
            raise error(f"{what} holds {s[:24]}, which overflows to infinity; it is damaged or was not "
                        f"written by this program")
        return value

    def constant(s: str):
        raise error(f"{what} holds {s}, which is not JSON; it is damaged or was not written by this program")

    try:
        return json.loads(text, parse_int=integer, parse_float=number, parse_constant=constant)
    except json.JSONDecodeError as exc:
        raise error(f"{what} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); it may be "
                    f"truncated or edited by hand") from None
    except RecursionError:  # pragma: no cover - the depth scan refuses this first
        raise error(f"{what} nests too deeply") from None


def bare_name(name, what: str, error=LoadError) -> str:
    """``name`` when it is a plain file name: no folder part, no ``..``, not absolute, no NUL."""
    if not isinstance(name, str) or not name:
        raise error(f"{what} must be a file name; got {name!r:.80}")
    if (name in (".", "..") or "/" in name or "\\" in name or "\0" in name or os.path.isabs(name)
            or (os.path.splitdrive(name)[0])):
        raise error(f"{what} names {name!r:.200}, which is not a plain file name beside the session; "
                    f"a session reads only its own files, in its own folder")
    return name


def inside(path, folder) -> bool:
    """True when ``path``'s real location (symlinks resolved) is in ``folder`` (also resolved)."""
    try:
        real = os.path.realpath(os.fspath(path))
        base = os.path.realpath(os.fspath(folder))
        return os.path.commonpath([real, base]) == base
    except (OSError, ValueError):  # ValueError: different drives (Windows)
        return False


def side_file(folder, name, what: str, error=LoadError) -> Path:
    """The regular file ``name`` in ``folder``, refused unless it is a bare name that stays inside
    the folder once symlinks are resolved. Missing files raise FileNotFoundError."""
    bare_name(name, what, error)
    p = Path(os.fspath(folder)) / name
    if not os.path.lexists(p):
        raise FileNotFoundError(errno.ENOENT, "no such file", str(p))
    if not inside(p, folder):
        raise error(f"{what} {p} is a link to {os.path.realpath(p)}, outside the session's folder; a session "
                    f"reads only its own files")
    try:
        return regular_file(p, f"{what} {p}")
    except LoadError as exc:
        raise error(str(exc)) from None
