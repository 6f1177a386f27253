"""PCP speed and accuracy against a textbook inexact ALM and PyPI packages (run by hand).

    /work/benchvenv-pcp/bin/python benchmarks/bench_pcp.py                 # every case
    /work/benchvenv-pcp/bin/python benchmarks/bench_pcp.py --cases table1 --repeat 3
    /work/benchvenv-pcp/bin/python benchmarks/bench_pcp.py --refs textbook,pyrpca

The venv holds the reference packages only (pyrpca, skpcp, tensorly, rpca; created with
``python3 -m venv --system-site-packages /work/benchvenv-pcp``); they are not project
dependencies. Each solver runs in its own subprocess (fresh memory, a time limit), several
times; the best wall time is kept and reported together with the CPU time of that process.
Memory: for our solver and the textbook one, the peak of numpy allocations alive at once during
the solve (tracemalloc, a separate run; X itself excluded); for the packages, the growth of the
process's peak RSS. The machine is shared, so compare RATIOS from one run.

Solvers: "ours" = PCP() (its own threads on every core, BLAS held to one thread meanwhile),
"ours-1" = PCP(n_jobs=1), "textbook" (written below), and the PyPI packages. Run once with
the default BLAS threads and once with OPENBLAS_NUM_THREADS=1 to compare both ways.

Cases: JACM Table I (n = 1000, rank 50, 5 % +-1 errors), the first 3000 MNIST training
images (3000 x 784, /255) and the escalator video as 200 frames x 20800 pixels (/255);
all to tol = 1e-7 (relative Frobenius residual).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import _pcp_data as data  # noqa: E402

TOL = 1e-7
CASES = {
    "table1": "Table I, n=1000, rank 50, 5% (+-1)",
    "mnist": "MNIST first 3000 (3000 x 784)",
    "escalator": "escalator video (200 x 20800)",
}
REFS = ["ours", "ours-1", "textbook", "pyrpca", "skpcp", "tensorly", "rpca"]


def load_case(case):
    if case == "table1":
        L0, S0 = data.table1(1000, 50, 0.05, seed=0)
        return L0 + S0, (L0, S0)
    if case == "table1-500":
        L0, S0 = data.table1(500, 25, 0.05, seed=0)
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
    if name in ("ours", "ours-1"):
        from robustcore.subspace.pcp import PCP
        jobs = 1 if name == "ours-1" else None
        est = PCP(tol=TOL, random_state=0, n_jobs=jobs).fit(M)
        return est.low_rank_, est.sparse_, est.n_iter_, \
            f"svd=auto, rank {est.rank_}, n_jobs={'all cores' if jobs is None else jobs}"
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
        return np.asarray(L), np.asarray(S), None, \
            "robust_pca(reg_E=lam, reg_J=0.5, n_iter_max=100 (its default)), 2 full SVDs/iteration"
    if name == "rpca":
        from rpca import RobustPCA
        # it centres the data first, which adds one to the rank of the low-rank part
        r = int(np.linalg.matrix_rank(truth[0])) + 1 if truth is not None else 251
        est = RobustPCA(n_components=r, tol=TOL, max_iter=1000, verbose=False).fit(M)
        return est.low_rank_ + est.mean_, est.sparse_, est.end_iter_, \
            f"AccAltProj, told the rank ({r} = true rank + 1 for its centring): NOT blind"
    raise SystemExit(f"unknown solver {name}")


def _preimport(name):
    """Import the solver's modules before measuring, so time and memory are the solve's own."""
    import scipy.linalg  # noqa: F401
    import scipy.sparse.linalg  # noqa: F401
    mods = {"ours": "robustcore.subspace.pcp", "ours-1": "robustcore.subspace.pcp", "pyrpca": "pyrpca", "skpcp": "skpcp",
            "tensorly": "tensorly.decomposition", "rpca": "rpca"}
    if name in mods:
        __import__(mods[name])


def worker(name, case):
    M, truth = load_case(case)
    _preimport(name)
    base_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    w0, c0 = time.perf_counter(), time.process_time()
    import io
    import contextlib
    with contextlib.redirect_stdout(io.StringIO()):
        L, S, it, note = run_solver(name, M, truth)
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # before the checks below
    L = np.asarray(L, dtype=np.float64)
    S = np.asarray(S, dtype=np.float64)
    out = dict(solver=name, case=case, wall=wall, cpu=cpu, iters=it, note=note,
               residual=float(np.linalg.norm(M - L - S) / np.linalg.norm(M)),
               peak_mb=peak_mb, data_mb=M.nbytes / 2**20, base_mb=base_mb)
    if os.environ.get("BENCH_PCP_MEMORY") == "1":
        # numpy reports its allocations to tracemalloc: the exact peak of arrays alive at once
        import tracemalloc
        del L, S
        tracemalloc.start()
        with contextlib.redirect_stdout(io.StringIO()):
            L, S, *_ = run_solver(name, M, truth)
        out["traced_peak_mb"] = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    if truth is not None:
        L0, S0 = truth
        out["rel_err_L"] = float(np.linalg.norm(L - L0) / np.linalg.norm(L0))
        out["rank"] = int(np.linalg.matrix_rank(L, tol=1e-6 * np.linalg.norm(L, 2)))
        out["nnz_S"] = int(np.count_nonzero(S))
        out["support_ok"] = bool(np.array_equal(S != 0, S0 != 0))
    print("RESULT " + json.dumps(out))


def run_one(name, case, timeout, memory=False):
    cmd = [sys.executable, __file__, "--worker", name, case]
    env = os.environ.copy()
    env["BENCH_PCP_MEMORY"] = "1" if memory else "0"
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return dict(solver=name, case=case, error=f"timed out after {timeout:.0f} s")
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
    return dict(solver=name, case=case, error=" | ".join(tail) or f"exit code {proc.returncode}")


def fmt_row(r, ours_wall):
    if "error" in r:
        return f"| {r['solver']} | – | – | – | – | – | {r['error']} |"
    ratio = r["wall"] / ours_wall if ours_wall else float("nan")
    acc = f"res {r['residual']:.1e}"
    if "rel_err_L" in r:
        acc += f", err(L) {r['rel_err_L']:.1e}, rank {r['rank']}, nnz {r['nnz_S']}" \
               f"{' (support exact)' if r['support_ok'] else ''}"
    it = r["iters"] if r["iters"] is not None else "–"
    if "traced_peak_mb" in r:
        mem = f"{r['traced_peak_mb']:.0f} MB ({r['traced_peak_mb'] / r['data_mb']:.1f}x X)"
    else:
        extra = r["peak_mb"] - r["base_mb"]
        mem = f"RSS +{extra:.0f} MB ({extra / r['data_mb']:.1f}x X)"
    return (f"| {r['solver']} | {r['wall']:.2f} | {r['cpu']:.2f} | {ratio:.1f}x | {it} | {mem} | "
            f"{acc}; {r['note']} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--worker", nargs=2, metavar=("SOLVER", "CASE"), help=argparse.SUPPRESS)
    ap.add_argument("--cases", default="table1,mnist,escalator")
    ap.add_argument("--refs", default=",".join(REFS))
    ap.add_argument("--repeat", type=int, default=3, help="runs of our solver and the textbook one (best kept)")
    ap.add_argument("--ref-repeat", type=int, default=1, help="runs of each PyPI package")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per run")
    args = ap.parse_args()
    if args.worker:
        worker(*args.worker)
        return
    print(f"# bench_pcp  ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load {os.getloadavg()[0]:.1f}, "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'default')})\n")
    for case in args.cases.split(","):
        rows = []
        for name in args.refs.split(","):
            reps = args.repeat if name in ("ours", "ours-1", "textbook") else args.ref_repeat
            best = None
            traced = None
            for i in range(reps):
                r = run_one(name, case, args.timeout, memory=(i == 0 and name in ("ours", "ours-1", "textbook")))
                if "error" in r:
                    best = best or r
                    break
                traced = r.get("traced_peak_mb", traced)
                if best is None or "error" in best or r["wall"] < best["wall"]:
                    best = r
            if traced is not None and "error" not in best:
                best["traced_peak_mb"] = traced
            rows.append(best)
            print(f"  {case}/{name}: " + (best.get("error") or f"{best['wall']:.2f} s, res {best['residual']:.1e}"),
                  file=sys.stderr, flush=True)
        ours = next((r for r in rows if r["solver"] == "ours" and "error" not in r), None)
        ours_wall = ours["wall"] if ours else None
        print(f"## {CASES.get(case, case)}, tol {TOL:g}\n")
        print("| solver | wall s (best) | CPU s | time / ours | iterations | peak memory during the solve | accuracy; notes |")
        print("|---|--:|--:|--:|--:|--:|---|")
        for r in rows:
            print(fmt_row(r, ours_wall))
        print(flush=True)


if __name__ == "__main__":
    main()
