"""Scatter view at 100,000 points: our grouped drawing against pyqtgraph's per-point path;
and (``gaps``) how long the window stops answering while data and results arrive.

    QT_QPA_PLATFORM=offscreen python benchmarks/bench_views.py [n]
    QT_QPA_PLATFORM=offscreen python benchmarks/bench_views.py gaps [rows cols]
    QT_QPA_PLATFORM=offscreen python benchmarks/bench_views.py startup
    QT_QPA_PLATFORM=offscreen python benchmarks/bench_views.py arrival [--big | --big-only]

``arrival`` (issue 33.2): the largest gap of a 10 ms timer from Run (the fit runs in the worker
process, so until the result arrives the window is idle) through the result's arrival and the
first showing of every view the result feeds (each tab chosen in turn as a click would, 0.6 s
apart, then 1.5 s for work a view finishes later), on a rows x 20 table: 20,000 and 2,000,000
rows in memory, and with ``--big`` 30,000,000 rows out of core (a 4.8 GB .npy under
/work/bigbench, made once). Each size in a new process, which also reports the window
process's resident memory (VmRSS after, VmHWM the peak) against the 20,000-row one's. Targets
(issue 33): gap under 100 ms on a quiet machine at 2M and 30M rows, within 1.5x of the 20,000-row
gap; memory no more than 300 MB above the 20,000-row window's. ``--big-only``: the 20,000-row
reference and the 30M rows only. Out of core the scatter and the outlier map are also zoomed
(:func:`zoom_case`; target: a zoom answered within 300 ms at 30M rows).
Every call samples the GUI thread's long turns (``BENCH_STALLS``, :class:`_StallSampler`: a
faulthandler dump past 30 ms and the thread's counters at each tick) and prints each case's
longest turn by GUI CPU under the table: a turn that comes once in several calls is named in the
call that had it.

    QT_QPA_PLATFORM=offscreen python benchmarks/bench_views.py arrival [--big]

One size alone, in this process (prints a RESULT line of JSON); ``--unprepared``: no view built
ahead, each built when first shown (:func:`arrival_one`):

    QT_QPA_PLATFORM=offscreen python benchmarks/bench_views.py arrival-one TABLE.npy 8 [--unprepared]

``startup``: a new Python process to the window shown and painted once (throw-away settings),
5 times; reference: the same process importing scikit-learn first, which the window did
before issue 25 (robustcore._outlier at the registry's import).

``gaps``: a 10 ms QTimer ticks in the window (1280 x 800) while a demo or a table is opened
(Open -> data shown) and while PCA runs on it (Run -> result drawn, fits in the worker
process). The largest interval between two ticks is how long the window froze; 10 ms is no
freeze. Each case runs in a new window, so the result is the window's first (when the views
are built); the window is shown and left 0.4 s to paint before the meter starts, and the
previous window is deleted before that. Open ends at ``datasetLoaded``, Run at
``runFinished`` (emitted once the view on screen shows the result), each plus 150 ms for the
paint. Reference: every view the result feeds built at once (``BUILD_ON_FIRST_SHOW = False``,
the behaviour before issue 25); ours: the view shown only.

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


class GapMeter:
    """The largest interval between ticks of a 10 ms timer, from start() to stop(); and
    ``cpu``, the most CPU time the GUI thread spent between two ticks (on a loaded machine the
    wall gap also holds the time other processes had the core: the CPU one is the window's own
    work, which a quiet machine's gap is close to)."""

    def __init__(self):
        from PySide6.QtCore import QTimer
        self.timer = QTimer()
        self.timer.setInterval(10)
        self.timer.timeout.connect(self._tick)
        self.ticks = []
        self.cpu_ticks = []
        self.cpu = 0.0

    _sampler = None

    def _tick(self):
        import time
        self.ticks.append(time.perf_counter())
        self.cpu_ticks.append(time.thread_time())
        if self._sampler is not None:
            self._sampler.tick()

    def start(self):
        self._tick()
        self.ticks, self.cpu_ticks = self.ticks[-1:], self.cpu_ticks[-1:]
        if os.environ.get("BENCH_STALLS"):   # a file: where the threads were during the worst gap
            self._sampler = _StallSampler(self.ticks, self.cpu_ticks)
            self._sampler.tick()
        self.timer.start()

    def stop(self) -> float:
        self._tick()
        self.timer.stop()
        if self._sampler is not None:
            sampler, self._sampler = self._sampler, None
            sampler.report(os.environ["BENCH_STALLS"])
        self.cpu = float(np.max(np.diff(self.cpu_ticks))) if len(self.cpu_ticks) > 1 else 0.0
        return float(np.max(np.diff(self.ticks))) if len(self.ticks) > 1 else 0.0


class _StallSampler:
    """Where every thread was while the GUI thread's timer was late: at each tick the GUI thread
    re-arms :func:`faulthandler.dump_traceback_later`, whose own C thread writes every Python
    thread's stack to a file if the next tick is more than :attr:`LATE` seconds away, and again
    every LATE seconds until it comes. :meth:`report` appends to a file what the threads were
    doing in the worst gap (a diagnosis, not a figure).

    It makes no Python object and takes no GIL while the GUI thread is stuck. The sampler it
    replaces read ``sys._current_frames()`` on a Python thread every 2 ms: that kept other
    threads' frames alive, so their locals (Qt wrappers among them) could be freed on the
    sampler's thread, and the window segfaulted in some runs (stop 44)."""

    LATE = 0.03

    def __init__(self, ticks, cpu_ticks):
        import tempfile
        self.ticks, self.cpu_ticks = ticks, cpu_ticks
        self._file = tempfile.TemporaryFile()
        self.ends = []   # (tick index, bytes written so far): a dump before it is from that gap
        self.kernel = {}   # tick index: the GUI thread's counters (thread_counters) at that tick

    def tick(self) -> None:
        import faulthandler
        self.ends.append((len(self.ticks) - 1, os.fstat(self._file.fileno()).st_size))
        self.kernel[len(self.ticks) - 1] = self.thread_counters()
        faulthandler.dump_traceback_later(self.LATE, repeat=True, file=self._file)

    @staticmethod
    def thread_counters(stat_path: str = "/proc/thread-self/stat"):
        """The calling thread's (user CPU s, system CPU s, minor faults, major faults) from
        Linux's /proc, or None elsewhere. A turn's GUI CPU may be the kernel's, not the
        window's code: page faults of fresh memory, or the reclaim they start when memory is
        short, are charged to the thread that touched the page (system time)."""
        try:
            with open(stat_path) as f:
                fields = f.read().rpartition(")")[2].split()
        except OSError:
            return None
        tick = os.sysconf("SC_CLK_TCK")
        # after "pid (comm)": state ppid pgrp session tty tpgid flags minflt cminflt majflt
        # cmajflt utime stime (in clock ticks)
        return int(fields[11]) / tick, int(fields[12]) / tick, int(fields[7]), int(fields[9])

    def kernel_line(self, i: int) -> str:
        """The GUI thread's user / system CPU and page faults between tick ``i`` and ``i + 1``."""
        a, b = self.kernel.get(i), self.kernel.get(i + 1)
        if a is None or b is None:
            return ""
        return (f"  GUI thread in it: user {1000 * (b[0] - a[0]):.0f} ms, system {1000 * (b[1] - a[1]):.0f} ms "
                f"(clock ticks of {1000 // os.sysconf('SC_CLK_TCK')} ms), {b[2] - a[2]} minor and "
                f"{b[3] - a[3]} major page faults\n")

    def dumps(self, i: int) -> str:
        """What was written between tick ``i`` and tick ``i + 1``."""
        where = dict(self.ends)
        if i not in where or i + 1 not in where:
            return ""
        self._file.seek(where[i])
        return self._file.read(where[i + 1] - where[i]).decode("utf-8", "replace")

    @staticmethod
    def stacks(text: str, main_ident: int) -> list[str]:
        """Each thread's stack in faulthandler's dumps, innermost first, as one line each
        (the GUI thread's marked). A dump is a "Timeout" line, then per thread a "Thread 0x..."
        line and its "File" lines."""
        out = []

        def close(ident, frames):
            if ident is not None:
                who = "[GUI thread] " if ident == main_ident else "[other thread] "
                out.append(who + " < ".join(frames[:24 if ident == main_ident else 6]))

        ident, frames = None, []
        for ln in (ln.strip() for ln in text.splitlines()):
            if ln.startswith("File "):   # File "path", line N in name
                path, _, rest = ln[6:].partition('", line ')
                frames.append(f"{os.path.basename(path)}:{rest.replace(' in ', ' ', 1)}")
            elif "thread 0x" in ln.lower() or ln.startswith("Timeout"):
                close(ident, frames)
                ident, frames = None, []
                if "thread 0x" in ln.lower():
                    ident = int(ln.lower().split("thread 0x")[1].split()[0], 16)
        close(ident, frames)
        return out

    def report(self, path):
        import faulthandler
        import threading
        from collections import Counter
        faulthandler.cancel_dump_traceback_later()
        t, c = np.asarray(self.ticks), np.asarray(self.cpu_ticks)
        if t.size < 2:
            return
        main = threading.main_thread().ident
        with open(path, "a") as f:
            for what, i in (("wall", int(np.argmax(np.diff(t)))), ("GUI CPU", int(np.argmax(np.diff(c))))):
                inside = Counter(self.stacks(self.dumps(i), main))
                f.write(f"worst gap by {what}: {1000 * (t[i + 1] - t[i]):.0f} ms, GUI CPU "
                        f"{1000 * (c[i + 1] - c[i]):.0f} ms, {sum(inside.values())} thread stacks\n")
                f.write(self.kernel_line(i))
                for stack, n in inside.most_common(14):
                    f.write(f"  {n:4d}  {stack}\n")
        self._file.close()


def _wait(signal, timeout_ms=600_000, settle_ms=150):
    """Run the event loop until ``signal`` (then ``settle_ms`` more, for the paint)."""
    from PySide6.QtCore import QEventLoop, QTimer
    loop = QEventLoop()
    got = []
    signal.connect(lambda *a: (got.append(a), loop.quit()))
    QTimer.singleShot(timeout_ms, loop.quit)
    loop.exec()
    if not got:
        raise RuntimeError(f"timed out waiting for {signal}")
    pause = QEventLoop()
    QTimer.singleShot(settle_ms, pause.quit)
    pause.exec()
    return got[0]


def gap_case(load, method="pca", build_on_first_show=True, tmp=None):
    """(open gap, run gap, open seconds, run seconds) in a new window."""
    import time

    from app.main_window import MainWindow
    from app.settings import Settings
    from app.views import ResultViews

    ResultViews.BUILD_ON_FIRST_SHOW = build_on_first_show
    settings = Settings(os.path.join(tmp, f"s{time.perf_counter_ns()}.ini"))
    settings.set_memory_budget(4 << 30)   # the 50,000 x 300 table is read into memory
    w = MainWindow(settings=settings)
    w.resize(1280, 800)
    w.show()
    _settle(400)   # the window's own first paints and start-up work are not the Open's
    try:
        meter = GapMeter()
        meter.start()
        t0 = time.perf_counter()
        load(w)
        _wait(w.datasetLoaded)
        t_open = time.perf_counter() - t0 - 0.15
        g_open = meter.stop()
        w.method_panel.set_method(method)
        meter.start()
        t0 = time.perf_counter()
        if w.run() is None:
            raise RuntimeError(w.method_panel.run_block_reason())
        _wait(w.runFinished)
        t_run = time.perf_counter() - t0 - 0.15
        g_run = meter.stop()
        return g_open, g_run, t_open, t_run
    finally:
        w.close()
        w.deleteLater()
        # Now, not in the next case's measurement (tearing a window down took 10-40 ms).
        from PySide6.QtCore import QCoreApplication, QEvent
        QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)


