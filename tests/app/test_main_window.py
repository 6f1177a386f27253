"""Drive the window as a user would: load data, set parameters, run, cancel, fail, close."""
import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from PySide6.QtCore import QMimeData, QPointF, Qt, QTimer, QUrl
from PySide6.QtGui import QDropEvent

from app.actions.file import file_filter
from app.main_window import MainWindow
from app.session import pin_seed
from app.settings import SETTINGS_VERSION, Settings
from robustcore._params import Param
from robustcore.datasets import Dataset
from robustcore.methods import METHODS, Method
from tests.timing import budget

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# -- helpers ---------------------------------------------------------------------------------------

def _slow_adapter(est, dataset, values, rep):
    """PCA preceded by `steps` progress reports 10 ms apart (a fit that takes a while)."""
    for i in range(values["steps"]):
        time.sleep(0.01)
        rep(0.9 * i / values["steps"], f"step {i}")
    return METHODS["pca"].adapter(est, dataset, {"n_components": values["n_components"]}, rep.span(0.9, 1))


def _failing_adapter(est, dataset, values, rep):
    rep(0.1, "about to fail")
    raise ZeroDivisionError("deliberate failure inside the fit")


def _gil_hog_adapter(est, dataset, values, rep):
    """Minutes inside LAPACK calls that hold the GIL, with a single progress report."""
    import scipy.linalg as sla
    rep(0.01, "in a long LAPACK call")
    A = np.random.default_rng(0).standard_normal((600, 600))
    for _ in range(10000):
        sla.svd(A, check_finite=False)
    raise AssertionError("should have been stopped")


def _pca_class():
    from robustcore.subspace.pca import PCA
    return PCA


# Module-level functions only: these Methods travel to the worker process by reference.
SLOW = Method("slow", "Slow PCA", "PCA after a delay (tests).", _pca_class, _slow_adapter,
              extra_params=(Param("steps", int, 50, "Delay steps of 10 ms.", low=1),))
BOOM = Method("boom", "Boom", "Always fails (tests).", _pca_class, _failing_adapter)
HOG = Method("hog", "GIL hog", "Long GIL-holding LAPACK calls (tests).", _pca_class, _gil_hog_adapter)


def _methods():
    return dict(METHODS, slow=SLOW, boom=BOOM, hog=HOG)


def _random_data(n=300, d=120, seed=0, name="random"):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3)) @ rng.standard_normal((3, d))
    X[rng.random((n, d)) < 0.05] += 10.0
    return Dataset(X=X, name=name)


@pytest.fixture
def settings_path(tmp_path):
    return str(tmp_path / "studio.ini")


@pytest.fixture
def window(qtbot, settings_path):
    w = MainWindow(settings=Settings(settings_path), methods=_methods())
    qtbot.addWidget(w)
    w.show()
    yield w
    w.close()
    assert w.runner.live_threads() == 0


def _load(qtbot, w, name="iris"):
    # The first load of a process waits for the window's warm-up imports (scikit-learn...: about
    # 4 s of CPU, app.warm_up) before the data is shown, as the GUI thread used to stand still
    # for them: a minute at load 25 on two cores.
    with qtbot.waitSignal(w.datasetLoaded, timeout=90000):
        w.demo_actions[name].trigger()
    return w.state.dataset


def _run(qtbot, w, method, timeout=60000, **params):
    w.method_panel.set_method(method)
    form = w.method_panel.form()
    form.set_values(params)
    with qtbot.waitSignal(w.runFinished, timeout=timeout) as blocker:
        assert w.run() is not None
    return blocker.args[0]


# -- data in ----------------------------------------------------------------------------------------

@pytest.mark.slow
def test_demo_from_the_menu_shows_summary_and_preview(qtbot, window):
    assert window.demos_menu.actions(), "the Demos menu lists the bundled demos"
    assert "Fisher" in window.demo_actions["iris"].toolTip()
    ds = _load(qtbot, window, "iris")
    assert (ds.n_samples, ds.n_features) == (150, 4)
    summary = window.dataset_panel.summary_text()
    assert summary["shape"] == "150 samples × 4 features"
    assert "setosa: 50" in summary["labels"]
    assert "iris" in summary["source"]
    model = window.dataset_panel.model
    assert model.rowCount() == 150 and model.columnCount() == 4 + 1  # features + label column
    x00 = model.data(model.index(0, 1))
    assert float(x00) == pytest.approx(ds.X[0, 0], rel=1e-3)
    assert "iris" in window.windowTitle()


