"""The data controller: what data the window holds, and where it came from.

It owns the loading :class:`~app.tasks.TaskRunner` and every way data comes in: a file (the
Open dialog, a drop, a recent file), a demo, a file read out of core after the offer for files
too large for memory, and a session reopened (:func:`app.session.reopen_job` in the background,
then :func:`app.session.apply_to_state`). It keeps the recent files and the session file that
Save writes to, and makes a loaded data set current (which cancels a fit in flight: its result
would be stale).

Loads run in the worker process (parsing and decoding hold the GIL, which would freeze the
window), or in a worker thread with ``RSS_FIT_ISOLATION=thread``: the run controller decides.
The file dialogs that lead here are the File menu's callbacks (:mod:`app.actions.file`).
"""
from __future__ import annotations

import os
from collections.abc import Callable

from PySide6.QtCore import QObject, Signal

from . import mapped_tables
from .fit_process import LoadJob, run_job, shared_pool
from .jobs import LoadTag, SessionTag
from .out_of_core import LazyOffer, bigdata_settings, results_dir, working_dir
from .tasks import Job, TaskRunner
from .warm_up import for_result, for_window, import_here

__all__ = ["DataController"]


class DataController(QObject):
    """Loads, sessions, the out-of-core offer and recent files; see the module doc.

    Signals: ``loaded(object)`` a data set became current; ``failed(str)`` a file, demo or
    session could not be loaded; ``offered(object)`` a file is better read out of core (an
    :class:`app.out_of_core.LazyOffer`; the dialog is ``lazy_offer``); ``recentChanged()``.
    """

    loaded = Signal(object)
    failed = Signal(str)
    offered = Signal(object)
    recentChanged = Signal()

    def __init__(self, window, *, state, settings, runs, dataset_panel, method_panel, views,
                 status: Callable[..., None], show_error: Callable[..., object]):
        super().__init__(window)
        self.window = window          # the parent of the dialogs this controller opens
        self.state, self.settings, self.runs = state, settings, runs
        self.dataset_panel, self.method_panel, self.views = dataset_panel, method_panel, views
        self.status, self.show_error = status, show_error
        # The session file that Save writes to: set by Save as and by opening a session, and
        # forgotten when other data is loaded, so Save never writes one data set over another's.
        self.session_path: str | None = None
        self.last_load = None    # the latest fit_process.Loaded (which process loaded it)
        self.lazy_offer = None   # the "Open out of core" offer being shown
        self.loader = TaskRunner(window)
        ld = self.loader
        ld.finished.connect(self._on_finished)
        ld.failed.connect(self._on_failed)
        ld.busyChanged.connect(self._on_busy)
        ld.progress.connect(lambda job, f, m: self.dataset_panel.set_loading(
            f"Loading {job.tag.what}… {m}".rstrip(" …") + "…"))

    # -- files and demos --------------------------------------------------------------------
    def open_path(self, path: str, **options) -> Job:
        """Load a file (or image folder) in the background; the one path for dialog, drop and recent.

        A file opened without options that is better read out of core (HDF5, Zarr, or larger
        than the memory budget) is not loaded: the window offers to open it out of core."""
        path = os.path.abspath(os.fspath(path))
        budget = None if options else self.settings.memory_budget()
        return self._start_load(LoadJob(path=path, options=dict(options), budget=budget, spill=self._spill()),
                                LoadTag(what=os.path.basename(path) or path, path=path))

    @staticmethod
    def _spill() -> tuple | None:
        """Where a large loaded table goes, to be mapped rather than held (app.mapped_tables)."""
        try:
            return working_dir(), mapped_tables.SPILL_MIN_BYTES
        except OSError:   # no folder can be written: the table stays in memory
            return None

    def open_out_of_core(self, path: str, **options) -> Job:
        """Open a table (HDF5, Zarr, .npy) or a video out of core: only its shape and chunking
        are read; methods that run out of core read it a block at a time."""
        path = os.path.abspath(os.fspath(path))
        return self._start_load(LoadJob(path=path, options=dict(options), lazy=True),
                                LoadTag(what=os.path.basename(path) or path, path=path))

    def load_demo(self, name: str) -> Job:
        return self._start_load(LoadJob(demo=name), LoadTag(what=f"demo '{name}'", demo=name))

    def reload_with_truth(self, options: dict):
        """Load the current file again with the loader options that choose its known outliers
        (the Data panel's Known outliers box): the results are dropped, as with any reload."""
        ds = self.state.dataset
        if ds is None or not ds.provenance.path:
            return None
        opts = {**(ds.provenance.options or {}), **options}
        opts = {k: v for k, v in opts.items() if v is not None and k != "format"}
        return self.open_path(ds.provenance.path, format=ds.provenance.loader, **opts)

    def open_recent(self, path: str) -> None:
        if not os.path.exists(path):
            self.settings.remove_recent_file(path)
            self.recentChanged.emit()
            self.show_error("File not found", f"{path} no longer exists; it was removed from the recent files.")
            return
        self.open_path(path)

    def clear_recent(self) -> None:
        self.settings.clear_recent_files()
        self.recentChanged.emit()

    def cancel_load(self) -> None:
        """Stop loading (the data set shown stays as it was)."""
        job = self.loader.cancel()
        if job is not None:
            self.status(f"Cancelled loading {job.tag.what}", 5000)

    def _on_busy(self, busy: bool) -> None:
        if not busy:
            self.dataset_panel.set_loading(None)

    def _start_load(self, job: LoadJob, tag: LoadTag) -> Job:
        load = shared_pool().load if self.runs.isolation == "process" else run_job
        method = self.method_panel.method()   # what a Run on this data would fit

        def fn(progress):
            loaded = load(job, progress)
            if method is not None:   # its result's estimator, while the user waits on the load
                for_result(method)
            # A Run pins its seed with app.session: imported on the GUI thread at the first Run,
            # 48-62 ms of its CPU, the largest stop of a 20,000-row arrival.
            import_here("app.session")
            return loaded
        return self._submit(fn, tag)

    def _submit(self, fn, tag) -> Job:
        self.dataset_panel.set_loading(f"Loading {tag.what}…")
        self.status(f"Loading {tag.what}…")
        return self.loader.submit(fn, tag=tag)

    # -- out of core ------------------------------------------------------------------------
    def _offer_out_of_core(self, job: Job, offer: LazyOffer) -> None:
        from .panels.out_of_core_dialogs import offer_out_of_core
        if self.lazy_offer is not None:
            self.lazy_offer.close()
        load = (lambda: self._start_load(LoadJob(path=offer.path, options=dict(offer.options),
                                                 spill=self._spill()), job.tag)) \
            if offer.can_load else None
        self.lazy_offer = offer_out_of_core(self.window, offer,
                                            lambda: self.open_out_of_core(offer.path, **offer.options),
                                            load, self.settings.memory_budget())
        self.status(f"{job.tag.what}: open it out of core?", 8000)
        self.offered.emit(offer)

    def show_out_of_core(self) -> None:
        """The Data panel's out-of-core line: budget, scheduler, where large results go."""
        self.dataset_panel.set_out_of_core(self.settings.memory_budget(), self.settings.scheduler(),
                                           results_dir(self.session_path))

    # -- sessions ---------------------------------------------------------------------------
    def open_session(self, path: str, data_path: str | None = None) -> Job:
        """Reopen a session file: data verified by hash, fits reloaded or re-run, in the background.

        When the session's data file is missing, changed or outside the session's folder, the
        user is offered to point to it or confirm it (``data_path``), and the session is opened
        again with that file. Files the user opened before (recent files) need no confirmation.
        """
        path = os.path.abspath(os.fspath(path))
        trusted = self.settings.recent_files()
        # Runs fitted again out of core: the window's budget and scheduler, results beside the session.
        bigdata = bigdata_settings(self.settings.memory_budget(), self.settings.scheduler(), results_dir(path))

        def job(progress):
            from . import session as S
            return for_window(S.reopen_job(path, progress, data_path=data_path, trusted=trusted, bigdata=bigdata),
                              progress)

        return self._submit(job, SessionTag(what=f"session {os.path.basename(path)}", session=path))

    def save_session(self, path: str) -> None:
        """Write the session (data reference, runs, view, selection) to ``path``; it becomes the
        file Save writes to. Errors propagate (the File menu shows them)."""
        from . import session as S
        sess = S.session_from_state(self.state, view=self.views.current_view_name())
        S.save_session(path, sess, results=self.state.results, dataset=self.state.dataset)
        self.settings.remember_session(path)
        self.session_path = path
        self.show_out_of_core()   # results too large for memory now go beside the session

    def _offer_locate(self, job: Job, error) -> None:
        """Say why the session's data cannot be used and offer to point to the file (non-blocking)."""
        from .actions.file import file_filter
        from .session_dialogs import offer_data
        self.window.error_box = offer_data(self.window, error,
                                           lambda found: self.open_session(job.tag.session, data_path=found),
                                           self.settings.last_directory(), file_filter())
        self.status(f"Could not open {job.tag.what}", 8000)
        self.failed.emit(str(error))

    def _apply_session(self, job: Job, payload) -> None:
        from . import session as S
        if isinstance(payload, S.NeedsData):
            self._offer_locate(job, payload.error)
            return
        sess, ds, results, notes = payload
        self.runs.cancel_for("a session was opened")
        view = S.apply_to_state(sess, self.state, ds, results)
        self.runs.log_reopened(os.path.basename(job.tag.session), ds.name, results)
        for rec in sess.runs:
            form = self.method_panel.form(rec.method)
            if form is not None:
                form.set_values(rec.params)
        if sess.current_method:
            self.method_panel.set_method(sess.current_method)
        name = (view or {}).get("name") if isinstance(view, dict) else None
        if name:
            try:
                self.views.show_view(name)
            except ValueError:  # a view that no longer exists, or has nothing to show: not fatal
                pass
        self.session_path = job.tag.session
        self.show_out_of_core()   # new results too large for memory go beside this session
        try:
            self.settings.remember_session(job.tag.session)
        except Exception:  # noqa: BLE001 - remembering is a convenience: never fail the reopen for it
            pass
        self.status("; ".join(notes) or f"Opened {job.tag.what}", 15000)
        self.loaded.emit(ds)

    # -- the answer -------------------------------------------------------------------------
    def _on_finished(self, job: Job, payload) -> None:
        if isinstance(job.tag, SessionTag):
            self._apply_session(job, payload)
            return
        if isinstance(payload, LazyOffer):
            self._offer_out_of_core(job, payload)
            return
        self.last_load = payload
        path = job.tag.path
        if path:
            self.settings.add_recent_file(path)
            self.settings.set_last_directory(path)
            self.recentChanged.emit()
        self.status(f"Loaded {job.tag.what} in {job.elapsed:.2f} s", 8000)
        self.set_dataset(payload.dataset, payload.fingerprint)

    def _on_failed(self, job: Job, message: str, details: str) -> None:
        self.status(f"Could not load {job.tag.what}", 8000)
        self.show_error(f"Could not load {job.tag.what}", message, details)
        self.failed.emit(message)

    def set_dataset(self, ds, fingerprint: str | None = None) -> None:
        """Make ``ds`` current: a running fit is cancelled, since its result would be stale.

        ``fingerprint`` is ``ds.fingerprint()`` when already known (it is computed otherwise, once).
        """
        self.runs.cancel_for("the data set changed during the fit")
        self.session_path = None
        old = self.state.dataset
        self.state.set_dataset(ds, fingerprint)
        if old is not None and old is not ds:
            mapped_tables.forget(old)   # its file, if its table was mapped
        self.loaded.emit(ds)
