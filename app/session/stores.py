"""Out-of-core results beside a session: Zarr stores saved with it and opened again lazily.

A result too large for memory (S of a long video, the scores of a 50-million-row table) lives in
a Zarr store (:mod:`robustcore.bigdata`), by default in the window's working folder. Saving the
session puts every such store in the session's own stores folder, ``<stem>`` +
:data:`~.schema.STORES_SUFFIX` (``work.rss.json`` -> ``work.lazy``) beside the session file, and
records, per run, which field is which array of which store:

    "out_of_core": {"folder": "work.lazy",
                    "stores": {"online-rpca-1a2b3c4d.zarr": {"manifest": "sha256:…", "files": 57,
                                                             "bytes": 1234567}},
                    "fields": [{"kind": "arrays", "name": "sparse", "store": "online-rpca-1a2b3c4d.zarr",
                                "array": "sparse", "shape": [120, 3072], "dtype": "<f4"}]}

Saving is atomic per store: a store is linked (same file system: no space, no time) or copied
into a hidden ``.NAME.partial-PID`` folder and renamed into place, so a store under its own name
is always whole. A store already in the stores folder (saving again to the same path) is
referenced where it is: never copied onto itself, never deleted.

The manifest is a sha256 over every file's relative name and size and over the Zarr metadata
files' bytes. It is checked on reopening without reading the chunks (a long video's S is never
read whole): a missing or truncated chunk, which Zarr would otherwise read back as zeros, or a
changed shape or dtype, refuses the store. It is not a hash of the chunks' content: a chunk
changed in place to other bytes of the same length is caught only when its decompression fails.

What a session may name (checked when it is read, :func:`check_record`): the folder, store and
array names are plain names; the folder and stores must lie inside the session's folder once
links are resolved, and a store holding a link or anything but folders and regular files is
refused. No Qt here.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import stat
import uuid

import numpy as np

from robustcore.datasets import bare_name, inside

__all__ = ["RESULT_KINDS", "StoreError", "zarr_location", "store_manifest", "save_stores",
           "rebind", "prune", "open_store", "open_stored_fields", "check_store_info", "check_record"]

RESULT_KINDS = ("sample_scores", "flags", "arrays", "feature_scores")
# Bounds on what a session may make the program walk or open (hostile sessions, issue 12).
MAX_STORE_FILES = 2_000_000
MAX_FIELDS = 1000
MAX_CHUNK_BYTES = 2 << 30
_METADATA = ("zarr.json", ".zarray", ".zgroup", ".zattrs", ".zmetadata")
_METADATA_MAX = 16 << 20
_PARTIAL = ".partial-"


class StoreError(ValueError):
    """A results store cannot be used: missing, damaged, changed, or outside the session's folder."""


def zarr_location(value) -> tuple[str, str] | None:
    """(store folder, array name in it) of a result field held in a Zarr store on disk, or None
    for an array in memory (or in a store that is not a folder)."""
    if isinstance(value, np.ndarray) or not hasattr(value, "store"):
        return None
    store = value.store
    root = getattr(store, "root", None) or getattr(store, "path", None)   # zarr 3 / zarr 2
    name = getattr(value, "path", None)
    if root is None or not name or not os.path.isdir(os.fspath(root)):
        return None
    return os.path.abspath(os.fspath(root)), str(name).strip("/")


# -- the manifest ------------------------------------------------------------------------------------

