"""The worker: off-thread execution, throttled progress, cancel, supersede, errors, shutdown."""
import os
import sys
import threading
import time

import numpy as np
import pytest

from app.tasks import BACKGROUND_NICE, TaskRunner, describe_error
from robustcore._progress import Reporter
from tests.timing import budget


def _loop(n_steps, step_s=0.002, value="ok", seen_thread=None):
    """A job in the robustcore style: reports every step and honours cancellation."""
    def fn(progress):
        if seen_thread is not None:
            seen_thread.append(threading.get_ident())
        rep = Reporter(progress)
        for i in range(n_steps):
            time.sleep(step_s)
            rep(i / n_steps, f"step {i}")
        return value
    return fn


@pytest.fixture
def runner(qtbot):
    r = TaskRunner(throttle=0.05)
    yield r
    assert r.shutdown(5.0)


def test_runs_off_the_gui_thread_and_returns_result(qtbot, runner):
    seen = []
    with qtbot.waitSignal(runner.finished, timeout=5000) as blocker:
        job = runner.submit(_loop(5, value=42, seen_thread=seen), tag={"k": 1})
        assert runner.is_busy()
    got_job, result = blocker.args
    assert got_job is job and result == 42 and job.status == "done"
    assert job.tag == {"k": 1} and job.elapsed > 0
    assert seen and seen[0] != threading.get_ident()
    assert not runner.is_busy()


@pytest.mark.slow
def test_progress_is_throttled(qtbot, runner):
    reports = []
    runner.progress.connect(lambda j, f, m: reports.append((time.monotonic(), f, m)))
    # 400 reports over about 0.8 s; at most one per 50 ms may reach the GUI.
    with qtbot.waitSignal(runner.finished, timeout=10000):
        runner.submit(_loop(400, step_s=0.002))
    assert 1 <= len(reports) <= 0.8 / 0.05 * 3 + 2
    assert len(reports) < 100
    fractions = [f for _, f, _ in reports]
    assert fractions == sorted(fractions)
    assert all(0.0 <= f <= 1.0 for f in fractions)


@pytest.mark.timing
def test_cancel_makes_runner_idle_at_once_and_thread_stops(qtbot, runner):
    started = threading.Event()

    def fn(progress):
        rep = Reporter(progress)
        started.set()
        for i in range(100000):
            time.sleep(0.001)
            rep(i / 100000, "")
        return "never"

    finished = []
    runner.finished.connect(lambda j, r: finished.append(r))
    job = runner.submit(fn)
    assert started.wait(5)
    t0 = time.monotonic()
    with qtbot.waitSignal(runner.cancelled, timeout=int(1000 * budget(2.0))) as blocker:
        assert runner.cancel() is job
        assert not runner.is_busy() and runner.current is None
    assert blocker.args[0] is job and job.status == "cancelled"
    assert time.monotonic() - t0 < budget(1.0)
    qtbot.waitUntil(lambda: runner.live_threads() == 0, timeout=2000)
    assert finished == []


def test_new_submit_supersedes_old_job(qtbot, runner):
    results, cancelled = [], []
    runner.finished.connect(lambda j, r: results.append(r))
    runner.cancelled.connect(lambda j: cancelled.append(j))
    old = runner.submit(_loop(100000, step_s=0.001, value="old"))
    with qtbot.waitSignal(runner.finished, timeout=5000):
        new = runner.submit(_loop(3, value="new"))
    assert old.cancel_requested and runner.current is None
    qtbot.waitUntil(lambda: old.status == "cancelled", timeout=2000)
    assert results == ["new"] and new.status == "done"
    assert old in cancelled


def test_partial_frames_reach_the_gui_before_the_result_and_only_for_the_current_job(qtbot, runner):
    """A streaming fit's finished frames (the progress callable's frames hook) arrive as
    ``partial`` before ``finished``; a superseded job's never do."""
    events = []
    runner.partial.connect(lambda j, f: events.append(("partial", j.seq, f.start, f.stop)))
    runner.finished.connect(lambda j, r: events.append(("finished", j.seq)))

    class Sink:
        n_frames, n_features, live_path = 8, 2, None

        def read(self, field, start, stop):
            return np.zeros((stop - start, 2), np.float32)

    def stream(gate=None):
        def fn(progress):
            progress.frames(0, 4, Sink())   # the first message goes at once
            if gate is not None:
                gate.wait(5)
            progress.frames(4, 8, Sink())   # within the throttle interval: left for the result
            return "done"
        return fn
    gate = threading.Event()
    old = runner.submit(stream(gate))
    qtbot.waitUntil(lambda: any(e[1] == old.seq for e in events), timeout=5000)
    with qtbot.waitSignal(runner.finished, timeout=5000):
        new = runner.submit(stream())
        gate.set()
    qtbot.wait(100)
    assert events == [("partial", old.seq, 0, 4), ("partial", new.seq, 0, 4), ("finished", new.seq)]


