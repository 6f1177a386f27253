"""app.warm_up's order (issue 33.4): a first Open's data waits only for the imports its drawing
needs, and what the warm-up imports after that steps aside while the window is busy."""
import threading
import time

import pytest

import app.warm_up as wu


@pytest.fixture
def recorded(monkeypatch):
    """The warm-up's imports and steps, recorded instead of done: (what, gate closed, busy)."""
    seen = []
    state = {"busy": False}
    monkeypatch.setattr(wu, "window_imports", lambda: (("robustcore", ("compare",)), ("zarr", ()),
                                                       ("PIL", ("Image",)), ("robustcore.result", ("RunResult",))))
    monkeypatch.setattr(wu, "_import_as_written",
                        lambda m, n: seen.append((m, wu.window_warming(), state["busy"])))
    monkeypatch.setattr(wu, "warm_steps", lambda **k: [lambda i=i: seen.append((f"step {i}", wu.window_warming(),
                                                                                   state["busy"])) for i in range(3)])
    monkeypatch.setattr(wu, "QUIET_FOR", 0.1)
    return seen, state


def test_the_data_waits_for_the_drawings_imports_only_and_the_later_ones_come_after(recorded):
    seen, _ = recorded
    wu.warm_up()
    assert [m for m, *_ in seen] == ["robustcore", "robustcore.result", "zarr", "PIL", "step 0", "step 1", "step 2"]
    gate_closed = {m: closed for m, closed, _ in seen}
    assert gate_closed["robustcore"] and gate_closed["robustcore.result"]
    assert not any(gate_closed[m] for m in ("zarr", "PIL", "step 0", "step 1", "step 2"))


def test_what_comes_after_waits_while_the_window_is_busy_and_resumes_once_quiet(recorded):
    seen, state = recorded
    state["busy"] = True            # a load in flight when the warm-up starts
    t = threading.Thread(target=wu.warm_up, kwargs={"busy": lambda: state["busy"]})
    t.start()
    deadline = time.monotonic() + 10
    while len(seen) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.4)                  # long past QUIET_FOR: still busy, so nothing more
    assert [m for m, *_ in seen] == ["robustcore", "robustcore.result"]
    state["busy"] = False
    t.join(10)
    assert not t.is_alive()
    assert len(seen) == 7
    assert not any(busy for *_, busy in seen[2:]), "a later import ran while the window was busy"


def test_a_stop_while_waiting_for_quiet_ends_the_warm_up(recorded):
    seen, state = recorded
    state["busy"] = True
    stop = threading.Event()
    t = threading.Thread(target=wu.warm_up, args=(stop.is_set,), kwargs={"busy": lambda: state["busy"]})
    t.start()
    time.sleep(0.3)
    stop.set()
    t.join(5)
    assert not t.is_alive() and len(seen) == 2


def test_the_window_is_busy_from_an_open_until_the_views_it_feeds_are_built(qtbot, tmp_path, monkeypatch):
    """What the window gives its warm-up as ``busy``: true from the Open, through the data's
    hand-over to the GUI thread, until the views of the chosen method are built; then false."""
    import app.main_window as mw
    from app.settings import Settings
    from robustcore.methods import METHODS

    given = {}
    monkeypatch.setattr(mw, "warm_up", lambda should_stop, busy: given.setdefault("busy", busy))
    w = mw.MainWindow(settings=Settings(str(tmp_path / "s.ini")), isolation="thread")
    qtbot.addWidget(w)
    w.show()
    qtbot.waitUntil(lambda: "busy" in given, timeout=10_000)
    busy = given["busy"]
    qtbot.waitUntil(lambda: not busy(), timeout=10_000)
    at_hand_over = []
    w.datasetLoaded.connect(lambda _ds: at_hand_over.append(busy()))
    w.load_demo("gaussian-2d")
    assert busy()
    qtbot.waitUntil(lambda: bool(at_hand_over), timeout=60_000)
    assert at_hand_over == [True]
    qtbot.waitUntil(lambda: not busy(), timeout=60_000)
    method = w.state.current_method
    wanted = [n for n in METHODS[method].views if w.views._classes[n].could_draw(w.state, method)]
    assert wanted and set(wanted) <= set(w.views._views), "quiet before the views were built"
    w.close()


@pytest.mark.slow
def test_a_first_open_and_run_need_none_of_the_later_imports():
    """From a new process with no warm-up at all: an Open and a PCA run load none of the modules
    the warm-up leaves until after the first drawing (app.warm_up.LATER), so the data never
    needed to wait for them."""
    from tests.app.test_window_start import _probe
    report = _probe("--demo", "gaussian-2d", "--run", "pca", "--no-warm-up")
    assert report["problems"] == []
    assert report["later_loaded"] == []
