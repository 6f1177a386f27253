"""Zarr stores (format 2 and 3, a folder on disk) read within the bounded-resource policy.

The zarr library is not used to read: it follows chunk files that are links to anywhere
(``/dev/zero``), fills missing chunks with the fill value without a word, and inflates a chunk as
far as its codec says. Here the metadata is parsed as bounded JSON, and each chunk file must be
a regular file whose real path lies inside the store; its stored size and its declared decoded
size are checked against the memory budget before it is decoded, and it is decoded to exactly
the declared size (:mod:`._codecs`). A chunk file that does not exist is an error naming it
(zarr leaves out chunks that hold only the fill value unless written with
``write_empty_chunks=True``; ``missing_chunks="fill"`` accepts such stores knowingly).

What is read: arrays of a numeric or bool dtype whose chunks are stored raw or with one of the
codecs of :data:`._codecs.CODECS` (Zarr 2: no filters; Zarr 3: the ``bytes`` codec and at most
one compressor; no sharding, no transpose, no storage transformers). Anything else is refused
with a message saying how to rewrite the store.
"""
from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np

from ..datasets._errors import LoadError, shown
from ..datasets._limits import format_bytes, parse_json, read_confined
from ._bounds import check_chunk
from ._codecs import CODECS, decode

__all__ = ["ZarrReader", "find_arrays", "MISSING_CHUNKS"]

MISSING_CHUNKS = ("error", "fill")
_META_LIMIT = 1 << 20          # bytes of JSON metadata one node may have
_MAX_DEPTH = 32                # nested groups searched for arrays
_MAX_ARRAYS = 10000            # arrays a store may hold

_V3_TYPES = {"bool": "|b1", "int8": "|i1", "int16": "<i2", "int32": "<i4", "int64": "<i8", "uint8": "|u1",
             "uint16": "<u2", "uint32": "<u4", "uint64": "<u8", "float16": "<f2", "float32": "<f4",
             "float64": "<f8"}
_V2_CODECS = {"zlib": "zlib", "gzip": "gzip", "bz2": "bz2", "lzma": "lzma", "zstd": "zstd", "blosc": "blosc",
              "lz4": "lz4"}
_REWRITE = ("rewrite the store with plain chunks or one of the compressors " + ", ".join(CODECS)
            + " (e.g. zarr.create_array(..., compressors=zarr.codecs.ZstdCodec()))")


def _json(root: Path, path: Path, what: str):
    data = read_confined(root, path.relative_to(root), what, _META_LIMIT)
    if data is None:
        raise LoadError(f"{what} disappeared while it was read")
    return parse_json(data.decode("utf-8", "replace"), what)


_NAMES = (("zarr.json", 3), (".zarray", 2), (".zgroup", 2))


def _node(folder: Path, root: Path):
    """("array" | "group" | None, metadata dict, zarr format) of one folder of the store."""
    present = [(name, fmt) for name, fmt in _NAMES if os.path.lexists(folder / name)]
    if len(present) > 1:
        raise LoadError(f"{folder} holds both {' and '.join(n for n, _ in present)}: it is a Zarr {present[0][1]} and "
                        f"a Zarr {present[-1][1]} node at once, and either could be meant; remove the metadata "
                        f"of the one that is stale")
    for name, fmt in present:
        p = folder / name
        meta = _json(root, p, f"Zarr metadata {p}")
        if not isinstance(meta, dict):
            raise LoadError(f"Zarr metadata {p} is not a JSON object; the store is damaged")
        if fmt == 3:
            kind = meta.get("node_type")
            if kind not in ("array", "group"):
                raise LoadError(f"Zarr metadata {p} has node_type {shown(kind)}; expected array or group")
            return kind, meta, 3
        return ("array" if name == ".zarray" else "group"), meta, 2
    return None, {}, None


