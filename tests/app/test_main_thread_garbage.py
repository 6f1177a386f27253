"""app._qt.MainThreadGarbage: cycles are collected on the GUI thread's timer, never elsewhere."""
import gc
import threading
import weakref

from app._qt import MainThreadGarbage


class _Node:
    pass


def _cycle():
    a, b = _Node(), _Node()
    a.other, b.other = b, a
    return weakref.ref(a)


def test_cycles_wait_for_the_gui_threads_timer_and_are_collected_there(qtbot):
    import app.warm_up as wu
    # Nothing is collected while a warm-up imports: an earlier test's window may still be warming.
    qtbot.waitUntil(lambda: not wu.importing(), timeout=120_000)
    seen_threads = []
    garbage = MainThreadGarbage(interval_ms=20)
    try:
        assert not gc.isenabled()
        gone = _cycle()
        # lots of allocation on another thread: no collection may start there
        worker = threading.Thread(target=lambda: [[_Node() for _ in range(10)] for _ in range(20_000)])
        worker.start()
        worker.join()
        assert gone() is not None
        original = garbage.collect

        def collect():
            seen_threads.append(threading.current_thread() is threading.main_thread())
            original()
        garbage.timer.timeout.disconnect()
        garbage.timer.timeout.connect(collect)
        kept = [_Node() for _ in range(gc.get_threshold()[0] + 10)]    # past generation 0's threshold
        qtbot.waitUntil(lambda: gone() is None, timeout=3000)
        del kept
        assert seen_threads and all(seen_threads)
    finally:
        garbage.stop()
        assert not gc.isenabled()      # as it found it (the suite's setting)
        del garbage


def test_stop_gives_back_the_setting_start_found(qtbot):
    gc.enable()                        # as outside the test suite's own setting
    try:
        garbage = MainThreadGarbage(interval_ms=20)
        assert not gc.isenabled() and garbage.timer.isActive()
        garbage.stop()
        assert gc.isenabled() and not garbage.timer.isActive()
        gc.disable()
        garbage.start()
        garbage.stop()
        assert not gc.isenabled()      # off before start, off after stop
    finally:
        gc.disable()                   # the suite's setting for the rest of this test


def test_the_windows_hold_one_collector_and_the_last_to_close_gives_it_back(qtbot, tmp_path):
    import app._qt as qt
    from app.main_window import MainWindow
    from app.settings import Settings
    gc.enable()                        # as outside the test suite's own setting
    try:
        a = MainWindow(settings=Settings(str(tmp_path / "a.ini")))
        qtbot.addWidget(a)
        b = MainWindow(settings=Settings(str(tmp_path / "b.ini")))
        qtbot.addWidget(b)
        assert not gc.isenabled() and qt._holders == 2
        a.close()
        assert not gc.isenabled()      # b is still open
        b.close()
        assert gc.isenabled() and not qt._garbage.timer.isActive()
    finally:
        gc.disable()                   # the suite's setting for the rest of this test


def test_the_gui_tests_run_without_automatic_collection():
    # tests/conftest.py: a Dask or lane thread must never start a collection that holds widgets
    assert not gc.isenabled()


def test_a_block_run_beside_other_threads_collects_its_cycles_on_its_own_thread():
    from app._qt import collected_on_this_thread
    gc.enable()                        # as in a command-line run
    try:
        with collected_on_this_thread():
            assert not gc.isenabled()
            gone = _cycle()
            worker = threading.Thread(target=lambda: [[_Node() for _ in range(10)] for _ in range(20_000)])
            worker.start()
            worker.join()
            assert gone() is not None  # nothing collected it on the worker
        assert gone() is None and gc.isenabled()
    finally:
        gc.disable()


def test_no_collection_while_a_warm_up_imports_then_the_due_ones_after(monkeypatch):
    """A full collection walks every object the warm-up's imports have made so far (0.24 s of
    GUI time each with scikit-learn half loaded), and a young one every object made since the
    last tick, mostly the imports' own (40-70 ms during the first Open): while a warm-up
    imports, the timer collects nothing; once it is done (its objects frozen), what is due."""
    import app.warm_up as wu
    from app._qt import MainThreadGarbage

    calls = []
    monkeypatch.setattr(gc, "collect", lambda generation=2: calls.append(generation) or 0)
    monkeypatch.setattr(gc, "get_count", lambda: (10_000, 100, 100))   # every threshold passed
    garbage = MainThreadGarbage.__new__(MainThreadGarbage)
    garbage._thresholds = (700, 10, 10)
    with wu._importing():
        assert wu.importing()
        garbage.collect()
    assert calls == []
    assert not wu.importing()
    garbage.collect()
    assert calls == [2]
