"""The window's start (issue 33): the first Open never waits on an import, the window fits its
screen, and it configures pyqtgraph itself."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from app.main_window import MainWindow
from app.settings import Settings

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def _probe(*args, env=None) -> dict:
    """tests/app/first_open_probe.py in a new interpreter (cold imports): its JSON line."""
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(ROOT), **(env or {})}
    out = subprocess.run([sys.executable, str(HERE / "first_open_probe.py"), *args], env=env, cwd=ROOT,
                         capture_output=True, text=True, timeout=280)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_first_open_and_run_import_nothing_on_the_gui_thread_and_wait_for_no_import():
    """From a new process: the window shown, a demo opened at once, then PCA run on it. Before
    issue 33 the GUI thread imported robustcore.compare on Open, found sklearn.base half imported
    by the warm-up thread and stood waiting for it (28 s at load 12); the probe's import hooks
    record every module the GUI thread loads from outside app/Qt/pyqtgraph/the standard library,
    and every module it needed while another thread was importing it."""
    report = _probe("--demo", "gaussian-2d", "--run", "pca")
    assert report["problems"] == []
    assert report["waits"] == [], "the GUI thread waited for another thread's import"
    assert report["loads"] == [], "the GUI thread imported heavy modules itself"


@pytest.mark.slow
def test_an_out_of_core_open_and_run_import_nothing_on_the_gui_thread(tmp_path):
    """From a new process, a table opened out of core, then PCA run on it. Dask asked for a
    scheduler by name imports distributed to look for a client, and the Data panel computed the
    table's first rows so on the GUI thread (1.8 s at load 5), then on the loading thread; it
    computes them as robustcore does, on this machine's threads, and nothing imports it."""
    path = tmp_path / "t.npy"
    X = np.random.default_rng(0).standard_normal((3000, 8))
    np.save(path, X)
    report = _probe("--lazy", str(path), "--run", "pca", "--head")
    assert report["problems"] == []
    assert report["waits"] == [], "the GUI thread waited for another thread's import"
    assert report["loads"] == [], "the GUI thread imported heavy modules itself"
    assert report["distributed"] is False, "the window imported dask.distributed"
    assert report["head"] == [[f"{v:.4g}" for v in row] for row in X[:3]]   # the rows the panel shows


def test_the_warm_up_covers_the_modules_the_window_imports():
    """What the warm-up imports first is read from the app's source: robustcore.compare (whose
    import pulls scikit-learn in) and the loaders' table are among it, the command line's
    libraries are not, and app's own modules and Qt are never imported off the GUI thread."""
    from app.warm_up import window_imports
    found = dict(window_imports())
    assert "compare" in found["robustcore"]
    assert "LOADERS" in found["robustcore.datasets"]
    assert not any(m.partition(".")[0] in {"app", "PySide6", "pyqtgraph", "shiboken6"} for m in found)
    cli_only = {m for m in found if m.startswith("matplotlib")}
    assert cli_only == set()


def test_results_wait_for_the_warm_up_of_the_window_modules_not_the_gui_thread():
    """window_ready blocks a result's thread while a warm-up imports the window's modules, lets
    it through when that ends, and gives up with Cancelled when the job is cancelled."""
    import threading

    from app.warm_up import _GATE, window_ready
    from robustcore._progress import Cancelled

    window_ready()   # no warm-up: at once
    passed = threading.Event()
    with _GATE.closed():
        t = threading.Thread(target=lambda: (window_ready(), passed.set()))
        t.start()
        assert not passed.wait(0.3)
        with pytest.raises(Cancelled):
            window_ready(lambda: True)
    t.join(5)
    assert passed.is_set()


def _screen_config(tmp_path, width, height) -> str:
    cfg = tmp_path / "screen.json"
    cfg.write_text(json.dumps({"screens": [{"name": "small", "x": 0, "y": 0, "width": width, "height": height,
                                            "logicalDpi": 96, "logicalBaseDpi": 96, "dpr": 1}]}))
    return f"offscreen:configfile={cfg}"


_ON_SCREEN = """
import json, sys, tempfile
from PySide6.QtWidgets import QApplication
qapp = QApplication([])
from app.main_window import MainWindow
from app.settings import Settings
w = MainWindow(settings=Settings(tempfile.mktemp(suffix='.ini')), isolation='thread')
w.show()
for _ in range(20):
    qapp.processEvents()
room = w.screen().availableGeometry()
def rect(b):
    tl, br = b.mapToGlobal(b.rect().topLeft()), b.mapToGlobal(b.rect().bottomRight())
    return [tl.x(), tl.y(), br.x(), br.y()]
f = w.frameGeometry()
print(json.dumps({"screen": [room.x(), room.y(), room.right(), room.bottom()],
                  "frame": [f.x(), f.y(), f.right(), f.bottom()],
                  "run": rect(w.method_panel.run_button), "cancel": rect(w.method_panel.cancel_button),
                  "visible": [w.method_panel.run_button.isVisible(), w.method_panel.cancel_button.isVisible()]}))
w.close()
"""


