"""Coherence Pursuit speed and peak memory, run by hand:  python benchmarks/bench_coherence_pursuit.py

Each measurement runs in a fresh subprocess so its peak RSS (resource.getrusage) is its own.
Reference: the naive method that forms the full n x n Gram matrix (what the paper's code does),
at n = 10,000 where it still fits (800 MB). Figures are reported as ratios within this run.
The planted subspace is linear (center="none"): inliers = n/5 in a 5-dim subspace, the rest
Gaussian outliers; the most coherent n/10 samples are selected.
Options: --quick (smaller sizes), --l1-big (add the l1 run at n = 100,000: ~10 minutes),
--repeat R (runs per measurement, each its own process; best and median reported),
--blas 1,default (one BLAS thread for both contenders, then the library's default).

--tall (issues 27, 36): instead, the tall table 1,000,000 x 50 (400 MB), 80 % of the rows near a
5-dim subspace (noise 0.01), the rest Gaussian outliers, in the race harness of benchmarks/_bench.py:
each contender is the code a user writes (printed at the end), run in a fresh process per run,
the contenders interleaved round by round (--repeat rounds), the load recorded before each run,
the timed call's wall and CPU and the whole process's CPU quoted as median (range), ratios paired
by round. Contenders: scikit-learn's ``PCA(n_components=5).fit(X)`` then ``.transform(X)`` (the
reference); Coherence Pursuit with its defaults and n_components=5, ``fit(X)`` then
``score_samples(X)`` (the scikit-learn style: the scores are a second pass over X), and
``fit_row_results(X)`` (every per-row result from the fit's own passes); with one BLAS thread,
what each output costs (``fit(X)`` alone; ``fit(X)`` then ``coherence_``, made when first read),
and "floor": the BLAS products alone that the fit + score_samples makes (C = Σ ŷŷᵀ, the
coherence bounds' thin product (m = 5 directions here; the exact form of the few rows near the
cut is left out), the selected rows' Gram, the residual pass's thin product (its SPE is |y|² -
|t|²) and the calibration rows' scatter A (EᵀE = P A P, no explicit residual), the score pass's
one thin product), each by the fastest kernel here, and no other sweep over memory (norms,
normalising, logs, selection): a lower bound of the fit + score_samples CPU on one core, timed by its own clock.
Extra memory = the process's peak minus its memory once the data exist (the peak is reset there
through /proc/self/clear_refs where Linux allows it). Our runs' limits, score sum and selection
are printed with their spread across runs and contenders (the same numbers every time).
--baseline-tree DIR adds the fit + score_samples of the robustcore/ in DIR (another version) to
the race. --stages: the CPU of each step of one fit (marked by its progress messages), of
score_samples, of coherence_'s first read and of PCA's fit and transform, one BLAS thread,
--repeat fresh processes, each beside the BLAS products it makes timed alone in the same process
(``products_by_stage``; PCA's XᵀX and X Wᵀ), and the totals paired by run.
"""
from __future__ import annotations

import argparse
import os
import sys
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import _bench  # noqa: E402

CHILD = textwrap.dedent("""
    import sys, time
    import numpy as np
    sys.path.insert(0, {root!r})
    sys.path.insert(0, {here!r})
    import _bench
    from robustcore.subspace.coherence_pursuit import CoherencePursuit
    n, d, r, kind, norm = {n}, {d}, {r}, {kind!r}, {norm}
    rng = np.random.default_rng(0)
    n1 = n // 5
    U = np.linalg.qr(rng.standard_normal((d, r)))[0]
    X = np.vstack([rng.standard_normal((n1, r)) @ U.T, rng.standard_normal((n - n1, d))])
    base = _bench.peak_rss_mb()
    t0 = time.perf_counter()
    if kind == "cop":
        cop = CoherencePursuit(n_components=r, norm=norm, n_inliers=n1 // 2, center="none").fit(X)
        V = cop.components_.T
        err = float(np.linalg.norm(U - V @ (V.T @ U)) / np.linalg.norm(U))
    else:
        # Naive reference: full Gram of the normalised rows, then the same selection and SVD.
        Xn = X / np.linalg.norm(X, axis=1, keepdims=True)
        G = Xn @ Xn.T
        np.fill_diagonal(G, 0.0)
        p = np.abs(G).sum(axis=1) if norm == 1 else (G * G).sum(axis=1)
        sel = np.argsort(-p)[: n1 // 2]
        V = np.linalg.svd(Xn[sel], full_matrices=False)[2][:r].T
        err = float(np.linalg.norm(U - V @ (V.T @ U)) / np.linalg.norm(U))
    dt = time.perf_counter() - t0
    peak = _bench.peak_rss_mb()
    _bench.child_result(seconds=dt, peak_mb=peak, data_mb=base, err=err)
""")


