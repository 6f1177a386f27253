"""The main window: the layout (views, docks, menus, status bar) and the wiring of its parts.

The window is split as napari's is: this class lays the window out and connects the rooms;
what happens in each room is another module's.

- :class:`app.state.AppState` -- what is shown: the data set, the results, the selection (no widgets);
- :class:`app.data_controller.DataController` (``window.data``) -- loads, sessions, the
  out-of-core offer, recent files;
- :class:`app.run_controller.RunController` (``window.runs``) -- fits: the runner, job tags,
  stale checks, process or thread, the Run log;
- :mod:`app.actions` -- the menus' actions, declared once, and their callbacks (the dialogs);
  :mod:`app._window_menus` the menus listing recent files, demos, docks and examples;
  :mod:`app._window_drop` files dropped on the window;
- :class:`app.settings.Settings` -- what is kept between launches, read through typed accessors;
- :mod:`app.panels` and :mod:`app.views` -- the Data and Method panels, the Run log, the views.

From "Run" to a drawn view, each room once:

1. the Run button (``MethodPanel.runRequested``), Ctrl+R or the Run menu (:mod:`app.actions.run`)
   calls :meth:`RunController.run`: it checks the Method panel's block reason, tags the job with
   the method, its validated parameters and the data version (:class:`app.jobs.FitTag`), pins an
   "auto" seed, and submits a :class:`app.fit_process.FitJob` to its
   :class:`app.tasks.TaskRunner`;
2. the runner's thread hands the job to the warm worker process (:mod:`app.fit_process`), where
   :mod:`robustcore.methods` fits the estimator and returns a ``RunResult``; progress comes back
   through the runner to the Method panel;
3. :meth:`RunController._on_finished` checks the tag against the data and parameters now (stale
   results are discarded and logged), writes the Run log line and stores the result in
   :class:`app.state.AppState` (``add_result``);
4. the state's ``resultAdded`` reaches :class:`app.views.ResultViews` (``_on_result``): the views
   that draw that method are marked stale (``invalidate``); on the next turns of the event loop
   the view to show is built (if it is new) and then redraws from the result (``ensure_fresh``
   -> ``refresh``), one turn each, so the window never stops answering for both; the others
   redraw when they are shown. ``runFinished`` is emitted once the view on screen shows it.
"""
from __future__ import annotations

import sys
import time

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QDockWidget, QLabel, QMainWindow, QMessageBox

from robustcore.methods import METHODS

from ._qt import configure_window_process, fit_to_screen, hold_main_thread_garbage, release_main_thread_garbage
from ._window_drop import FileDrop
from ._window_menus import ListMenus, demo_list
from .actions import build_actions, build_menus
from .actions import export as export_actions
from .actions import file as file_actions
from .actions import help as help_actions
from .data_controller import DataController
from .fit_process import shared_pool
from .warm_up import warm_up
from .panels import DatasetPanel, MethodPanel, RunLog
from .run_controller import RunController
from .settings import Settings
from .state import AppState
from .tasks import Job, TaskRunner

__all__ = ["MainWindow"]

NARROW_WINDOW = 1100  # logical pixels: below this the side panels share one column
DEFAULT_SIZE = (1360, 860)  # logical pixels, when the screen has room for it


def _room(room: str, name: str, writable: bool = False) -> property:
    """A controller's attribute under the window's name (``window.runner`` is ``window.runs.runner``)."""
    def get(self):
        return getattr(getattr(self, room), name)

    def put(self, value):
        setattr(getattr(self, room), name, value)
    return property(get, put if writable else None, doc=f"``self.{room}.{name}``")


