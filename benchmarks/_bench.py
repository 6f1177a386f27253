"""What every benchmark shares: the conditions of a run, repeated timings, one process per contender.

* ``conditions()`` -- the lines a run prints first: time, CPU, cores, load average, versions of
  Python / numpy / scipy / scikit-learn / numba / threadpoolctl, the BLAS library and its threads.
* ``timed(fn, repeat)`` -- a :class:`Timing` with the best and the median wall time.
* ``run_child(argv, blas)`` -- runs ``python argv...`` with one BLAS thread (``blas="1"``) or the
  library's default (``blas="default"``: the thread variables removed from the environment) and
  returns the dict it printed on a line ``RESULT {json}``.
* ``child_result(**fields)`` -- prints that line from the child, adding the BLAS threads it saw.

The machines these run on are shared: absolute times drift by tens of percent within minutes,
so each table gives ratios measured in the same run, and each contender's best AND median.
"""
from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field

BLAS_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS")
BLAS_MODES = ("1", "default")


@dataclass
class Timing:
    """Wall times of repeated runs; ``best`` and ``median`` in seconds."""

    runs: list = field(default_factory=list)
    result: object = None

    @property
    def best(self):
        return min(self.runs) if self.runs else float("nan")

    @property
    def median(self):
        return statistics.median(self.runs) if self.runs else float("nan")

    def __str__(self):
        return f"{fmt_s(self.best)} / {fmt_s(self.median)}"


def fmt_s(seconds):
    """Seconds with 3 significant figures, 'x.xx s'-style."""
    if seconds != seconds:
        return "–"
    if seconds >= 100:
        return f"{seconds:.0f} s"
    if seconds >= 10:
        return f"{seconds:.1f} s"
    if seconds >= 0.1:
        return f"{seconds:.2f} s"
    return f"{seconds * 1e3:.1f} ms"


def timed(fn, repeat=5, warmup=0):
    """Call ``fn`` ``warmup`` + ``repeat`` times; the Timing of the last ``repeat`` calls
    (``result`` is the last return value)."""
    out = Timing()
    for _ in range(warmup):
        out.result = fn()
    for _ in range(repeat):
        t0 = time.perf_counter()
        out.result = fn()
        out.runs.append(time.perf_counter() - t0)
    return out


def ratio(ref: Timing, ours: Timing):
    """'best-to-best x (median-to-median x)' of reference time over ours."""
    return f"{ref.best / ours.best:.1f}x ({ref.median / ours.median:.1f}x)"


def blas_env(blas, base=None):
    """A copy of the environment with one BLAS thread (``"1"``) or the default (``"default"``)."""
    # the mark our programs set beside the 1s they choose (robustcore._lanes): not the user's here
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from robustcore._blas_policy import DEFAULTED_VARIABLE   # imports nothing heavy
    env = dict(os.environ if base is None else base)
    env.pop(DEFAULTED_VARIABLE, None)
    for var in BLAS_VARS:
        env.pop(var, None)
        if blas != "default":
            env[var] = str(blas)
    return env


def blas_info():
    """'OpenBLAS 0.3.31 (2 threads)'-style description of the BLAS this process loaded."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "unknown BLAS (threadpoolctl missing)"
    import numpy  # noqa: F401  (loads the BLAS)
    libs = [i for i in threadpool_info() if i.get("user_api") == "blas"]
    if not libs:
        return "no BLAS found"
    return ", ".join(f"{i.get('internal_api')} {i.get('version')} ({i.get('num_threads')} threads)"
                     for i in libs)


def _version(mod):
    try:
        return __import__(mod).__version__
    except Exception:  # noqa: BLE001
        return "not installed"


def cpu_model():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def load_average():
    try:
        return "/".join(f"{x:.2f}" for x in os.getloadavg()) + " (1/5/15 min)"
    except (AttributeError, OSError):
        return "unknown"


def conditions(extra=()):
    """Lines (str) describing this run: print them at the top of every benchmark's output."""
    try:
        affinity = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        affinity = os.cpu_count()
    lines = [
        f"run at {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())} on {cpu_model()}, "
        f"{affinity} of {os.cpu_count()} cores usable, load average {load_average()}",
        f"Python {platform.python_version()}, numpy {_version('numpy')}, scipy {_version('scipy')}, "
        f"scikit-learn {_version('sklearn')}, numba {_version('numba')}, "
        f"threadpoolctl {_version('threadpoolctl')}; BLAS in this process: {blas_info()}",
        "BLAS thread variables here: " + (", ".join(f"{v}={os.environ[v]}" for v in BLAS_VARS if v in os.environ)
                                          or "none set (library default)"),
    ]
    return "\n".join(["    " + line for line in [*lines, *extra]])


def peak_rss_mb():
    """This process's peak resident memory in MB: /proc's VmHWM where there is one (it starts
    afresh at exec; getrusage's ru_maxrss can start from the PARENT's peak at fork), else
    ru_maxrss."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except (OSError, ValueError, IndexError):
        pass
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def child_result(**fields):
    """Print the RESULT line a child reports to ``run_child`` (adds the BLAS it ran with)."""
    fields.setdefault("blas", blas_info())
    print("RESULT " + json.dumps(fields), flush=True)


def run_child(argv, blas="1", timeout=900.0, env=None):
    """Run ``sys.executable argv`` in a fresh process with the BLAS threads ``blas``; the dict
    from its RESULT line, or ``{"error": ...}`` (timeouts and crashes included)."""
    try:
        proc = subprocess.run([sys.executable, *argv], capture_output=True, text=True, timeout=timeout,
                              env=blas_env(blas, env))
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
    return {"error": " | ".join(tail) or f"exit code {proc.returncode}"}


def blas_modes(arg):
    """``--blas 1,default`` -> ["1", "default"] (validated)."""
    modes = [m.strip() for m in arg.split(",") if m.strip()]
    for m in modes:
        if m != "default" and not m.isdigit():
            raise SystemExit(f"--blas takes thread counts or 'default', comma-separated; got {m!r}")
    return modes


def blas_label(mode):
    return "one BLAS thread for every contender" if mode == "1" else (
        "the BLAS library's default threads for every contender" if mode == "default"
        else f"{mode} BLAS threads for every contender")
