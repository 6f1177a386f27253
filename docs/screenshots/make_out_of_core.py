"""Screenshots of out-of-core data in the window, and two measurements taken on the way.

Run by hand under a virtual display (from the repository root)::

    xvfb-run -a -s "-screen 0 1400x900x24" python docs/screenshots/make_out_of_core.py [OUT_DIR] [ROWS]

Writes a Zarr table of ROWS x 6 float32 (default 2,000,000: rank 2 + noise + 40 planted outliers)
to a temporary folder, opens it under a 64 MB memory budget, accepts the "Open out of core"
offer and runs PCA out of core. Saves lazy-offer.png, lazy-data-panel.png and
density-scatter.png; prints the window process's memory after the open and the longest stall
of a 10 ms timer in the window while the fit ran.
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))

import numpy as np  # noqa: E402
from PySide6.QtCore import QTimer  # noqa: E402
from PySide6.QtWidgets import QPushButton  # noqa: E402

from app._qt import ensure_app  # noqa: E402
from app.main_window import MainWindow  # noqa: E402
from app.settings import Settings  # noqa: E402

from make_screenshots import save, wait, wait_for  # noqa: E402


def rss_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def write_table(path: str, n: int) -> None:
    import zarr
    rng = np.random.default_rng(7)
    basis = rng.normal(size=(2, 6))
    z = zarr.open_array(path, mode="w", shape=(n, 6), chunks=(250_000, 6), dtype="float32")
    for s0 in range(0, n, 250_000):
        m = min(250_000, n - s0)
        z[s0:s0 + m] = (rng.normal(size=(m, 2)) * [3, 1.5]) @ basis + 0.1 * rng.normal(size=(m, 6))
    idx = rng.choice(n, 40, replace=False)
    rows = z.get_orthogonal_selection((idx, slice(None)))
    z.set_orthogonal_selection((idx, slice(None)), rows + rng.normal(scale=4.0, size=rows.shape))


def main() -> None:
    out = sys.argv[1] if len(sys.argv) > 1 else HERE
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 2_000_000
    app = ensure_app()
    tmp = tempfile.mkdtemp()
    table = os.path.join(tmp, "sensors.zarr")
    write_table(table, n)
    settings = Settings(os.path.join(tmp, "settings.ini"))
    settings.set_memory_budget(64 << 20)
    w = MainWindow(settings=settings, restore=False)
    w.resize(1360, 860)
    w.show()
    wait(500)
    before = rss_mb()
    w.open_path(table)
    wait_for(w.outOfCoreOffered)
    wait(300)
    box = w.lazy_offer
    box.grab().save(os.path.join(out, "lazy-offer.png"))
    print(f"{out}/lazy-offer.png")
    box.findChild(QPushButton, "lazy_open_button").click()
    wait_for(w.datasetLoaded)
    wait(300)
    print(f"window process memory: {before:.0f} MB before the open, {rss_mb():.0f} MB after "
          f"(the table is {n * 6 * 8 / 2**20:.0f} MB as float64)")
    save(w.dataset_dock, out, "lazy-data-panel.png")
    w.method_panel.set_method("pca")
    w.method_panel.form("pca").set_values({"n_components": 2, "scale": "none"})
    gaps, last = [], [time.perf_counter()]

    def tick():
        now = time.perf_counter()
        gaps.append(now - last[0])
        last[0] = now
    timer = QTimer(interval=10)
    timer.timeout.connect(tick)
    timer.start()
    t0 = time.perf_counter()
    w.run()
    wait_for(w.idle, 600_000)
    timer.stop()
    print(f"PCA out of core on {n:,} x 6: {time.perf_counter() - t0:.1f} s; 10 ms timer in the window: "
          f"longest gap {1000 * max(gaps):.0f} ms, median {1000 * float(np.median(gaps)):.1f} ms "
          f"over {len(gaps)} ticks")
    w.views.show_view("scatter")
    wait(500)
    save(w, out, "density-scatter.png")
    w.close()
    shutil.rmtree(tmp, ignore_errors=True)
    app.quit()


if __name__ == "__main__":
    main()
