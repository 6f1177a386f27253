"""The main window: menus, docks and status bar, wired to the state, the worker and the panels.

Everything slow (loading a file or a demo, fitting a method) goes through a :class:`TaskRunner`,
so the window never waits on numerics. A fit's result is stored only if, when it arrives, the
data set and that method's parameters are still the ones it was started with; otherwise it is
discarded and the log says why.
"""
from __future__ import annotations

import os
import sys
import time

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QDockWidget, QFileDialog, QLabel, QMainWindow, QMessageBox

from robustcore.methods import METHODS

from .actions import build_actions, build_menus
from .window_exports import ExportSlots
from .fit_process import FitJob, LoadJob, run_job, shared_pool, warm_up
from .jobs import FitTag, LoadTag, SessionTag
from .panels import DatasetPanel, LogEntry, MethodPanel, RunLog
from .settings import Settings
from .state import AppState
from .tasks import Job, TaskRunner

__all__ = ["MainWindow", "file_filter"]

NARROW_WINDOW = 1100  # logical pixels: below this the side panels share one column


def _datasets_api():
    """robustcore.datasets, imported when first needed (it pulls in scipy and the loaders)."""
    import robustcore.datasets as d
    return d


def supported_formats() -> list[tuple[str, list[str]]]:
    return [(str(label), [str(p) for p in pats]) for label, pats in _datasets_api().formats()]


def file_filter(formats=None) -> str:
    """The Open dialog's filter: every supported pattern first, then one entry per format."""
    formats = supported_formats() if formats is None else formats
    every = sorted({p for _, pats in formats for p in pats})
    parts = [f"All supported data ({' '.join(every)})"]
    parts += [f"{label} ({' '.join(pats)})" for label, pats in formats]
    parts.append("All files (*)")
    return ";;".join(parts)


def _demo_list() -> dict:
    return dict(_datasets_api().demos())


