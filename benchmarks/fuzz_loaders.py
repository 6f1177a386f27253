"""Long-running fuzzing of the loaders, the out-of-core table readers and session parsing (issue 34.7).

Runs the hypothesis searches of ``tests/corpus/searches.py`` (Zarr 2/3 stores, HDF5 layouts,
CSV/LIBSVM bytes and ``open_lazy`` options of ``tests/corpus/fuzz_tables.py``; tampered
sessions, loader options and byte-level mutants of every format) round after round, a new
seed each round, each round in a child process of ``tests/corpus/harness.py`` held to the
invariant of the suite: the project's own error (LoadError / SessionError) or a correct result,
each input within 20 s (SIGALRM) and under an address-space cap (RLIMIT_AS, 768 MiB above the
child's start-up). A round that finds a failing input stops there (hypothesis shrinks it and the
child prints it); the script records it and goes on with the next seed, until ``--minutes``
have passed. It writes one JSON line per round to ``--log`` and a summary at the end::

    nice -n 19 python benchmarks/fuzz_loaders.py --minutes 60 --log /tmp/fuzz.jsonl
    nice -n 19 python benchmarks/fuzz_loaders.py --minutes 5 --only zarr-stores hdf5-layouts
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.corpus.searches import SEARCHES  # noqa: E402

DEFAULT = ["zarr-stores", "hdf5-layouts", "text-files", "table-options", "session-json", "loader-options",
           "file-mutants"]


def one_round(name: str, examples: int, seed: int, timeout: float) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT), OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
               QT_QPA_PLATFORM="offscreen")
    request = {"hypothesis": name, "examples": examples, "seconds": 20, "seed": seed}
    t = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, "-m", "tests.corpus.harness"], input=json.dumps(request), text=True,
                              capture_output=True, timeout=timeout, cwd=str(ROOT), env=env)
    except subprocess.TimeoutExpired:
        return {"search": name, "seed": seed, "outcome": "round timed out", "seconds": timeout, "tried": None}
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    last = lines[-1] if lines else {}
    out = {"search": name, "seed": seed, "seconds": round(time.perf_counter() - t, 1),
           "outcome": "ok" if proc.returncode == 0 else f"failed (exit {proc.returncode})",
           "tried": last.get("tried", examples if proc.returncode == 0 else None)}
    if proc.returncode != 0:
        err = proc.stderr
        cases = re.findall(r"Falsifying example: .*?(?=\n\S|\Z)|Failing test case: .*?\n {4}\| \)", err, re.S)
        kinds = re.findall(r"^\s*\|?\s*(\w+(?:\.\w+)*(?:Error|Exception|Exit)): (.*)$", err, re.M)
        out["errors"] = sorted({f"{k}: {m[:200]}" for k, m in kinds})[:12]
        out["examples"] = [c[:3000] for c in cases[:6]]
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=60)
    ap.add_argument("--examples", type=int, default=200, help="inputs per round (each round a new seed)")
    ap.add_argument("--only", nargs="*", default=None, help=f"searches to run (default: {' '.join(DEFAULT)})")
    ap.add_argument("--seed", type=int, default=1000)
    ap.add_argument("--log", default=None, help="append one JSON line per round to this file")
    args = ap.parse_args(argv)
    names = args.only or DEFAULT
    unknown = [n for n in names if n not in SEARCHES]
    if unknown:
        ap.error(f"unknown search(es) {unknown}; known: {sorted(SEARCHES)}")
    stop = time.time() + 60 * args.minutes
    seed, rounds = args.seed, []
    print(f"load average at start: {os.getloadavg()}", flush=True)
    while time.time() < stop:
        for name in names:
            if time.time() >= stop:
                break
            r = one_round(name, args.examples, seed, timeout=max(60.0, min(1800.0, stop - time.time() + 60)))
            rounds.append(r)
            print(json.dumps(r), flush=True)
            if args.log:
                with open(args.log, "a") as fh:
                    fh.write(json.dumps(r) + "\n")
        seed += 1
    print(f"load average at end: {os.getloadavg()}")
    print("\n| search | rounds | inputs tried | failing rounds |\n|---|---|---|---|")
    for name in names:
        mine = [r for r in rounds if r["search"] == name]
        tried = sum(r["tried"] or 0 for r in mine)
        bad = sum(r["outcome"] != "ok" for r in mine)
        print(f"| {name} | {len(mine)} | {tried:,} | {bad} |")
    return 1 if any(r["outcome"] != "ok" for r in rounds) else 0


if __name__ == "__main__":
    sys.exit(main())
