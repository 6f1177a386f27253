"""Session files on disk: the JSON beside its side files, written atomically and read back.

``save_session`` writes the JSON and, optionally, the results (``<stem>.results.npz``; results
held in Zarr stores go to the folder ``<stem>.lazy``, see :mod:`.stores`) and data that has no
file of its own (``<stem>.data.npz``) beside it. ``load_session`` reads the JSON
within the bounded-resource policy; side files are found with :func:`side_path`, which accepts
only a plain name in the session's own folder (no absolute path, no ``..``, no link leading
out, no device or FIFO). No Qt here.
"""
from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping

import numpy as np

from robustcore.datasets import (DEFAULT_MAX_BYTES, LoadError, open_regular, parse_json, read_npz, read_stream,
                                 side_file)
from robustcore.datasets._limits import SESSION_MAX_BYTES

from ..export import npz_bytes
from .schema import (DATA_SUFFIX, RESULTS_SUFFIX, SESSION_SUFFIX, STORES_SUFFIX, DataMismatchError, DatasetRef,
                     Session, SessionError, _jsonable, session_from_json, session_to_json)
from .stores import RESULT_KINDS, StoreError, prune, rebind, save_stores

__all__ = ["save_session", "load_session", "load_snapshot", "session_dir", "side_name", "side_path", "read_side"]


def session_dir(session: Session) -> str | None:
    """The folder the session was read from (None for a session built in memory)."""
    return os.path.dirname(session.source) if session.source else None


def side_path(session: Session, name, what: str) -> str:
    """The session's own side file ``name``: a plain name of a regular file in its folder.

    Raises :class:`SessionError` naming the path when the name is absolute, has a folder part or
    ``..``, is a link leading out of the folder, or is not a regular file; FileNotFoundError
    when it is simply missing.
    """
    base = session_dir(session)
    if base is None:
        raise SessionError(f"{what}: the session was not read from a file, so it has no side files")
    return str(side_file(base, name, what, error=SessionError))


def read_side(session: Session, name, what: str) -> tuple[str, bytes]:
    """(path, bytes) of the side file ``name`` (see :func:`side_path`), read within the memory
    budget. SessionError when it is refused or unreadable; FileNotFoundError when it is missing."""
    path = side_path(session, name, what)
    try:
        with open_regular(path, f"{what} {path}") as fh:
            data, _ = read_stream(fh, DEFAULT_MAX_BYTES, f"{what} {path}")
    except LoadError as exc:
        raise SessionError(str(exc)) from None
    except OSError as exc:
        raise SessionError(f"{what} {path} could not be read ({exc.strerror or exc})") from None
    return path, data


def _atomic_write_bytes(path: str, data: bytes) -> None:
    from app.export import atomic_write_bytes
    atomic_write_bytes(path, data, overwrite=True)


def _stem(path: str) -> str:
    base = os.path.basename(path)
    for suffix in (SESSION_SUFFIX, ".json"):
        if base.lower().endswith(suffix):
            return base[: -len(suffix)]
    return os.path.splitext(base)[0]


def side_name(session_path: str, suffix: str) -> str:
    """The side file (or folder) ``<stem><suffix>`` beside the session ``session_path``."""
    return os.path.join(os.path.dirname(os.path.abspath(session_path)), _stem(session_path) + suffix)


def _pack_results(results: Iterable, provenance: dict, in_stores: set = frozenset()) -> tuple[bytes, list]:
    """NPZ bytes of every result's arrays (keys ``method|kind|name``) but those saved in stores
    (``in_stores``: (method, kind, name)); skips what needs pickle."""
    arrays: dict[str, np.ndarray] = {}
    skipped = []
    for res in results:
        for kind in RESULT_KINDS:
            for name, value in res.fields_of(kind).items():
                if (res.method, kind, name) in in_stores:
                    continue
                if not isinstance(value, np.ndarray) and hasattr(value, "store"):
                    # Out of core, in a store that is not a folder on disk: never read whole into
                    # the NPZ; reopening runs the fit again.
                    skipped.append(f"{res.method}: {kind} {name} (out of core)")
                    continue
                arr = np.asarray(value)
                if arr.dtype == object:
                    skipped.append(f"{res.method}: {kind} {name}")
                    continue
                arrays[f"{res.method}|{kind}|{name}"] = arr
    arrays["__provenance__"] = np.array(json.dumps(_jsonable(provenance)))
    return npz_bytes(arrays), skipped


