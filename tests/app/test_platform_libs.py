"""Before Qt starts, robust-studio names the missing system libraries and the apt-get command,
instead of Qt's "could not load the platform plugin" abort."""
import re
from pathlib import Path

from app import __main__ as launcher
from app import _platform_libs as P


def test_nothing_missing_here_and_the_table_covers_what_qt_links():
    assert P.missing_libraries("xcb") == [] and P.missing_libraries("offscreen") == []
    assert P.platform_problem() is None


def test_missing_libraries_become_an_apt_line(monkeypatch):
    monkeypatch.setattr(P, "_ldd_missing", lambda path: ["libxcb-icccm.so.4", "libxcb-keysyms.so.1"]
                        if "libqxcb" in str(path) else [])
    monkeypatch.setenv("QT_QPA_PLATFORM", "xcb")
    assert P.missing_libraries("xcb") == ["libxcb-icccm.so.4", "libxcb-keysyms.so.1"]
    text = P.platform_problem()
    assert "missing: libxcb-icccm.so.4, libxcb-keysyms.so.1" in text
    assert "sudo apt-get install -y libxcb-icccm4 libxcb-keysyms1" in text


def test_robust_studio_stops_with_the_message_before_qt(monkeypatch, capsys):
    monkeypatch.setattr(P, "platform_problem", lambda: "cannot open its window: missing libfoo")
    created = []
    monkeypatch.setattr("app._qt.ensure_app", lambda *a, **k: created.append(1))
    assert launcher.main(["--demo", "iris"]) == 1
    assert "missing libfoo" in capsys.readouterr().err and not created


def test_readme_and_ci_install_exactly_the_table():
    root = Path(__file__).resolve().parents[2]
    line = re.search(r"apt-get install -y ([^\n`]+)", (root / "README.md").read_text()).group(1)
    assert sorted(set(line.split()) - {"python3", "python3-venv"}) == P.APT_PACKAGES
    ci = (root / ".ci" / "run").read_text()
    assert "app/_platform_libs.py" in ci or all(p in ci for p in P.APT_PACKAGES)


def _headless_env(**extra):
    import os
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    env.update(extra)
    return env


def test_no_display_is_said_instead_of_qts_abort():
    """Issue 24: with the libraries installed but no display, Qt aborted (exit 134) asking to
    reinstall libxcb-cursor0. The launcher says what to do instead, before Qt starts."""
    import subprocess
    import sys
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-m", "app", "--demo", "iris"], cwd=root, env=_headless_env(),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 1, out.stderr[-2000:]
    assert P.NO_DISPLAY in out.stderr and "libxcb-cursor0" not in out.stderr


def test_display_problem_only_without_any_display(monkeypatch):
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"):
        monkeypatch.delenv(name, raising=False)
    assert P.NO_DISPLAY in P.display_problem()
    monkeypatch.setenv("QT_QPA_PLATFORM", "offscreen")
    assert P.display_problem() is None
    monkeypatch.delenv("QT_QPA_PLATFORM")
    monkeypatch.setenv("DISPLAY", ":0")
    monkeypatch.setattr(P, "_x_server_answers", lambda display, timeout: True)   # a server on :0
    assert P.display_problem() is None
