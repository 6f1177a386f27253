"""Typed settings that need no window: the last session, remembered and reopened only when asked."""
import os

from app.settings import Settings


def test_last_session_is_remembered_only_when_asked(tmp_path, qapp):
    s = Settings(str(tmp_path / "s.ini"))
    path = tmp_path / "last.rss.json"
    path.write_text("{}")
    s.remember_session(path)
    assert s.last_session() is None  # the user has not asked for reopening
    assert s.last_session(only_if_enabled=False) == str(path)
    s.set_reopen_last(True)
    assert s.reopen_last() and s.last_session() == str(path)
    # written to the file: another Settings on it (the next launch) reads the same
    s.sync()
    again = Settings(str(tmp_path / "s.ini"))
    assert again.reopen_last() and again.last_session() == str(path)
    os.remove(path)
    assert s.last_session() is None     # a session that no longer exists is not offered


def _window(qtbot, path):
    from app.main_window import MainWindow
    w = MainWindow(settings=Settings(str(path)), isolation="thread")
    qtbot.addWidget(w)
    return w


def test_two_windows_on_one_file_never_undo_each_others_parameters(tmp_path, qtbot):
    """Both windows open on one settings file; each changes a parameter of its own and closes.
    The later close wrote its whole stale forms, undoing the first window's change."""
    path = tmp_path / "shared.ini"
    seed = Settings(str(path))
    seed.set_method_params("pcp", {"tol": 1e-6, "max_iter": 500})
    seed.sync()
    a, b = _window(qtbot, path), _window(qtbot, path)
    for w in (a, b):
        w.method_panel.set_method("pcp")
        assert w.method_panel.form("pcp").values()["tol"] == 1e-6
    a.method_panel.form("pcp").set_text("tol", "1e-05")
    b.method_panel.form("pcp").set_text("max_iter", "900")
    a.close()
    b.close()   # later, with tol = 1e-6 still in its form
    saved = Settings(str(path)).method_params("pcp")
    assert saved["tol"] == 1e-5 and saved["max_iter"] == 900
    # A third launch sees both changes.
    c = _window(qtbot, path)
    form = c.method_panel.form("pcp").values()
    assert form["tol"] == 1e-5 and form["max_iter"] == 900
    c.close()


def test_a_window_that_changed_nothing_writes_no_parameters(tmp_path, qtbot):
    path = tmp_path / "quiet.ini"
    a = _window(qtbot, path)
    a.method_panel.set_method("pca")
    other = Settings(str(path))
    other.set_method_params("pca", {"n_components": 4})   # another process, meanwhile
    other.sync()
    a.close()
    assert Settings(str(path)).method_params("pca") == {"n_components": 4}
