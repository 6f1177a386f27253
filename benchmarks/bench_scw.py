"""SCW speed, run by hand:  python benchmarks/bench_scw.py [--quick] [--no-sparse]

1) One pass of SCW-I (full covariance) over a 100,000 x 50 noisy linear stream:
   - robustcore.SCW on its numpy engine (always available),
   - robustcore.SCW on its compiled kernel (only when the optional numba is installed),
   - the PyPI package ``scw`` (IshitaTakeshi/SCW, SCW1, also full covariance) as the reference,
     timed on a prefix because it is slow; compared in samples per second.
   Install the reference (and numba) in a separate venv, never in the project:
       python3 -m venv --system-site-packages /work/benchvenv-scw
       /work/benchvenv-scw/bin/pip install scw numba
       /work/benchvenv-scw/bin/python benchmarks/bench_scw.py
2) The diagonal variant on a sparse CSR stream of 1,000,000 x 100,000 with 20 non-zeros per
   row (no densifying; checked by the peak of Python-tracked allocations), against one sparse
   matrix-vector product over the same matrix as the machine-speed reference.

BLAS is pinned to one thread for every contender (set before numpy loads): on a shared,
overloaded machine multi-threaded OpenBLAS stalls on small products, which measures the
neighbours rather than the code. Ratios are within this run.
"""
from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import sys  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from robustcore.online import _scw_stream  # noqa: E402
from robustcore.online.scw import SCW  # noqa: E402


def timed(f, repeat=1):
    best = None
    out = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = f()
        dt = time.perf_counter() - t0
        best = dt if best is None else min(best, dt)
    return best, out


def dense_stream(n, d, noise=0.10, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = np.sign(X @ rng.standard_normal(d))
    y[y == 0] = 1
    y[rng.random(n) < noise] *= -1
    return X, y


def sparse_stream(n, d, nnz, noise=0.05, seed=1):
    rng = np.random.default_rng(seed)
    cols = rng.integers(0, d, size=(n, nnz)).astype(np.int32)
    cols.sort(axis=1)
    data = rng.standard_normal(n * nnz)
    indptr = np.arange(0, n * nnz + 1, nnz, dtype=np.int64)
    X = sp.csr_matrix((data, cols.ravel(), indptr), shape=(n, d))
    X.sum_duplicates()           # canonical, as loaders produce (a rare repeated column merges)
    w = rng.standard_normal(d)
    y = np.sign(X @ w)
    y[y == 0] = 1
    y[rng.random(n) < noise] *= -1
    return X, y


def has_numba():
    try:
        import numba  # noqa: F401
        return True
    except ImportError:
        return False


def bench_dense(quick):
    n, d = (20_000 if quick else 100_000), 50
    X, y = dense_stream(n, d)
    lines = [f"## Full covariance, SCW-I, one pass over {n:,} x {d} (10 % label noise)", ""]
    rows = []
    _scw_stream.USE_JIT = False
    t_np, est = timed(lambda: SCW(variant="I").fit(X, y), repeat=2)
    rows.append(("robustcore SCW, numpy engine", n / t_np, est.history_["mistake_rate"][-1]))
    if has_numba():
        _scw_stream.USE_JIT = True
        SCW(variant="I").fit(X[:5000], y[:5000])               # compile (or load the cache) first
        t_jit, est_j = timed(lambda: SCW(variant="I").fit(X, y), repeat=2)
        rows.append(("robustcore SCW, numba kernel", n / t_jit, est_j.history_["mistake_rate"][-1]))
        assert np.allclose(est_j.mean_, est.mean_, rtol=1e-8, atol=1e-10)
    try:
        import scw as scw_pkg
    except ImportError:
        scw_pkg = None
    if scw_pkg is not None:
        m = min(n, 10_000)

        def ref():
            # The package's eta is passed through norm.cdf (its bug); 0.75 is LIBOL's default.
            model = scw_pkg.SCW1(C=1.0, ETA=0.75)
            return model.fit(X[:m], y[:m])

        t_ref, model = timed(ref, repeat=2)
        rows.append((f"PyPI scw 1.1.2 SCW1 (first {m:,} samples)", m / t_ref, float("nan")))
        ref_rate = m / t_ref
    else:
        ref_rate = None
        lines.append("(PyPI package `scw` not installed: no reference ratio)")
    lines += ["| implementation | samples/s | ratio vs PyPI scw | online mistake rate |",
              "|---|---:|---:|---:|"]
    for name, rate, err in rows:
        ratio = f"{rate / ref_rate:.1f}x" if ref_rate else "-"
        e = "-" if np.isnan(err) else f"{err:.4f}"
        lines.append(f"| {name} | {rate:,.0f} | {ratio} | {e} |")
    return lines


def bench_sparse(quick):
    n, d, nnz = (200_000 if quick else 1_000_000), 100_000, 20
    X, y = sparse_stream(n, d, nnz)
    lines = ["", f"## Diagonal covariance, SCW-I, sparse CSR {n:,} x {d:,}, {nnz} non-zeros per row", ""]
    w = np.ones(d)
    t_mv, _ = timed(lambda: X @ w, repeat=3)
    lines += ["| implementation | seconds | samples/s | ratio to one X @ w | peak traced MB |",
              "|---|---:|---:|---:|---:|",
              f"| reference: one sparse X @ w | {t_mv:.3f} | - | 1.0 | - |"]
    notes = []
    contenders = [("numpy engine (waves)", False)]
    if has_numba():
        contenders.append(("numba kernel", True))
    for name, use in contenders:
        _scw_stream.USE_JIT = use
        if use:
            SCW(covariance="diagonal").fit(X[:5000], y[:5000])     # compile first
        t, est = timed(lambda: SCW(covariance="diagonal").fit(X, y))
        # Memory in a second, traced run (tracing slows allocation, so it is not timed); the
        # numpy loop is traced on a prefix only, to keep the run short.
        m = n if use else min(n, 100_000)
        Xm, ym = (X, y) if m == n else (X[:m], y[:m])
        tracemalloc.start()
        SCW(covariance="diagonal").fit(Xm, ym)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        lines.append(f"| robustcore SCW diagonal, {name} | {t:.2f} | {n / t:,.0f} | {t / t_mv:.0f} | "
                     f"{peak / 2**20:.0f} (first {m:,} rows) |")
        notes.append(f"{name}: online mistake rate {est.history_['mistake_rate'][-1]:.4f}, "
                     f"{int(est.history_['updates'][-1]):,} updates")
    lines.append("")
    lines += notes
    lines.append("")
    dense_mb = n * d * 8 / 2**20
    lines.append(f"A densified copy would need {dense_mb:,.0f} MB.")
    return lines


def main():
    quick = "--quick" in sys.argv
    lines = [f"BLAS threads: OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}; "
             f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", ""]
    lines += bench_dense(quick)
    if "--no-sparse" not in sys.argv:
        lines += bench_sparse(quick)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