def test_result_of_job_that_ignores_cancel_is_dropped(qtbot, runner):
    gate = threading.Event()

    def stubborn(progress):
        gate.wait(5)  # never reports, so cannot be cancelled early
        return "late"

    results = []
    runner.finished.connect(lambda j, r: results.append(r))
    job = runner.submit(stubborn)
    runner.cancel()
    gate.set()
    qtbot.waitUntil(lambda: job.status == "cancelled", timeout=3000)
    assert results == []


def test_exception_reaches_failed_with_details(qtbot, runner):
    def boom(progress):
        raise ValueError("n_components must be an integer in [1, 4]; got 9")

    with qtbot.waitSignal(runner.failed, timeout=5000) as blocker:
        runner.submit(boom)
    job, message, details = blocker.args
    assert message == "n_components must be an integer in [1, 4]; got 9"
    assert "Traceback" in details and "boom" in details
    assert job.status == "failed" and not runner.is_busy()
    # The runner is still usable.
    with qtbot.waitSignal(runner.finished, timeout=5000) as blocker:
        runner.submit(_loop(2, value="again"))
    assert blocker.args[1] == "again"


def test_describe_error_names_unexpected_types():
    assert describe_error(ValueError("bad x")) == "bad x"
    assert describe_error(ZeroDivisionError("division by zero")) == "ZeroDivisionError: division by zero"
    assert describe_error(MemoryError()) == "MemoryError"


@pytest.mark.timing
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a thread's own nice value is Linux's")
def test_a_background_runner_runs_its_jobs_below_the_gui_threads_priority(qtbot):
    """The views' work (background runners) must not take a core from the GUI thread when it
    wakes: their threads run at a higher nice value; a fit's relay thread does not."""
    def nice(progress):
        return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    gui = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    got = {}
    for background in (False, True):
        r = TaskRunner(throttle=0.05, background=background)
        with qtbot.waitSignal(r.finished, timeout=5000) as blocker:
            r.submit(nice)
        got[background] = blocker.args[1]
        assert r.shutdown(5.0)
    assert got[False] == gui
    assert got[True] == min(19, gui + BACKGROUND_NICE)
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == gui   # the GUI thread's own is unchanged


def test_shutdown_joins_running_threads(qtbot):
    r = TaskRunner()
    r.submit(_loop(100000, step_s=0.001))
    t0 = time.monotonic()
    assert r.shutdown(5.0)
    assert time.monotonic() - t0 < budget(1.0)
    assert r.live_threads() == 0
    with pytest.raises(RuntimeError):
        r.submit(_loop(1))


def test_a_runner_deleted_with_its_parent_cancels_its_job_and_its_thread_is_joined(qtbot):
    """A view's runners go with the view (Qt deletes them with their parent): the job they run
    is cancelled then, not left to read a closed view's data to the end, and its thread is
    joined and let go from the GUI thread, what it read no longer held."""
    import gc
    import weakref

    import shiboken6
    from PySide6.QtCore import QObject

    from app import tasks

    parent = QObject()
    r = TaskRunner(parent, throttle=0.05, background=True)
    started = threading.Event()

    class Data:   # what the job reads
        pass

    data = Data()
    held = weakref.ref(data)

    def fn(progress, data=data):
        started.set()
        while progress(0.5, "working") is not False:
            time.sleep(0.002)
        return data

    job = r.submit(fn)
    del fn, data
    assert started.wait(5)
    del r
    shiboken6.delete(parent)
    assert job.cancel_requested
    qtbot.waitUntil(lambda: not any(t.job is job for t in tasks._LIVE), timeout=5000)
    gc.collect()
    assert job.status == "cancelled" and held() is None


# -- fits in a worker process (app.fit_process) ----------------------------------------------------



from app.fit_process import FitPool, RemoteError, WorkerDied  # noqa: E402
from robustcore._progress import Cancelled  # noqa: E402
from robustcore.datasets import Dataset  # noqa: E402
from robustcore.methods import METHODS, Method  # noqa: E402


def _pca_class():
    from robustcore.subspace.pca import PCA
    return PCA


def _hog(est, dataset, values, rep):
    import scipy.linalg as sla
    rep(0.01, "hogging")
    A = np.random.default_rng(0).standard_normal((600, 600))
    for _ in range(10000):
        sla.svd(A, check_finite=False)


def _die(est, dataset, values, rep):
    os._exit(3)


def _key_error(est, dataset, values, rep):
    return {}["missing key"]


