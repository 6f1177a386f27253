"""What the window says about a fit in flight: a warning stays in sight while it is true, and
every way a fit is cancelled emits the signals MainWindow's docstring names (issue 33.6)."""
import numpy as np
import pytest

from app.main_window import MainWindow
from app.settings import Settings
from robustcore.datasets import Dataset
from robustcore.methods import METHODS

from .test_truthful_status import SLOW   # PCA after `steps` progress reports 10 ms apart


def _data(seed=0, name="planted"):
    rng = np.random.default_rng(seed)
    return Dataset(X=rng.standard_normal((200, 3)) @ rng.standard_normal((3, 12)), name=name)


@pytest.fixture
def window(qtbot, tmp_path):
    w = MainWindow(settings=Settings(str(tmp_path / "s.ini")), methods=dict(METHODS, slow=SLOW),
                   isolation="thread")
    qtbot.addWidget(w)
    w.show()
    w.set_dataset(_data())
    w.method_panel.set_method("slow")
    yield w
    w.close()


def _start(qtbot, w, steps=400):
    w.method_panel.form().set_values({"steps": steps})
    job = w.run()
    assert job is not None
    qtbot.waitUntil(lambda: w.method_panel.status.text().startswith("step"), timeout=10000)
    return job


@pytest.mark.slow
def test_the_discard_warning_stays_in_sight_while_progress_goes_on(qtbot, window):
    w, panel = window, window.method_panel
    _start(qtbot, w)
    panel.form().set_text("n_components", "3")
    before = panel.status.text()
    qtbot.waitUntil(lambda: panel.status.text() != before, timeout=5000)   # progress lines keep coming
    qtbot.wait(300)
    assert w.runner.is_busy()
    assert panel.warning.isVisible() and "will be discarded" in panel.warning.text()
    assert panel.status.text().startswith("step")
    # Put back as the run started: the warning is no longer true, so it goes.
    panel.form().set_text("n_components", "")
    assert not panel.warning.isVisible()
    panel.form().set_text("n_components", "2")
    assert panel.warning.isVisible()
    with qtbot.waitSignal(w.runDiscarded, timeout=20000):
        pass
    assert not panel.warning.isVisible()          # the run is over: its outcome is the status
    assert "discarded" in panel.status.text()


def test_new_data_during_a_fit_emits_run_cancelled_then_idle(qtbot, window):
    w = window
    job = _start(qtbot, w)
    with qtbot.waitSignals([w.runCancelled, w.idle], order="strict", timeout=1000):
        w.set_dataset(_data(1, "other"))
    assert job.cancel_requested and not w.runner.is_busy()
    assert w.run_log.last().outcome == "cancelled"
    assert w.run_log.last().detail == "the data set changed during the fit"


def test_a_demo_loaded_during_a_fit_emits_run_cancelled_and_idle(qtbot, window):
    w = window
    _start(qtbot, w)
    with qtbot.waitSignals([w.runCancelled, w.idle, w.datasetLoaded], timeout=30000):
        w.load_demo("iris")
    assert w.state.dataset.name.startswith("iris") and not w.runner.is_busy()


def test_cancel_button_emits_run_cancelled_then_idle(qtbot, window):
    w = window
    _start(qtbot, w)
    with qtbot.waitSignals([w.runCancelled, w.idle], order="strict", timeout=1000):
        w.method_panel.cancel_button.click()


def test_a_new_run_replacing_one_in_flight_emits_run_cancelled_not_idle(qtbot, window):
    w = window
    first = _start(qtbot, w)
    idles = []
    w.idle.connect(lambda: idles.append(w.runner.is_busy()))
    with qtbot.waitSignal(w.runCancelled, timeout=1000):
        second = w.run()
    assert first.cancel_requested and second is not first and w.runner.is_busy()
    assert idles == []                      # a fit still runs
    w.cancel()
    assert idles == [False]
