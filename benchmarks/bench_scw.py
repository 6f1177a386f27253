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

Each BLAS setting (``--blas 1,default``: one thread for every contender, then the library's
default) runs in its own process; timings are the best and the median of ``--repeat`` runs,
ratios within one run. The package ``scw`` 1.1.2 passes 1 x 1 arrays to ``math.sqrt``, which
NumPy 2.4 refuses (TypeError: only 0-dimensional arrays convert to Python scalars); the
benchmark subclasses it at call time so its confidence and margin are 0-d arrays (a reshape):
the same numpy arithmetic as the original. (Turning them into Python floats instead makes the
package about 3x faster than it is, which would flatter the reference.)
"""
from __future__ import annotations

import os

import sys  # noqa: E402
import tracemalloc  # noqa: E402

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
import _bench  # noqa: E402
from robustcore.online import _scw_stream  # noqa: E402
from robustcore.online.scw import SCW  # noqa: E402

REPEAT = 3


def timed(f, repeat=None):
    t = _bench.timed(f, repeat or REPEAT)
    return t, t.result


def scw_reference():
    """PyPI scw's SCW1 with its confidence and margin as 0-d arrays (NumPy 2.4 refuses the 1 x 1
    arrays it hands to math.sqrt), or None when the package is not installed."""
    try:
        import scw as scw_pkg
    except ImportError:
        return None

    class SCW1(scw_pkg.SCW1):
        def calc_confidence(self, x):
            return super().calc_confidence(x).reshape(())

        def calc_margin(self, x, label):
            return np.asarray(super().calc_margin(x, label)).reshape(())
    return SCW1


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
    t_np, est = timed(lambda: SCW(variant="I").fit(X, y))
    rows.append(("robustcore SCW, numpy engine", t_np, n, est.history_["mistake_rate"][-1]))
    if has_numba():
        _scw_stream.USE_JIT = True
        SCW(variant="I").fit(X[:5000], y[:5000])               # compile (or load the cache) first
        t_jit, est_j = timed(lambda: SCW(variant="I").fit(X, y))
        rows.append(("robustcore SCW, numba kernel", t_jit, n, est_j.history_["mistake_rate"][-1]))
        assert np.allclose(est_j.mean_, est.mean_, rtol=1e-8, atol=1e-10)
    ref_cls = scw_reference()
    if ref_cls is not None:
        m = min(n, 10_000)

        def ref():
            # The package's eta is passed through norm.cdf (its bug); 0.75 is LIBOL's default.
            return ref_cls(C=1.0, ETA=0.75).fit(X[:m], y[:m])

        t_ref, model = timed(ref)
        rows.append((f"PyPI scw 1.1.2 SCW1 (first {m:,} samples; 0-d arrays patched in)", t_ref, m, float("nan")))
    else:
        t_ref = None
        lines.append("(PyPI package `scw` not installed: no reference ratio)")
    lines += ["| implementation | samples/s from best / median | ratio vs PyPI scw (best, median) | "
              "online mistake rate |", "|---|---:|---:|---:|"]
    for name, t, count, err in rows:
        ratio = (f"{(t_ref.best / m) / (t.best / count):.1f}x ({(t_ref.median / m) / (t.median / count):.1f}x)"
                 if t_ref else "-")
        e = "-" if np.isnan(err) else f"{err:.4f}"
        lines.append(f"| {name} | {count / t.best:,.0f} / {count / t.median:,.0f} | {ratio} | {e} |")
    return lines


def bench_sparse(quick):
    n, d, nnz = (200_000 if quick else 1_000_000), 100_000, 20
    X, y = sparse_stream(n, d, nnz)
    lines = ["", f"## Diagonal covariance, SCW-I, sparse CSR {n:,} x {d:,}, {nnz} non-zeros per row", ""]
    w = np.ones(d)
    t_mv, _ = timed(lambda: X @ w, repeat=5)
    lines += ["| implementation | best / median | samples/s (best) | ratio to one X @ w (best) | peak traced MB |",
              "|---|---:|---:|---:|---:|",
              f"| reference: one sparse X @ w | {t_mv} | - | 1.0 | - |"]
    notes = []
    contenders = [("numpy engine (waves)", False)]
    if has_numba():
        contenders.append(("numba kernel", True))
    for name, use in contenders:
        _scw_stream.USE_JIT = use
        if use:
            SCW(covariance="diagonal").fit(X[:5000], y[:5000])     # compile first
        t, est = timed(lambda: SCW(covariance="diagonal").fit(X, y), repeat=1 if not use else None)
        # Memory in a second, traced run (tracing slows allocation, so it is not timed); the
        # numpy loop is traced on a prefix only, to keep the run short.
        m = n if use else min(n, 100_000)
        Xm, ym = (X, y) if m == n else (X[:m], y[:m])
        tracemalloc.start()
        SCW(covariance="diagonal").fit(Xm, ym)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        lines.append(f"| robustcore SCW diagonal, {name} ({len(t.runs)} runs) | {t} | {n / t.best:,.0f} | "
                     f"{t.best / t_mv.best:.0f} | "
                     f"{peak / 2**20:.0f} (first {m:,} rows) |")
        notes.append(f"{name}: online mistake rate {est.history_['mistake_rate'][-1]:.4f}, "
                     f"{int(est.history_['updates'][-1]):,} updates")
    lines.append("")
    lines += notes
    lines.append("")
    dense_mb = n * d * 8 / 2**20
    lines.append(f"A densified copy would need {dense_mb:,.0f} MB.")
    return lines


def child(quick, sparse):
    lines = bench_dense(quick)
    if sparse:
        lines += bench_sparse(quick)
    _bench.child_result(lines=lines, load=_bench.load_average())


def main():
    global REPEAT
    import argparse
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-sparse", action="store_true")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--blas", default="1,default")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    REPEAT = a.repeat
    if a.child:
        child(a.quick, not a.no_sparse)
        return
    print("# bench_scw\n")
    print(_bench.conditions([f"command: {' '.join(sys.argv)}"]))
    argv = [__file__, "--child", "--repeat", str(a.repeat)] + (["--quick"] if a.quick else []) + \
        (["--no-sparse"] if a.no_sparse else [])
    for mode in _bench.blas_modes(a.blas):
        r = _bench.run_child(argv, blas=mode, timeout=3600)
        print(f"\n# {_bench.blas_label(mode)} ({r.get('blas', '')}; load after: {r.get('load', '?')})\n")
        print("\n".join(r.get("lines") or [r.get("error", "no output")]), flush=True)


if __name__ == "__main__":
    main()