def _walk(root: str):
    """(relative name, absolute path, size) of every file in ``root``, sorted; StoreError on links,
    devices or more files than :data:`MAX_STORE_FILES`."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                raise StoreError(f"{p} is a link; a results store holds only its own files")
            if stat.S_ISDIR(st.st_mode):
                continue
            if not stat.S_ISREG(st.st_mode):
                raise StoreError(f"{p} is not a regular file; a results store holds only folders and files")
            out.append((os.path.relpath(p, root).replace(os.sep, "/"), p, st.st_size))
            if len(out) > MAX_STORE_FILES:
                raise StoreError(f"{root} holds more than {MAX_STORE_FILES:,} files; it is not a results "
                                 f"store this program wrote")
    return sorted(out)


def store_manifest(root: str, check: bool = False) -> dict:
    """{"manifest": "sha256:…", "files": n, "bytes": total} of the store folder ``root``.

    ``check``: also refuse metadata that would make the reader decode anything but numbers with
    the compressors this program writes (:func:`_check_metadata`), as for a store a session names.
    """
    h = hashlib.sha256()
    total = 0
    files = _walk(root)
    for rel, p, size in files:
        h.update(f"{rel}\0{size}\n".encode())
        total += size
        if os.path.basename(rel) in _METADATA:
            if size > _METADATA_MAX:
                raise StoreError(f"{p} is {size:,} bytes, too large for Zarr metadata")
            with open(p, "rb") as fh:
                raw = fh.read()
            h.update(raw)
            if check and os.path.basename(rel) != ".zattrs":
                _check_metadata(p, raw)
    return {"manifest": "sha256:" + h.hexdigest(), "files": len(files), "bytes": total}


# What a results store may ask the reader to do: numbers, and the codecs Zarr 2 and 3 write by
# default. Anything else (an object dtype, a pickle or other filter) is refused before Zarr reads
# it: older Zarr versions would unpickle such chunks.
_V3_CODECS = {"bytes", "zstd", "blosc", "gzip", "crc32c", "transpose"}
_V2_COMPRESSORS = {"blosc", "zstd", "zlib", "gzip", "lz4", "bz2", "lzma"}
_V3_TYPES = {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
             "float16", "float32", "float64"}


def _check_chunk(path: str, shape, dtype) -> None:
    """One chunk is what a viewer decompresses to show one frame: at most :data:`MAX_CHUNK_BYTES`
    (a few compressed bytes could otherwise ask for terabytes)."""
    if not isinstance(shape, list) or not 1 <= len(shape) <= 8 or not all(
            isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in shape):
        raise StoreError(f"{path}: the chunk shape {shape!r:.80} is not a list of positive integers")
    try:
        itemsize = np.dtype(dtype).itemsize if dtype is not None else 8
    except TypeError:
        itemsize = 8
    n = itemsize
    for s in shape:
        n *= s
    if n > MAX_CHUNK_BYTES:
        raise StoreError(f"{path}: one chunk would take {n:,} bytes, more than the {MAX_CHUNK_BYTES >> 30} GB a "
                         f"results store's chunk may; it is not a store this program wrote")


def _check_metadata(path: str, raw: bytes) -> None:
    from robustcore.datasets import parse_json
    try:
        doc = parse_json(raw.decode("utf-8"), f"Zarr metadata {path}", error=StoreError)
    except UnicodeDecodeError:
        raise StoreError(f"Zarr metadata {path} is not text") from None
    stack = [doc]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
            continue
        if not isinstance(node, dict):
            continue
        if "data_type" in node or "codecs" in node:     # Zarr 3 array metadata
            grid = node.get("chunk_grid")
            conf = grid.get("configuration") if isinstance(grid, dict) else None
            _check_chunk(path, conf.get("chunk_shape") if isinstance(conf, dict) else None, node.get("data_type"))
            codecs = node.get("codecs")
            codecs = codecs if isinstance(codecs, list) else [codecs]
            names = [c.get("name") if isinstance(c, dict) else c for c in codecs]
            if node.get("data_type") not in _V3_TYPES or not all(n in _V3_CODECS for n in names):
                raise StoreError(f"{path} asks for data type {node.get('data_type')!r:.40} with codecs "
                                 f"{names!r:.120}; a results store holds numbers compressed with "
                                 f"{', '.join(sorted(_V3_CODECS))}")
        if "dtype" in node or "compressor" in node or "filters" in node:   # Zarr 2 array metadata
            try:
                dt = np.dtype(node.get("dtype"))
            except (TypeError, ValueError):
                dt = np.dtype(object)
            _check_chunk(path, node.get("chunks"), dt if dt.kind in "biuf" else None)
            comp = node.get("compressor")
            comp_id = comp.get("id") if isinstance(comp, dict) else comp
            if dt.kind not in "biuf" or dt.hasobject or node.get("filters") not in (None, []) \
                    or (comp_id is not None and comp_id not in _V2_COMPRESSORS):
                raise StoreError(f"{path} asks for dtype {node.get('dtype')!r:.40}, filters "
                                 f"{node.get('filters')!r:.80} and compressor {comp_id!r:.40}; a results store "
                                 f"holds numbers, without filters, compressed with "
                                 f"{', '.join(sorted(_V2_COMPRESSORS))}")
        # User attributes are free-form (a run's parameters, its summary): not metadata.
        stack.extend(v for k, v in node.items() if isinstance(v, (dict, list)) and k != "attributes"
                     and not str(k).endswith(".zattrs"))


# -- saving ------------------------------------------------------------------------------------------

def _link_or_copy_tree(src: str, dst: str) -> None:
    """Copy the folder ``src`` to the new folder ``dst``, each file as a hard link when the file
    system allows (finished stores are never written again, so sharing their files is safe)."""
    for rel, p, _ in _walk(src):
        target = os.path.join(dst, *rel.split("/"))
        os.makedirs(os.path.dirname(target), exist_ok=True)
        try:
            os.link(p, target)
        except OSError:
            shutil.copy2(p, target)
    os.makedirs(dst, exist_ok=True)   # an empty store still becomes a folder


def _place(src: str, folder: str, known: dict) -> str:
    """The name of ``src``'s copy in ``folder``: ``src`` itself when it already lies there, an
    existing store of the same manifest, or a new complete copy renamed into place."""
    if os.path.realpath(os.path.dirname(src)) == os.path.realpath(folder):
        return os.path.basename(src)
    name = os.path.basename(src)
    target = os.path.join(folder, name)
    if os.path.lexists(target):
        if os.path.isdir(target) and not os.path.islink(target) and \
                store_manifest(target)["manifest"] == known["manifest"]:
            return name
        stem, ext = os.path.splitext(name)
        name = f"{stem}-{uuid.uuid4().hex[:8]}{ext}"
        target = os.path.join(folder, name)
    partial = os.path.join(folder, f".{name}{_PARTIAL}{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    try:
        _link_or_copy_tree(src, partial)
        if store_manifest(partial)["manifest"] != known["manifest"]:
            raise StoreError(f"the copy of {src} differs from it (was it written to during the save?)")
        os.replace(partial, target)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    return name


def save_stores(folder: str, results) -> tuple[dict, set]:
    """Put the Zarr stores of ``results`` (RunResults) into ``folder`` (created when needed).

    Returns ``(records, saved)``: method -> the run's ``out_of_core`` record (see the module doc),
    and the (method, kind, name) of every field now saved in a store. Fields in stores that are not
    folders on disk are not in ``saved`` (the caller notes them as not stored). OSError or
    StoreError when a store cannot be copied: the session is then not written.
    """
    records: dict = {}
    saved: set = set()
    placed: dict = {}      # source store -> its name in folder
    manifests: dict = {}   # name in folder -> manifest
    for res in results:
        fields = []
        for kind in RESULT_KINDS:
            for name, value in res.fields_of(kind).items():
                loc = zarr_location(value)
                if loc is None:
                    continue
                src, array = loc
                if src not in placed:
                    known = store_manifest(src)
                    os.makedirs(folder, exist_ok=True)
                    placed[src] = _place(src, folder, known)
                    manifests[placed[src]] = known
                store = placed[src]
                fields.append({"kind": kind, "name": str(name), "store": store, "array": array,
                               "shape": [int(s) for s in value.shape], "dtype": np.dtype(value.dtype).str})
                saved.add((res.method, kind, name))
        if fields:
            stores = {f["store"]: dict(manifests[f["store"]]) for f in fields}
            records[res.method] = {"folder": os.path.basename(folder), "stores": stores, "fields": fields}
    return records, saved


def rebind(folder: str, results, records: dict) -> None:
    """Point the fields of ``results`` at their saved copies in ``folder`` (so that the window's
    results no longer depend on the working folder they were computed in)."""
    for res in results:
        rec = records.get(res.method)
        if not rec:
            continue
        groups: dict = {}
        for f in rec["fields"]:
            if f["store"] not in groups:
                groups[f["store"]] = _open_group(os.path.join(folder, f["store"]))
            getattr(res, f["kind"])[f["name"]] = groups[f["store"]][f["array"]]


def prune(folder: str, names) -> None:
    """Remove the stores ``names`` from ``folder``: those a session named before it was saved again
    without them (the results they held were replaced). Only plain names of folders inside
    ``folder`` are removed; a failure leaves the store (disk space, never data)."""
    for name in names:
        try:
            bare_name(name, "a results store", StoreError)
        except StoreError:
            continue
        path = os.path.join(folder, name)
        if os.path.isdir(path) and not os.path.islink(path) and inside(path, folder):
            shutil.rmtree(path, ignore_errors=True)


# -- reading -----------------------------------------------------------------------------------------

def _open_group(path: str):
    try:
        import zarr
    except ImportError:
        raise StoreError("reading results stored out of core needs zarr, which is not installed; install "
                         "it with: pip install zarr   (or: pip install -e \".[big]\")") from None
    return zarr.open_group(path, mode="r")


def check_store_info(name, info, where: str, error=StoreError) -> None:
    """A store's name (a plain name) and manifest record as a session may hold them."""
    bare_name(name, f"{where}: store", error)
    if not isinstance(info, dict) or not isinstance(info.get("manifest"), str) \
            or not all(isinstance(info.get(k), int) and not isinstance(info.get(k), bool) and info[k] >= 0
                       for k in ("files", "bytes")):
        raise error(f"{where}: store {name!r:.80} must record its manifest (text), files and bytes (integers >= 0)")


