"""ROBPCA's stages in fresh processes: CPU time and minor page faults of each stage of one fit, to
see whether a slow process is slow everywhere (the process runs slower) or in the stages that
touch fresh memory (the allocator and page faults). Issue 35's 10,000 x 200 table
(benchmarks/bench_robpca.py's ``make``), one BLAS thread, the benchmark's warm-up fit on 500
rows first; then the timed ``fit_row_results``, as in bench_robpca.py.

Settings, interleaved round by round: ``as-is``; ``cpu0`` / ``cpu1`` (the process pinned to one
core); ``no-thp`` (numpy asks for no transparent huge pages, ``NUMPY_MADVISE_HUGEPAGE=0``, so
every fault is one 4 kB page and the faults count the fresh memory); ``default`` (the BLAS
libraries' default threads, every thread variable removed: robustcore still limits BLAS to one
thread inside the fit, so this compares that limit with ``OPENBLAS_NUM_THREADS=1`` and friends).
Each run prints its stages' ``CPU ms/faults/huge pages`` (the huge pages: transparent huge pages
the kernel faulted in during the stage, ``/proc/vmstat`` thp_fault_alloc, machine-wide: one fault
each in the minor count, 2 MB of fresh memory each; read it on a quiet machine); the summary
gives each setting's median (range) of the fit's CPU, and, over all runs, each stage's median in
the fastest and the slowest third of the runs with its correlation with the total.

``--fits N``: each process times N fits one after the other (the first is the one the summaries
use); a first fit slower than the later ones is a first-call cost of the process (fresh memory,
code paths met first), a process slow in every fit is the machine.

    /work/tools/bench python benchmarks/profile_robpca_stages.py --rounds 8 [--fits 3]
"""
from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import _bench  # noqa: E402
from bench_bigdata_stages import _huge_faults  # noqa: E402
from bench_robpca import SHAPES, make  # noqa: E402

# (module, function) of each stage, robustcore.subspace.robpca's names for them
STAGES = (("robpca", "_affine_span"), ("robpca", "outlyingness"), ("_robpca_steps", "unimcd_rows"),
          ("robpca", "_subset_scatter"), ("robpca", "_orthogonal"), ("robpca", "mcd_subspace"),
          ("_robpca_rows", "CentredRows.project"), ("robpca", "residual_scores"))
SETTINGS = {"as-is": {}, "cpu0": {"cpu": 0}, "cpu1": {"cpu": 1}, "no-thp": {"env": {"NUMPY_MADVISE_HUGEPAGE": "0"}},
            "default": {"blas": "default"}}