def _settle(ms):
    from PySide6.QtCore import QEventLoop, QTimer
    pause = QEventLoop()
    QTimer.singleShot(ms, pause.quit)
    pause.exec()


def gaps(rows=50_000, cols=300, repeat=3):
    import tempfile

    from app._qt import ensure_app
    from app.fit_process import shared_pool
    import robustcore.datasets as datasets

    ensure_app()
    shared_pool().warm()
    tmp = tempfile.mkdtemp(prefix="bench_gaps_")
    table = os.path.join(tmp, f"table_{rows}x{cols}.npy")
    rng = np.random.default_rng(0)
    np.save(table, rng.standard_normal((rows, 5)) @ rng.standard_normal((5, cols))
            + 0.1 * rng.standard_normal((rows, cols)))
    cases = [(name, (lambda w, n=name: w.load_demo(n))) for name in dict(datasets.demos())]
    cases.append((f"table {rows:,} x {cols}", lambda w: w.open_path(table)))
    gap_case(cases[3][1], tmp=tmp)   # warm-up: imports, the worker's first fit
    print("# bench_views gaps\n")
    print(_bench.conditions(["window 1280 x 800, PCA with its defaults, fits in the worker process; "
                             "gap = largest interval of a 10 ms QTimer"]) + "\n")
    print(f"Each case {repeat} times, alternating reference and ours; best / median of the gaps.\n")
    print("| data | Open -> shown: gap | Run -> drawn: gap, reference (all views built) | "
          "Run -> drawn: gap, ours (view shown built) | reference / ours (median) | Open, Run (ours, median) |")
    print("|---|--:|--:|--:|--:|--:|")
    rows_out = []
    ms = lambda v: f"{v * 1000:.0f} ms"  # noqa: E731
    for name, load in cases:
        ref, ours = [], []
        for _ in range(repeat):
            ref.append(gap_case(load, build_on_first_show=False, tmp=tmp))
            ours.append(gap_case(load, build_on_first_show=True, tmp=tmp))
        ref, ours = np.array(ref), np.array(ours)
        med_r, med_o = np.median(ref, axis=0), np.median(ours, axis=0)
        rows_out.append((name, med_r, med_o))
        print(f"| {name} | {ms(ours[:, 0].min())} / {ms(med_o[0])} | {ms(ref[:, 1].min())} / {ms(med_r[1])} | "
              f"{ms(ours[:, 1].min())} / {ms(med_o[1])} | {med_r[1] / max(med_o[1], 1e-9):.1f}x | "
              f"{med_o[2]:.2f} s, {med_o[3]:.2f} s |", flush=True)
    print(f"\nload average at the end: {_bench.load_average()}")
    import shutil
    shutil.rmtree(tmp, ignore_errors=True)   # the table is 120 MB
    return rows_out