@pytest.mark.slow
@pytest.mark.parametrize("size", [(1280, 800), (1024, 600)])
def test_the_window_fits_a_small_screen_with_run_and_cancel_on_it(tmp_path, size):
    """On a 1280 x 800 screen the window opened at 1360 x 860 and Cancel was past its right edge."""
    env = {**os.environ, "QT_QPA_PLATFORM": _screen_config(tmp_path, *size), "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", _ON_SCREEN], env=env, cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    r = json.loads(out.stdout.strip().splitlines()[-1])
    x0, y0, x1, y1 = r["screen"]
    assert [x0, y0, x1, y1] == [0, 0, size[0] - 1, size[1] - 1]

    def inside(box):
        return x0 <= box[0] and y0 <= box[1] and box[2] <= x1 and box[3] <= y1
    assert inside(r["frame"]), r
    assert r["visible"] == [True, True]
    assert inside(r["run"]) and inside(r["cancel"]), r


def test_a_large_screen_keeps_the_default_size(qtbot, tmp_path):
    """The offscreen test screen (800 x 800) is smaller than the default: the window is clamped to it;
    it is never enlarged past the default either."""
    from app.main_window import DEFAULT_SIZE
    w = MainWindow(settings=Settings(str(tmp_path / "s.ini")), isolation="thread")
    qtbot.addWidget(w)
    room = w.screen().availableGeometry()
    assert w.width() == min(DEFAULT_SIZE[0], room.width())
    assert w.height() <= min(DEFAULT_SIZE[1], room.height())
    assert room.contains(w.frameGeometry())


@pytest.mark.slow
def test_a_window_in_a_plain_qapplication_draws_table_heatmaps_the_right_way_round(qtbot, tmp_path, monkeypatch):
    """A script's own QApplication, not app._qt.ensure_app: pyqtgraph still has its column-major
    default. PCP's L + S of a 40 x 6 table must draw 40 sample rows and 6 feature columns, each
    pixel the table's entry (it drew 40 columns under swapped labels)."""
    import pyqtgraph as pg

    from app import _qt
    from robustcore.datasets import Dataset
    from robustcore.methods import get_method

    monkeypatch.setattr(_qt, "_configured", False)
    pg.setConfigOptions(imageAxisOrder="col-major")   # a new process's pyqtgraph
    try:
        rng = np.random.default_rng(3)
        X = np.outer(np.arange(40.0), np.ones(6)) + 0.01 * rng.standard_normal((40, 6))
        ds = Dataset(X, name="table")
        res = get_method("pcp").run(ds, {})
        w = MainWindow(settings=Settings(str(tmp_path / "s.ini")), isolation="thread")
        qtbot.addWidget(w)
        w.resize(1280, 800)
        w.show()
        w.set_dataset(ds)
        w.state.add_result(res)
        w.method_panel.set_method("pcp")
        v = w.views.show_view("decomposition")
        qtbot.wait(60)
        w.grab()
        img = v.pictures.images["original"]
        assert img.axisOrder == "row-major"
        assert (img.width(), img.height()) == (6, 40)
        # The drawn rows are the table's samples: they grow down every column as X does (the
        # colours are scaled per column), and each row is nearly one value across the features.
        drawn = np.asarray(img.image, float)
        assert np.all(np.diff(drawn, axis=0) > 0)
        assert np.ptp(drawn, axis=1).max() < np.ptp(drawn[:, 0]) / 10
        # The samples run down the panel: its vertical range spans the 40 rows, the horizontal the 6 features.
        (x0, x1), (y0, y1) = v.pictures.panels["original"].getViewBox().viewRange()
        assert x1 - x0 < 10 < 35 < y1 - y0
    finally:
        pg.setConfigOptions(imageAxisOrder="row-major")


def test_a_display_no_server_answers_on_is_a_message_not_qts_abort(monkeypatch, tmp_path):
    """DISPLAY names a display whose X server is not (yet) running: Qt aborted (SIGABRT, exit
    134) before any window, asking to reinstall libxcb-cursor0. The check waits for a server
    still starting, then says what is wrong; a listening server passes."""
    import socket

    from app._platform_libs import unreachable_display

    monkeypatch.delenv("QT_QPA_PLATFORM", raising=False)
    number = next(n for n in range(4000, 4100) if not os.path.exists(f"/tmp/.X11-unix/X{n}"))
    message = unreachable_display(f":{number}", wait=0.3)
    assert message is not None and "\n" not in message and f"':{number}'" in message
    assert "offscreen" in message
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(f"\0/tmp/.X11-unix/X{number}")   # Linux's abstract name, as Xvfb's
        server.listen(1)
        assert unreachable_display(f":{number}.0", wait=0.3) is None
    monkeypatch.setenv("QT_QPA_PLATFORM", "offscreen")
    assert unreachable_display(f":{number}", wait=0.3) is None   # Qt will not look for X
