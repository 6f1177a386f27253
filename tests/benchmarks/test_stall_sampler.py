"""bench_views' stall sampler (BENCH_STALLS): it says where the GUI thread was in the worst gap
of the timer, and it samples from faulthandler's C thread, never from a Python thread (the
sampler it replaced read sys._current_frames on one and segfaulted the window). No timing is
asserted: the stall is made long enough for any machine to see."""
from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import bench_views  # noqa: E402


def _stall_here_for_the_test():
    time.sleep(0.25)


def test_the_worst_gap_names_what_the_gui_thread_was_doing_and_no_python_thread_samples(qtbot, tmp_path, monkeypatch):
    from PySide6.QtCore import QTimer
    out = tmp_path / "stalls.txt"
    monkeypatch.setenv("BENCH_STALLS", str(out))
    threads = {t.ident for t in threading.enumerate()}
    meter = bench_views.GapMeter()
    meter.start()
    assert {t.ident for t in threading.enumerate()} == threads   # no Python thread samples
    QTimer.singleShot(50, _stall_here_for_the_test)
    qtbot.wait(400)
    gap = meter.stop()
    assert gap >= 0.25
    text = out.read_text()
    worst = text.split("worst gap by GUI CPU")[0]
    assert worst.startswith("worst gap by wall")
    gui = [ln for ln in worst.splitlines() if "[GUI thread]" in ln]
    assert gui and "_stall_here_for_the_test" in gui[0]
    assert int(gui[0].split()[0]) >= 3   # sampled every 30 ms while the GUI thread slept


def test_faulthandler_blocks_are_read_as_one_stack_per_thread():
    main = 0x7f00aa
    text = ("Timeout (0:00:00.030000)!\nThread 0x00000000007f00aa (most recent call first):\n"
            '  File "/x/a.py", line 5 in inner\n  File "/x/b.py", line 9 in outer\n\n'
            "Thread 0x0000000000001234 (most recent call first):\n"
            '  File "/x/c.py", line 1 in work\nTimeout (0:00:00.030000)!\n'
            "Thread 0x00000000007f00aa (most recent call first):\n"
            '  File "/x/a.py", line 6 in inner\n')
    assert bench_views._StallSampler.stacks(text, main) == [
        "[GUI thread] a.py:5 inner < b.py:9 outer", "[other thread] c.py:1 work", "[GUI thread] a.py:6 inner"]
