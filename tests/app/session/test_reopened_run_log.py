"""A reopened session's Run log lists its runs (issue 33.6): it was empty, so the user could
not tell what the views show, how it came back, or with which parameters."""
import os

import numpy as np
import pytest

import app.session as S
from app.main_window import MainWindow
from app.settings import Settings


def _window(qtbot, tmp_path, name):
    w = MainWindow(settings=Settings(str(tmp_path / f"{name}.ini")), isolation="thread")
    qtbot.addWidget(w)
    w.show()
    return w


def _run(qtbot, w, method, **params):
    w.method_panel.set_method(method)
    w.method_panel.form().set_values(params)
    with qtbot.waitSignal(w.runFinished, timeout=60000) as blocker:
        assert w.run() is not None
    return blocker.args[0]


@pytest.fixture
def saved(qtbot, tmp_path):
    w = _window(qtbot, tmp_path, "first")
    with qtbot.waitSignal(w.datasetLoaded, timeout=30000):
        w.load_demo("iris")
    runs = [_run(qtbot, w, "pca", n_components=2), _run(qtbot, w, "coherence-pursuit", n_components=2)]
    path = str(tmp_path / "work.rss.json")
    w.data.save_session(path)
    w.close()
    return path, runs


def _reopen(qtbot, tmp_path, path):
    w = _window(qtbot, tmp_path, "second")
    with qtbot.waitSignal(w.datasetLoaded, timeout=60000):
        w.open_session(path)
    return w


@pytest.mark.slow
def test_the_reloaded_runs_are_listed_with_their_parameters(qtbot, tmp_path, saved):
    path, runs = saved
    w = _reopen(qtbot, tmp_path, path)
    entries = w.run_log.entries
    assert [e.method for e in entries] == ["PCA", "Coherence Pursuit"]
    assert [e.outcome for e in entries] == ["reloaded", "reloaded"]
    for e, res in zip(entries, runs):
        assert e.params == res.params and e.dataset == w.state.dataset.name
        assert e.detail == "from session work.rss.json"
        assert e.seconds == pytest.approx(res.elapsed)
    # What the user sees: one row per run, newest (the session's last) at the top.
    shown = [w.run_log.topLevelItem(i).text(1) for i in range(w.run_log.topLevelItemCount())]
    assert shown == ["Coherence Pursuit", "PCA"]
    assert w.run_log.topLevelItem(0).text(3) == "reloaded"
    w.close()


@pytest.mark.slow
def test_runs_fitted_again_are_listed_as_re_run(qtbot, tmp_path, saved):
    path, runs = saved
    for f in os.listdir(tmp_path):
        if f.endswith(S.RESULTS_SUFFIX):
            os.remove(tmp_path / f)
    w = _reopen(qtbot, tmp_path, path)
    assert [e.outcome for e in w.run_log.entries] == ["re-run", "re-run"]
    again = w.state.result("pca")
    np.testing.assert_allclose(again.sample_scores["spe"], runs[0].sample_scores["spe"], rtol=1e-7, atol=1e-10)
    w.close()
