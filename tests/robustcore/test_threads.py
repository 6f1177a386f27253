"""The row-split products and the thread settings used by the methods' own threads."""
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from robustcore._threads import RowSplit, available_cores, resolve_n_jobs, single_threaded_blas


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


def test_n_jobs_and_blas_limits():
    assert resolve_n_jobs(None) == available_cores() >= 1
    assert resolve_n_jobs(3) == 3
    threadpoolctl = pytest.importorskip("threadpoolctl")

    def blas():
        return {i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"}
    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        with single_threaded_blas():
            assert blas() == {1}
        assert blas() == {2}
        with single_threaded_blas(active=False):
            assert blas() == {2}