def _rss_mb() -> tuple[float, float]:
    """(VmRSS, VmHWM) of this process in MB."""
    vals = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(("VmRSS:", "VmHWM:")):
                key, kb = line.split()[:2]
                vals[key[:-1]] = int(kb) / 1024
    return vals.get("VmRSS", float("nan")), vals.get("VmHWM", float("nan"))


def _wait_until(test, timeout_s=600.0, step_ms=20):
    import time
    t0 = time.perf_counter()
    while not test():
        if time.perf_counter() - t0 > timeout_s:
            raise RuntimeError("timed out")
        _settle(step_ms)
    return time.perf_counter() - t0


def zoom_case(views, name: str, meter, repeat: int = 3, early_only: bool = False, early=None) -> dict | None:
    """Zoom the view's binned cloud into small regions (1 % of the framed width and height,
    around the densest bins, then elsewhere) as a wheel zoom would, after its rows are indexed:
    time from the range change until the re-binned picture of that range is drawn, and the
    largest timer gap meanwhile; then the hard cases: a zoom made before the index exists (its
    first answer and its exact picture), a deep zoom to a few samples (0.05 %), back to the whole
    range, to 70 % of its width, and a wide pan (half the width, moved by a fifth).
    ``early_only``: only the zoom before the index (None when it exists), whose result
    ``early`` then is."""
    import time

    v = views.show_view(name)
    b = v.cloud.binned
    _wait_until(lambda: not b.busy())
    drawn = []
    b.drawn.connect(lambda p, lv: drawn.append((time.perf_counter(), p)))
    pic = b.picture
    x0, x1, y0, y1 = pic.extent
    total = pic.counts.sum(axis=0)
    cx, cy = np.unravel_index(int(np.argmax(total)), total.shape)
    centres = [(x0 + (cx + 0.5) / total.shape[0] * (x1 - x0), y0 + (cy + 0.5) / total.shape[1] * (y1 - y0)),
               (x0 + 0.3 * (x1 - x0), y0 + 0.3 * (y1 - y0)), (x0 + 0.6 * (x1 - x0), y0 + 0.1 * (y1 - y0))]

    def zoom(rng, timeout_s=120):
        """(first picture drawn, the exact one of the range) after a move, seconds; the gap."""
        drawn.clear()
        meter.start()
        t0 = time.perf_counter()
        v.cloud.vb.setRange(xRange=rng[:2], yRange=rng[2:], padding=0)
        (a0, a1), (c0, c1) = v.cloud.vb.viewRange()
        exact = lambda: next((t, p) for t, p in drawn if np.allclose(p.extent, (a0, a1, c0, c1)))  # noqa: E731
        _wait_until(lambda: any(np.allclose(p.extent, (a0, a1, c0, c1)) for _, p in drawn), timeout_s=timeout_s,
                    step_ms=2)
        t_exact, p = exact()
        return drawn[0][0] - t0, t_exact - t0, meter.stop(), p, drawn[0][1]

    def box(c, frac):
        w, h = frac * (x1 - x0), frac * (y1 - y0)
        return (c[0] - w / 2, c[0] + w / 2, c[1] - h / 2, c[1] + h / 2)

    if early_only:
        if b.columns is None or b.columns.index is not None or b.columns.source.n < _index_rows():
            return None
        first, exact, gap, p, p0 = zoom(box(centres[0], 0.01), timeout_s=300)
        cpu = meter.cpu
        v.cloud.vb.setRange(xRange=(x0, x1), yRange=(y0, y1), padding=0)   # as found
        _wait_until(lambda: not b.busy(), timeout_s=300)
        return {"first_s": first, "exact_s": exact, "gap_s": gap, "coarse": bool(p0.coarse), "in_view": p.in_view,
                "gui_cpu_s": cpu}
    index_s = _wait_until(lambda: b.columns is not None and (b.columns.index is not None
                                                           or b.columns.source.n < _index_rows()))
    times, gaps, views_n = [], [], []
    for _ in range(repeat):
        for c in centres:
            _, t, gap, p, _ = zoom(box(c, 0.01))
            times.append(t)
            gaps.append(gap)
            views_n.append(p.in_view)
    # a few samples in view, each a point: three neighbouring boxes (the same range twice is no move)
    deep = [zoom(box((centres[0][0] + k * 0.00025 * (x1 - x0), centres[0][1]), 0.0005)) for k in range(repeat)]

    def back(move, timeout_s=300):
        drawn.clear()
        meter.start()
        t0 = time.perf_counter()
        move()
        # The picture of a wide range may be snapped to the fine counts' cells (an extent up to a
        # bin wider than the view): the first one drawn after the move is that range's.
        _wait_until(lambda: bool(drawn) and not b.busy(), timeout_s=timeout_s, step_ms=2)
        return time.perf_counter() - t0, meter.stop()

    # Back to the first framing, then 70 % of the width: large ranges, read from the fine counts
    # made with the first picture (before them, a pass over every row).
    out_s, out_gap = back(lambda: v.cloud.vb.setRange(xRange=(x0, x1), yRange=(y0, y1), padding=0))
    new_s, new_gap = back(lambda: v.cloud.vb.setRange(xRange=(x0, x0 + 0.7 * (x1 - x0)), yRange=(y0, y1), padding=0))
    v.cloud.vb.setRange(xRange=(x0, x0 + 0.5 * (x1 - x0)), yRange=(y0, y1), padding=0)
    _wait_until(lambda: not b.busy())
    pan_s, pan_gap = back(lambda: v.cloud.vb.setRange(xRange=(x0 + 0.2 * (x1 - x0), x0 + 0.7 * (x1 - x0)),
                                                      yRange=(y0, y1), padding=0))
    return {"index_wait_s": index_s, "zoom_s": times, "zoom_gap_s": gaps, "in_view": views_n, "early": early,
            "deep_s": [d[1] for d in deep], "deep_gap_s": [d[2] for d in deep], "deep_in_view": deep[0][3].in_view,
            "whole_s": out_s, "whole_gap_s": out_gap, "large_s": new_s, "large_gap_s": new_gap,
            "pan_s": pan_s, "pan_gap_s": pan_gap}


