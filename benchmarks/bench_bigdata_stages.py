"""CPU of each stage of one command-line run (issue 36: where an out-of-core fit's time goes).

    python benchmarks/bench_bigdata_stages.py run --data /work/bigbench/table-5000000x50.npy \\
        --method coherence-pursuit --memory-budget 0.17 --out DIR

runs ``robust-studio`` with the arguments given, in this process, and prints to stderr the
process CPU (user + system, every thread) between one progress message and the next (the fit's
steps: "column moments" is pass 1, "coherence scores" pass 2, "residuals" pass 3), the
whole process's CPU and wall, and its peak memory (VmHWM). ``NUM_WORKERS=1`` in the environment
runs the out-of-core passes on one local Dask thread instead of one per core. Not a race: one
run, no floor; take it under ``/work/tools/bench`` for figures, and read the floor's shares from
``bench_bigdata_scale.py``'s floor row of the same round.
"""
import atexit
import os
import resource
import runpy
import sys
import time


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> None:
    t_start = time.perf_counter()
    steps, last = [], [_cpu(), "imports"]
    import robustcore._progress as progress
    report = progress.Reporter.report

    def marked(self, fraction, message=""):
        if message and message != last[1]:
            now = _cpu()
            steps.append((last[1], now - last[0]))
            last[:] = [now, message]
        return report(self, fraction, message)
    progress.Reporter.report = progress.Reporter.__call__ = marked

    def done():
        steps.append((last[1] + " (to exit)", _cpu() - last[0]))
        for name, cpu in steps:
            print(f"STAGE {cpu:7.2f}  {name}", file=sys.stderr)
        with open("/proc/self/status") as fh:
            hwm = next((line.split(":")[1].strip() for line in fh if line.startswith("VmHWM")), "?")
        print(f"STAGE {sum(c for _, c in steps):7.2f}  TOTAL CPU; wall {time.perf_counter() - t_start:.1f} s; "
              f"peak {hwm}", file=sys.stderr)
    atexit.register(done)
    if os.environ.get("NUM_WORKERS"):
        from dataclasses import replace

        import robustcore.bigdata._dask as dask_settings
        dask_settings._CURRENT.set(replace(dask_settings.Settings(), num_workers=int(os.environ["NUM_WORKERS"])))
    sys.argv = ["robust-studio", *sys.argv[1:]]
    runpy.run_module("app", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