class MainWindow(ExportSlots, QMainWindow):
    """Robust Subspace Studio's window.

    Signals (for scripts and tests)
    -------
    datasetLoaded(object)          a data set became current.
    loadFailed(str)                a file or demo could not be loaded (message).
    runFinished(object)            a RunResult was stored in the state.
    runFailed(str)                 a fit raised (message); a dialog shows the details.
    runCancelled()                 the current fit was cancelled.
    runDiscarded(str)              a fit finished but its result was dropped (reason).
    idle()                         no fit is running any more (after any of the above).
    videoExported(list)            a decomposition video was written (its files).
    outOfCoreOffered(object)       a file is better read out of core (an out_of_core.LazyOffer);
                                   the offer dialog is ``self.lazy_offer``.
    """

    datasetLoaded = Signal(object)
    loadFailed = Signal(str)
    runFinished = Signal(object)
    runFailed = Signal(str)
    runCancelled = Signal()
    runDiscarded = Signal(str)
    idle = Signal()
    videoExported = Signal(list)
    outOfCoreOffered = Signal(object)

    def __init__(self, state: AppState | None = None, settings: Settings | None = None,
                 methods: dict | None = None, restore: bool = True, isolation: str | None = None):
        super().__init__()
        # "process": fits run in a worker process (default; see app.fit_process for why),
        # "thread": in a worker thread of this process (RSS_FIT_ISOLATION=thread).
        self.isolation = isolation or os.environ.get("RSS_FIT_ISOLATION", "process")
        if self.isolation not in ("process", "thread"):
            raise ValueError(f"isolation must be 'process' or 'thread'; got {self.isolation!r}")
        # The session file that Save writes to: set by Save as and by opening a session, and
        # forgotten when other data is loaded, so Save never writes one data set over another's.
        self.session_path: str | None = None
        self.setWindowTitle("Robust Subspace Studio")
        self.setObjectName("main_window")
        self.state = state or AppState(self)
        self.settings = settings or Settings()
        self.methods = dict(METHODS if methods is None else methods)
        self.runner = TaskRunner(self)
        self.loader = TaskRunner(self)
        self.warmer = TaskRunner(self)
        self.error_box: QMessageBox | None = None
        self.notices: list[str] = []
        self.last_load = None  # the latest fit_process.Loaded (which process loaded it)
        self.example = None    # the Help > Examples entry being played
        self._fitted_defaults: set = set()  # (data version, method) whose defaults were fitted to the data
        self.help_dialog = None
        self.exporter = TaskRunner(self)  # video export: long, cancellable, off the GUI thread
        self.lazy_offer = None   # the "Open out of core" offer being shown

        self._build_central()
        self._build_docks()
        self.actions_by_key = build_actions(self)
        self.menus = build_menus(self, self.actions_by_key, {
            "recent": self._build_recent_menu, "demos": self._build_demos_menu,
            "docks": self._build_dock_toggles, "examples": self._build_examples_menu})
        self._init_reopen_last()
        self._build_status()
        self._connect()
        self.setAcceptDrops(True)
        self.resize(1360, 860)
        if restore:
            self._restore_settings()
        self._on_method_changed(self.method_panel.method_name())
        self._on_dataset(self.state.dataset)
        self._first_show = True

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if self._first_show:
            self._first_show = False
            if self.settings.window_state() is None:
                self._size_docks()
            self.warmer.submit(lambda progress: warm_up(lambda: progress(0.0, "") is False))
            if self.isolation == "process":
                try:
                    shared_pool().warm()
                except OSError as exc:  # e.g. no permission to start processes
                    self.isolation = "thread"
                    self.statusBar().showMessage(f"Fits run in this process ({exc})", 10000)

    def _size_docks(self) -> None:
        """Side panels take about a fifth of the width each at most, the log a sixth of the
        height. In a narrow window (a small screen, or 200 % scaling: 1920 x 1080 is 960 x 540)
        the Data and Method panels share one column as tabs, so the views keep room to be read."""
        w, h = max(self.width(), 640), max(self.height(), 480)
        if w < NARROW_WINDOW:
            self.removeDockWidget(self.method_dock)
            self.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, self.method_dock)
            self.method_dock.show()
            self.tabifyDockWidget(self.dataset_dock, self.method_dock)
            self.method_dock.raise_()
            self.resizeDocks([self.method_dock], [int(min(330, 0.3 * w))], Qt.Orientation.Horizontal)
        else:
            self.resizeDocks([self.dataset_dock, self.method_dock], [int(min(350, 0.22 * w)), int(min(320, 0.22 * w))],
                             Qt.Orientation.Horizontal)
        self.resizeDocks([self.log_dock], [int(min(150, h / 6))], Qt.Orientation.Vertical)

    # == construction ================================================================================
    def _build_central(self) -> None:
        from .views import ResultViews
        self.views = ResultViews(self.state)
        self.setCentralWidget(self.views)

    def _dock(self, title: str, name: str, widget, area) -> QDockWidget:
        dock = QDockWidget(title, self)
        dock.setObjectName(name)
        dock.setWidget(widget)
        dock.setFeatures(QDockWidget.DockWidgetFeature.DockWidgetMovable
                         | QDockWidget.DockWidgetFeature.DockWidgetFloatable
                         | QDockWidget.DockWidgetFeature.DockWidgetClosable)
        self.addDockWidget(area, dock)
        return dock

    def _build_docks(self) -> None:
        self.dataset_panel = DatasetPanel(_demo_list())
        self.method_panel = MethodPanel(self.methods)
        self.run_log = RunLog()
        self.dataset_dock = self._dock("Data", "dock_data", self.dataset_panel,
                                       Qt.DockWidgetArea.LeftDockWidgetArea)
        self.method_dock = self._dock("Method", "dock_method", self.method_panel,
                                      Qt.DockWidgetArea.RightDockWidgetArea)
        self.log_dock = self._dock("Run log", "dock_log", self.run_log,
                                   Qt.DockWidgetArea.BottomDockWidgetArea)

    def _init_reopen_last(self) -> None:
        from .session import reopen_last_enabled
        self.act_reopen_last.setChecked(reopen_last_enabled())

    def _build_recent_menu(self, menu) -> None:
        self.recent_menu = menu.addMenu("Open &recent")
        self.recent_menu.setObjectName("menu_recent")
        self._rebuild_recent_menu()

    def _build_demos_menu(self, menu) -> None:
        self.demos_menu = menu
        self.demo_actions: dict[str, QAction] = {}
        for name, desc in _demo_list().items():
            act = QAction(f"{name}  —  {desc}", self)
            act.setToolTip(desc)
            act.setStatusTip(desc)
            act.setObjectName(f"demo_{name}")
            act.triggered.connect(lambda checked=False, n=name: self.load_demo(n))
            menu.addAction(act)
            self.demo_actions[name] = act

    def _build_dock_toggles(self, menu) -> None:
        for dock in (self.dataset_dock, self.method_dock, self.log_dock):
            menu.addAction(dock.toggleViewAction())

    def _build_examples_menu(self, menu) -> None:
        from .examples import EXAMPLES
        sub = menu.addMenu("&Examples")
        sub.setObjectName("menu_examples")
        sub.setToolTipsVisible(True)
        self.example_actions: dict[str, QAction] = {}
        for ex in EXAMPLES:
            act = sub.addAction(ex.title)
            act.setToolTip(ex.blurb)
            act.setStatusTip(ex.blurb)
            act.triggered.connect(lambda checked=False, e=ex: self.open_example(e))
            self.example_actions[ex.key] = act

    def _build_status(self) -> None:
        self.data_status = QLabel("No data")
        self.statusBar().addPermanentWidget(self.data_status)

    def _connect(self) -> None:
        st = self.state
        st.datasetChanged.connect(self._on_dataset)
        self.dataset_panel.openRequested.connect(self.open_dialog)
        self.dataset_panel.demoRequested.connect(self.load_demo)
        self.dataset_panel.optionsRequested.connect(self.reload_with_options)
        self.dataset_panel.truthRequested.connect(self.reload_with_truth)
        self.dataset_panel.outOfCoreSettingsRequested.connect(self.out_of_core_settings_dialog)
        mp = self.method_panel
        mp.runRequested.connect(self.run)
        mp.cancelRequested.connect(self.cancel)
        mp.methodChanged.connect(self._on_method_changed)
        mp.paramsChanged.connect(self._on_params_changed)
        mp.helpRequested.connect(self.show_method_help)
        ex = self.exporter
        ex.progress.connect(lambda job, f, m: self.statusBar().showMessage(f"Exporting video… {m}"))
        ex.finished.connect(self._on_video_written)
        ex.failed.connect(lambda job, msg, details: self._show_error("Export video failed", msg, details))
        r = self.runner
        r.busyChanged.connect(self._on_busy)
        r.progress.connect(self._on_progress)
        r.partial.connect(self._on_run_partial)
        r.finished.connect(self._on_run_finished)
        r.failed.connect(self._on_run_failed)
        r.cancelled.connect(self._on_run_cancelled)
        ld = self.loader
        ld.finished.connect(self._on_load_finished)
        ld.failed.connect(self._on_load_failed)
        ld.busyChanged.connect(self._on_load_busy)
        ld.progress.connect(self._on_load_progress)
        self.dataset_panel.cancelLoadRequested.connect(self.cancel_load)

    # == settings =====================================================================================
    def _restore_settings(self) -> None:
        s = self.settings
        geo = s.geometry()
        if geo is not None:
            self.restoreGeometry(geo)
        ws = s.window_state()
        if ws is not None:
            self.restoreState(ws)
        self.notices = list(s.problems)
        for name in self.method_panel.built_forms():
            self._restore_form(name, announce=False)
        self.method_panel.formCreated.connect(self._restore_form)
        last = s.last_method()
        if last:
            self.method_panel.set_method(last)
        if self.notices:
            self.statusBar().showMessage("Settings: " + "; ".join(self.notices), 20000)

    def _restore_form(self, name: str, announce: bool = True) -> None:
        """Fill a method's new form with the values saved last time (those still valid)."""
        form = self.method_panel.built_forms()[name]
        values, messages = self.settings.restore_params(name, form.params)
        form.set_values(values)
        self.notices.extend(messages)
        if announce and messages:
            self.statusBar().showMessage("Settings: " + "; ".join(messages), 20000)

    def save_settings(self) -> None:
        s = self.settings
        s.set_window(self.saveGeometry(), self.saveState())
        for name, form in self.method_panel.built_forms().items():
            if form.is_valid():
                s.set_method_params(name, form.values())
        if self.method_panel.method_name():
            s.set_last_method(self.method_panel.method_name())
        s.sync()

    def _rebuild_recent_menu(self) -> None:
        self.recent_menu.clear()
        files = self.settings.recent_files()
        for i, path in enumerate(files):
            label = f"&{i + 1}  {os.path.basename(path) or path}" if i < 9 else os.path.basename(path)
            act = self.recent_menu.addAction(label)
            act.setToolTip(path)
            act.setStatusTip(path)
            act.triggered.connect(lambda checked=False, p=path: self._open_recent(p))
        if files:
            self.recent_menu.addSeparator()
            clear = self.recent_menu.addAction("Clear list")
            clear.triggered.connect(self._clear_recent)
        self.recent_menu.setToolTipsVisible(True)
        self.recent_menu.setEnabled(bool(files))

    def _clear_recent(self) -> None:
        self.settings.clear_recent_files()
        self._rebuild_recent_menu()

    def _open_recent(self, path: str) -> None:
        if not os.path.exists(path):
            self.settings.remove_recent_file(path)
            self._rebuild_recent_menu()
            self._show_error("File not found", f"{path} no longer exists; it was removed from the recent files.")
            return
        self.open_path(path)

    # == data in ======================================================================================
    def open_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open data", self.settings.last_directory(),
                                              file_filter())
        if path:
            self.open_path(path)

    def open_with_options_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open data with options", self.settings.last_directory(),
                                              file_filter())
        if path:
            self.open_with_options(path)

    def reload_with_options(self) -> None:
        ds = self.state.dataset
        if ds is not None and ds.provenance.path:
            self.open_with_options(ds.provenance.path, ds.provenance.options)

    def reload_with_truth(self, options: dict):
        """Load the current file again with the loader options that choose its known outliers
        (the Data panel's Known outliers box): the results are dropped, as with any reload."""
        ds = self.state.dataset
        if ds is None or not ds.provenance.path:
            return None
        opts = {**(ds.provenance.options or {}), **options}
        opts = {k: v for k, v in opts.items() if v is not None and k != "format"}
        return self.open_path(ds.provenance.path, format=ds.provenance.loader, **opts)

    def open_with_options(self, path: str, values: dict | None = None):
        """Show the loader's options for ``path`` (non-blocking); Load reads the file with them."""
        from .panels.load_options import LoadOptionsDialog
        d = _datasets_api()
        try:
            loader = d.LOADERS[d.detect_format(path)]
        except d.LoadError as exc:  # unknown format, missing file...
            self._show_error(f"Could not open {os.path.basename(path)}", str(exc))
            return None
        dlg = LoadOptionsDialog(loader, path, values, self)
        dlg.setObjectName("load_options_dialog")
        dlg.accepted.connect(lambda: self.open_path(path, format=loader.name, **dlg.options()))
        dlg.open()
        self.options_dialog = dlg
        return dlg

    def open_folder_dialog(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Open a folder of images",
                                                self.settings.last_directory())
        if path:
            self.open_path(path)

    def open_path(self, path: str, **options) -> Job:
        """Load a file (or image folder) in the background; the one path for dialog, drop and recent.

        A file opened without options that is better read out of core (HDF5, Zarr, or larger
        than the memory budget) is not loaded: the window offers to open it out of core."""
        path = os.path.abspath(os.fspath(path))
        budget = None if options else self.settings.memory_budget()
        return self._start_load(LoadJob(path=path, options=dict(options), budget=budget),
                                LoadTag(what=os.path.basename(path) or path, path=path))

    def open_out_of_core(self, path: str, **options) -> Job:
        """Open a table (HDF5, Zarr, .npy) or a video out of core: only its shape and chunking
        are read; methods that run out of core read it a block at a time."""
        path = os.path.abspath(os.fspath(path))
        return self._start_load(LoadJob(path=path, options=dict(options), lazy=True),
                                LoadTag(what=os.path.basename(path) or path, path=path))

    def _offer_out_of_core(self, job: Job, offer) -> None:
        from .panels.out_of_core_dialogs import offer_out_of_core
        if self.lazy_offer is not None:
            self.lazy_offer.close()
        load = (lambda: self._start_load(LoadJob(path=offer.path, options=dict(offer.options)), job.tag)) \
            if offer.can_load else None
        self.lazy_offer = offer_out_of_core(self, offer, lambda: self.open_out_of_core(offer.path, **offer.options),
                                            load, self.settings.memory_budget())
        self.statusBar().showMessage(f"{job.tag.what}: open it out of core?", 8000)
        self.outOfCoreOffered.emit(offer)

    def out_of_core_settings_dialog(self):
        """Memory budget and Dask scheduler (non-blocking); the Data panel shows the new values."""
        from .panels.out_of_core_dialogs import OutOfCoreSettingsDialog
        dlg = OutOfCoreSettingsDialog(self.settings.memory_budget(), self.settings.scheduler(), self)
        dlg.setObjectName("out_of_core_settings")

        def apply():
            self.settings.set_memory_budget(dlg.budget)
            self.settings.set_scheduler(dlg.scheduler)
            self._show_out_of_core()
        dlg.accepted.connect(apply)
        dlg.open()
        self.out_of_core_dialog = dlg
        return dlg

    def _show_out_of_core(self) -> None:
        from .out_of_core import results_dir
        self.dataset_panel.set_out_of_core(self.settings.memory_budget(), self.settings.scheduler(),
                                           results_dir(self.session_path))

    def load_demo(self, name: str) -> Job:
        return self._start_load(LoadJob(demo=name), LoadTag(what=f"demo '{name}'", demo=name))

    def open_session(self, path: str, data_path: str | None = None) -> Job:
        """Reopen a session file: data verified by hash, fits reloaded or re-run, in the background.

        When the session's data file is missing, changed or outside the session's folder, the
        user is offered to point to it or confirm it (``data_path``), and the session is opened
        again with that file. Files the user opened before (recent files) need no confirmation.
        """
        from .out_of_core import bigdata_settings, results_dir
        path = os.path.abspath(os.fspath(path))
        trusted = self.settings.recent_files()
        # Runs fitted again out of core: the window's budget and scheduler, results beside the session.
        bigdata = bigdata_settings(self.settings.memory_budget(), self.settings.scheduler(), results_dir(path))

        def job(progress):
            from . import session as S
            return S.reopen_job(path, progress, data_path=data_path, trusted=trusted, bigdata=bigdata)

        return self._submit_load(job, SessionTag(what=f"session {os.path.basename(path)}", session=path))

    def _offer_locate(self, job: Job, error) -> None:
        """Say why the session's data cannot be used and offer to point to the file (non-blocking)."""
        from .session_dialogs import offer_data
        self.error_box = offer_data(self, error, lambda found: self.open_session(job.tag.session, data_path=found),
                                    self.settings.last_directory(), file_filter())
        self.statusBar().showMessage(f"Could not open {job.tag.what}", 8000)
        self.loadFailed.emit(str(error))

    def _toggle_reopen_last(self) -> None:
        from .session import set_reopen_last
        set_reopen_last(self.act_reopen_last.isChecked())

    def save_session_dialog(self, as_new: bool = False) -> None:
        """Save to the session last saved or opened (ask for a name the first time, or with as_new)."""
        from . import session as S
        if self.state.dataset is None:
            self._show_error("Save session", "Nothing to save yet: load a data set first.")
            return
        path = None if as_new else self.session_path
        if not path:
            base = os.path.join(self.settings.last_directory(), f"{self.state.dataset.name}{S.SESSION_SUFFIX}")
            path, _ = QFileDialog.getSaveFileName(self, "Save session", base, "Session (*.json)")
        if not path:
            return
        try:
            view = self.views.current_view_name()
            sess = S.session_from_state(self.state, view=view)
            S.save_session(path, sess, results=self.state.results, dataset=self.state.dataset)
            S.remember_session(path)
            self.session_path = path
            self._show_out_of_core()   # results too large for memory now go beside the session
        except Exception as exc:  # noqa: BLE001 - any failure to save is shown, the window stays
            import traceback
            self._show_error("Save session failed", str(exc), traceback.format_exc())
            return
        self.statusBar().showMessage(f"Saved session {path}", 8000)

    def save_session_as_dialog(self) -> None:
        self.save_session_dialog(as_new=True)

    def open_session_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open session", self.settings.last_directory(),
                                              "Session (*.json);;All files (*)")
        if path:
            self.open_session(path)

    def _apply_session(self, job: Job, payload) -> None:
        from . import session as S
        if isinstance(payload, S.NeedsData):
            self._offer_locate(job, payload.error)
            return
        sess, ds, results, notes = payload
        if self.runner.is_busy():
            self._log_job(self.runner.cancel(), "cancelled", "muted", detail="a session was opened")
        view = S.apply_to_state(sess, self.state, ds, results)
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
        self._show_out_of_core()   # new results too large for memory go beside this session
        try:
            S.remember_session(job.tag.session)
        except Exception:  # noqa: BLE001 - remembering is a convenience: never fail the reopen for it
            pass
        self.statusBar().showMessage("; ".join(notes) or f"Opened {job.tag.what}", 15000)
        self.datasetLoaded.emit(ds)

    def _start_load(self, job: LoadJob, tag: LoadTag) -> Job:
        """Load data off the GUI thread: in the worker process (parsing and decoding hold the GIL,
        which would freeze the window), or in a worker thread with RSS_FIT_ISOLATION=thread."""
        if self.isolation == "process":
            pool = shared_pool()
            return self._submit_load(lambda progress: pool.load(job, progress), tag)
        from .fit_process import run_job
        return self._submit_load(lambda progress: run_job(job, progress), tag)

    def _submit_load(self, fn, tag) -> Job:
        self.dataset_panel.set_loading(f"Loading {tag.what}…")
        self.statusBar().showMessage(f"Loading {tag.what}…")
        return self.loader.submit(fn, tag=tag)

    def cancel_load(self) -> None:
        """Stop loading (the data set shown stays as it was)."""
        job = self.loader.cancel()
        if job is not None:
            self.statusBar().showMessage(f"Cancelled loading {job.tag.what}", 5000)

    def _on_load_busy(self, busy: bool) -> None:
        self.act_cancel_load.setEnabled(busy)
        if not busy:
            self.dataset_panel.set_loading(None)

    def _on_load_progress(self, job: Job, fraction: float, message: str) -> None:
        self.dataset_panel.set_loading(f"Loading {job.tag.what}… {message}".rstrip(" …") + "…")

    def _on_load_finished(self, job: Job, payload) -> None:
        if isinstance(job.tag, SessionTag):
            self._apply_session(job, payload)
            return
        from .out_of_core import LazyOffer
        if isinstance(payload, LazyOffer):
            self._offer_out_of_core(job, payload)
            return
        self.last_load = payload
        path = job.tag.path
        if path:
            self.settings.add_recent_file(path)
            self.settings.set_last_directory(path)
            self._rebuild_recent_menu()
        self.statusBar().showMessage(f"Loaded {job.tag.what} in {job.elapsed:.2f} s", 8000)
        self.set_dataset(payload.dataset, payload.fingerprint)

    def _on_load_failed(self, job: Job, message: str, details: str) -> None:
        self.statusBar().showMessage(f"Could not load {job.tag.what}", 8000)
        self._show_error(f"Could not load {job.tag.what}", message, details)
        self.loadFailed.emit(message)

    def set_dataset(self, ds, fingerprint: str | None = None) -> None:
        """Make ``ds`` current: a running fit is cancelled, since its result would be stale.

        ``fingerprint`` is ``ds.fingerprint()`` when already known (it is computed otherwise, once).
        """
        if self.runner.is_busy():
            job = self.runner.cancel()
            self._log_job(job, "cancelled", "muted", detail="the data set changed during the fit")
        self.session_path = None
        self.state.set_dataset(ds, fingerprint)
        self.datasetLoaded.emit(ds)

    def _on_dataset(self, ds) -> None:
        from .out_of_core import method_restrictions
        self._show_out_of_core()
        self.dataset_panel.set_dataset(ds)
        self.method_panel.set_restricted(method_restrictions(self.methods, ds))
        if ds is None:
            self.data_status.setText("No data")
            self.setWindowTitle("Robust Subspace Studio")
        else:
            self.data_status.setText(f"{ds.name}: {ds.n_samples:,} × {ds.n_features:,}")
            self.setWindowTitle(f"{ds.name} — Robust Subspace Studio")
            if self.method_panel.method_name():
                self._fit_defaults_to_data(self.method_panel.method_name())
        self._update_blocker()

    # drag and drop -----------------------------------------------------------------------------
    @staticmethod
    def _dropped_paths(mime) -> list[str]:
        if not mime.hasUrls():
            return []
        return [u.toLocalFile() for u in mime.urls() if u.isLocalFile() and u.toLocalFile()]

    def dragEnterEvent(self, event) -> None:
        if self._dropped_paths(event.mimeData()):
            event.acceptProposedAction()
        else:
            event.ignore()

    def dragMoveEvent(self, event) -> None:
        self.dragEnterEvent(event)

    def dropEvent(self, event) -> None:
        paths = self._dropped_paths(event.mimeData())
        if not paths:
            event.ignore()
            return
        event.acceptProposedAction()
        if len(paths) > 1:
            self.statusBar().showMessage(f"{len(paths)} files dropped; opening the first one", 8000)
        self.open_path(paths[0])

    # == runs ============================================================================================
    def _update_blocker(self) -> None:
        from .out_of_core import method_restrictions
        ds = self.state.dataset
        m = self.method_panel.method()
        if ds is None:
            reason = "Load a data set first (File → Open or the Demos menu)."
        elif m is not None and m.needs_labels and ds.labels is None:
            reason = f"{m.title} needs class labels and '{ds.name}' has none."
        elif m is not None and m.name in method_restrictions(self.methods, ds):
            reason = method_restrictions(self.methods, ds)[m.name]
        else:
            reason = None
        self.method_panel.set_blocker(reason)

    def _on_method_changed(self, name: str | None) -> None:
        if name:
            self.state.set_current_method(name)
            self._fit_defaults_to_data(name)
        self._update_blocker()

    def _fit_defaults_to_data(self, name: str) -> None:
        """A default that would leave the views empty on this data (a rank as large as the data's
        dimension: no residual, no SPE/T² limits) becomes the registry's data-aware default, and
        the Method panel says so. Values the user typed are left alone."""
        ds, m, form = self.state.dataset, self.methods.get(name), self.method_panel.form(name)
        if ds is None or m is None or form is None or (self.state.data_version, name) in self._fitted_defaults:
            return
        self._fitted_defaults.add((self.state.data_version, name))  # once per data set and method
        declared, current = m.defaults(), form.values()
        changed = {k: v for k, v in m.data_defaults(ds.n_samples, ds.n_features).items()
                   if current.get(k) == declared.get(k) and current.get(k) != v}
        if changed:
            form.set_values(changed)
            what = ", ".join(f"{k} = {v}" for k, v in changed.items())
            self.method_panel.set_status(f"{what} for {ds.name} ({ds.n_features} features): the default would "
                                         f"leave no residual, so no SPE/T² limits or map.")

    def current_params(self, name: str | None = None) -> dict | None:
        """Validated parameters in the form of ``name`` (default: the chosen method), or None if invalid."""
        form = self.method_panel.form(name)
        if form is None:
            return None
        try:
            return self.methods[name or self.method_panel.method_name()].validate(form.values())
        except ValueError:
            return None

    def run(self) -> Job | None:
        """Start the chosen method on the current data (cancelling a fit in flight).

        Returns the job, or None when Run is refused; the reason is then shown in the status bar
        and beside the Run button.
        """
        reason = self.method_panel.run_block_reason()
        if reason is not None:
            self.statusBar().showMessage(f"Cannot run: {reason}", 10000)
            return None
        name = self.method_panel.method_name()
        method = self.methods[name]
        params = self.current_params(name)
        ds = self.state.dataset
        if self.runner.is_busy():
            old = self.runner.current
            self._log_job(old, "cancelled", "muted", detail="replaced by a new run")
        tag = FitTag(method=name, title=method.title, params=params, dataset=ds.name,
                     data_version=self.state.data_version)
        self.settings.set_method_params(name, params)
        self.settings.set_last_method(name)
        # A seed left on "auto" is fixed for the fit only (the form keeps "auto", so the stale
        # check still compares like with like): the result and any session saved from it record
        # the seed that was used, and replay gives the same numbers.
        from .session import pin_seed
        fit_params = pin_seed(method, params)
        bigdata = None
        if getattr(ds, "is_lazy", False):
            from .out_of_core import bigdata_settings, results_dir
            bigdata = bigdata_settings(self.settings.memory_budget(), self.settings.scheduler(),
                                       results_dir(self.session_path))
        if self.isolation == "process":
            # Registry methods travel by name; others (scripts, tests) as the Method itself.
            spec = name if METHODS.get(name) is method else method
            pool = shared_pool()
            fit = FitJob(spec, ds, fit_params, bigdata)
            fn = lambda progress: pool.submit(fit, progress)  # noqa: E731
        else:
            fit = FitJob(method, ds, fit_params, bigdata)
            fn = lambda progress: run_job(fit, progress)  # noqa: E731
        job = self.runner.submit(fn, tag=tag)
        self.method_panel.set_status(f"Running {method.title} on {ds.name}…")
        return job

    def cancel(self) -> None:
        job = self.runner.cancel()
        if job is not None:
            self._log_job(job, "cancelled", "muted", seconds=time.perf_counter() - job.submitted)
            self.method_panel.set_status("Cancelled", done=False)
            self.views.end_live()
            self.statusBar().showMessage(f"Cancelled {job.tag.title}", 5000)
            self.runCancelled.emit()
            self.idle.emit()

    def _on_busy(self, busy: bool) -> None:
        self.method_panel.set_busy(busy)
        self.act_cancel.setEnabled(busy)
        if not busy:
            # Cancelled or replaced in any of the ways a run ends early: its provisional
            # pictures go. (After the event: a finished run's result is stored first.)
            QTimer.singleShot(0, self._drop_stale_live)

    def _drop_stale_live(self) -> None:
        job = self.runner.current
        self.views.end_live(keep=None if job is None else job.seq)

    def _on_run_partial(self, job: Job, frames) -> None:
        """A streaming fit finished more frames: the L + S view draws them, provisional."""
        if job.tag.data_version == self.state.data_version:
            self.views.show_live("decomposition", job.seq, job.tag.title, frames)

    def _on_progress(self, job: Job, fraction: float, message: str) -> None:
        self.method_panel.set_progress(fraction, message)

    def _on_params_changed(self, name: str) -> None:
        job = self.runner.current
        if job is not None and job.tag.method == name and self.current_params(name) != job.tag.params:
            self.method_panel.set_status("Parameters changed: this run's result will be discarded. "
                                         "Press Run to use the new values.")

    def _stale_reason(self, job: Job, result) -> str | None:
        ds = self.state.dataset
        if ds is not None and self.state.data_version == job.tag.data_version:
            # The fit ran on this very object and hashed it already.
            self.state.adopt_fingerprint(result.data_fingerprint)
        if ds is None or self.state.data_version != job.tag.data_version \
                or result.data_fingerprint != self.state.data_fingerprint():
            return "the data set changed during the fit"
        if self.current_params(job.tag.method) != job.tag.params:
            return "the parameters were changed during the fit; press Run to use the new values"
        return None

    def _on_run_finished(self, job: Job, result) -> None:
        reason = self._stale_reason(job, result)
        if reason is not None:
            self._log_job(job, "discarded", "muted", seconds=job.elapsed, detail=reason)
            self.method_panel.set_status(f"Result discarded: {reason}", done=False)
            self.views.end_live()
            self.runDiscarded.emit(reason)
            self.idle.emit()
            return
        converged = result.decomposition.converged if result.decomposition is not None else None
        if converged is None:
            converged = getattr(result.estimator, "converged_", None)
        if converged is None:
            outcome, level = "finished", "ok"
        elif converged:
            outcome, level = "converged", "ok"
        else:
            outcome, level = "not converged", "warning"
        if result.warnings and level == "ok":
            level = "warning"
        self._log_job(job, outcome, level, seconds=result.elapsed, warnings=result.warnings,
                      evaluation=result.evaluation)
        self.state.set_current_method(result.method)
        self.state.add_result(result)
        self.views.end_live()   # after the result is stored: the view draws it in place
        text = f"{job.tag.title}: {outcome} in {result.elapsed:.2f}\u00a0s"
        if result.warnings:
            text += f" ({len(result.warnings)} warning{'s' if len(result.warnings) > 1 else ''}, see the log)"
        self.method_panel.set_status(text, done=True)
        self.statusBar().showMessage(text, 8000)
        self.runFinished.emit(result)
        self.idle.emit()

    def _on_run_failed(self, job: Job, message: str, details: str) -> None:
        self._log_job(job, "failed", "error", seconds=job.elapsed, detail=message)
        self.method_panel.set_status(f"Failed: {message}", done=False)
        self.views.end_live()
        self._show_error(f"{job.tag.title} failed", message, details)
        self.runFailed.emit(message)
        self.idle.emit()

    def _on_run_cancelled(self, job: Job) -> None:
        # The log line was written when Cancel was pressed; now the thread has really stopped.
        if not self.runner.is_busy():
            self.method_panel.set_status(f"Cancelled after {job.elapsed:.1f}\u00a0s", done=False)

    def _log_job(self, job: Job | None, outcome: str, level: str, seconds: float | None = None,
                 warnings=(), detail: str = "", evaluation=None) -> None:
        if job is None:
            return
        t = job.tag
        from .panels.run_log import format_evaluation
        self.run_log.add(LogEntry(method=t.title, params=t.params, dataset=t.dataset,
                                  outcome=outcome, seconds=seconds, warnings=list(warnings),
                                  detail=detail, level=level, evaluation=format_evaluation(evaluation)))

    # == errors, help, examples ================================================================================
    def _show_error(self, title: str, message: str, details: str = "") -> QMessageBox:
        """A non-blocking message box (the window stays usable), with the traceback folded away."""
        if self.error_box is not None:
            self.error_box.close()
        box = QMessageBox(QMessageBox.Icon.Warning, title, message, QMessageBox.StandardButton.Ok, self)
        box.setObjectName("error_box")
        if details:
            box.setDetailedText(details)
        box.setWindowModality(Qt.WindowModality.WindowModal)
        box.open()
        self.error_box = box
        return box

    def show_about(self) -> None:
        from robustcore import __version__
        QMessageBox.about(self, "About Robust Subspace Studio",
                          f"<b>Robust Subspace Studio</b> {__version__}<br>Robust subspace analysis of "
                          f"data with outliers: PCA, Coherence Pursuit, PCP, SPE/T² scoring, ESFS, SCW.")

    def reset_parameters(self) -> None:
        self.method_panel.reset_current()

    def show_method_help(self, name: str | None = None) -> None:
        """The help page of ``name`` (default: the method chosen in the Method panel)."""
        from .help import HelpDialog
        name = name or self.method_panel.method_name()
        if name not in METHODS:
            return
        if self.help_dialog is None:
            self.help_dialog = HelpDialog(self)
        self.help_dialog.show_method(name)

    def open_example(self, example) -> None:
        """Help > Examples: load the demo, run its methods, show its view (see app.examples)."""
        from .examples import ExamplePlayer
        if self.example is not None:
            self.example._stop()
        self.example = ExamplePlayer(self, example)

    # == closing ========================================================================================
    def closeEvent(self, event) -> None:
        self.save_settings()
        t0 = time.monotonic()
        ok_fit = self.runner.shutdown(timeout=3.0)
        ok_load = self.loader.shutdown(timeout=max(0.1, 3.0 - (time.monotonic() - t0)))
        self.exporter.shutdown(timeout=max(0.1, 3.0 - (time.monotonic() - t0)))
        self.warmer.shutdown(timeout=0.1)
        if not (ok_fit and ok_load):
            # A fit deep in one long BLAS call: the thread stays referenced and is joined at exit
            # (app.tasks), so nothing is destroyed while it runs.
            print("Robust Subspace Studio: waiting for a running computation to stop…", file=sys.stderr)
        if self.error_box is not None:
            self.error_box.close()
        if self.lazy_offer is not None:
            self.lazy_offer.close()
        event.accept()
        super().closeEvent(event)
