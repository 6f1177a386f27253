"""Loader speed and peak memory against reference readers, measured in the same run (by hand).

    python benchmarks/bench_datasets.py [--data /work/shared/data] [--repeat 3]

Each row compares ``robustcore.datasets.load`` with a plain reference reader of the same file:
sklearn's ``load_svmlight_file`` (LIBSVM), ``np.loadtxt`` (CSV), gzip + ``np.frombuffer`` (IDX),
``scipy.io.loadmat`` (MAT), ``np.load`` (NPY). Ratios > 1 mean ours is slower / uses more memory.
Ours does more work (validation, hashing the file for provenance, float64 conversion), which is
what the ratio measures. Peak memory is the growth of the process's peak RSS during the first
call, each reader measured in its own fresh process (one BLAS thread: loaders do no linear
algebra, so the BLAS setting does not matter here). Times are the best and the median of
``--repeat`` calls. Writes nothing outside benchmarks/_work/ (git-ignored) and prints a Markdown
table after the run's conditions.
"""
from __future__ import annotations

import argparse
import gzip
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
import _bench  # noqa: E402

from robustcore.datasets import load  # noqa: E402


def measure(fn, repeat):
    """Timing of ``repeat`` calls, and the peak RSS growth of the first call (bytes)."""
    base = _bench.peak_rss_mb()
    t = time.perf_counter()
    fn()
    first = time.perf_counter() - t
    grow = (_bench.peak_rss_mb() - base) * 2**20
    timing = _bench.timed(fn, repeat - 1) if repeat > 1 else _bench.Timing()
    timing.runs.insert(0, first)
    return timing, grow


def idx_reference(path):
    with gzip.open(path, "rb") as fh:
        raw = fh.read()
    nd = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(nd)]
    return np.frombuffer(raw, np.uint8, offset=4 + 4 * nd).reshape(dims[0], -1).astype(np.float64)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, default=Path("/work/shared/data"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--case", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--which", choices=("ours", "ref"), default="ours", help=argparse.SUPPRESS)
    a = ap.parse_args()
    work = ROOT / "benchmarks" / "_work"
    work.mkdir(parents=True, exist_ok=True)

    from scipy.io import loadmat
    from sklearn.datasets import load_svmlight_file

    rng = np.random.default_rng(0)
    csv = work / "bench_20000x50.csv"
    if not csv.exists():
        np.savetxt(csv, rng.normal(size=(20000, 50)), delimiter=",", fmt="%.6g")
    npy = work / "bench_20000x50.npy"
    np.save(npy, rng.normal(size=(20000, 50)))

    d = a.data
    cases = [
        ("LIBSVM a8a (22696 x 123, sparse)", lambda: load(d / "libsvm_binary/a8a"),
         lambda: load_svmlight_file(str(d / "libsvm_binary/a8a")), "sklearn load_svmlight_file"),
        ("LIBSVM usps.t.bz2 (2007 x 256)", lambda: load(d / "usps/usps.t.bz2"),
         lambda: load_svmlight_file(str(d / "usps/usps.t.bz2")), "sklearn load_svmlight_file"),
        ("CSV 20000 x 50", lambda: load(csv), lambda: np.loadtxt(csv, delimiter=","), "np.loadtxt"),
        ("IDX MNIST train (60000 x 784, gz)", lambda: load(d / "mnist/train-images-idx3-ubyte.gz"),
         lambda: idx_reference(d / "mnist/train-images-idx3-ubyte.gz"), "gzip + np.frombuffer"),
        ("MAT escalator (20800 x 200 uint8)", lambda: load(d / "video/escalator_data.mat"),
         lambda: loadmat(d / "video/escalator_data.mat")["X"].astype(np.float64), "scipy.io.loadmat"),
        ("MAT shuttle (49097 x 9)", lambda: load(d / "odds/shuttle.mat"),
         lambda: loadmat(d / "odds/shuttle.mat")["X"].astype(np.float64), "scipy.io.loadmat"),
        ("NPY 20000 x 50", lambda: load(npy), lambda: np.load(npy), "np.load"),
    ]
    if a.case is not None:
        name, ours, ref, refname = cases[a.case]
        t, m = measure(ours if a.which == "ours" else ref, a.repeat)
        _bench.child_result(runs=t.runs, grow=m)
        return
    print("# bench_datasets\n")
    print(_bench.conditions([f"command: {' '.join(sys.argv)}"]) + "\n")
    print("| file | reference | ours best / median | ref best / median | time ratio ours / ref (best, median) | "
          "peak RSS growth ours / ref |")
    print("|---|---|--:|--:|--:|---|")
    for k, (name, _, _, refname) in enumerate(cases):
        res = {}
        for which in ("ours", "ref"):
            out = _bench.run_child([__file__, "--data", str(a.data), "--repeat", str(a.repeat),
                                    "--case", str(k), "--which", which], blas="1")
            if "error" in out:
                raise SystemExit(f"{name} ({which}): {out['error']}")
            res[which] = (_bench.Timing(out["runs"]), float(out["grow"]))
        (t_o, m_o), (t_r, m_r) = res["ours"], res["ref"]
        # Below ~1 MB the RSS growth is page-granularity noise, so no ratio is shown.
        ratio = f"{m_o / m_r:.2f}" if m_r >= 2 ** 20 else "n/a (ref < 1 MB)"
        print(f"| {name} | {refname} | {t_o} | {t_r} | {t_o.best / t_r.best:.2f} ({t_o.median / t_r.median:.2f}) | "
              f"{m_o / 2**20:.0f} MB / {m_r / 2**20:.0f} MB = {ratio} |", flush=True)
    print(f"\n(load after: {_bench.load_average()})")


if __name__ == "__main__":
    main()