def _usage():
    """(CPU s, minor faults, huge pages faulted in machine-wide): a 2 MB page is one fault in
    the minor count, so the fresh memory of numpy's large arrays shows in the third."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime, r.ru_minflt, _huge_faults()


def child(data, k, cpu, fits=1):
    """One fresh process: the warm-up, then ``fits`` timed fits, each with every stage's CPU and
    faults (the result's ``total`` and ``stages`` are the first's; ``later``: the others' totals)."""
    import importlib
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})
    X = np.load(data)
    from robustcore import ROBPCA
    ROBPCA(n_components=k, random_state=0, scale="none").fit_row_results(X[:500])
    spent = {}

    def wrapped(fn, name):
        def call(*a, **kw):
            c0, f0, h0 = _usage()
            try:
                return fn(*a, **kw)
            finally:
                c1, f1, h1 = _usage()
                s = spent.setdefault(name, [0.0, 0, 0])
                s[0] += (c1 - c0) * 1e3
                s[1] += f1 - f0
                s[2] += h1 - h0
        return call
    for mod, name in STAGES:
        owner = importlib.import_module(f"robustcore.subspace.{mod}")
        *path, attr = name.split(".")           # (a class's method: "Class.method")
        for part in path:
            owner = getattr(owner, part)
        setattr(owner, attr, wrapped(getattr(owner, attr), name))
    totals, first = [], None
    for _ in range(fits):
        c0, f0, h0 = _usage()
        ROBPCA(n_components=k, random_state=0, scale="none").fit_row_results(X)
        c1, f1, h1 = _usage()
        totals.append([(c1 - c0) * 1e3, f1 - f0, h1 - h0])
        first = first or {name: list(v) for name, v in spent.items()}
        spent.clear()
    _bench.child_result(total=totals[0], stages=first, later=totals[1:],
                        switches=resource.getrusage(resource.RUSAGE_SELF).ru_nivcsw)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--settings", default=",".join(SETTINGS))
    ap.add_argument("--fits", type=int, default=1, help="timed fits per process (module doc)")
    ap.add_argument("--child", nargs=3, metavar=("DATA", "K", "CPU"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        data, k, cpu = a.child
        return child(data, int(k), None if cpu == "-" else int(cpu), a.fits)
    names = a.settings.split(",")
    for s in names:
        if s not in SETTINGS:
            ap.error(f"--settings takes {', '.join(SETTINGS)}; got {s!r}")
    print(_bench.conditions([f"command: {' '.join(sys.argv)}"]), "\n", flush=True)
    n, d, r = SHAPES["10000x200"]
    runs = {s: [] for s in names}
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "X.npy")
        np.save(data, make(n, d, r)[0])
        for rnd in range(a.rounds):
            for s in names:
                opt = SETTINGS[s]
                env = {**os.environ, **opt.get("env", {})}
                cpu = str(opt["cpu"]) if "cpu" in opt else "-"
                res = _bench.run_child([__file__, "--child", data, str(r), cpu, "--fits", str(a.fits)],
                                       blas=opt.get("blas", "1"), env=env)
                load = os.getloadavg()[0]
                if "error" in res:
                    print(f"{s:7s} round {rnd + 1}: {res['error']}", flush=True)
                    continue
                runs[s].append(res)
                stages = " ".join(f"{k}={v[0]:.0f}/{v[1]}/{v[2]}" for k, v in res["stages"].items())
                later = "".join(f", then {t:.0f} ms/{f}/{h}" for t, f, h in res.get("later", []))
                print(f"{s:7s} round {rnd + 1}, load {load:.2f}: total={res['total'][0]:.0f} ms/"
                      f"{res['total'][1]} faults/{res['total'][2]} huge{later}, {res['switches']} preemptions; "
                      f"{stages} (CPU ms/faults/huge pages)", flush=True)
    print("\n| setting | runs | fit CPU ms, median (range) | faults, median | huge pages, median | "
          "later fits' CPU ms, median (range) |\n|---|--:|--:|--:|--:|--:|")
    for s in names:
        t = [x["total"][0] for x in runs[s]]
        later = [f[0] for x in runs[s] for f in x.get("later", [])]
        if t:
            after = f"{np.median(later):.0f} ({min(later):.0f}-{max(later):.0f})" if later else "-"
            print(f"| {s} | {len(t)} | {np.median(t):.0f} ({min(t):.0f}-{max(t):.0f}) | "
                  f"{np.median([x['total'][1] for x in runs[s]]):.0f} | "
                  f"{np.median([x['total'][2] for x in runs[s]]):.0f} | {after} |")
    every = [x for s in names for x in runs[s]]
    if len(every) >= 6:
        order = np.argsort([x["total"][0] for x in every])
        third = len(every) // 3
        tot = np.array([x["total"][0] for x in every])
        print("\n| stage | fastest third, ms | slowest third, ms | faults, median | huge pages, median (max) | "
              "correlation with the total |\n|---|--:|--:|--:|--:|--:|")
        for _, name in STAGES:
            v = np.array([x["stages"].get(name, [0.0, 0])[0] for x in every])
            f = [x["stages"].get(name, [0.0, 0, 0])[1] for x in every]
            hp = [x["stages"].get(name, [0.0, 0, 0])[2] for x in every]
            print(f"| {name} | {np.median(v[order[:third]]):.0f} | {np.median(v[order[-third:]]):.0f} | "
                  f"{np.median(f):.0f} | {np.median(hp):.0f} ({max(hp)}) | {np.corrcoef(v, tot)[0, 1]:.2f} |")


if __name__ == "__main__":
    main()
