"""Session files: one JSON description of a run that the window reopens and the command line replays.

A session names the data set (demo name, or file path with its sha256 and loader options), each
run's method, validated parameters and seed, the library versions, the current view and the
selection. It is plain JSON with a versioned schema (never pickle). Numbers are reproduced by
re-running the fits through :mod:`robustcore.methods`; optionally, the results themselves are
stored in an NPZ file beside the session (``<stem>.results.npz``) so reopening is instant, and
data that exists only in memory is stored beside it as ``<stem>.data.npz``.

This module imports no Qt: the command line uses it headless. The functions that touch the
window's state (:func:`session_from_state`, :func:`apply_to_state`, :func:`restore`) only call
methods of :class:`app.state.AppState`.

Schema, version 2 (every field is written; readers ignore fields they do not know)::

    {"format": "robust-subspace-studio session", "schema_version": 2, "created": ISO-8601 UTC,
     "versions": {"python", "robustcore", "numpy", "scipy", "PySide6", "pyqtgraph", ...},
     "dataset": {"name", "loader", "options", "path", "relative_path", "size", "sha256", "demo",
                 "fingerprint", "n_samples", "n_features", "snapshot"} or null,
     "runs": [{"method", "params" (validated, incl. random_state), "seed", "data_fingerprint",
               "summary", "warnings", "elapsed",
               "stored": {"kind": "session"|"export", "file", "sha256", ...} or null}],
     "current_method", "view": {"name": VIEW, ...}, "selection": [sample indices]}

A reader refuses a higher ``schema_version`` with a message; an older one is brought up to date
by the steps in ``_MIGRATIONS``.

Typical use::

    s = session_from_state(state, view="scatter")
    save_session("work.rss.json", s, results=state.results, dataset=state.dataset)
    ...
    s = load_session("work.rss.json")              # SessionError on a bad file
    report = restore(s, state, progress=cb)        # DataMissingError / DataMismatchError
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import io
import json
import math
import os
import platform
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

import numpy as np

__all__ = [
    "SCHEMA_VERSION", "SESSION_SUFFIX", "SessionError", "DataMissingError", "DataMismatchError",
    "DatasetRef", "RunRecord", "Session", "RestoreReport",
    "library_versions", "seed_param", "pin_seed", "run_record", "session_from_results",
    "session_from_state", "save_session", "load_session", "session_to_json", "session_from_json",
    "resolve_dataset", "stored_result", "reopen_job", "NeedsData", "rerun", "apply_to_state",
    "restore", "compare_results", "compare_arrays",
    "last_session", "remember_session", "set_reopen_last", "reopen_last_enabled",
]

FORMAT_NAME = "robust-subspace-studio session"
SCHEMA_VERSION = 2
SESSION_SUFFIX = ".rss.json"
RESULTS_SUFFIX = ".results.npz"
DATA_SUFFIX = ".data.npz"
# Parameters with this name are the seed of a method's randomness (scikit-learn's convention).
SEED_PARAM = "random_state"
# The seed pinned when a user leaves random_state unset, so that a run can be repeated exactly.
DEFAULT_SEED = 0


class SessionError(ValueError):
    """A session file cannot be used: malformed, from a newer version, or its data is unusable."""


class DataMissingError(SessionError):
    """The session's data file (or stored data) cannot be found.

    ``ref`` is the :class:`DatasetRef`; ``searched`` the paths that were tried.
    """

    def __init__(self, message: str, ref: "DatasetRef | None" = None, searched: Iterable[str] = ()):
        super().__init__(message)
        self.ref = ref
        self.searched = list(searched)


class DataMismatchError(SessionError):
    """A data file was found but is not the data the session was made from (hash or shape differ).

    ``path`` is the file that was checked, ``expected`` and ``actual`` the two fingerprints.
    """

    def __init__(self, message: str, ref: "DatasetRef | None" = None, path: str | None = None,
                 expected: str | None = None, actual: str | None = None):
        super().__init__(message)
        self.ref = ref
        self.path = path
        self.expected = expected
        self.actual = actual


# -- JSON helpers --------------------------------------------------------------------------------

def _jsonable(value: Any) -> Any:
    """Plain JSON types; numpy scalars unwrapped; non-finite floats as strings (JSON has none)."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return [_jsonable(v) for v in value.tolist()]
    return str(value)


def _short(h: str | None) -> str:
    return (h or "?")[:12]


