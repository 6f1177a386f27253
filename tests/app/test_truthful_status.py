"""Status bar and Method panel never state what is no longer true: a discarded run, other data,
parameters set for another data set (issue 25, item 5)."""
import time

import numpy as np
import pytest

from app.main_window import MainWindow
from app.settings import Settings
from robustcore._params import Param
from robustcore.datasets import Dataset
from robustcore.methods import METHODS, Method


def _slow_adapter(est, dataset, values, rep):
    for i in range(values["steps"]):
        time.sleep(0.01)
        rep(0.9 * i / values["steps"], f"step {i}")
    return METHODS["pca"].adapter(est, dataset, {"n_components": values["n_components"]}, rep.span(0.9, 1))


def _pca_class():
    from robustcore.subspace.pca import PCA
    return PCA


SLOW = Method("slow", "Slow PCA", "PCA after a delay (tests).", _pca_class, _slow_adapter,
              extra_params=(Param("steps", int, 50, "Delay steps of 10 ms.", low=1),))


def _table(name, d=12, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((80, 3)) @ rng.standard_normal((3, d)) + 0.01 * rng.standard_normal((80, d))
    return Dataset(X=X, name=name)


@pytest.fixture
def make_window(qtbot, tmp_path):
    made = []

    def make(keep=None):
        s = Settings(str(tmp_path / "studio.ini"))
        if keep is not None:
            s.set_keep_params_on_new_data(keep)
        w = MainWindow(settings=s, methods=dict(METHODS, slow=SLOW))
        qtbot.addWidget(w)
        w.show()
        made.append(w)
        return w
    yield make
    for w in made:
        w.close()


@pytest.mark.slow
def test_discarded_run_leaves_no_finished_message_and_new_data_clears_it(qtbot, make_window):
    w = make_window()
    w.set_dataset(_table("first"))
    w.method_panel.set_method("pca")
    with qtbot.waitSignal(w.runFinished, timeout=30000):
        w.run()
    assert "finished in" in w.statusBar().currentMessage()
    w.method_panel.set_method("slow")
    w.method_panel.form().set_values({"steps": 40})
    with qtbot.waitSignal(w.runDiscarded, timeout=30000):
        w.run()
        w.method_panel.form().set_text("n_components", "3")
    bar = w.statusBar().currentMessage()
    assert "finished in" not in bar and "discarded" in bar
    assert "discarded" in w.method_panel.status.text()
    w.set_dataset(_table("second", seed=1))
    text = w.method_panel.status.text()
    assert "discarded" not in text and "Data: second." in text


def test_parameters_set_for_one_data_set_are_reset_for_the_next(qtbot, make_window):
    w = make_window()
    assert w.act_keep_params.isChecked() is False
    w.set_dataset(_table("first"))
    w.method_panel.set_method("pca")
    w.method_panel.form().set_values({"n_components": 5})
    w.set_dataset(_table("second", seed=1))
    assert w.method_panel.form("pca").values()["n_components"] == METHODS["pca"].defaults()["n_components"]
    text = w.method_panel.status.text()
    assert "reset" in text and "n_components = 5" in text and "first" in text


def test_kept_parameters_are_announced(qtbot, make_window):
    w = make_window(keep=True)
    assert w.act_keep_params.isChecked()
    w.set_dataset(_table("first"))
    w.method_panel.set_method("pca")
    w.method_panel.form().set_values({"n_components": 5})
    w.set_dataset(_table("second", seed=1))
    assert w.method_panel.form("pca").values()["n_components"] == 5
    text = w.method_panel.status.text()
    assert "kept from first" in text and "n_components = 5" in text


def test_the_keep_setting_is_a_menu_choice_that_persists(qtbot, make_window, tmp_path):
    w = make_window()
    w.act_keep_params.trigger()
    assert Settings(str(tmp_path / "studio.ini")).keep_params_on_new_data() is True
