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


def _stall_touching_fresh_memory():
    import numpy as np
    block = np.ones(1 << 23)   # 64 MB of pages the GUI thread touches first: page faults
    time.sleep(0.25)
    del block


def test_the_worst_gap_says_how_much_of_the_gui_threads_time_was_the_kernels(qtbot, tmp_path, monkeypatch):
    # a turn's GUI CPU may be page faults (system time), not the window's code: the report says
    if bench_views._StallSampler.thread_counters() is None:
        import pytest
        pytest.skip("no /proc/thread-self/stat")
    from PySide6.QtCore import QTimer
    out = tmp_path / "stalls.txt"
    monkeypatch.setenv("BENCH_STALLS", str(out))
    meter = bench_views.GapMeter()
    meter.start()
    QTimer.singleShot(50, _stall_touching_fresh_memory)
    qtbot.wait(400)
    meter.stop()
    worst = out.read_text().split("worst gap by GUI CPU")[0]
    line = next(ln for ln in worst.splitlines() if ln.strip().startswith("GUI thread in it:"))
    faults = int(line.split("ms),")[1].split()[0])
    assert faults >= 1 and "system" in line and "major page faults" in line


def test_thread_counters_read_linux_proc_stat_past_a_command_name_with_spaces(tmp_path):
    stat = tmp_path / "stat"
    tick = __import__("os").sysconf("SC_CLK_TCK")
    # pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime ...
    stat.write_text(f"123 (python (a) b) R 1 2 3 4 5 6 700 0 8 0 {3 * tick} {2 * tick} 0 0 20 0\n")
    assert bench_views._StallSampler.thread_counters(str(stat)) == (3.0, 2.0, 700, 8)
    assert bench_views._StallSampler.thread_counters(str(tmp_path / "missing")) is None


def test_arrival_prints_each_long_turn_on_one_line_from_the_report(tmp_path):
    report = tmp_path / "stalls.txt"
    report.write_text(
        "worst gap by wall: 48 ms, GUI CPU 0 ms, 0 thread stacks\n"
        "  GUI thread in it: user 0 ms, system 0 ms (clock ticks of 10 ms), 0 minor and 0 major page faults\n"
        "worst gap by GUI CPU: 62 ms, GUI CPU 41 ms, 2 thread stacks\n"
        "  GUI thread in it: user 30 ms, system 10 ms (clock ticks of 10 ms), 191 minor and 0 major page faults\n"
        "     1  [other thread] bulk_pipe.py:76 recv < tasks.py:205 run\n"
        "     1  [GUI thread] a.py:1 inner < b.py:2 outer\n"
        "worst gap by wall: 25 ms, GUI CPU 17 ms, 0 thread stacks\n"
        "worst gap by GUI CPU: 25 ms, GUI CPU 17 ms, 0 thread stacks\n")
    assert bench_views.worst_turns(str(report)) == [
        "62 ms, GUI CPU 41 ms, 2 thread stacks (user 30 ms, system 10 ms (clock ticks of 10 ms), 191 minor and 0 "
        "major page faults) in a.py:1 inner < b.py:2 outer",
        "25 ms, GUI CPU 17 ms, 0 thread stacks ()"]
    assert bench_views.worst_turns(str(tmp_path / "none.txt")) == ["no stall report"]
