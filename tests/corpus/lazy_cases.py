"""Hostile sources for the out-of-core readers (HDF5, Zarr, .npy memory-mapped, video), made at
run time: FIFOs and links to ``/dev/zero`` cannot be checked in, and every file here is made in
well under a second. Each case is run by ``tests/corpus/harness.py`` (kind ``lazy``: open with
``robustcore.bigdata.open_lazy`` under the case's memory budget, then one full pass over the
data) in a child capped in memory and time, like the in-memory corpus.

``make(folder)`` writes the files and returns the cases; ``expect`` is ``refused`` (a LoadError
whose message matches ``match``) or ``loaded`` (the control cases: honest files of each format).
Bombs inflate to ``BOMB`` bytes from a chunk declared far smaller; ``benchmarks/soak_hostile.py
--big-bomb`` adds the 2 MB zlib chunk that inflates to 4 GB.
"""
from __future__ import annotations

import json
import os
import shutil
import struct
import zlib
from pathlib import Path

import numpy as np

BUDGET = 16 * 1024 ** 2
FILES = Path(__file__).resolve().parent / "files"
BOMB = 64 * 1024 ** 2
SECONDS = 20


def _zeros_deflated(total: int, wbits: int = zlib.MAX_WBITS) -> bytes:
    c = zlib.compressobj(9, zlib.DEFLATED, wbits)
    piece = b"\0" * (1 << 22)
    out = [c.compress(piece) for _ in range(total // len(piece))]
    return b"".join(out) + c.flush()


def zarr_v2(folder: Path, shape, chunks, dtype="<f8", compressor=None, **extra) -> Path:
    """A Zarr 2 array's folder holding only its ``.zarray`` (``extra`` adds or replaces fields)."""
    folder.mkdir(parents=True, exist_ok=True)
    meta = {"zarr_format": 2, "shape": list(shape), "chunks": list(chunks), "dtype": dtype, "compressor": compressor,
            "fill_value": 0, "order": "C", "filters": None, **extra}
    (folder / ".zarray").write_text(json.dumps(meta))
    return folder


def zarr_v3(folder: Path, shape, chunks, **extra) -> Path:
    """A Zarr 3 array's folder holding only its ``zarr.json`` (float64, raw little-endian chunks)."""
    folder.mkdir(parents=True, exist_ok=True)
    meta = {"zarr_format": 3, "node_type": "array", "shape": list(shape), "data_type": "float64",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(chunks)}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": 0.0, "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}], **extra}
    (folder / "zarr.json").write_text(json.dumps(meta))
    return folder


_zarr_v2 = zarr_v2