class MainWindow(ListMenus, FileDrop, QMainWindow):
    """Robust Subspace Studio's window.

    Signals (for scripts and tests)
    -------
    datasetLoaded(object)          a data set became current.
    loadFailed(str)                a file or demo could not be loaded (message).
    runFinished(object)            a RunResult was stored in the state and the view on
                                   screen draws it.
    runFailed(str)                 a fit raised (message); a dialog shows the details.
    runCancelled()                 the current fit was cancelled.
    runDiscarded(str)              a fit finished but its result was dropped (reason).
    idle()                         no fit is running any more (after any of the above, except
                                   a cancel by a new run, which is itself running).
    videoExported(list)            a decomposition video was written (its files).
    outOfCoreOffered(object)       a file is better read out of core (an out_of_core.LazyOffer);
                                   the offer dialog is ``self.lazy_offer``.

    The run and data signals are the controllers' (``runs``, ``data``), under these names.
    """

    videoExported = Signal(list)

    def __init__(self, state: AppState | None = None, settings: Settings | None = None,
                 methods: dict | None = None, restore: bool = True, isolation: str | None = None):
        super().__init__()
        # The views assume pyqtgraph's row-major images: a window embedded in a script's own
        # QApplication (not app._qt.ensure_app) drew table heatmaps transposed without this.
        configure_window_process()
        self.setWindowTitle("Robust Subspace Studio")
        self.setObjectName("main_window")
        # cycles (and the Qt objects in them) are collected on this thread only (app._qt)
        hold_main_thread_garbage()
        self._holds_garbage = True
        self.state = state or AppState(self)
        self.settings = settings or Settings()
        self.methods = dict(METHODS if methods is None else methods)
        self.warmer = TaskRunner(self)
        # Views the chosen data and method feed could not be built while the warm-up imported
        # their modules' dependencies (app.views.result_views.ResultViews.prepare): now they can.
        self.warmer.finished.connect(lambda *_: self.views._prepare_current())
        self.exporter = TaskRunner(self)  # video export: long, cancellable, off the GUI thread
        self.error_box: QMessageBox | None = None
        self.notices: list[str] = []
        self.example = None      # the Help > Examples entry being played
        self.help_dialog = None

        self._build_central()
        self._build_docks()
        status = self.statusBar().showMessage
        self.runs = RunController(self, state=self.state, settings=self.settings, methods=self.methods,
                                  method_panel=self.method_panel, views=self.views, run_log=self.run_log,
                                  status=status, show_error=self.show_error, isolation=isolation)
        self.data = DataController(self, state=self.state, settings=self.settings, runs=self.runs,
                                   dataset_panel=self.dataset_panel, method_panel=self.method_panel,
                                   views=self.views, status=status, show_error=self.show_error)
        self.runs.session_path = lambda: self.data.session_path
        self.actions_by_key = build_actions(self)
        self.menus = build_menus(self, self.actions_by_key, {
            "recent": self._build_recent_menu, "demos": self._build_demos_menu,
            "docks": self._build_dock_toggles, "examples": self._build_examples_menu})
        self.act_reopen_last.setChecked(self.settings.reopen_last())
        self.act_keep_params.setChecked(self.settings.keep_params_on_new_data())
        self.data_status = QLabel("No data")
        self.statusBar().addPermanentWidget(self.data_status)
        self._connect()
        self.setAcceptDrops(True)
        self.resize(*DEFAULT_SIZE)
        if restore:
            self._restore_settings()
        fit_to_screen(self)   # and again once shown, when the window manager's frame is known
        self.runs.method_changed(self.method_panel.method_name())
        self._on_dataset(self.state.dataset)
        self._first_show = True

    # == the rooms' signals and state, under the window's names =======================================
    datasetLoaded = _room("data", "loaded")
    loadFailed = _room("data", "failed")
    outOfCoreOffered = _room("data", "offered")
    runFinished = _room("runs", "finished")
    runFailed = _room("runs", "failed")
    runCancelled = _room("runs", "cancelled")
    runDiscarded = _room("runs", "discarded")
    idle = _room("runs", "idle")
    runner = _room("runs", "runner")
    loader = _room("data", "loader")
    isolation = _room("runs", "isolation")
    session_path = _room("data", "session_path", writable=True)
    last_load = _room("data", "last_load")
    lazy_offer = _room("data", "lazy_offer")

    # == what scripts and tests call (the work is the controllers' and the actions') ==================
    def run(self) -> Job | None:
        return self.runs.run()

    def cancel(self) -> None:
        self.runs.cancel()

    def open_path(self, path: str, **options) -> Job:
        return self.data.open_path(path, **options)

    def open_out_of_core(self, path: str, **options) -> Job:
        return self.data.open_out_of_core(path, **options)

    def load_demo(self, name: str) -> Job:
        return self.data.load_demo(name)

    def open_session(self, path: str, data_path: str | None = None) -> Job:
        return self.data.open_session(path, data_path)

    def set_dataset(self, ds, fingerprint: str | None = None) -> None:
        self.data.set_dataset(ds, fingerprint)

    def open_with_options(self, path: str, values: dict | None = None):
        return file_actions.open_with_options(self, path, values)

    def save_session_dialog(self, as_new: bool = False) -> None:
        file_actions.save_session_dialog(self, as_new)

    def out_of_core_settings_dialog(self):
        return file_actions.out_of_core_settings_dialog(self)

    def export_figure_to(self, path: str) -> str | None:
        return export_actions.export_figure_to(self, path)

    def export_results_to(self, folder: str, overwrite: bool | None = None) -> list[str]:
        return export_actions.export_results_to(self, folder, overwrite)

    def export_video_to(self, path: str, overwrite: bool = False) -> Job | None:
        return export_actions.export_video_to(self, path, overwrite)

    def open_example(self, example) -> None:
        help_actions.open_example(self, example)

    # == layout =========================================================================================
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
        self.dataset_panel = DatasetPanel(demo_list())
        self.method_panel = MethodPanel(self.methods)
        self.run_log = RunLog()
        self.dataset_dock = self._dock("Data", "dock_data", self.dataset_panel,
                                       Qt.DockWidgetArea.LeftDockWidgetArea)
        self.method_dock = self._dock("Method", "dock_method", self.method_panel,
                                      Qt.DockWidgetArea.RightDockWidgetArea)
        self.log_dock = self._dock("Run log", "dock_log", self.run_log,
                                   Qt.DockWidgetArea.BottomDockWidgetArea)

    def _size_docks(self) -> None:
        """Side panels take about a fifth of the width each at most, the log a sixth of the
        height (an eighth when the window is short). In a narrow window (a small screen, or 200 % scaling:
        1920 x 1080 is 960 x 540)
        the Data and Method panels share one column as tabs, so the views keep room to be read;
        in a window both narrow and short the run log is a third tab there."""
        w, h = max(self.width(), 640), max(self.height(), 480)
        if w < NARROW_WINDOW:
            self.removeDockWidget(self.method_dock)
            self.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, self.method_dock)
            self.method_dock.show()
            self.tabifyDockWidget(self.dataset_dock, self.method_dock)
            if h < 700:
                # A short window too (200 %): the run log joins them as a third tab, so the views
                # get the whole height (the tour at 960 x 540 found plots 21-80 px high under it).
                self.removeDockWidget(self.log_dock)
                self.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, self.log_dock)
                self.log_dock.show()
                self.tabifyDockWidget(self.method_dock, self.log_dock)
            self.method_dock.raise_()
            self.resizeDocks([self.method_dock], [int(min(330, 0.3 * w))], Qt.Orientation.Horizontal)
            if h < 700:
                return
        else:
            self.resizeDocks([self.dataset_dock, self.method_dock], [int(min(350, 0.22 * w)), int(min(320, 0.22 * w))],
                             Qt.Orientation.Horizontal)
        # A short window (200 %) gives the log less: the view names may take a second row there.
        self.resizeDocks([self.log_dock], [int(min(150, h / (8 if h < 700 else 6)))], Qt.Orientation.Vertical)

    # == wiring ==========================================================================================
    def _connect(self) -> None:
        self.state.datasetChanged.connect(self._on_dataset)
        dp, data = self.dataset_panel, self.data
        dp.openRequested.connect(lambda: file_actions.open_dialog(self))
        dp.demoRequested.connect(data.load_demo)
        dp.optionsRequested.connect(lambda: file_actions.reload_with_options(self))
        dp.truthRequested.connect(data.reload_with_truth)
        dp.outOfCoreSettingsRequested.connect(lambda: file_actions.out_of_core_settings_dialog(self))
        dp.cancelLoadRequested.connect(data.cancel_load)
        data.recentChanged.connect(self._rebuild_recent_menu)
        data.loader.busyChanged.connect(self.act_cancel_load.setEnabled)
        mp, runs = self.method_panel, self.runs
        mp.runRequested.connect(runs.run)
        mp.cancelRequested.connect(runs.cancel)
        mp.methodChanged.connect(runs.method_changed)
        mp.paramsChanged.connect(runs.params_changed)
        mp.helpRequested.connect(lambda name=None: help_actions.show_method_help(self, name))
        runs.runner.busyChanged.connect(self.act_cancel.setEnabled)
        ex = self.exporter
        ex.progress.connect(lambda job, f, m: self.statusBar().showMessage(f"Exporting video… {m}"))
        ex.finished.connect(lambda job, written: export_actions.video_written(self, job, written))
        ex.failed.connect(lambda job, msg, details: self.show_error("Export video failed", msg, details))

    def _on_dataset(self, ds) -> None:
        from .out_of_core import method_restrictions
        self.data.show_out_of_core()
        self.dataset_panel.set_dataset(ds)
        self.method_panel.set_restricted(method_restrictions(self.methods, ds))
        self.method_panel.set_data_shape(None if ds is None else (ds.n_samples, ds.n_features))
        if ds is None:
            self.data_status.setText("No data")
            self.setWindowTitle("Robust Subspace Studio")
        else:
            self.data_status.setText(f"{ds.name}: {ds.n_samples:,} × {ds.n_features:,}")
            self.setWindowTitle(f"{ds.name} — Robust Subspace Studio")
        self.runs.data_changed(ds)
        self.runs.update_blocker()

    # == settings ========================================================================================
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

    # == errors ==========================================================================================
    def show_error(self, title: str, message: str, details: str = "") -> QMessageBox:
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

    # == window events ===================================================================================
    def showEvent(self, event) -> None:
        super().showEvent(event)
        if self._first_show:
            self._first_show = False
            fit_to_screen(self)
            if self.settings.window_state() is None:
                self._size_docks()
            self.warmer.submit(lambda progress: warm_up(lambda: progress(0.0, "") is False))
            if self.runs.isolation == "process":
                try:
                    shared_pool().warm()
                except OSError as exc:  # e.g. no permission to start processes
                    self.runs.isolation = "thread"
                    self.statusBar().showMessage(f"Fits run in this process ({exc})", 10000)

    def closeEvent(self, event) -> None:
        self.save_settings()
        t0 = time.monotonic()
        ok_fit = self.runs.runner.shutdown(timeout=3.0)
        ok_load = self.data.loader.shutdown(timeout=max(0.1, 3.0 - (time.monotonic() - t0)))
        self.exporter.shutdown(timeout=max(0.1, 3.0 - (time.monotonic() - t0)))
        self.warmer.shutdown(timeout=0.1)
        if not (ok_fit and ok_load):
            # A fit deep in one long BLAS call: the thread stays referenced and is joined at exit
            # (app.tasks), so nothing is destroyed while it runs.
            print("Robust Subspace Studio: waiting for a running computation to stop…", file=sys.stderr)
        if self.error_box is not None:
            self.error_box.close()
        if self.data.lazy_offer is not None:
            self.data.lazy_offer.close()
        if self._holds_garbage:
            self._holds_garbage = False
            release_main_thread_garbage()
        event.accept()
        super().closeEvent(event)