def _snapshot_bytes(dataset) -> bytes:
    """NPZ of a data set that has no file of its own (strings stored as unicode, never objects)."""
    import scipy.sparse as sp
    out: dict[str, np.ndarray] = {}
    if sp.issparse(dataset.X):
        X = dataset.X.tocsr()
        out.update(X_data=X.data, X_indices=X.indices, X_indptr=X.indptr, X_shape=np.asarray(X.shape))
    else:
        out["X"] = np.asarray(dataset.X)
    meta = {"name": dataset.name, "description": dataset.description,
            "image_shape": list(dataset.image_shape) if dataset.image_shape else None,
            "class_names": _jsonable(dataset.class_names) if dataset.class_names is not None else None,
            "labels_kind": None}
    if dataset.labels is not None:
        labels = np.asarray(dataset.labels)
        if labels.dtype == object:
            # Strings (or mixed values) are kept as text; note it so they come back as text.
            labels = labels.astype(str)
            meta["labels_kind"] = "str"
        out["labels"] = labels
    if dataset.outliers is not None:
        out["outliers"] = np.asarray(dataset.outliers, dtype=bool)
    if dataset.frame_order is not None:
        out["frame_order"] = np.asarray(dataset.frame_order)
    out["feature_names"] = np.asarray([str(s) for s in dataset.feature_names], dtype=str)
    out["sample_ids"] = np.asarray([str(s) for s in dataset.sample_ids], dtype=str)
    out["__meta__"] = np.array(json.dumps(meta))
    return npz_bytes(out)


def load_snapshot(path: str, ref: DatasetRef):
    """The data set stored beside a session (:data:`DATA_SUFFIX`); a damaged or tampered file is a
    :class:`DataMismatchError` naming it, never a numpy or scipy exception."""
    import scipy.sparse as sp

    from robustcore.datasets import Dataset, Provenance
    what = f"the stored data {path}"
    z = read_npz(path, DEFAULT_MAX_BYTES, what, error=SessionError)
    try:
        meta = parse_json(str(z["__meta__"]), what, error=SessionError)
        if "X" in z:
            X = z["X"]
        else:
            X = sp.csr_matrix((z["X_data"], z["X_indices"], z["X_indptr"]), shape=tuple(int(v) for v in z["X_shape"]))
        labels = z.get("labels")
        if labels is not None and meta.get("labels_kind") == "str":
            labels = labels.astype(object)
        return Dataset(X=X, name=str(meta.get("name") or ref.name), labels=labels,
                       class_names=meta.get("class_names"), outliers=z.get("outliers"),
                       feature_names=z["feature_names"].tolist(), sample_ids=z["sample_ids"].tolist(),
                       image_shape=tuple(meta["image_shape"]) if meta.get("image_shape") else None,
                       frame_order=z.get("frame_order"), description=str(meta.get("description") or ""),
                       provenance=Provenance(loader=ref.loader, options=dict(ref.options)))
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError) as exc:
        raise DataMismatchError(f"{what} is damaged ({type(exc).__name__}: {exc}); save the session again "
                                f"from the data", ref=ref, path=path) from None


