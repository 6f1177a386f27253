"""The session FORMAT: what a session file holds, written and read as JSON, and migrated.

A session names the data set (demo name, or file path with its sha256 and loader options), each
run's method, validated parameters and seed, the library versions, the current view and the
selection. It is plain JSON with a versioned schema (never pickle). This module imports no Qt and
no window code: the command line uses it headless.

Schema, version 3 (every field is written; readers ignore fields they do not know)::

    {"format": "robust-subspace-studio session", "schema_version": 3, "created": ISO-8601 UTC,
     "versions": {"python", "robustcore", "numpy", "scipy", "PySide6", "pyqtgraph", ...},
     "dataset": {"name", "loader", "options", "path", "relative_path", "size", "sha256", "demo",
                 "fingerprint", "n_samples", "n_features", "snapshot", "lazy", "identity", "digest"} or null,
     "runs": [{"method", "params" (validated, incl. random_state), "seed", "data_fingerprint",
               "facts" (the typed result's scalar fields by part: robustcore.result.RunResult.facts),
               "summary" (the same rendered in words, for people), "warnings", "elapsed",
               "stored": {"kind": "session"|"export", "file", "sha256", "complete" (the NPZ alone
                          holds the run), "out_of_core": {"folder", "stores", "fields"} and
                          "skipped" (results held in Zarr stores, app.session.stores), "store"
                          (a lazy command-line run's results store)} or null}],
     "current_method", "view": {"name": VIEW, ...}, "selection": [sample indices]}

A reader refuses a higher ``schema_version`` with a message; an older one is brought up to date
by the steps in ``_MIGRATIONS``. A session file is untrusted input: it is parsed within the
bounded-resource policy of :mod:`robustcore.datasets._limits` (size, nesting depth, digits), every
field is type-checked, loader options must be options of the named loader, and names of files
(``snapshot``, ``stored.file``, an IDX ``labels_file``) must be plain names beside the session.
Every problem is a :class:`SessionError` (a ``ValueError``) whose message names the field.
"""
from __future__ import annotations

import datetime as _dt
import json
import math
import os
import platform
from dataclasses import dataclass, field
from typing import Any
from collections.abc import Iterable, Mapping

import numpy as np

from robustcore.datasets import bare_name, is_lazy_dataset, parse_json

from .errors import DataMismatchError, DataMissingError, DataNeedsConfirmation, SessionError

__all__ = ["FORMAT_NAME", "SCHEMA_VERSION", "SESSION_SUFFIX", "RESULTS_SUFFIX", "DATA_SUFFIX", "STORES_SUFFIX",
           "SEED_PARAM", "DEFAULT_SEED", "SessionError", "DataMissingError", "DataNeedsConfirmation",
           "DataMismatchError", "DatasetRef", "RunRecord", "Session", "library_versions", "seed_param", "pin_seed",
           "run_record",
           "session_from_results", "session_from_state", "session_to_json", "session_from_json"]

FORMAT_NAME = "robust-subspace-studio session"
SCHEMA_VERSION = 3
SESSION_SUFFIX = ".rss.json"
RESULTS_SUFFIX = ".results.npz"
DATA_SUFFIX = ".data.npz"
# The folder of results held in Zarr stores (out of core) beside a session (app.session.stores).
STORES_SUFFIX = ".lazy"
# Runs a session may hold: one per method (the registry has fewer), with room for methods to come.
MAX_RUNS = 64
# Parameters with this name are the seed of a method's randomness (scikit-learn's convention).
SEED_PARAM = "random_state"
# The seed pinned when a user leaves random_state unset, so that a run can be repeated exactly.
DEFAULT_SEED = 0
# Names a loader option may never have: they are the load call's own arguments.
_RESERVED_OPTIONS = ("format", "path")


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
    a content hash otherwise); it is what reopening verifies. Data opened out of core
    (``lazy``) has a fingerprint made of file sizes and times; its ``identity`` (sizes and the
    first and last MiB) and ``digest`` (the sha256 of the whole content, taken by the fit's
    pass; :mod:`app.session.identity`) are verified instead, so that a copy of the data is
    recognised and a change anywhere in it is not. ``relative_path`` is relative to
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
    lazy: bool = False   # opened out of core (robustcore.bigdata.open_lazy): reopened the same way
    # Out of core: the content's cheap identity and its whole digest (app.session.identity),
    # which a copy keeps.
    identity: str | None = None
    digest: str | None = None

    @classmethod
    def from_dataset(cls, dataset, base_dir: str | None = None) -> DatasetRef:
        p = dataset.provenance
        path = os.path.abspath(p.path) if p.path else None
        rel = None
        if path and base_dir and not p.demo:
            try:
                rel = os.path.relpath(path, base_dir)
            except ValueError:  # another drive on Windows
                rel = None
        lazy = is_lazy_dataset(dataset)
        identity = digest = None
        if lazy and path:
            from .identity import data_identity
            identity = data_identity(path)
        if lazy:
            digest = getattr(dataset, "content_digest", None)
        return cls(name=dataset.name, loader=p.loader, fingerprint=dataset.fingerprint(),
                   n_samples=int(dataset.n_samples), n_features=int(dataset.n_features),
                   options=_jsonable(dict(p.options)), path=path, relative_path=rel,
                   size=p.size, sha256=p.sha256, demo=p.demo, lazy=lazy, identity=identity,
                   digest=digest)

    def describe(self) -> str:
        if self.demo:
            return f"demo '{self.demo}'"
        if self.path:
            return f"file {self.path}"
        return f"in-memory data set '{self.name}'"

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in _REF_FIELDS}


