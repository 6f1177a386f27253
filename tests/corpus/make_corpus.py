"""Write the hostile-input corpus: small files that each try one way to take too much memory or
time, to reach outside a session's folder, or to be read wrongly without a word.

Run once (``python -m tests.corpus.make_corpus``); the files and ``cases.json`` are checked in.
Each case says how it is read (``load`` a data file, or ``reopen`` a session) and what must
happen: ``refused`` (a LoadError/SessionError whose message contains ``match``), ``loaded``
(optionally with a warning containing ``warning``, or known outliers), ``needs-data`` (the
session asks the user for its data file) or ``noted`` (the session reopens, and a note names
what it skipped). ``tests/robustcore/datasets/test_hostile.py`` and
``tests/app/session/test_session_hostile.py`` run every case under a memory cap and a time limit.

Bombs are sized to be refused under the suite's budget (``BUDGET``, 16 MiB) while inflating to
64 MiB or more; the files themselves stay under about 200 KB.
"""
from __future__ import annotations

import bz2
import gzip
import hashlib
import io
import json
import lzma
import pickle  # to WRITE a hostile file; nothing in the project loads one
import re
import shutil
import struct
import zlib
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
FILES = HERE / "files"
BUDGET = 16 * 1024 ** 2
BOMB = 64 * 1024 ** 2

cases: list[dict] = []


def case(name: str, kind: str, expect: str, **extra) -> None:
    cases.append({"file": name, "kind": kind, "expect": expect, **extra})


def write(name: str, data: bytes) -> Path:
    p = FILES / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data)
    return p


