"""What the window process imports ahead of need (issue 33): the window's warm-up imports only what a
first Open's drawing needs; nothing else is imported while the window stands idle between a
user's clicks (an import holds the GIL in stretches the GUI thread cannot cut short). A fit's
estimator is imported by the thread that receives its result, while the worker fits."""
import dataclasses
import os
import threading

import numpy as np
import pytest

import app.warm_up as wu


@pytest.fixture
def recorded(monkeypatch):
    """The warm-up's imports, recorded instead of done: (module, gate closed)."""
    seen = []
    monkeypatch.setattr(wu, "window_imports", lambda: (("robustcore", ("compare",)), ("zarr", ()),
                                                       ("PIL", ("Image",)), ("robustcore.result", ("RunResult",))))
    monkeypatch.setattr(wu, "_import_as_written", lambda m, n: seen.append((m, wu.window_warming())))
    monkeypatch.setattr(wu, "warm_steps", lambda **k: pytest.fail("the window's warm-up imported an estimator"))
    return seen


def test_the_warm_up_imports_the_drawings_modules_with_the_gate_closed_and_nothing_more(recorded):
    wu.warm_up()
    assert recorded == [("robustcore", True), ("robustcore.result", True)]
    assert not wu.window_warming()


def test_a_stop_ends_the_warm_up(recorded):
    wu.warm_up(lambda: True)
    assert recorded == [] and not wu.window_warming()


@pytest.mark.slow
def test_after_an_open_and_a_run_the_idle_window_imports_nothing():
    """From a new process: a demo opened, PCA run and drawn, then 6 s idle. The warm-up used to
    import zarr, PyAV, Pillow, the digest and every estimator once the window had been idle
    0.2 s, which fell between a user's clicks and froze the window 100-380 ms (20,000-row tour)."""
    from tests.app.test_window_start import _probe
    report = _probe("--demo", "gaussian-2d", "--run", "pca", "--idle", "6")
    assert report["problems"] == []
    assert report["idle_loads"] == [], "the idle window imported modules ahead of need"
    assert report["later_loaded"] == []


_FACTORY_CALLS = []


def _recorded_pca_class():
    _FACTORY_CALLS.append((os.getpid(), threading.current_thread().name))
    from robustcore.subspace.pca import PCA
    return PCA


@pytest.mark.slow
def test_a_fits_estimator_is_imported_by_the_thread_that_receives_its_result():
    """FitPool imports the estimator a result's unpickling needs on the thread that waits for it,
    once the job is sent (the worker fits meanwhile); never on the GUI thread, never ahead."""
    from app.fit_process import FitPool
    from robustcore.datasets import Dataset
    from robustcore.methods import METHODS

    method = dataclasses.replace(METHODS["pca"], factory=_recorded_pca_class)
    X = np.random.default_rng(1).standard_normal((60, 5)) @ np.diag([5, 3, 1, 0.5, 0.1])
    pool = FitPool()
    out = {}
    try:
        t = threading.Thread(name="receiver", target=lambda: out.setdefault(
            "result", pool.run(method, Dataset(X=X, name="d"), {"n_components": 2}, lambda f, m: True)))
        t.start()
        t.join(240)
        assert not t.is_alive()
    finally:
        pool.close()
    assert out["result"].subspace.components.shape == (2, 5)
    assert (os.getpid(), "receiver") in _FACTORY_CALLS
    assert all(name == "receiver" for pid, name in _FACTORY_CALLS if pid == os.getpid())


def test_a_load_imports_the_chosen_methods_estimator_on_its_own_thread(qtbot, tmp_path, monkeypatch):
    """Imported only when Run is pressed, the estimator's import fell inside the 20,000-row Run's
    arrival gap: the thread that loads the data imports it, for the method chosen then."""
    import app.data_controller as dc
    from app.main_window import MainWindow
    from app.settings import Settings

    seen = []
    monkeypatch.setattr(dc, "for_result", lambda method: seen.append((method.name, threading.current_thread()
                                                                       is threading.main_thread())))
    w = MainWindow(settings=Settings(str(tmp_path / "s.ini")), isolation="thread")
    qtbot.addWidget(w)
    w.method_panel.set_method("robpca")
    with qtbot.waitSignal(w.datasetLoaded, timeout=60_000):
        w.load_demo("gaussian-2d")
    assert seen == [("robpca", False)]
    w.close()
