"""The row-split products and the thread counts of the methods' own threads (BLAS's threads:
test_blas_policy.py)."""
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from robustcore._threads import RowSplit, available_cores, resolve_n_jobs


@pytest.mark.parametrize("ranges", [[(0, 101)], [(0, 40), (40, 101)], [(0, 10), (10, 60), (60, 101)]])
def test_row_split_products_equal_the_plain_ones(ranges):
    rng = np.random.default_rng(0)
    A, B, C = rng.standard_normal((101, 7)), rng.standard_normal((7, 5)), rng.standard_normal((101, 3))
    with ThreadPoolExecutor(len(ranges)) as pool:
        rows = RowSplit(101, ranges, pool)
        np.testing.assert_allclose(rows.dot(A, B), A @ B, rtol=1e-13)
        out = np.empty((101, 5))
        assert rows.dot(A, B, out=out) is out
        np.testing.assert_allclose(out, A @ B, rtol=1e-13)
        np.testing.assert_allclose(rows.tdot(A, C), A.T @ C, rtol=1e-12, atol=1e-12)
        # a short matrix (not n rows) is multiplied whole
        np.testing.assert_allclose(rows.dot(B.T, B), B.T @ B, rtol=1e-13)
        np.testing.assert_allclose(rows.tdot(B, B), B.T @ B, rtol=1e-13)
    plain = RowSplit(101, ranges)
    np.testing.assert_allclose(plain.tdot(A, C), A.T @ C, rtol=1e-13)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_small_side_svd_split_over_columns_is_the_svd(threads):
    """The short-and-wide SVD of the randomized route, with its two products split by ranges
    of columns over threads, gives the SVD (checked against LAPACK's)."""
    from robustcore.linalg import _small_side_svd
    rng = np.random.default_rng(1)
    B = rng.standard_normal((9, 9)) @ np.diag(np.geomspace(1, 1e-3, 9)) @ rng.standard_normal((9, 301))
    with ThreadPoolExecutor(threads) as pool:
        ops = RowSplit(50, [(0, 50)] if threads == 1 else [(0, 20), (20, 50), (50, 50)][:threads], pool)
        assert sum(c.stop - c.start for c in ops.over_columns(lambda c: c, 301)) == 301
        U, s, Vt = _small_side_svd(B, ops)
    s0 = np.linalg.svd(B, compute_uv=False)
    np.testing.assert_allclose(s, s0, rtol=1e-10)
    np.testing.assert_allclose((U * s) @ Vt, B, atol=1e-12)
    np.testing.assert_allclose(Vt @ Vt.T, np.eye(9), atol=1e-9)   # (squared: eps / 1e-6)


def test_n_jobs():
    assert resolve_n_jobs(None) == available_cores() >= 1
    assert resolve_n_jobs(3) == 3


def test_governor_drops_threads_that_get_no_second_core_and_probes_again(monkeypatch):
    import robustcore._threads as threads
    monkeypatch.setattr(threads, "busy_elsewhere", lambda: 0.0)        # an idle machine
    gov = threads.Governor(2, probe_every=3)
    assert gov.threaded()                                             # first pass: threads
    gov.record(True, wall=0.1, cpu=0.19)                              # they got 1.9 cores
    assert gov.threaded()
    gov.record(True, wall=0.1, cpu=0.10)                              # a second job: 1 core
    assert not gov.threaded()
    for _ in range(3):                                                # one thread for 3 passes
        assert not gov.threaded()
        gov.record(False, wall=0.1, cpu=0.1)
    assert gov.threaded()                                             # then a probe
    gov.record(True, wall=0.1, cpu=0.11)
    for _ in range(6):                                                # still busy: the next try
        assert not gov.threaded()                                     # waits twice as long
        gov.record(False, wall=0.1, cpu=0.1)
    assert gov.threaded()
    gov.record(True, wall=0.1, cpu=0.2)                               # quiet again: threads back
    assert gov.threaded() and gov.threaded()
    gov.record(True, wall=1e-4, cpu=0.0)                              # too short to judge
    assert gov.threaded()


def test_governor_starts_on_one_thread_on_a_busy_machine_and_obeys_fixed_counts(monkeypatch):
    import robustcore._threads as threads
    monkeypatch.setattr(threads, "busy_elsewhere", lambda: 1.0)        # one core taken
    assert not threads.Governor(2).threaded()
    assert threads.Governor(3).threaded()                             # 3 cores asked, 2 left
    fixed = threads.Governor(2, adaptive=False)
    fixed.record(True, wall=0.1, cpu=0.1)
    assert fixed.threaded()                                           # n_jobs given: kept
    assert not threads.Governor(1).threaded()


def test_busy_elsewhere_counts_other_runnable_tasks(monkeypatch):
    """Runnable tasks from /proc/loadavg's fourth field, less this process's own, the least of
    the reads (a task seen once does not count)."""
    import io

    import robustcore._threads as threads
    monkeypatch.setattr(threads, "_own_running_threads", lambda: 1)
    reads = iter(["6/200", "4/200", "5/200"])
    real_open = open

    def fake_open(path, *a, **k):
        if path == "/proc/loadavg":
            return io.StringIO(f"2.00 1.50 1.00 {next(reads)} 12345\n")
        return real_open(path, *a, **k)
    monkeypatch.setattr("builtins.open", fake_open)
    assert threads.busy_elsewhere(samples=3) == 3.0       # min(6, 4, 5) - 1


def test_busy_elsewhere_does_not_count_this_process_own_threads(monkeypatch):
    import robustcore._threads as threads
    assert threads._own_running_threads() >= 1          # the caller itself is running
    # three runnable tasks on the machine, all of them ours (BLAS threads spinning after a product)
    monkeypatch.setattr(threads, "_own_running_threads", lambda: 3)
    real_open = open

    def fake_open(path, *a, **k):
        if path == "/proc/loadavg":
            import io
            return io.StringIO("0.50 0.40 0.30 3/200 12345\n")
        return real_open(path, *a, **k)
    monkeypatch.setattr("builtins.open", fake_open)
    assert threads.busy_elsewhere() == 0.0
