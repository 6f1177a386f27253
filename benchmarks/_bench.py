"""What every benchmark shares: the conditions of a run, repeated timings, one process per contender.

* ``conditions()`` -- the lines a run prints first: time, CPU, cores, load average, versions of
  Python / numpy / scipy / scikit-learn / numba / threadpoolctl, the BLAS library and its threads.
* ``timed(fn, repeat)`` -- a :class:`Timing` with the best and the median wall time.
* ``run_child(argv, blas)`` -- runs ``python argv...`` with one BLAS thread (``blas="1"``) or the
  library's default (``blas="default"``: the thread variables removed from the environment) and
  returns the dict it printed on a line ``RESULT {json}``.
* ``child_result(**fields)`` -- prints that line from the child, adding the BLAS threads it saw.
* ``Contender`` / ``race(contenders, repeat, blas)`` / ``race_table`` -- the harness every speed
  claim is measured in: each contender is the exact code a user would write (untimed ``setup``:
  data, seeds, imports; timed ``call``; untimed ``after``: accuracy checks), run as ``python -c``
  in a fresh process per run, the contenders interleaved (A B A B ...), the 1-minute load
  average recorded before each run. Each run gives the wall and CPU time (user + system, every
  thread) of the timed call, from the child's own resource usage, and of the whole process
  (imports and data included), from the parent's ``RUSAGE_CHILDREN``. Tables quote the median
  and the range (min-max) over runs, never the best run alone, and ratios are paired: one ratio
  per round (the contenders' runs next to each other), then their median and range.

The machines these run on are shared: absolute times drift by tens of percent within minutes,
so each table gives ratios measured in the same run.
"""
from __future__ import annotations

import json
import os
import platform
import resource
import shlex
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

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
    from robustcore._blas_policy import DEFAULTED_VARIABLE  # imports nothing heavy
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



# -- the harness of the speed claims: fresh process per run, interleaved, load recorded ----------
HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


@dataclass
class Contender:
    """One contender of a race, as the code a user would run: ``setup`` (untimed: imports, data,
    seeds, warm-up), ``call`` (timed), ``after`` (untimed: checks, which put numbers into the dict
    ``report``). The three run at module level of a fresh ``python -c`` with the repository and
    benchmarks/ on ``sys.path``; ``env`` adds environment variables (after the BLAS setting);
    ``python``: another interpreter (a peer installed in a venv of its own)."""

    name: str
    call: str
    setup: str = ""
    after: str = ""
    env: dict = field(default_factory=dict)
    python: str = sys.executable

    def code(self):
        return "\n".join([_CHILD_HEAD, self.setup, "_w0, _c0 = _clock()", self.call,
                          "_w1, _c1 = _clock()", self.after, _CHILD_TAIL])


_CHILD_HEAD = f"""\
import sys as _sys
_sys.path[:0] = [{str(ROOT)!r}, {str(HERE)!r}]
import resource as _resource, time as _time
def _clock():
    _r = _resource.getrusage(_resource.RUSAGE_SELF)
    return _time.perf_counter(), _r.ru_utime + _r.ru_stime
report = {{}}"""
_CHILD_TAIL = """\
import _bench
_bench.child_result(wall=_w1 - _w0, cpu=_c1 - _c0, peak_mb=_bench.peak_rss_mb(), **report)"""


def _children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_contender(c: Contender, blas="1", timeout=900.0):
    """One run of ``c`` in a fresh process: the child's RESULT dict plus ``proc_wall`` and
    ``proc_cpu`` (the whole process, seen from here) and ``load1`` (load before the run)."""
    env = blas_env(blas)
    env.update(c.env)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), str(HERE), env.get("PYTHONPATH")) if p)
    load1 = os.getloadavg()[0]
    c0, w0 = _children_cpu(), time.perf_counter()
    try:
        proc = subprocess.run([c.python, "-c", c.code()], capture_output=True, text=True,
                              timeout=timeout, env=env, cwd=str(ROOT))
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s", "load1": load1}
    out = {"proc_wall": time.perf_counter() - w0, "proc_cpu": _children_cpu() - c0, "load1": load1}
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("RESULT "):
            out.update(json.loads(line[7:]))
            return out
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:]   # the exception's line
    out["error"] = " | ".join(tail) or f"exit code {proc.returncode}"
    return out


