"""The first Open from a cold start (issue 33.4): how long the window stops answering.

    QT_QPA_PLATFORM=offscreen python benchmarks/bench_startup.py [repeats] [--demo NAME] [--run METHOD] [--stacks]

Each run is a new Python process (tests/app/first_open_probe.py): the window is shown at
1280 x 800 and the demo opened at once (then, with ``--run``, that method run on it); a 10 ms
QTimer ticks from Open until the data (and the result) is drawn, and the largest interval
between two ticks is how long the window froze. Ours: the window's warm-up imports what its
first drawing needs, results wait for that in their own thread, and nothing else is imported
ahead (app.warm_up). Reference: the window as before issue 33, its warm-up importing the
estimators while the first Open's views import robustcore.compare (and so scikit-learn) on the
GUI thread. The two alternate, ``repeats``
times each; the table gives the best and the median, the ratio reference / ours of the medians,
and how many runs had the GUI thread wait for another thread's import. Record the load average:
the target (under 200 ms) is for a quiet machine.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import _bench  # noqa: E402

PROBE = os.path.join(ROOT, "tests", "app", "first_open_probe.py")


def probe(reference: bool, demo: str, run: str | None, stacks: bool = False) -> dict:
    env = {**os.environ, "PYTHONPATH": ROOT}
    env.setdefault("QT_QPA_PLATFORM", "offscreen")
    argv = ([sys.executable, PROBE, "--demo", demo] + (["--run", run] if run else [])
            + (["--reference"] if reference else []) + (["--stacks"] if stacks else []))
    out = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("repeats", nargs="?", type=int, default=3)
    p.add_argument("--demo", default="gaussian-2d")
    p.add_argument("--run", metavar="METHOD")
    p.add_argument("--stacks", action="store_true",
                   help="also print where ours' GUI thread was while the timer was 250 ms late")
    args = p.parse_args()
    print(_bench.conditions())
    runs = {"reference": [], "ours": []}
    for _ in range(args.repeats):
        for name in runs:
            r = probe(name == "reference", args.demo, args.run, stacks=args.stacks and name == "ours")
            runs[name].append(r)
            for where, count in r.get("stalls", []):
                print(f"      stalled {count} x 50 ms at {where}")
            if args.stacks and name == "ours":
                print(f"      longest gaps [length, start after Open]: {r['longest_gaps']}")
            print(f"  {name:9s} largest gap {_bench.fmt_s(r['max_gap'])} (GUI-thread CPU in a gap at most "
                  f"{_bench.fmt_s(r['max_gap_cpu'])}), Open -> drawn "
                  f"{_bench.fmt_s(r['open_to_end'])}, GUI-thread waits {r['waits']}, "
                  f"load {r['load_average']:.1f}", flush=True)
    what = f"Open '{args.demo}'" + (f" + Run {args.run}" if args.run else "")
    print(f"\n| {what} | largest 10 ms-timer gap, best / median | GUI-thread CPU in a gap, most: median | "
          f"Open -> drawn, median | runs whose GUI thread waited on an import | load average |")
    print("|---|---|---|---|---|---|")
    med = {}
    for name, rs in runs.items():
        gaps = [r["max_gap"] for r in rs]
        med[name] = statistics.median(gaps)
        loads = [r["load_average"] for r in rs]
        print(f"| {name} | {_bench.fmt_s(min(gaps))} / {_bench.fmt_s(med[name])} | "
              f"{_bench.fmt_s(statistics.median(r['max_gap_cpu'] for r in rs))} | "
              f"{_bench.fmt_s(statistics.median(r['open_to_end'] for r in rs))} | "
              f"{sum(1 for r in rs if r['waits'])} of {len(rs)} | {min(loads):.1f}-{max(loads):.1f} |")
    print(f"\nratio reference / ours (median largest gap): {med['reference'] / med['ours']:.1f}x")


if __name__ == "__main__":
    main()