def check_record(ooc, where: str, error=StoreError) -> dict:
    """A run's ``out_of_core`` record as a session may hold it: plain names, known kinds, shapes
    of non-negative integers, numeric dtypes, bounded counts. ``error`` names the field."""
    if not isinstance(ooc, dict):
        raise error(f"{where}: 'out_of_core' must be an object")
    w = f"{where}, out_of_core"
    bare_name(ooc.get("folder"), f"{w}: the stores folder", error)
    stores, fields = ooc.get("stores"), ooc.get("fields")
    if not isinstance(stores, dict) or not isinstance(fields, list) or len(fields) > MAX_FIELDS \
            or len(stores) > MAX_FIELDS:
        raise error(f"{w} must hold 'stores' (an object) and 'fields' (a list of at most {MAX_FIELDS})")
    for name, info in stores.items():
        check_store_info(name, info, w, error)
    for i, f in enumerate(fields):
        fw = f"{w}, field {i + 1}"
        if not isinstance(f, dict) or f.get("kind") not in RESULT_KINDS or not isinstance(f.get("name"), str):
            raise error(f"{fw} must name its kind ({', '.join(RESULT_KINDS)}) and name")
        if f.get("store") not in stores:
            raise error(f"{fw} names store {f.get('store')!r:.80}, which the run does not list")
        bare_name(f.get("array"), f"{fw}: array", error)
        shape = f.get("shape")
        if not isinstance(shape, list) or not 1 <= len(shape) <= 8 or not all(
                isinstance(s, int) and not isinstance(s, bool) and 0 <= s < 2 ** 53 for s in shape):
            raise error(f"{fw}: shape must be a list of 1 to 8 integers >= 0")
        try:
            dt = np.dtype(f.get("dtype"))
        except TypeError:
            raise error(f"{fw}: dtype {f.get('dtype')!r:.40} is not a numpy dtype") from None
        if dt.kind not in "biuf" or dt.hasobject:
            raise error(f"{fw}: dtype {dt} is not a numeric type a result is stored as")
    return ooc