@pytest.mark.slow
def test_image_demo_summary_names_image_shape(qtbot, window):
    _load(qtbot, window, "usps-1-vs-8")
    s = window.dataset_panel.summary_text()
    assert s["image shape"] == "16 × 16 pixels"
    assert s["known outliers"].startswith(str(int(window.state.dataset.outliers.sum())))


def test_file_through_dialog_path_and_drop(qtbot, window, tmp_path):
    X = np.arange(24, dtype=float).reshape(6, 4) ** 1.5
    p = tmp_path / "table.npy"
    np.save(p, X)
    # The dialog's accepted path goes through open_path, exactly like this:
    with qtbot.waitSignal(window.datasetLoaded, timeout=10000) as blocker:
        window.open_path(str(p))
    np.testing.assert_allclose(blocker.args[0].dense(), X)
    assert window.settings.recent_files()[0] == str(p)
    assert window.recent_menu.actions()[0].toolTip() == str(p)

    # A drop of another file onto the window.
    q = tmp_path / "other.npy"
    np.save(q, X[:3] + 1)
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(q))])
    ev = QDropEvent(QPointF(50, 50), Qt.DropAction.CopyAction, mime, Qt.MouseButton.NoButton,
                    Qt.KeyboardModifier.NoModifier)
    with qtbot.waitSignal(window.datasetLoaded, timeout=10000) as blocker:
        window.dropEvent(ev)
    np.testing.assert_allclose(blocker.args[0].dense(), X[:3] + 1)
    assert ev.isAccepted()
    assert window.settings.recent_files()[:2] == [str(q), str(p)]


def test_bad_file_gives_message_and_window_stays_usable(qtbot, window, tmp_path):
    bad = tmp_path / "broken.npy"
    bad.write_bytes(b"this is not an npy file")
    with qtbot.waitSignal(window.loadFailed, timeout=10000) as blocker:
        window.open_path(str(bad))
    assert blocker.args[0]
    box = window.error_box
    assert box is not None and box.isVisible()
    assert "broken.npy" in box.windowTitle()
    _load(qtbot, window, "iris")


def test_file_filter_lists_formats():
    flt = file_filter([("CSV / TSV", ["*.csv", "*.tsv"]), ("NumPy", ["*.npy"])])
    parts = flt.split(";;")
    assert parts[0] == "All supported data (*.csv *.npy *.tsv)"
    assert parts[1] == "CSV / TSV (*.csv *.tsv)" and parts[-1] == "All files (*)"


# -- parameters and Run -----------------------------------------------------------------------------

def test_run_refused_without_data(qtbot, window):
    assert window.state.dataset is None
    assert not window.method_panel.run_button.isEnabled()
    assert window.run() is None
    assert "Load a data set first" in window.statusBar().currentMessage()


@pytest.mark.slow
def test_invalid_parameter_refuses_run_with_reason(qtbot, window):
    _load(qtbot, window)
    window.method_panel.set_method("pca")
    form = window.method_panel.form()
    form.set_text("n_components", "0")
    reason = "The 'n_components' parameter must be an integer >= 1 or None (elbow of the scree plot). Got 0 instead."
    assert not window.method_panel.run_button.isEnabled()
    assert window.method_panel.run_block_reason() == reason
    assert reason in form.error_label.text()
    assert window.run() is None
    assert reason in window.statusBar().currentMessage()
    assert window.state.result("pca") is None
    form.reset()
    assert window.method_panel.run_button.isEnabled()


def test_method_needing_labels_is_refused_on_unlabelled_data(qtbot, window):
    window.set_dataset(_random_data())
    window.method_panel.set_method("scw")
    assert "needs class labels" in window.method_panel.run_block_reason()
    assert window.method_panel.block_label.isVisibleTo(window.method_panel)
    assert window.run() is None


