"""Long fuzzing soak of the loaders and the session reader, by hand (the suite runs a short one).

Runs, each in a child process capped in memory (RLIMIT_AS) and time (SIGALRM) by
``tests/corpus/harness.py``:

1. the hostile corpus (``tests/corpus``), printing each case's outcome, peak memory and time;
   then the out-of-core sources of ``tests/corpus/lazy_cases.py`` (made at run time in a temporary
   folder; ``--big-bomb`` adds a Zarr chunk of a few MB of zlib that inflates to 4 GB, under a
   1 GiB budget), with the growth of the child's resident memory per case as well;
2. the estimator probes of ``benchmarks/_estimator_probes.py`` (constant, subnormal, huge,
   too wide and too tall tables, sparse data a dense method must densify), each in its own
   child with a time limit, with its outcome (refused / fitted / NaN / crash), time and the
   growth of the child's peak resident memory;
3. every hypothesis search of ``tests/corpus/searches.py`` (tampered sessions, loader options of
   every type, byte-level mutants of a valid file of every format) with many more examples than
   CI and a different random seed per round.

A search fails on the first input that raises anything but LoadError / SessionError, runs past
its time limit or crashes the process; the falsifying input is printed. Usage::

    nice python benchmarks/soak_hostile.py --examples 3000 --rounds 3
    nice python benchmarks/soak_hostile.py --only lazy --big-bomb
    nice python benchmarks/soak_hostile.py --only estimators
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.corpus import lazy_cases  # noqa: E402
from tests.corpus.harness import corpus, problems, run_child  # noqa: E402
from tests.corpus.searches import SEARCHES  # noqa: E402


def _table(lines) -> None:
    print("| file | options | outcome | peak MiB (traced) | resident growth MiB | s |\n|---|---|---|---|---|---|")
    for line in lines:
        rss = line.get("rss_growth")
        print(f"| {line['file']} | {line.get('options') or ''} | {line['outcome']} | "
              f"{line['peak'] / 2 ** 20:.1f} | {'' if rss is None else f'{rss / 2 ** 20:.1f}'} | "
              f"{line['seconds']:.2f} |")


def _estimators(seconds: float) -> int:
    """Each estimator probe in its own child; the number that failed (NaN, crash, time-out)."""
    from benchmarks._estimator_probes import PROBES
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    print("\n## estimators\n\n| probe | outcome | s | peak growth MiB | RuntimeWarnings | message |\n"
          "|---|---|---|---|---|---|")
    failed = 0
    for name in PROBES:
        t = time.perf_counter()
        try:
            proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "_estimator_probes.py"), name],
                                  capture_output=True, text=True, timeout=seconds, env=env, cwd=str(ROOT))
            line = json.loads(proc.stdout.strip().splitlines()[-1]) if proc.stdout.strip() else \
                {"outcome": f"died ({proc.returncode})", "message": proc.stderr[-200:]}
        except subprocess.TimeoutExpired:
            line = {"outcome": "timeout", "seconds": round(time.perf_counter() - t, 1)}
        failed += line["outcome"] not in ("refused", "fitted")
        msg = (line.get("message") or "").replace("|", "/").replace("\n", " ")
        print(f"| {name} | {line['outcome']} | {line.get('seconds', '')} | "
              f"{line.get('peak_growth', 0) / 2 ** 20:.0f} | {line.get('runtime_warnings', '')} | {msg[:160]} |",
              flush=True)
    return failed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=2000, help="examples per search and round")
    ap.add_argument("--rounds", type=int, default=2, help="rounds, each with another seed")
    ap.add_argument("--seconds", type=float, default=30, help="time limit per input")
    ap.add_argument("--only", choices=("corpus", "lazy", "estimators", "searches"), help="run one part only")
    ap.add_argument("--big-bomb", action="store_true", help="add the 4 GB zlib chunk to the out-of-core cases")
    args = ap.parse_args()
    failed = 0
    for kind in ("load", "reopen") if args.only in (None, "corpus") else ():
        cases, budget = corpus(kind)
        t = time.perf_counter()
        lines = run_child({"cases": cases}, timeout=3600)
        bad = problems(cases, lines, budget)
        failed += bool(bad)
        print(f"\n## corpus: {kind} ({len(cases)} cases, budget {budget / 2 ** 20:.0f} MiB, "
              f"{time.perf_counter() - t:.1f} s)\n")
        _table(lines)
        for b in bad:
            print(f"PROBLEM: {b}")
    if args.only in (None, "lazy"):
        with tempfile.TemporaryDirectory(prefix="lazy-corpus-") as folder:
            cases = lazy_cases.make(folder)
            if args.big_bomb:
                t = time.perf_counter()
                cases.append(lazy_cases.big_bomb(folder))
                print(f"(the 4 GB bomb written in {time.perf_counter() - t:.0f} s)")
            t = time.perf_counter()
            lines = run_child({"cases": cases}, timeout=3600)
            bad = [b for c, line in zip(cases, lines) for b in problems([c], [line], c["budget"])]
            bad += [f"{c['file']}: no result" for c in cases[len(lines):]]
            failed += bool(bad)
            print(f"\n## out-of-core sources ({len(cases)} cases, budget {lazy_cases.BUDGET / 2 ** 20:.0f} MiB, "
                  f"the 4 GB bomb 1 GiB; {time.perf_counter() - t:.1f} s)\n")
            _table(lines)
            for b in bad:
                print(f"PROBLEM: {b}")
    if args.only in (None, "estimators"):
        failed += _estimators(max(args.seconds, 120))
    if args.only not in (None, "searches"):
        return 1 if failed else 0
    print("\n## searches\n\n| search | seed | examples | outcome | s |\n|---|---|---|---|---|")
    for r in range(args.rounds):
        for name in SEARCHES:
            t = time.perf_counter()
            try:
                run_child({"hypothesis": name, "examples": args.examples, "seconds": args.seconds, "seed": 1000 + r},
                          timeout=24 * 3600)
                outcome = "no failure"
            except AssertionError as exc:
                outcome = "FAILED"
                failed += 1
                print(str(exc)[-4000:], file=sys.stderr)
            print(f"| {name} | {1000 + r} | {args.examples} | {outcome} | {time.perf_counter() - t:.0f} |", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
