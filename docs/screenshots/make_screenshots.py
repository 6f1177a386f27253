"""Screenshots of the window's main states, for README.md and for checking the layout by eye.

Run by hand under a virtual display (from the repository root)::

    xvfb-run -a -s "-screen 0 1400x900x24" python docs/screenshots/make_screenshots.py [OUT_DIR]

Writes empty.png, data-loaded.png, fit-running.png and fit-done.png (default: this folder),
using a throw-away settings file so your own settings are neither used nor changed. With
ImageMagick's ``convert`` on the PATH the images are reduced to 256 colours.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))

from PySide6.QtCore import QEventLoop, QTimer  # noqa: E402

from app._qt import ensure_app  # noqa: E402
from app.main_window import MainWindow  # noqa: E402
from app.settings import Settings  # noqa: E402


def wait(ms: int) -> None:
    loop = QEventLoop()
    QTimer.singleShot(ms, loop.quit)
    loop.exec()


def wait_for(signal, timeout_ms: int = 120_000) -> None:
    loop = QEventLoop()
    signal.connect(loop.quit)
    QTimer.singleShot(timeout_ms, loop.quit)
    loop.exec()
    signal.disconnect(loop.quit)


def save(w, out: str, name: str) -> None:
    wait(300)
    path = os.path.join(out, name)
    w.grab().save(path)
    # 256 colours keep text and markers crisp at a third of the size (README images <= 150 KB).
    if shutil.which("convert"):
        subprocess.run(["convert", path, "-dither", "None", "-colors", "256", f"PNG8:{path}"], check=False)
    print(f"{path}: {os.path.getsize(path) // 1024} KB")


def main() -> None:
    out = sys.argv[1] if len(sys.argv) > 1 else HERE
    os.makedirs(out, exist_ok=True)
    app = ensure_app()
    tmp = tempfile.mkdtemp()
    w = MainWindow(settings=Settings(os.path.join(tmp, "settings.ini")))
    w.resize(1360, 860)
    w.show()
    save(w, out, "empty.png")

    w.load_demo("usps-1-vs-8")
    wait_for(w.datasetLoaded)
    w.method_panel.set_method("pcp")
    save(w, out, "data-loaded.png")

    # A deliberately long fit (tiny tolerance) to show progress, then cancel it.
    w.method_panel.form().set_values({"tol": 1e-300, "max_iter": 100000})
    w.run()
    while w.method_panel.progress.value() == 0 and w.runner.is_busy():
        wait(100)
    wait(4000)
    save(w, out, "fit-running.png")
    w.cancel()

    w.method_panel.form().reset()
    w.method_panel.set_method("coherence-pursuit")
    w.method_panel.form().set_values({"n_components": 2})
    w.run()
    wait_for(w.idle)
    save(w, out, "fit-done.png")
    w.close()
    app.processEvents()


if __name__ == "__main__":
    main()
