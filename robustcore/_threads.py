"""The methods' own worker threads, and keeping a multithreaded BLAS out of their way.

numpy releases the GIL inside its products and elementwise loops, so a pass over the data cut
into row ranges runs on several cores from plain Python threads. A BLAS that also starts its own
threads inside each of those calls oversubscribes the cores: on the 2-core development machine
PCP on MNIST-3000 took 5.7 s with two OpenBLAS threads per call and 2.6 s with one. While the
methods run their own threads, BLAS is therefore held to one thread (threadpoolctl, when it is
installed; without it, set OPENBLAS_NUM_THREADS=1 yourself -- the window does).
"""
from __future__ import annotations

import contextlib
import os

import numpy as np

try:
    from threadpoolctl import threadpool_limits
except ImportError:       # optional: without it the user's BLAS threads are left alone
    threadpool_limits = None

__all__ = ["PLAIN_PRODUCTS", "RowSplit", "resolve_n_jobs", "single_threaded_blas"]


def available_cores() -> int:
    """Cores this process may run on (its affinity mask where the OS has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def resolve_n_jobs(n_jobs) -> int:
    """``None`` -> every available core; a positive int is used as given."""
    return available_cores() if n_jobs is None else int(n_jobs)


@contextlib.contextmanager
def single_threaded_blas(active=True):
    """Hold BLAS to one thread inside the block (no-op if ``active`` is false or threadpoolctl
    is missing)."""
    if not active or threadpool_limits is None:
        yield
        return
    with threadpool_limits(limits=1, user_api="blas"):
        yield


class RowSplit:
    """Products with a tall matrix whose rows are cut into ranges, one range per thread.

    ``dot(A, B[, out])`` is ``A @ B`` and ``tdot(A, B)`` is ``A.T @ B`` for ``A`` with ``n`` rows;
    each thread multiplies its own rows (numpy releases the GIL in the product) and the
    partial sums of ``tdot`` are added at the end. ``pool`` is a
    ``concurrent.futures.Executor``; with ``pool=None`` both are the plain products.
    """

    def __init__(self, n, ranges, pool=None):
        self.n = n
        self.ranges = [slice(lo, hi) for lo, hi in ranges]
        self.pool = pool

    def _map(self, fn):
        if self.pool is None or len(self.ranges) == 1:
            return [fn(r) for r in self.ranges]
        return [f.result() for f in [self.pool.submit(fn, r) for r in self.ranges]]

    def dot(self, A, B, out=None):
        if self.pool is None or A.shape[0] != self.n:
            return np.matmul(A, B, out=out)
        if out is None:
            out = np.empty((A.shape[0], B.shape[1]), dtype=np.result_type(A, B))
        self._map(lambda r: np.matmul(A[r], B, out=out[r]))
        return out

    def tdot(self, A, B):
        if self.pool is None or A.shape[0] != self.n:
            return A.T @ B
        parts = self._map(lambda r: A[r].T @ B[r])
        total = parts[0]
        for part in parts[1:]:
            total += part
        return total


# numpy's own products, in the same interface (no pool: nothing is split).
PLAIN_PRODUCTS = RowSplit(0, [])
