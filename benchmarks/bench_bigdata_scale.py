"""A table larger than the memory budget, from the command line: PCA, SPE/T² and Coherence
Pursuit ℓ2 on a 30,000,000 x 50 float32 ``.npy`` (6 GB), against one cold read of the file.

Run by hand (long: about half an hour on 2 cores; writes the table under --workdir and deletes
it unless --keep):

    nice python benchmarks/bench_bigdata_scale.py --workdir /work/bigbench

What it does, each step in a process of its own so that its peak memory (ru_maxrss from wait4)
and CPU time are its own:

  gen    writes the table (rank-5 signal + noise + 1 % outliers, the rows in blocks) and fsyncs it;
  read   evicts the file from the page cache (posix_fadvise DONTNEED: no root needed), then reads
         it once in 64 MiB pieces: the reference wall time of "one cold read";
  run    evicts the file again, then ``robust-studio run --data big.npy --method M --out DIR``:
         the command line's default memory budget (2 GiB) is below the table, so it goes out of
         core by itself and says so in one line; per-sample results go to METHOD-results.zarr.

Each method runs --repeat times, each run after a cold read of its own (interleaved, so both see
the same machine); best and median are printed with the load average. Ratios are wall / the read
just before it.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

RANK = 5
BLOCK = 500_000
METHODS = ("pca", "residual", "coherence-pursuit")


def load() -> str:
    a, b, c = os.getloadavg()
    return f"{a:.2f}/{b:.2f}/{c:.2f}"


def generate(path: Path, rows: int, cols: int, seed: int = 11) -> None:
    basis = np.random.default_rng(seed).standard_normal((RANK, cols)) * np.linspace(3, 1, RANK)[:, None]
    out = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(rows, cols))
    for i, s in enumerate(range(0, rows, BLOCK)):
        n = min(BLOCK, rows - s)
        rng = np.random.default_rng([seed, i])
        X = rng.standard_normal((n, RANK)) @ basis + 0.3 * rng.standard_normal((n, cols)) + 2.0
        bad = rng.random(n) < 0.01
        X[bad] = 4.0 * rng.standard_normal((int(bad.sum()), cols))
        out[s:s + n] = X
    out.flush()
    del out
    with open(path, "rb") as fh:
        os.fsync(fh.fileno())


def evict(path: Path) -> None:
    """Drop the file's pages from the page cache (clean pages; its own file needs no root)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


# Runs a module or script and prints its own VmHWM last on stderr: ru_maxrss would start from
# the parent's peak (Linux keeps the larger of the two across fork and exec).
PEAK = """
import atexit, runpy, sys
def _peak():
    for line in open('/proc/self/status'):
        if line.startswith('VmHWM:'):
            sys.stderr.write('VMHWM_KB ' + line.split()[1] + chr(10))
atexit.register(_peak)
kind, target = sys.argv[1], sys.argv[2]
sys.argv = sys.argv[2:]
if kind == '-m':
    runpy.run_module(target, run_name='__main__', alter_sys=True)
else:
    exec(target)
"""


def timed(argv: list[str], env=None) -> dict:
    """Run ``[python, -m MODULE | -c CODE, args...]`` (``argv[0]`` is the interpreter); wall,
    CPU (user + system, wait4) and peak RSS (the child's own VmHWM)."""
    argv = [argv[0], "-c", PEAK, *argv[1:]]
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    out = proc.stdout.read()
    err = proc.stderr.read()
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({code}):\n{err.decode(errors='replace')[-3000:]}")
    text = err.decode(errors="replace")
    peak = [int(line.split()[1]) for line in text.splitlines() if line.startswith("VMHWM_KB ")]
    return {"wall_s": wall, "cpu_s": ru.ru_utime + ru.ru_stime, "peak_mb": peak[-1] / 1024 if peak else float("nan"),
            "stdout": out.decode(errors="replace") + text}


READ = """
import sys
with open(sys.argv[1], 'rb', buffering=0) as fh:
    buf = bytearray(64 << 20)
    view = memoryview(buf)
    while fh.readinto(view):
        pass
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=30_000_000)
    ap.add_argument("--cols", type=int, default=50)
    ap.add_argument("--workdir", default="/work/bigbench")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    ap.add_argument("--keep", action="store_true", help="keep the table (and reuse it next time)")
    ap.add_argument("--memory-budget", default=None,
                    help="passed to the command line (GB); its default (2) otherwise")
    args = ap.parse_args()

    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    table = work / f"table-{args.rows}x{args.cols}.npy"
    print(f"# bench_bigdata_scale, {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}, "
          f"{os.cpu_count()} cores, load {load()}")
    print(f"command: {' '.join([os.path.relpath(sys.argv[0], HERE.parent)] + sys.argv[1:])}")
    if not table.exists():
        t0 = time.perf_counter()
        generate(table, args.rows, args.cols)
        print(f"gen: {table.stat().st_size / 1e9:.2f} GB in {time.perf_counter() - t0:.0f} s")
    size_gb = table.stat().st_size / 1e9

    env = {**os.environ, "PYTHONPATH": str(HERE.parent)}
    rows = {m: [] for m in args.methods}
    for rep in range(args.repeat):
        for m in args.methods:
            evict(table)
            read = timed([sys.executable, "-c", READ, str(table)])   # (READ reads sys.argv[1])
            out = work / f"out-{m}"
            shutil.rmtree(out, ignore_errors=True)
            evict(table)
            budget = ["--memory-budget", args.memory_budget] if args.memory_budget else []
            run = timed([sys.executable, "-m", "app", "run", "--data", str(table), "--method", m,
                         "--out", str(out), *budget], env=env)
            said = [line for line in run["stdout"].splitlines() if line.startswith("out of core")]
            passes = [line.strip() for line in run["stdout"].splitlines() if "passes" in line]
            rec = {"method": m, "repeat": rep, "read_wall_s": round(read["wall_s"], 2),
                   "read_gb_s": round(size_gb / read["wall_s"], 2), "wall_s": round(run["wall_s"], 1),
                   "cpu_s": round(run["cpu_s"], 1), "peak_mb": round(run["peak_mb"]),
                   "wall_over_read": round(run["wall_s"] / read["wall_s"], 2), "load": load(),
                   "said": said[:1], "passes": passes[:1]}
            rows[m].append(rec)
            print(json.dumps(rec), flush=True)
            shutil.rmtree(out, ignore_errors=True)

    print(f"\n{args.rows:,} x {args.cols} float32, {size_gb:.2f} GB; load after: {load()}\n")
    print("| method | wall best / median | CPU best | peak RSS | wall / one cold read (best, median) |")
    print("|---|--:|--:|--:|--:|")
    for m, recs in rows.items():
        walls = [r["wall_s"] for r in recs]
        ratios = [r["wall_over_read"] for r in recs]
        print(f"| {m} | {min(walls):.0f} s / {statistics.median(walls):.0f} s | "
              f"{min(r['cpu_s'] for r in recs):.0f} s | {max(r['peak_mb'] for r in recs):,} MB | "
              f"{min(ratios):.2f} ({statistics.median(ratios):.2f}) |")
    print("\nTargets (issue 22): peak under 2 GB, wall at most 4x one cold read.")
    if not args.keep:
        table.unlink()


if __name__ == "__main__":
    main()
