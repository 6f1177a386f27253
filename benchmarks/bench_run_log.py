"""GUI time the Run log spends per new line as it grows (issue 33.6): by hand, never in tests.

The log is shown at the window's width; lines are added one at a time, each followed by the
event loop's layout and paint (what the user waits for). Reported per line near 120, 520 and
2,020 lines, and as a ratio of the last to the first (a log whose cost does not grow: ~1).

    QT_QPA_PLATFORM=offscreen python benchmarks/bench_run_log.py
"""
from __future__ import annotations

import os
import sys
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from _bench import conditions  # noqa: E402


def main(marks=(120, 520, 2020), around=20):
    from PySide6.QtWidgets import QApplication

    from app.panels.run_log import LogEntry, RunLog
    app = QApplication.instance() or QApplication([])
    log = RunLog()
    log.resize(1280, 220)
    log.show()
    params = {"n_components": 5, "lam": None, "tol": 1e-7, "max_iter": 1000, "random_state": 0}

    def add(i):
        log.add(LogEntry(method="Robust PCA (PCP)", params=dict(params, max_iter=1000 + i), dataset=f"table-{i}.csv",
                         outcome="converged", seconds=0.01 * i, warnings=["a warning"] if i % 7 == 0 else [],
                         evaluation="AUC 0.931 · AP 0.712"))
        app.processEvents()

    out, i = {}, 0
    for mark in marks:
        while i < mark - around // 2:
            add(i)
            i += 1
        t0 = time.perf_counter()
        for _ in range(around):
            add(i)
            i += 1
        out[mark] = (time.perf_counter() - t0) / around
    print(conditions())
    for mark, s in out.items():
        print(f"run log, line {mark:>5}: {1000 * s:7.2f} ms of GUI time per new line")
    print(f"ratio line {marks[-1]} / line {marks[0]}: {out[marks[-1]] / out[marks[0]]:.2f}")
    print(f"rows kept: {log.topLevelItemCount()}")


if __name__ == "__main__":
    main()
