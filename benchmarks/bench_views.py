"""Scatter view at 100,000 points: our grouped drawing against pyqtgraph's per-point path.

    QT_QPA_PLATFORM=offscreen python benchmarks/bench_views.py [n]

Reports the best and the median wall times and RATIOS (reference / ours), measured in the same
run, after the run's conditions, for:
building and painting the cloud (ours: one item per colour group; reference: one
ScatterPlotItem with a brush per point, pyqtgraph's documented way of colouring points);
recolouring every point; finding the point under the mouse (ours: numpy in screen pixels;
reference: ScatterPlotItem.pointsAt); selecting a rectangle (reference: a Python loop).
"""
from __future__ import annotations

import os
import sys

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

import _bench  # noqa: E402


def timeit(fn, repeat=5, per=1):
    """Timing of ``repeat`` calls, each divided by ``per`` (operations per call)."""
    return _bench.Timing([t / per for t in _bench.timed(fn, repeat).runs])


def main(n=100_000):
    from app._qt import ensure_app
    import app.views  # noqa: F401  (reference-count guard)
    import pyqtgraph as pg
    from PySide6.QtCore import QPointF

    from app.state import AppState
    from app.views import _style as st
    from app.views._cloud import PointCloud, new_plot

    qapp = ensure_app()
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(n), rng.standard_normal(n)
    codes = rng.integers(0, 4, n)
    w = pg.GraphicsLayoutWidget()
    w.resize(900, 700)
    w.show()
    plot = new_plot(w.ci, row=0, col=0)
    state = AppState()
    cloud = PointCloud(plot, state)
    shared = st.category_brushes(codes, 4)

    rows = []
    ours = timeit(lambda: (cloud.set_points(x, y, brushes=shared), qapp.processEvents()), 3)
    cloud.clear()
    ref_item = pg.ScatterPlotItem(pxMode=True, size=6, pen=None)
    plot.addItem(ref_item)
    ref = timeit(lambda: (ref_item.setData(x=x, y=y, brush=shared), qapp.processEvents()), 3)
    rows.append(("build + first paint", ref, ours))

    other = st.category_brushes((codes + 1) % 4, 4)
    ref = timeit(lambda: (ref_item.setBrush(other), qapp.processEvents()), 3)
    plot.removeItem(ref_item)
    cloud.set_points(x, y, brushes=shared)
    ours = timeit(lambda: (cloud.set_brushes(other), qapp.processEvents()), 3)
    rows.append(("recolour all points", ref, ours))

    cloud.set_points(x, y, brushes=shared)
    qapp.processEvents()
    probes = rng.standard_normal((50, 2))
    ours = timeit(lambda: [cloud.index_at(px, py) for px, py in probes], 3, per=len(probes))
    ref_item.setData(x=x, y=y, brush=shared)
    ref = timeit(lambda: [ref_item.pointsAt(QPointF(px, py)) for px, py in probes], 3, per=len(probes))
    rows.append(("point under the mouse", ref, ours))

    ours = timeit(lambda: cloud.select_rect(-0.5, -0.5, 0.5, 0.5), 5)
    ref = timeit(lambda: [i for i, (a, c) in enumerate(zip(x, y)) if -0.5 <= a <= 0.5 and -0.5 <= c <= 0.5], 1)
    rows.append(("rectangle selection (vs Python loop)", ref, ours))

    print("# bench_views\n")
    print(_bench.conditions([f"n = {n:,} points"]) + "\n")
    print("| operation | reference best / median | ours best / median | reference / ours (best, median) |")
    print("|---|--:|--:|--:|")
    for name, r, o in rows:
        print(f"| {name} | {r} | {o} | {_bench.ratio(r, o)} |")
    return rows


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)
