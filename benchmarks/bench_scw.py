"""SCW speed, run by hand:  python benchmarks/bench_scw.py [--quick] [--no-sparse]
(``--real``: learning on real streams instead, see :func:`real`.)

1) One pass of SCW-I (full covariance) over a 100,000 x 50 noisy linear stream:
   - robustcore.SCW on its numpy engine (``ROBUSTCORE_NO_JIT=1``, always available),
   - robustcore.SCW on its compiled kernel (only when the optional numba is installed), once
     after a first small fit (the kernel loaded) and once as the process's first fit,
   - the PyPI package ``scw`` (IshitaTakeshi/SCW, SCW1, also full covariance) as the reference,
     timed on a prefix of 10,000 samples because it is slow; compared per sample.
   Install the reference in the benchmark's venv only (``pip install scw``), never in the project.
2) The diagonal variant on a sparse CSR stream of 1,000,000 x 100,000 with 20 non-zeros per
   row (no densifying; checked by the peak of Python-tracked allocations of a traced fit of the
   first 100,000 rows), against one sparse matrix-vector product over the same matrix as the
   machine-speed reference.

Every run is a fresh process running the contender's code (printed with the results), the
contenders interleaved round after round (``_bench.race``); medians and ranges over runs, and
paired ratios (one per round). Each BLAS setting (``--blas 1,default``) is a race of its own.
The package ``scw`` 1.1.2 passes 1 x 1 arrays to ``math.sqrt``, which
NumPy 2.4 refuses (TypeError: only 0-dimensional arrays convert to Python scalars); the
benchmark subclasses it at call time so its confidence and margin are 0-d arrays (a reshape):
the same numpy arithmetic as the original. (Turning them into Python floats instead makes the
package about 3x faster than it is, which would flatter the reference.)
"""
from __future__ import annotations

import os
import sys  # noqa: E402

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
import _bench  # noqa: E402

from robustcore.online import _scw_stream  # noqa: E402
from robustcore.online.scw import SCW  # noqa: E402


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


NO_JIT = {"ROBUSTCORE_NO_JIT": "1"}          # the user's switch to the numpy engines
WARM = "\n# the compiled kernel loaded by a first small fit, as in a process that has used it\n"


def dense_contenders(n, d=50):
    setup = f"import numpy as np\nimport bench_scw as B\nX, y = B.dense_stream({n}, {d})\nfrom robustcore import SCW"
    after = "report['samples'] = len(y)\nreport['mistakes'] = float(est.history_['mistake_rate'][-1])"
    kinds = [("defaults", ""), ("fit_intercept=False, shuffle=False", ", fit_intercept=False, shuffle=False")]
    cs = [_bench.Contender(f"ours, numpy engine, {label}", f"est = SCW(variant='I', random_state=0{kw}).fit(X, y)",
                           setup, after, env=NO_JIT) for label, kw in kinds]
    if has_numba():
        cs += [_bench.Contender(f"ours, numba kernel, {label}",
                                f"est = SCW(variant='I', random_state=0{kw}).fit(X, y)",
                                setup + WARM + f"SCW(variant='I'{kw}).fit(X[:5000], y[:5000])", after)
               for label, kw in kinds]
        cs.append(_bench.Contender("ours, numba kernel, first fit of the process (loads numba)",
                                   "est = SCW(variant='I', random_state=0).fit(X, y)", setup, after))
    # timed on a prefix (it is slow); eta passes through norm.cdf in the package (its bug):
    # 0.75 is LIBOL's default
    cs.append(_bench.Contender(
        "PyPI scw 1.1.2 SCW1", "model = SCW1(C=1.0, ETA=0.75).fit(X[:m], y[:m])",
        setup + f"\nSCW1 = B.scw_reference()   # 0-d arrays patched in (NumPy 2.4)\nm = {min(n, 10_000)}",
        "report['samples'] = m"))
    return cs