def _index_rows() -> int:
    from app.views._cloud_index import INDEX_ROWS
    return INDEX_ROWS


def _rss_parts_mb() -> dict:
    """RssAnon (the process's own memory) and RssFile (file pages it has mapped: memory maps,
    which the system may drop) in MB."""
    with open("/proc/self/status") as fh:
        return {ln.split(":")[0]: int(ln.split()[1]) / 1024 for ln in fh if ln.startswith(("RssAnon", "RssFile"))}


class _RssMost:
    """The most RssAnon + RssFile of this process, sampled every 50 ms on a thread of its own
    (the memory target holds at every moment: while the cloud index is built too)."""

    def __init__(self):
        import threading
        import time
        self.most = {"RssAnon": 0.0, "RssFile": 0.0}
        self._t0, self._clock = time.perf_counter(), time.perf_counter
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.wait(0.05):
            p = _rss_parts_mb()
            if p["RssAnon"] + p["RssFile"] > self.most["RssAnon"] + self.most["RssFile"]:
                self.most = dict(p, at_s=self._clock() - self._t0)

    def stop(self) -> dict:
        self._stop.set()
        self._thread.join()
        return self.most


def arrival_one(path: str, budget_gb: float, zoom: bool = False, unprepared: bool = False) -> dict:
    """One window: open ``path``, run PCA, then choose every tab the result feeds once.
    ``unprepared`` (``--unprepared``): no view is built ahead (ResultViews.prepare does nothing),
    so each is built when the result or its tab first shows it: the worst case of a fit that
    ends, or a tab chosen, before the idle turns built the views (a fast fit, a busy machine)."""
    import json
    import tempfile
    import time

    from PySide6.QtCore import QTimer

    from app._qt import ensure_app
    from app.fit_process import shared_pool
    from app.main_window import MainWindow
    from app.settings import Settings

    ensure_app()
    shared_pool().warm()
    if unprepared:
        from app.views._prepare_ahead import PrepareAhead
        PrepareAhead.prepare = lambda self, names: None
    settings = Settings(os.path.join(tempfile.mkdtemp(prefix="bench_arrival_"), "s.ini"))
    settings.set_memory_budget(int(budget_gb * (1 << 30)))
    w = MainWindow(settings=settings)
    w.resize(1280, 800)
    w.show()
    _settle(400)
    t0 = time.perf_counter()
    if zoom:   # a table over the budget: as "Open out of core" in the offer
        w.open_out_of_core(path)
    else:
        w.open_path(path)
    _wait(w.datasetLoaded, settle_ms=1000)
    t_open = time.perf_counter() - t0
    w.method_panel.set_method("pca")
    meter = GapMeter()
    meter.start()
    t0 = time.perf_counter()
    if w.run() is None:
        raise RuntimeError(w.method_panel.run_block_reason())
    _wait(w.runFinished, timeout_ms=3_600_000)
    t_run = time.perf_counter() - t0
    most = _RssMost()   # from the result's arrival to the end (the zooms' when zoomed)
    g_arrival = meter.stop()
    cpu_arrival = meter.cpu
    views = w.views
    tabs = [i for i in range(views.count()) if views.isTabVisible(i)]
    titles = [views.tabText(i) for i in tabs]
    meter.start()
    t0 = time.perf_counter()
    for k, i in enumerate(tabs):
        QTimer.singleShot(600 * k, lambda i=i: views.setCurrentIndex(i))
    _settle(600 * len(tabs) + 1500)
    t_tour = time.perf_counter() - t0
    g_tour = meter.stop()
    rss, hwm = _rss_mb()
    out = {"open_s": t_open, "run_s": t_run, "gap_arrival_s": g_arrival, "gap_tour_s": g_tour,
           "gap_cpu_s": max(cpu_arrival, meter.cpu),
           "tour_s": t_tour, "views": titles, "rss_mb": rss, "hwm_mb": hwm}
    if zoom:
        out["rss_parts_mb"] = _rss_parts_mb()
        zoomed = ("scatter", "outlier-map")
        early = {name: zoom_case(views, name, meter, early_only=True) for name in zoomed}
        out["zoom"] = {name: zoom_case(views, name, meter, early=early[name]) for name in zoomed}
        out["rss_parts_after_zoom_mb"] = _rss_parts_mb()
        out["hwm_after_zoom_mb"] = _rss_mb()[1]
        out["rss_parts_most_mb"] = most.stop()
        shots = os.environ.get("VIEWS_SHOTS")   # a folder for screenshots, e.g. /work/tmp/shots
        if shots:   # what the user sees: each view whole, then zoomed into the densest spot
            os.makedirs(shots, exist_ok=True)
            rows = f"{w.state.dataset.n_samples // 1_000_000}m"
            for name in ("scatter", "outlier-map"):
                v = views.show_view(name)
                b = v.cloud.binned
                b.request(full=True)
                _wait_until(lambda: not b.busy())
                _settle(300)
                w.grab().save(os.path.join(shots, f"views-big-{name}-{rows}.png"))
                x0, x1, y0, y1 = b.picture.extent
                total = b.picture.counts.sum(axis=0)
                cx, cy = np.unravel_index(int(np.argmax(total)), total.shape)
                ax = x0 + (cx + 0.5) / total.shape[0] * (x1 - x0)
                ay = y0 + (cy + 0.5) / total.shape[1] * (y1 - y0)
                for frac in (0.05, 0.002):
                    dx, dy = frac * (x1 - x0), frac * (y1 - y0)
                    v.cloud.vb.setRange(xRange=(ax - dx, ax + dx), yRange=(ay - dy, ay + dy), padding=0)
                    _settle(200)
                    _wait_until(lambda: not b.busy())
                    _settle(300)
                    w.grab().save(os.path.join(shots, f"views-big-{name}-{rows}-zoom{frac}.png"))
    print("RESULT " + json.dumps(out), flush=True)
    w.close()
    return out


