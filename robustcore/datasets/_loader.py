"""What every loader shares: option declarations, file opening, the memory guard, provenance."""
from __future__ import annotations

import bz2
import gzip
import hashlib
import lzma
import re
import zlib
from pathlib import Path
from typing import ClassVar

import numpy as np

from .._params import Param, param_message, validate_params
from ._dataset import Dataset, Provenance, file_sha256
from ._errors import LoadError
from ._limits import (DEFAULT_MAX_BYTES, MAX_BYTES, MAX_FEATURES, OUT_OF_CORE_SUFFIXES, Cost, charge, check_memory,
                      format_bytes, open_regular, read_stream, regular_file)

__all__ = ["Loader", "MAX_BYTES", "MAX_FEATURES", "DEFAULT_MAX_BYTES", "check_memory", "format_bytes",
           "open_maybe_compressed", "read_all", "COMPRESSED", "MISSING_OPTION", "OUTLIER_LABEL",
           "KNOWN_OUTLIERS", "handle_missing", "parse_labels", "IMAGE_SHAPE_OPTION", "parse_image_shape",
           "DECOMPRESS_ERRORS", "Cost", "physical_lines"]

MISSING_OPTION = Param("missing", str, "error",
                       "what to do with missing or non-finite values (empty, NA, NaN, inf): "
                       "error = refuse and say where, drop = drop those rows, "
                       "median = replace by the column median",
                       choices=("error", "drop", "median"))

OUTLIER_LABEL = Param("outlier_label", str, None,
                      "the label value (as text) that marks ground-truth outliers, e.g. 1",
                      allow_none=True, none_label="no ground truth", advanced=True)

KNOWN_OUTLIERS = Param("known_outliers", bool, True,
                       "read a 0/1 labels variable with fewer 1s than 0s (as in ODDS outlier tables) "
                       "as known outliers, 1 = outlier")

# Compression suffix -> opener. Text formats and IDX may be compressed.
COMPRESSED = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}

# What the decompressors raise for damaged or truncated input.
DECOMPRESS_ERRORS = (OSError, EOFError, zlib.error, lzma.LZMAError, ValueError)


def compression_of(path: Path) -> str | None:
    suf = path.suffix.lower()
    return suf if suf in COMPRESSED else None


class _Decompressing:
    """A decompressing stream that also closes the regular file beneath it."""

    def __init__(self, stream, raw):
        self.stream, self.raw = stream, raw

    def read(self, n: int = -1) -> bytes:
        return self.stream.read(n)

    def close(self) -> None:
        try:
            self.stream.close()
        finally:
            self.raw.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def open_maybe_compressed(path: Path):
    """Binary stream of a regular file, decompressing .gz/.bz2/.xz transparently (devices and
    FIFOs are refused before anything is read)."""
    raw = open_regular(path)
    comp = compression_of(path)
    if comp is None:
        return raw
    try:
        return _Decompressing(COMPRESSED[comp](raw, "rb"), raw)
    except BaseException:
        raw.close()
        raise


def read_all(path: Path, limit: int, cost=None) -> tuple[bytes, int]:
    """Whole (decompressed) content and its charge, read under the budget ``limit`` (see
    :func:`~robustcore.datasets._limits.read_stream`); a damaged archive becomes a LoadError."""
    kind = (compression_of(path) or "").lstrip(".")
    with open_maybe_compressed(path) as fh:
        return read_stream(fh, limit, f"reading {path.name}" + (f" ({kind}-compressed)" if kind else ""),
                           cost=cost, errors=DECOMPRESS_ERRORS)


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def physical_lines(text: str):
    """The lines of ``text`` one at a time, with their line ends (``\\n``, ``\\r\\n`` or ``\\r``),
    as ``io.StringIO(text, newline="")`` gives them but without its four-bytes-per-character copy."""
    return (m.group() for m in _LINE.finditer(text))


def read_head(path: Path, n: int = 4096) -> bytes:
    """First ``n`` decompressed bytes (empty on a damaged archive: sniffing must not raise)."""
    with open_maybe_compressed(path) as fh:
        try:
            return fh.read(n)
        except DECOMPRESS_ERRORS:
            return b""


def folder_sha256(files: list[Path], root: Path) -> tuple[str, int]:
    """Hash over the sorted relative names and contents of a folder's files (and their total size)."""
    h = hashlib.sha256()
    size = 0
    for f in sorted(files, key=lambda f: f.relative_to(root).as_posix()):
        h.update(f.relative_to(root).as_posix().encode("utf-8", "surrogateescape") + b"\0")
        fh_hash = file_sha256(f)
        h.update(bytes.fromhex(fh_hash))
        size += f.stat().st_size
    return h.hexdigest(), size


