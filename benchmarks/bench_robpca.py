"""ROBPCA: robustcore's against robpy's (issue 35's speed target: at least 10x robpy, same answers).

Two tables, each a planted low-rank structure with 10 % outliers (a tight cluster off the
subspace and scattered rows far along it): 50,000 x 10 (rank 3) and 10,000 x 200 (rank 5), made
by ``make`` (seed 0) and saved once as .npy files that every run loads. The race is the shared
harness's (benchmarks/_bench.py): every run a fresh process, the contenders interleaved round by
round, the load average recorded before each run, wall and CPU time (every thread) of the timed
call, medians and ranges, and the ratios robpy / ours paired round by round; once with one BLAS
thread for every contender and once with the library's default. The timed call is the fit and
every row's score and orthogonal distances and flags (ours: ``fit_row_results``, the registry's
path; robpy: ``fit`` and ``plot_outlier_map(..., return_distances=True)``); untimed before it:
the imports, loading the table and a first fit of each contender on its first 500 rows (one-time
costs: scikit-learn 1.9's first input check spends about 0.05 s finding dataframe plug-ins,
which robpy's scikit-learn 1.6 does not have). The contenders' exact code is printed at the end.

robpy is not a dependency: it lives in a virtual environment of its own, given with --robpy
(``python -m venv /tmp/robpy_venv && /tmp/robpy_venv/bin/pip install robpy==0.0.6``).

"Same answers": the cosines of the principal angles between the two fitted subspaces (of the
last round), the share of the planted outliers each flags beyond a cut-off, and the share of the
planted inliers each flags. The rank is given (n_components = the planted rank) and ours has
scale="none" so both fit the same model; robpy's rule for k differs from the paper's (no l_k /
l_1 test, no kmax), and robpy does not rescale (our default "auto" resolves to "none" on both
tables, after a column check of about 8 ms of CPU at 10,000 x 200, 2026-11-29 round 6).

    python benchmarks/bench_robpca.py --robpy /tmp/robpy_venv/bin/python [--repeat 3] [--blas 1,default]

``--threads-check``: ours alone, the one-BLAS-thread mode (every BLAS thread variable set to 1)
and the default mode interleaved round by round in one race, so that the drift of a shared
machine between the two modes' races cannot pass for a difference between the modes.

``--against DIR``: ours alone, this checkout against another (DIR: a checkout of an earlier
commit, e.g. ``git archive main | tar -x -C DIR``), interleaved round by round with one BLAS
thread (or in each mode of an explicit ``--blas``: ``--blas default`` for the wall time a
change's threads save), so that what a change saved is measured with the machine's drift
shared by both.
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import _bench  # noqa: E402

SHAPES = {"50000x10": (50_000, 10, 3), "10000x200": (10_000, 200, 5)}


def make(n, d, r, seed=0):
    """Inliers near a rank-r affine subspace (noise 0.1), 5 % in a tight cluster 6 units off it
    and 5 % scattered far along it and off it; returns X and the outlier mask."""
    rng = np.random.default_rng(seed)
    U = np.linalg.qr(rng.standard_normal((d, r)))[0]
    X = 3.0 + rng.standard_normal((n, r)) * np.linspace(3.0, 1.0, r) @ U.T + 0.1 * rng.standard_normal((n, d))
    w = rng.standard_normal(d)
    w -= U @ (U.T @ w)
    w /= np.linalg.norm(w)
    m = n // 20
    X[:m] = 3.0 + 6.0 * w + 0.1 * rng.standard_normal((m, d))
    X[m:2 * m] += 20.0 * rng.standard_normal((m, 1)) * U[:, 0] + 3.0 * rng.standard_normal((m, d)) / np.sqrt(d)
    truth = np.zeros(n, bool)
    truth[:2 * m] = True
    return X, truth


def contenders(data, answers, k, robpy_python):
    """ours and robpy, each loading the table ``data`` and saving its loadings (k, d) and flags
    to ``answers[name]`` after the timed call."""
    setup = f"import numpy as np\nX = np.load({data!r})\n"
    save = "np.savez({out!r}, comps=comps, flagged=flagged)"
    ours = _bench.Contender(
        "ours",
        setup=setup + "from robustcore import ROBPCA\n"
                      f"ROBPCA(n_components={k}, random_state=0, scale='none').fit_row_results(X[:500])",
        call=f"m = ROBPCA(n_components={k}, random_state=0, scale='none')\nres = m.fit_row_results(X)",
        after="comps, flagged = m.components_, np.asarray(res.outlier)\n" + save.format(out=answers["ours"]))
    robpy = _bench.Contender(
        "robpy",
        setup=setup + "import warnings\nwarnings.filterwarnings('ignore')\nimport matplotlib\n"
                      "matplotlib.use('Agg')\nfrom robpy.pca import ROBPCA\n"
                      f"ROBPCA(n_components={k}).fit(X[:500])",
        call=f"m = ROBPCA(n_components={k}).fit(X)\n"
             "sd, od, sd_cut, od_cut = m.plot_outlier_map(X, return_distances=True)",
        after="comps, flagged = np.asarray(m.components_).T, (sd > sd_cut) | (od > od_cut)\n"
              + save.format(out=answers["robpy"]),
        python=robpy_python)
    return [robpy, ours]


def cosines(A, B):
    return np.linalg.svd(np.linalg.qr(A.T)[0].T @ np.linalg.qr(B.T)[0], compute_uv=False)


def section(shape, mode, a, tmp):
    n, d, r = SHAPES[shape]
    X, truth = make(n, d, r)
    data = os.path.join(tmp, f"{shape}.npy")
    np.save(data, X)
    answers = {w: os.path.join(tmp, f"{shape}-{w}.npz") for w in ("ours", "robpy")}
    cs = contenders(data, answers, r, a.robpy)
    runs = _bench.race(cs, a.repeat, mode, timeout=1800)
    lines = [f"### {shape} (rank {r}, 10 % outliers), {_bench.blas_label(mode)}; "
             f"load {_bench.load_span(runs)} (1 min) before the runs", "",
             *_bench.race_table(runs, "ours"), ""]
    if all(os.path.exists(p) for p in answers.values()):
        ans = {w: np.load(p) for w, p in answers.items()}
        for w in ("robpy", "ours"):
            f = ans[w]["flagged"]
            lines.append(f"- {w} flags {f[truth].mean():.1%} of the planted outliers and "
                         f"{f[~truth].mean():.2%} of the inliers")
        lines.append("- subspace cosines: " + str(np.round(cosines(ans["ours"]["comps"],
                                                                 ans["robpy"]["comps"]), 6).tolist()))
    return lines + [""], cs


def threads_check(shape, a, tmp):
    """Markdown lines: ours in both BLAS modes, interleaved (module doc, ``--threads-check``)."""
    n, d, r = SHAPES[shape]
    data = os.path.join(tmp, f"{shape}.npy")
    np.save(data, make(n, d, r)[0])
    answers = {w: os.path.join(tmp, f"{shape}-{w}.npz") for w in ("ours", "robpy")}
    ours = contenders(data, answers, r, a.robpy)[1]
    one = dataclasses.replace(ours, name="ours, BLAS variables 1", env={v: "1" for v in _bench.BLAS_VARS})
    default = dataclasses.replace(ours, name="ours, default")
    runs = _bench.race([one, default], a.repeat, "default", timeout=1800)
    return [f"### {shape}: ours with every BLAS thread variable set to 1 against the library default, "
            f"interleaved; load {_bench.load_span(runs)} (1 min) before the runs", "",
            *_bench.race_table(runs, "ours, default"), ""], [one, default]


def against(shape, a, tmp, mode="1"):
    """Markdown lines: ours against ours from the checkout ``a.against`` (another commit, e.g.
    main before a change), interleaved round by round in the BLAS mode ``mode``: the paired
    ratio says what a change saved, with the machine's drift shared by both (``--against``)."""
    n, d, r = SHAPES[shape]
    data = os.path.join(tmp, f"{shape}.npy")
    np.save(data, make(n, d, r)[0])
    answers = {w: os.path.join(tmp, f"{shape}-{w}.npz") for w in ("ours", "robpy")}
    ours = contenders(data, answers, r, a.robpy)[1]
    before = dataclasses.replace(ours, name=f"ours at {a.against}",
                                 setup=f"import sys\nsys.path.insert(0, {a.against!r})\n" + ours.setup)
    runs = _bench.race([before, ours], a.repeat, mode, timeout=1800)
    return [f"### {shape}: ours against ours at {a.against}, interleaved, {_bench.blas_label(mode)}; "
            f"load {_bench.load_span(runs)} (1 min) before the runs", "",
            *_bench.race_table(runs, "ours"), ""], [before, ours]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--robpy", required=True, help="the Python of a virtual environment with robpy")
    ap.add_argument("--repeat", type=int, default=3, help="rounds (fresh processes per contender)")
    ap.add_argument("--blas", default="1,default")
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--threads-check", action="store_true",
                    help="only ours, the two BLAS modes interleaved in one race (module doc)")
    ap.add_argument("--against", metavar="DIR",
                    help="only ours, against ours from another checkout DIR (module doc)")
    a = ap.parse_args()
    a.blas_given = any(arg == "--blas" or arg.startswith("--blas=") for arg in sys.argv[1:])
    print("# bench_robpca\n")
    print(_bench.conditions([f"command: {' '.join(sys.argv)}"]), "\n", flush=True)
    calls = []
    with tempfile.TemporaryDirectory() as tmp:
        for shape in a.shapes.split(","):
            if shape not in SHAPES:
                ap.error(f"--shapes takes {', '.join(SHAPES)}; got {shape!r}")
            if a.threads_check:
                lines, calls = threads_check(shape, a, tmp)
                print("\n".join(lines), flush=True)
                continue
            if a.against:
                for mode in _bench.blas_modes(a.blas if a.blas_given else "1"):
                    lines, calls = against(shape, a, tmp, mode)
                    print("\n".join(lines), flush=True)
                continue
            for mode in _bench.blas_modes(a.blas):
                lines, calls = section(shape, mode, a, tmp)
                print("\n".join(lines), flush=True)
    print("### The contenders' code (each run a fresh `python -c` of it; the last table's)\n")
    print("\n".join(_bench.race_calls(calls)))


if __name__ == "__main__":
    main()
