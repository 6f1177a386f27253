"""A new window process's first Open, watched: run as a script (a new interpreter, so every import
is cold), it prints one JSON line.

    python tests/app/first_open_probe.py [--demo NAME | --lazy PATH] [--run METHOD] [--idle SECONDS] [--reference]
                                         [--head]

It shows the window (offscreen unless a display is set), opens the demo (or with ``--lazy`` the
table out of core) at once, waits for the data to be drawn (and with ``--run`` for that method's
result), then reports, for the GUI thread from the moment the window was shown:

- ``loads``: modules it loaded from outside app, Qt, pyqtgraph and the standard library;
- ``waits``: modules it needed while another thread was importing them (the GUI thread stood
  still until that import ended);
- ``max_gap``: the largest interval between two ticks of a 10 ms timer from Open to the end;
- ``max_gap_cpu``: the most CPU time the GUI thread spent between two such ticks (its own work,
  without the time other processes held the core);
- ``later_loaded``: the modules of app.warm_up.LATER (which the window never imports ahead)
  loaded in the process by the end, by any thread;
- ``distributed``: whether dask.distributed was imported by the end, by any thread;
- ``head``: with ``--head``, the Data panel's first rows as shown (text);
- ``idle_loads``: with ``--idle``, the modules (outside app, Qt, pyqtgraph and the standard
  library) any thread loaded while the window stood idle after drawing.

``--reference`` runs the window as it was before issue 33: its warm-up imports the estimators at
once instead of the window's modules, and results do not wait for it (benchmarks/bench_startup.py).
Used by tests/app/test_first_open.py and benchmarks/bench_startup.py.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time

import _frozen_importlib as bootstrap  # the import system's Python half, which C calls by name

ALLOWED = {"app", "PySide6", "shiboken6", "pyqtgraph"}
_watching = False
loads: list = []
waits: list = []


def _held_elsewhere(name: str) -> bool:
    ref = bootstrap._module_locks.get(name)
    lock = ref() if ref is not None else None
    owner = getattr(lock, "owner", None)
    return owner not in (None, 0, threading.get_ident())


def _on_gui_thread() -> bool:
    return _watching and threading.current_thread() is threading.main_thread()


def _watch(original, record_load: bool):
    def watched(name, *args):
        if not _on_gui_thread():
            return original(name, *args)
        waited = _held_elsewhere(name)
        present = name in sys.modules
        t0 = time.monotonic()
        try:
            return original(name, *args)
        finally:
            seconds = round(time.monotonic() - t0, 3)
            if waited:
                waits.append([name, seconds, threading.active_count()])
            elif record_load and not present and name.partition(".")[0] not in ALLOWED | set(sys.stdlib_module_names):
                loads.append([name, seconds])
    return watched


bootstrap._find_and_load = _watch(bootstrap._find_and_load, record_load=True)
bootstrap._lock_unlock_module = _watch(bootstrap._lock_unlock_module, record_load=False)


def _sample_stalls(ticks: list, stalls: dict) -> None:
    """Every 50 ms, while the timer is 250 ms late, count where the GUI thread is (app frames)."""
    import traceback
    main_id = threading.main_thread().ident
    while True:
        time.sleep(0.05)
        if ticks and time.monotonic() - ticks[-1] > 0.25:
            frame = sys._current_frames().get(main_id)
            where = [f"{'/'.join(f.filename.split('/')[-2:])}:{f.lineno} {f.name}"
                     for f in traceback.extract_stack(frame)][-4:]
            key = " < ".join(reversed(where))
            stalls[key] = stalls.get(key, 0) + 1


def main() -> None:
    global _watching
    p = argparse.ArgumentParser()
    p.add_argument("--demo", default="gaussian-2d")
    p.add_argument("--lazy", metavar="PATH", help="open this table out of core instead of the demo")
    p.add_argument("--run", metavar="METHOD")
    p.add_argument("--reference", action="store_true")
    p.add_argument("--no-warm-up", action="store_true", help="the window starts no warm-up")
    p.add_argument("--idle", type=float, default=0.0, metavar="SECONDS",
                   help="leave the window idle this long once drawn, then report what it imported meanwhile")
    p.add_argument("--head", action="store_true", help="also report the Data panel's first rows as shown")
    p.add_argument("--stacks", action="store_true",
                   help="also report where the GUI thread was when the timer had not ticked for 250 ms")
    args = p.parse_args()
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.path.insert(0, root)
    if args.reference:
        import app.main_window
        import app.warm_up as wu

        def old_warm_up(should_stop):   # the estimators' imports, at once
            for step in wu.warm_steps(jit=False):
                if should_stop():
                    return
                step()
        app.main_window.warm_up = old_warm_up

    if args.no_warm_up:
        import app.main_window
        app.main_window.warm_up = lambda *a, **k: None

    from app._qt import ensure_app
    qapp = ensure_app()
    from PySide6.QtCore import QTimer

    from app.__main__ import close_down
    from app.main_window import MainWindow
    from app.settings import Settings

    folder = tempfile.mkdtemp(prefix="first-open-")
    w = MainWindow(settings=Settings(os.path.join(folder, "s.ini")))
    w.resize(1280, 800)
    ticks: list[float] = []
    meter = QTimer(interval=10)
    cpu_ticks: list[float] = []   # the GUI thread's CPU clock at each tick (its own work)
    meter.timeout.connect(lambda: (ticks.append(time.monotonic()), cpu_ticks.append(time.thread_time())))
    marks: dict[str, float] = {}
    problems: list[str] = []

    idle_loads: list[str] = []

    head: list = []

    def finish() -> None:
        w.grab()   # every view on screen painted once
        if args.head:
            m = w.dataset_panel.model
            head.extend([m.data(m.index(r, c)) for c in range(m.columnCount())] for r in range(min(3, m.rowCount())))
        marks["end"] = time.monotonic()
        if args.idle <= 0:
            qapp.quit()
            return
        before = set(sys.modules)

        def after_idle() -> None:
            idle_loads.extend(sorted(m for m in set(sys.modules) - before
                                     if m.partition(".")[0] not in ALLOWED | set(sys.stdlib_module_names)))
            qapp.quit()
        QTimer.singleShot(int(args.idle * 1000), after_idle)

    def loaded(ds) -> None:
        marks["loaded"] = time.monotonic()
        if args.run:
            w.method_panel.set_method(args.run)
            if w.run() is None:
                problems.append("Run refused: " + str(w.method_panel.run_block_reason()))
                QTimer.singleShot(0, finish)
        else:
            QTimer.singleShot(300, finish)

    def failed(msg) -> None:
        problems.append(str(msg))
        QTimer.singleShot(0, finish)

    w.datasetLoaded.connect(loaded)
    w.loadFailed.connect(failed)
    w.runFailed.connect(failed)
    w.runFinished.connect(lambda r: QTimer.singleShot(300, finish))

    def open_demo() -> None:
        marks["open"] = time.monotonic()
        if args.lazy:
            w.open_out_of_core(args.lazy)
        else:
            w.load_demo(args.demo)

    stalls: dict[str, int] = {}
    if args.stacks:
        threading.Thread(target=_sample_stalls, args=(ticks, stalls), daemon=True).start()
    w.show()
    _watching = True
    meter.start()
    QTimer.singleShot(0, open_demo)
    QTimer.singleShot(600_000, finish)   # a hung load still reports
    qapp.exec()
    _watching = False
    meter.stop()
    from app.warm_up import _later as later
    gaps = sorted(((b - a, a - marks["open"]) for a, b in zip(ticks, ticks[1:]) if a >= marks["open"]), reverse=True)
    print(json.dumps({
        "max_gap": round(gaps[0][0] if gaps else float("nan"), 3),
        "max_gap_cpu": round(max((b - a for a, b, t in zip(cpu_ticks, cpu_ticks[1:], ticks)
                                  if t >= marks["open"]), default=float("nan")), 3),
        "longest_gaps": [[round(g, 3), round(t, 3)] for g, t in gaps[:3]],   # [length, start after Open]
        "open_to_loaded": round(marks.get("loaded", float("nan")) - marks["open"], 3),
        "open_to_end": round(marks["end"] - marks["open"], 3),
        "loads": loads, "waits": waits, "stalls": sorted(stalls.items(), key=lambda kv: -kv[1])[:8],
        "problems": problems,
        "later_loaded": sorted(m for m in sys.modules if later(m)),
        "distributed": "distributed" in sys.modules,   # by any thread
        "head": head,
        "idle_loads": idle_loads,
        "load_average": os.getloadavg()[0]}), flush=True)
    close_down(w)   # as robust-studio ends


if __name__ == "__main__":
    main()
