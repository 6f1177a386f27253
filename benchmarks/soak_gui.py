"""Long GUI monkey soak, by hand (the suite runs a short one): random load / run / cancel /
switch view / export / session / close sequences on the real window (offscreen), many seeds.

Fails (exit 1) when any exception reaches ``sys.excepthook`` or ``threading.excepthook``, or when
the window no longer loads and fits at the end of a sequence. Usage::

    QT_QPA_PLATFORM=offscreen nice python benchmarks/soak_gui.py --seeds 10 --steps 300
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
    os.environ.setdefault(_var, "1")


_APP = None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--first-seed", type=int, default=100)
    ap.add_argument("--steps", type=int, default=200)
    args = ap.parse_args()
    from PySide6.QtCore import QCoreApplication, QEvent
    from PySide6.QtWidgets import QApplication
    global _APP  # outlives every window: a QApplication destroyed before its widgets crashes Qt
    _APP = QApplication.instance() or QApplication([])
    from app.main_window import MainWindow
    from app.settings import Settings
    from tests.app.monkey import Monkey, Unhandled
    failed = 0
    print("| seed | steps | s | actions | unhandled | alive (s to load + fit at the end) |\n|---|---|---|---|---|---|")
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        work = Path(tempfile.mkdtemp(prefix=f"rss-soak-{seed}-"))
        windows = []

        def make():
            w = MainWindow(settings=Settings(str(work / "studio.ini")))
            windows.append(w)
            return w
        t = time.perf_counter()
        with Unhandled() as unhandled:
            monkey = Monkey(make, work, seed=seed)
            monkey.run_steps(args.steps)
            t_alive = time.perf_counter()
            alive = monkey.alive()
            t_alive = time.perf_counter() - t_alive
            for w in windows:
                w.close()
                w.deleteLater()
            QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
        counts = ", ".join(f"{k} {v}" for k, v in sorted(monkey.counts.items()))
        print(f"| {seed} | {args.steps} | {time.perf_counter() - t:.0f} | {counts} | {len(unhandled.errors)} | "
              f"{'yes' if alive else 'NO'} ({t_alive:.0f}) |", flush=True)
        if unhandled.errors or not alive:
            failed += 1
            print("\n".join(unhandled.errors[:3]), file=sys.stderr)
            print("last steps:\n" + "\n".join(monkey.log[-20:]), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
