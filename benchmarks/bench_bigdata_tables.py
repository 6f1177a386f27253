"""A table larger than memory: PCA + SPE/T² + Coherence Pursuit ℓ2 scores out of core, against
the time to read the file once; and the same code on a two-worker dask.distributed cluster.

Run by hand (long; writes --rows x --cols float32 under --workdir, deletes it unless --keep):

    nice python benchmarks/bench_bigdata_tables.py --rows 50000000 --cols 50 --workdir /work/bigbench

Steps, each in its own process so that its peak memory (VmHWM) is its own:
  gen       writes the table to Zarr (rank-5 signal + noise + 1 % outliers), 250,000-row chunks;
  read      reads and decompresses every chunk once (the reference time);
  pipeline  DaskPCA (one pass; a TSQR pass only if the spectrum needs it), X̂ᵀX̂ about the PCA
            mean (one pass), then SPE, T², coherence and the SPE-or-T² flags in one shared pass,
            written to a Zarr store (per-row results exceed the 256 MB budget);
  cluster   the pipeline on the first --cluster-rows rows on the local threads and on a
            LocalCluster of two worker processes: largest differences of every number.
Each step prints one JSON line; results_bigdata.md quotes them.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

RANK = 5
CHUNK = 250_000


def vmhwm_mb():
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def cpu_s():
    t = os.times()
    return t.user + t.system


def _block(block_id, cols, seed=11):
    i = block_id[0]
    rng = np.random.default_rng([seed, i])
    basis = np.random.default_rng(seed).standard_normal((RANK, cols)) * np.linspace(3, 1, RANK)[:, None]
    n = CHUNK
    X = rng.standard_normal((n, RANK)) @ basis + 0.3 * rng.standard_normal((n, cols)) + 2.0
    out = rng.random(n) < 0.01
    X[out] = 4.0 * rng.standard_normal((int(out.sum()), cols))
    return X.astype(np.float32)


def step_gen(path, rows, cols):
    import dask
    import dask.array as da
    import zarr
    t0 = time.perf_counter()
    nb = -(-rows // CHUNK)
    X = da.map_blocks(lambda block_id=None: _block(block_id, cols), dtype=np.float32,
                      chunks=((CHUNK,) * nb, (cols,)))[:rows]
    z = zarr.open_array(str(path), mode="w", shape=(rows, cols), chunks=(CHUNK, cols), dtype="f4")
    with dask.config.set(scheduler="threads", num_workers=2):
        da.store(X, z, lock=False)
    return {"step": "gen", "rows": rows, "cols": cols, "seconds": time.perf_counter() - t0,
            "raw_gb": rows * cols * 4 / 2**30, "disk_gb": _du(path) / 2**30, "codec": str(z.metadata.codecs)
            if hasattr(z.metadata, "codecs") else str(getattr(z, "compressor", None))}


def step_read(path):
    import dask.array as da

    from robustcore.bigdata import compute, open_table
    X = open_table(path).array
    t0, c0 = time.perf_counter(), cpu_s()
    total = compute(X.map_blocks(lambda b: np.array([[b.sum(dtype=np.float64)]]), chunks=(1, 1),
                                 dtype=np.float64).sum())[0]
    return {"step": "read", "seconds": time.perf_counter() - t0, "cpu_s": cpu_s() - c0, "peak_mb": vmhwm_mb(),
            "blocks": X.numblocks[0], "check": float(total)}


def pipeline(X, store_dir, progress=None):
    from robustcore.bigdata import (DaskPCA, DaskResidualScorer, coherence_scores, materialize,
                                    settings)
    times = {}
    with settings(store_dir=store_dir, memory_budget=256 << 20):
        t = time.perf_counter()
        pca = DaskPCA(n_components=RANK).fit(X)
        times["pca_s"] = time.perf_counter() - t
        scorer = DaskResidualScorer.from_pca(pca)
        t = time.perf_counter()
        coh = coherence_scores(X, center=pca.mean_)
        times["coherence_matrix_s"] = time.perf_counter() - t
        spe, t2 = scorer.scores(X)
        t = time.perf_counter()
        rows = materialize({"spe": spe, "t2": t2, "coherence": coh,
                            "outlier": (spe > scorer.spe_limit_) | (t2 > scorer.t2_limit_)}, name="scores")
        times["scores_s"] = time.perf_counter() - t
    return pca, scorer, rows, times


def step_pipeline(path, store_dir):
    from robustcore.bigdata import open_table
    X = open_table(path).array
    t0, c0 = time.perf_counter(), cpu_s()
    pca, scorer, rows, times = pipeline(X, store_dir)
    flagged = int(sum(np.count_nonzero(rows["outlier"][s:s + 5_000_000]) for s in range(0, X.shape[0], 5_000_000)))
    return {"step": "pipeline", "seconds": time.perf_counter() - t0, "cpu_s": cpu_s() - c0, "peak_mb": vmhwm_mb(),
            **times, "solver": pca.solver_, "explained": float(pca.explained_variance_ratio_.sum()),
            "spe_limit": scorer.spe_limit_, "t2_limit": scorer.t2_limit_, "flagged": flagged,
            "stored_in": type(rows["spe"]).__module__}


def step_cluster(path, rows, store_dir):
    from distributed import LocalCluster

    from robustcore.bigdata import open_table, settings
    X = open_table(path).array[:rows]
    res = {}
    t0 = time.perf_counter()
    res["local"] = pipeline(X, Path(store_dir) / "local")
    t_local = time.perf_counter() - t0
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                      silence_logs=40) as cluster, settings(scheduler=cluster.scheduler_address):
        t0 = time.perf_counter()
        res["cluster"] = pipeline(X, Path(store_dir) / "cluster")
        t_cluster = time.perf_counter() - t0
    (pl, sl, rl, _), (pc, sc, rc, _) = res["local"], res["cluster"]

    def rel(a, b):
        a, b = np.asarray(a, float), np.asarray(b, float)
        return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))
    diffs = {"components": rel(pc.components_, pl.components_), "variances": rel(pc.all_variances_, pl.all_variances_),
             "spe_limit": rel(sc.spe_limit_, sl.spe_limit_), "t2_limit": rel(sc.t2_limit_, sl.t2_limit_)}
    for k in ("spe", "t2", "coherence"):
        diffs[k] = max(rel(rc[k][s:s + 1_000_000], rl[k][s:s + 1_000_000]) for s in range(0, rows, 1_000_000))
    diffs["outlier_flags_differing"] = int(sum(np.count_nonzero(np.asarray(rc["outlier"][s:s + 1_000_000])
                                                                != np.asarray(rl["outlier"][s:s + 1_000_000]))
                                               for s in range(0, rows, 1_000_000)))
    return {"step": "cluster", "rows": rows, "local_s": t_local, "cluster_s": t_cluster, "max_rel_diff": diffs}


def _du(p):
    p = Path(p)
    return sum(f.stat().st_size for f in p.rglob("*") if f.is_file()) if p.is_dir() else p.stat().st_size


def run_step(*args):
    out = subprocess.run([sys.executable, __file__, "--step", *map(str, args)], capture_output=True, text=True)
    if out.returncode:
        print(out.stderr[-3000:], file=sys.stderr)
        raise SystemExit(f"step {args[0]} failed")
    return out.stdout.strip().splitlines()[-1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=50_000_000)
    ap.add_argument("--cols", type=int, default=50)
    ap.add_argument("--cluster-rows", type=int, default=2_000_000)
    ap.add_argument("--workdir", default="/work/bigbench")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--skip", default="")
    ap.add_argument("--step", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    if a.step:
        kind, *rest = a.step
        if kind == "gen":
            r = step_gen(rest[0], int(rest[1]), int(rest[2]))
        elif kind == "read":
            r = step_read(rest[0])
        elif kind == "pipeline":
            r = step_pipeline(rest[0], rest[1])
        else:
            r = step_cluster(rest[0], int(rest[1]), rest[2])
        print(json.dumps(r, default=str))
        return
    work = Path(a.workdir)
    work.mkdir(parents=True, exist_ok=True)
    print(json.dumps({"step": "conditions", "cpus": os.cpu_count(), "load": os.getloadavg(),
                      "free_disk_gb": round(shutil.disk_usage(work).free / 2**30, 1),
                      "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS")}), flush=True)
    table = work / f"table-{a.rows}x{a.cols}.zarr"
    stores = work / "scores"
    skip = set(filter(None, a.skip.split(",")))
    try:
        if not table.exists():
            print(run_step("gen", table, a.rows, a.cols), flush=True)
        for kind in ("read", "pipeline", "read"):
            if kind not in skip:
                shutil.rmtree(stores, ignore_errors=True)
                print(run_step(kind, table, stores) if kind == "pipeline" else run_step(kind, table), flush=True)
        if "cluster" not in skip:
            shutil.rmtree(stores, ignore_errors=True)
            print(run_step("cluster", table, min(a.cluster_rows, a.rows), stores), flush=True)
    finally:
        shutil.rmtree(stores, ignore_errors=True)
        if not a.keep:
            shutil.rmtree(table, ignore_errors=True)


if __name__ == "__main__":
    main()
