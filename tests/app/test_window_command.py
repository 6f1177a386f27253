"""The window command: a session whose data moved reopens with --data (issue 25)."""
import os

import numpy as np
import pytest

import app.session as S
from app.__main__ import _Launch, build_parser, main
from app.main_window import MainWindow
from app.settings import Settings


@pytest.fixture
def moved_session(qtbot, tmp_path):
    """A session saved with d.npy, whose data file then moved to moved/renamed.npy."""
    rng = np.random.default_rng(0)
    data = tmp_path / "d.npy"
    np.save(data, rng.standard_normal((40, 3)) @ rng.standard_normal((3, 6)))
    w = MainWindow(settings=Settings(str(tmp_path / "a.ini")))
    qtbot.addWidget(w)
    with qtbot.waitSignal(w.datasetLoaded, timeout=20000):
        w.open_path(str(data))
    w.method_panel.set_method("pca")
    with qtbot.waitSignal(w.runFinished, timeout=30000):
        w.run()
    path = str(tmp_path / "s.rss.json")
    S.save_session(path, S.session_from_state(w.state), results=w.state.results, dataset=w.state.dataset)
    w.close()
    (tmp_path / "moved").mkdir()
    os.replace(data, tmp_path / "moved" / "renamed.npy")
    return path, str(tmp_path / "moved" / "renamed.npy")


@pytest.mark.slow
def test_session_with_moved_data_opens_with_data_on_the_command_line(qtbot, tmp_path, moved_session):
    session, data = moved_session
    args = build_parser().parse_args(["--session", session, "--data", data])
    w = MainWindow(settings=Settings(str(tmp_path / "b.ini")))
    qtbot.addWidget(w)
    w.show()
    launch = _Launch(None, w, args)
    with qtbot.waitSignal(w.datasetLoaded, timeout=30000):
        launch.start()
    assert w.state.dataset is not None and w.state.dataset.n_samples == 40
    assert w.state.result("pca") is not None
    assert w.error_box is None or not w.error_box.isVisible()
    w.close()


def test_data_without_session_opens_the_file_and_two_data_files_are_refused(capsys):
    args = build_parser().parse_args(["--data", "x.csv"])
    assert args.session_data == "x.csv" and args.session is None
    with pytest.raises(SystemExit):
        main(["--session", "s.rss.json", "--data", "a.csv", "b.csv"])
    assert "give the session's data file once" in capsys.readouterr().err
