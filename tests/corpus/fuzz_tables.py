"""Hypothesis searches over what the table readers and the text loaders are given (issue 34.7):
Zarr 2/3 stores, HDF5 layouts and CSV/LIBSVM bytes, each built from a valid input written by the
format's own library (zarr, h5py) or by numpy, then edited: metadata fields set to values of
any JSON type or deleted, chunks deleted, cut or replaced, bytes spliced in.

The invariant, checked by :func:`tests.corpus.searches._bounded` in the capped child of
:mod:`tests.corpus.harness` (20 s, RLIMIT_AS): the project's own error (LoadError), or a correct
result. Correct means, for an input left valid, exactly the array that was written (the oracle
is the writer, not the reader); for an edited one, a table of the declared shape whose values
are finite or the store's fill. Registered in :data:`tests.corpus.searches.SEARCHES`.
"""
from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from .searches import NASTY, _bounded, _in, _paths, _set, _delete, _settings

BUDGET = 16 * 1024 ** 2

# JSON values of every type, biased to the ones readers trip on.
JSON_ANY = st.one_of(
    NASTY,
    st.sampled_from(["NaN", "Infinity", "-Infinity", "0x7ff8000000000001", "0x7fc00000", "0xZZ", "regular",
                     "default", "v2", "bytes", "gzip", "zstd", "blosc", "sharding_indexed", "little", "big",
                     "float64", "int8", "uint64", "bool", "<f8", ">i2", "|b1", "|O", "C", "F", ".", "/"]),
    st.sampled_from([2 ** 40, 2 ** 50, 2 ** 63, -1, 0, 1]),
    st.lists(st.sampled_from([0, 1, 7, 2 ** 31, 2 ** 50, -1]), min_size=0, max_size=3),
    st.recursive(st.none() | st.integers(-3, 5) | st.text(max_size=4),
                 lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
                 max_leaves=6),
)

_V2_COMPRESSORS = ["none", "zlib", "gzip", "bz2", "lzma", "zstd", "blosc", "lz4"]
_V3_COMPRESSORS = ["none", "gzip", "zstd", "blosc"]
_DTYPES = ["f8", "f4", "i2", "u1", "i8", "bool"]


def _v2_compressor(name):
    import numcodecs
    return {"none": None, "zlib": numcodecs.Zlib(), "gzip": numcodecs.GZip(), "bz2": numcodecs.BZ2(),
            "lzma": numcodecs.LZMA(preset=1), "zstd": numcodecs.Zstd(), "blosc": numcodecs.Blosc(),
            "lz4": numcodecs.LZ4()}[name]


def _v3_compressor(name):
    from zarr.codecs import BloscCodec, GzipCodec, ZstdCodec
    return {"none": None, "gzip": GzipCodec(), "zstd": ZstdCodec(), "blosc": BloscCodec()}[name]


def _values(rng, shape, dtype):
    X = rng.standard_normal(shape) * 50
    return (X > 0) if dtype == "bool" else X.astype(dtype)


def _write_zarr(path: Path, fmt: int, X, chunks, compressor: str, fill, separator: str) -> None:
    import zarr
    # One thread: the writer's pool would take the capped child's address space (RLIMIT_AS).
    zarr.config.set({"threading.max_workers": 1, "async.concurrency": 1})
    kw = {}
    if fmt == 2:
        kw["compressors"] = _v2_compressor(compressor)
        kw["chunk_key_encoding"] = {"name": "v2", "separator": separator}
    else:
        kw["compressors"] = _v3_compressor(compressor)
        kw["chunk_key_encoding"] = {"name": "default", "separator": separator}
    z = zarr.create_array(store=str(path), shape=X.shape, chunks=chunks, dtype=X.dtype, zarr_format=fmt,
                          fill_value=fill, **kw)
    z[:] = X


def _chunk_files(path: Path) -> list[Path]:
    return sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith((".z", "zarr.json")))