@pytest.mark.slow
def test_each_method_runs_on_a_demo(qtbot, window):
    _load(qtbot, window, "iris")
    for method in METHODS:
        res = _run(qtbot, window, method)
        assert res.method == method
        assert window.state.result(method) is res
        assert res.data_fingerprint == window.state.dataset.fingerprint()
        # The defaults, with a seed left on "auto" fixed so the run can be repeated.
        assert res.params == pin_seed(METHODS[method], METHODS[method].validate(METHODS[method].defaults()))
        entry = window.run_log.last()
        assert entry.dataset == "iris" and entry.method == METHODS[method].title
        assert entry.outcome in ("converged", "finished", "not converged")
        assert entry.seconds == pytest.approx(res.elapsed)
        assert not window.runner.is_busy() and not window.method_panel.cancel_button.isEnabled()
        assert window.method_panel.progress.value() == window.method_panel.progress.maximum()
    assert set(window.state.results) == set(METHODS)
    assert window.run_log.topLevelItemCount() == len(METHODS)


def test_data_dependent_error_reaches_user_as_message(qtbot, window):
    _load(qtbot, window, "iris")
    window.method_panel.set_method("robpca")
    # what the shape refuses, the form refuses before Run (tests/app/panels/test_shape_rules_form.py)
    window.method_panel.form().set_text("n_components", "9")  # iris has 4 features
    assert not window.method_panel.run_button.isEnabled()
    # what only the values refuse reaches the user from the fit: the centred rank is 3 here
    X = window.state.dataset.X.copy()
    X[:, 3] = X[:, 0] + X[:, 1]
    window.set_dataset(Dataset(X=X, name="iris, rank 3"))
    window.method_panel.form().set_text("n_components", "4")
    assert window.method_panel.run_button.isEnabled()
    with qtbot.waitSignal(window.runFailed, timeout=20000) as blocker:
        window.run()
    assert "n_components" in blocker.args[0] and "rank of the centred data, here 3" in blocker.args[0]
    assert window.error_box.isVisible() and "n_components" in window.error_box.text()
    assert window.run_log.last().outcome == "failed"


@pytest.mark.slow
def test_worker_exception_shows_message_with_details_and_window_stays_usable(qtbot, window):
    _load(qtbot, window, "iris")
    window.method_panel.set_method("boom")
    with qtbot.waitSignal(window.runFailed, timeout=20000) as blocker:
        window.run()
    assert blocker.args[0] == "ZeroDivisionError: deliberate failure inside the fit"
    box = window.error_box
    assert box.isVisible() and box.text() == blocker.args[0]
    assert "Traceback" in box.detailedText() and "_failing_adapter" in box.detailedText()
    assert window.run_log.last().outcome == "failed"
    assert not window.runner.is_busy()
    box.close()
    res = _run(qtbot, window, "pca")
    assert window.state.result("pca") is res


@pytest.mark.slow
@pytest.mark.timing
def test_progress_bar_is_fed_and_cancel_goes_idle_within_a_second(qtbot, window):
    window.set_dataset(_random_data(n=400, d=200))
    window.method_panel.set_method("pcp")
    form = window.method_panel.form()
    form.set_values({"tol": 1e-300, "max_iter": 100000})
    job = window.run()
    assert job is not None and window.method_panel.cancel_button.isEnabled()
    qtbot.waitUntil(lambda: window.method_panel.progress.value() > 0, timeout=int(1000 * budget(20)))
    assert window.method_panel.status.text().startswith("iter")
    t0 = time.monotonic()
    with qtbot.waitSignal(window.idle, timeout=int(1000 * budget(1.0))):
        window.act_cancel.trigger()
    qtbot.waitUntil(lambda: window.runner.live_threads() == 0, timeout=int(1000 * budget(1.0)))
    assert time.monotonic() - t0 < budget(1.0)
    assert job.status == "cancelled"
    assert not window.method_panel.cancel_button.isEnabled() and window.method_panel.run_button.isEnabled()
    assert window.run_log.last().outcome == "cancelled"
    assert window.state.result("pcp") is None