def race(contenders, repeat=5, blas="1", timeout=900.0, repeats=None, log=sys.stderr):
    """Run the contenders interleaved, ``repeat`` rounds (``repeats[name]`` rounds for the slow
    ones); {name: [run dicts]}. A contender that fails once is dropped from later rounds."""
    runs = {c.name: [] for c in contenders}
    for rnd in range(repeat):
        for c in contenders:
            if rnd >= (repeats or {}).get(c.name, repeat) or any("error" in r for r in runs[c.name]):
                continue
            r = run_contender(c, blas, timeout)
            r["round"] = rnd
            runs[c.name].append(r)
            if log:
                print(f"    {c.name} round {rnd + 1}: " + (r.get("error") or
                      f"{r['wall']:.3f} s wall, {r['cpu']:.3f} s CPU, load {r['load1']:.2f}"),
                      file=log, flush=True)
    return runs


def span(values, unit=" s"):
    """'median (min-max)' of ``values``; one value alone; '–' for none."""
    values = [v for v in values if v == v]
    if not values:
        return "–"
    f = (lambda v: f"{v:.2f}") if unit == "x" else (lambda v: f"{v:.3g}")
    if len(values) == 1:
        return f"{f(values[0])}{unit}"
    return f"{f(statistics.median(values))}{unit} ({f(min(values))}–{f(max(values))})"


def paired_ratios(runs, name, ref, key="cpu", per=None):
    """One ratio (time of ``name``) / (time of ``ref``) per round both ran in: the same-run
    comparison, free of the drift between rounds. ``per``: a report key holding each run's
    units of work (samples, say), to compare time per unit when the contenders' work differs."""
    def unit(r):
        return r[key] / (r[per] if per else 1)
    a = {r["round"]: unit(r) for r in runs.get(name, []) if "error" not in r}
    b = {r["round"]: unit(r) for r in runs.get(ref, []) if "error" not in r}
    return [a[k] / b[k] for k in sorted(a.keys() & b.keys()) if b[k] > 0]


def load_span(runs):
    loads = [r["load1"] for rs in runs.values() for r in rs]
    return f"{min(loads):.2f}–{max(loads):.2f}" if loads else "?"


def race_table(runs, ours, extra=(), per=None):
    """Markdown lines: per contender the timed call's wall and CPU and the whole process's CPU
    (median and range), and the paired ratios contender / ``ours`` by CPU and by wall (of the
    time per unit of ``per``, see :func:`paired_ratios`). ``extra``: (header, function(last
    run dict) -> str) columns."""
    what = f"time per {per.rstrip('s')}" if per else "time"
    head = ("| contender | runs | call wall, median (range) | call CPU | whole process CPU | "
            f"{what} / {ours}'s by CPU, median (range) | by wall |")
    lines = [head + "".join(f" {h} |" for h, _ in extra),
             "|---|--:|--:|--:|--:|--:|--:|" + "---|" * len(extra)]
    for name, rs in runs.items():
        ok = [r for r in rs if "error" not in r]
        if not ok:
            err = (rs[-1]["error"] if rs else "not run").replace("|", "/")
            lines.append(f"| {name} | 0 | {err} |" + " |" * (4 + len(extra)))
            continue
        cells = [span([r["wall"] for r in ok]), span([r["cpu"] for r in ok]), span([r["proc_cpu"] for r in ok]),
                 span(paired_ratios(runs, name, ours, "cpu", per), "x"),
                 span(paired_ratios(runs, name, ours, "wall", per), "x")]
        lines.append(f"| {name} | {len(ok)} | " + " | ".join(cells) + " |" +
                     "".join(f" {fn(ok[-1])} |" for _, fn in extra))
    return lines


def race_calls(contenders):
    """Markdown lines recording each contender's exact code: setup (untimed), then the timed call."""
    lines = []
    for c in contenders:
        env = " ".join(f"{k}={shlex.quote(str(v))}" for k, v in c.env.items())
        lines += [f"- **{c.name}**" + (f" (environment: {env})" if env else "") + ":", "",
                  *("      " + ln for ln in c.setup.strip().splitlines()),
                  "      # --- timed from here ---",
                  *("      " + ln for ln in c.call.strip().splitlines()), ""]
    return lines
