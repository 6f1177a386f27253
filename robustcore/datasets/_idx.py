"""IDX files (MNIST style), raw or gzipped, with the labels file beside them when present."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from .._params import Param
from ._dataset import Dataset
from ._errors import LoadError
from ._limits import LIMIT_OPTIONS, Cost, check_memory, numbered, read_stream, regular_file
from ._loader import DECOMPRESS_ERRORS, OUTLIER_LABEL, Loader, open_maybe_compressed

__all__ = ["IdxLoader", "read_idx"]

# IDX type byte -> big-endian dtype.
_TYPES = {0x08: np.dtype("u1"), 0x09: np.dtype("i1"), 0x0B: np.dtype(">i2"), 0x0C: np.dtype(">i4"),
          0x0D: np.dtype(">f4"), 0x0E: np.dtype(">f8")}


def _parse_header(head: bytes, name: str) -> tuple[np.dtype, tuple[int, ...], int]:
    if len(head) < 4 or head[0] != 0 or head[1] != 0 or head[2] not in _TYPES or head[3] == 0:
        raise LoadError(f"{name} is not an IDX file (bad magic number {head[:4].hex() or 'missing'}); "
                        f"IDX files start with 00 00, a type byte (08, 09, 0B, 0C, 0D or 0E) and the "
                        f"number of dimensions")
    ndim = head[3]
    end = 4 + 4 * ndim
    if len(head) < end:
        raise LoadError(f"{name} is truncated: its header announces {ndim} dimensions but ends after "
                        f"{len(head)} bytes")
    dims = tuple(int.from_bytes(head[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim))
    return _TYPES[head[2]], dims, end


def read_idx(path: Path, limit: int) -> np.ndarray:
    """The array stored in an IDX file (raw or .gz/.bz2/.xz); truncation is a LoadError."""
    with open_maybe_compressed(path) as fh:
        try:
            head = fh.read(4 + 4 * 255)
        except DECOMPRESS_ERRORS as exc:
            raise LoadError(f"{path.name}: the compressed data is truncated or corrupted ({exc})") from None
    dtype, dims, offset = _parse_header(head, path.name)
    expected = int(np.prod(dims, dtype=np.float64)) * dtype.itemsize
    check_memory(expected, limit, f"reading {path.name}")
    def too_long(n):
        raise LoadError(f"{path.name} has more bytes than its header's shape {dims} "
                        f"announces; it is damaged or not an IDX file")
    with open_maybe_compressed(path) as fh:
        raw, _ = read_stream(fh, offset + expected, path.name, errors=DECOMPRESS_ERRORS, over=too_long)
    body = len(raw) - offset
    if body < expected:
        raise LoadError(f"{path.name} is truncated: its header announces shape {dims} ({expected} bytes of "
                        f"data) but only {max(body, 0)} bytes follow; copy the file again")
    if body > expected:
        raise LoadError(f"{path.name} has more bytes than its header's shape {dims} "
                        f"announces; it is damaged or not an IDX file")
    return np.frombuffer(raw, dtype=dtype, offset=offset).reshape(dims)


def _labels_path(path: Path) -> Path | None:
    name = path.name
    for pat, rep in ((r"images-idx(\d)-ubyte", "labels-idx1-ubyte"), (r"images", "labels")):
        if re.search(pat, name):
            base = re.sub(pat, rep, name, count=1)
            stem = base
            for suf in (".gz", ".bz2", ".xz"):
                if stem.endswith(suf):
                    stem = stem[: -len(suf)]
            for cand in (base, stem, stem + ".gz"):
                p = path.with_name(cand)
                if p.is_file() and p != path:
                    return p
    return None


class IdxLoader(Loader):
    """An IDX array: 3-D files are image stacks (``image_shape`` set), 2-D files are tables.

    The labels come from ``labels_file``, or by default from the file named like the images
    file with ``images-idx3`` replaced by ``labels-idx1`` in the same folder (raw or gzipped).
    """

    name = "idx"
    label = "IDX (MNIST)"
    patterns = ("*-ubyte", "*-ubyte.gz", "*.idx", "*.idx.gz", "*.idx3", "*.idx3.gz")
    options = (
        Param("labels_file", str, None, "path of the labels IDX file, or 'none'", allow_none=True,
              none_label="the matching *-labels-idx1-ubyte file beside it, if any"),
        Param("max_samples", int, None, "load only the first this many samples", low=1,
              allow_none=True, none_label="all"),
        OUTLIER_LABEL,
        *LIMIT_OPTIONS,
    )
    path_options = ("labels_file",)

    def sniff(self, head: bytes, path: Path) -> bool:
        return len(head) >= 8 and head[0] == 0 and head[1] == 0 and head[2] in _TYPES and 1 <= head[3] <= 8

    def _estimate(self, path: Path, opts: dict, ctx) -> int:
        with open_maybe_compressed(path) as fh:
            try:
                head = fh.read(4 + 4 * 255)
            except DECOMPRESS_ERRORS as exc:
                raise LoadError(f"{path.name}: the compressed data is truncated or corrupted ({exc})") from None
        dtype, dims, _ = _parse_header(head, path.name)
        n = dims[0] if opts["max_samples"] is None else min(dims[0], opts["max_samples"])
        per = int(np.prod(dims[1:], dtype=np.float64)) if len(dims) > 1 else 1
        # The raw array and its float64 copy exist together for a moment.
        return Cost(int(dims[0] * per * dtype.itemsize + n * per * 8), samples=dims[0],
                    features=per if len(dims) > 1 else None)

    def _load(self, path: Path, opts: dict, ctx) -> Dataset:
        arr = read_idx(path, opts["max_bytes"])
        if arr.ndim == 1:
            raise LoadError(f"{path.name} holds a 1-D array of {arr.shape[0]} values, which looks like a "
                            f"labels file; open the images file instead (its labels are found beside it)")
        n_all = arr.shape[0]
        if n_all == 0 or arr[0].size == 0:
            raise LoadError(f"{path.name} has shape {arr.shape}: no samples or no features")
        n = n_all if opts["max_samples"] is None else min(n_all, opts["max_samples"])
        image_shape = tuple(arr.shape[1:]) if arr.ndim == 3 else None
        X = arr[:n].reshape(n, -1).astype(np.float64)
        if not np.all(np.isfinite(X)):
            i, j = np.argwhere(~np.isfinite(X))[0]
            raise LoadError(f"{path.name} holds a non-finite value at sample {i}, feature {j}")
        labels = None
        spec = opts["labels_file"]
        if spec is None:
            lp = _labels_path(path)
            # Beside the images: record the bare name, so a moved folder still reloads.
            opts["labels_file"] = lp.name if lp else "none"
        elif spec.lower() == "none":
            lp = None
        else:
            lp = Path(spec)
            if not lp.is_absolute():
                lp = path.parent / lp
            if not lp.exists():
                raise LoadError(f"labels_file {spec!r} does not exist (looked for {lp})")
            regular_file(lp, f"labels_file {spec!r} ({lp})")
        if lp is not None:
            y = read_idx(lp, opts["max_bytes"])
            if y.ndim != 1:
                raise LoadError(f"labels file {lp.name} has shape {y.shape}; a labels file is 1-D")
            if y.shape[0] != n_all:
                raise LoadError(f"labels file {lp.name} has {y.shape[0]} labels but {path.name} has {n_all} "
                                f"samples; pass the matching labels_file, or labels_file='none'")
            labels = y[:n].astype(np.int64) if y.dtype.kind in "iu" else y[:n].astype(np.float64)
        return Dataset(X=X, labels=labels, image_shape=image_shape,
                       feature_names=numbered("p", X.shape[1]) if image_shape else None)