def _max_gap(qtbot, ms):
    ticks = []
    timer = QTimer()
    timer.setInterval(10)
    timer.timeout.connect(lambda: ticks.append(time.perf_counter()))
    timer.start()
    qtbot.wait(ms)
    # a loaded machine (CI's two cores: the worker process on one) may run fewer ticks in ms:
    # measure over at least 20 intervals
    qtbot.waitUntil(lambda: len(ticks) > 20, timeout=10 * ms)
    timer.stop()
    gaps = np.diff(ticks)
    return float(gaps.max()), float(np.median(gaps))


@pytest.mark.slow
def test_event_loop_never_stalls_during_a_fit(qtbot, window):
    """A 10 ms timer keeps firing while PCP runs; its largest gap is the stall (reported in README).

    The same timer with no fit gives the machine's own jitter (a shared CI runner has plenty), so
    the bound is generous: the issue's target is 100 ms on a quiet machine.
    """
    window.set_dataset(_random_data(n=400, d=200))
    idle_max, idle_med = _max_gap(qtbot, 800)
    window.method_panel.set_method("pcp")
    window.method_panel.form().set_values({"tol": 1e-300, "max_iter": 100000})
    window.run()
    qtbot.waitUntil(lambda: window.method_panel.progress.value() > 0, timeout=int(1000 * budget(20)))
    fit_max, fit_med = _max_gap(qtbot, 1500)
    assert window.runner.is_busy()  # the fit really ran the whole time
    window.cancel()
    print(f"\nevent loop: idle max gap {idle_max * 1000:.0f} ms (median {idle_med * 1000:.0f}); "
          f"during a PCP fit max gap {fit_max * 1000:.0f} ms (median {fit_med * 1000:.0f})")
    assert fit_max < max(0.5, 2 * idle_max + 0.1)


@pytest.mark.slow
@pytest.mark.timing
def test_fit_stuck_in_a_gil_holding_call_neither_freezes_nor_resists_cancel(qtbot, window):
    """scipy.linalg.svd holds the GIL for its whole duration: in a thread it would freeze the
    window and ignore Cancel; in the worker process it does neither."""
    _load(qtbot, window, "iris")
    window.method_panel.set_method("hog")
    job = window.run()
    qtbot.waitUntil(lambda: window.method_panel.status.text() == "in a long LAPACK call", timeout=30000)
    fit_max, _ = _max_gap(qtbot, 1000)
    assert window.runner.is_busy()
    t0 = time.monotonic()
    window.cancel()
    qtbot.waitUntil(lambda: window.runner.live_threads() == 0, timeout=int(1000 * budget(2.0)))
    assert time.monotonic() - t0 < budget(1.0)
    assert job.status == "cancelled"
    print(f"\nevent loop during GIL-holding LAPACK calls in the worker process: max gap {fit_max * 1000:.0f} ms")
    assert fit_max < budget(0.5)


@pytest.mark.slow
def test_new_run_while_one_is_in_flight_replaces_it(qtbot, window):
    _load(qtbot, window, "iris")
    window.method_panel.set_method("slow")
    first = window.run()
    window.method_panel.form().set_values({"steps": 2})
    with qtbot.waitSignal(window.runFinished, timeout=20000) as blocker:
        second = window.run()
    assert first.cancel_requested and second is not first
    assert blocker.args[0].params["steps"] == 2
    outcomes = [e.outcome for e in window.run_log.entries]
    assert outcomes[0] == "cancelled" and outcomes[-1] == "finished"
    qtbot.waitUntil(lambda: window.runner.live_threads() == 0, timeout=3000)


@pytest.mark.slow
def test_result_is_dropped_when_parameters_change_during_the_fit(qtbot, window):
    _load(qtbot, window, "iris")
    window.method_panel.set_method("slow")
    window.method_panel.form().set_values({"steps": 40})
    with qtbot.waitSignal(window.runDiscarded, timeout=20000) as blocker:
        window.run()
        window.method_panel.form().set_text("n_components", "3")
        assert "discarded" in window.method_panel.warning.text()
    assert "parameters were changed" in blocker.args[0]
    assert window.state.result("slow") is None
    assert window.run_log.last().outcome == "discarded"


