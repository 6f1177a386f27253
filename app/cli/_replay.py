"""``robust-studio replay``: a saved session (or a run.json) fitted again and compared with what it
saved, for data in memory or out of core alike.

What is compared, per run: the typed numbers the session recorded (``facts``; sessions written
before them: the summary in words), the results saved beside it (the session's results file, or
the arrays file and, out of core, the results store a command-line run wrote), a block of rows at
a time for stores. Saved results that exist but cannot be read (damaged, refused by the session's
path rules) are said; with ``--check`` a replay that could not compare what the session saved
fails instead of passing on what was left.
"""
from __future__ import annotations

import hashlib
import math
import sys
from dataclasses import dataclass, field

from robustcore.datasets import is_lazy_dataset

__all__ = ["Saved", "saved_numbers", "differences", "verdict", "EXIT_OK", "EXIT_FAILED"]

EXIT_OK, EXIT_FAILED = 0, 1

# Summary entries (sessions without facts) that say where a run put its files: never compared.
_WHERE_KEYS = ("results in",)


@dataclass
class Saved:
    """What a session saved of one run, read before anything is overwritten."""

    result: object = None            # the session's own stored RunResult
    exported: dict | None = None     # the arrays file a command-line run wrote: name -> array
    store: dict | None = None        # its results store (out of core): name -> Zarr array
    unreadable: list = field(default_factory=list)   # saved results that exist but were not read

    @property
    def arrays(self) -> bool:
        return self.result is not None or self.exported is not None or self.store is not None


def _exported(session, rec) -> tuple[dict | None, str | None]:
    """The arrays file a run exported beside its run.json, if it is still the one it wrote (a
    plain name in the run.json's own folder: the session's path rules); (None, why) when it
    exists but cannot be used."""
    from app import session as S
    from robustcore.datasets import DEFAULT_MAX_BYTES, read_npz
    st = rec.stored or {}
    if not isinstance(st, dict) or st.get("kind") != "export" or not session.source:
        return None, None
    try:
        path, data = S.read_side(session, st.get("file"), "the exported arrays")
        if hashlib.sha256(data).hexdigest() != st.get("sha256"):
            return None, f"the exported arrays changed since the run wrote them ({path}: its sha256 differs)"
        arrays = read_npz(data, DEFAULT_MAX_BYTES, f"exported arrays {path}", error=S.SessionError)
        return {k: v for k, v in arrays.items() if k != "metadata"}, None
    except FileNotFoundError:
        # run.json names the file and its sha256: the run wrote it, and it has gone since
        return None, f"the exported arrays {st.get('file')!r:.80} that run.json names (with their sha256) are missing"
    except S.SessionError as exc:
        return None, f"the exported arrays were not read: {exc}"


def _store(session, rec) -> tuple[dict | None, str | None]:
    """name -> Zarr array of the per-row results a command-line run wrote beside its run.json,
    if the store is still what run.json recorded (its manifest)."""
    from app import session as S
    from app.session.stores import StoreError, open_store
    st = rec.stored.get("store") if isinstance(rec.stored, dict) else None
    if not isinstance(st, dict) or not S.session_dir(session):
        return None, None
    try:
        group = open_store(S.session_dir(session), st.get("name"), st)
        return {k: group[k] for k in group.array_keys()}, None
    except FileNotFoundError:
        return None, f"the saved per-sample results {st.get('name')!r:.80} that run.json names are missing"
    except (StoreError, OSError) as exc:
        return None, f"the saved per-sample results were not read: {exc}"


def saved_numbers(session, dataset, con) -> dict:
    """method -> :class:`Saved`, read before the replay writes anything."""
    from app import session as S
    out = {}
    for rec in session.runs:
        saved = Saved()
        skipped: list[str] = []
        if not is_lazy_dataset(dataset):
            saved.result = S.stored_result(session, rec, dataset, skipped)
        saved.unreadable += [s.split(": ", 1)[-1].replace("; the run is fitted again", "") for s in skipped]
        for read in (_exported, _store):
            got, why = read(session, rec)
            if why:
                saved.unreadable.append(why)
            elif got is not None:
                if read is _exported:
                    saved.exported = got
                else:
                    saved.store = got
        for why in saved.unreadable:
            con.warn(f"{rec.method}: {why}; they are not compared")
        out[rec.method] = saved
    return out


def _summary_diffs(old: dict, new: dict, rtol: float) -> list[str]:
    """Sessions written before typed numbers existed: their summary, label by label."""
    diffs = []
    for k, a in old.items():
        if k in _WHERE_KEYS:
            continue
        b = new.get(k)
        if isinstance(a, bool) or isinstance(b, bool) or not isinstance(a, (int, float)):
            same = a == b or str(a) == str(b)
        elif not isinstance(b, (int, float)):
            same = False
        else:
            same = math.isclose(float(a), float(b), rel_tol=rtol, abs_tol=1e-12)
        if not same:
            diffs.append(f"summary '{k}': saved {a!r}, now {b!r}")
    return diffs


def differences(rec, res, saved: Saved, dataset, rtol: float) -> tuple[list[str], bool]:
    """(the differences between what ``rec`` saved and the new result ``res``, whether any
    number was compared at all)."""
    from app import session as S

    from ._outputs import npz_fields, split_rows
    if rec.facts:
        diffs = [f"fact {d}" for d in S.compare_facts(rec.facts, res.facts(), rtol=rtol)]
    else:
        diffs = _summary_diffs(rec.summary, res.summary, rtol)
    compared = bool(rec.facts or rec.summary)
    if saved.result is not None:
        diffs += S.compare_results(saved.result, res, rtol=rtol)
    if saved.exported is not None:
        diffs += [f"array {d}" for d in S.compare_arrays(saved.exported, npz_fields(res, dataset), rtol=rtol)]
    if saved.store is not None:
        per_row, _ = split_rows(res, dataset.n_samples)
        diffs += [f"per-sample {d}" for d in S.compare_arrays(saved.store, per_row, rtol=rtol)]
    return diffs, compared or saved.arrays


def verdict(args, con, problems: list[str], incomplete: list[str], arrays_compared: bool) -> int:
    """Say whether a replay reproduced the numbers; the exit code (1 with --check when it did not,
    or when it could not compare what the session saved)."""
    if problems:
        print("replay did not reproduce the saved numbers:", file=sys.stderr)
        for p in problems:
            print(f"  {p}", file=sys.stderr)
        return EXIT_FAILED if args.check else EXIT_OK
    if incomplete:
        print("replay could not compare everything the session saved:", file=sys.stderr)
        for p in incomplete:
            print(f"  {p}", file=sys.stderr)
        if args.check:
            print("replay --check fails: a check that did not compare the saved numbers cannot pass",
                  file=sys.stderr)
            return EXIT_FAILED
        return EXIT_OK
    con.note("replay reproduced the saved numbers" + (" and arrays" if arrays_compared else
                                                       " (no arrays were saved to compare)"))
    return EXIT_OK