def library_versions() -> dict:
    """Versions of everything that can change the numbers: the exports' list plus Python."""
    from app.export import library_versions as export_versions

    import robustcore
    out = {"python": platform.python_version(), "platform": platform.platform(terse=True),
           "robustcore": robustcore.__version__}
    out.update({k: v for k, v in export_versions().items() if v is not None})
    return out


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()


# -- the schema ----------------------------------------------------------------------------------

@dataclass
class DatasetRef:
    """Where the data came from and how to check it is the same data.

    ``fingerprint`` is ``Dataset.fingerprint()`` at save time (the file's sha256 for file data,
    a content hash otherwise); it is what reopening verifies. ``relative_path`` is relative to
    the session file, so a folder holding both can be moved. ``snapshot`` names an NPZ beside the
    session holding data that has no file of its own.
    """

    name: str
    loader: str
    fingerprint: str
    n_samples: int
    n_features: int
    options: dict = field(default_factory=dict)
    path: str | None = None
    relative_path: str | None = None
    size: int | None = None
    sha256: str | None = None
    demo: str | None = None
    snapshot: str | None = None

    @classmethod
    def from_dataset(cls, dataset, base_dir: str | None = None) -> "DatasetRef":
        p = dataset.provenance
        path = os.path.abspath(p.path) if p.path else None
        rel = None
        if path and base_dir and not p.demo:
            try:
                rel = os.path.relpath(path, base_dir)
            except ValueError:  # another drive on Windows
                rel = None
        return cls(name=dataset.name, loader=p.loader, fingerprint=dataset.fingerprint(),
                   n_samples=int(dataset.n_samples), n_features=int(dataset.n_features),
                   options=_jsonable(dict(p.options)), path=path, relative_path=rel,
                   size=p.size, sha256=p.sha256, demo=p.demo)

    def describe(self) -> str:
        if self.demo:
            return f"demo '{self.demo}'"
        if self.path:
            return f"file {self.path}"
        return f"in-memory data set '{self.name}'"

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in _REF_FIELDS}


_REF_FIELDS = ("name", "loader", "fingerprint", "n_samples", "n_features", "options", "path",
               "relative_path", "size", "sha256", "demo", "snapshot")


@dataclass
class RunRecord:
    """One fit: enough to repeat it (method, validated parameters, seed) and to check it.

    ``summary`` holds the numbers the run reported (compared on replay); ``stored`` names the
    results file beside the session and its sha256, when the results were saved.
    """

    method: str
    params: dict
    data_fingerprint: str
    seed: int | None = None
    summary: dict = field(default_factory=dict)
    warnings: list = field(default_factory=list)
    elapsed: float = 0.0
    stored: dict | None = None

    def to_dict(self) -> dict:
        return {"method": self.method, "params": _jsonable(self.params), "seed": self.seed,
                "data_fingerprint": self.data_fingerprint, "summary": _jsonable(self.summary),
                "warnings": [str(w) for w in self.warnings], "elapsed": float(self.elapsed),
                "stored": self.stored}

    @property
    def reproducible(self) -> bool:
        """False when the method is random and the run had no fixed seed."""
        try:
            from robustcore.methods import get_method
            has_seed = seed_param(get_method(self.method)) is not None
        except ValueError:
            return False
        return not has_seed or self.params.get(SEED_PARAM) is not None


@dataclass
class Session:
    """What the window showed: data reference, runs, current method, view and selection."""

    dataset: DatasetRef | None
    runs: list = field(default_factory=list)
    current_method: str | None = None
    view: dict = field(default_factory=dict)
    selection: list = field(default_factory=list)
    versions: dict = field(default_factory=library_versions)
    created: str = field(default_factory=_now)
    schema_version: int = SCHEMA_VERSION
    # Where the session was read from (not saved): the base for relative paths and side files.
    source: str | None = field(default=None, compare=False)

    def run_for(self, method: str) -> RunRecord | None:
        return next((r for r in self.runs if r.method == method), None)

    def to_dict(self) -> dict:
        return {"format": FORMAT_NAME, "schema_version": SCHEMA_VERSION, "created": self.created,
                "versions": _jsonable(self.versions),
                "dataset": self.dataset.to_dict() if self.dataset else None,
                "runs": [r.to_dict() for r in self.runs], "current_method": self.current_method,
                "view": _jsonable(self.view), "selection": [int(i) for i in self.selection]}


@dataclass
class RestoreReport:
    """What :func:`restore` did: the view to show and notes for the log (re-run vs reloaded)."""

    dataset: Any
    results: dict
    view: dict
    notes: list = field(default_factory=list)
    reloaded: list = field(default_factory=list)
    rerun: list = field(default_factory=list)