@pytest.mark.slow
def test_result_is_dropped_when_data_changes_during_the_fit(qtbot, window):
    _load(qtbot, window, "iris")
    window.method_panel.set_method("slow")
    job = window.run()
    window.set_dataset(_random_data())
    assert job.cancel_requested
    assert window.run_log.last().detail == "the data set changed during the fit"
    qtbot.waitUntil(lambda: job.status == "cancelled", timeout=3000)
    assert window.state.results == {}


@pytest.mark.timing
@pytest.mark.slow
def test_closing_during_a_fit_stops_the_worker(qtbot, settings_path):
    w = MainWindow(settings=Settings(settings_path), methods=_methods())
    qtbot.addWidget(w)
    w.show()
    w.set_dataset(_random_data(n=400, d=200))
    w.method_panel.set_method("pcp")
    w.method_panel.form().set_values({"tol": 1e-300, "max_iter": 100000})
    w.run()
    qtbot.waitUntil(lambda: w.method_panel.progress.value() > 0, timeout=int(1000 * budget(20)))
    t0 = time.monotonic()
    w.close()
    assert time.monotonic() - t0 < budget(2.0)
    assert w.runner.live_threads() == 0


CLOSE_SCRIPT = textwrap.dedent("""
    import sys, numpy as np
    from PySide6.QtCore import QTimer
    from app._qt import ensure_app
    from app.main_window import MainWindow
    from app.settings import Settings
    from robustcore.datasets import Dataset
    app = ensure_app()
    w = MainWindow(settings=Settings(sys.argv[1]))
    w.show()
    rng = np.random.default_rng(0)
    w.set_dataset(Dataset(X=rng.standard_normal((400, 200)), name="noise"))
    w.method_panel.set_method("pcp")
    w.method_panel.form().set_values({"tol": 1e-300, "max_iter": 100000})
    QTimer.singleShot(100, w.run)
    QTimer.singleShot(1500, lambda: print("busy" if w.runner.is_busy() else "idle", flush=True))
    QTimer.singleShot(1500, w.close)
    sys.exit(app.exec())
""")


@pytest.mark.timing
@pytest.mark.slow
@pytest.mark.gui      # (a window in a child process)
def test_closing_during_a_fit_exits_cleanly_in_a_real_process(tmp_path):
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", PYTHONPATH=ROOT)
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", CLOSE_SCRIPT, str(tmp_path / "s.ini")], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=budget(60))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "busy"  # the fit was really running when the window closed
    assert "QThread" not in proc.stderr and "Fatal" not in proc.stderr
    assert time.monotonic() - t0 < budget(30)


# -- settings ---------------------------------------------------------------------------------------

@pytest.mark.slow
def test_parameters_and_method_persist_between_launches(qtbot, window, settings_path):
    _load(qtbot, window, "iris")
    _run(qtbot, window, "pca", n_components=3)
    window.method_panel.set_method("pcp")
    window.method_panel.form().set_text("tol", "1e-05")
    window.close()
    w2 = MainWindow(settings=Settings(settings_path), methods=_methods())
    qtbot.addWidget(w2)
    assert w2.method_panel.method_name() == "pcp"
    assert w2.method_panel.form("pca").values()["n_components"] == 3
    assert w2.method_panel.form("pcp").values()["tol"] == 1e-5
    assert w2.settings.recent_files() == []
    assert Settings(settings_path).version() == SETTINGS_VERSION


def test_settings_from_a_newer_release_are_kept_and_reported(qtbot, settings_path):
    s = Settings(settings_path)
    s.set_method_params("pca", {"n_components": 3})
    s.qs.setValue("settings_version", SETTINGS_VERSION + 5)
    s.qs.setValue("future/thing", "keep me")
    s.sync()
    w = MainWindow(settings=Settings(settings_path), methods=_methods())
    qtbot.addWidget(w)
    assert "newer release" in w.statusBar().currentMessage()
    assert w.method_panel.form("pca").values()["n_components"] == 3
    w.close()
    again = Settings(settings_path)
    assert again.version() == SETTINGS_VERSION + 5  # never lowered
    assert again.qs.value("future/thing") == "keep me"