def _check_table(read, X=None, fill=None) -> None:
    """Read the table whole within the budget; an input left valid must read back as ``X``."""
    from robustcore.bigdata import compute, open_table, settings
    with settings(memory_budget=BUDGET):
        t = read(open_table)
        got = np.asarray(compute(t.array)[0])
    if X is not None:
        assert got.shape == X.shape and got.dtype == X.dtype, (got.shape, got.dtype, X.shape, X.dtype)
        np.testing.assert_array_equal(got, X)
    else:
        assert got.shape == t.shape
        if fill is not None:
            assert got.dtype == t.dtype


def zarr_stores(examples: int, seconds: float, allowed: tuple, rng_seed: int | None = None, count=None) -> None:
    """Zarr 2 and 3 stores written by zarr, then edited (metadata fields, chunk files)."""
    work = Path(tempfile.mkdtemp(prefix="rss-zarr-fuzz-"))

    @_settings(examples, rng_seed)
    @given(fmt=st.sampled_from([2, 3]), rows=st.integers(0, 40), cols=st.integers(1, 6),
           cr=st.integers(1, 16), cc=st.integers(1, 6), dtype=st.sampled_from(_DTYPES),
           compressor=st.sampled_from(_V2_COMPRESSORS), separator=st.sampled_from([".", "/"]),
           fill=st.sampled_from([0, 1, None, "nan"]), missing=st.sampled_from(["error", "fill"]),
           data=st.data())
    def search(fmt, rows, cols, cr, cc, dtype, compressor, separator, fill, missing, data):
        if count is not None:
            count[0] += 1
        if fmt == 3 and compressor not in _V3_COMPRESSORS:
            compressor = "none"
        if dtype == "bool" and fill == "nan":
            fill = 0
        if fill == "nan" and dtype not in ("f8", "f4"):
            fill = 0
        fill_value = float("nan") if fill == "nan" else (bool(fill) if dtype == "bool" and fill is not None else fill)
        X = _values(np.random.default_rng(rows * 31 + cols), (rows, cols), dtype)
        store = work / "s.zarr"
        shutil.rmtree(store, ignore_errors=True)
        _write_zarr(store, fmt, X, (cr, cc), compressor, fill_value, separator)
        meta_path = store / (".zarray" if fmt == 2 else "zarr.json")
        meta = json.loads(meta_path.read_text())
        paths = [p for p, _ in _paths(meta) if p]
        edits = data.draw(st.lists(st.tuples(st.sampled_from(["set", "delete", "chunk-delete", "chunk-cut",
                                                              "chunk-bytes", "rows", "both-formats"]),
                                             st.sampled_from(paths), JSON_ANY), max_size=3))
        files = _chunk_files(store)
        for how, path, value in edits:
            try:
                if how == "set":
                    _set(meta, path, value)
                elif how == "delete":
                    _delete(meta, path)
                elif how == "rows" and isinstance(meta.get("shape"), list) and meta["shape"]:
                    meta["shape"][0] = data.draw(st.sampled_from([2 ** 31, 2 ** 40, 2 ** 50, 2 ** 62, 10 ** 7]))
                elif how == "both-formats":
                    (store / (".zarray" if fmt == 3 else "zarr.json")).write_text("{}")
                elif files:
                    f = files[data.draw(st.integers(0, len(files) - 1))]
                    if how == "chunk-delete":
                        f.unlink(missing_ok=True)
                    elif how == "chunk-cut" and f.exists():
                        f.write_bytes(f.read_bytes()[:data.draw(st.integers(0, 64))])
                    elif how == "chunk-bytes":
                        f.write_bytes(data.draw(st.binary(max_size=64)))
            except (KeyError, IndexError, TypeError):
                pass
        meta_path.write_text(json.dumps(meta))
        valid = not edits and (fill is not None or missing == "error")

        def read():
            _check_table(lambda open_table: open_table(store, missing_chunks=missing), X if valid else None,
                         fill)
        _bounded(read, seconds, allowed)

    _in(work, search)


