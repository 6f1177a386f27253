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
from hypothesis import seed as hypothesis_seed
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


def _settings(examples: int, rng_seed: int | None):
    """The same search every time in CI (derandomized); another one per seed in a soak."""
    def wrap(fn):
        fn = settings(max_examples=examples, derandomize=rng_seed is None, database=None, deadline=None,
                      suppress_health_check=list(HealthCheck))(fn)
        return fn if rng_seed is None else hypothesis_seed(rng_seed)(fn)
    return wrap


def _bounded(call, seconds: float, allowed: tuple) -> None:
    """``call()`` under the time limit; the project's own errors are the accepted outcomes."""
    from tests.corpus.harness import _Timeout
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        call()
    except allowed:
        pass
    except _Timeout:
        # An ordinary failure, so that hypothesis reports (and shrinks) the input that hung.
        raise AssertionError(f"still running after {seconds} s") from None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def _in(work: Path, search) -> None:
    try:
        search()
    finally:
        shutil.rmtree(work, ignore_errors=True)


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


def _session_json(examples: int, seconds: float, allowed: tuple, rng_seed: int | None = None) -> None:
    from app import session as S
    base = json.loads((SESSIONS / "base.rss.json").read_text())
    paths = [p for p, _ in _paths(base) if p]
    work = Path(tempfile.mkdtemp(prefix="rss-session-fuzz-"))
    for side in ("base.data.npz", "base.results.npz"):
        shutil.copy(SESSIONS / side, work / side)

    @_settings(examples, rng_seed)
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
        _bounded(lambda: S.reopen_job(target), seconds, allowed)

    _in(work, search)


def _loader_options(examples: int, seconds: float, allowed: tuple, rng_seed: int | None = None) -> None:
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

    @_settings(examples, rng_seed)
    @given(file=st.sampled_from(["a.csv", "a.svm", "a.npz", "a.mat"]),
           options=st.dictionaries(st.sampled_from(names), NASTY, max_size=4))
    def search(file, options):
        options = {k: v for k, v in options.items() if k not in ("format", "path")}
        options.setdefault("max_bytes", 16 * 1024 ** 2)
        _bounded(lambda: datasets.load(work / file, **options), seconds, allowed)

    _in(work, search)


def _valid_files(work: Path) -> list[Path]:
    """One small valid file per format (and compressed variants) to mutate."""
    import gzip
    import io

    import numpy as np
    import scipy.io as sio
    rng = np.random.default_rng(0)
    X = rng.integers(0, 9, (6, 4)).astype(float)
    text = "a,b,c,d\n" + "".join(",".join(f"{v:g}" for v in row) + "\n" for row in X)
    (work / "t.csv").write_text(text)
    (work / "t.csv.gz").write_bytes(gzip.compress(text.encode()))
    (work / "t.svm").write_text("".join(f"{i % 2} 1:{r[0]:g} 3:{r[2]:g}\n" for i, r in enumerate(X)))
    np.save(work / "t.npy", X)
    np.savez_compressed(work / "t.npz", X=X, y=np.arange(6) % 2)
    for name, compress in (("t.mat", False), ("tz.mat", True)):
        buf = io.BytesIO()
        sio.savemat(buf, {"X": X, "y": (np.arange(6) % 2).reshape(-1, 1)}, do_compression=compress)
        (work / name).write_bytes(buf.getvalue())
    images = X.astype(np.uint8).reshape(6, 2, 2)
    (work / "t-images-idx3-ubyte").write_bytes(bytes([0, 0, 8, 3])
                                               + b"".join(int(v).to_bytes(4, "big") for v in images.shape)
                                               + images.tobytes())
    import tifffile
    tifffile.imwrite(work / "t.tif", X.astype(np.uint16).reshape(6, 2, 2), photometric="minisblack")
    from PIL import Image
    Image.fromarray(X.astype(np.uint8)).save(work / "t.png")
    return sorted(p for p in work.iterdir() if p.name.startswith("t"))


def _file_mutants(examples: int, seconds: float, allowed: tuple, rng_seed: int | None = None) -> None:
    from robustcore import datasets
    work = Path(tempfile.mkdtemp(prefix="rss-mutants-"))
    seeds = {p.name: p.read_bytes() for p in _valid_files(work)}

    @_settings(examples, rng_seed)
    @given(name=st.sampled_from(sorted(seeds)), data=st.data())
    def search(name, data):
        raw = bytearray(seeds[name])
        for _ in range(data.draw(st.integers(1, 4))):
            kind = data.draw(st.sampled_from(["flip", "truncate", "splice", "repeat", "word"]))
            i = data.draw(st.integers(0, max(len(raw) - 1, 0)))
            if kind == "flip" and raw:
                raw[i] = data.draw(st.integers(0, 255))
            elif kind == "truncate":
                del raw[i:]
            elif kind == "splice":
                raw[i:i] = data.draw(st.binary(min_size=1, max_size=16))
            elif kind == "repeat":
                raw[i:i] = bytes(raw[i:i + 32]) * data.draw(st.integers(2, 200))
            elif kind == "word" and len(raw) >= i + 4:
                # Sizes and counts in headers are 32-bit words: make one huge, zero or negative.
                raw[i:i + 4] = data.draw(st.sampled_from([b"\xff\xff\xff\x7f", b"\0\0\0\0", b"\xff\xff\xff\xff",
                                                          b"\0\0\0\x40"]))
        target = work / ("m-" + name)
        target.write_bytes(bytes(raw))
        _bounded(lambda: datasets.load(target, max_bytes=16 * 1024 ** 2), seconds, allowed)

    _in(work, search)


SEARCHES = {"session-json": _session_json, "loader-options": _loader_options, "file-mutants": _file_mutants}

from .fuzz_tables import SEARCHES as _TABLE_SEARCHES  # noqa: E402 - they build on the helpers above

SEARCHES.update(_TABLE_SEARCHES)