def test_unreadable_or_no_longer_valid_values_are_reported_not_wiped(qtbot, settings_path):
    s = Settings(settings_path)
    s.qs.setValue("files/recent", "{not json")
    s.set_method_params("pca", {"n_components": -4, "gone": 1})
    s.sync()
    w = MainWindow(settings=Settings(settings_path), methods=_methods())
    qtbot.addWidget(w)
    msg = w.statusBar().currentMessage()
    assert "files/recent" in msg
    assert ("The 'n_components' parameter must be an integer >= 1 or None (elbow of the scree plot). "
            "Got -4 instead.") in msg
    assert "'gone'" in msg
    assert w.method_panel.form("pca").values()["n_components"] is None  # the declared default
    assert Settings(settings_path).qs.value("files/recent") == "{not json"
    w.close()


def test_unversioned_settings_are_migrated(settings_path):
    from PySide6.QtCore import QSettings
    qs = QSettings(settings_path, QSettings.Format.IniFormat)
    qs.setValue("methods/last", "pcp")
    qs.sync()
    s = Settings(settings_path)
    assert s.problems == [] and s.version() == SETTINGS_VERSION and s.last_method() == "pcp"


# -- shortcuts and command line ------------------------------------------------------------------------

def test_keyboard_shortcuts(window):
    keys = {a.objectName(): [k.toString() for k in a.shortcuts()] for a in window.actions()}
    assert keys["act_open"] == ["Ctrl+O"]
    assert "Ctrl+R" in keys["act_run"] and "Esc" in keys["act_cancel"]
    assert keys["act_export_results"] == ["Ctrl+E"] and keys["act_quit"] == ["Ctrl+Q"]