def bench_dense(quick, repeat, mode):
    n = 20_000 if quick else 100_000
    if scw_reference() is None:
        return ["(PyPI package `scw` not installed: no reference ratio)"], []
    cs = dense_contenders(n)
    runs = _bench.race(cs, repeat, mode, timeout=1800)
    ref = cs[-1].name
    lines = [f"### Full covariance, SCW-I, one pass over {n:,} x 50 (10 % label noise), "
             f"load {_bench.load_span(runs)} over the runs", "",
             *_bench.race_table(runs, ref, per="samples", extra=[
                 ("samples/s by wall, median", lambda r: f"{r['samples'] / r['wall']:,.0f}"),
                 ("online mistake rate", lambda r: f"{r['mistakes']:.4f}" if "mistakes" in r else "–")]), "",
             "Speed-up over PyPI scw per sample (paired by round), median (range):", ""]
    for c in cs[:-1]:
        by_cpu = _bench.span(_bench.paired_ratios(runs, ref, c.name, 'cpu', 'samples'), 'x')
        lines.append(f"- {c.name}: by CPU {by_cpu}, "
                     f"by wall {_bench.span(_bench.paired_ratios(runs, ref, c.name, 'wall', 'samples'), 'x')}")
    return lines + [""], cs


def sparse_contenders(n, d=100_000, nnz=20):
    setup = (f"import numpy as np\nimport bench_scw as B\nX, y = B.sparse_stream({n}, {d}, {nnz})\n"
             "from robustcore import SCW")
    # memory in a second, traced fit of the first 100,000 rows (tracing slows allocation)
    traced = ("import tracemalloc\ntracemalloc.start()\n"
              "SCW(covariance='diagonal', random_state=0{kw}).fit(X[:100000], y[:100000])\n"
              "report['traced_mb'] = tracemalloc.get_traced_memory()[1] / 2**20\n"
              "report['mistakes'] = float(est.history_['mistake_rate'][-1])")
    waves, plain = ", fit_intercept=False, shuffle=False", ""
    cs = [_bench.Contender("reference: one sparse X @ w", "z = X @ w", setup + "\nw = np.ones(X.shape[1])"),
          _bench.Contender("ours, numpy engine (waves), fit_intercept=False, shuffle=False",
                           f"est = SCW(covariance='diagonal', random_state=0{waves}).fit(X, y)", setup,
                           traced.format(kw=waves), env=NO_JIT),
          _bench.Contender("ours, numpy engine (row by row), defaults",
                           "est = SCW(covariance='diagonal', random_state=0).fit(X, y)", setup,
                           traced.format(kw=plain), env=NO_JIT)]
    if has_numba():
        cs += [_bench.Contender(f"ours, numba kernel, {label}",
                                f"est = SCW(covariance='diagonal', random_state=0{kw}).fit(X, y)",
                                setup + WARM + f"SCW(covariance='diagonal'{kw}).fit(X[:5000], y[:5000])",
                                traced.format(kw=kw))
               for label, kw in (("fit_intercept=False, shuffle=False", waves), ("defaults", plain))]
    return cs


def bench_sparse(quick, repeat, mode):
    n, d = (200_000 if quick else 1_000_000), 100_000
    cs = sparse_contenders(n, d)
    # the numpy engine row by row takes tens of seconds: one run
    runs = _bench.race(cs, repeat, mode, timeout=3600, repeats={cs[2].name: 1})
    return [f"### Diagonal covariance, SCW-I, sparse CSR {n:,} x {d:,}, 20 non-zeros per row, "
            f"load {_bench.load_span(runs)} over the runs", "",
            *_bench.race_table(runs, cs[0].name, extra=[
                ("traced peak MB, first 100,000 rows", lambda r: f"{r['traced_mb']:.0f}" if "traced_mb" in r else "–"),
                ("online mistake rate", lambda r: f"{r['mistakes']:.4f}" if "mistakes" in r else "–")]), "",
            f"Target: under 20 s for the pass; a densified copy would need {n * d * 8 / 2**20:,.0f} MB.", ""], cs


SHARED = "/work/shared/data"


def _a8a():
    from sklearn.datasets import load_svmlight_file
    X, y = load_svmlight_file(f"{SHARED}/libsvm_binary/a8a", n_features=123)
    return X.tocsr(), y.astype(int)


def _a8a_web(seed=0, pos_rate=0.03, zero_rate=0.085):
    """a8a made to look like the LIBSVM web-page set of issue 11 (w8a: 49,749 rows, 3 % positive,
    4,203 = 8.4 % all-zero rows): every negative, positives subsampled to 3 %, and 8.5 % of the
    rows emptied at random."""
    X, y = _a8a()
    rng = np.random.default_rng(seed)
    neg, pos = np.flatnonzero(y < 0), np.flatnonzero(y > 0)
    n_pos = int(round(pos_rate / (1 - pos_rate) * neg.size))
    keep = np.sort(np.concatenate([neg, rng.choice(pos, n_pos, replace=False)]))
    X, y = X[keep], y[keep]
    mask = np.ones(len(y))
    mask[rng.choice(len(y), int(round(zero_rate * len(y))), replace=False)] = 0.0
    X = (sp.diags(mask) @ X).tocsr()
    X.eliminate_zeros()
    return X, y


