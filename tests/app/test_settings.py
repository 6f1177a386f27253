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
