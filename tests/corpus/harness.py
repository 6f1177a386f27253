"""Run hostile inputs in a child process under a memory cap and a time limit.

The child (``python -m tests.corpus.harness`` reading a JSON request on stdin) caps its address
space with ``resource.setrlimit(RLIMIT_AS)`` at what it uses after start-up plus ``CAP`` (so a
runaway allocation fails instead of swapping the machine), traces every allocation with
``tracemalloc`` (so each case's peak is measured exactly), and stops any case after ``seconds``
with ``SIGALRM``. It prints one JSON line per case: outcome ``ok``, ``error`` (with the
exception's type and message), ``timeout`` or ``crash``, the peak bytes traced, how far the
process's resident memory rose above where it was when the case started (``rss_growth``: C
allocations and mapped pages included) and the seconds taken.
A process crash (a segfault in a C reader) shows as missing lines and a bad exit code.

Two kinds of request:

- ``{"cases": [...]}``: the corpus cases (``cases.json``) or cases made at run time (the
  out-of-core sources of ``lazy_cases.py``, kind ``lazy``);
- ``{"hypothesis": NAME, "examples": N, "seed": S}``: a hypothesis search
  (``tests.corpus.searches.SEARCHES``) run in the child, which fails on the first input that
  raises anything but the project's own errors; without a seed it is the same search each time.
  NAME may be a list of searches, run one after the other in the same child.
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import resource
import signal
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
CAP = 768 * 1024 ** 2


# -- parent side -----------------------------------------------------------------------------------

def run_child(request: dict, timeout: float = 300) -> list[dict]:
    """Run ``request`` in a capped child; return its result lines (raises if the child crashed)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
               QT_QPA_PLATFORM="offscreen")
    proc = subprocess.run([sys.executable, "-m", "tests.corpus.harness"], input=json.dumps(request), text=True,
                          capture_output=True, timeout=timeout, cwd=str(ROOT), env=env)
    lines = [json.loads(ln) for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0:
        raise AssertionError(f"the capped child exited with {proc.returncode}:\n{proc.stdout[-3000:]}\n"
                             f"{proc.stderr[-8000:]}")
    return lines


def corpus(kind: str) -> tuple[list[dict], int]:
    """The corpus cases of one kind (``load`` or ``reopen``), paths made absolute, and the budget."""
    doc = json.loads((HERE / "cases.json").read_text())
    cases = [dict(c, path=str(HERE / "files" / c["file"]), budget=doc["budget"])
             for c in doc["cases"] if c["kind"] == kind and _installed(c.get("needs"))]
    return cases, doc["budget"]


def _installed(module: str | None) -> bool:
    """A case that needs an optional package (PyAV for video) is left out where it is missing."""
    return module is None or importlib.util.find_spec(module) is not None


def problems(cases: list[dict], lines: list[dict], budget: int, slack: float = 1.25) -> list[str]:
    """What went wrong: a case missing (the child died on it), anything but the project's own
    errors, a time-out, a peak above the budget, or an outcome other than the case expects."""
    out = []
    for case, line in zip(cases, lines + [None] * (len(cases) - len(lines))):
        name = f"{case['file']} {case.get('options') or ''}".strip()
        if line is None:
            out.append(f"{name}: no result (the child process died)")
            continue
        if line["outcome"] in ("crash", "timeout"):
            out.append(f"{name}: {line['outcome']} {line.get('type', '')}: {line.get('message', '')}")
            continue
        if line["peak"] > slack * budget + 4 * 1024 ** 2:
            out.append(f"{name}: peak {line['peak'] / 2 ** 20:.1f} MiB over the {budget / 2 ** 20:.0f} MiB budget")
        message = line.get("message") or json.dumps(line.get("result"))
        if "please report" in message:
            out.append(f"{name}: an unforeseen exception reached the user: {message}")
        expect, match = case["expect"], case.get("match")
        result = line.get("result") or {}
        if expect == "refused":
            ok = line["outcome"] == "error" and (match is None or re.search(match, line["message"]))
        elif expect == "needs-data":
            ok = "needs_data" in result and (match is None or re.search(match, result["message"]))
        elif expect == "noted":
            ok = "results" in result and any(re.search(match, n) for n in result["notes"])
        else:  # loaded
            ok = line["outcome"] == "ok" and "needs_data" not in result
            if ok and "warning" in case:
                ok = any(case["warning"] in w for w in result.get("warnings", []))
            if ok and "outliers" in case:
                ok = result.get("outliers") == case["outliers"] and (
                    "outliers_from" not in case or result.get("outliers_from") == case["outliers_from"])
        if not ok:
            out.append(f"{name}: expected {expect}" + (f" matching {match!r}" if match else "")
                       + f", got {line['outcome']}: {message[:400]}")
    return out


# -- child side ------------------------------------------------------------------------------------

class _Timeout(BaseException):
    """Raised by the alarm; a BaseException so no ``except Exception`` in the code under test eats it."""


def _on_alarm(signum, frame):
    raise _Timeout()


def _cap_memory() -> None:
    status = Path("/proc/self/status")
    if not status.exists():
        return
    vm = int(re.search(r"VmSize:\s+(\d+)", status.read_text()).group(1)) * 1024
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = vm + CAP
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def _project_errors():
    """The project's own errors: LoadError, and SessionError where sessions are in play (the app's
    session package is imported only then: the core's cases run where Qt is not installed)."""
    from robustcore.datasets import LoadError
    if "app.session" not in sys.modules:
        return (LoadError,)
    from app.session import SessionError
    return (LoadError, SessionError)


def _run(case: dict):
    """Perform one case; return a short description of what came back."""
    from robustcore import datasets
    path = Path(case["path"])
    if case["kind"] == "load":
        opts = dict(case.get("options") or {})
        opts.setdefault("max_bytes", case["budget"])
        ds = datasets.load(path, **opts)
        ds.dense(max_bytes=case["budget"])
        return {"shape": list(ds.X.shape), "warnings": list(ds.warnings),
                "outliers": None if ds.outliers is None else int(ds.outliers.sum()),
                "outliers_from": ds.outliers_from, "features": len(ds.feature_names)}
    if case["kind"] == "lazy":
        # Out of core: open under the case's memory budget, then one full pass over the data.
        from robustcore.bigdata import compute, open_lazy, settings
        with settings(memory_budget=case["budget"]):
            ds = open_lazy(path, **dict(case.get("options") or {}))
            try:
                if ds.kind == "table":
                    compute(ds.source.array.sum(axis=0))
                else:
                    ds.source.read(0, min(ds.n_samples, 2))
            finally:
                ds.close()
        return {"shape": [ds.n_samples, ds.n_features]}
    if case["kind"] == "reopen":
        from app import session as S
        job = S.reopen_job(path, data_path=case.get("data_path"))
        if isinstance(job, S.NeedsData):
            return {"needs_data": type(job.error).__name__, "message": str(job.error)}
        _, ds, results, notes = job
        return {"results": sorted(results), "notes": notes}
    raise ValueError(f"unknown case kind {case['kind']!r}")


def _reset_rss_peak() -> None:
    """Reset the kernel's high-water mark of this process's resident memory (Linux: writing 5 to
    /proc/self/clear_refs), so VmHWM after a case is that case's peak, C allocations included."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass


def _rss(field: str = "VmHWM") -> int | None:
    try:
        return int(re.search(field + r":\s+(\d+)", Path("/proc/self/status").read_text()).group(1)) * 1024
    except (OSError, AttributeError):
        return None


def _cases(cases: list[dict]) -> None:
    errors = _project_errors()
    signal.signal(signal.SIGALRM, _on_alarm)
    for case in cases:
        _reset_rss_peak()
        rss_before = _rss("VmRSS")
        tracemalloc.start()
        tracemalloc.reset_peak()
        t = time.perf_counter()
        out = {"file": case["file"], "options": case.get("options")}
        try:
            signal.setitimer(signal.ITIMER_REAL, case.get("seconds", 30))
            try:
                out.update(outcome="ok", result=_run(case))
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
        except _Timeout:
            out.update(outcome="timeout")
        except errors as exc:
            out.update(outcome="error", type=type(exc).__name__, message=str(exc))
        except BaseException as exc:  # noqa: BLE001 - anything else is what the suite reports
            out.update(outcome="crash", type=type(exc).__name__, message=f"{exc}"[:2000])
        out["seconds"] = time.perf_counter() - t
        out["peak"] = tracemalloc.get_traced_memory()[1]
        peak = _rss()
        out["rss_growth"] = None if peak is None or rss_before is None else max(0, peak - rss_before)
        tracemalloc.stop()
        print(json.dumps(out, default=str), flush=True)


def _hypothesis(name: str, examples: int, seconds: float, seed: int | None) -> None:
    import inspect

    from tests.corpus import searches
    signal.signal(signal.SIGALRM, _on_alarm)
    search = searches.SEARCHES[name]
    # Searches that count the inputs they try (tests.corpus.fuzz_tables) say how many they did.
    count = [0] if "count" in inspect.signature(search).parameters else None
    try:
        search(examples, seconds, _project_errors(), seed, **({"count": count} if count else {}))
    except BaseException:
        print(json.dumps({"hypothesis": name, "outcome": "failed", "tried": count and count[0]}), flush=True)
        raise
    print(json.dumps({"hypothesis": name, "outcome": "ok", "examples": examples,
                      **({"tried": count[0]} if count else {})}), flush=True)


def main() -> None:
    request = json.loads(sys.stdin.read())
    # Everything the cases need is imported before the cap, so the cap measures the cases.
    import numpy
    import scipy.io  # noqa: F401
    import scipy.sparse  # noqa: F401

    import robustcore.datasets  # noqa: F401
    for module in ("dask.array", "dask.threaded", "h5py", "av", "numcodecs.zstd", "zarr",   # out-of-core readers
                   "hypothesis", "robustcore.bigdata._tables", "robustcore.bigdata._zarr",
                   "robustcore.bigdata._hdf5"):
        try:
            __import__(module)
        except ImportError:
            pass
    from robustcore.methods import get_method
    # One small fit and one version lookup first: importing the estimators' libraries is not a case.
    get_method("pca").run(robustcore.datasets.Dataset(X=numpy.eye(5)), {"n_components": 1})
    if any(c.get("kind") == "reopen" for c in request.get("cases", ())) \
            or str(request.get("hypothesis", "")).startswith("session"):
        import app.session
        app.session.library_versions()
    _cap_memory()
    if "cases" in request:
        _cases(request["cases"])
    else:
        names = request["hypothesis"]
        for name in names if isinstance(names, list) else [names]:   # several searches share one start-up
            _hypothesis(name, request.get("examples", 100), request.get("seconds", 20), request.get("seed"))


if __name__ == "__main__":
    main()