def _usps(name):
    from sklearn.datasets import load_svmlight_file
    X, y = load_svmlight_file(f"{SHARED}/usps/{name}", n_features=256)
    return X.toarray(), y.astype(int) - 1


def _sklearn_online(X, y, kind):
    """Online (predict, then learn) mistakes of scikit-learn's PassiveAggressiveClassifier (PA-I,
    C = 1) or Perceptron over X in order, by their one-epoch update written out (scikit-learn's
    SGD loop: PA-I steps min(C, hinge / ||x||²), skipping x = 0; the Perceptron steps y when
    y p <= 0; the intercept moves by the step times 1 for dense and 0.01 for sparse X).
    scikit-learn's own fit on the same order must end at the same weights: the gap is returned."""
    import warnings

    from sklearn.linear_model import PassiveAggressiveClassifier, Perceptron
    A = sp.csr_matrix(X)
    decay = 0.01 if sp.issparse(X) else 1.0
    w = np.zeros(A.shape[1])
    b = 0.0
    wrong = np.zeros(len(y), dtype=bool)
    indptr, indices, data = A.indptr, A.indices, A.data
    for i in range(len(y)):
        cols, vals = indices[indptr[i]:indptr[i + 1]], data[indptr[i]:indptr[i + 1]]
        p = float(w[cols] @ vals) + b
        wrong[i] = (1 if p > 0 else -1) != y[i]
        if kind == "pa":
            sq = float(vals @ vals)
            if sq == 0.0:
                continue
            u = min(1.0, max(0.0, 1.0 - y[i] * p) / sq) * y[i]
        else:
            u = float(y[i]) if y[i] * p <= 0.0 else 0.0
        if u:
            w[cols] += u * vals
        b += u * decay
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")        # PassiveAggressiveClassifier is deprecated in 1.8
        est = (PassiveAggressiveClassifier(C=1.0, max_iter=1, tol=None, shuffle=False) if kind == "pa"
               else Perceptron(max_iter=1, tol=None, shuffle=False)).fit(X, y)
    gap = max(float(np.abs(est.coef_.ravel() - w).max()), abs(float(est.intercept_[0]) - b))
    return wrong.mean(), est, gap


def _scw_as_in_0_1(X, y, variant):
    """0.1's SCW: no intercept, and a score of exactly 0 predicted as the positive class."""
    from robustcore._progress import Reporter
    from robustcore.online._scw_steps import phi_from_eta
    from robustcore.online.scw import DEFAULT_ETA
    d = X.shape[1]
    mean, cov = np.zeros((1, d)), np.eye(d)
    res = _scw_stream.run_stream(X, np.where(y > 0, 1.0, -1.0), mean, cov,
                                 phi=phi_from_eta(DEFAULT_ETA[variant]), C=1.0, variant=variant,
                                 multiclass=False, rep=Reporter(None))
    wrong = np.where(res.scores[:, 0] >= 0, 1, -1) != y
    return wrong, mean[0]