def _zarr_chunks(folder: Path, X: np.ndarray, rows: int) -> None:
    """Raw (uncompressed) chunks of ``rows`` rows, all columns, as a Zarr 2 store names them."""
    for i in range(-(-X.shape[0] // rows)):
        block = np.zeros((rows, X.shape[1]), X.dtype)
        part = X[i * rows:(i + 1) * rows]
        block[:len(part)] = part
        (folder / f"{i}.0").write_bytes(block.tobytes())


def _honest_zarr(folder: Path) -> Path:
    X = np.arange(4000.0).reshape(400, 10)
    _zarr_v2(folder, X.shape, (100, 10))
    _zarr_chunks(folder, X, 100)
    return folder


def _npy_header(shape, dtype="<f8") -> bytes:
    import io
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": dtype, "fortran_order": False, "shape": tuple(shape)})
    return buf.getvalue()


def make(folder) -> list[dict]:
    """Write the hostile sources under ``folder``; return their cases."""
    f = Path(folder)
    f.mkdir(parents=True, exist_ok=True)
    cases: list[dict] = []

    def case(name, path, expect, match=None, **options):
        cases.append({"file": name, "path": str(path), "kind": "lazy", "expect": expect, "match": match,
                      "options": options or None, "budget": BUDGET, "seconds": SECONDS})

    # -- controls: honest sources of each kind load and are read whole --------------------------
    X = np.arange(4000.0).reshape(400, 10)
    np.save(f / "honest.npy", X)
    case("honest.npy", f / "honest.npy", "loaded")
    case("honest.zarr (raw chunks)", _honest_zarr(f / "honest.zarr"), "loaded")
    try:
        import h5py
    except ImportError:
        h5py = None
    if h5py is not None:
        with h5py.File(f / "honest.h5", "w") as h:
            h.create_dataset("X", data=X, chunks=(64, 10), compression="gzip", shuffle=True, fletcher32=True)
        case("honest.h5 (gzip, shuffle, fletcher32)", f / "honest.h5", "loaded")

    # -- special files --------------------------------------------------------------------------
    for name in ("fifo.h5", "fifo.npy"):
        os.mkfifo(f / name)
        case(name, f / name, "refused", "FIFO")
    os.symlink("/dev/zero", f / "dev-zero.h5")
    case("dev-zero.h5 (link to /dev/zero)", f / "dev-zero.h5", "refused", "character device")
    os.symlink("/dev/zero", f / "dev-zero.npy")
    case("dev-zero.npy (link to /dev/zero)", f / "dev-zero.npy", "refused", "character device")

    # -- .npy -----------------------------------------------------------------------------------
    body = X.tobytes()
    (f / "truncated.npy").write_bytes(_npy_header(X.shape) + body[:len(body) // 2])
    case("truncated.npy", f / "truncated.npy", "refused", "truncated")
    (f / "lying-header.npy").write_bytes(_npy_header((10 ** 9, 10)) + body)
    case("lying-header.npy (claims 1e9 rows)", f / "lying-header.npy", "refused", "truncated")
    (f / "trailing.npy").write_bytes(_npy_header((10, 10)) + body)
    case("trailing.npy (more bytes than declared)", f / "trailing.npy", "refused", "longer than its header")
    (f / "object.npy").write_bytes(_npy_header((2, 2), "|O") + b"\x80\x04N.")
    case("object.npy", f / "object.npy", "refused", "Python objects")
    (f / "wide.npy").write_bytes(_npy_header((1, 2 ** 25), "|u1") + b"\0" * 64)
    case("wide.npy (2**25 columns)", f / "wide.npy", "refused", "max_features")

    # -- Zarr -----------------------------------------------------------------------------------
    z = _honest_zarr(f / "chunk-dev-zero.zarr")
    (z / "1.0").unlink()
    os.symlink("/dev/zero", z / "1.0")
    case("chunk-dev-zero.zarr (a chunk links to /dev/zero)", z, "refused", "outside")
    z = _honest_zarr(f / "chunk-passwd.zarr")
    (z / "2.0").unlink()
    os.symlink("/etc/passwd", z / "2.0")
    case("chunk-passwd.zarr (a chunk links to /etc/passwd)", z, "refused", "outside")
    z = _honest_zarr(f / "chunk-fifo.zarr")
    (z / "3.0").unlink()
    os.mkfifo(z / "3.0")
    case("chunk-fifo.zarr (a chunk is a FIFO)", z, "refused", "FIFO")
    z = _honest_zarr(f / "missing-chunk.zarr")
    (z / "2.0").unlink()
    case("missing-chunk.zarr", z, "refused", r"chunk 2\.0 .* is missing")
    z = _zarr_v2(f / "zlib-bomb.zarr", (100, 10), (100, 10), compressor={"id": "zlib", "level": 9})
    (z / "0.0").write_bytes(_zeros_deflated(BOMB))
    case(f"zlib-bomb.zarr (8 KB chunk inflating to {BOMB >> 20} MiB)", z, "refused", "inflates to more than")
    z = _zarr_v2(f / "gzip-bomb.zarr", (100, 10), (100, 10), compressor={"id": "gzip", "level": 9})
    (z / "0.0").write_bytes(_zeros_deflated(BOMB, 16 + zlib.MAX_WBITS))
    case("gzip-bomb.zarr", z, "refused", "inflates to more than")
    try:
        from numcodecs import zstd
    except ImportError:
        zstd = None
    if zstd is not None:
        z = _zarr_v2(f / "zstd-bomb.zarr", (100, 10), (100, 10), compressor={"id": "zstd", "level": 1})
        (z / "0.0").write_bytes(zstd.Zstd(level=19).encode(bytes(BOMB)))
        case("zstd-bomb.zarr", z, "refused", "zstd frame declares")
    z = _zarr_v2(f / "huge-chunk.zarr", (10 ** 6, 1000), (10 ** 6, 1000))
    case("huge-chunk.zarr (one chunk of 8 GB declared)", z, "refused", "one chunk .* needs about")
    z = _zarr_v2(f / "wide.zarr", (10, 2 ** 30), (10, 1000))
    case("wide.zarr (2**30 columns)", z, "refused", "max_features")
    z = _zarr_v2(f / "object.zarr", (10, 10), (10, 10), dtype="|O")
    case("object.zarr", z, "refused", "must hold numbers")
    z = _zarr_v2(f / "filters.zarr", (10, 10), (10, 10), filters=[{"id": "delta", "dtype": "<f8"}])
    case("filters.zarr (a filter we cannot bound)", z, "refused", "filters")
    z = f / "meta-link.zarr"
    z.mkdir()
    os.symlink("/etc/passwd", z / ".zarray")
    case("meta-link.zarr (metadata links to /etc/passwd)", z, "refused", "outside")

    # -- declared sizes, counts and names (issue 34) ------------------------------------------------
    for make, first in ((zarr_v2, "0.0"), (zarr_v3, "c/0/0")):
        tag = "v2" if make is zarr_v2 else "v3"
        z = make(f / f"rows-2-50-{tag}.zarr", (2 ** 50, 4), (1000, 4))
        case(f"rows-2-50-{tag}.zarr (150 bytes declaring 2**50 x 4)", z, "refused", f"chunk {first} .* is missing")
        case(f"rows-2-50-{tag}.zarr, missing_chunks=fill", z, "refused", "more than 4,096 blocks",
             missing_chunks="fill")
    z = zarr_v2(f / "rows-2-40.zarr", (2 ** 40, 4), (100, 4))
    case("rows-2-40.zarr (2**40 rows, no chunks)", z, "refused", r"chunk 0\.0 .* is missing")
    # Found by the fuzzer: policy options of the wrong type reached int() (TypeError, ValueError).
    for value in ("", [], {"a": 1}):
        case(f"honest.npy, max_bytes={value!r}", f / "honest.npy", "refused", "'max_bytes' parameter must be",
             max_bytes=value)
    case("honest.npy, max_features=[]", f / "honest.npy", "refused", "'max_features' parameter must be",
         max_features=[])
    np.save(f / "two-million.npy", np.zeros((2_000_000, 1), np.uint8))
    case("two-million.npy, chunk_rows=1", f / "two-million.npy", "refused", "pass chunk_rows=489 or more",
         chunk_rows=1)
    z = zarr_v2(f / "chunk-as-budget.zarr", (2 ** 17, 16), (2 ** 17, 16), compressor={"id": "zlib", "level": 1})
    (z / "0.0").write_bytes(_zeros_deflated(BUDGET))
    case("chunk-as-budget.zarr (one honest zlib chunk of 16 MiB, the budget)", z, "refused",
         "decoded, then copied into its block")
    bad_v3 = {"data_type": {"name": "float64"}, "chunk_grid": [{"name": "regular"}],
              "codecs": [{"name": "bytes", "configuration": "little"}], "chunk_key_encoding": "dotted"}
    for field, value in bad_v3.items():
        z = zarr_v3(f / f"v3-{field}.zarr", (10, 4), (10, 4), **{field: value})
        case(f"v3-{field}.zarr ({field} {json.dumps(value)})", z, "refused",
             "chunk key encoding 'dotted'" if field == "chunk_key_encoding" else field if field != "codecs"
             else "configuration must be")
    z = zarr_v3(f / "hex-nan.zarr", (6, 2), (3, 2), fill_value="0x7ff8000000000001")
    case("hex-nan.zarr (fill 0x7ff8000000000001, filled)", z, "loaded", missing_chunks="fill")
    z = zarr_v3(f / "fill-banana.zarr", (6, 2), (3, 2), fill_value="banana")
    case("fill-banana.zarr", z, "refused", "fill_value 'banana'", missing_chunks="fill")
    z = zarr_v3(f / "both-formats.zarr", (6, 2), (3, 2))
    zarr_v2(z, (6, 2), (3, 2))
    case("both-formats.zarr (zarr.json and .zarray)", z, "refused", "holds both")
    # (The 1,200-deep folder chain is in tests/robustcore/bigdata/test_declared.py: pytest's own
    # clean-up of tmp_path would recurse once per level.)

    # -- HDF5 -------------------------------------------------------------------------------------
    if h5py is not None:
        with h5py.File(f / "rows-2-50.h5", "w") as h:
            h.create_dataset("X", shape=(2 ** 50, 4), dtype="f8", chunks=(1024, 4))
        case("rows-2-50.h5 (never written, 2**50 x 4)", f / "rows-2-50.h5", "refused", "never written")
        case("rows-2-50.h5, missing_chunks=fill", f / "rows-2-50.h5", "refused", "more than 4,096 blocks",
             missing_chunks="fill")
        with h5py.File(f / "link-fan.h5", "w") as h:
            h["X"] = np.ones((4, 2))
            h["a0"] = h5py.SoftLink("/")
            for j in range(1, 5):
                h[f"a{j}"] = h5py.SoftLink("/" + "/".join([f"a{j - 1}"] * 30))
        case("link-fan.h5 (soft links naming links 30 times, 4 levels)", f / "link-fan.h5", "refused",
             "more than 16 soft links", dataset="a4/X")
        with h5py.File(f / "one-by-one.h5", "w") as h:
            h.create_dataset("X", data=np.arange(80000.0).reshape(200, 400), chunks=(1, 1))
        case("one-by-one.h5 (80,000 chunks of 1 x 1)", f / "one-by-one.h5", "refused", "80,000 chunks to read")
        # Found by the fuzzer (benchmarks/fuzz_loaders.py): one byte of a dataspace changed, and
        # h5py raised RuntimeError / KeyError while listing the file's datasets. Checked in: the
        # bytes HDF5 writes differ between its versions.
        shutil.copy(FILES / "damaged-dataspace.h5", f / "damaged-dataspace.h5")
        case("damaged-dataspace.h5 (fuzzer: one byte of a dataspace changed)", f / "damaged-dataspace.h5",
             "refused", "not a readable HDF5 file, or is damaged")
        with h5py.File(f / "many-names.h5", "w") as h:
            for i in range(300):
                h.create_dataset(f"d{i}", shape=(2,), dtype="u1")
        case("many-names.h5 (300 1-D datasets)", f / "many-names.h5", "refused", "… and 290 more")
        size = os.path.getsize("/etc/passwd")
        with h5py.File(f / "external-passwd.h5", "w") as h:
            h.create_dataset("X", shape=(size, 1), dtype="u1", external=[("/etc/passwd", 0, size)])
        case("external-passwd.h5 (external storage: /etc/passwd)", f / "external-passwd.h5", "refused",
             "external storage")
        with h5py.File(f / "other.h5", "w") as h:
            h["d"] = X
        with h5py.File(f / "external-link.h5", "w") as h:
            h["X"] = h5py.ExternalLink(str(f / "other.h5"), "/d")
        case("external-link.h5", f / "external-link.h5", "refused", "external link", dataset="X")
        with h5py.File(f / "external-link-fifo.h5", "w") as h:
            h["X"] = h5py.ExternalLink(str(f / "fifo.h5"), "/d")
        case("external-link-fifo.h5 (a link to a FIFO)", f / "external-link-fifo.h5", "refused", "external link",
             dataset="X")
        with h5py.File(f / "virtual.h5", "w") as h:
            layout = h5py.VirtualLayout(shape=X.shape, dtype="f8")
            layout[:] = h5py.VirtualSource(str(f / "other.h5"), "d", shape=X.shape)
            h.create_virtual_dataset("X", layout)
        case("virtual.h5", f / "virtual.h5", "refused", "virtual dataset")
        with h5py.File(f / "deflate-bomb.h5", "w") as h:
            d = h.create_dataset("X", shape=(100, 10), dtype="f8", chunks=(100, 10), compression="gzip")
            d.id.write_direct_chunk((0, 0), _zeros_deflated(BOMB))
        case(f"deflate-bomb.h5 (8 KB chunk inflating to {BOMB >> 20} MiB)", f / "deflate-bomb.h5", "refused",
             "inflates to more than")
        with h5py.File(f / "huge-chunk.h5", "w") as h:
            h.create_dataset("X", shape=(2 ** 20, 4096), dtype="f8", chunks=(2 ** 16, 256))
        case("huge-chunk.h5 (one chunk of 128 MB declared)", f / "huge-chunk.h5", "refused", "one chunk .* needs about")
        with h5py.File(f / "wide.h5", "w") as h:
            h.create_dataset("X", shape=(4, 2 ** 25), dtype="u1", chunks=(1, 2 ** 16))
        case("wide.h5 (2**25 columns)", f / "wide.h5", "refused", "max_features")
        with h5py.File(f / "missing-chunk.h5", "w") as h:
            h.create_dataset("X", shape=(400, 10), dtype="f8", chunks=(100, 10))[:100] = 1.0
        case("missing-chunk.h5 (chunks never written)", f / "missing-chunk.h5", "refused", "never written")
        with h5py.File(f / "lzf.h5", "w") as h:
            h.create_dataset("X", data=X, chunks=(100, 10), compression="lzf")
        case("lzf.h5", f / "lzf.h5", "refused", "lzf filter")
        with h5py.File(f / "truncated.h5", "w") as h:
            h.create_dataset("X", data=np.ones((2000, 10)))
        data = (f / "truncated.h5").read_bytes()
        (f / "truncated.h5").write_bytes(data[:len(data) // 2])
        case("truncated.h5", f / "truncated.h5", "refused", "truncated|not a readable HDF5")
        with h5py.File(f / "strings.h5", "w") as h:
            h.create_dataset("X", data=np.array([[b"a", b"b"]] * 3))
        case("strings.h5", f / "strings.h5", "refused", "must hold numbers")

    # -- video --------------------------------------------------------------------------------------
    try:
        import av
    except ImportError:
        av = None
    if av is not None:
        p = f / "absurd.avi"
        with av.open(str(p), "w") as c:
            s = c.add_stream("rawvideo", rate=10)
            s.width, s.height, s.pix_fmt = 32, 24, "gray"
            for i in range(3):
                for pk in s.encode(av.VideoFrame.from_ndarray(np.full((24, 32), 40 * i, np.uint8), format="gray")):
                    c.mux(pk)
            for pk in s.encode():
                c.mux(pk)
        b = bytearray(p.read_bytes())
        i = b.index(b"strf")
        struct.pack_into("<ii", b, i + 12, 16000, 16000)      # BITMAPINFOHEADER width, height
        j = b.index(b"avih")
        struct.pack_into("<II", b, j + 8 + 32, 16000, 16000)  # the AVI main header's
        p.write_bytes(bytes(b))
        case("absurd.avi (claims 16000 x 16000 frames)", p, "refused", "max_features")
        os.mkfifo(f / "fifo.mp4")
        case("fifo.mp4", f / "fifo.mp4", "refused", "FIFO")
    return cases


def big_bomb(folder, total: int = 4 * 1024 ** 3) -> dict:
    """The campaign's case: a Zarr chunk of a few MB of zlib that inflates to ``total`` bytes (4 GB)
    while its metadata declares 8 MB (so its stored size is plausible and it is inflated: up to
    8 MB and one byte). Takes about a minute to write; not in the suite."""
    z = _zarr_v2(Path(folder) / "zlib-bomb-4g.zarr", (10000, 100), (10000, 100), compressor={"id": "zlib"})
    c = zlib.compressobj(9)
    piece = b"\0" * (1 << 24)
    with open(z / "0.0", "wb") as fh:
        for _ in range(total // len(piece)):
            fh.write(c.compress(piece))
        fh.write(c.flush())
    return {"file": f"zlib-bomb-4g.zarr ({os.path.getsize(z / '0.0') / 2 ** 20:.1f} MB chunk declared 8 MB, "
                    f"inflating to {total >> 30} GB)", "path": str(z), "kind": "lazy", "expect": "refused",
            "match": "inflates to more than", "options": None, "budget": 1 << 30, "seconds": SECONDS}