# -- building sessions ---------------------------------------------------------------------------

def seed_param(method):
    """The method's seed parameter (a :class:`~robustcore.Param`) or None if it is not random."""
    return next((p for p in method.params() if p.name == SEED_PARAM), None)


def pin_seed(method, params: Mapping | None, seed: int | None = None) -> dict:
    """Return ``params`` with ``random_state`` fixed to an int when the method is random.

    A user-given seed is kept; otherwise ``seed`` (or :data:`DEFAULT_SEED`) is used, so every run
    the window or command line makes can be repeated. Methods without randomness are unchanged.
    The window should call this before ``Method.run`` so its sessions replay exactly.
    """
    out = dict(params or {})
    if seed_param(method) is not None and out.get(SEED_PARAM) is None:
        out[SEED_PARAM] = DEFAULT_SEED if seed is None else int(seed)
    return out


def run_record(result) -> RunRecord:
    """A :class:`RunRecord` from a ``RunResult``."""
    params = dict(result.params)
    seed = params.get(SEED_PARAM)
    return RunRecord(method=result.method, params=_jsonable(params), seed=_jsonable(seed),
                     data_fingerprint=result.data_fingerprint, summary=_jsonable(result.summary),
                     warnings=[str(w) for w in result.warnings], elapsed=float(result.elapsed))


def _view_dict(view) -> dict:
    if view is None:
        return {}
    if isinstance(view, str):
        return {"name": view}
    return dict(view)


def session_from_results(dataset, results: Mapping | Iterable, *, current_method: str | None = None,
                         view=None, selection=(), base_dir: str | None = None) -> Session:
    """A session from a data set and its results (a mapping method -> RunResult, or a list).

    ``base_dir`` is the folder the session will be saved in (for the relative data path).
    """
    res = list(results.values()) if isinstance(results, Mapping) else list(results)
    ref = DatasetRef.from_dataset(dataset, base_dir) if dataset is not None else None
    sel = np.unique(np.asarray(selection, dtype=np.int64).ravel()).tolist() if len(selection) else []
    cur = current_method if current_method is not None else (res[0].method if res else None)
    return Session(dataset=ref, runs=[run_record(r) for r in res], current_method=cur,
                   view=_view_dict(view), selection=sel)


def session_from_state(state, view=None, base_dir: str | None = None) -> Session:
    """A session describing what an :class:`app.state.AppState` holds now.

    ``view`` is the current view's name, or a dict of view settings (``{"name": ..., ...}``)
    that the window gets back from :func:`restore` unchanged.
    """
    return session_from_results(state.dataset, state.results, current_method=state.current_method,
                                view=view, selection=state.selection, base_dir=base_dir)


# -- reading and writing -------------------------------------------------------------------------

def _atomic_write_bytes(path: str, data: bytes) -> None:
    from app.export import atomic_write_bytes
    atomic_write_bytes(path, data, overwrite=True)


def session_to_json(session: Session) -> str:
    return json.dumps(session.to_dict(), indent=2, allow_nan=False, ensure_ascii=False) + "\n"


def _stem(path: str) -> str:
    base = os.path.basename(path)
    for suffix in (SESSION_SUFFIX, ".json"):
        if base.lower().endswith(suffix):
            return base[: -len(suffix)]
    return os.path.splitext(base)[0]


def _side_file(session_path: str, suffix: str) -> str:
    return os.path.join(os.path.dirname(os.path.abspath(session_path)), _stem(session_path) + suffix)


def _pack_results(results: Iterable, provenance: dict) -> tuple[bytes, list]:
    """NPZ bytes of every result's arrays (keys ``method|kind|name``); skips what needs pickle."""
    arrays: dict[str, np.ndarray] = {}
    skipped = []
    for res in results:
        for kind in ("sample_scores", "flags", "arrays", "feature_scores"):
            for name, value in getattr(res, kind).items():
                arr = np.asarray(value)
                if arr.dtype == object:
                    skipped.append(f"{res.method}: {kind} {name}")
                    continue
                arrays[f"{res.method}|{kind}|{name}"] = arr
    arrays["__provenance__"] = np.array(json.dumps(_jsonable(provenance)))
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    return buf.getvalue(), skipped


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
    buf = io.BytesIO()
    np.savez_compressed(buf, **out)
    return buf.getvalue()


