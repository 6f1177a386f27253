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

from ..datasets._errors import LoadError
from ..datasets._limits import check_memory, format_bytes, parse_json, read_confined
from ._codecs import CODECS, decode

__all__ = ["ZarrReader", "find_arrays", "MISSING_CHUNKS"]

MISSING_CHUNKS = ("error", "fill")
_META_LIMIT = 1 << 20          # bytes of JSON metadata one node may have
_MAX_DEPTH = 32                # nested groups searched for arrays

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


def _node(folder: Path, root: Path):
    """("array" | "group" | None, metadata dict, zarr format) of one folder of the store."""
    for name, fmt in (("zarr.json", 3), (".zarray", 2), (".zgroup", 2)):
        p = folder / name
        if os.path.lexists(p):
            meta = _json(root, p, f"Zarr metadata {p}")
            if not isinstance(meta, dict):
                raise LoadError(f"Zarr metadata {p} is not a JSON object; the store is damaged")
            if fmt == 3:
                kind = meta.get("node_type")
                if kind not in ("array", "group"):
                    raise LoadError(f"Zarr metadata {p} has node_type {kind!r}; expected array or group")
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
            elif kind == "group" and depth < _MAX_DEPTH:
                todo.append((sub, prefix + e.name + "/", depth + 1))
    return found


def _shape(v, what: str, name: str) -> tuple:
    if not isinstance(v, list) or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in v):
        raise LoadError(f"{what}: {name} must be a list of sizes; got {v!r:.80}")
    return tuple(v)


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
            raise LoadError(f"missing_chunks must be one of {', '.join(MISSING_CHUNKS)}; got {missing_chunks!r}")
        self.missing = missing_chunks
        self.shape = _shape(meta.get("shape"), what, "shape")
        if fmt == 2:
            self._v2(meta, what)
        else:
            self._v3(meta, what)
        if len(self.chunks) != len(self.shape) or any(c < 1 for c in self.chunks):
            raise LoadError(f"{what}: chunk shape {self.chunks} does not fit array shape {self.shape}")
        if self.dtype.kind not in "biuf" or self.dtype.fields is not None or self.dtype.subdtype is not None:
            raise LoadError(f"{what} holds {self.dtype}; a table must hold numbers (bool, int, uint, float)")
        self.chunk_bytes = math.prod(self.chunks) * self.dtype.itemsize
        self.fill = self._fill_value(meta.get("fill_value"))

    def _v2(self, meta, what):
        dt = meta.get("dtype")
        if not isinstance(dt, str):
            raise LoadError(f"{what} has a structured dtype ({dt!r:.80}); a table must hold numbers")
        try:
            self.dtype = np.dtype(dt)
        except TypeError:
            raise LoadError(f"{what}: dtype {dt!r:.40} is not a NumPy dtype") from None
        self.chunks = _shape(meta.get("chunks"), what, "chunks")
        if meta.get("filters"):
            raise LoadError(f"{what} uses filters {meta['filters']!r:.120}, which are not read out of core; "
                            + _REWRITE)
        comp = meta.get("compressor")
        if comp is None:
            self.codec = None
        elif isinstance(comp, dict) and comp.get("id") in _V2_CODECS:
            self.codec = _V2_CODECS[comp["id"]]
        else:
            raise LoadError(f"{what} is compressed with {comp!r:.80}, which cannot be bounded; " + _REWRITE)
        self.order = meta.get("order", "C")
        if self.order not in ("C", "F"):
            raise LoadError(f"{what}: order {self.order!r:.20} is neither C nor F")
        sep = meta.get("dimension_separator", ".")
        if sep not in (".", "/"):
            raise LoadError(f"{what}: dimension_separator {sep!r:.20} is neither '.' nor '/'")
        self.prefix, self.sep = "", sep

    def _v3(self, meta, what):
        dt = meta.get("data_type")
        if dt not in _V3_TYPES:
            raise LoadError(f"{what} holds {dt!r:.40}; a table must hold numbers (bool, int, uint, float)")
        grid = meta.get("chunk_grid") or {}
        if grid.get("name") != "regular":
            raise LoadError(f"{what} has a {grid.get('name')!r:.40} chunk grid; only regular grids are read")
        self.chunks = _shape((grid.get("configuration") or {}).get("chunk_shape"), what, "chunk_shape")
        if meta.get("storage_transformers"):
            raise LoadError(f"{what} uses storage transformers, which are not read out of core; " + _REWRITE)
        enc = meta.get("chunk_key_encoding") or {"name": "default"}
        sep = (enc.get("configuration") or {}).get("separator", "/" if enc.get("name") == "default" else ".")
        if enc.get("name") not in ("default", "v2") or sep not in (".", "/"):
            raise LoadError(f"{what}: chunk key encoding {enc!r:.80} is not one this program reads")
        self.prefix, self.sep = ("c" + sep if enc.get("name") == "default" else ""), sep
        codecs = meta.get("codecs")
        if not isinstance(codecs, list) or not codecs or not isinstance(codecs[0], dict):
            raise LoadError(f"{what}: its codecs {codecs!r:.80} are not a list of codecs")
        first, rest = codecs[0], codecs[1:]
        if first.get("name") != "bytes":
            raise LoadError(f"{what} starts its codecs with {first.get('name')!r:.40} (sharding or transpose), "
                            f"which is not read out of core; " + _REWRITE)
        endian = (first.get("configuration") or {}).get("endian", "little")
        base = np.dtype(_V3_TYPES[dt])
        self.dtype = base.newbyteorder(">") if endian == "big" and base.itemsize > 1 else base
        names = [c.get("name") if isinstance(c, dict) else c for c in rest]
        if len(names) > 1 or (names and names[0] not in ("gzip", "zstd", "blosc")):
            raise LoadError(f"{what} is encoded with {names}, which cannot be bounded; " + _REWRITE)
        self.codec = names[0] if names else None
        self.order = "C"

    def _fill_value(self, v):
        try:
            return self.dtype.type(0 if v is None or isinstance(v, (list, dict)) else v)
        except (TypeError, ValueError, OverflowError):
            return self.dtype.type(0)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def check(self, budget: int) -> None:
        """Refuse when one decoded chunk would take more than ``budget`` bytes."""
        check_memory(self.chunk_bytes, budget, f"one chunk {self.chunks} of {self.what}",
                     "rewrite the store with smaller chunks")

    def _chunk(self, idx: tuple) -> np.ndarray:
        key = self.prefix + self.sep.join(str(i) for i in idx)
        what = f"chunk {key} of {self.what}"
        rel = Path(os.path.relpath(os.path.join(self.folder, *key.split("/")), self.root))
        data = read_confined(self.root, rel, what, self.chunk_bytes * 2 + (1 << 16))
        if data is None:
            if self.missing == "fill":
                return np.full(self.chunks, self.fill, self.dtype)
            raise LoadError(f"{what} is missing (no file {os.path.join(self.folder, *key.split('/'))}); the store "
                            f"is incomplete. Copy it again; if it was written without its empty chunks "
                            f"(zarr's write_empty_chunks=False), open it with missing_chunks='fill'")
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