def _table(path: str, rows: int, cols: int = 20, block: int = 1_000_000) -> str:
    """A rows x cols table of 3-dimensional structure plus noise and 1 % outliers, written a
    block at a time (the 30M-row one never whole in memory); kept when it already exists."""
    if os.path.exists(path):
        return path
    rng = np.random.default_rng(0)
    basis = rng.standard_normal((3, cols))
    tmp = path + ".partial.npy"
    out = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.float64, shape=(rows, cols))
    for s0 in range(0, rows, block):
        b = min(block, rows - s0)
        x = rng.standard_normal((b, 3)) @ basis + 0.1 * rng.standard_normal((b, cols))
        bad = rng.random(b) < 0.01
        x[bad] += 2.0 * rng.standard_normal((int(bad.sum()), cols))
        out[s0:s0 + b] = x
    out.flush()
    del out
    os.replace(tmp, path)
    return path


def worst_turns(path: str) -> list[str]:
    """Each "worst gap by GUI CPU" block of a stall report, on one line: the gap, the GUI
    thread's user / system CPU and page faults, and its stack sampled most often (when the turn
    lasted past the sampler's 30 ms)."""
    try:
        blocks = open(path).read().split("worst gap by ")[1:]
    except OSError:
        return ["no stall report"]
    out = []
    for b in (b for b in blocks if b.startswith("GUI CPU")):
        lines = b.splitlines()
        kernel = next((ln.strip()[len("GUI thread in it: "):] for ln in lines if "GUI thread in it:" in ln), "")
        gui = next((ln.split("[GUI thread] ", 1)[1] for ln in lines if "[GUI thread]" in ln), "")
        out.append(f"{lines[0][len('GUI CPU: '):]} ({kernel})" + (f" in {' < '.join(gui.split(' < ')[:6])}"
                                                                  if gui else ""))
    return out