@pytest.mark.slow
@pytest.mark.gui      # (a window in a child process)
def test_screenshot_from_the_command_line(tmp_path):
    out = tmp_path / "shot.png"
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", PYTHONPATH=ROOT)
    proc = subprocess.run([sys.executable, "-m", "app", "--demo", "iris", "--method", "pca", "--run",
                           "--screenshot", str(out), "--settings", str(tmp_path / "s.ini")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    from PySide6.QtGui import QImage
    img = QImage(str(out))
    assert img.width() > 600 and img.height() > 400


def test_main_delegates_subcommands_to_the_cli(capsys):
    from app.__main__ import main
    assert main(["demos"]) == 0
    assert "usps-1-vs-8" in capsys.readouterr().out


def test_open_with_loader_options_reads_the_label_column(qtbot, window, tmp_path):
    p = tmp_path / "plants.csv"
    p.write_text("a,b,kind\n1,2,x\n2,3,y\n3,5,x\n4,4,y\n")
    dlg = window.open_with_options(str(p))
    assert dlg.isVisible() and "label_column" in dlg.form.names()
    dlg.form.set_text("label_column", "kind")
    with qtbot.waitSignal(window.datasetLoaded, timeout=10000) as blocker:
        dlg.accept()
    ds = blocker.args[0]
    assert ds.n_features == 2 and list(ds.labels) == ["x", "y", "x", "y"]
    assert window.dataset_panel.options_button.isVisibleTo(window.dataset_panel)
    summary = window.dataset_panel.summary_text()
    assert "x: 2" in summary["labels"]
    # The options chosen or detected, as words: not the loader's option dict.
    assert summary["loader"] == "csv"
    assert summary["options"] == "delimiter = ',' · header = yes · label column = kind"


@pytest.mark.slow
def test_export_refuses_without_result_then_writes_files(qtbot, window, tmp_path):
    _load(qtbot, window, "iris")
    window.method_panel.set_method("pca")
    assert window.export_results_to(str(tmp_path)) == []
    assert "Nothing to export yet" in window.error_box.text()
    window.error_box.close()
    res = _run(qtbot, window, "pca")
    written = window.export_results_to(str(tmp_path), overwrite=False)
    assert written and all(os.path.exists(p) for p in written)
    assert any(p.endswith(".csv") for p in written)
    # A second export without permission to overwrite is refused with a message, not silently done.
    assert window.export_results_to(str(tmp_path), overwrite=False) == []
    assert "already exist" in window.error_box.text()
    window.error_box.close()
    png = window.export_figure_to(str(tmp_path / "figure.png"))
    assert png and os.path.getsize(tmp_path / "figure.png") > 1000
    assert res.method == "pca"


@pytest.mark.slow
def test_session_saved_and_reopened_in_a_new_window(qtbot, window, tmp_path, settings_path):
    import app.session as S
    _load(qtbot, window, "iris")
    res = _run(qtbot, window, "pca", n_components=3)
    path = str(tmp_path / "work.rss.json")
    S.save_session(path, S.session_from_state(window.state), results=window.state.results,
                   dataset=window.state.dataset)
    w2 = MainWindow(settings=Settings(settings_path), methods=_methods())
    qtbot.addWidget(w2)
    with qtbot.waitSignal(w2.datasetLoaded, timeout=30000):
        w2.open_session(path)
    again = w2.state.result("pca")
    assert again is not None and again.params["n_components"] == 3
    np.testing.assert_allclose(again.sample_scores["spe"], res.sample_scores["spe"], rtol=1e-7, atol=1e-10)
    assert w2.method_panel.form("pca").values()["n_components"] == 3
    w2.close()


@pytest.mark.slow
def test_session_with_moved_data_offers_to_locate_it(qtbot, window, tmp_path, settings_path):
    import app.session as S
    data = tmp_path / "d.npy"
    np.save(data, _random_data(n=40, d=6).X)
    with qtbot.waitSignal(window.datasetLoaded, timeout=10000):
        window.open_path(str(data))
    _run(qtbot, window, "pca")
    path = str(tmp_path / "s.rss.json")
    S.save_session(path, S.session_from_state(window.state), results=window.state.results,
                   dataset=window.state.dataset)
    moved = tmp_path / "moved"
    moved.mkdir()
    os.replace(data, moved / "renamed.npy")
    with qtbot.waitSignal(window.loadFailed, timeout=20000):
        window.open_session(path)
    assert window.error_box.objectName() == "session_locate_box" and window.error_box.isVisible()
    assert "Locate the data file…" in [b.text() for b in window.error_box.buttons()]
    window.error_box.close()
    with qtbot.waitSignal(window.datasetLoaded, timeout=20000):
        window.open_session(path, data_path=str(moved / "renamed.npy"))
    assert window.state.result("pca") is not None


@pytest.mark.slow
def test_save_as_then_save_and_reopen_at_start(qtbot, window, tmp_path, settings_path, monkeypatch):
    """File > Save session as… asks for a name once; Save then writes there without asking; the
    selection comes back; "Reopen last session at start" makes the next launch open it."""
    import app.session as S
    from PySide6.QtWidgets import QFileDialog
    _load(qtbot, window, "iris")
    _run(qtbot, window, "pca")
    window.state.set_selection([3, 7, 11])
    path = str(tmp_path / "mine.rss.json")
    asked = []
    monkeypatch.setattr(QFileDialog, "getSaveFileName",
                        staticmethod(lambda *a, **k: (asked.append(1), (path, ""))[1]))
    window.act_save_session_as.trigger()
    assert os.path.exists(path) and window.session_path == path and len(asked) == 1
    window.state.set_selection([5])
    window.act_save_session.trigger()  # no dialog the second time: same file, new selection
    assert len(asked) == 1
    assert list(S.load_session(path).selection) == [5]
    # Loading other data forgets the session file, so Save cannot write one data set over another.
    _load(qtbot, window, "clusters-3d")
    assert window.session_path is None

    assert not window.settings.last_session()  # remembered, but reopening is off until the user asks
    window.act_reopen_last.trigger()
    assert window.act_reopen_last.isChecked() and window.settings.last_session() == path
    w2 = MainWindow(settings=Settings(settings_path), methods=_methods())
    qtbot.addWidget(w2)
    assert w2.act_reopen_last.isChecked()
    with qtbot.waitSignal(w2.datasetLoaded, timeout=30000):
        w2.open_session(w2.settings.last_session())
    assert w2.state.dataset.name == "iris" and list(w2.state.selection) == [5]
    assert w2.state.result("pca") is not None and w2.session_path == path
    w2.close()
