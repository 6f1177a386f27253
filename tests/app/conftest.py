"""GUI test set-up: offscreen Qt, and settings redirected to a temporary folder so no test ever
reads or writes the user's real settings."""
import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _isolated_settings(tmp_path, monkeypatch):
    from PySide6.QtCore import QSettings

    folder = tmp_path / "settings"
    folder.mkdir()
    for scope in (QSettings.Scope.UserScope, QSettings.Scope.SystemScope):
        QSettings.setPath(QSettings.Format.IniFormat, scope, str(folder))
    monkeypatch.setenv("RSS_SETTINGS_FILE", str(folder / "studio.ini"))
    yield folder
