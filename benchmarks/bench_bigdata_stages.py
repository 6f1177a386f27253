"""CPU of each stage of one command-line run (issue 36: where an out-of-core fit's time goes).

    python benchmarks/bench_bigdata_stages.py run --data /work/bigbench/table-5000000x50.npy \\
        --method coherence-pursuit --memory-budget 0.17 --out DIR

runs ``robust-studio`` with the arguments given, in this process, and prints to stderr the
process CPU (user + system, every thread) between one progress message and the next (the fit's
steps: "column moments" is pass 1, "coherence scores" pass 2, "residuals" pass 3), split into
user and system CPU, with the bytes the process read and wrote through system calls in the
stage (``/proc/self/io`` rchar and wchar: the table's reads, the result stores' writes, those
around the page cache included), its wall time and its page faults (as MB of 4 KB pages: memory
first touched, each a fresh page on this VM), the transparent huge pages the kernel allocated
on faults in the stage (MB of 2 MB pages: numpy asks for huge pages for arrays of 4 MB or more,
and such a fault counts once in the page faults above, so they miss nearly all of a large
array's fresh memory; the kernel counts these for the whole machine, ``/proc/vmstat``
thp_fault_alloc, so other processes' show too: read it on a quiet machine), the whole
process's CPU and wall, and its peak memory (VmHWM). System CPU is mostly the kernel
copying those bytes (30M x 50: a third of the run's CPU; see results_bigdata.md). ``NUM_WORKERS=1`` in the environment
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


def _now() -> tuple:
    """(user CPU s, system CPU s, bytes read, bytes written, wall s, page faults) of this
    process so far."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    io = {}
    try:
        with open("/proc/self/io") as fh:
            io = {k: int(v) for k, v in (line.split(":") for line in fh)}
    except OSError:      # not Linux: no byte counts
        pass
    return (r.ru_utime, r.ru_stime, io.get("rchar", 0), io.get("wchar", 0), time.perf_counter(), r.ru_minflt,
            _huge_faults())


def _huge_faults() -> int:
    """Transparent huge pages allocated on faults so far, machine-wide (0 where not Linux)."""
    try:
        with open("/proc/vmstat") as fh:
            return next((int(line.split()[1]) for line in fh if line.startswith("thp_fault_alloc ")), 0)
    except OSError:
        return 0


def _since(a: tuple, b: tuple) -> tuple:
    return tuple(y - x for x, y in zip(a, b))


def main() -> None:
    t_start = time.perf_counter()
    steps, last = [], [_now(), "imports"]
    import robustcore._progress as progress
    report = progress.Reporter.report

    def marked(self, fraction, message=""):
        if message and message != last[1]:
            now = _now()
            steps.append((last[1], _since(last[0], now)))
            last[:] = [now, message]
        return report(self, fraction, message)
    progress.Reporter.report = progress.Reporter.__call__ = marked

    def done():
        steps.append((last[1] + " (to exit)", _since(last[0], _now())))
        print("STAGE     CPU    user  system  read MB  written MB    wall  faults MB  THP MB  stage", file=sys.stderr)
        for name, (user, system, read, written, wall, faults, huge) in steps:
            print(f"STAGE {user + system:7.2f} {user:7.2f} {system:7.2f} {read / 1e6:8.0f} {written / 1e6:11.0f} "
                  f"{wall:7.2f} {faults * 4096 / 1e6:10.0f} {huge * 2.097152:7.0f}  {name}", file=sys.stderr)
        with open("/proc/self/status") as fh:
            hwm = next((line.split(":")[1].strip() for line in fh if line.startswith("VmHWM")), "?")
        user, system, read, written = (sum(s[i] for _, s in steps) for i in range(4))
        print(f"STAGE {user + system:7.2f} {user:7.2f} {system:7.2f} {read / 1e6:8.0f} {written / 1e6:11.0f}  TOTAL; "
              f"wall {time.perf_counter() - t_start:.1f} s; peak {hwm}", file=sys.stderr)
    atexit.register(done)
    if os.environ.get("NUM_WORKERS"):
        from dataclasses import replace

        import robustcore.bigdata._dask as dask_settings
        dask_settings._CURRENT.set(replace(dask_settings.Settings(), num_workers=int(os.environ["NUM_WORKERS"])))
    sys.argv = ["robust-studio", *sys.argv[1:]]
    runpy.run_module("app", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
