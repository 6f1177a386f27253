"""``robust-studio`` and ``python -m app``: open the window, or run a command-line subcommand.

``robust-studio run|replay|methods|demos ...`` is the headless command line (:mod:`app.cli`).
Anything else opens the window::

    robust-studio [--demo NAME | DATAFILE] [--method NAME] [--run] [--session FILE [--data FILE]]
                  [--screenshot FILE.png]

``--data`` with ``--session`` names the session's data file where it lies now (moved, renamed, or
outside the session's folder): the session is reopened with it once its content is checked.
"""
from __future__ import annotations

import argparse
import os
import sys

CLI_COMMANDS = ("run", "replay", "methods", "demos")


def _last_session(settings) -> str | None:
    try:
        return settings.last_session()
    except Exception:  # noqa: BLE001 - unreadable settings must not stop the window opening
        return None


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="robust-studio",
        description="Robust Subspace Studio: robust subspace analysis of data with outliers. "
                    f"Subcommands for headless use: {', '.join(CLI_COMMANDS)} "
                    "(see 'robust-studio run --help').")
    p.add_argument("data", nargs="?", help="a data file or image folder to open")
    p.add_argument("--demo", metavar="NAME", help="open a bundled demo data set (see 'robust-studio demos')")
    p.add_argument("--method", metavar="NAME", help="choose this method in the side panel")
    p.add_argument("--run", action="store_true", help="start the fit once the data is loaded")
    p.add_argument("--session", metavar="FILE", help="open a saved session file")
    p.add_argument("--data", metavar="FILE", dest="session_data",
                   help="with --session: the session's data file where it lies now (moved, renamed or "
                        "outside the session's folder); its content is checked against the session")
    p.add_argument("--screenshot", metavar="FILE.png",
                   help="save a picture of the whole window (after the run with --run) and quit")
    p.add_argument("--settings", metavar="FILE.ini", help=argparse.SUPPRESS)
    return p


class _Launch:
    """Carries out the command-line requests in order, each once the previous has finished."""

    def __init__(self, app, window, args):
        self.app = app
        self.w = window
        self.args = args
        self.exit_code = 0
        self._shot_done = False

    def start(self) -> None:
        a, w = self.args, self.w
        if a.method and not w.method_panel.set_method(a.method):
            self._fail(f"unknown or unavailable method {a.method!r}; choose one of: "
                       f"{', '.join(n for n in w.methods if n not in w.method_panel.unavailable())}")
            return
        w.datasetLoaded.connect(self._data_ready)
        w.loadFailed.connect(lambda msg: self._fail(msg))
        w.idle.connect(self._run_over)
        if a.session:
            w.open_session(a.session, data_path=a.session_data or a.data)
        elif a.demo:
            w.load_demo(a.demo)
        elif a.data:
            w.open_path(a.data)
        elif not a.screenshot and (last := _last_session(w.settings)):
            w.open_session(last)  # the user asked for it: File > Reopen last session at start
        else:
            self._maybe_screenshot()

    def _data_ready(self, ds) -> None:
        if self.args.run:
            if self.w.run() is None:
                self._fail(self.w.method_panel.run_block_reason() or "cannot run")
        else:
            self._maybe_screenshot()

    def _run_over(self) -> None:
        if self.args.run:
            self._maybe_screenshot()

    def _fail(self, message: str) -> None:
        print(f"robust-studio: {message}", file=sys.stderr)
        if self.args.screenshot:
            self.exit_code = 2
            self._maybe_screenshot()

    def _maybe_screenshot(self) -> None:
        if not self.args.screenshot or self._shot_done:
            return
        self._shot_done = True
        from PySide6.QtCore import QTimer

        # Let layouts settle and the views draw before grabbing.
        QTimer.singleShot(400, self._grab)

    def _grab(self) -> None:
        path = os.path.abspath(self.args.screenshot)
        pix = self.w.grab()
        if not pix.save(path):
            print(f"robust-studio: could not write {path}", file=sys.stderr)
            self.exit_code = 2
        else:
            print(path)
        self.w.close()


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in CLI_COMMANDS:
        from . import cli
        return cli.main(argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.session_data and not args.session:
        if args.data and args.data != args.session_data:
            parser.error("--data names a session's data file: use it with --session FILE, or open a "
                         "data file by naming it alone (robust-studio FILE)")
        args.data = args.session_data   # 'robust-studio --data FILE' opens FILE
    elif args.session and args.data and args.session_data and args.data != args.session_data:
        parser.error("two data files for one session: give the session's data file once, with --data")
    if args.screenshot and not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY") \
            and sys.platform.startswith("linux"):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

    from ._platform_libs import platform_problem
    problem = platform_problem()
    if problem:         # say what is missing instead of Qt's abort
        print(problem, file=sys.stderr)
        return 1
    from ._qt import ensure_app, hold_main_thread_garbage
    app = ensure_app([sys.argv[0] if sys.argv else "robust-studio"])
    # Cycles are collected on this thread alone until the process ends, not only while a window
    # is open: after the last one closes, a warm-up or load thread may still be importing, and a
    # collection it started would destroy the window's Qt objects there (app._qt).
    hold_main_thread_garbage()
    from .main_window import MainWindow
    from .settings import Settings

    window = MainWindow(settings=Settings(args.settings) if args.settings else None)
    window.show()
    launch = _Launch(app, window, args)
    from PySide6.QtCore import QTimer

    from .writing import install_termination_cleanup
    # SIGTERM removes the temporaries of exports in progress (app.writing); Python runs the
    # handler only when the main thread runs Python code, which this timer makes happen.
    install_termination_cleanup()
    tick = QTimer()
    tick.timeout.connect(lambda: None)
    tick.start(250)
    QTimer.singleShot(0, launch.start)
    code = app.exec()
    close_down(window)
    return launch.exit_code or int(code)


def close_down(window) -> None:
    """After the event loop: the window closed, every background thread joined (app.tasks), then
    the window deleted and the cycles it was in collected, here on the GUI thread while the
    QApplication lives. Left to the interpreter's exit, they went in whatever order finalisation
    chose, after the QApplication: a window process that had run a fit then ended in a
    segmentation fault (tests/app/first_open_probe.py --run pca, exit 139, issue 33)."""
    import gc

    import shiboken6

    from .tasks import _join_live_threads
    window.close()
    _join_live_threads()
    if shiboken6.isValid(window):
        shiboken6.delete(window)
    gc.collect()


if __name__ == "__main__":
    sys.exit(main())
