"""NumPy ``.npy`` and ``.npz`` files (never unpickled)."""
from __future__ import annotations

import warnings
import zipfile
from pathlib import Path

import numpy as np

from .._params import Param
from ._arrays import known_outliers, pick_arrays
from ._dataset import Dataset
from ._errors import LoadError, listing
from ._limits import LIMIT_OPTIONS, Cost, numbered
from ._npz import npy_header, npy_members
from ._loader import (IMAGE_SHAPE_OPTION, KNOWN_OUTLIERS, MISSING_OPTION, OUTLIER_LABEL, Loader, handle_missing,
                      parse_image_shape, parse_labels)

__all__ = ["NumpyLoader"]

_NPY_MAGIC = b"\x93NUMPY"
_ZIP_MAGIC = b"PK\x03\x04"


class NumpyLoader(Loader):
    """A 2-D array (samples x features), or a 3-D stack of images (samples x height x width,
    flattened row-major, ``image_shape`` set). In an NPZ, ``array`` picks the data and
    ``labels_array`` the labels; object arrays are refused rather than unpickled.
    """

    name = "npy"
    label = "NumPy"
    patterns = ("*.npy", "*.npz")
    options = (
        Param("array", str, None, "name of the data array inside an .npz", allow_none=True,
              none_label="X, data, or the only array"),
        Param("labels_array", str, None, "name of the labels array inside an .npz, or 'none'",
              allow_none=True, none_label="y or labels if present"),
        MISSING_OPTION,
        IMAGE_SHAPE_OPTION,
        KNOWN_OUTLIERS,
        OUTLIER_LABEL,
        *LIMIT_OPTIONS,
    )

    def sniff(self, head: bytes, path: Path) -> bool:
        return head.startswith(_NPY_MAGIC) or (head.startswith(_ZIP_MAGIC) and path.suffix.lower() == ".npz")

    # -- reading -----------------------------------------------------------------------------------
    def _members(self, path: Path) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
        """Name -> (shape, dtype) of each array in an .npz, read from headers only."""
        out = {}
        try:
            with zipfile.ZipFile(path) as zf:
                for info in npy_members(zf, path.name):
                    with zf.open(info) as fh:
                        out[info.filename[:-4]] = npy_header(fh)
        except LoadError:
            raise
        except Exception as exc:  # noqa: BLE001 - zipfile and numpy's header parser raise many types
            raise LoadError(f"{path.name} is not a readable .npz archive ({exc}); it may be truncated or "
                            f"not a NumPy file") from None
        if not out:
            raise LoadError(f"{path.name} holds no arrays (an .npz is a zip of .npy files)")
        return out

    def _is_npz(self, path: Path) -> bool:
        with open(path, "rb") as fh:
            return fh.read(4) == _ZIP_MAGIC

    def _pick(self, path: Path, members: dict, opts: dict):
        shapes = {k: v[0] for k, v in members.items()}
        return pick_arrays(path.name, shapes, data=opts["array"], labels=opts["labels_array"],
                           options=("array", "labels_array"),
                           listing=listing([f"{k} {shapes[k]}" for k in shapes]),
                           data_ok=lambda k: len(shapes[k]) >= 2, labels_ok=lambda k: True,
                           samples=lambda shape: shape[0] if shape else -1)

    def _estimate(self, path: Path, opts: dict, ctx) -> Cost:
        if self._is_npz(path):
            members = self._members(path)
            choice = self._pick(path, members, opts)
            arrays = [members[choice.data]] + ([members[choice.labels]] if choice.labels else [])
        else:
            try:
                with open(path, "rb") as fh:
                    arrays = [npy_header(fh)]
            except Exception as exc:  # noqa: BLE001 - numpy's header parser raises many types
                raise LoadError(f"{path.name} is not a readable .npy file ({exc})") from None
        # The array as stored and its float64 copy exist together for a moment.
        nbytes = sum(np.prod(shape, dtype=np.float64) * (dtype.itemsize + 8) for shape, dtype in arrays)
        shape = arrays[0][0]
        return Cost(int(nbytes), samples=shape[0] if shape else None,
                    features=int(np.prod(shape[1:], dtype=np.float64)) if len(shape) > 1 else None)

    def _read(self, path: Path, name: str | None):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # deprecated dtype aliases in damaged headers
                if name is None:
                    return np.load(path, allow_pickle=False)
                with np.load(path, allow_pickle=False) as z:
                    return z[name]
        except ValueError as exc:
            if "pickle" in str(exc):
                raise LoadError(f"{path.name}{f' array {name!r}' if name else ''} holds Python objects, which "
                                f"are never unpickled (unsafe); save plain numeric arrays instead") from None
            raise LoadError(f"{path.name} is damaged or not a NumPy array file ({exc})") from None
        except MemoryError:
            raise
        except Exception as exc:  # noqa: BLE001 - zipfile, zlib and numpy's header parser raise many types
            raise LoadError(f"{path.name} is damaged or truncated ({type(exc).__name__}: {exc})") from None

    def _load(self, path: Path, opts: dict, ctx) -> Dataset:
        yname, warnings = None, []
        if self._is_npz(path):
            members = self._members(path)
            choice = self._pick(path, members, opts)
            xname, yname, warnings = choice.data, choice.labels, choice.warnings
            opts["array"], opts["labels_array"] = xname, yname or "none"
            arr = self._read(path, xname)
        else:
            if opts["array"] is not None or opts["labels_array"] not in (None, "none"):
                raise LoadError(f"{path.name} is a single-array .npy file; the array and labels_array "
                                f"options apply to .npz archives only")
            xname = "array"
            arr = self._read(path, None)
        if not isinstance(arr, np.ndarray):
            raise LoadError(f"{path.name} did not hold an array")
        if arr.dtype.kind not in "biuf":
            raise LoadError(f"{path.name} ({xname}) has dtype {arr.dtype}; the data must be numeric "
                            f"(bool, integer or float)")
        image_shape = None
        if arr.ndim == 0 or arr.ndim == 1:
            raise LoadError(f"{path.name} ({xname}) is {arr.ndim}-D with shape {arr.shape}; the data must "
                            f"be 2-D (samples x features) or 3-D (images); reshape it before saving, e.g. "
                            f"x.reshape(-1, 1) for one feature")
        if arr.ndim == 3:
            image_shape = arr.shape[1:]
            if opts["image_shape"] is not None:
                raise LoadError(f"{path.name} ({xname}) is already a 3-D image stack of {image_shape[0]}x"
                                f"{image_shape[1]} images; leave image_shape unset")
        elif arr.ndim == 2:
            image_shape = parse_image_shape(opts["image_shape"], arr.shape[1])
        if arr.ndim >= 3:
            arr = arr.reshape(arr.shape[0], -1)
        if arr.shape[0] == 0 or arr.shape[1] == 0:
            raise LoadError(f"{path.name} ({xname}) has shape {arr.shape}: no samples or no features")
        X = arr.astype(np.float64)
        X, keep = handle_missing(X, opts["missing"], lambda i, j: f"row {i}, column {j}", str)
        labels = outliers = outliers_from = None
        if yname is not None:
            y = self._read(path, yname).reshape(-1)
            if y.shape[0] != arr.shape[0]:
                raise LoadError(f"labels array {yname!r} has {y.shape[0]} entries but {xname!r} has "
                                f"{arr.shape[0]} samples; choose another with labels_array= or 'none'")
            if y.dtype.kind not in "biufUS":
                raise LoadError(f"labels array {yname!r} has dtype {y.dtype}; labels must be numbers or text")
            if y.dtype.kind == "S":
                y = y.astype(str)
            labels = parse_labels(y[keep])
            found = known_outliers(labels, yname) if opts["known_outliers"] else None
            if found is not None:
                outliers, outliers_from = found
        ids = None if keep.all() else [str(i) for i in np.flatnonzero(keep)]
        return Dataset(X=X, labels=labels, sample_ids=ids, image_shape=image_shape,
                       feature_names=numbered("p", X.shape[1]) if image_shape else None,
                       outliers=outliers, outliers_from=outliers_from, warnings=warnings)