def _load_snapshot(path: str, ref: DatasetRef):
    import scipy.sparse as sp

    from robustcore.datasets import Dataset, Provenance
    with np.load(path, allow_pickle=False) as z:
        meta = json.loads(str(z["__meta__"]))
        if "X" in z.files:
            X = z["X"]
        else:
            X = sp.csr_matrix((z["X_data"], z["X_indices"], z["X_indptr"]), shape=tuple(z["X_shape"]))
        labels = z["labels"] if "labels" in z.files else None
        if labels is not None and meta.get("labels_kind") == "str":
            labels = labels.astype(object)
        ds = Dataset(X=X, name=meta.get("name") or ref.name, labels=labels,
                     class_names=meta.get("class_names"),
                     outliers=z["outliers"] if "outliers" in z.files else None,
                     feature_names=z["feature_names"].tolist(), sample_ids=z["sample_ids"].tolist(),
                     image_shape=tuple(meta["image_shape"]) if meta.get("image_shape") else None,
                     frame_order=z["frame_order"] if "frame_order" in z.files else None,
                     description=meta.get("description") or "",
                     provenance=Provenance(loader=ref.loader, options=dict(ref.options)))
    return ds


def _sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def save_session(path: str | os.PathLike, session: Session, *, results: Mapping | Iterable | None = None,
                 dataset=None) -> list:
    """Write ``session`` as JSON to ``path`` atomically; return the list of files written.

    ``results`` (method -> RunResult) are also stored beside the session in
    ``<stem>.results.npz`` so reopening can skip the fits. ``dataset`` is needed only when the
    data has no file or demo behind it: it is then stored in ``<stem>.data.npz``. Without it such
    a session can be saved, but reopening it raises :class:`DataMissingError` saying why.
    """
    path = os.fspath(path)
    written = []
    ref = session.dataset
    if ref is not None and not ref.demo and not ref.path and dataset is not None:
        data = _snapshot_bytes(dataset)
        snap = _side_file(path, DATA_SUFFIX)
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
            data, skipped = _pack_results(res, prov)
            side = _side_file(path, RESULTS_SUFFIX)
            _atomic_write_bytes(side, data)
            written.append(side)
            digest = _sha256_bytes(data)
            for r in res:
                rec = session.run_for(r.method)
                rec.stored = {"kind": "session", "file": os.path.basename(side), "sha256": digest,
                              "complete": not any(s.startswith(r.method + ":") for s in skipped)}
    _atomic_write_bytes(path, session_to_json(session).encode("utf-8"))
    written.insert(0, path)
    session.source = os.path.abspath(path)
    return written


def _need(d: Mapping, key: str, types, where: str, optional: bool = False):
    if key not in d:
        if optional:
            return None
        raise SessionError(f"{where} is missing the field '{key}'")
    v = d[key]
    if optional and v is None:
        return None
    if not isinstance(v, types) or (isinstance(v, bool) and bool not in _as_tuple(types)):
        names = "/".join(t.__name__ for t in _as_tuple(types))
        raise SessionError(f"{where}: field '{key}' must be {names}; got {type(v).__name__} {v!r:.60}")
    return v


def _as_tuple(t):
    return t if isinstance(t, tuple) else (t,)


def _upgrade_run_params(d: dict) -> dict:
    """1 -> 2: parameters renamed in robustcore 0.2 (ESFS standardize -> scale, PCP score ->
    score_norm; robustcore.methods.RENAMED_PARAMS)."""
    from robustcore.methods import upgrade_params
    runs = d.get("runs")
    if isinstance(runs, list):
        d = {**d, "runs": [{**r, "params": upgrade_params(r.get("method"), r["params"])}
                           if isinstance(r, dict) and isinstance(r.get("params"), dict) else r
                           for r in runs]}
    return d


# from-version -> function turning a parsed document of that version into the next version's.
# A format change adds its step here (never edits old files).
_MIGRATIONS: dict = {1: _upgrade_run_params}


