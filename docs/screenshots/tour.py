"""A scripted tour of every result view of the window on three kinds of data, at three sizes,
with the project's legibility checker run over each view shown (issue 25's "done when").

Run by hand from the repository root (offscreen Qt, or under xvfb-run)::

    QT_QPA_PLATFORM=offscreen python docs/screenshots/tour.py [OUT_DIR] [SIZE,...]

and at a real 200 % (Qt scales by 2, on a 1920 x 1080 X screen; the window is 960 x 540 in
logical pixels, the screenshots 1920 x 1080)::

    QT_QPA_PLATFORM=xcb QT_SCALE_FACTOR=2 xvfb-run -s "-screen 0 1920x1080x24" \
        python docs/screenshots/tour.py OUT_DIR 200pct-960x540

The data: a wide table (2,000 x 40, columns in units 1e-3 to 1e3, 40 planted outliers marked
as known), a video (the first 40 frames of the bundled escalator demo) and a LIBSVM file (400
sparse samples, two classes), written to a temporary folder and opened with the project's
loader. Sizes: 1280 x 800, 1920 x 1080, and 960 x 540 (what a 1920 x 1080 screen at 200 %
gives: Qt scales fonts and widgets together, so the layout in logical pixels is the same).
Writes OUT_DIR/<size>/<data>-<view>.png (QWidget.grab of the whole window) and
OUT_DIR/report.txt: one line per view shown, with what the checker found. Exit status 1 when it
found anything. Fits run in this process (get_method(...).run), not in the window's worker.
"""
from __future__ import annotations

import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, ROOT)
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np  # noqa: E402

SIZES = {"1280x800": (1280, 800), "1920x1080": (1920, 1080), "200pct-960x540": (960, 540)}
# Methods fitted for each kind of data (every view one of them feeds).
FITS = {
    "table": ("pca", "coherence-pursuit", "pcp", "residual", "esfs"),
    "video": ("pca", "pcp", "online-rpca", "residual"),
    "libsvm": ("pca", "coherence-pursuit", "residual", "scw", "esfs"),
}


def wide_table(n: int = 2000, d: int = 40, seed: int = 0):
    """A table in mixed units with planted outliers (known), as a new user's spreadsheet."""
    from robustcore.datasets import Dataset
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 4)) @ rng.standard_normal((4, d)) + 0.2 * rng.standard_normal((n, d))
    bad = rng.choice(n, 40, replace=False)
    X[bad] += rng.standard_normal((40, d)) * 4
    units = 10.0 ** rng.uniform(-3, 3, d)
    truth = np.zeros(n, dtype=bool)
    truth[bad] = True
    names = [f"sensor_{j:02d} [{'mV' if u < 1 else 'kPa' if u < 100 else 'rpm'}]" for j, u in enumerate(units)]
    return Dataset(X=X * units, name="plant-sensors", feature_names=names, outliers=truth)


def video(frames: int = 40):
    from robustcore.datasets import Dataset, demo
    ds = demo("escalator")
    return Dataset(X=np.asarray(ds.X[:frames]), name=f"escalator (first {frames} frames)",
                   image_shape=ds.image_shape, frame_order=np.arange(frames),
                   sample_ids=list(ds.sample_ids[:frames]))


def libsvm_file(folder: str, n: int = 400, d: int = 60, seed: int = 1) -> str:
    """A small LIBSVM file: two classes, about 8 non-zeros per sample, 1-based indices."""
    rng = np.random.default_rng(seed)
    path = os.path.join(folder, "two-class.libsvm")
    with open(path, "w", encoding="ascii") as f:
        for i in range(n):
            y = 1 if i % 2 else -1
            cols = np.sort(rng.choice(d, 8, replace=False))
            vals = rng.standard_normal(8) + (0.8 * y * (cols < 10))
            f.write(f"{y} " + " ".join(f"{c + 1}:{v:.4f}" for c, v in zip(cols, vals)) + "\n")
    return path


def datasets(folder: str) -> dict:
    from robustcore.datasets import load
    return {"table": wide_table(), "video": video(), "libsvm": load(libsvm_file(folder))}


def fits(kind: str, ds) -> dict:
    from robustcore.methods import get_method
    out = {}
    for name in FITS[kind]:
        m = get_method(name)
        if m.needs_labels and ds.labels is None:
            continue
        out[name] = m.run(ds, {})
    return out


def settle(ms: int = 60) -> None:
    from PySide6.QtCore import QEventLoop, QTimer
    loop = QEventLoop()
    QTimer.singleShot(ms, loop.quit)
    loop.exec()


def show_all(window, ds, results) -> list[str]:
    """Put ``ds`` and ``results`` in the window; the names of the views that then have
    something to show."""
    window.set_dataset(ds)
    for name, res in results.items():
        window.state.add_result(res)
        window.method_panel.set_method(name)
    return list(window.views.available_views())


def tour_one(window, kind: str, ds, results, out: str | None, check) -> list[tuple[str, list[str]]]:
    """Every view available for ``ds``: shown, painted, checked (and saved when ``out``)."""
    found = []
    for view in show_all(window, ds, results):
        v = window.views.show_view(view)
        settle()
        window.grab()   # paint once: view boxes apply their ranges when painted
        settle(20)
        if out is not None:
            window.grab().save(os.path.join(out, f"{kind}-{view}.png"))
        found.append((view, check(v)))
    return found


def main() -> int:
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(tempfile.gettempdir(), "robust-studio-tour")
    sizes = sys.argv[2].split(",") if len(sys.argv) > 2 else list(SIZES)
    unknown = [s for s in sizes if s not in SIZES]
    if unknown:
        raise SystemExit(f"unknown size {', '.join(unknown)}; choose from {', '.join(SIZES)}")
    from app._qt import ensure_app
    from app.main_window import MainWindow
    from app.settings import Settings
    from tests.app.views.test_legible import legibility_problems

    ensure_app()
    tmp = tempfile.mkdtemp(prefix="tour_")
    data = datasets(tmp)
    results = {kind: fits(kind, ds) for kind, ds in data.items()}
    lines, bad = [], 0
    from PySide6.QtGui import QGuiApplication
    ratio = QGuiApplication.primaryScreen().devicePixelRatio()
    for size_name in sizes:
        size = SIZES[size_name]
        if ratio != 1:   # a real scale factor: say so in the folder and the report
            size_name = f"{size_name}-at-scale-{ratio:g}"
        folder = os.path.join(out, size_name)
        os.makedirs(folder, exist_ok=True)
        window = MainWindow(settings=Settings(os.path.join(tmp, f"{size_name}.ini")), isolation="thread")
        window.resize(*size)
        window.show()
        settle(200)
        for kind, ds in data.items():
            for view, problems in tour_one(window, kind, ds, results[kind], folder, legibility_problems):
                bad += bool(problems)
                lines.append(f"{size_name} {kind} {view}: " + ("; ".join(problems) if problems else "ok"))
                print(lines[-1], flush=True)
        window.close()
    with open(os.path.join(out, "report.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    print(f"{len(lines)} views shown, {bad} with problems; screenshots in {out}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