def stream_compress(make, piece: bytes, total: int) -> bytes:
    """``total`` bytes of ``piece`` repeated, compressed without holding them all."""
    out = io.BytesIO()
    with make(out) as f:
        for _ in range(total // len(piece)):
            f.write(piece)
    return out.getvalue()


# -- text formats --------------------------------------------------------------------------------

def text_cases() -> None:
    write("libsvm-huge-index.svm", b"1 2000000000:1\n-1 1:2\n")
    case("libsvm-huge-index.svm", "load", "refused", match="max_features")
    write("libsvm-nan-label.svm", b"nan 1:1\n-1 1:2\n")
    case("libsvm-nan-label.svm", "load", "refused", match="not a finite number")
    write("libsvm-inf-label.svm", b"1 1:1\n-inf 1:2\n")
    case("libsvm-inf-label.svm", "load", "refused", match="not a finite number")
    write("libsvm-small.svm", b"1 1:1 3:2\n-1 2:2\n")
    case("libsvm-small.svm", "load", "refused", options={"n_features": 10 ** 12}, match="max_features")
    case("libsvm-small.svm", "load", "refused", options={"max_bytes": 10 ** 30}, match="'max_bytes' parameter must be")
    case("libsvm-small.svm", "load", "refused", options={"n_features": 10 ** 400},
         match="'n_features' parameter must be")
    write("libsvm-index-1e8.svm", b"1 100000000:1\n-1 1:2\n")
    case("libsvm-index-1e8.svm", "load", "refused", options={"dense": True}, match="max_features")
    case("libsvm-index-1e8.svm", "load", "refused", options={"dense": True, "max_features": 10 ** 9},
         match="max_bytes")

    line = b"0," * 511 + b"0\n"
    write("bomb-zeros.csv.gz", stream_compress(lambda f: gzip.GzipFile(fileobj=f, mode="wb", compresslevel=9, mtime=0),
                                               line * 64, BOMB))
    case("bomb-zeros.csv.gz", "load", "refused", match="stopped after reading")
    write("bomb-spaces.csv.gz", stream_compress(lambda f: gzip.GzipFile(fileobj=f, mode="wb", compresslevel=9, mtime=0),
                                                b" " * 65536, BOMB))
    case("bomb-spaces.csv.gz", "load", "refused", options={"format": "csv"}, match="stopped after reading")
    write("bomb-newlines.csv.xz", stream_compress(lambda f: lzma.LZMAFile(f, "wb"), b"\n" * 65536, BOMB))
    case("bomb-newlines.csv.xz", "load", "refused", options={"format": "csv"}, match="stopped after reading")
    write("bomb-wide.csv.gz", stream_compress(lambda f: gzip.GzipFile(fileobj=f, mode="wb", compresslevel=9, mtime=0),
                                              b"0," * 32768, BOMB))
    case("bomb-wide.csv.gz", "load", "refused", options={"format": "csv"},
         match="stopped after reading|max_features")
    svm_line = b"1 " + b" ".join(b"%d:1" % j for j in range(1, 200)) + b"\n"
    write("bomb.svm.bz2", stream_compress(lambda f: bz2.BZ2File(f, "wb"), svm_line * 32, BOMB))
    case("bomb.svm.bz2", "load", "refused", options={"format": "libsvm"}, match="stopped after reading")
    write("bomb-nul.csv.gz", stream_compress(lambda f: gzip.GzipFile(fileobj=f, mode="wb", compresslevel=9, mtime=0),
                                             b"\0" * 65536, BOMB))
    case("bomb-nul.csv.gz", "load", "refused", options={"format": "csv"})
    digits = np.random.default_rng(3).integers(0, 10, (400, 8))
    table = "\n".join(",".join(map(str, row)) for row in digits).encode()
    write("truncated.csv.gz", gzip.compress(table)[:1000])
    case("truncated.csv.gz", "load", "refused", match="truncated or corrupted|not valid gz")


# -- MATLAB ---------------------------------------------------------------------------------------

def _tag(mdtype: int, nbytes: int) -> bytes:
    return struct.pack("<II", mdtype, nbytes)


def _pad(b: bytes) -> bytes:
    return b + b"\0" * (-len(b) % 8)


def _mat_header() -> bytes:
    text = b"MATLAB 5.0 MAT-file, written by the robust-subspace-studio hostile corpus"
    return text.ljust(116, b" ") + b"\0" * 8 + struct.pack("<H", 0x0100) + b"IM"


def _compressed(element_stream) -> bytes:
    """miCOMPRESSED element from an iterable of byte pieces (compressed as they come)."""
    c = zlib.compressobj(9)
    data = b"".join(c.compress(p) for p in element_stream) + c.flush()
    return _tag(15, len(data)) + data


def _zeros_matrix(dims: tuple, nbytes: int):
    """Pieces of a miMATRIX double ``X`` of ``dims`` whose data part is ``nbytes`` zero bytes."""
    head = (_tag(6, 8) + struct.pack("<II", 6, 0) + _tag(5, 8) + struct.pack("<ii", *dims)
            + _tag(1, 1) + _pad(b"X") + _tag(9, nbytes))
    yield _tag(14, len(head) + nbytes) + head
    zeros = b"\0" * (1 << 20)
    for _ in range(nbytes >> 20):
        yield zeros


def mat_cases() -> None:
    import scipy.io as sio
    # A 2 x 2 double whose compressed element inflates to 64 MiB of zeros.
    write("mat-zlib-bomb.mat", _mat_header() + _compressed(_zeros_matrix((2, 2), BOMB)))
    case("mat-zlib-bomb.mat", "load", "refused", match="more than its dimensions")
    # An honest 8192 x 1024 double of zeros: 64 MiB once inflated, refused from its header.
    write("mat-big-zeros.mat", _mat_header() + _compressed(_zeros_matrix((8192, 1024), 8192 * 1024 * 8)))
    case("mat-big-zeros.mat", "load", "refused", match="max_bytes")
    # ODDS-style outlier table: X and a 0/1 column y with a minority of ones.
    rng = np.random.default_rng(0)
    X = rng.standard_normal((120, 5))
    y = np.zeros((120, 1))
    y[rng.choice(120, 12, replace=False)] = 1
    buf = io.BytesIO()
    sio.savemat(buf, {"X": X, "y": y}, do_compression=True)
    write("odds-like.mat", buf.getvalue())
    case("odds-like.mat", "load", "loaded", outliers=12, outliers_from="y: 1 = outlier")
    buf = io.BytesIO()
    sio.savemat(buf, {"X": X, "y": np.ones((119, 1))})
    write("mat-labels-wrong-length.mat", buf.getvalue())
    case("mat-labels-wrong-length.mat", "load", "loaded", warning="119 entries for 120 samples")


# -- NumPy ----------------------------------------------------------------------------------------

def _npy_member_stream(shape, dtype="<f8"):
    header = {"descr": dtype, "fortran_order": False, "shape": shape}
    out = io.BytesIO()
    np.lib.format.write_array_header_1_0(out, header)
    return out.getvalue()


def npy_cases() -> None:
    # An .npz whose X.npy claims 8192 x 1024 float64: refused from the header, nothing inflated.
    out = io.BytesIO()
    with __import__("zipfile").ZipFile(out, "w", __import__("zipfile").ZIP_DEFLATED) as zf:
        with zf.open("X.npy", "w") as m:
            m.write(_npy_member_stream((8192, 1024)))
            zeros = b"\0" * (1 << 20)
            for _ in range(64):
                m.write(zeros)
    write("npz-bomb.npz", out.getvalue())
    case("npz-bomb.npz", "load", "refused", match="max_bytes")
    # A header that claims 2 x 2 while 64 MiB follow: only 32 bytes are ever read.
    out = io.BytesIO()
    with __import__("zipfile").ZipFile(out, "w", __import__("zipfile").ZIP_DEFLATED) as zf:
        with zf.open("X.npy", "w") as m:
            m.write(_npy_member_stream((2, 2)))
            m.write(np.arange(4.0).tobytes())
            zeros = b"\0" * (1 << 20)
            for _ in range(64):
                m.write(zeros)
    write("npz-lying-header.npz", out.getvalue())
    case("npz-lying-header.npz", "load", "loaded")
    out = io.BytesIO()
    np.savez(out, X=np.arange(30.0).reshape(10, 3), y=np.arange(9))
    write("npz-labels-wrong-length.npz", out.getvalue())
    case("npz-labels-wrong-length.npz", "load", "loaded", warning="9 entries for 10 samples")
    out = io.BytesIO()
    y = np.zeros(50, dtype=np.int64)
    y[:5] = 1
    np.savez(out, X=np.random.default_rng(1).standard_normal((50, 4)), y=y)
    write("odds-like.npz", out.getvalue())
    case("odds-like.npz", "load", "loaded", outliers=5, outliers_from="y: 1 = outlier")
    case("odds-like.npz", "load", "loaded", options={"known_outliers": False}, outliers=None)
    # An object-array .npy as numpy writes one: a header saying dtype "|O", then a pickle stream.
    # Written by hand (header + pickle.dumps) so nothing here ever allows pickle in numpy.
    out = io.BytesIO()
    np.lib.format.write_array_header_1_0(out, {"descr": "|O", "fortran_order": False, "shape": (2,)})
    out.write(pickle.dumps([{"a": 1}, None], protocol=3))
    write("pickle.npy", out.getvalue())
    case("pickle.npy", "load", "refused", match="never unpickled")
    out = io.BytesIO()
    np.savez(out, X=np.ones((3, 2)), y=np.array(["a", None, 3], dtype=object))
    write("pickle-labels.npz", out.getvalue())
    case("pickle-labels.npz", "load", "refused", match="never unpickled")


# -- IDX and images -------------------------------------------------------------------------------

def image_cases() -> None:
    write("idx-huge-header-ubyte", bytes([0, 0, 8, 3]) + struct.pack(">III", 100000, 1000, 1000) + b"\0" * 64)
    case("idx-huge-header-ubyte", "load", "refused", match="max_bytes|max_features")
    import tifffile
    out = io.BytesIO()
    with tifffile.TiffWriter(out) as tw:
        tw.write(np.zeros((16, 16), np.uint8), photometric="minisblack")
        tw.write(np.ones((32, 24), np.uint8), photometric="minisblack")
    write("tiff-mixed-pages.tif", out.getvalue())
    case("tiff-mixed-pages.tif", "load", "loaded", warning="pages of different sizes")
    # Two pages whose next-page offsets point at each other: tifffile would walk them forever.
    raw = bytearray(out.getvalue())
    first = struct.unpack("<I", raw[4:8])[0]
    second = struct.unpack("<I", raw[first + 2 + 12 * struct.unpack("<H", raw[first:first + 2])[0]:][:4])[0]
    end = second + 2 + 12 * struct.unpack("<H", raw[second:second + 2])[0]
    raw[end:end + 4] = struct.pack("<I", first)
    write("tiff-page-loop.tif", bytes(raw))
    case("tiff-page-loop.tif", "load", "refused", match="chain of pages", seconds=10)
    from PIL import Image
    out = io.BytesIO()
    Image.new("1", (20000, 20000)).save(out, format="PNG", optimize=True)
    write("png-bomb.png", out.getvalue())
    case("png-bomb.png", "load", "refused", match="max_bytes|too large")
    frames = [Image.new("L", (8, 8), c) for c in (0, 128, 255)]
    out = io.BytesIO()
    frames[0].save(out, format="GIF", save_all=True, append_images=frames[1:])
    write("animated.gif", out.getvalue())
    case("animated.gif", "load", "loaded", warning="holds 3 frames")


# -- sessions -------------------------------------------------------------------------------------

def session_cases() -> None:
    from app import session as S
    from robustcore.datasets import Dataset
    from robustcore.methods import get_method
    folder = FILES / "sessions"
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(2)
    ds = Dataset(X=rng.standard_normal((20, 3)), name="small", labels=np.arange(20) % 2)
    res = get_method("pca").run(ds, {"n_components": 2})
    base = folder / "base.rss.json"
    S.save_session(base, S.session_from_results(ds, [res]), results=[res], dataset=ds)
    case("sessions/base.rss.json", "reopen", "loaded")
    doc = json.loads(base.read_text())

    def variant(name: str, edit, expect: str, **extra):
        d = json.loads(json.dumps(doc))
        edit(d)
        (folder / name).write_text(json.dumps(d))
        case(f"sessions/{name}", "reopen", expect, **extra)

    def stored(value):
        return lambda d: d["runs"][0]["stored"].update(file=value)
    variant("stored-dev-zero.rss.json", stored("/dev/zero"), "noted", match="/dev/zero")
    variant("stored-dotdot.rss.json", stored("../outside.results.npz"), "noted", match="outside.results.npz")
    write("outside.results.npz", (folder / "base.results.npz").read_bytes())
    variant("stored-etc-passwd.rss.json", stored("/etc/passwd"), "noted", match="/etc/passwd")

    # Results files that pass the hash check but are not plain arrays.
    pickled = io.BytesIO()
    np.savez(pickled, **{"pca|arrays|components": np.array([object(), 1], dtype=object)})
    (folder / "pickled.results.npz").write_bytes(pickled.getvalue())

    def stored_as(file, data):
        return lambda d: d["runs"][0]["stored"].update(file=file, sha256=hashlib.sha256(data).hexdigest())
    variant("stored-pickled.rss.json", stored_as("pickled.results.npz", pickled.getvalue()), "noted",
            match="Python objects")
    damaged = (folder / "base.results.npz").read_bytes()[:300]
    (folder / "damaged.results.npz").write_bytes(damaged)
    variant("stored-damaged.rss.json", stored_as("damaged.results.npz", damaged), "noted", match="damaged")

    def data_at(path, rel=None):
        def edit(d):
            d["dataset"].update(path=path, relative_path=rel, snapshot=None, loader="csv", options={}, demo=None,
                                sha256="0" * 64)
        return edit
    variant("data-etc-passwd.rss.json", data_at("/etc/passwd"), "needs-data", match="/etc/passwd")
    variant("data-dotdot.rss.json", data_at("/nonexistent/points.csv", "../" * 40 + "etc/passwd"),
            "needs-data", match="outside the session's folder")
    variant("data-dev-zero.rss.json", data_at("/dev/zero"), "needs-data", match="/dev/zero")

    def options(opts):
        return lambda d: d["dataset"].update(options=opts, loader="csv")
    variant("options-format.rss.json", options({"format": "npy"}), "refused", match="'format' is not a loader option")
    variant("options-path.rss.json", options({"path": "/etc/passwd"}), "refused", match="'path' is not a loader option")
    variant("options-nested.rss.json", options({"delimiter": {"a": [1]}}), "refused", match="plain value")
    variant("options-labels-file.rss.json",
            lambda d: d["dataset"].update(loader="idx", options={"labels_file": "/dev/zero"}), "refused",
            match="not a plain file name")
    variant("snapshot-dev-zero.rss.json", lambda d: d["dataset"].update(snapshot="/dev/zero"), "refused",
            match="not a plain file name")
    variant("params-wrong-type.rss.json", lambda d: d["runs"][0].update(params="pca"), "refused",
            match="field 'params' must be dict")
    variant("params-bad-value.rss.json", lambda d: d["runs"][0]["params"].update(n_components=[1, 2]), "refused",
            match="saved parameters do not fit")
    variant("unknown-method.rss.json", lambda d: d["runs"][0].update(method="no-such-method"), "refused",
            match="no-such-method")

    def raw(name: str, text: str, expect: str, **extra):
        (folder / name).write_text(text)
        case(f"sessions/{name}", "reopen", expect, **extra)
    text = json.dumps(doc)
    raw("deep.rss.json", text[:-1] + ', "x": ' + "[" * 100000 + "]" * 100000 + "}", "refused", match="levels deep")
    raw("digits.rss.json", re.sub(r'"elapsed": [-+.0-9eE]+', '"elapsed": ' + "9" * 5000, text, count=1),
        "refused", match="5000-digit")
    raw("nan.rss.json", text.replace('"elapsed": ', '"elapsed": NaN, "x": ', 1), "refused", match="NaN")
    raw("not-json.rss.json", text[: len(text) // 2], "refused", match="not valid JSON")


# -- issue 24: line ends, in-line separators, pixel-wide videos, duplicate NPZ members -------------

def _one_frame_video(name: str, h: int, w: int) -> None:
    import av
    out = FILES / name
    with av.open(str(out), "w") as c:
        s = c.add_stream("libx264", rate=25)
        s.width, s.height, s.pix_fmt = w, h, "yuv420p"
        for p in s.encode(av.VideoFrame.from_ndarray(np.zeros((h, w, 3), np.uint8), format="rgb24")):
            c.mux(p)
        for p in s.encode():
            c.mux(p)


def issue24_cases() -> None:
    gz = lambda f: gzip.GzipFile(fileobj=f, mode="wb", compresslevel=9, mtime=0)  # noqa: E731
    # Lone-CR lines (classic Mac): were charged as one line, so 64 MiB of "1\r" ran past 60 s.
    write("bomb-cr.csv.gz", stream_compress(gz, b"1\r" * 32768, BOMB))
    case("bomb-cr.csv.gz", "load", "refused", options={"format": "csv"}, match="stopped after reading")
    write("bomb-cr.svm.bz2", stream_compress(lambda f: bz2.BZ2File(f, "wb"), b"1 1:1\r" * 10923, BOMB))
    case("bomb-cr.svm.bz2", "load", "refused", options={"format": "libsvm"}, match="stopped after reading")
    digits = np.random.default_rng(4).integers(0, 10, (300, 9))
    write("mac-9-columns.csv", "\r".join(",".join(map(str, row)) for row in digits).encode() + b"\r")
    case("mac-9-columns.csv", "load", "loaded", options={"max_features": 9})
    rows = [",".join(map(str, row)) for row in digits]
    rows[249] = rows[249].replace(",", ",\x0c", 1)
    write("formfeed-line-250.csv", "\n".join(rows).encode() + b"\n")
    case("formfeed-line-250.csv", "load", "refused", match="line 250: the character")
    rows[249] = rows[249].replace("\x0c", "\u2028")
    write("u2028-line-250.csv", "\n".join(rows).encode("utf-8") + b"\n")
    case("u2028-line-250.csv", "load", "refused", match="line 250: the character")
    # One-frame videos of a few KB whose frames are 16.7 M and 67 M pixels.
    _one_frame_video("frame-4096.mp4", 4096, 4096)
    case("frame-4096.mp4", "load", "refused", match="max_bytes", needs="av")
    _one_frame_video("frame-8192.mp4", 8192, 8192)
    case("frame-8192.mp4", "load", "refused", match="max_features", needs="av")
    # Two members named X.npy: which one is "X" depended on the reader.
    import warnings
    import zipfile
    out = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with zipfile.ZipFile(out, "w") as zf:
            for value in (0.0, 1.0):
                member = io.BytesIO()
                np.save(member, np.full((4, 3), value))
                zf.writestr("X.npy", member.getvalue())
    write("npz-two-X.npz", out.getvalue())
    case("npz-two-X.npz", "load", "refused", match="'X' twice")
    # A session whose numeral overflows to infinity (NaN and Infinity were already refused).
    text = (FILES / "sessions" / "base.rss.json").read_text()
    (FILES / "sessions" / "overflow.rss.json").write_text(
        re.sub(r'"elapsed": [-+.0-9eE]+', '"elapsed": 1e99999999', text, count=1))
    case("sessions/overflow.rss.json", "reopen", "refused", match="overflows to infinity")


def main() -> None:
    if FILES.exists():
        shutil.rmtree(FILES)
    FILES.mkdir()
    text_cases()
    mat_cases()
    npy_cases()
    image_cases()
    session_cases()
    issue24_cases()
    (HERE / "cases.json").write_text(json.dumps({"budget": BUDGET, "cases": cases}, indent=1) + "\n")
    total = sum(p.stat().st_size for p in FILES.rglob("*") if p.is_file())
    print(f"{len(cases)} cases, {sum(1 for p in FILES.rglob('*') if p.is_file())} files, {total / 1024:.0f} KB")


if __name__ == "__main__":
    main()