TALL_N, TALL_D, TALL_R = 1_000_000, 50, 5


def tall_table():
    """(X, U): the --tall table (module doc) and its planted basis (d, r), made in slices (no
    n x d temporary besides X)."""
    import numpy as np
    n, d, r = TALL_N, TALL_D, TALL_R
    rng = np.random.default_rng(0)
    n1 = int(0.8 * n)
    U = np.linalg.qr(rng.standard_normal((d, r)))[0]
    X = np.empty((n, d))
    for s in range(0, n, 100_000):
        e = min(s + 100_000, n)
        if e <= n1:
            X[s:e] = rng.standard_normal((e - s, r)) @ U.T + 0.01 * rng.standard_normal((e - s, d))
        else:
            X[s:e] = rng.standard_normal((e - s, d))
    return X, U


def reset_peak():
    """The process's memory now (MB), with the peak (VmHWM) made to start again from here where
    Linux allows it: extra memory = peak after the call - this."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        pass
    return _bench.peak_rss_mb()


def subspace_error(U, components):
    """|U - V Vᵀ U| / |U| for the planted basis U and the fitted components' rows V."""
    import numpy as np
    V = np.asarray(components).T
    return float(np.linalg.norm(U - V @ (V.T @ U)) / np.linalg.norm(U))


def products_floor(X, r):
    """Seconds of the BLAS products alone that an exact fit + score_samples must make (the
    fastest kernel here for each, with the block copies the in-place ones work on), on the row
    counts the fit reports; no other sweep over memory is timed."""
    return sum(products_by_stage(X, r).values())


# The steps of --stages (the fit's progress messages) whose BLAS products products_by_stage times.
FLOOR_STAGES = ("column moments", "coherence bounds", "subspace", "residuals", "score_samples(X)")


def products_by_stage(X, r, cop=None):
    """{step: seconds of its BLAS products alone} (:data:`FLOOR_STAGES`; module doc's "floor"),
    on the row counts of ``cop`` (a fit of X with ``r`` components; made here when None, not
    timed)."""
    import time

    import numpy as np

    from robustcore.subspace.coherence_pursuit import CoherencePursuit
    if cop is None:
        cop = CoherencePursuit(n_components=r).fit(X)          # for the row counts only
    k, n_c, n = cop.selected_indices_.size, cop.calibration_indices_.size, X.shape[0]
    C = np.ascontiguousarray(cop.components_)
    CT = C.T
    d = X.shape[1]
    b = 262_144 // d

    def gram(rows):                  # numpy's syrk: faster here than scipy's
        for s in range(0, rows, b):
            B = X[s:min(s + b, rows)]
            B.T @ B

    def coords(rows):                # T = Y Cᵀ alone (SPE from |y|² - |t|²)
        for s in range(0, rows, b):
            X[s:min(s + b, rows)] @ CT

    steps = (("column moments", lambda: gram(n)),            # C = Σ ŷŷᵀ over every row
             ("coherence bounds", lambda: coords(n)),         # m = 5 products per row
             ("subspace", lambda: gram(k)),                   # the selected rows' Σ ŷŷᵀ
             ("residuals", lambda: (coords(n), gram(n_c))),   # the residual pass, the calibration rows' A
             ("score_samples(X)", lambda: coords(n)))
    out = {}
    for name, run in steps:
        t0 = time.process_time()
        run()
        out[name] = time.process_time() - t0
    return out


# The contenders, as a user's script calls them (setup untimed; the call timed; checks after).
_TALL_SETUP = ("import numpy as np\nimport bench_coherence_pursuit as B\nX, U = B.tall_table()\n"
               "{imports}\nbase = B.reset_peak()")
_TALL_AFTER = "report.update(extra_mb=B._bench.peak_rss_mb() - base{more})"
_OURS_AFTER = (", err=B.subspace_error(U, cop.components_), flagged=int(np.count_nonzero(score > 1.0)), "
               "spe_limit=float(cop.spe_limit_), t2_limit=float(cop.t2_limit_), "
               "score_sum=float(np.sum(score)), selected=int(cop.selected_indices_.sum()), "
               "robustcore=__import__('robustcore').__file__")
