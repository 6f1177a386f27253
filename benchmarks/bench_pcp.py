"""PCP speed and accuracy against a textbook inexact ALM and PyPI packages (run by hand).

    python benchmarks/bench_pcp.py                                  # Table I, MNIST, escalator
    python benchmarks/bench_pcp.py --cases table1 --refs ours,ours-1,rpca --repeat 5
    python benchmarks/bench_pcp.py --cases scaling --sizes 500,1000,2000,4000
    python benchmarks/bench_pcp.py --cases mnist --refs ours,ours-1 --busy 1     # a second job

References (pyrpca, rpca, skpcp, tensorly) are installed in the benchmark's venv only, never
as project dependencies. Every run of every solver is its own subprocess (fresh memory, a time
limit), the solvers taking turns run after run, ``--repeat`` runs each (``--ref-repeat`` for the
slow full-SVD references); the best AND the median wall time are reported, with ratios against
``ours`` from the same run. ``--blas 1,default``
runs everything once with one BLAS thread for every solver and once with the BLAS library's
default threads (each reference then uses the cores its own way; ours uses its own threads and
holds BLAS to one meanwhile). ``--busy N`` keeps N other processes spinning on the machine
during the runs (the "second job" condition for the thread policy).

Solvers: "ours" = PCP() (threads decided by the machine's load, see robustcore._threads),
"ours-1" = PCP(n_jobs=1), "textbook" (below: inexact ALM with numpy's full SVD, exactly the
reference MATLAB code), pyrpca's IALM, skpcp, tensorly, and `rpca` (AccAltProj, TOLD the rank:
not a blind solver). Every solver's imports are done before the clock starts; "ours" and
"ours-1" also fit a small problem first, with the optional compiled kernels loaded, as in a
process that has loaded them (the app's worker does at start); "ours-cold" is PCP() as the
first fit of a fresh process, which does not load numba for data of this size (numba's 1-3 s
start-up would not pay for itself) and sweeps with numpy.

Cases: JACM Table I (n = 1000, rank 50, 5 % +-1 errors), the first 3000 MNIST training images
(3000 x 784, /255), the escalator video (200 frames x 20800 pixels, /255), and ``scaling``
(Table I at several n, rank 0.05 n, with the time exponent per doubling of n); all to
tol = 1e-7 (relative Frobenius residual).
"""
from __future__ import annotations

import argparse
import contextlib
import io
import math
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import _bench  # noqa: E402
import _pcp_data as data  # noqa: E402

TOL = 1e-7
CASES = {
    "table1": "JACM Table I, n = 1000, rank 50, 5 % +-1 errors",
    "mnist": "MNIST, first 3000 training images (3000 x 784)",
    "escalator": "escalator video (200 frames x 20800 pixels)",
}
REFS = ["ours", "ours-1", "ours-cold", "textbook", "pyrpca", "rpca"]
PACKAGES = {"pyrpca", "skpcp", "tensorly", "rpca"}