def handle_missing(X: np.ndarray, mode: str, where, column) -> tuple[np.ndarray, np.ndarray]:
    """Apply the ``missing`` option to the non-finite entries of ``X``.

    ``where(i, j)`` describes entry (i, j) for messages (e.g. "line 7, column 'b'") and
    ``column(j)`` names column j. Returns the cleaned array and the boolean mask of rows kept.
    """
    bad = ~np.isfinite(X)
    keep = np.ones(X.shape[0], dtype=bool)
    if not bad.any():
        return X, keep
    count = int(bad.sum())
    i, j = (int(v) for v in np.argwhere(bad)[0])
    if mode == "error":
        raise LoadError(f"{count} missing or non-finite value(s), the first at {where(i, j)}; pass "
                        f"missing='drop' to drop the rows that have one, or missing='median' to replace "
                        f"each by its column's median")
    if mode == "drop":
        keep = ~bad.any(axis=1)
        if not keep.any():
            raise LoadError(f"every row has a missing or non-finite value (the first at {where(i, j)}), "
                            f"so missing='drop' leaves nothing; try missing='median'")
        return X[keep], keep
    X = X.copy()
    for col in np.flatnonzero(bad.any(axis=0)):
        good = ~bad[:, col]
        if not good.any():
            raise LoadError(f"column {column(int(col))} has no finite value, so missing='median' cannot "
                            f"impute it; remove that column")
        X[~good, col] = np.median(X[good, col])
    return X, keep


def parse_labels(values: list[str] | np.ndarray) -> np.ndarray:
    """Labels read as text become integers or floats when they all are, else stay strings."""
    arr = np.asarray(values)
    if arr.dtype.kind in "iufb":
        if arr.dtype.kind == "f" and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)) \
                and (arr.size == 0 or np.abs(arr).max() < 2 ** 53):
            return arr.astype(np.int64)
        return arr
    strs = [str(v).strip() for v in arr.tolist()]
    try:
        ints = [int(s) for s in strs]
        return np.array(ints, dtype=np.int64)
    except (ValueError, OverflowError):
        pass
    try:
        floats = np.array([float(s) for s in strs])
    except ValueError:
        return np.array(strs, dtype=str)
    if np.all(np.isfinite(floats)):
        return parse_labels(floats)
    return np.array(strs, dtype=str)


IMAGE_SHAPE_OPTION = Param("image_shape", str, None,
                           "each row is an image of this many pixels, 'HEIGHTxWIDTH' (e.g. 28x28)",
                           allow_none=True, none_label="not images", advanced=True)


def parse_image_shape(text: str | None, d: int) -> tuple[int, int] | None:
    """'HxW' -> (h, w), checked against the number of features ``d``."""
    if text is None:
        return None
    parts = text.lower().replace("*", "x").replace(",", "x").split("x")
    try:
        h, w = (int(v) for v in parts)
    except ValueError:
        raise LoadError(f"image_shape must be 'HEIGHTxWIDTH' such as '28x28'; got {text!r}") from None
    if h < 1 or w < 1 or h * w != d:
        raise LoadError(f"image_shape={text!r} needs {h * w} pixels per row but the data has {d} features; "
                        f"give a shape whose height x width is {d}")
    return h, w