TALL_CONTENDERS = (
    ("scikit-learn PCA(5) fit + transform", "from sklearn.decomposition import PCA",
     "T = PCA(n_components=5).fit(X).transform(X)", ""),
    ("ours: CoherencePursuit(5).fit(X), then score_samples(X)", "from robustcore import CoherencePursuit",
     "cop = CoherencePursuit(n_components=5).fit(X)\nscore = -cop.score_samples(X)", _OURS_AFTER),
    ("ours: CoherencePursuit(5).fit_row_results(X)", "from robustcore import CoherencePursuit",
     "cop = CoherencePursuit(n_components=5)\nscore = cop.fit_row_results(X).outlier_score", _OURS_AFTER),
)
TALL_REF = TALL_CONTENDERS[0][0]
# What each output costs (one BLAS thread only): the fit alone, and the fit + coherence_ (made
# when first read).
_FIT_AFTER = ", err=B.subspace_error(U, cop.components_)"
TALL_COSTS = (
    ("ours: CoherencePursuit(5).fit(X) alone", "from robustcore import CoherencePursuit",
     "cop = CoherencePursuit(n_components=5).fit(X)", _FIT_AFTER),
    ("ours: fit(X), then coherence_", "from robustcore import CoherencePursuit",
     "cop = CoherencePursuit(n_components=5).fit(X)\ncoh = cop.coherence_", _FIT_AFTER),
)
FLOOR = "floor: the BLAS products alone of an exact fit + score_samples (module doc)"


def tall_contenders(floor: bool, baseline=None):
    """The race's contenders; ``baseline``: a directory holding another version's robustcore/,
    whose fit + score_samples runs as one more contender (before/after in the same race)."""
    cs = [_bench.Contender(name, call, _TALL_SETUP.format(imports=imports), _TALL_AFTER.format(more=more))
          for name, imports, call, more in TALL_CONTENDERS]
    if baseline:
        _, imports, call, more = TALL_CONTENDERS[1]
        cs.append(_bench.Contender(f"the same, robustcore of {baseline}", call,
                                   f"import sys\nsys.path.insert(0, {baseline!r})\n" +
                                   _TALL_SETUP.format(imports=imports), _TALL_AFTER.format(more=more)))
    if floor:     # the floor's loop runs on one core: it and the costs for the one-thread runs only
        cs += [_bench.Contender(name, call, _TALL_SETUP.format(imports=imports), _TALL_AFTER.format(more=more))
               for name, imports, call, more in TALL_COSTS]
        cs.append(_bench.Contender(FLOOR, "dt = B.products_floor(X, 5)", _TALL_SETUP.format(imports=""),
                                   "report.update(floor_cpu=dt)"))
    return cs


def _floor_cells(runs):
    """The floor's CPU seconds (its own clock: the fit it counts rows from is not timed) and
    their paired ratios to PCA's call CPU."""
    fl = {r["round"]: r["floor_cpu"] for r in runs.get(FLOOR, []) if "error" not in r}
    ref = {r["round"]: r["cpu"] for r in runs.get(TALL_REF, []) if "error" not in r}
    ratios = [fl[k] / ref[k] for k in sorted(fl.keys() & ref.keys()) if ref[k] > 0]
    return _bench.span(list(fl.values())), _bench.span(ratios, "x")


# --stages: one fit's CPU by step (the fit's progress messages mark the steps), in a fresh process
STAGES_CALL = """\
import time
steps, last = [], [time.process_time(), "validation and scaling"]
def progress(fraction, message=""):
    now = time.process_time()
    if message and message != last[1]:
        steps.append((last[1], now - last[0]))
        last[:] = [now, message]
    return True
t0 = time.process_time()
cop = CoherencePursuit(n_components=5).fit(X, progress=progress)
steps.append((last[1] + " (the rest of fit)", time.process_time() - last[0]))
t1 = time.process_time(); score = cop.score_samples(X); t2 = time.process_time()
coh = cop.coherence_; t3 = time.process_time()
pca = PCA(n_components=5).fit(X); t4 = time.process_time(); T = pca.transform(X); t5 = time.process_time()
steps += [("score_samples(X)", t2 - t1), ("coherence_ (first read)", t3 - t2),
          ("PCA(5).fit(X)", t4 - t3), ("PCA .transform(X)", t5 - t4)]
"""