def load_case(case):
    if case.startswith("table1"):
        n = int(case.split("-")[1]) if "-" in case else 1000
        L0, S0 = data.table1(n, n // 20, 0.05, seed=0)
        return L0 + S0, (L0, S0)
    if case == "mnist":
        return data.mnist(3000), None
    if case == "escalator":
        return data.escalator(), None
    raise SystemExit(f"unknown case {case}")


# -- the textbook reference: inexact ALM with a full SVD every iteration ------------------------
def textbook_ialm(M, tol=TOL, max_iter=1000, rho=1.5):
    """Inexact ALM exactly as in the reference MATLAB code, written plainly with numpy."""
    m, n = M.shape
    lam = 1.0 / np.sqrt(max(m, n))
    norm_fro = np.linalg.norm(M)
    norm2 = np.linalg.norm(M, 2)
    Y = M / max(norm2, np.abs(M).max() / lam)
    mu = 1.25 / norm2
    mu_bar = mu * 1e7
    L = np.zeros_like(M)
    S = np.zeros_like(M)
    it = 0
    for it in range(1, max_iter + 1):
        T = M - L + Y / mu
        S = np.sign(T) * np.maximum(np.abs(T) - lam / mu, 0.0)
        U, s, Vt = np.linalg.svd(M - S + Y / mu, full_matrices=False)
        r = int(np.sum(s > 1.0 / mu))
        L = (U[:, :r] * (s[:r] - 1.0 / mu)) @ Vt[:r]
        Z = M - L - S
        Y = Y + mu * Z
        mu = min(mu * rho, mu_bar)
        if np.linalg.norm(Z) / norm_fro < tol:
            break
    return L, S, it


def run_solver(name, M, truth):
    """Return L, S, iterations (or None) and a note."""
    lam = 1.0 / np.sqrt(max(M.shape))
    if name in ("ours", "ours-1", "ours-cold"):
        from robustcore.subspace.pcp import PCP
        jobs = 1 if name == "ours-1" else None
        est = PCP(tol=TOL, random_state=0, n_jobs=jobs).fit(M)
        return est.low_rank_, est.sparse_, est.n_iter_, f"rank {est.rank_}"
    if name == "textbook":
        L, S, it = textbook_ialm(M)
        return L, S, it, "IALM + numpy full SVD"
    if name == "pyrpca":
        from pyrpca import rpca_pcp_ialm
        L, S = rpca_pcp_ialm(M, lam, tol=TOL, verbose=False)
        return L, S, None, "rpca_pcp_ialm (IALM, scipy full SVD)"
    if name == "skpcp":
        from skpcp import PCP as SkPCP
        est = SkPCP(tol=TOL, max_iter=1000).fit(M)
        return est.low_rank_, est.sparse_, est.n_iter_, "fixed-mu ADMM, full SVD, max_iter=1000"
    if name == "tensorly":
        import tensorly
        from tensorly.decomposition import robust_pca
        tensorly.set_backend("numpy")
        # two unfoldings of a matrix share one nuclear norm: reg_J = 1/2 gives PCP's objective
        tol_abs = TOL * float(np.linalg.norm(M))
        L, S = robust_pca(M, reg_E=lam, reg_J=0.5, tol=tol_abs, n_iter_max=100, verbose=0)
        return np.asarray(L), np.asarray(S), None, "robust_pca(reg_E=lam, reg_J=0.5, its default 100 iterations)"
    if name == "rpca":
        from rpca import RobustPCA
        # it centres the data first, which adds one to the rank of the low-rank part
        r = int(np.linalg.matrix_rank(truth[0])) + 1 if truth is not None else 251
        est = RobustPCA(n_components=r, tol=TOL, max_iter=1000, verbose=False).fit(M)
        return est.low_rank_ + est.mean_, est.sparse_, est.end_iter_, \
            f"AccAltProj TOLD the rank ({r} = true rank + 1 for its centring)"
    raise SystemExit(f"unknown solver {name}")


def _warm_up(name):
    """Import the solver's modules (and load our compiled kernels) before timing."""
    import scipy.linalg  # noqa: F401
    import scipy.sparse.linalg  # noqa: F401
    mods = {"pyrpca": "pyrpca", "skpcp": "skpcp", "tensorly": "tensorly.decomposition", "rpca": "rpca"}
    if name in mods:
        __import__(mods[name])
    if name in ("ours", "ours-1"):
        from robustcore import _jit
        from robustcore.subspace import _pcp_sweep, pcp
        _jit.kernels(_pcp_sweep._JIT_MODULE)
        L0, S0 = data.table1(300, 5, 0.05, seed=1)
        pcp.PCP(random_state=0, n_jobs=1 if name == "ours-1" else None).fit(L0 + S0)
    if name == "ours-cold":
        import robustcore.subspace.pcp  # noqa: F401  (the import only: kernels load during the fit)


def worker(name, case, objective):
    M, truth = load_case(case)
    _warm_up(name)
    base_mb = _bench.peak_rss_mb()
    w0, c0 = time.perf_counter(), time.process_time()
    with contextlib.redirect_stdout(io.StringIO()):
        L, S, it, note = run_solver(name, M, truth)
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    peak_mb = _bench.peak_rss_mb()
    L = np.asarray(L, dtype=np.float64)
    S = np.asarray(S, dtype=np.float64)
    out = dict(wall=wall, cpu=cpu, iters=it, note=note, rss_growth_x=(peak_mb - base_mb) / (M.nbytes / 2**20),
               residual=float(np.linalg.norm(M - L - S) / np.linalg.norm(M)))
    if objective:
        lam = 1.0 / math.sqrt(max(M.shape))
        out["objective"] = float(np.linalg.svd(L, compute_uv=False).sum() + lam * np.abs(S).sum())
    if truth is not None:
        L0, S0 = truth
        out["rel_err_L"] = float(np.linalg.norm(L - L0) / np.linalg.norm(L0))
        out["support_ok"] = bool(np.array_equal(S != 0, S0 != 0))
        if objective:
            out["rank"] = int(np.linalg.matrix_rank(L, tol=1e-6 * np.linalg.norm(L, 2)))
    _bench.child_result(**out)


@contextlib.contextmanager
def busy(count):
    """``count`` processes spinning on the CPU while the block runs (a second job)."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


def measure(case, refs, args, blas, objective=True):
    """{solver: (Timing, last result)} with the solvers taking turns, ``repeat`` runs each."""
    runs = {name: _bench.Timing() for name in refs}
    last = {}
    for rep in range(args.repeat):
        for name in refs:
            if name in last and "error" in last[name]:
                continue
            if name in (PACKAGES - {"rpca"}) | {"textbook"} and rep >= args.ref_repeat:
                continue
            if name == "textbook" and case.startswith("table1-") and int(case.split("-")[1]) > args.textbook_max:
                continue
            r = _bench.run_child([__file__, "--worker", name, case, "1" if args.objective and objective else "0"],
                                 blas=blas, timeout=args.timeout)
            last[name] = r
            if "error" not in r:
                runs[name].runs.append(r["wall"])
            print(f"    {case} {name} run {rep + 1}: " + (r.get("error") or f"{r['wall']:.3f} s"),
                  file=sys.stderr, flush=True)
    return {name: (runs[name], last.get(name)) for name in refs if name in last}


def table(case, res):
    ours = res.get("ours", (None, None))[0]
    ref_obj = next((r.get("objective") for name, (_, r) in res.items()
                    if name == "textbook" and r and "objective" in r), None)
    lines = ["| solver | best / median | time / ours (best, median) | iterations | "
             "residual | objective vs textbook | accuracy; notes |", "|---|--:|--:|--:|--:|--:|---|"]
    for name, (t, r) in res.items():
        if "error" in r:
            lines.append(f"| {name} | – | – | – | – | – | {r['error']} |")
            continue
        rat = (f"{t.best / ours.best:.2f} ({t.median / ours.median:.2f})" if ours and ours.runs else "–")
        obj = (f"{r['objective'] / ref_obj - 1:+.1e}" if ref_obj and "objective" in r else "–")
        acc = ""
        if "rel_err_L" in r:
            acc = f"err(L) {r['rel_err_L']:.1e}" + (f", rank {r['rank']}" if "rank" in r else "") + \
                  (", support exact" if r["support_ok"] else ", support NOT exact") + "; "
        it = r["iters"] if r["iters"] is not None else "–"
        lines.append(f"| {name} | {t} ({len(t.runs)} runs) | {rat} | {it} | {r['residual']:.1e} | {obj} | "
                     f"{acc}{r['note']}; CPU {r['cpu']:.2f} s; {r['blas']} |")
    return lines


def scaling(sizes, args, blas):
    """Table I at each n: ours and the textbook, and the exponent per doubling."""
    rows = {}
    for n in sizes:
        res = measure(f"table1-{n}", [x for x in ("ours", "ours-1", "textbook") if x in args.refs.split(",")],
                      args, blas, objective=False)
        rows[n] = res
    lines = ["| n | " + " | ".join(f"{k} best / median" for k in ("ours", "ours-1", "textbook")) + " | textbook / ours |",
             "|--:|--:|--:|--:|--:|"]
    for n, res in rows.items():
        cells = [str(res[k][0]) if k in res and res[k][0].runs else "–" for k in ("ours", "ours-1", "textbook")]
        rat = (_bench.ratio(res["textbook"][0], res["ours"][0])
               if "textbook" in res and res["textbook"][0].runs and res["ours"][0].runs else "–")
        lines.append(f"| {n} | " + " | ".join(cells) + f" | {rat} |")
    lines.append("")
    for k in ("ours", "ours-1", "textbook"):
        pts = [(n, res[k][0].best, res[k][0].median) for n, res in rows.items() if k in res and res[k][0].runs]
        if len(pts) < 2:
            continue
        ns = np.log2([p[0] for p in pts])
        for label, col in (("best", 1), ("median", 2)):
            ts = np.log2([p[col] for p in pts])
            slope = np.polyfit(ns, ts, 1)[0]
            steps = ", ".join(f"{pts[i][0]}->{pts[i + 1][0]}: {ts[i + 1] - ts[i]:.2f}" for i in range(len(pts) - 1))
            lines.append(f"- {k} ({label} times): time ~ n^{slope:.2f} (least squares over n = "
                         f"{', '.join(str(p[0]) for p in pts)}); per doubling {steps}")
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--worker", nargs=3, metavar=("SOLVER", "CASE", "OBJECTIVE"), help=argparse.SUPPRESS)
    ap.add_argument("--cases", default="table1,mnist,escalator",
                    help="comma-separated: table1, mnist, escalator, scaling")
    ap.add_argument("--refs", default=",".join(REFS), help="solvers: " + ", ".join(REFS + ["skpcp", "tensorly"]))
    ap.add_argument("--repeat", type=int, default=3, help="runs of each solver (best and median reported)")
    ap.add_argument("--ref-repeat", type=int, default=1,
                    help="runs of the slow references: textbook, pyrpca, skpcp, tensorly")
    ap.add_argument("--blas", default="1,default", help="BLAS threads per run: 1, default, or both")
    ap.add_argument("--sizes", default="500,1000,2000,4000", help="n for the scaling case")
    ap.add_argument("--textbook-max", type=int, default=2000, help="largest n the textbook runs in 'scaling'")
    ap.add_argument("--busy", type=int, default=0, help="processes kept spinning during the runs")
    ap.add_argument("--no-objective", dest="objective", action="store_false",
                    help="skip the nuclear-norm objective (a full SVD of L after each run)")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per run")
    args = ap.parse_args()
    if args.worker:
        worker(args.worker[0], args.worker[1], args.worker[2] == "1")
        return
    print("# bench_pcp\n")
    print(_bench.conditions([f"command: {' '.join(sys.argv)}", f"busy processes started: {args.busy}"]))
    with busy(args.busy):
        for blas in _bench.blas_modes(args.blas):
            print(f"\n## {_bench.blas_label(blas)}\n")
            for case in args.cases.split(","):
                if case == "scaling":
                    print(f"### Scaling with n (Table I, rank 0.05 n, 5 %), load {_bench.load_average()}\n")
                    sizes = [int(s) for s in args.sizes.split(",")]
                    print("\n".join(scaling(sizes, args, blas)) + "\n", flush=True)
                    continue
                res = measure(case, args.refs.split(","), args, blas)
                print(f"### {CASES.get(case, case)}, tol {TOL:g} (load after: {_bench.load_average()})\n")
                print("\n".join(table(case, res)) + "\n", flush=True)


if __name__ == "__main__":
    main()
