"""Reopening a session: find and verify its data, reload or re-run its fits, restore the state.

This is the one path the window and the command line both take. :func:`reopen_job` runs in the
background (no Qt); its result goes to :func:`apply_to_state` in the GUI thread, or it is a
:class:`NeedsData` when the user must point to or confirm the data file.

What a session may read (the policy of :mod:`robustcore.datasets._limits`):

- its side files (stored results, stored data): plain names of regular files in its own folder;
- its data file without asking when that file lies inside the session's folder (symlinks
  resolved), or in a folder the caller searches, or is a file the caller already trusts (the
  window passes its recent files: files the user opened);
- any other data file only once the user confirms it (``data_path``): otherwise
  :class:`DataNeedsConfirmation` names the path.

A stored results file that is missing, changed, damaged, refused or holds Python objects skips
that run's reload with a note, and the run is fitted again; it never aborts the reopening. The
same holds for results saved in Zarr stores (:mod:`.stores`): a store that is missing, fails its
manifest, or lies outside the session's folder is named in the note, and the run is fitted again.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any
from collections.abc import Iterable, Mapping

import numpy as np

from robustcore.datasets import DEFAULT_MAX_BYTES, LoadError, inside, is_lazy_dataset, read_npz

from .files import load_session, load_snapshot, read_side, session_dir, side_path
from .identity import CHANGED, arm, check_content, data_identity, describe_identity, reopen_options
from .limits import cap_limits
from .schema import (DataMismatchError, DataMissingError, DataNeedsConfirmation, DatasetRef, RunRecord,
                     Session, SessionError, _short, library_versions)
from .stores import StoreError, open_stored_fields

__all__ = ["NeedsData", "Reopened", "resolve_dataset", "stored_result", "rerun", "apply_to_state", "reopen_job",
           "interrupted_notes"]

RELOADED, RERUN = "reloaded", "re-run"


class Reopened(dict):
    """The results of a reopened session, method -> RunResult, and in ``how`` how each came
    back: :data:`RELOADED` (its saved results) or :data:`RERUN` (fitted again). The window's
    Run log lists them so."""

    def __init__(self):
        super().__init__()
        self.how: dict[str, str] = {}

    def put(self, method: str, result, how: str) -> None:
        self[method] = result
        self.how[method] = how


@dataclass
class NeedsData:
    """What :func:`reopen_job` returns when the data file is missing, changed or outside the
    session's folder: the window then asks the user to locate or confirm it
    (``app.session_dialogs``) and reopens with ``data_path``."""

    session: Session
    error: SessionError


# -- the data ---------------------------------------------------------------------------------------

def _same_content(ref: DatasetRef | None, dataset) -> bool | None:
    """For data opened out of core whose session recorded its identity or digest: whether
    ``dataset``'s file has that identity (a copy of the data elsewhere does). None when there is
    nothing to check. The digest itself is compared by :func:`.identity.arm` (a video: at once)
    and by the pass that reads the table (:func:`.identity.check_content`), so a session that
    recorded only a digest is taken as the same data here, provisionally."""
    if ref is None or not ref.lazy or not (ref.identity or ref.digest) or not is_lazy_dataset(dataset):
        return None
    if not ref.identity:
        return True
    path = dataset.provenance.path
    return bool(path) and data_identity(path) == ref.identity


def _fitted_on(rec: RunRecord, session: Session, dataset) -> bool:
    """Whether the run ``rec`` was fitted on ``dataset``: the same fingerprint, or (out of core)
    the data the session names, recognised by its identity where it now is."""
    if rec.data_fingerprint == dataset.fingerprint():
        return True
    ref = session.dataset
    return ref is not None and rec.data_fingerprint == ref.fingerprint and bool(_same_content(ref, dataset))


def _check_same(ref: DatasetRef, dataset, where: str) -> None:
    fp = dataset.fingerprint()
    same = _same_content(ref, dataset)
    if same is False:
        raise DataMismatchError(
            f"{where}: {CHANGED}: {describe_identity(ref.identity)} differ from what the session "
            f"recorded. Point to the original data, or open the new data as a new data set and run the "
            f"methods again", ref=ref, path=where, expected=ref.identity, actual=fp)
    if same is None and fp != ref.fingerprint:
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
    if os.path.isdir(path):
        return None  # a folder (of images): the loader computes its hash
    from robustcore.datasets import file_sha256
    try:
        return file_sha256(path)
    except LoadError as exc:  # a device, a FIFO...
        raise DataMismatchError(f"data file {exc}", path=path) from None


def _candidates(session: Session, search_dirs: Iterable[str]) -> list[tuple[str, bool]]:
    """(path, may be read without asking) for every place the data may be, inside first."""
    ref = session.dataset
    base = session_dir(session)
    out = []
    if ref.relative_path and base:
        out.append((os.path.normpath(os.path.join(base, ref.relative_path)), False))
    if ref.path:
        out.append((ref.path, False))
        name = os.path.basename(ref.path.rstrip("/\\"))
        out += [(os.path.join(os.fspath(d), name), True) for d in search_dirs]
        if base:
            out.append((os.path.join(base, name), False))
    seen, uniq = set(), []
    for c, searched in out:
        key = os.path.abspath(c)
        if key not in seen:
            seen.add(key)
            uniq.append((key, searched or bool(base and inside(key, base))))
    return sorted(uniq, key=lambda c: not c[1])  # stable: the order above within each group


def _demo_dataset(ref: DatasetRef):
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


def _snapshot_dataset(session: Session, ref: DatasetRef):
    what = "the session's stored data"
    try:
        snap = side_path(session, ref.snapshot, what)
    except FileNotFoundError:
        snap = os.path.join(session_dir(session), ref.snapshot)
        raise DataMissingError(f"the session's data is stored in {snap}, which is missing; keep "
                               f"that file beside the session", ref=ref, searched=[snap]) from None
    try:
        ds = load_snapshot(snap, ref)
    except DataMismatchError:
        raise
    except SessionError as exc:
        raise DataMismatchError(f"the stored data {snap} cannot be read ({exc})", ref=ref, path=snap) from None
    _check_same(ref, ds, snap)
    return ds


def resolve_dataset(session: Session, search_dirs: Iterable[str] = (), path: str | None = None,
                    trusted: Iterable[str] = (), limits: Mapping | None = None, notes: list | None = None,
                    how: str = ""):
    """Load the session's data set and verify it is the same data (by sha256 / fingerprint).

    ``path`` is a data file the user pointed to or confirmed: it is read wherever it is.
    Otherwise the path relative to the session file, the recorded path, a file of the same name
    in ``search_dirs`` and one beside the session are tried, inside the session's folder first.
    A file outside the session's folder (and not in ``search_dirs`` or ``trusted``) is not read.

    Raises :class:`DataMissingError` when nothing is found, :class:`DataNeedsConfirmation` (a
    DataMissingError) when the only candidate lies outside the session's folder,
    :class:`DataMismatchError` when the file found holds other data (the message says what
    changed and what to do).

    The loader's limit options are the user's (:mod:`.limits`): ``limits`` (the user's own
    values; by default the policy's), never above them from the session. A session's larger value
    is lowered, with a line in ``notes`` (and in the error, when the data are then refused) ending
    in ``how``, the way to raise the limit.
    """
    ref = session.dataset
    if ref is None:
        raise DataMissingError("the session names no data set", ref=None)
    if ref.demo and path is None:
        return _demo_dataset(ref)
    if not ref.demo and not ref.path and path is None:
        if ref.snapshot and session_dir(session):
            return _snapshot_dataset(session, ref)
        raise DataMissingError(f"the session's {ref.describe()} was never saved to a file, so it cannot "
                               f"be reopened; open the data again and re-run", ref=ref)
    trusted = {os.path.abspath(os.fspath(t)) for t in trusted}
    if path is not None:
        tried = [(os.path.abspath(os.fspath(path)), True)]
    else:
        tried = [(c, ok or c in trusted) for c, ok in _candidates(session, search_dirs)]
    mismatch = None
    outside = None
    for cand, allowed in tried:
        if not os.path.exists(cand):
            continue
        if not allowed:
            outside = outside or cand
            continue
        try:
            return _load_verified(ref, cand, limits, notes, how)
        except DataMismatchError as err:
            if path is not None:
                raise
            mismatch = mismatch or err
    if mismatch is not None:
        raise mismatch
    if outside is not None:
        base = session_dir(session) or "(none)"
        raise DataNeedsConfirmation(
            f"the session reads its data from {outside}, outside the session's folder {base}; a session "
            f"opens a file elsewhere only when you confirm it (in the window: 'Use this file'; on the "
            f"command line: --data {outside})", ref=ref, path=outside)
    names = [c for c, _ in tried]
    where = ", ".join(names) if names else "(no path recorded)"
    raise DataMissingError(f"data file {ref.path or ref.name} was not found (looked in: {where}); it may "
                           f"have been moved or renamed: point to it to continue", ref=ref, searched=names)


def _load_verified(ref: DatasetRef, cand: str, limits: Mapping | None = None, notes: list | None = None,
                   how: str = ""):
    """Load ``cand`` with the session's loader options, their limits the user's (:mod:`.limits`),
    once its sha256 matches (when recorded)."""
    from robustcore import datasets
    # The file's own hash refuses a changed file before parsing it; without a recorded file
    # hash, the loaded data's fingerprint is checked instead.
    expected = ref.sha256
    digest = _file_hash(cand) if expected else None
    if digest is not None and digest != expected:
        now = os.path.getsize(cand)
        size_note = (f"; its size is now {now} bytes, was {ref.size}" if ref.size is not None and
                     now != ref.size else "")
        raise DataMismatchError(
            f"data file {cand} has changed since the session was saved: its sha256 is now "
            f"{_short(digest)}…, the session expects {_short(expected)}…{size_note}. Point to the "
            f"original file, or open the changed file as a new data set and run the methods again",
            ref=ref, path=cand, expected=expected, actual=digest)
    fmt = ref.loader if ref.loader in datasets.LOADERS else None
    options, lowered = cap_limits(ref.options, limits, lazy=ref.lazy, how=how)
    if notes is not None:
        notes.extend(lowered)
    try:
        if ref.lazy:   # opened out of core, as when the session was saved (its digest's block size)
            from robustcore.bigdata import open_lazy
            ds = open_lazy(cand, **options, **reopen_options(ref))
        else:
            ds = datasets.load(cand, format=fmt, **options)
    except ValueError as exc:
        said = "".join(f"; {n}" for n in lowered)
        raise DataMismatchError(f"data file {cand} cannot be loaded as before ({exc}){said}", ref=ref,
                                path=cand) from None
    _check_same(ref, ds, f"data file {cand}")
    arm(ref, ds, f"data file {cand}")
    return ds


# -- the results ------------------------------------------------------------------------------------

def stored_result(session: Session, rec: RunRecord, dataset, notes: list | None = None) -> Any:
    """The saved RunResult of ``rec``, or None if its file is missing, changed or incomplete.

    When a results file is named but cannot be used (refused by the path rules, damaged, holding
    Python objects), ``notes`` (if given) gets one line saying which file and why.
    """
    from robustcore.result import RunResult
    st = rec.stored
    if not isinstance(st, dict) or not session_dir(session) or st.get("kind", "session") != "session":
        return None
    # With stores, the NPZ holds only part of the run ("complete" is false for older readers).
    whole = (not st.get("skipped")) if st.get("out_of_core") is not None else st.get("complete", True) is True
    if not whole:
        return None

    def skip(why: str):
        if notes is not None:
            notes.append(f"{rec.method}: the saved results {why}; the run is fitted again")
        return None
    try:
        side, data = read_side(session, st.get("file"), "the results file")
    except FileNotFoundError:
        return None
    except SessionError as exc:
        return skip(f"were not read: {exc}")
    import hashlib
    if hashlib.sha256(data).hexdigest() != st.get("sha256") or not _fitted_on(rec, session, dataset):
        return None
    fields: dict[str, dict] = {"sample_scores": {}, "flags": {}, "arrays": {}, "feature_scores": {}}
    try:
        arrays = read_npz(data, DEFAULT_MAX_BYTES, f"results file {side}", error=SessionError)
    except SessionError as exc:
        return skip(f"were not read: {exc}")
    for key, value in arrays.items():
        parts = key.split("|", 2)
        if len(parts) == 3 and parts[0] == rec.method and parts[1] in fields:
            fields[parts[1]][parts[2]] = value
    if st.get("out_of_core") is not None:
        # Results held on disk (a long video's S): checked against their manifest, opened lazily.
        try:
            for kind, values in open_stored_fields(session_dir(session), st["out_of_core"]).items():
                for name, arr in values.items():
                    if kind in ("sample_scores", "flags") and arr.shape[:1] != (dataset.n_samples,):
                        raise StoreError(f"{kind} {name} holds {arr.shape[0] if arr.shape else 0} values, "
                                         f"the data set has {dataset.n_samples} samples")
                fields[kind].update(values)
        except FileNotFoundError as exc:
            return skip(f"are incomplete: {exc.args[0] if exc.args else exc}")
        except StoreError as exc:
            return skip(f"were not used: {exc}")
        except OSError as exc:
            return skip(f"could not be read: {exc.strerror or exc}")
    if not any(fields.values()):
        return None
    if not rec.facts:
        return skip("were saved by an older version, without the run's typed numbers")
    # Tagged with the data as it is now (out of core, a copy elsewhere has another fingerprint).
    try:
        return RunResult.restore(method=rec.method, params=dict(rec.params), data_fingerprint=dataset.fingerprint(),
                                 facts=rec.facts, arrays=fields["arrays"], sample_scores=fields["sample_scores"],
                                 flags=fields["flags"], feature_scores=fields["feature_scores"],
                                 warnings=list(rec.warnings), elapsed=rec.elapsed,
                                 feature_names=[str(f) for f in dataset.feature_names])
    except ValueError as exc:
        return skip(f"do not fit: {exc}")


def _method(name: str, where: str):
    from robustcore.methods import get_method
    try:
        return get_method(name)
    except ValueError as exc:
        raise SessionError(f"{where}: {exc}") from None


def rerun(session: Session, dataset, progress=None, *, use_stored: bool = True) -> tuple[dict, list]:
    """Results for every run of the session on ``dataset``: reloaded when stored, else re-fitted.

    Returns ``(results, notes)``: method -> RunResult (a :class:`Reopened`, which also says
    how each came back), and human-readable notes (which runs were
    reloaded or re-run, results files skipped and why, version differences, runs that cannot be
    exactly reproduced). Data opened out of core whose session recorded its content's digest is
    compared with it: by the first pass of a re-fit, or by a pass of its own when every run was
    reloaded. Raises :class:`DataMismatchError` when the data changed since the session was saved,
    :class:`SessionError` when saved parameters no longer fit (the library's message, prefixed
    with the method), :class:`~robustcore.Cancelled` when ``progress`` cancels.
    """
    from robustcore._progress import Reporter
    from robustcore.bigdata._digest import DataChangedError
    rep = Reporter(progress)
    results, notes = Reopened(), []
    verify = bool(session.dataset and session.dataset.digest and is_lazy_dataset(dataset))
    now = library_versions()
    changed = [f"{k} {v} -> {now.get(k)}" for k, v in session.versions.items()
               if k in ("robustcore", "numpy", "scipy") and now.get(k) != v]
    n = max(len(session.runs), 1)
    # Reloading every run reads no data: the content's digest then takes a pass of its own.
    share = 0.0 if not verify else (1.0 if all(r.stored for r in session.runs) and use_stored else 0.0)
    fits = rep.span(0.0, 1.0 - 0.5 * share)
    for i, rec in enumerate(session.runs):
        sub = fits.span(i / n, (i + 1) / n)
        method = _method(rec.method, f"run {i + 1}")
        try:  # checked before a reload too: the window puts these values into its forms
            method.validate(dict(rec.params))
        except (ValueError, TypeError, OverflowError) as exc:
            raise SessionError(f"{rec.method}: the saved parameters do not fit this data: {exc}") from None
        if use_stored:
            res = stored_result(session, rec, dataset, notes)
            if res is not None:
                results.put(rec.method, res, RELOADED)
                notes.append(f"{rec.method}: reloaded the saved results")
                sub(1.0, f"{rec.method}: reloaded")
                continue
        if not _fitted_on(rec, session, dataset):
            notes.append(f"{rec.method}: was fitted on other data ({_short(rec.data_fingerprint)}…); "
                         f"re-running on this data")
        if not rec.reproducible:
            notes.append(f"{rec.method}: was run without a fixed random_state; re-running gives "
                         f"different numbers")
        try:
            res = method.run(dataset, dict(rec.params), progress=sub)
        except DataChangedError as exc:   # the data was armed with the session's digest (arm)
            where = getattr(getattr(dataset, "provenance", None), "path", None) or dataset.name
            raise DataMismatchError(f"{where}: {exc}. Point to the original data, or open the new data as a "
                                    f"new data set and run the methods again", ref=session.dataset,
                                    path=where, expected=exc.expected, actual=exc.actual) from None
        except (ValueError, TypeError, OverflowError) as exc:
            raise SessionError(f"{rec.method}: the saved parameters do not fit this data: {exc}") from exc
        results.put(rec.method, res, RERUN)
        notes.append(f"{rec.method}: re-run ({res.elapsed:.2f} s)")
    if verify:
        notes.append(check_content(session.dataset, dataset, progress=rep.span(1.0 - 0.5 * share, 1.0)))
    if changed and any(r.estimator is not None for r in results.values()):
        notes.append("library versions differ from the session's (" + "; ".join(changed) +
                     "); numbers may differ in the last digits")
    return results, notes


# -- into the window's state -------------------------------------------------------------------------

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


def interrupted_notes(session: Session) -> list[str]:
    """One line per set of files whose writing into the session's folder was interrupted
    (:mod:`app.writing`'s markers): the files beside the session may not be the ones it names."""
    from app.writing import MARKER_SUFFIX, incomplete_sets
    base = session_dir(session)
    return [f"{os.path.join(base, what + MARKER_SUFFIX)}: the writing of {what} into this folder was interrupted; "
            f"its files there may be incomplete or not those the session names" for what in
            (incomplete_sets(base) if base else [])]


def reopen_job(path, progress=None, *, data_path: str | None = None, search_dirs: Iterable[str] = (),
               trusted: Iterable[str] = (), use_stored: bool = True, bigdata: Mapping | None = None,
               limits: Mapping | None = None):
    """The whole reopening as one background job (no Qt): load, verify, reload or re-run.

    Returns ``(session, dataset, results, notes)`` to pass to :func:`apply_to_state` in the GUI
    thread, or :class:`NeedsData` when the data file is missing, has changed or lies outside the
    session's folder (``data_path`` is then the file the user located or confirmed; ``trusted``
    files, such as the window's recent files, need no confirmation). Other problems raise
    :class:`SessionError` / ``ValueError``. ``bigdata``: keyword arguments of
    :func:`robustcore.bigdata.settings` for runs fitted again on data opened out of core (the
    window's memory budget and scheduler, and the session's stores folder for large results).
    ``limits``:
    the user's own loader limits (:mod:`.limits`; by default the policy's), which a session's
    options never raise (the notes say when a session asked for more).
    """
    session = load_session(path)
    lowered = interrupted_notes(session)
    try:
        dataset = resolve_dataset(session, search_dirs=search_dirs, path=data_path, trusted=trusted,
                                  limits=limits, notes=lowered)
    except (DataMissingError, DataMismatchError) as exc:
        return NeedsData(session, exc)
    try:
        if bigdata and is_lazy_dataset(dataset):
            from robustcore.bigdata import settings
            with settings(**bigdata):
                results, notes = rerun(session, dataset, progress, use_stored=use_stored)
        else:
            results, notes = rerun(session, dataset, progress, use_stored=use_stored)
    except DataMismatchError as exc:   # out of core: the content's digest, found by the first pass
        if hasattr(dataset, "close"):
            dataset.close()
        return NeedsData(session, exc)
    return session, dataset, results, lowered + notes