def session_from_json(text: str, source: str | None = None) -> Session:
    """Parse and validate session JSON; :class:`SessionError` says exactly what is wrong."""
    where = f"session file {source}" if source else "session"
    try:
        d = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SessionError(f"{where} is not valid JSON (line {exc.lineno}, column {exc.colno}: "
                           f"{exc.msg}); it may be truncated or edited by hand") from None
    if not isinstance(d, dict) or d.get("format") != FORMAT_NAME:
        raise SessionError(f"{where} is not a Robust Subspace Studio session (no \"format\": "
                           f"\"{FORMAT_NAME}\" field)")
    version = d.get("schema_version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise SessionError(f"{where}: schema_version must be a positive integer; got {version!r}")
    if version > SCHEMA_VERSION:
        raise SessionError(f"{where} was written by a newer version of Robust Subspace Studio "
                           f"(session format {version}; this version reads formats up to "
                           f"{SCHEMA_VERSION}); update the application to open it")
    while version < SCHEMA_VERSION:
        d = _MIGRATIONS[version](d)
        version += 1
    ds = _need(d, "dataset", dict, where, optional=True)
    ref = None
    if ds is not None:
        w = f"{where}, dataset"
        ref = DatasetRef(
            name=_need(ds, "name", str, w), loader=_need(ds, "loader", str, w),
            fingerprint=_need(ds, "fingerprint", str, w), n_samples=_need(ds, "n_samples", int, w),
            n_features=_need(ds, "n_features", int, w),
            options=_need(ds, "options", dict, w, optional=True) or {},
            path=_need(ds, "path", str, w, optional=True),
            relative_path=_need(ds, "relative_path", str, w, optional=True),
            size=_need(ds, "size", int, w, optional=True), sha256=_need(ds, "sha256", str, w, optional=True),
            demo=_need(ds, "demo", str, w, optional=True), snapshot=_need(ds, "snapshot", str, w, optional=True))
    runs = []
    for i, r in enumerate(_need(d, "runs", list, where)):
        w = f"{where}, run {i + 1}"
        if not isinstance(r, dict):
            raise SessionError(f"{w} must be an object; got {type(r).__name__}")
        seed = _need(r, "seed", int, w, optional=True)
        runs.append(RunRecord(
            method=_need(r, "method", str, w), params=_need(r, "params", dict, w),
            data_fingerprint=_need(r, "data_fingerprint", str, w), seed=seed,
            summary=_need(r, "summary", dict, w, optional=True) or {},
            warnings=_need(r, "warnings", list, w, optional=True) or [],
            elapsed=float(_need(r, "elapsed", (int, float), w, optional=True) or 0.0),
            stored=_need(r, "stored", dict, w, optional=True)))
    if runs and ref is None:
        raise SessionError(f"{where} has runs but no dataset")
    selection = _need(d, "selection", list, where, optional=True) or []
    if not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in selection):
        raise SessionError(f"{where}: selection must be a list of sample indices (integers >= 0)")
    if ref is not None and selection and max(selection) >= ref.n_samples:
        raise SessionError(f"{where}: selection holds sample index {max(selection)}, but the data set "
                           f"has {ref.n_samples} samples")
    return Session(dataset=ref, runs=runs,
                   current_method=_need(d, "current_method", str, where, optional=True),
                   view=_need(d, "view", dict, where, optional=True) or {}, selection=selection,
                   versions=_need(d, "versions", dict, where, optional=True) or {},
                   created=_need(d, "created", str, where, optional=True) or "",
                   schema_version=version, source=os.path.abspath(source) if source else None)


