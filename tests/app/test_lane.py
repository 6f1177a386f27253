"""The views' background jobs run one at a time and take turns between blocks (app.lane), so the
GUI thread competes for the GIL with one job, not four to six (issue 33.2). Checked by what runs
at once and in which order, never by timing."""
import sys
import threading
import time

import pytest

from app import lane as lane_mod
from app import tasks as tasks_mod
from app.lane import LANE
from app.tasks import TaskRunner
from robustcore._progress import Reporter


class _Steps:
    """Jobs made of steps with a progress report between two: records which job ran each step
    and the most steps running at once."""

    def __init__(self):
        self.lock = threading.Lock()
        self.order, self.now, self.most = [], 0, 0

    def job(self, name, n=6, step_s=0.003):
        def fn(progress):
            rep = Reporter(progress)
            for i in range(n):
                with self.lock:
                    self.now += 1
                    self.most = max(self.most, self.now)
                time.sleep(step_s)   # the block's work (numpy would release the GIL here too)
                with self.lock:
                    self.now -= 1
                    self.order.append(name)
                rep(i / n, f"{name} {i}")
            return name
        return fn


@pytest.fixture(autouse=True)
def _own_lane(monkeypatch):
    """A lane of this test's own: the lane is the process's, and these tests count who waits
    in it and who runs."""
    fresh = lane_mod.Lane()
    monkeypatch.setattr(tasks_mod, "LANE", fresh)
    monkeypatch.setattr(sys.modules[__name__], "LANE", fresh)


@pytest.fixture
def runners(qtbot):
    made = []

    def make(background=True, lane=True):
        made.append(TaskRunner(throttle=0.05, background=background, lane=lane))
        return made[-1]
    yield make
    for r in made:
        assert r.shutdown(5.0)


def test_background_jobs_run_one_at_a_time_and_take_turns_between_blocks(qtbot, runners):
    steps = _Steps()
    rs = [runners() for _ in range(3)]
    got = []
    for r in rs:
        r.finished.connect(lambda job, result: got.append(result))
    LANE.most = 0
    for r, name in zip(rs, "abc"):
        r.submit(steps.job(name))
    qtbot.waitUntil(lambda: len(got) == 3, timeout=10_000)
    assert sorted(got) == ["a", "b", "c"]
    assert steps.most == 1 and LANE.most == 1   # never two jobs' blocks at once
    # turns between blocks: the job submitted first did not run all its blocks before the others
    first_done = max(i for i, nm in enumerate(steps.order) if nm == "a")
    assert {"b", "c"} <= set(steps.order[:first_done])


@pytest.mark.parametrize("beside", [dict(background=False), dict(lane=False)], ids=["foreground", "index build"])
def test_a_job_outside_the_lane_runs_beside_it(qtbot, runners, monkeypatch, beside):
    """A fit's relay (not background) and a cloud index's build (``lane=False``) run beside the
    views' jobs: the job in the lane here waits until the other one has run, which would take
    TURN_WAIT if both were in the lane."""
    monkeypatch.setattr(lane_mod, "TURN_WAIT", 60.0)
    ran = threading.Event()
    bg, fg = runners(), runners(**beside)
    done = []
    bg.finished.connect(lambda j, r: done.append("bg"))
    fg.finished.connect(lambda j, r: done.append("fg"))
    inside = threading.Event()
    bg.submit(lambda progress: (inside.set(), ran.wait(5.0)))
    qtbot.waitUntil(inside.is_set, timeout=5000)   # it holds the lane (is_busy is set at submit)
    fg.submit(lambda progress: ran.set())
    qtbot.waitUntil(lambda: len(done) == 2, timeout=10_000)
    assert ran.is_set() and sorted(done) == ["bg", "fg"]


def test_a_job_cancelled_while_it_waits_for_the_lane_never_runs(qtbot, runners, monkeypatch):
    monkeypatch.setattr(lane_mod, "TURN_WAIT", 60.0)   # it waits until cancelled
    release = threading.Event()
    holder, waiter = runners(), runners()
    calls = []
    inside = threading.Event()
    holder.submit(lambda progress: (inside.set(), release.wait(5.0)))
    # it holds the lane: is_busy is set at submit, before its thread runs, and a waiter
    # submitted then could take the lane first (it did once in the full suite)
    qtbot.waitUntil(inside.is_set, timeout=5000)
    waiter.submit(lambda progress: calls.append("ran"))
    qtbot.waitUntil(lambda: LANE.waiting() == 1, timeout=5000)
    with qtbot.waitSignal(waiter.cancelled, timeout=5000):
        waiter.cancel()   # the waiting thread sees the cancel and ends without its turn
    release.set()
    qtbot.waitUntil(lambda: not holder.is_busy(), timeout=5000)
    assert calls == [] and LANE.waiting() == 0


def test_a_turn_given_while_holding_a_lock_the_next_job_needs_is_not_a_deadlock(qtbot, runners, monkeypatch):
    """A job that gives its turn inside a lock of its own (a view's columns, say) lets the next
    job in, which waits on that lock: the first one's wait for its turn ends after TURN_WAIT and
    both finish."""
    monkeypatch.setattr(lane_mod, "TURN_WAIT", 0.2)
    shared = threading.Lock()
    a, b = runners(), runners()
    done = []

    inside = threading.Event()

    def first(progress):
        with shared:
            inside.set()
            while LANE.waiting() == 0:   # the second job is in line
                time.sleep(0.005)
            progress(0.5, "a block")     # its turn goes to the second job, which waits on `shared`
        return "a"

    def second(progress):
        with shared:
            return "b"

    for r in (a, b):
        r.finished.connect(lambda j, res: done.append(res))
    a.submit(first)
    qtbot.waitUntil(inside.is_set, timeout=5000)   # it holds the lane and the lock
    b.submit(second)
    qtbot.waitUntil(lambda: len(done) == 2, timeout=10_000)
    assert sorted(done) == ["a", "b"]


def test_a_job_behind_a_blocked_one_runs_after_the_longest_wait(qtbot, runners, monkeypatch):
    """A job blocked while it holds the lane (on a file, on an event: a test holding a cloud
    index's build) does not stop the others: they wait TURN_WAIT, then run beside it."""
    monkeypatch.setattr(lane_mod, "TURN_WAIT", 0.2)
    release, started = threading.Event(), threading.Event()
    blocked, other = runners(), runners()
    done = []
    other.finished.connect(lambda j, r: done.append(r))
    blocked.submit(lambda progress: (started.set(), release.wait(30.0)))
    assert started.wait(5.0)   # it holds the lane
    other.submit(lambda progress: "ran")
    qtbot.waitUntil(lambda: done == ["ran"], timeout=10_000)
    assert blocked.is_busy() and not release.is_set()
    release.set()
    qtbot.waitUntil(lambda: not blocked.is_busy(), timeout=5000)