class Loader:
    """One file format. Subclasses declare ``name``, ``label``, ``patterns`` and ``options``.

    ``load(path, **options)`` validates the options against the declaration (unknown names and
    bad values are :class:`LoadError`), checks the memory estimate against ``max_bytes`` and
    returns a :class:`Dataset` with its provenance filled in.
    """

    name: ClassVar[str] = ""
    label: ClassVar[str] = ""
    patterns: ClassVar[tuple[str, ...]] = ()
    options: ClassVar[tuple[Param, ...]] = ()

    @property
    def extensions(self) -> tuple[str, ...]:
        """File name endings this loader claims, e.g. (".csv", ".csv.gz")."""
        return tuple(p[1:] for p in self.patterns if p.startswith("*."))

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}: {self.label}>"

    # -- to be provided by each format ---------------------------------------------------------
    def sniff(self, head: bytes, path: Path) -> bool:
        """True when the first decompressed bytes look like this format."""
        return False

    def _prepare(self, path: Path, opts: dict):
        """Whatever both the estimate and the load need (text formats: the decompressed bytes)."""
        return None

    def _estimate(self, path: Path, opts: dict, ctx) -> Cost | int:
        """Peak bytes of the load (a :class:`Cost` also names the samples and features implied)."""
        raise NotImplementedError

    def _load(self, path: Path, opts: dict, ctx) -> Dataset:
        raise NotImplementedError

    # -- shared --------------------------------------------------------------------------------
    def validate(self, options: dict) -> dict:
        # Integer column indices become text; one so long it cannot be an index is left to fail below.
        options = {k: (str(v) if k in self._int_or_name and isinstance(v, (int, np.integer))
                       and not isinstance(v, bool) and abs(int(v)) < 2 ** 63 else v) for k, v in options.items()}
        for k, table in self._aliases.items():
            if isinstance(options.get(k), str) and options[k] in table:
                options[k] = table[options[k]]
        known = {p.name for p in self.options}
        unknown = [k for k in options if k not in known]
        if unknown:
            raise LoadError(f"unknown option {unknown[0]!r} for the {self.label} loader; its options are: "
                            f"{', '.join(sorted(known))}")
        try:
            return validate_params(self.options, options)
        except LoadError:
            raise
        except ValueError as exc:
            raise LoadError(f"{exc} (an option of the {self.label} loader)") from None
        except (OverflowError, TypeError) as exc:  # e.g. 10**400 for an int option
            bad = next((p for p in self.options if p.name in options and _overflows(p, options[p.name])), None)
            what = param_message(bad.name, bad.allowed(), None, got="a value out of range") if bad else str(exc)
            raise LoadError(f"{what} (an option of the {self.label} loader)") from None

    # Options that name another file (read beside the data file); a session may give only a bare name.
    path_options: ClassVar[tuple[str, ...]] = ()
    # Options that take a column/variable given either by name or by integer index.
    _int_or_name: ClassVar[frozenset] = frozenset()
    # Other spellings accepted for choice options: option -> {alias: declared choice}.
    _aliases: ClassVar[dict] = {}

    def _check_path(self, path) -> Path:
        p = regular_file(path, allow_dir=True)
        if p.is_dir():
            raise LoadError(f"{p} is a folder; the {self.label} loader reads a single file "
                            f"(open a folder of images with the 'images' loader)")
        if p.stat().st_size == 0:
            raise LoadError(f"{p} is empty (0 bytes); nothing to load")
        return p.resolve()

    def estimate_memory(self, path, **options) -> int:
        """Bytes the loaded ``X`` (float64, or CSR arrays) will take, read from headers or a scan."""
        p = self._check_path(path)
        opts = self.validate(options)
        cost = self._estimate(p, opts, self._prepare(p, opts))
        return int(cost.nbytes if isinstance(cost, Cost) else cost)

    def load(self, path, **options) -> Dataset:
        p = self._check_path(path)
        opts = self.validate(options)
        ctx = self._prepare(p, opts)
        charge(self._estimate(p, opts, ctx), opts, f"loading {p.name}", "load a subset of the data",
               out_of_core=p.suffix.lower() in OUT_OF_CORE_SUFFIXES)
        ds = self._load(p, opts, ctx)
        if ds.n_samples == 0 or ds.n_features == 0:
            raise LoadError(f"{p.name} holds {ds.n_samples} sample(s) of {ds.n_features} feature(s); "
                            f"there is nothing to analyse")
        if opts.get("outlier_label") is not None:
            if ds.labels is None:
                raise LoadError(f"outlier_label={opts['outlier_label']!r} was given but {p.name} has no "
                                f"labels; choose the labels first (see this loader's options)")
            ds.outliers = np.array([str(v) == opts["outlier_label"] for v in ds.labels.tolist()], dtype=bool)
            ds.outliers_from = f"label = {opts['outlier_label']}"
            if not ds.outliers.any():
                values = ", ".join(str(c) for c in (ds.class_names or [])[:10])
                ds.warnings.append(f"outlier_label={opts['outlier_label']!r} matches no label (the labels are: "
                                   f"{values}); no sample is marked as a known outlier")
        ds.name = ds.name if ds.name != "data" else _stem(p)
        ds.provenance = self._provenance(p, opts)
        return ds

    def _provenance(self, p: Path, opts: dict) -> Provenance:
        return Provenance(loader=self.name, options=_jsonable(opts), path=str(p), size=p.stat().st_size,
                          sha256=file_sha256(p))


def _overflows(p: Param, value) -> bool:
    try:
        p.validate(value)
    except (OverflowError, TypeError):
        return True
    except ValueError:
        return False
    return False


def _stem(p: Path) -> str:
    name = p.name
    for suf in COMPRESSED:
        if name.lower().endswith(suf):
            name = name[: -len(suf)]
    return Path(name).stem or name


def _jsonable(opts: dict) -> dict:
    out = {}
    for k, v in opts.items():
        if isinstance(v, (np.integer,)):
            v = int(v)
        elif isinstance(v, (np.floating,)):
            v = float(v)
        elif isinstance(v, tuple):
            v = list(v)
        out[k] = v
    return out