def load_session(path: str | os.PathLike) -> Session:
    """Read a session file. Raises :class:`SessionError` (a ``ValueError``) with a clear message."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        raise SessionError(f"session file {path} does not exist") from None
    except IsADirectoryError:
        raise SessionError(f"session file {path} is a folder, not a file") from None
    except OSError as exc:
        raise SessionError(f"session file {path} cannot be read: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise SessionError(f"session file {path} is not a text (UTF-8 JSON) file") from None
    return session_from_json(text, source=path)


# -- reopening -----------------------------------------------------------------------------------

def _session_dir(session: Session) -> str | None:
    return os.path.dirname(session.source) if session.source else None


def _candidates(session: Session, search_dirs: Iterable[str]) -> list[str]:
    ref = session.dataset
    base = _session_dir(session)
    out = []
    if ref.path:
        out.append(ref.path)
    if ref.relative_path and base:
        out.append(os.path.normpath(os.path.join(base, ref.relative_path)))
    if ref.path:
        name = os.path.basename(ref.path.rstrip("/\\"))
        for d in list(search_dirs) + ([base] if base else []):
            out.append(os.path.join(os.fspath(d), name))
    seen, uniq = set(), []
    for c in out:
        key = os.path.abspath(c)
        if key not in seen:
            seen.add(key)
            uniq.append(key)
    return uniq


def _check_same(ref: DatasetRef, dataset, where: str) -> None:
    fp = dataset.fingerprint()
    if fp != ref.fingerprint:
        raise DataMismatchError(
            f"{where} is not the data this session was made from: its fingerprint (sha256) is "
            f"{_short(fp)}…, the session expects {_short(ref.fingerprint)}…. It has changed since the "
            f"session was saved; point to the original file, or open the new data as a new data set "
            f"and run the methods again", ref=ref, path=where, expected=ref.fingerprint, actual=fp)
    if (dataset.n_samples, dataset.n_features) != (ref.n_samples, ref.n_features):
        raise DataMismatchError(
            f"{where} loads as {dataset.n_samples} x {dataset.n_features}, but the session expects "
            f"{ref.n_samples} x {ref.n_features} (samples x features); check the loader options "
            f"{ref.options}", ref=ref, path=where, expected=ref.fingerprint, actual=fp)


def _file_hash(path: str) -> str | None:
    if os.path.isfile(path):
        from robustcore.datasets import file_sha256
        return file_sha256(path)
    return None  # a folder (of images): the loader computes its hash


def resolve_dataset(session: Session, search_dirs: Iterable[str] = (), path: str | None = None):
    """Load the session's data set and verify it is the same data (by sha256 / fingerprint).

    ``path`` points to the data file explicitly (e.g. after the user located a moved file).
    Otherwise the recorded path is tried, then the path relative to the session file, then a file
    of the same name in ``search_dirs`` and beside the session.

    Raises :class:`DataMissingError` when nothing is found, :class:`DataMismatchError` when the
    file found holds other data (the message says what changed and what to do).
    """
    ref = session.dataset
    if ref is None:
        raise DataMissingError("the session names no data set", ref=None)
    if ref.demo and path is None:
        from robustcore import datasets
        try:
            ds = datasets.demo(ref.demo)
        except (KeyError, ValueError) as exc:
            raise DataMissingError(f"the session uses the demo '{ref.demo}', which this version does not "
                                   f"have ({exc})", ref=ref) from None
        try:
            _check_same(ref, ds, f"demo '{ref.demo}'")
        except DataMismatchError as exc:
            raise DataMismatchError(f"the bundled demo '{ref.demo}' has changed since the session was "
                                    f"saved (fingerprint now {_short(exc.actual)}…, expected "
                                    f"{_short(exc.expected)}…); the saved results cannot be reproduced "
                                    f"with this version", ref=ref, path=None, expected=exc.expected,
                                    actual=exc.actual) from None
        return ds
    if not ref.demo and not ref.path and path is None:
        base = _session_dir(session)
        if ref.snapshot and base:
            snap = os.path.join(base, ref.snapshot)
            if not os.path.isfile(snap):
                raise DataMissingError(f"the session's data is stored in {snap}, which is missing; keep "
                                       f"that file beside the session", ref=ref, searched=[snap])
            try:
                ds = _load_snapshot(snap, ref)
            except (OSError, ValueError, KeyError) as exc:
                raise DataMismatchError(f"the stored data {snap} cannot be read ({exc})", ref=ref,
                                        path=snap) from None
            _check_same(ref, ds, snap)
            return ds
        raise DataMissingError(f"the session's {ref.describe()} was never saved to a file, so it cannot "
                               f"be reopened; open the data again and re-run", ref=ref)
    from robustcore import datasets
    tried = [os.path.abspath(os.fspath(path))] if path is not None else _candidates(session, search_dirs)
    mismatch = None
    for cand in tried:
        if not os.path.exists(cand):
            continue
        # The file's own hash refuses a changed file before parsing it; without a recorded file
        # hash, the loaded data's fingerprint is checked instead (below).
        expected = ref.sha256
        digest = _file_hash(cand) if expected else None
        if digest is not None and digest != expected:
            now = os.path.getsize(cand)
            size_note = (f"; its size is now {now} bytes, was {ref.size}" if ref.size is not None and
                         now != ref.size else "")
            err = DataMismatchError(
                f"data file {cand} has changed since the session was saved: its sha256 is now "
                f"{_short(digest)}…, the session expects {_short(expected)}…{size_note}. Point to the "
                f"original file, or open the changed file as a new data set and run the methods again",
                ref=ref, path=cand, expected=expected, actual=digest)
            if path is not None:
                raise err
            mismatch = mismatch or err
            continue
        fmt = ref.loader if ref.loader in getattr(datasets, "LOADERS", {}) else None
        try:
            ds = datasets.load(cand, format=fmt, **dict(ref.options))
        except ValueError as exc:
            raise DataMismatchError(f"data file {cand} cannot be loaded as before ({exc})", ref=ref,
                                    path=cand) from None
        _check_same(ref, ds, f"data file {cand}")
        return ds
    if mismatch is not None:
        raise mismatch
    where = ", ".join(tried) if tried else "(no path recorded)"
    raise DataMissingError(f"data file {ref.path or ref.name} was not found (looked in: {where}); it may "
                           f"have been moved or renamed: point to it to continue", ref=ref, searched=tried)


def stored_result(session: Session, rec: RunRecord, dataset) -> Any:
    """The saved RunResult of ``rec``, or None if its file is missing, changed or incomplete."""
    from robustcore.methods import RunResult
    base = _session_dir(session)
    st = rec.stored
    if not st or not base or st.get("kind", "session") != "session" or not st.get("complete", True):
        return None
    side = os.path.join(base, str(st.get("file", "")))
    try:
        with open(side, "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    if _sha256_bytes(data) != st.get("sha256") or rec.data_fingerprint != dataset.fingerprint():
        return None
    fields: dict[str, dict] = {"sample_scores": {}, "flags": {}, "arrays": {}, "feature_scores": {}}
    with np.load(io.BytesIO(data), allow_pickle=False) as z:
        for key in z.files:
            parts = key.split("|", 2)
            if len(parts) == 3 and parts[0] == rec.method and parts[1] in fields:
                fields[parts[1]][parts[2]] = z[key]
    if not any(fields.values()):
        return None
    return RunResult(method=rec.method, params=dict(rec.params), data_fingerprint=rec.data_fingerprint,
                     summary=dict(rec.summary), warnings=list(rec.warnings), elapsed=rec.elapsed, **fields)


def rerun(session: Session, dataset, progress=None, *, use_stored: bool = True) -> tuple[dict, list]:
    """Results for every run of the session on ``dataset``: reloaded when stored, else re-fitted.

    Returns ``(results, notes)``: method -> RunResult, and human-readable notes (which runs were
    reloaded or re-run, version differences, runs that cannot be exactly reproduced). Raises
    ``ValueError`` when saved parameters no longer fit (the library's message, prefixed with the
    method), :class:`~robustcore.Cancelled` when ``progress`` cancels.
    """
    from robustcore._progress import Reporter
    from robustcore.methods import get_method
    rep = Reporter(progress)
    results, notes = {}, []
    now = library_versions()
    changed = [f"{k} {v} -> {now.get(k)}" for k, v in session.versions.items()
               if k in ("robustcore", "numpy", "scipy") and now.get(k) != v]
    n = max(len(session.runs), 1)
    for i, rec in enumerate(session.runs):
        sub = rep.span(i / n, (i + 1) / n)
        method = get_method(rec.method)
        if use_stored:
            res = stored_result(session, rec, dataset)
            if res is not None:
                results[rec.method] = res
                notes.append(f"{rec.method}: reloaded the saved results")
                sub(1.0, f"{rec.method}: reloaded")
                continue
        if rec.data_fingerprint != dataset.fingerprint():
            notes.append(f"{rec.method}: was fitted on other data ({_short(rec.data_fingerprint)}…); "
                         f"re-running on this data")
        if not rec.reproducible:
            notes.append(f"{rec.method}: was run without a fixed random_state; re-running gives "
                         f"different numbers")
        try:
            res = method.run(dataset, dict(rec.params), progress=sub)
        except ValueError as exc:
            raise ValueError(f"{rec.method}: the saved parameters do not fit this data: {exc}") from exc
        results[rec.method] = res
        notes.append(f"{rec.method}: re-run ({res.elapsed:.2f} s)")
    if changed and any(r.estimator is not None for r in results.values()):
        notes.append("library versions differ from the session's (" + "; ".join(changed) +
                     "); numbers may differ in the last digits")
    return results, notes


def apply_to_state(session: Session, state, dataset, results: Mapping) -> dict:
    """Put data, results, current method and selection into ``state``; return the view dict."""
    state.set_dataset(dataset)
    for rec in session.runs:
        res = results.get(rec.method)
        if res is not None:
            state.add_result(res)
    if session.current_method:
        state.set_current_method(session.current_method)
    state.set_selection(np.asarray(session.selection, dtype=np.int64))
    return dict(session.view)


def restore(session: Session, state, progress=None, *, dataset=None, search_dirs: Iterable[str] = (),
            use_stored: bool = True) -> RestoreReport:
    """Reopen ``session`` into ``state``: load and verify the data, reload or re-run every fit,
    restore the current method and the selection.

    ``dataset`` skips loading (e.g. after the user pointed to a moved file and
    :func:`resolve_dataset` was called with ``path=``). Nothing in ``state`` changes unless every
    step succeeded. The window shows ``report.view`` and logs ``report.notes``.
    """
    if dataset is None:
        dataset = resolve_dataset(session, search_dirs=search_dirs)
    results, notes = rerun(session, dataset, progress=progress, use_stored=use_stored)
    view = apply_to_state(session, state, dataset, results)
    reloaded = [m for m, r in results.items() if r.estimator is None]
    return RestoreReport(dataset=dataset, results=results, view=view, notes=notes, reloaded=reloaded,
                         rerun=[m for m in results if m not in reloaded])


@dataclass
class NeedsData:
    """What :func:`reopen_job` returns when the data file is missing or changed: the window then
    offers to locate it (``app.session_dialogs.ask_to_locate``) and reopens with ``data_path``."""

    session: Session
    error: SessionError


def reopen_job(path, progress=None, *, data_path: str | None = None, search_dirs: Iterable[str] = (),
               use_stored: bool = True):
    """The whole reopening as one background job (no Qt): load, verify, reload or re-run.

    Returns ``(session, dataset, results, notes)`` to pass to :func:`apply_to_state` in the GUI
    thread, or :class:`NeedsData` when the data file is missing or has changed, so the window
    can ask the user to point to it. Other problems raise :class:`SessionError` / ``ValueError``.
    """
    session = load_session(path)
    try:
        dataset = resolve_dataset(session, search_dirs=search_dirs, path=data_path)
    except (DataMissingError, DataMismatchError) as exc:
        return NeedsData(session, exc)
    results, notes = rerun(session, dataset, progress, use_stored=use_stored)
    return session, dataset, results, notes


def compare_arrays(a: Mapping, b: Mapping, rtol: float = 1e-7, atol: float = 1e-10) -> list[str]:
    """Differences between two name -> array mappings (empty list: the same numbers).

    Floating-point arrays are compared to tolerance, integer, boolean and text arrays exactly.
    """
    diffs = []
    for name in sorted(set(a) | set(b)):
        if name not in a or name not in b:
            diffs.append(f"'{name}' is in only one of the two")
            continue
        x, y = np.asarray(a[name]), np.asarray(b[name])
        if x.shape != y.shape:
            diffs.append(f"'{name}': shapes {x.shape} and {y.shape}")
        elif x.dtype.kind in "fc" or y.dtype.kind in "fc":
            if not np.allclose(x, y, rtol=rtol, atol=atol, equal_nan=True):
                err = float(np.max(np.abs(x.astype(complex) - y.astype(complex)))) if x.size else 0.0
                diffs.append(f"'{name}': max abs difference {err:.3g}")
        elif not np.array_equal(x, y):
            diffs.append(f"'{name}': {int(np.sum(x != y))} entries differ")
    return diffs


def compare_results(a, b, rtol: float = 1e-7, atol: float = 1e-10) -> list[str]:
    """Differences between two RunResults of the same method (empty list: the same numbers)."""
    def flat(res):
        return {f"{kind} {name}": v for kind in ("sample_scores", "flags", "arrays", "feature_scores")
                for name, v in getattr(res, kind).items()}
    return compare_arrays(flat(a), flat(b), rtol=rtol, atol=atol)


# -- reopen on launch (QSettings; imported lazily so the command line stays Qt-free) ---------------

def _settings():
    # The window's own settings store (same file, same environment override).
    from app.settings import Settings
    return Settings().qs


def remember_session(path: str | os.PathLike) -> None:
    """Record ``path`` as the last session saved or opened."""
    _settings().setValue("session/last", os.path.abspath(os.fspath(path)))


def set_reopen_last(enabled: bool) -> None:
    """The user's choice: reopen the last session when the window starts."""
    _settings().setValue("session/reopen_last", bool(enabled))


def reopen_last_enabled() -> bool:
    v = _settings().value("session/reopen_last", False)
    return v in (True, "true", "1", 1)


def last_session(only_if_enabled: bool = True) -> str | None:
    """The last session's path if it still exists (and the user asked for reopening)."""
    if only_if_enabled and not reopen_last_enabled():
        return None
    p = _settings().value("session/last", None)
    return str(p) if p and os.path.isfile(str(p)) else None