_REF_FIELDS = ("name", "loader", "fingerprint", "n_samples", "n_features", "options", "path",
               "relative_path", "size", "sha256", "demo", "snapshot", "lazy", "identity",
               "digest")


@dataclass
class RunRecord:
    """One fit: enough to repeat it (method, validated parameters, seed) and to check it.

    ``facts`` holds the run's typed numbers (:meth:`robustcore.result.RunResult.facts`: compared
    on replay, and with the stored arrays the result reopened without a fit); ``summary`` the same
    in words, for people (sessions written before ``facts`` existed have only it). ``stored``
    names the results file beside the session and its sha256, when the results were saved.
    """

    method: str
    params: dict
    data_fingerprint: str
    seed: int | None = None
    summary: dict = field(default_factory=dict)
    facts: dict = field(default_factory=dict)
    warnings: list = field(default_factory=list)
    elapsed: float = 0.0
    stored: dict | None = None

    def to_dict(self) -> dict:
        return {"method": self.method, "params": _jsonable(self.params), "seed": self.seed,
                "data_fingerprint": self.data_fingerprint, "facts": _jsonable(self.facts),
                "summary": _jsonable(self.summary),
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
                     facts=_jsonable(result.facts()),
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


def session_to_json(session: Session) -> str:
    return json.dumps(session.to_dict(), indent=2, allow_nan=False, ensure_ascii=False) + "\n"


# -- reading -------------------------------------------------------------------------------------

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
        d = {**d, "runs": [{**r, "params": upgrade_params(r["method"], r["params"])}
                           if isinstance(r, dict) and isinstance(r.get("method"), str)
                           and isinstance(r.get("params"), dict) else r
                           for r in runs]}
    return d


def _robpca_sample_rule(d: dict) -> dict:
    """2 -> 3: ROBPCA's ``max_samples`` (robustcore 0.2's sample rule). Before it, ROBPCA fitted
    every row of data in memory and a sample of 100,000 rows out of core: a saved run without
    the parameter is given what it did then ("all" in memory, "auto" out of core), so that a
    replay repeats its numbers."""
    runs, ds = d.get("runs"), d.get("dataset")
    lazy = isinstance(ds, dict) and ds.get("lazy") is True
    if isinstance(runs, list):
        d = {**d, "runs": [{**r, "params": {**r["params"], "max_samples": "auto" if lazy else "all"}}
                           if isinstance(r, dict) and r.get("method") == "robpca"
                           and isinstance(r.get("params"), dict) and "max_samples" not in r["params"] else r
                           for r in runs]}
    return d


# from-version -> function turning a parsed document of that version into the next version's.
# A format change adds its step here (never edits old files).
_MIGRATIONS: dict = {1: _upgrade_run_params, 2: _robpca_sample_rule}


def session_from_json(text: str, source: str | None = None) -> Session:
    """Parse and validate session JSON; :class:`SessionError` says exactly what is wrong."""
    where = f"session file {source}" if source else "session"
    d = parse_json(text, where, error=SessionError)
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
    try:
        while version < SCHEMA_VERSION:
            d = _MIGRATIONS[version](d)
            version += 1
        return _session(d, where, version, source)
    except (TypeError, AttributeError, OverflowError) as exc:
        # The checks below name every field they read; this catches what a future field forgets.
        raise SessionError(f"{where} holds a value of the wrong type ({exc}); it is damaged or was "
                           f"edited by hand") from None


def _session(d: dict, where: str, version: int, source: str | None) -> Session:
    ds = _need(d, "dataset", dict, where, optional=True)
    ref = None
    if ds is not None:
        w = f"{where}, dataset"
        lazy = bool(_need(ds, "lazy", bool, w, optional=True))
        ref = DatasetRef(
            name=_need(ds, "name", str, w), loader=_need(ds, "loader", str, w), lazy=lazy,
            fingerprint=_need(ds, "fingerprint", str, w), n_samples=_need(ds, "n_samples", int, w),
            n_features=_need(ds, "n_features", int, w),
            options=_options(_need(ds, "options", dict, w, optional=True) or {}, _need(ds, "loader", str, w), w,
                             lazy=lazy),
            path=_need(ds, "path", str, w, optional=True),
            relative_path=_need(ds, "relative_path", str, w, optional=True),
            size=_need(ds, "size", int, w, optional=True), sha256=_need(ds, "sha256", str, w, optional=True),
            demo=_need(ds, "demo", str, w, optional=True), snapshot=_need(ds, "snapshot", str, w, optional=True),
            identity=_need(ds, "identity", str, w, optional=True),
            digest=_need(ds, "digest", str, w, optional=True))
        if ref.snapshot is not None:
            bare_name(ref.snapshot, f"{w}: the stored data", SessionError)
            if len(ref.snapshot) > 255:   # no file system holds such a name: said, not echoed
                raise SessionError(f"{w}: the stored data's file name is {len(ref.snapshot):,} characters long; "
                                   f"a file name has at most 255")
        if ref.n_samples < 0 or ref.n_features < 0:
            raise SessionError(f"{w}: n_samples and n_features must be >= 0")
    runs = []
    listed = _need(d, "runs", list, where)
    if len(listed) > MAX_RUNS:
        raise SessionError(f"{where} holds {len(listed):,} runs; a session holds one run per method, "
                           f"{MAX_RUNS} at most: it is damaged or was edited by hand")
    first: dict[str, int] = {}
    for i, r in enumerate(listed):
        w = f"{where}, run {i + 1}"
        if not isinstance(r, dict):
            raise SessionError(f"{w} must be an object; got {type(r).__name__}")
        method = _need(r, "method", str, w)
        if method in first:
            raise SessionError(f"{w} repeats the method {method!r:.80} of run {first[method]}; a session holds "
                               f"one run per method: it is damaged or was edited by hand")
        first[method] = i + 1
        seed = _need(r, "seed", int, w, optional=True)
        runs.append(RunRecord(
            method=method, params=_need(r, "params", dict, w),
            data_fingerprint=_need(r, "data_fingerprint", str, w), seed=seed,
            summary=_need(r, "summary", dict, w, optional=True) or {},
            facts=_facts(_need(r, "facts", dict, w, optional=True) or {}, w),
            warnings=[str(x) for x in _need(r, "warnings", list, w, optional=True) or []],
            elapsed=float(_need(r, "elapsed", (int, float), w, optional=True) or 0.0),
            stored=_stored(_need(r, "stored", dict, w, optional=True), w)))
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


def _facts(facts: dict, where: str) -> dict:
    """A run's typed numbers as a session may hold them: known parts, each an object of plain
    values (text, numbers, true/false, null, or an object of counts); checked again, field by
    field, when a stored result is rebuilt from them (robustcore.result.RunResult.restore)."""
    from robustcore.result import PARTS
    for name, part in facts.items():
        if name in ("no_limits", "no_outlier_map"):
            if not isinstance(part, str):
                raise SessionError(f"{where}, facts: '{name}' must be text")
            continue
        if name not in PARTS:
            raise SessionError(f"{where}, facts: unknown part {name!r}; parts are: {', '.join(PARTS)}")
        if not isinstance(part, dict):
            raise SessionError(f"{where}, facts: '{name}' must be an object")
        for key, value in part.items():
            ok = value is None or isinstance(value, (str, int, float, bool)) or (
                isinstance(value, dict) and len(value) <= 64 and all(
                    isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) for k, v in value.items()))
            if not ok:
                raise SessionError(f"{where}, facts: '{name}.{key}' must be a plain value; got "
                                   f"{type(value).__name__}")
    return dict(facts)