HOG = Method("hog", "Hog", "", _pca_class, _hog)
DIE = Method("die", "Die", "", _pca_class, _die)
KEY = Method("key", "Key", "", _pca_class, _key_error)


@pytest.fixture(scope="module")
def pool():
    p = FitPool()
    yield p
    p.close()


def _data():
    X = np.random.default_rng(1).standard_normal((60, 5)) @ np.diag([5, 3, 1, 0.5, 0.1])
    return Dataset(X=X, name="d")


@pytest.mark.slow
def test_process_fit_gives_the_same_numbers_as_in_process(pool):
    ds = _data()
    reports = []
    res = pool.run("pca", ds, {"n_components": 2}, lambda f, m: reports.append(f) or True)
    ref = METHODS["pca"].run(ds, {"n_components": 2})
    np.testing.assert_allclose(res.sample_scores["spe"], ref.sample_scores["spe"], rtol=1e-12)
    np.testing.assert_allclose(res.subspace.components, ref.subspace.components, rtol=1e-12)
    assert res.data_fingerprint == ds.fingerprint() and res.params == ref.params
    assert reports and all(0 <= f <= 1 for f in reports)


@pytest.mark.slow
def test_process_errors_keep_their_kind_and_traceback(pool):
    with pytest.raises(ValueError, match=r"'n_components' parameter must be an integer in \[1, 5\]"):
        pool.run("pca", _data(), {"n_components": 9}, lambda f, m: True)
    with pytest.raises(RemoteError, match="KeyError: 'missing key'") as info:
        pool.run(KEY, _data(), {}, lambda f, m: True)
    assert "_key_error" in info.value.details
    # The worker survives its job's errors and serves the next one.
    assert pool.run("pca", _data(), {}, lambda f, m: True).method == "pca"


@pytest.mark.slow
@pytest.mark.timing
def test_process_fit_in_a_gil_holding_call_is_cancelled_within_a_second(pool):
    state = {"t_cancel": None}

    def progress(f, m):
        if m == "hogging" and state["t_cancel"] is None:
            state["t_cancel"] = time.monotonic() + 0.3
        return state["t_cancel"] is None or time.monotonic() < state["t_cancel"]

    with pytest.raises(Cancelled):
        pool.run(HOG, _data(), {}, progress)
    assert time.monotonic() - state["t_cancel"] < budget(1.0)


@pytest.mark.slow
def test_worker_death_is_reported_and_the_pool_recovers(pool):
    with pytest.raises(WorkerDied, match="exit code 3"):
        pool.run(DIE, _data(), {}, lambda f, m: True)
    assert pool.run("pca", _data(), {}, lambda f, m: True).method == "pca"


def test_no_spare_worker_starts_while_the_window_warms_up(pool):
    """The first Open's worker gets no warming twin while the window's own warm-up imports:
    both would compete with it for the cores; the spare comes once the worker is released."""
    from app import warm_up
    with warm_up._GATE.closed():
        assert warm_up.window_warming()
        w = pool._acquire()
        assert pool._idle == []
    assert not warm_up.window_warming()
    pool._release(w, True)
    assert len(pool._idle) == 1
    w2 = pool._acquire()             # taking a worker starts no spare: a long job does (below)
    assert pool._idle == []
    with warm_up._GATE.closed():
        pool._start_spare()
        assert pool._idle == []
    pool._start_spare()
    assert len(pool._idle) == 1 and pool._idle[0] is not w2
    pool._release(w2, True)


def _sleepy(est, dataset, values, rep):
    for i in range(6):
        time.sleep(0.1)
        rep(i / 6, "sleeping")
    from robustcore.methods._models import run_pca
    return run_pca(est, dataset, values, rep)


SLEEPY = Method("sleepy", "Sleepy", "", _pca_class, _sleepy)


@pytest.mark.parametrize("after, spares", [(60.0, 0), (0.2, 1)])
def test_a_spare_worker_starts_only_beside_a_job_that_has_run_a_while(monkeypatch, after, spares):
    """A spare worker process starting (its imports) took a core from the GUI thread at the Run
    click and, after a short fit, at its result's arrival: one starts only once a job has run
    SPARE_AFTER seconds."""
    from app import fit_process
    started = []

    class Counted(fit_process._Worker):
        def __init__(self, ctx):
            super().__init__(ctx)
            started.append(self)

    monkeypatch.setattr(fit_process, "_Worker", Counted)
    monkeypatch.setattr(fit_process, "SPARE_AFTER", after)
    p = FitPool(start=False)
    try:
        p.run(SLEEPY, _data(), {}, lambda f, m: True)    # 0.6 s
        assert len(started) == 1 + spares
    finally:
        p.close()
