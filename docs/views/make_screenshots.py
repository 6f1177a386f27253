"""Screenshots of every result view on its showcase demo, for the README and for review.

Run by hand from the repository root (it fits robust PCA on video and MNIST: a few minutes):

    xvfb-run -a -s "-screen 0 1400x900x24" python docs/views/make_screenshots.py [view ...]

Writes docs/views/<view>.png: the result area as a user sees it, reduced to a 128-colour
palette (ImageMagick, when installed) so each stays near or under 100 KB.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))

from app._qt import ensure_app  # noqa: E402

SHOWCASE = {
    # view: (demo, [(method, params), ...], what to select or do before the shot)
    "scatter": ("usps-1-vs-8", [("pca", {}), ("coherence-pursuit", {})], "scatter"),
    "comparison": ("usps-1-vs-8", [("pca", {}), ("coherence-pursuit", {}), ("pcp", {})], "comparison"),
    "detail": ("mnist-3000", [("pcp", {})], "detail"),
    "decomposition": ("escalator", [("pcp", {})], "decomposition"),
    "ranking": ("clusters-3d", [("esfs", {})], "ranking"),
    "contour": ("gaussian-2d", [("residual", {"n_components": 1})], "contour"),
    "learning-curve": ("iris", [("scw", {"variant": "I", "shuffle": True, "random_state": 1}),
                                ("scw", {"variant": "II", "shuffle": True, "random_state": 1})], "learning-curve"),
}


def _prepare(name, views, state):
    import numpy as np

    v = views.show_view(name)
    ds = state.dataset
    if name == "scatter":
        v.method_box.set_key("coherence-pursuit")
        x, y = v.cloud.points()
        v.cloud.select_rect(np.percentile(x, 97), y.min() - 1, x.max() + 1, y.max() + 1)
    elif name == "comparison":
        from PySide6.QtCore import Qt

        v.table.sortItems(v.table.columnCount() - 3, Qt.SortOrder.DescendingOrder)  # by SPE of PCA
        v.table.selectRow(0)
    elif name == "detail":
        res = state.result("pcp")
        state.set_selection([int(np.argmax(res.sample_scores["sparse_score"]))])
    elif name == "decomposition":
        v.set_frame(int(0.6 * (ds.n_samples - 1)))
    elif name == "ranking":
        v.show_pair(0)
    return v


def shoot(name, out_dir=HERE, size=(1200, 760)):
    from app.state import AppState
    from app.views import ResultViews
    from robustcore.datasets import demo
    from robustcore.methods import get_method

    app = ensure_app()
    dname, fits, _ = SHOWCASE[name]
    state = AppState()
    ds = demo(dname)
    state.set_dataset(ds)
    views = ResultViews(state)
    views.resize(*size)
    views.show()
    for method, params in fits:
        print(f"  fitting {method} {params} on {dname} ...", flush=True)
        res = get_method(method).run(ds, params)
        for w in res.warnings:
            print("   warning:", w)
        state.add_result(res)
        state.set_current_method(method)
    _prepare(name, views, state)
    for _ in range(5):
        app.processEvents()
    path = os.path.join(out_dir, f"{name}.png")
    views.grab().save(path)
    if shutil.which("convert"):  # a 128-colour palette keeps a screenshot near 100 KB
        subprocess.run(["convert", path, "-colors", "128", f"PNG8:{path}"], check=True)
    print(f"{path}: {os.path.getsize(path) // 1024} KB")
    from PySide6.QtCore import QCoreApplication, QEvent

    views.close()
    views.deleteLater()  # now, not at exit (plot widgets outliving the app may crash Python)
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)


if __name__ == "__main__":
    for n in sys.argv[1:] or list(SHOWCASE):
        shoot(n)
