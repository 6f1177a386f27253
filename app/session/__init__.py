"""Session files: one JSON description of a run that the window reopens and the command line replays.

A session names the data set, each run's method, validated parameters and seed, the library
versions, the current view and the selection. Numbers are reproduced by re-running the fits
through :mod:`robustcore.methods`; optionally the results themselves are stored beside the
session (``<stem>.results.npz``, and results too large for memory as Zarr stores in the folder
``<stem>.lazy``) so reopening is instant, and data that exists only in memory is
stored beside it as ``<stem>.data.npz``.

The package separates the FORMAT from RESTORING it (neither imports Qt):

- :mod:`.schema` -- the types, JSON writing and validated reading, migrations;
- :mod:`.files` -- the session file and its side files on disk (atomic writes, bounded reads,
  side files confined to the session's folder);
- :mod:`.reopen` -- finding and verifying the data, reloading or re-running the fits, and
  putting the result into the window's :class:`app.state.AppState` (the one reopen path);
- :mod:`.stores` -- out-of-core results (Zarr stores) saved beside the session, verified by a
  manifest and opened lazily on reopening;
- :mod:`.compare` -- comparing two runs' numbers (replay checks).

"Reopen the last session at start" is a window setting (:class:`app.settings.Settings`).

The window's dialogs for a missing, changed or outside data file are in
:mod:`app.session_dialogs`.

Typical use::

    s = session_from_state(state, view="scatter")
    save_session("work.rss.json", s, results=state.results, dataset=state.dataset)
    ...
    job = reopen_job("work.rss.json")             # SessionError on a bad file
    if isinstance(job, NeedsData): ...            # ask the user, then reopen_job(..., data_path=)
    session, dataset, results, notes = job
    view = apply_to_state(session, state, dataset, results)
"""
from .compare import compare_arrays, compare_facts, compare_results
from .files import load_session, load_snapshot, read_side, save_session, session_dir, side_name, side_path
from .reopen import NeedsData, Reopened, apply_to_state, reopen_job, rerun, resolve_dataset, stored_result
from .schema import (DATA_SUFFIX, DEFAULT_SEED, FORMAT_NAME, RESULTS_SUFFIX, SCHEMA_VERSION, SEED_PARAM,
                     SESSION_SUFFIX, STORES_SUFFIX, DataMismatchError, DataMissingError, DataNeedsConfirmation,
                     DatasetRef, RunRecord,
                     Session, SessionError, library_versions, pin_seed, run_record, seed_param, session_from_json,
                     session_from_results, session_from_state, session_to_json)

__all__ = [
    "SCHEMA_VERSION", "SESSION_SUFFIX", "RESULTS_SUFFIX", "DATA_SUFFIX", "STORES_SUFFIX", "FORMAT_NAME",
    "SEED_PARAM", "DEFAULT_SEED",
    "SessionError", "DataMissingError", "DataNeedsConfirmation", "DataMismatchError",
    "DatasetRef", "RunRecord", "Session",
    "library_versions", "seed_param", "pin_seed", "run_record", "session_from_results",
    "session_from_state", "save_session", "load_session", "load_snapshot", "session_to_json", "session_from_json",
    "session_dir", "side_name", "side_path", "read_side",
    "resolve_dataset", "stored_result", "reopen_job", "NeedsData", "Reopened", "rerun",
    "apply_to_state", "compare_results", "compare_arrays", "compare_facts",
]