def open_store(folder: str, name: str, info: dict):
    """The Zarr group of the store ``name`` in ``folder``, opened read-only once it passes the
    manifest ``info`` (see :func:`store_manifest`). StoreError says why it is refused;
    FileNotFoundError when it is missing."""
    bare_name(name, "a results store", StoreError)
    path = os.path.join(folder, name)
    if not os.path.lexists(path):
        raise FileNotFoundError(f"the results store {path} is missing")
    if os.path.islink(path) or not os.path.isdir(path) or not inside(path, folder):
        raise StoreError(f"{path} is not a store folder inside {folder}")
    now = store_manifest(path, check=True)
    if now["manifest"] != info.get("manifest"):
        what = (f"it holds {now['files']:,} files ({now['bytes']:,} bytes), the session recorded "
                f"{info.get('files')} ({info.get('bytes')} bytes)"
                if (now["files"], now["bytes"]) != (info.get("files"), info.get("bytes")) else
                "its file names or metadata differ from what the session recorded")
        raise StoreError(f"the results store {path} is damaged or changed: {what}")
    try:
        return _open_group(path)
    except StoreError:
        raise
    except Exception as exc:  # noqa: BLE001 - any reader failure is a damaged store, said as such
        raise StoreError(f"the results store {path} cannot be opened ({type(exc).__name__}: {exc})") from None


def open_stored_fields(base: str, ooc: dict) -> dict:
    """kind -> {name: Zarr array} of a run's stored fields, opened lazily (nothing is read but
    metadata) once every store passes its manifest. StoreError says which store and why;
    FileNotFoundError when the folder or a store is missing."""
    folder = os.path.join(base, ooc["folder"])
    if not os.path.lexists(folder):
        raise FileNotFoundError(f"the results folder {folder} is missing")
    if not inside(folder, base) or os.path.islink(folder) or not os.path.isdir(folder):
        raise StoreError(f"{folder} is not a folder inside the session's folder {base}; a session reads "
                         f"only its own files")
    groups = {name: open_store(folder, name, info) for name, info in ooc["stores"].items()}
    out: dict = {k: {} for k in RESULT_KINDS}
    for f in ooc["fields"]:
        where = f"array {f['array']!r} of the results store {os.path.join(folder, f['store'])}"
        try:
            arr = groups[f["store"]][f["array"]]
        except Exception:  # noqa: BLE001 - a missing key, or a group where an array should be
            raise StoreError(f"{where} is missing") from None
        shape, dtype = list(getattr(arr, "shape", ())), getattr(arr, "dtype", None)
        if shape != f["shape"] or dtype is None or np.dtype(dtype) != np.dtype(f["dtype"]):
            raise StoreError(f"{where} is {tuple(shape)} {dtype}, the session recorded "
                             f"{tuple(f['shape'])} {np.dtype(f['dtype'])}")
        out[f["kind"]][f["name"]] = arr
    return out