def find_arrays(root: Path) -> dict:
    """name -> (metadata, format) of every array in the store (the root array: name None)."""
    root = Path(os.path.realpath(root))
    kind, meta, fmt = _node(root, root)
    if kind == "array":
        return {None: (meta, fmt)}
    if kind is None:
        raise LoadError(f"{root} is not a Zarr store: it has no zarr.json, .zarray or .zgroup")
    found = {}
    todo = [(root, "", 0)]
    while todo:
        folder, prefix, depth = todo.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            raise LoadError(f"cannot list {folder}: {exc.strerror or exc}") from None
        for e in entries:
            if not e.is_dir(follow_symlinks=False) or e.name.startswith("."):
                continue
            sub = Path(e.path)
            kind, meta, fmt = _node(sub, root)
            if kind == "array":
                found[prefix + e.name] = (meta, fmt)
                if len(found) > _MAX_ARRAYS:
                    raise LoadError(f"{root} holds more than {_MAX_ARRAYS:,} arrays; it is not a table this "
                                    f"program reads (name one array's folder instead)")
            elif kind == "group" and depth < _MAX_DEPTH:
                todo.append((sub, prefix + e.name + "/", depth + 1))
    return found


_KINDS = {dict: "a JSON object", list: "a list", str: "a string", int: "a whole number"}


def _field(meta: dict, key: str, kind: type, what: str, default=None, required: bool = False):
    """``meta[key]`` when it is of ``kind`` (a bool is no number here); ``default`` when absent
    (or null, unless ``required``); anything else is a one-line error naming the field."""
    v = meta.get(key)
    if v is None and not required:
        return default
    if not isinstance(v, kind) or (kind is int and isinstance(v, bool)):
        got = "nothing" if v is None else shown(v)
        must = " or ".join(_KINDS[k] for k in (kind if isinstance(kind, tuple) else (kind,)))
        raise LoadError(f"{what}: its {key} must be {must}; got {got}. The store's "
                        f"metadata is damaged or not Zarr's")
    return v


def _named(entry, what: str, field: str) -> tuple[str, dict]:
    """(name, configuration) of a Zarr 3 extension entry: a name, or {"name": ..., "configuration": {...}}."""
    if isinstance(entry, str):
        return entry, {}
    if not isinstance(entry, dict):
        raise LoadError(f"{what}: an entry of its {field} must be a name or a JSON object; got {shown(entry)}")
    name = _field(entry, "name", str, f"{what} ({field})", required=True)
    return name, _field(entry, "configuration", dict, f"{what} ({field} {shown(name)})", {})


def _shape(v, what: str, name: str) -> tuple:
    if not isinstance(v, list) or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in v):
        raise LoadError(f"{what}: {name} must be a list of sizes; got {shown(v)}")
    return tuple(v)


def _fill_value(v, dtype: np.dtype, what: str):
    """The fill value ``v`` of the metadata as a value of ``dtype``, None for null; anything this
    program cannot read exactly is refused, never replaced (Zarr 2 and 3: numbers, booleans,
    "NaN", "Infinity", "-Infinity"; Zarr 3 also a float's bytes in hex, "0x7ff8000000000001")."""
    if v is None:
        return None
    bad = LoadError(f"{what}: its fill_value {shown(v)} is not a {dtype} value this program can read; the "
                    f"store's metadata is damaged")
    kind = dtype.kind
    if kind == "b":
        if isinstance(v, bool) or (isinstance(v, int) and v in (0, 1)):
            return np.bool_(bool(v))
        raise bad
    if isinstance(v, bool):
        raise bad
    if kind in "iu":
        if isinstance(v, float) and v.is_integer():
            v = int(v)
        info = np.iinfo(dtype)
        if isinstance(v, int) and info.min <= v <= info.max:
            return dtype.type(v)
        raise bad
    if isinstance(v, str):
        named = {"NaN": np.nan, "Infinity": np.inf, "-Infinity": -np.inf}
        if v in named:
            return dtype.type(named[v])
        digits = v[2:]
        if v[:2] in ("0x", "0X") and len(digits) == 2 * dtype.itemsize and all(c in "0123456789abcdefABCDEF"
                                                                               for c in digits):
            return np.frombuffer(bytes.fromhex(digits), dtype.newbyteorder(">"))[0].astype(dtype)
        raise bad
    if isinstance(v, (int, float)):
        with np.errstate(over="ignore"):
            value = dtype.type(v)
        if np.isfinite(value):
            return value
    raise bad