def real(orders=5, usps_orders=3):
    """SCW next to scikit-learn's online linear classifiers on real streams: the same stream
    orders for every learner, online mistake rate (predict, then learn), held-out accuracy, and
    the majority-class baseline."""
    from robustcore.online._order import tie_broken_predictions
    out = []

    def one(name, Xtr, ytr, Xte, yte, n_orders):
        zero = np.diff(sp.csr_matrix(Xtr).indptr) == 0
        res = {}
        for seed in range(n_orders):
            p = np.random.default_rng(seed).permutation(len(ytr))
            Xs, ys, zs = Xtr[p], ytr[p], zero[p]
            idx = (ys > 0).astype(int)
            guess = tie_broken_predictions(np.zeros(len(ys)), np.zeros(2), idx)
            top = 1 if np.sum(ys > 0) > np.sum(ys < 0) else -1
            res.setdefault("majority class so far", []).append(
                (np.mean(guess != idx), np.mean(yte == top), np.nan))
            for variant in ("I", "II"):
                wrong, mu = _scw_as_in_0_1(Xs, ys, variant)
                acc = np.mean(np.where(np.asarray(Xte @ mu).ravel() >= 0, 1, -1) == yte)
                res.setdefault(f"SCW-{variant} as in 0.1 (no intercept, score 0 -> +1)", []).append(
                    (wrong.mean(), acc, wrong[zs].sum()))
                for kw, label in (({}, "defaults"), (dict(fit_intercept=False), "fit_intercept=False")):
                    est = SCW(variant=variant, shuffle=False, **kw).fit(Xs, ys)
                    wrong = est.history_["mistake"]
                    res.setdefault(f"SCW-{variant}, {label}", []).append(
                        (wrong.mean(), est.score(Xte, yte), wrong[zs].sum()))
            for kind, label in (("pa", "PassiveAggressiveClassifier (PA-I, C=1)"), ("perceptron", "Perceptron")):
                rate, est, gap = _sklearn_online(Xs, ys, kind)
                assert gap < 1e-9, f"{label}: the online loop does not reproduce scikit-learn ({gap})"
                res.setdefault(f"scikit-learn {label}", []).append((rate, est.score(Xte, yte), np.nan))
        out.append("")
        out.append(f"### {name}: {len(ytr):,} training rows x {Xtr.shape[1]}, {len(yte):,} held out; "
                   f"positives {np.mean(ytr > 0):.3f}, all-zero rows {zero.mean():.3f}; "
                   f"{n_orders} stream orders (mean ± sd)")
        out.append("")
        out.append("| learner | online mistake rate | held-out accuracy | online mistakes on all-zero rows |")
        out.append("|---|---|---|---|")
        for label, rows in res.items():
            a = np.array(rows, dtype=float)
            z = "-" if np.isnan(a[:, 2]).all() else f"{a[:, 2].mean():.0f}"
            out.append(f"| {label} | {a[:, 0].mean():.4f} ± {a[:, 0].std():.4f} | "
                       f"{a[:, 1].mean():.4f} ± {a[:, 1].std():.4f} | {z} |")
        print("\n".join(out[-len(res) - 5:]), flush=True)
        return res

    def split(n, seed=0):
        p = np.random.default_rng(seed).permutation(n)
        k = n // 4
        return np.sort(p[k:]), np.sort(p[:k])

    X, y = _a8a()
    tr, te = split(len(y))
    one("a8a (UCI Adult, 123 binary features)", X[tr], y[tr], X[te], y[te], orders)
    X, y = _a8a_web()
    tr, te = split(len(y))
    one("a8a-web (a8a with 3 % positives and 8.5 % all-zero rows)", X[tr], y[tr], X[te], y[te], orders)
    Xtr, ytr = _usps("usps.reconstructed.bz2")
    Xte, yte = _usps("usps.t.bz2")
    summary = {}
    for digit in range(10):
        res = one(f"USPS {digit} vs rest (train 7,291, test 2,007)", Xtr, np.where(ytr == digit, 1, -1),
                  Xte, np.where(yte == digit, 1, -1), usps_orders)
        for label, rows in res.items():
            summary.setdefault(label, []).append(np.mean(np.array(rows, dtype=float)[:, :2], axis=0))
    out.append("")
    out.append("### USPS one-vs-rest, mean over the 10 digits")
    out.append("")
    out.append("| learner | online mistake rate | held-out accuracy |")
    out.append("|---|---|---|")
    for label, rows in summary.items():
        a = np.array(rows)
        out.append(f"| {label} | {a[:, 0].mean():.4f} | {a[:, 1].mean():.4f} |")
    print("\n".join(out[-len(summary) - 5:]))


def main():
    import argparse
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-sparse", action="store_true")
    ap.add_argument("--repeat", type=int, default=3, help="rounds (fresh processes per contender)")
    ap.add_argument("--blas", default="1,default")
    ap.add_argument("--real", action="store_true",
                    help="learning on real streams (mistakes and accuracies, no timing)")
    a = ap.parse_args()
    if a.real:
        real()
        return
    print("# bench_scw\n")
    print(_bench.conditions([f"command: {' '.join(sys.argv)}"]))
    codes = []
    for mode in _bench.blas_modes(a.blas):
        print(f"\n## {_bench.blas_label(mode)}\n")
        lines, cs = bench_dense(a.quick, a.repeat, mode)
        print("\n".join(lines), flush=True)
        codes = cs
        if not a.no_sparse:
            lines, cs = bench_sparse(a.quick, a.repeat, mode)
            print("\n".join(lines), flush=True)
            codes = codes + cs
    print("## The contenders' code (each run a fresh `python -c` of it)\n")
    print("\n".join(_bench.race_calls(codes)))


if __name__ == "__main__":
    main()
