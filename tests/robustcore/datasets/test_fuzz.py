"""Malformed input of every kind: each parser either loads or raises LoadError -- nothing else.

``load`` turns any unforeseen exception into a LoadError whose message asks to "please report" it; the
fuzzing fails on those too, so a parser that leaks a numpy/zlib/struct error is caught here.
"""
import gzip
import io

import numpy as np
import pytest
import scipy.io as sio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from robustcore.datasets import Dataset, LoadError, load

FUZZ = settings(max_examples=250, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
LIMIT = 64 * 1024 * 1024  # keep any mutated "huge" header from allocating for real


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz")


def check(path, **options):
    try:
        ds = load(path, max_bytes=LIMIT, **options)
    except LoadError as exc:
        msg = str(exc)
        assert msg and "please report" not in msg, msg
        return None
    assert isinstance(ds, Dataset)
    X = ds.dense()
    assert X.ndim == 2 and X.shape[0] >= 1 and X.shape[1] >= 1
    assert np.all(np.isfinite(X))
    assert ds.provenance.sha256 and ds.provenance.loader
    return ds


def mutate(data: st.DataObject, raw: bytes) -> bytes:
    """Truncate, flip, insert or overwrite bytes of a valid file."""
    kind = data.draw(st.sampled_from(["truncate", "flip", "splice", "overwrite_head"]))
    if kind == "truncate":
        return raw[: data.draw(st.integers(1, max(1, len(raw) - 1)))]
    if kind == "flip":
        b = bytearray(raw)
        for _ in range(data.draw(st.integers(1, 8))):
            i = data.draw(st.integers(0, len(b) - 1))
            b[i] = data.draw(st.integers(0, 255))
        return bytes(b)
    if kind == "splice":
        i = data.draw(st.integers(0, len(raw)))
        return raw[:i] + data.draw(st.binary(min_size=1, max_size=40)) + raw[i:]
    head = data.draw(st.binary(min_size=1, max_size=64))
    return head + raw[len(head):]


CSV_CHARS = st.sampled_from(list("0123456789,;\t|\n\r .-+eE\"#nNaAifx?") + ["\u00e9", "\0", "inf", "NA", ""])


@pytest.mark.slow
@FUZZ
@given(text=st.lists(CSV_CHARS, max_size=120).map("".join),
       header=st.sampled_from([None, True, False]), missing=st.sampled_from(["error", "drop", "median"]),
       label=st.sampled_from([None, 0, -1, "a", "5"]), delimiter=st.sampled_from(["auto", ",", "whitespace"]))
def test_fuzz_csv(workdir, text, header, missing, label, delimiter):
    p = workdir / "f.csv"
    p.write_text(text, encoding="utf-8")
    check(p, header=header, missing=missing, label_column=label, delimiter=delimiter)


@pytest.mark.slow
@FUZZ
@given(raw=st.binary(max_size=200))
def test_fuzz_csv_random_bytes(workdir, raw):
    p = workdir / "b.csv"
    p.write_bytes(raw)
    check(p, format="csv")


LIBSVM_CHARS = st.sampled_from(list("0123456789: \n.-+#e") + ["qid:", "1:", " 2:0.5", "nan", "\t"])


@pytest.mark.slow
@FUZZ
@given(text=st.lists(LIBSVM_CHARS, max_size=100).map("".join), zero_based=st.sampled_from([None, True, False]),
       dense=st.booleans(), n_features=st.sampled_from([None, 1, 3, 1000]))
def test_fuzz_libsvm(workdir, text, zero_based, dense, n_features):
    p = workdir / "f.svm"
    p.write_text(text)
    check(p, zero_based=zero_based, dense=dense, n_features=n_features)


def _npy_bytes(arr):
    buf = io.BytesIO()
    np.save(buf, arr)
    return buf.getvalue()


NPY_SEEDS = [_npy_bytes(np.arange(12, dtype=np.float64).reshape(3, 4)),
             _npy_bytes(np.arange(24, dtype=np.uint8).reshape(2, 3, 4)),
             _npy_bytes(np.array([[1, 2]], dtype=">i4"))]


@pytest.mark.slow
@FUZZ
@given(data=st.data(), seed=st.sampled_from(range(len(NPY_SEEDS))))
def test_fuzz_npy(workdir, data, seed):
    p = workdir / "f.npy"
    p.write_bytes(mutate(data, NPY_SEEDS[seed]))
    check(p, format="npy")


def _npz_bytes():
    buf = io.BytesIO()
    np.savez(buf, X=np.arange(6.0).reshape(3, 2), y=np.array([1, 2, 1]))
    return buf.getvalue()


NPZ_SEED = _npz_bytes()


@pytest.mark.slow
@settings(FUZZ, max_examples=200)
@given(data=st.data())
def test_fuzz_npz(workdir, data):
    p = workdir / "f.npz"
    p.write_bytes(mutate(data, NPZ_SEED))
    check(p, format="npy")


def _idx_bytes(arr, code):
    return bytes([0, 0, code, arr.ndim]) + b"".join(int(s).to_bytes(4, "big") for s in arr.shape) + arr.tobytes()


IDX_SEEDS = [_idx_bytes(np.arange(60, dtype=np.uint8).reshape(3, 4, 5), 0x08),
             _idx_bytes(np.arange(6, dtype=">f4").reshape(2, 3), 0x0D)]


@pytest.mark.slow
@FUZZ
@given(data=st.data(), seed=st.sampled_from([0, 1]), gz=st.booleans())
def test_fuzz_idx(workdir, data, seed, gz):
    raw = mutate(data, IDX_SEEDS[seed])
    if gz:
        comp = gzip.compress(raw)
        raw = comp if data.draw(st.booleans()) else mutate(data, comp)
    p = workdir / ("f-ubyte.gz" if gz else "f-ubyte")
    p.write_bytes(raw)
    check(p, format="idx", labels_file="none")


def _mat_bytes(compress):
    buf = io.BytesIO()
    sio.savemat(buf, {"X": np.arange(12.0).reshape(4, 3), "y": np.array([[0], [1], [0], [1]])},
                do_compression=compress)
    return buf.getvalue()


MAT_SEEDS = [_mat_bytes(False), _mat_bytes(True)]


@pytest.mark.slow
@FUZZ
@given(data=st.data(), seed=st.sampled_from([0, 1]))
def test_fuzz_mat(workdir, data, seed):
    p = workdir / "f.mat"
    p.write_bytes(mutate(data, MAT_SEEDS[seed]))
    check(p, format="mat")


def _png_bytes():
    Image = pytest.importorskip("PIL.Image")
    buf = io.BytesIO()
    Image.fromarray(np.random.default_rng(0).integers(0, 255, (6, 5), dtype=np.uint8)).save(buf, format="PNG")
    return buf.getvalue()


def _tif_bytes():
    tifffile = pytest.importorskip("tifffile")
    buf = io.BytesIO()
    tifffile.imwrite(buf, np.arange(60, dtype=np.uint16).reshape(3, 4, 5), photometric="minisblack")
    return buf.getvalue()


@pytest.fixture(scope="module")
def png_seed():
    return _png_bytes()


@pytest.fixture(scope="module")
def tif_seed():
    return _tif_bytes()


@pytest.mark.slow
@settings(FUZZ, max_examples=200)
@given(data=st.data())
def test_fuzz_image_folder(workdir, png_seed, data):
    folder = workdir / "imgs"
    folder.mkdir(exist_ok=True)
    (folder / "a.png").write_bytes(png_seed)
    (folder / "b.png").write_bytes(mutate(data, png_seed))
    check(folder)


@pytest.mark.slow
@settings(FUZZ, max_examples=200)
@given(data=st.data())
def test_fuzz_tiff(workdir, tif_seed, data):
    p = workdir / "f.tif"
    p.write_bytes(mutate(data, tif_seed))
    check(p, format="tiff")


@pytest.mark.slow
@FUZZ
@given(raw=st.binary(min_size=1, max_size=300),
       name=st.sampled_from(["x.csv", "x.npy", "x.npz", "x.mat", "x.svm", "x-ubyte", "x.tif", "x.png",
                             "x.gz", "x.csv.bz2", "noext"]))
def test_fuzz_dispatch_on_random_bytes(workdir, raw, name):
    p = workdir / name
    p.write_bytes(raw)
    check(p)


@pytest.mark.slow
@settings(FUZZ, max_examples=150)
@given(X=st.lists(st.lists(st.floats(allow_nan=False, allow_infinity=False, width=64), min_size=3, max_size=3),
                  min_size=1, max_size=8),
       delim=st.sampled_from([",", ";", "\t", " "]), quote=st.booleans(), header=st.booleans(),
       trail=st.booleans())
def test_round_trip_property_fast_and_careful_paths_agree(workdir, X, delim, quote, header, trail):
    # Quoting forces the careful row-by-row parser; plain files take numpy's C parser.
    q = '"' if quote and delim != " " else ""
    end = delim if trail and delim != " " else ""  # some exports end every line with a delimiter
    lines = [delim.join(f"{q}c{j}{q}" for j in range(3)) + end] if header else []
    lines += [delim.join(f"{q}{v!r}{q}" for v in row) + end for row in X]
    p = workdir / "rt.csv"
    p.write_text("\n".join(lines) + "\n")
    ds = load(p, header=header)
    assert np.array_equal(ds.X, np.array(X))
