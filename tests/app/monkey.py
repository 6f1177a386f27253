"""A seeded GUI monkey: random sequences of what a user does with the window -- load a demo, a
file or a hostile file, run, cancel, switch view, export, save and reopen a session, close the
window and open a new one -- with random waits in between, so that work overlaps.

``tests/app/test_monkey.py`` runs a short sequence in CI; ``benchmarks/soak_gui.py`` runs long
ones by hand. Both fail on any exception that reaches ``sys.excepthook`` or
``threading.excepthook`` (an exception in a slot or a worker the window did not handle).
"""
from __future__ import annotations

import os
import sys
import threading
import time
import traceback
from pathlib import Path

import numpy as np
from PySide6.QtCore import QCoreApplication, QEventLoop
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QFileDialog, QMessageBox

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "files"
# Small demos only: the point is many interleaved actions, not long fits.
DEMOS = ("iris", "gaussian-2d", "clusters-3d", "cardio")
METHODS = ("pca", "coherence-pursuit", "residual", "esfs", "scw", "pcp")
# Files a user might open: good ones and hostile ones from the corpus.
FILES = ("odds-like.mat", "odds-like.npz", "tiff-mixed-pages.tif", "bomb-zeros.csv.gz", "mat-zlib-bomb.mat",
         "libsvm-huge-index.svm", "npz-labels-wrong-length.npz", "pickle.npy", "animated.gif")


class Unhandled:
    """Collects exceptions that reach the interpreter's last-resort hooks while installed."""

    def __init__(self):
        self.errors: list[str] = []

    def __enter__(self):
        self._sys, self._thread = sys.excepthook, threading.excepthook
        sys.excepthook = lambda t, v, tb: self.errors.append("".join(traceback.format_exception(t, v, tb)))
        threading.excepthook = lambda a: self.errors.append(
            f"thread {a.thread}: " + "".join(traceback.format_exception(a.exc_type, a.exc_value, a.exc_traceback)))
        return self

    def __exit__(self, *exc):
        sys.excepthook, threading.excepthook = self._sys, self._thread


def wait(ms: int) -> None:
    QTest.qWait(ms)


def wait_until(condition, timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if condition():
            return True
        QCoreApplication.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 20)
        time.sleep(0.005)
    return condition()


class Monkey:
    """Drives windows made by ``make_window()`` with actions drawn from ``seed``."""

    def __init__(self, make_window, workdir: Path, seed: int = 0):
        self.make_window = make_window
        self.workdir = Path(workdir)
        self.rng = np.random.default_rng(seed)
        self.window = make_window()
        self.window.show()
        self.log: list[str] = []
        self.sessions: list[str] = []
        self.counts: dict[str, int] = {}

    # -- the actions ---------------------------------------------------------------------------
    def load_demo(self):
        name = str(self.rng.choice(DEMOS))
        self.window.load_demo(name)
        return name

    def open_file(self):
        name = str(self.rng.choice(FILES))
        self.window.open_path(str(CORPUS / name))
        return name

    def run(self):
        w = self.window
        name = str(self.rng.choice(METHODS))
        w.method_panel.set_method(name)
        return f"{name}: {'started' if w.run() is not None else 'refused'}"

    def cancel(self):
        self.window.cancel()

    def switch_view(self):
        views = self.window.views
        names = views.available_views() if hasattr(views, "available_views") else []
        if not names:
            return "none available"
        name = str(self.rng.choice(names))
        views.show_view(name)
        return name

    def export(self):
        w = self.window
        folder = self.workdir / f"export{int(self.rng.integers(3))}"
        folder.mkdir(exist_ok=True)
        if self.rng.random() < 0.5:
            return f"results: {len(w.export_results_to(str(folder), overwrite=True))} file(s)"
        ext = str(self.rng.choice([".png", ".svg"]))
        return f"figure: {w.export_figure_to(str(folder / ('figure' + ext)))}"

    def save_session(self):
        w = self.window
        path = str(self.workdir / f"s{int(self.rng.integers(3))}.rss.json")
        original = QFileDialog.getSaveFileName
        QFileDialog.getSaveFileName = staticmethod(lambda *a, **k: (path, ""))
        try:
            w.save_session_dialog(as_new=True)
        finally:
            QFileDialog.getSaveFileName = original
        if os.path.exists(path):
            self.sessions.append(path)
        return path

    def open_session(self):
        if not self.sessions:
            return "no session yet"
        path = str(self.rng.choice(self.sessions))
        self.window.open_session(path)
        return path

    def dismiss(self):
        """Close whatever message box is open, as a user pressing its button would."""
        closed = 0
        for box in self.window.findChildren(QMessageBox):
            if box.isVisible():
                box.close()
                closed += 1
        return f"{closed} box(es)"

    def close_and_reopen(self):
        self.window.close()
        self.window = self.make_window()
        self.window.show()

    ACTIONS = {"load_demo": 4, "open_file": 2, "run": 5, "cancel": 2, "switch_view": 3, "export": 2,
               "save_session": 1, "open_session": 1, "dismiss": 2, "close_and_reopen": 1}

    # -- the loop ------------------------------------------------------------------------------
    def step(self) -> str:
        names = list(self.ACTIONS)
        weights = np.array([self.ACTIONS[n] for n in names], dtype=float)
        name = str(self.rng.choice(names, p=weights / weights.sum()))
        self.counts[name] = self.counts.get(name, 0) + 1
        result = getattr(self, name)()
        wait(int(self.rng.choice([0, 0, 5, 20, 60, 200])))
        line = f"{name}" + (f": {result}" if result is not None else "")
        self.log.append(line)
        return line

    def run_steps(self, n: int) -> None:
        for _ in range(n):
            self.step()

    def settle(self, timeout: float = 60.0) -> bool:
        """Wait until no load and no fit is running."""
        w = self.window
        return wait_until(lambda: not w.runner.is_busy() and not w.loader.is_busy(), timeout)

    def alive(self, timeout: float = 180.0) -> bool:
        """The window still works: it shows, loads a demo and finishes a fit (each within
        ``timeout`` seconds: after a Cancel the worker process starts afresh, which takes tens of
        seconds on a loaded machine)."""
        w = self.window
        self.dismiss()
        w.cancel()  # a long fit still running is not what this checks
        self.settle()
        done = []
        w.runFinished.connect(done.append)
        w.load_demo("iris")
        if not wait_until(lambda: w.state.dataset is not None and w.state.dataset.name == "iris"
                          and not w.loader.is_busy(), timeout):
            return False
        w.method_panel.set_method("pca")
        if w.run() is None:
            return False
        return wait_until(lambda: bool(done), timeout) and w.isVisible()