def arrival(big: bool = False, big_only: bool = False):
    import json
    import shutil
    import subprocess
    import tempfile

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    tmp = tempfile.mkdtemp(prefix="bench_arrival_")
    cases = [("20,000 rows, in memory", _table(os.path.join(tmp, "t20k.npy"), 20_000), 8.0),
             ("2,000,000 rows, in memory", _table(os.path.join(tmp, "t2m.npy"), 2_000_000), 8.0)]
    if big_only:
        cases = cases[:1]
    if big:
        os.makedirs("/work/bigbench", exist_ok=True)
        cases.append(("30,000,000 rows, out of core",
                      _table("/work/bigbench/views_30m_x20.npy", 30_000_000), 2.0))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    print("# bench_views arrival\n")
    print(_bench.conditions(["window 1280 x 800, PCA with its defaults on a rows x 20 table, fit in the worker "
                             "process; gap = largest interval of a 10 ms QTimer"]) + "\n")
    print("| data | Run -> result shown: gap | every view shown once: gap | largest gap | gap / 20,000 rows' | "
          "GUI-thread CPU between two ticks, most | window RSS after / peak | RSS above 20,000 rows' | Run (s) "
          "| views |")
    print("|---|--:|--:|--:|--:|--:|--:|--:|--:|---|")
    base = None
    results = []
    stalls = {}   # case: its stall sampler's report (a call's rare long turn is named when it happens)
    for name, path, budget in cases:
        # BENCH_STALLS set: the whole reports kept as BENCH_STALLS-0, -1, ... (one per case)
        stalls[name] = (os.environ["BENCH_STALLS"] + f"-{len(stalls)}" if os.environ.get("BENCH_STALLS")
                        else os.path.join(tmp, f"stalls-{len(stalls)}.txt"))
        p = subprocess.run([sys.executable, os.path.abspath(__file__), "arrival-one", path, str(budget)]
                           + (["--zoom"] if "out of core" in name else []),
                           capture_output=True, text=True, env=dict(env, BENCH_STALLS=stalls[name]), cwd=root,
                           timeout=7200)
        line = next((ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")), None)
        if line is None:
            print(f"| {name} | failed: exit {p.returncode}: {p.stderr.strip().splitlines()[-1:] } |")
            continue
        r = json.loads(line[7:])
        gap = max(r["gap_arrival_s"], r["gap_tour_s"])
        if base is None:
            base = (gap, r["rss_mb"])
        results.append((name, r))
        print(f"| {name} | {r['gap_arrival_s'] * 1000:.0f} ms | {r['gap_tour_s'] * 1000:.0f} ms | "
              f"{gap * 1000:.0f} ms | "
              f"{gap / base[0]:.2f}x | {r['gap_cpu_s'] * 1000:.0f} ms | "
              f"{r['rss_mb']:.0f} / {r['hwm_mb']:.0f} MB | {r['rss_mb'] - base[1]:+.0f} MB | "
              f"{r['run_s']:.1f} | {', '.join(r['views'])} |", flush=True)
    print("\nThe longest turn of each case by GUI-thread CPU (stall sampler, `_StallSampler`; arrival, then the "
          "views shown once):\n")
    for name, _r in results:
        print(f"- {name}: " + "; ".join(worst_turns(stalls[name])))
    zooms = [(name, r) for name, r in results if r.get("zoom")]
    if zooms:
        print("\nZoom into 1 % x 1 % of the framed range (3 places x 3 times), and to 0.05 % (a few samples, "
              "3 times): from the range change (a 120 ms settle timer first) to the re-binned picture of it drawn; "
              "back to the first framing, to 70 % of the width, and a pan of half the width by a fifth (from the "
              "fine counts made with the first picture). Before the index: one 1 % zoom made as soon as the view "
              "rests, its first answer (coarse: whole fine cells) and its exact picture.\n")
        print("| data | view | before the index: first / exact (samples) | waited for the index | "
              "1 % zoom: best / median / worst | largest gap | samples in view | 0.05 %: worst (samples) | "
              "back to the first framing | 70 % of the width | pan | largest gap of these |")
        print("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
        for name, r in zooms:
            for view, z in r["zoom"].items():
                t = np.array(z["zoom_s"]) * 1000
                e = z["early"]
                early = ("index ready" if e is None else f"{e['first_s'] * 1000:.0f}{' coarse' if e['coarse'] else ''}"
                         f" / {e['exact_s'] * 1000:.0f} ms ({e['in_view']:,}; gap {e['gap_s'] * 1000:.0f} ms, "
                         f"GUI CPU {e['gui_cpu_s'] * 1000:.0f} ms)")
                gap = max(z['zoom_gap_s'] + z['deep_gap_s']) * 1000
                print(f"| {name} | {view} | {early} | {z['index_wait_s']:.1f} s | {t.min():.0f} / "
                      f"{np.median(t):.0f} / {t.max():.0f} ms | {gap:.0f} ms | "
                      f"{min(z['in_view']):,}-{max(z['in_view']):,} | {max(z['deep_s']) * 1000:.0f} ms "
                      f"({z['deep_in_view']:,}) | {z['whole_s'] * 1000:.0f} ms | {z['large_s'] * 1000:.0f} ms | "
                      f"{z['pan_s'] * 1000:.0f} ms | "
                      f"{max(z['whole_gap_s'], z['large_gap_s'], z['pan_gap_s']) * 1000:.0f} ms |", flush=True)
        for _name, r in zooms:
            for view, z in r["zoom"].items():   # which of them was the worst
                print(f"\n{view}: the 1 % zooms in the order made: "
                      f"{', '.join(f'{t * 1000:.0f}' for t in z['zoom_s'])} ms", flush=True)
        for name, r in zooms:
            after, shown = r["rss_parts_after_zoom_mb"], r["rss_parts_mb"]
            # RssFile is pages of memory-mapped files (the table's columns): the system may drop them
            most = r["rss_parts_most_mb"]
            print(f"\n{name}: window when every view was shown RssAnon {shown['RssAnon']:.0f} MB + RssFile "
                  f"{shown['RssFile']:.0f} MB; after the zooms RssAnon {after['RssAnon']:.0f} MB + RssFile "
                  f"{after['RssFile']:.0f} MB, peak (VmHWM) {r['hwm_after_zoom_mb']:.0f} MB; most from the "
                  f"result's arrival to the zooms' end (sampled every 50 ms, the index built meanwhile) RssAnon "
                  f"{most['RssAnon']:.0f} MB + RssFile {most['RssFile']:.0f} MB = "
                  f"{most['RssAnon'] + most['RssFile'] - base[1]:+.0f} MB above the 20,000-row window, "
                  f"{most.get('at_s', 0):.0f} s after the result arrived (the tour takes "
                  f"{r['tour_s']:.0f} s)", flush=True)
    print(f"\nload average at the end: {_bench.load_average()}")
    shutil.rmtree(tmp, ignore_errors=True)
    return results


_STARTUP = """
import os, sys, tempfile, time
t0 = time.perf_counter()
if sys.argv[1] == "reference":
    import sklearn.base  # noqa: F401
from app._qt import ensure_app
app = ensure_app()
from app.main_window import MainWindow
from app.settings import Settings
w = MainWindow(settings=Settings(os.path.join(tempfile.mkdtemp(), "s.ini")))
w.resize(1280, 800)
w.show()
app.processEvents()
w.repaint()
print("RESULT", time.perf_counter() - t0)
w.close()
os._exit(0)
"""


def startup(repeat=5):
    import subprocess
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    times = {"reference": [], "ours": []}
    for _ in range(repeat):
        for who in times:
            out = subprocess.run([sys.executable, "-c", _STARTUP, who], capture_output=True, text=True,
                                 env=env, cwd=root, timeout=300).stdout
            times[who].append(float(next(ln for ln in out.splitlines() if ln.startswith("RESULT")).split()[1]))
    ref, ours = _bench.Timing(times["reference"]), _bench.Timing(times["ours"])
    print("# bench_views startup\n")
    print(_bench.conditions(["new process to the window shown and painted once, 1280 x 800"]) + "\n")
    print("| reference (imports scikit-learn first) best / median | ours best / median | reference / ours |")
    print("|--:|--:|--:|")
    print(f"| {ref} | {ours} | {_bench.ratio(ref, ours)} |")
    print(f"\nload average at the end: {_bench.load_average()}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "startup":
        startup()
    elif len(sys.argv) > 1 and sys.argv[1] == "arrival":
        arrival(big="--big" in sys.argv[2:] or "--big-only" in sys.argv[2:], big_only="--big-only" in sys.argv[2:])
    elif len(sys.argv) > 1 and sys.argv[1] == "arrival-one":
        arrival_one(sys.argv[2], float(sys.argv[3]), zoom="--zoom" in sys.argv[4:],
                    unprepared="--unprepared" in sys.argv[4:])
    elif len(sys.argv) > 1 and sys.argv[1] == "gaps":
        gaps(*(int(a) for a in sys.argv[2:4]))
    else:
        main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)
