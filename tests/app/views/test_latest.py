"""The one mechanism behind heatmaps that follow the zoom and binned clouds (app.views._latest):
one settle interval, one cancellation type, TaskRunner as the worker, blocks read one way."""
import threading

import numpy as np
import pytest

from app.tasks import TaskRunner
from app.views import _binned, _latest, _zoom_bins
from app.views._binning import bin_array, blocks, bins_for
from robustcore._progress import Cancelled


def test_blocks_cover_the_range_in_order_and_stop_when_cancelled():
    assert list(blocks(3, 20, 5)) == [(3, 8), (8, 13), (13, 18), (18, 20)]
    assert list(blocks(0, 0, 5)) == []
    asked = []
    with pytest.raises(Cancelled):
        for _ in blocks(0, 100, 10, lambda: asked.append(1) or len(asked) > 3):
            pass
    assert len(asked) == 4


def test_a_superseded_binning_job_ends_cancelled_and_only_the_newest_answer_arrives(qtbot, monkeypatch):
    """A bin_array job told to stop by a newer submit raises the same Cancelled TaskRunner
    knows (it ends "cancelled", not "failed"), and only the newer job's grid is delivered."""
    import app.views._binning as binning
    monkeypatch.setattr(binning, "BLOCK_VALUES", 1_000)   # 100 rows a block: many blocks
    reads = []
    runner = TaskRunner(throttle=0.5)
    gate, inside = threading.Event(), threading.Event()
    a = np.arange(20_000 * 10, dtype=float).reshape(20_000, 10)

    class Slow:   # an array that waits on its first block until the test lets it go
        shape = a.shape

        def __getitem__(self, key):
            reads.append(key)
            inside.set()
            gate.wait(5)
            return a[key]

    rows, cols = bins_for(0, 20_000, 100), bins_for(0, 10)
    got, stopped = [], []
    runner.finished.connect(lambda job, r: got.append((job, r)))
    runner.cancelled.connect(stopped.append)
    first = runner.submit(lambda p: bin_array(Slow(), rows, cols, "mean", _latest.cancel_test(p, "x")))
    assert inside.wait(5)
    with qtbot.waitSignal(runner.finished, timeout=10_000):
        second = runner.submit(lambda p: bin_array(a, rows, cols, "mean", _latest.cancel_test(p, "x")))
        gate.set()
    qtbot.waitUntil(lambda: first.status != "running", timeout=10_000)
    assert first.status == "cancelled" and second.status == "done"
    assert len(reads) == 1   # the first job stopped at the block after the one it was reading
    assert [job for job, _ in got] == [second]
    np.testing.assert_allclose(got[0][1], a.reshape(100, 200, 10).mean(axis=1))
    assert runner.shutdown(5.0)


def test_the_views_settle_alike(qtbot):
    assert _zoom_bins.SETTLE_MS is _latest.SETTLE_MS and not hasattr(_binned, "REBIN_MS")
    fired = []
    timer = _latest.settle_timer(None, lambda: fired.append(1))
    assert timer.isSingleShot() and timer.interval() == _latest.SETTLE_MS
    timer.start()
    qtbot.waitUntil(lambda: fired == [1], timeout=5_000)
    assert _latest.cancel_test(None, "")() is False