def _sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def save_session(path: str | os.PathLike, session: Session, *, results: Mapping | Iterable | None = None,
                 dataset=None) -> list:
    """Write ``session`` as JSON to ``path`` atomically; return the list of files written.

    ``results`` (method -> RunResult) are also stored beside the session in
    ``<stem>.results.npz`` so reopening can skip the fits; results held in Zarr stores (out of
    core) are put in the folder ``<stem>.lazy`` (linked or copied, each store atomically; a store
    already there is kept as it is) and the results then read from there (:mod:`.stores`); stores
    that the file being replaced named and the new one does not (results since replaced) are
    removed. ``dataset`` is needed only when the data has no file or demo behind it: it is then
    stored in ``<stem>.data.npz``. Without it such
    a session can be saved, but reopening it raises :class:`DataMissingError` saying why.
    """
    path = os.fspath(path)
    written = []
    res, stores = [], {}
    before = _stores_named(path)   # what the file being replaced kept on disk
    ref = session.dataset
    if ref is not None and not ref.demo and not ref.path and dataset is not None:
        data = _snapshot_bytes(dataset)
        snap = side_name(path, DATA_SUFFIX)
        _atomic_write_bytes(snap, data)
        ref.snapshot = os.path.basename(snap)
        written.append(snap)
    if ref is not None and ref.path and not ref.demo:
        try:
            ref.relative_path = os.path.relpath(ref.path, os.path.dirname(os.path.abspath(path)))
        except ValueError:
            ref.relative_path = None
    if results is not None:
        res = list(results.values()) if isinstance(results, Mapping) else list(results)
        res = [r for r in res if session.run_for(r.method) is not None]
        if res:
            prov = {"session": os.path.basename(path), "data_fingerprint": ref.fingerprint if ref else None,
                    "versions": session.versions,
                    "runs": [{"method": r.method, "params": r.params} for r in res]}
            folder = side_name(path, STORES_SUFFIX)
            try:
                stores, in_stores = save_stores(folder, res)
            except StoreError as exc:
                raise SessionError(f"the results held on disk could not be saved beside the session: {exc}") from None
            data, skipped = _pack_results(res, prov, in_stores)
            side = side_name(path, RESULTS_SUFFIX)
            _atomic_write_bytes(side, data)
            written.append(side)
            if stores:
                written.append(folder)
            digest = _sha256_bytes(data)
            for r in res:
                rec = session.run_for(r.method)
                left_out = [s for s in skipped if s.startswith(r.method + ":")]
                # "complete" says the NPZ alone holds the run: false for a run with stores, so
                # that a version that does not know stores fits it again instead of showing a
                # result without them.
                rec.stored = {"kind": "session", "file": os.path.basename(side), "sha256": digest,
                              "complete": not left_out and r.method not in stores}
                if r.method in stores:
                    rec.stored.update(out_of_core=stores[r.method], skipped=left_out)
    _atomic_write_bytes(path, session_to_json(session).encode("utf-8"))
    written.insert(0, path)
    session.source = os.path.abspath(path)
    if results is not None and res and stores:
        # From now on the results are read from the session's folder, not the working folder.
        rebind(folder, res, stores)
    prune(side_name(path, STORES_SUFFIX), before - {name for rec in stores.values() for name in rec["stores"]})
    return written


def _stores_named(path: str) -> set:
    """The stores (in the session's own stores folder) that the session file ``path`` names."""
    if not os.path.isfile(path):
        return set()
    try:
        old = load_session(path)
    except SessionError:
        return set()
    folder = os.path.basename(side_name(path, STORES_SUFFIX))
    return {name for r in old.runs if isinstance(r.stored, dict) and isinstance(r.stored.get("out_of_core"), dict)
            and r.stored["out_of_core"].get("folder") == folder for name in r.stored["out_of_core"]["stores"]}


def load_session(path: str | os.PathLike) -> Session:
    """Read a session file. Raises :class:`SessionError` (a ``ValueError``) with a clear message."""
    path = os.fspath(path)
    if not os.path.lexists(path):
        raise SessionError(f"session file {path} does not exist")
    if os.path.isdir(path):
        raise SessionError(f"session file {path} is a folder, not a file")
    def too_big(n):
        raise SessionError(f"session file {path} is larger than the {SESSION_MAX_BYTES // 2 ** 20} MB a session "
                           f"may be; it is not a file this program wrote")
    try:
        with open_regular(path, f"session file {path}") as fh:
            raw, _ = read_stream(fh, SESSION_MAX_BYTES, f"session file {path}", over=too_big)
    except LoadError as exc:  # a device, a FIFO, unreadable...
        raise SessionError(str(exc)) from None
    except OSError as exc:
        raise SessionError(f"session file {path} cannot be read: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise SessionError(f"session file {path} is not a text (UTF-8 JSON) file") from None
    return session_from_json(text, source=path)