def hdf5_layouts(examples: int, seconds: float, allowed: tuple, rng_seed: int | None = None, count=None) -> None:
    """HDF5 files written by h5py: contiguous, compact and chunked layouts, filters, fill values,
    chunks left unwritten, soft links (chains, loops, fan-outs), groups, edited bytes."""
    import h5py
    work = Path(tempfile.mkdtemp(prefix="rss-hdf5-fuzz-"))

    @_settings(examples, rng_seed)
    @given(rows=st.integers(0, 60), cols=st.integers(1, 6), layout=st.sampled_from(["contiguous", "compact",
                                                                                   "chunked"]),
           cr=st.integers(1, 20), cc=st.integers(1, 6), dtype=st.sampled_from(["f8", "f4", "i4", "u1", ">f8"]),
           gzip=st.booleans(), shuffle=st.booleans(), fletcher=st.booleans(), lzf=st.booleans(),
           written=st.sampled_from(["all", "none", "half"]), missing=st.sampled_from(["error", "fill"]),
           fill=st.sampled_from([0, 7]), links=st.lists(st.tuples(st.sampled_from(["a", "b", "c", "d"]),
                                                                  st.lists(st.sampled_from(["a", "b", "c", "d",
                                                                                            "X", "g", ".", ".."]),
                                                                           min_size=0, max_size=6)), max_size=4),
           target=st.sampled_from([None, "X", "g/Y", "a", "a/X", "b/X", "c/d/X", "nope"]),
           flips=st.lists(st.tuples(st.integers(0, 4000), st.integers(0, 255)), max_size=3),
           declared=st.sampled_from([None, 2 ** 20, 2 ** 40, 2 ** 50]))
    def search(rows, cols, layout, cr, cc, dtype, gzip, shuffle, fletcher, lzf, written, missing, fill, links,
               target, flips, declared):
        if count is not None:
            count[0] += 1
        p = work / "t.h5"
        X = _values(np.random.default_rng(rows + 7 * cols), (rows, cols), dtype)
        kw = {}
        if layout == "chunked" and rows:
            kw = dict(chunks=(min(cr, max(rows, 1)), min(cc, cols)), fillvalue=fill,
                      compression="lzf" if lzf else ("gzip" if gzip else None), shuffle=shuffle,
                      fletcher32=fletcher)
            if declared:
                kw["maxshape"] = (None, cols)
        with h5py.File(p, "w") as f:
            if layout == "compact" and 0 < X.nbytes < 60000:
                dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
                dcpl.set_layout(h5py.h5d.COMPACT)
                f.create_dataset("X", data=X, dcpl=dcpl)
            elif kw and declared:
                d = f.create_dataset("X", shape=(declared, cols), dtype=X.dtype, **kw)
                d[:rows] = X
            elif kw:
                d = f.create_dataset("X", shape=X.shape, dtype=X.dtype, **kw)
                if written == "all":
                    d[:] = X
                elif written == "half":
                    d[:rows // 2] = X[:rows // 2]
            else:
                f.create_dataset("X", data=X)
            f.create_group("g").create_dataset("Y", data=X[:, :1])
            for name, parts in links:
                if name not in f:
                    f[name] = h5py.SoftLink("/" + "/".join(parts))
        if flips:
            raw = bytearray(p.read_bytes())
            for i, v in flips:
                if i < len(raw):
                    raw[i] = v
            p.write_bytes(bytes(raw))
        valid = (not flips and not declared and target in (None, "X") and not links and
                 (written == "all" or not kw or missing == "fill") and not lzf and layout != "compact")

        def read():
            want = None
            if valid:
                want = X
                if kw and written != "all":
                    want = np.full(X.shape, fill, X.dtype)
                    if written == "half":
                        want[:rows // 2] = X[:rows // 2]
            _check_table(lambda open_table: open_table(p, dataset=target or "X", missing_chunks=missing), want)
        _bounded(read, seconds, allowed)

    _in(work, search)


_CELL = st.one_of(st.floats(allow_nan=False, allow_infinity=False, width=64).map(repr),
                  st.integers(-10 ** 6, 10 ** 6).map(str))
_NOISE = st.sampled_from([",", ";", "\t", " ", "\n", "\r", "\r\n", "\"", "#", "nan", "inf", "-", "e", "1e999", "",
                          "\u00e9", "\0", "\x0b", "\u2028", "NA", "?", "0x1p3", "1_0", ":", "1:2", "99999999999:1"])


def text_files(examples: int, seconds: float, allowed: tuple, rng_seed: int | None = None, count=None) -> None:
    """CSV and LIBSVM bytes: tables of numbers written with every separator and line end (read
    back exactly), then spliced with the tokens parsers trip on."""
    from robustcore import datasets
    work = Path(tempfile.mkdtemp(prefix="rss-text-fuzz-"))

    @_settings(examples, rng_seed)
    @given(kind=st.sampled_from(["csv", "libsvm"]), rows=st.integers(1, 12), cols=st.integers(1, 5),
           sep=st.sampled_from([",", ";", "\t"]), end=st.sampled_from(["\n", "\r\n", "\r"]),
           header=st.booleans(), data=st.data(),
           noise=st.lists(st.tuples(st.integers(0, 400), _NOISE), max_size=4))
    def search(kind, rows, cols, sep, end, header, data, noise):
        if count is not None:
            count[0] += 1
        cells = [[data.draw(_CELL) for _ in range(cols)] for _ in range(rows)]
        X = np.array([[float(c) for c in row] for row in cells])
        if kind == "csv":
            lines = ([sep.join(f"c{j}" for j in range(cols))] if header else []) + [sep.join(r) for r in cells]
            name = "t.csv"
        else:
            lines = [f"{i % 2} " + " ".join(f"{j + 1}:{c}" for j, c in enumerate(r)) for i, r in enumerate(cells)]
            name = "t.svm"
        text = end.join(lines) + end
        for i, token in noise:
            i = min(i, len(text))
            text = text[:i] + token + text[i:]
        p = work / name
        p.write_bytes(text.encode("utf-8", "surrogatepass"))

        def read():
            opts = {"format": kind, "max_bytes": BUDGET}
            if kind == "csv" and not noise:
                opts["header"] = header
            ds = datasets.load(p, **opts)
            got = ds.dense(max_bytes=BUDGET)
            assert got.ndim == 2 and np.isfinite(got).all()
            if not noise:
                # Zero columns a LIBSVM file never names are not there (it has cols features).
                assert got.shape == X.shape, (got.shape, X.shape)
                np.testing.assert_array_equal(got, X)
        _bounded(read, seconds, allowed)

    _in(work, search)


def table_options(examples: int, seconds: float, allowed: tuple, rng_seed: int | None = None, count=None) -> None:
    """open_lazy's options, of every JSON type, over honest .npy, Zarr and HDF5 tables."""
    import h5py

    from robustcore.bigdata import compute, open_lazy, settings
    work = Path(tempfile.mkdtemp(prefix="rss-options-lazy-"))
    X = np.arange(600.0).reshape(100, 6)
    np.save(work / "t.npy", X)
    _write_zarr(work / "t.zarr", 3, X, (10, 6), "zstd", 0.0, "/")
    with h5py.File(work / "t.h5", "w") as f:
        f.create_dataset("X", data=X, chunks=(10, 6), compression="gzip")
    names = ["dataset", "chunk_rows", "missing_chunks", "max_features", "max_bytes", "junk"]

    @_settings(examples, rng_seed)
    @given(file=st.sampled_from(["t.npy", "t.zarr", "t.h5"]),
           options=st.dictionaries(st.sampled_from(names), JSON_ANY | st.integers(1, 200), max_size=3))
    def search(file, options):
        if count is not None:
            count[0] += 1

        def read():
            with settings(memory_budget=BUDGET):
                ds = open_lazy(work / file, **options)
                got = np.asarray(compute(ds.source.array)[0])
            np.testing.assert_array_equal(got, X)
        _bounded(read, seconds, allowed)

    _in(work, search)


SEARCHES = {"zarr-stores": zarr_stores, "hdf5-layouts": hdf5_layouts, "text-files": text_files,
            "table-options": table_options}