# --stages, after the timed call: each step's BLAS products alone (products_by_stage), and
# PCA's: its fit's XᵀX and its transform's X Wᵀ, as scikit-learn makes them
STAGES_AFTER = """\
floor = B.products_by_stage(X, 5, cop)
t0 = time.process_time(); X.T @ X; t1 = time.process_time(); X @ pca.components_.T; t2 = time.process_time()
floor.update({"PCA(5).fit(X)": t1 - t0, "PCA .transform(X)": t2 - t1})
report.update(steps=steps, floor=floor)
"""


def stages(a):
    """CPU seconds of each step of one fit, score_samples and coherence_, and of PCA's fit and
    transform, median (range) over --repeat fresh processes with one BLAS thread, beside the
    BLAS products each step makes, timed alone in the same process (products_by_stage)."""
    import statistics
    c = _bench.Contender("stages", STAGES_CALL, _TALL_SETUP.format(
        imports="from robustcore import CoherencePursuit\nfrom sklearn.decomposition import PCA"),
        STAGES_AFTER)
    runs = _bench.race([c], a.repeat, "1", timeout=1800)["stages"]
    ok = [r for r in runs if "error" not in r]
    if not ok:
        raise SystemExit(runs[-1].get("error"))
    print(f"\n## CPU by step, one BLAS thread ({len(ok)} fresh processes, load {_bench.load_span({'s': runs})})\n")
    print("| step | CPU, median (range) | its BLAS products alone, median | the rest (sweeps, Python), median |")
    print("|---|--:|--:|--:|")
    for i, (name, _) in enumerate(ok[0]["steps"]):
        vals = [r["steps"][i][1] for r in ok if len(r["steps"]) == len(ok[0]["steps"])]
        fl = [r["floor"][name] for r in ok if name in r.get("floor", {})]
        if fl:
            rest = statistics.median(v - f for v, f in zip(vals, fl))
            cells = f"{_bench.fmt_s(statistics.median(fl))} | {_bench.fmt_s(rest)}"
        else:
            cells = "– | –"
        print(f"| {name} | {_bench.span(vals)} | {cells} |")
    # the totals: fit + score_samples against PCA's fit + transform, paired by run
    pca_steps = ("PCA(5).fit(X)", "PCA .transform(X)")
    ours = [sum(v for k, v in r["steps"] if k not in pca_steps and not k.startswith("coherence_")) for r in ok]
    ref = [sum(v for k, v in r["steps"] if k in pca_steps) for r in ok]
    ours_fl = [sum(v for k, v in r["floor"].items() if k not in pca_steps) for r in ok]
    ref_fl = [sum(r["floor"][k] for k in pca_steps) for r in ok]
    print(f"| **fit + score_samples(X)** | {_bench.span(ours)} | {_bench.fmt_s(statistics.median(ours_fl))} | "
          f"{_bench.fmt_s(statistics.median(o - f for o, f in zip(ours, ours_fl)))} |")
    print(f"| **PCA fit + transform** | {_bench.span(ref)} | {_bench.fmt_s(statistics.median(ref_fl))} | "
          f"{_bench.fmt_s(statistics.median(o - f for o, f in zip(ref, ref_fl)))} |")
    print(f"\nfit + score_samples / PCA fit + transform, paired by run: "
          f"{_bench.span([o / p for o, p in zip(ours, ref)], 'x')}; products alone "
          f"{_bench.span([o / p for o, p in zip(ours_fl, ref_fl)], 'x')}")


def tall(a):
    """The --tall case (module doc) in the race harness (benchmarks/_bench.py)."""
    import statistics
    for mode in _bench.blas_modes(a.blas):
        print(f"\n## {_bench.blas_label(mode)}\n")
        cs = tall_contenders(floor=mode == "1", baseline=a.baseline_tree)
        runs = _bench.race(cs, a.repeat, mode, timeout=1800)
        floor_runs = runs.pop(FLOOR, None)
        print(f"load over the runs: {_bench.load_span(runs)} (1-minute average before each run)\n")
        mem = ("extra memory (peak - after data)", lambda r: f"{r['extra_mb']:.0f} MB")
        err = ("subspace error", lambda r: f"{r['err']:.1e}" if "err" in r else "–")
        flag = ("rows with score > 1", lambda r: f"{r['flagged']:,}" if "flagged" in r else "–")
        print("\n".join(_bench.race_table(runs, TALL_REF, extra=(mem, err, flag))))
        if floor_runs is not None:
            runs[FLOOR] = floor_runs
            cpu, ratio = _floor_cells(runs)
            print(f"\n{FLOOR}: {cpu} CPU, **{ratio}** PCA's call CPU (paired by round)")
        # the contenders of ours give the same numbers in every run
        for key in ("spe_limit", "t2_limit", "score_sum", "selected"):
            vals = [r[key] for name, rs in runs.items() for r in rs if key in r]
            if vals:
                spread = (max(vals) - min(vals)) / max(abs(statistics.median(vals)), 1e-300)
                print(f"\n{key}: {statistics.median(vals):.12g}, relative spread across our runs {spread:.1e}",
                      end="")
        where = sorted({f"{name}: {r['robustcore']}" for name, rs in runs.items() for r in rs if "robustcore" in r})
        print("\n\nrobustcore imported by our runs: " + "; ".join(where), end="")
        print(f"\n\nthe table: 1,000,000 x 50 float64 = 381 MB (400 MB); load after: {_bench.load_average()}",
              flush=True)
    print("\n### The calls\n")
    print("\n".join(_bench.race_calls(tall_contenders(floor=True, baseline=a.baseline_tree))))


