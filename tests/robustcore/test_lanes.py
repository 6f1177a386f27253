"""In-memory passes on lanes (robustcore._lanes): the same bits on one thread or several,
progress and Cancel on the caller's thread, errors and the caller's error state carried over."""
import threading

import numpy as np
import pytest

import robustcore._lanes as lanes_mod
import robustcore._threads as threads_mod
from robustcore._lanes import LaneRunner, lanes, pass_threads
from robustcore._passes import Rows, gil_free
from robustcore._progress import Cancelled
from robustcore.subspace.coherence_pursuit import CoherencePursuit


def test_lanes_are_whole_blocks_in_order_and_cover_every_row():
    for n, step in [(1, 10), (79, 10), (80, 10), (1000, 7), (1000, 31), (10**6, 5242)]:
        got = lanes(n, step)
        assert got[0][0] == 0 and got[-1][1] == n
        assert all(a[1] == b[0] for a, b in zip(got, got[1:]))
        assert all(lo % step == 0 for lo, _ in got)
        assert 1 <= len(got) <= lanes_mod.LANES
        blocks = -(-n // step)
        want = 1 if blocks < lanes_mod.MIN_TABLE_BLOCKS else min(lanes_mod.LANES, blocks // lanes_mod.MIN_LANE_BLOCKS)
        assert len(got) == want


def test_pass_threads_follow_the_users_thread_variables_not_ours():
    cores = lanes_mod.available_cores()
    assert pass_threads({}) == cores
    assert pass_threads({"OMP_NUM_THREADS": "1"}) == 1
    assert pass_threads({"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "4"}) == 1
    assert pass_threads({"MKL_NUM_THREADS": "64"}) == cores
    assert pass_threads({"OMP_NUM_THREADS": "many"}) == cores
    # our programs set the variables to 1 for BLAS and say so: the passes keep every core
    assert pass_threads({"OPENBLAS_NUM_THREADS": "1", lanes_mod.DEFAULTED_VARIABLE: "1"}) == cores


class _Who:
    """Sums the rows and records which threads fed it and whether they use numpy's products."""

    def __init__(self):
        self.s, self.threads, self.numpy_products = 0.0, set(), set()

    def add(self, B, start):
        self.s = self.s + B.sum(axis=0)
        self.threads.add(threading.current_thread().name)
        self.numpy_products.add(gil_free())

    def merge(self, other):
        self.s = self.s + other.s
        self.threads |= other.threads
        self.numpy_products |= other.numpy_products
        return self


def _rows(X, jobs, block_rows=None):
    rows = Rows(X, block_rows)
    rows._runner = LaneRunner(jobs, adaptive=False)
    return rows


def test_a_pass_gives_the_same_bits_on_one_thread_and_on_two():
    X = np.random.default_rng(0).standard_normal((40_000, 50)) * 1e3
    one = _rows(X, 1, block_rows=500).reduce(_Who)          # 80 blocks: 8 lanes
    two = _rows(X, 2, block_rows=500).reduce(_Who)
    assert any(t.startswith("robustcore-lane") for t in two.threads)
    assert not any(t.startswith("robustcore-lane") for t in one.threads)
    # numpy's products where threads may run; scipy's in-place kernels where they never can
    assert two.numpy_products == {True} and one.numpy_products == {False}
    assert np.array_equal(one.s, two.s)
    out1 = _rows(X, 1, block_rows=500).map(lambda B, s: {"v": B @ np.arange(50.0)}, {"v": (np.dtype("f8"), ())})
    out2 = _rows(X, 2, block_rows=500).map(lambda B, s: {"v": B @ np.arange(50.0)}, {"v": (np.dtype("f8"), ())})
    assert np.array_equal(out1["v"], out2["v"])
    np.testing.assert_allclose(out1["v"], X @ np.arange(50.0), rtol=1e-12)


def test_a_small_table_stays_one_lane_on_the_callers_thread():
    X = np.ones((100, 5))
    acc = _rows(X, 2).reduce(_Who)
    assert acc.threads == {threading.current_thread().name} and acc.numpy_products == {False}
    np.testing.assert_array_equal(acc.s, np.full(5, 100.0))


def _planted(seed=3):
    rng = np.random.default_rng(seed)
    U = np.linalg.qr(rng.standard_normal((40, 4)))[0]
    X = np.vstack([rng.standard_normal((30_000, 4)) @ U.T + 0.01 * rng.standard_normal((30_000, 40)),
                   rng.standard_normal((8_000, 40))])
    return U, X


def _fit(monkeypatch, X, jobs, busy):
    monkeypatch.setattr(lanes_mod, "pass_threads", lambda environ=None: jobs)
    monkeypatch.setattr(threads_mod, "busy_elsewhere", lambda: busy)
    est = CoherencePursuit(n_components=4, chunk_size=500)       # 76 blocks: lanes
    return est.fit_row_results(X), est


def test_coherence_pursuit_fits_the_same_bits_on_a_busy_machine_and_an_idle_one(monkeypatch):
    U, X = _planted()
    r1, e1 = _fit(monkeypatch, X, 2, busy=8.0)      # the governor keeps every pass on one thread
    r2, e2 = _fit(monkeypatch, X, 2, busy=0.0)      # threads from the first pass
    assert np.array_equal(e1.components_, e2.components_)
    assert np.array_equal(e1.coherence_, e2.coherence_)
    assert (e1.spe_limit_, e1.t2_limit_) == (e2.spe_limit_, e2.t2_limit_)
    assert np.array_equal(r1.outlier_score, r2.outlier_score)
    assert np.array_equal(r1.outlier, r2.outlier)
    V = e1.components_.T                             # and the subspace is the planted one
    assert np.linalg.norm(U - V @ (V.T @ U)) < 1e-2
    # where only one thread may run (scipy's kernels): the same fit but for rounding
    r0, e0 = _fit(monkeypatch, X, 1, busy=0.0)
    np.testing.assert_allclose(e0.components_, e1.components_, atol=1e-12)
    np.testing.assert_allclose(r0.outlier_score, r1.outlier_score, rtol=1e-9)
    assert np.array_equal(r0.outlier, r1.outlier)


def test_cancel_from_progress_stops_every_lane():
    X = np.zeros((200_000, 10))
    seen = []

    def progress(frac, msg):
        seen.append(frac)
        return False                   # the user pressed Cancel at the first report

    fed = []

    class Slow:
        def add(self, B, start):
            fed.append(start)
            threading.Event().wait(0.01)

        def merge(self, other):
            return self
    with pytest.raises(Cancelled):
        _rows(X, 2, block_rows=1000).reduce(Slow, progress=progress)
    assert seen and len(fed) < 100              # of 200 blocks: stopped well before the end
    n = len(fed)
    threading.Event().wait(0.1)
    assert len(fed) == n                        # and nothing runs on afterwards


def test_an_error_in_one_lane_reaches_the_caller_and_stops_the_others():
    X = np.zeros((200_000, 10))
    X[150_000, 3] = np.nan

    class Check:
        def add(self, B, start):
            if np.isnan(B).any():
                raise ValueError(f"row {start + int(np.argwhere(np.isnan(B))[0, 0])} is NaN")

        def merge(self, other):
            return self
    with pytest.raises(ValueError, match="row 150000 is NaN"):
        _rows(X, 2, block_rows=1000).reduce(Check)


def test_the_callers_error_state_holds_inside_the_lanes():
    X = np.zeros((200_000, 10))

    def divide(B, s):
        return {"v": np.ones(B.shape[0]) / B[:, 0]}
    with np.errstate(divide="raise"):
        with pytest.raises(FloatingPointError):
            _rows(X, 2, block_rows=1000).map(divide, {"v": (np.dtype("f8"), ())})
    with np.errstate(divide="ignore"):
        out = _rows(X, 2, block_rows=1000).map(divide, {"v": (np.dtype("f8"), ())})
    assert np.all(np.isinf(out["v"]))


def test_the_in_memory_sample_is_a_view_of_the_rows_not_a_copy():
    from robustcore.subspace._scan import scan
    X = np.random.default_rng(1).standard_normal((50_000, 8))
    sc = scan(Rows(X), "none", method="test", scatter=False, sample_stride=7)
    assert np.shares_memory(sc.sample, X)
    np.testing.assert_array_equal(sc.sample, X[::7])


def _child_pass(q):
    X = np.ones((200_000, 10))
    acc = _rows(X, 2, block_rows=1000).reduce(_Who)
    q.put((float(acc.s.sum()), any(t.startswith("robustcore-lane") for t in acc.threads)))


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="no fork here")
def test_a_forked_child_runs_its_lanes_on_threads_of_its_own():
    """The parent's pool exists (a pass ran); a child forked after it must not wait for the
    parent's threads, which it does not have."""
    import multiprocessing as mp
    _rows(np.ones((200_000, 10)), 2, block_rows=1000).reduce(_Who)      # the pool exists now
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    child = ctx.Process(target=_child_pass, args=(q,))
    child.start()
    child.join(60)
    assert child.exitcode == 0, "the child's pass did not finish"
    total, threaded = q.get(timeout=5)
    assert total == 2_000_000.0 and threaded


def _two_threads(monkeypatch, busy=0.0):
    monkeypatch.setattr(lanes_mod, "pass_threads", lambda environ=None: 2)
    monkeypatch.setattr(threads_mod, "busy_elsewhere", lambda samples=3: busy)


def test_both_runs_the_first_call_on_a_lane_thread_when_a_core_is_free(monkeypatch):
    from robustcore._lanes import both
    _two_threads(monkeypatch)
    caller = threading.get_ident()
    first, second = both(threading.get_ident, threading.get_ident)
    assert second == caller and first != caller
    # a busy machine (or one core): one after the other on the caller's thread
    _two_threads(monkeypatch, busy=5.0)
    assert both(threading.get_ident, threading.get_ident) == (caller, caller)


@pytest.mark.parametrize("busy", [0.0, 5.0])
def test_both_hands_back_each_calls_error(monkeypatch, busy):
    from robustcore._lanes import both
    _two_threads(monkeypatch, busy)

    def fails():
        raise ValueError("first")
    with pytest.raises(ValueError, match="first"):
        both(fails, lambda: 1)
    with pytest.raises(KeyError):
        both(lambda: 1, lambda: {}["x"])


def test_the_selection_from_bounds_is_the_same_with_its_order_statistics_threaded(monkeypatch):
    """The bounds' two order statistics (_cop_bounds.decide) on two threads or one: the same rows."""
    from robustcore.subspace import _cop_bounds
    rng = np.random.default_rng(3)
    lo = rng.standard_normal(300_000)
    hi = lo + rng.random(300_000) * 1e-3
    valid = rng.random(300_000) > 0.01
    _two_threads(monkeypatch)
    a = _cop_bounds.decide(lo, hi, valid, 150_000)
    _two_threads(monkeypatch, busy=5.0)
    b = _cop_bounds.decide(lo, hi, valid, 150_000)
    for x, y in zip(a, b):
        assert np.array_equal(x, y)
    sure, undecided, hi_k = a
    # hi_k is the k-th largest upper bound of the valid rows, and no sure row's lower bound is below it
    assert hi_k == np.sort(hi[valid])[-150_000]
    assert np.all(lo[sure] > hi_k) and not np.any(sure & undecided)