def _stored(stored: dict | None, where: str) -> dict | None:
    """A run's ``stored`` record; its out-of-core stores are checked to be plain names beside the
    session (see :func:`app.session.stores.check_record`)."""
    from .stores import check_record, check_store_info
    if stored is not None and stored.get("out_of_core") is not None:
        check_record(stored["out_of_core"], f"{where}, stored", SessionError)
    if stored is not None and stored.get("store") is not None:   # a lazy command-line run's results
        st = stored["store"]
        check_store_info(st.get("name") if isinstance(st, dict) else None, st, f"{where}, stored", SessionError)
    return stored


def _options(options: dict, loader: str, where: str, lazy: bool = False) -> dict:
    """Loader options as a session may hold them: plain values, options the loader declares
    (those of robustcore.bigdata.open_lazy for a table opened out of core), and file names (an
    IDX ``labels_file``) that stay beside the data file."""
    from robustcore.datasets import LOADERS
    declared = {p.name for p in LOADERS[loader].options} if loader in LOADERS else None
    if lazy and loader != "video":
        from robustcore.bigdata._lazy import TABLE_OPTIONS
        declared = set(TABLE_OPTIONS)
    paths = LOADERS[loader].path_options if loader in LOADERS else ()
    for key, value in options.items():
        if key in _RESERVED_OPTIONS or (declared is not None and key not in declared):
            known = f"; the {loader} loader's options are: {', '.join(sorted(declared))}" if declared else ""
            raise SessionError(f"{where}: {key!r:.80} is not a loader option{known}")
        if value is not None and not isinstance(value, (str, int, float, bool)):
            raise SessionError(f"{where}: loader option {key!r:.80} must be a plain value (text, number, "
                               f"true/false or null); got {type(value).__name__}")
        if key in paths and isinstance(value, str) and value.lower() != "none":
            bare_name(value, f"{where}: loader option {key!r:.80}", SessionError)
    return dict(options)