def run(n, d, r, kind, norm, blas, repeat):
    """Best/median seconds and the first run's memory of ``repeat`` fresh processes."""
    code = CHILD.format(root=ROOT, here=HERE, n=n, d=d, r=r, kind=kind, norm=norm)
    t = _bench.Timing()
    first = None
    for _ in range(repeat):
        out = _bench.run_child(["-c", code], blas=blas, timeout=3600)
        if "error" in out:
            raise SystemExit(f"{kind} n={n} norm={norm}: {out['error']}")
        t.runs.append(out["seconds"])
        first = first or out
    return t, first


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--l1-big", action="store_true")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--blas", default="1,default")
    ap.add_argument("--tall", action="store_true")
    ap.add_argument("--stages", action="store_true",
                    help="the --tall table: CPU of each step of one fit, score_samples, coherence_ and PCA")
    ap.add_argument("--baseline-tree", default=None,
                    help="--tall: also race the fit + score_samples of the robustcore/ in this directory")
    a = ap.parse_args()
    if a.stages:
        print("# bench_coherence_pursuit --stages\n")
        print(_bench.conditions([f"command: {' '.join(sys.argv)}"]))
        stages(a)
        return
    if a.tall:
        print("# bench_coherence_pursuit --tall\n")
        print(_bench.conditions([f"command: {' '.join(sys.argv)}"]))
        tall(a)
        return
    d, r = 100, 5
    big = 20_000 if a.quick else 100_000
    mid = 4_000 if a.quick else 10_000
    print("# bench_coherence_pursuit\n")
    print(_bench.conditions([f"command: {' '.join(sys.argv)}"]))
    cases = [
        ("CoP l2 (d x d shortcut)", big, "cop", 2),
        ("CoP l2 (d x d shortcut)", mid, "cop", 2),
        ("CoP l1 (chunked Gram)", mid, "cop", 1),
        ("naive full Gram l2", mid, "naive", 2),
        ("naive full Gram l1", mid, "naive", 1),
    ] + ([("CoP l1 (chunked Gram)", big, "cop", 1)] if a.l1_big else [])
    for mode in _bench.blas_modes(a.blas):
        print(f"\n## {_bench.blas_label(mode)}\n")
        print("| method | n | best / median | peak RSS | extra memory (peak - after data) | subspace error |")
        print("|---|--:|--:|--:|--:|--:|")
        by = {}
        for label, n, kind, norm in cases:
            t, res = run(n, d, r, kind, norm, mode, a.repeat)
            by[(label, n)] = (t, res)
            print(f"| {label} | {n:,} | {t} ({len(t.runs)} runs) | {res['peak_mb']:.0f} MB | "
                  f"{res['peak_mb'] - res['data_mb']:.0f} MB | {res['err']:.1e} |", flush=True)
        (n2, m2), (n1, m1) = by[("naive full Gram l2", mid)], by[("naive full Gram l1", mid)]
        (c2, k2), (c1, k1) = by[("CoP l2 (d x d shortcut)", mid)], by[("CoP l1 (chunked Gram)", mid)]

        def extra(x):
            return max(x["peak_mb"] - x["data_mb"], 1)
        print(f"\nAt n = {mid:,} (load after: {_bench.load_average()}): time naive / CoP, l2 "
              f"{_bench.ratio(n2, c2)}, l1 {_bench.ratio(n1, c1)}; extra memory naive / CoP, "
              f"l2 {extra(m2) / extra(k2):.1f}x, l1 {extra(m1) / extra(k1):.1f}x", flush=True)


if __name__ == "__main__":
    main()
