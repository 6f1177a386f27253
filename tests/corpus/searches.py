"""Seeded hypothesis searches over hostile sessions and loader options, run by the capped child of
:mod:`tests.corpus.harness`. Each fails on the first input for which reading raises anything but
the project's own errors (LoadError, SessionError), or runs past its time limit."""
from __future__ import annotations

import json
import shutil
import signal
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

HERE = Path(__file__).resolve().parent
SESSIONS = HERE / "files" / "sessions"

# Values that have broken readers before: huge and negative numbers, paths that leave the folder,
# devices, wrong container types, deep nesting.
NASTY = st.one_of(
    st.none(), st.booleans(),
    st.integers(min_value=-(10 ** 29), max_value=10 ** 29),
    st.sampled_from([0, -1, 2 ** 31, 2 ** 63, 10 ** 12, 10 ** 25]),
    st.floats(allow_nan=False, allow_infinity=False), st.sampled_from([1e300, -1e-300, 0.5]),
    st.text(max_size=20),
    st.sampled_from(["/dev/zero", "../base.results.npz", "/etc/passwd", "..", "", "base.data.npz",
                     "base.results.npz", "csv", "npy", "pca", "none", "x" * 300, "C:\\x", "a/b"]),
    st.lists(st.integers(-3, 70), max_size=4),
    st.dictionaries(st.sampled_from(["name", "file", "kind", "sha256", "format", "path"]),
                    st.one_of(st.integers(), st.text(max_size=5)), max_size=3),
)


def _paths(node, prefix=()):
    """Every (path, value) in a JSON document."""
    yield prefix, node
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, prefix + (i,))


def _set(doc, path, value):
    node = doc
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value


def _delete(doc, path):
    node = doc
    for k in path[:-1]:
        node = node[k]
    del node[path[-1]]


def _session_json(examples: int, seconds: float, allowed: tuple) -> None:
    from app import session as S
    base = json.loads((SESSIONS / "base.rss.json").read_text())
    paths = [p for p, _ in _paths(base) if p]
    work = Path(tempfile.mkdtemp(prefix="rss-session-fuzz-"))
    for side in ("base.data.npz", "base.results.npz"):
        shutil.copy(SESSIONS / side, work / side)

    @settings(max_examples=examples, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(edits=st.lists(st.tuples(st.sampled_from(paths), st.sampled_from(["set", "delete"]), NASTY),
                          min_size=1, max_size=4))
    def search(edits):
        doc = json.loads(json.dumps(base))
        for path, how, value in edits:
            try:
                if how == "set":
                    _set(doc, path, value)
                else:
                    _delete(doc, path)
            except (KeyError, IndexError, TypeError):
                pass  # an earlier edit removed or replaced the parent
        target = work / "fuzz.rss.json"
        target.write_text(json.dumps(doc))
        signal.setitimer(signal.ITIMER_REAL, seconds)
        try:
            S.reopen_job(target)
        except allowed:
            pass
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)

    try:
        search()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _loader_options(examples: int, seconds: float, allowed: tuple) -> None:
    import numpy as np
    import scipy.io as sio

    from robustcore import datasets
    work = Path(tempfile.mkdtemp(prefix="rss-options-fuzz-"))
    X = np.arange(12.0).reshape(4, 3)
    (work / "a.csv").write_text("a,b,c,k\n1,2,3,x\n4,5,6,y\n7,8,9,x\n")
    (work / "a.svm").write_text("1 1:1 3:2\n-1 2:2\n")
    np.savez(work / "a.npz", X=X, y=np.array([0, 1, 0, 0]))
    sio.savemat(work / "a.mat", {"X": X, "y": np.array([[0], [1], [0], [0]])})
    names = sorted({p.name for ld in datasets.LOADERS.values() for p in ld.options} | {"format", "path", "junk"})

    @settings(max_examples=examples, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(file=st.sampled_from(["a.csv", "a.svm", "a.npz", "a.mat"]),
           options=st.dictionaries(st.sampled_from(names), NASTY, max_size=4))
    def search(file, options):
        options = {k: v for k, v in options.items() if k not in ("format", "path")}
        options.setdefault("max_bytes", 16 * 1024 ** 2)
        signal.setitimer(signal.ITIMER_REAL, seconds)
        try:
            datasets.load(work / file, **options)
        except allowed:
            pass
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)

    try:
        search()
    finally:
        shutil.rmtree(work, ignore_errors=True)


SEARCHES = {"session-json": _session_json, "loader-options": _loader_options}