class ZarrReader:
    """Rows of one 2-D Zarr array, chunk by chunk, within the policy (picklable: a path and numbers).

    Attributes: ``shape``, ``dtype``, ``chunks`` (rows, columns per chunk), ``codec``,
    ``chunk_bytes`` (declared decoded bytes of one chunk).
    """

    def __init__(self, root, component: str | None, meta: dict, fmt: int, missing_chunks: str = "error"):
        self.root = os.path.realpath(os.fspath(root))
        self.component = component
        self.folder = os.path.join(self.root, *component.split("/")) if component else self.root
        what = f"Zarr array {self.folder}"
        self.what = what
        if missing_chunks not in MISSING_CHUNKS:
            raise LoadError(f"missing_chunks must be one of {', '.join(MISSING_CHUNKS)}; got {shown(missing_chunks)}")
        self.missing = missing_chunks
        self.shape = _shape(meta.get("shape"), what, "shape")
        if fmt == 2:
            self._v2(meta, what)
        else:
            self._v3(meta, what)
        if len(self.chunks) != len(self.shape) or any(c < 1 for c in self.chunks):
            raise LoadError(f"{what}: chunk shape {shown(self.chunks)} does not fit array shape {shown(self.shape)}")
        if self.dtype.kind not in "biuf" or self.dtype.fields is not None or self.dtype.subdtype is not None:
            raise LoadError(f"{what} holds {self.dtype}; a table must hold numbers (bool, int, uint, float)")
        self.chunk_bytes = math.prod(self.chunks) * self.dtype.itemsize
        self.fill = _fill_value(meta.get("fill_value"), self.dtype, what)

    def _v2(self, meta, what):
        dt = meta.get("dtype")
        if not isinstance(dt, str):
            raise LoadError(f"{what} has a structured dtype ({shown(dt)}); a table must hold numbers")
        try:
            self.dtype = np.dtype(dt)
        except (TypeError, ValueError, SyntaxError):
            raise LoadError(f"{what}: dtype {shown(dt)} is not a NumPy dtype") from None
        self.chunks = _shape(meta.get("chunks"), what, "chunks")
        if meta.get("filters"):
            raise LoadError(f"{what} uses filters {shown(meta['filters'])}, which are not read out of core; "
                            + _REWRITE)
        comp = _field(meta, "compressor", dict, what)
        if comp is None:
            self.codec = None
        else:
            cid = comp.get("id")
            if not isinstance(cid, str) or cid not in _V2_CODECS:
                raise LoadError(f"{what} is compressed with {shown(comp)}, which cannot be bounded; " + _REWRITE)
            self.codec = _V2_CODECS[cid]
        self.order = _field(meta, "order", str, what, "C")
        if self.order not in ("C", "F"):
            raise LoadError(f"{what}: order {shown(self.order)} is neither C nor F")
        sep = _field(meta, "dimension_separator", str, what, ".")
        if sep not in (".", "/"):
            raise LoadError(f"{what}: dimension_separator {shown(sep)} is neither '.' nor '/'")
        self.prefix, self.sep = "", sep

    def _v3(self, meta, what):
        dt = _field(meta, "data_type", str, what, required=True)
        if dt not in _V3_TYPES:
            raise LoadError(f"{what} holds {shown(dt)}; a table must hold numbers (bool, int, uint, float)")
        grid, config = _named(_field(meta, "chunk_grid", (dict, str), what, required=True), what, "chunk_grid")
        if grid != "regular":
            raise LoadError(f"{what} has a {shown(grid)} chunk grid; only regular grids are read")
        self.chunks = _shape(config.get("chunk_shape"), what, "chunk_grid's chunk_shape")
        if meta.get("storage_transformers"):
            raise LoadError(f"{what} uses storage transformers, which are not read out of core; " + _REWRITE)
        enc, config = _named(_field(meta, "chunk_key_encoding", (dict, str), what, "default"), what,
                             "chunk_key_encoding")
        sep = _field(config, "separator", str, f"{what} (chunk_key_encoding)", "/" if enc == "default" else ".")
        if enc not in ("default", "v2") or sep not in (".", "/"):
            raise LoadError(f"{what}: chunk key encoding {shown(enc)} with separator {shown(sep)} is not one this "
                            f"program reads")
        self.prefix, self.sep = ("c" + sep if enc == "default" else ""), sep
        codecs = _field(meta, "codecs", list, what, required=True)
        if not codecs:
            raise LoadError(f"{what}: its codecs are an empty list; the store's metadata is damaged")
        (first, config), rest = _named(codecs[0], what, "codecs"), [_named(c, what, "codecs") for c in codecs[1:]]
        if first != "bytes":
            raise LoadError(f"{what} starts its codecs with {shown(first)} (sharding or transpose), which is not "
                            f"read out of core; " + _REWRITE)
        endian = _field(config, "endian", str, f"{what} (the bytes codec)", "little")
        if endian not in ("little", "big"):
            raise LoadError(f"{what}: the bytes codec's endian {shown(endian)} is neither little nor big")
        base = np.dtype(_V3_TYPES[dt])
        self.dtype = base.newbyteorder(">") if endian == "big" and base.itemsize > 1 else base
        names = [name for name, _ in rest]
        if len(names) > 1 or (names and names[0] not in ("gzip", "zstd", "blosc")):
            raise LoadError(f"{what} is encoded with {shown(names)}, which cannot be bounded; " + _REWRITE)
        self.codec = names[0] if names else None
        self.order = "C"

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def check(self, budget: int) -> None:
        """Refuse when decoding one chunk would take more than ``budget`` bytes, when missing chunks
        are to be filled but the array has no fill value, and (missing chunks being errors) when
        the store lacks the first or the last chunk: a store declaring more rows than it holds is
        refused at once, naming a chunk, before anything is planned from its declared size."""
        check_chunk(self.chunk_bytes, budget, f"one chunk {shown(self.chunks)} of {self.what}",
                    "rewrite the store with smaller chunks")
        if self.missing == "fill" and self.fill is None:
            raise LoadError(f"{self.what} has no fill value (null), so missing chunks cannot be filled; open it "
                            f"with missing_chunks='error'")
        if self.missing == "error" and all(self.shape):
            last = tuple((s - 1) // c for s, c in zip(self.shape, self.chunks))
            for idx in (tuple(0 for _ in last), last):
                path = self._path(self._key(idx))
                if not os.path.lexists(path):
                    raise self._missing(self._key(idx))

    def _key(self, idx: tuple) -> str:
        return self.prefix + self.sep.join(str(i) for i in idx)

    def _path(self, key: str) -> str:
        return os.path.join(self.folder, *key.split("/"))

    def _missing(self, key: str) -> LoadError:
        return LoadError(f"chunk {key} of {self.what} is missing (no file {self._path(key)}); the store is "
                         f"incomplete. Copy it again; if it was written without its empty chunks (zarr's "
                         f"write_empty_chunks=False), open it with missing_chunks='fill'")

    def _chunk(self, idx: tuple) -> np.ndarray:
        key = self._key(idx)
        what = f"chunk {key} of {self.what}"
        rel = Path(os.path.relpath(self._path(key), self.root))
        data = read_confined(self.root, rel, what, self.chunk_bytes * 2 + (1 << 16))
        if data is None:
            if self.missing == "fill":
                return np.full(self.chunks, self.fill, self.dtype)
            raise self._missing(key)
        raw = decode(self.codec, data, self.chunk_bytes, what)
        return np.frombuffer(raw, self.dtype).reshape(self.chunks, order=self.order)

    def read(self, start: int, stop: int) -> np.ndarray:
        """Rows ``start:stop`` (all columns) as an array of the stored dtype."""
        n, d = self.shape
        out = np.empty((stop - start, d), self.dtype)
        cr, cc = self.chunks
        for i in range(start // cr, (stop - 1) // cr + 1 if stop > start else 0):
            r0, r1 = max(start, i * cr), min(stop, (i + 1) * cr)
            for j in range(0, -(-d // cc)):
                c0, c1 = j * cc, min(d, (j + 1) * cc)
                block = self._chunk((i, j))
                out[r0 - start:r1 - start, c0:c1] = block[r0 - i * cr:r1 - i * cr, :c1 - c0]
        return out

    def describe(self) -> str:
        return f"Zarr, chunks {self.chunks}, {self.codec or 'uncompressed'} ({format_bytes(self.chunk_bytes)} a chunk)"
