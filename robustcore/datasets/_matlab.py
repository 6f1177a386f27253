"""MATLAB ``.mat`` files up to version 7 (scipy.io); version 7.3 (HDF5) gets a clear refusal."""
from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import scipy.io as sio
import scipy.sparse as sp

from .._params import Param
from ._arrays import known_outliers, pick_arrays
from ._dataset import Dataset
from ._errors import LoadError, listing
from ._limits import LIMIT_OPTIONS, Cost, check_memory
from ._loader import (KNOWN_OUTLIERS, MISSING_OPTION, OUTLIER_LABEL, Loader, handle_missing, parse_image_shape,
                      parse_labels)
from ._matv5 import check_mat5

__all__ = ["MatLoader"]

# Bytes per element of each MATLAB class as scipy returns it (logical and char included).
_ITEMSIZE = {"double": 8, "single": 4, "int8": 1, "uint8": 1, "int16": 2, "uint16": 2, "int32": 4, "uint32": 4,
             "int64": 8, "uint64": 8, "logical": 1, "char": 4}
_NOT_DATA = ("struct", "cell", "char", "object", "function_handle", "logical_sparse")


class MatLoader(Loader):
    """Variables of a MATLAB file: ``variable`` is the data (samples in rows, or in columns with
    ``transpose=True``), ``labels_variable`` the labels. Sparse variables stay sparse. A 3-D
    variable is read as MATLAB's height x width x frames image stack, one frame per row.
    """

    name = "mat"
    label = "MATLAB"
    patterns = ("*.mat",)
    options = (
        Param("variable", str, None, "name of the data variable", allow_none=True,
              none_label="X, data, or the only 2-D numeric variable"),
        Param("labels_variable", str, None, "name of the labels variable, or 'none'", allow_none=True,
              none_label="y or labels if present"),
        Param("transpose", bool, False, "the data holds one sample per column (as in many MATLAB "
              "codes): transpose it"),
        MISSING_OPTION,
        Param("image_shape", str, None, "each sample is a MATLAB image of this size, 'HEIGHTxWIDTH' "
              "as size(frame) reports (pixels stored column by column, as MATLAB does)",
              allow_none=True, none_label="not images", advanced=True),
        KNOWN_OUTLIERS,
        OUTLIER_LABEL,
        *LIMIT_OPTIONS,
    )

    def sniff(self, head: bytes, path: Path) -> bool:
        return head[:6] == b"MATLAB"

    @staticmethod
    def _check_version(path: Path) -> None:
        with open(path, "rb") as fh:
            head = fh.read(128)
        if head[:10] == b"MATLAB 7.3" or (len(head) >= 128 and head[:6] == b"MATLAB" and b"HDF" in head[:116]):
            raise LoadError(f"{path.name} is a MATLAB v7.3 (HDF5) file, which this program cannot read; "
                            f"in MATLAB re-save it with save('{path.name}', '-v7'), or export the data to "
                            f".npz or .csv")
        with open(path, "rb") as fh:
            if fh.read(8) == b"\x89HDF\r\n\x1a\n":
                raise LoadError(f"{path.name} is an HDF5 file (like MATLAB v7.3), which this program cannot "
                                f"read; export the data to .npz, .csv or a MATLAB -v7 file")

    def _prepare(self, path: Path, opts: dict) -> dict:
        self._check_version(path)
        check_memory(path.stat().st_size, opts["max_bytes"], f"reading {path.name}")
        return check_mat5(path.read_bytes(), path.name, opts["max_bytes"])

    def _variables(self, path: Path) -> dict[str, tuple[tuple[int, ...], str]]:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                info = sio.whosmat(path)
        except Exception as exc:  # noqa: BLE001 - scipy raises many types for damaged files
            raise LoadError(f"{path.name} is not a readable MATLAB file ({type(exc).__name__}: {exc}); "
                            f"it may be truncated or damaged") from None
        return {name: (tuple(shape), cls) for name, shape, cls in info}

    def _pick(self, path: Path, variables: dict, opts: dict):
        shapes = {k: v[0] for k, v in variables.items()}

        def samples(shape):
            return (shape[1] if opts["transpose"] else shape[0]) if len(shape) == 2 else -1
        return pick_arrays(path.name, shapes, data=opts["variable"], labels=opts["labels_variable"],
                           options=("variable", "labels_variable"),
                           listing=listing([f"{k} {'x'.join(map(str, v[0]))} {v[1]}" for k, v in variables.items()],
                                           empty="nothing"),
                           data_ok=lambda k: variables[k][1] not in _NOT_DATA, labels_ok=lambda k: True,
                           samples=samples, transposed_hint=True)

    def _estimate(self, path: Path, opts: dict, sizes: dict) -> Cost:
        variables = self._variables(path)
        choice = self._pick(path, variables, opts)
        nbytes = 0
        for name in filter(None, (choice.data, choice.labels)):
            shape, cls = variables[name]
            if cls == "sparse":
                # As stored (its inflated size, from the structural check) and as CSR float64.
                nbytes += 2 * sizes.get(name, 0) + 8 * (shape[0] + 1)
            else:  # as read, and its float64 copy
                nbytes += np.prod(shape, dtype=np.float64) * (_ITEMSIZE.get(cls, 8) + 8)
        shape = variables[choice.data][0]
        if len(shape) == 3 and not opts["transpose"]:
            n, d = shape[2], shape[0] * shape[1]
        elif len(shape) == 2:
            n, d = (shape[1], shape[0]) if opts["transpose"] else shape
        else:
            n = d = None
        return Cost(int(nbytes), samples=n, features=d)

    def _load(self, path: Path, opts: dict, ctx) -> Dataset:
        variables = self._variables(path)
        choice = self._pick(path, variables, opts)
        xname, yname = choice.data, choice.labels
        opts["variable"], opts["labels_variable"] = xname, yname or "none"
        names = [xname] + ([yname] if yname else [])
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                m = sio.loadmat(path, variable_names=names, squeeze_me=False, struct_as_record=True)
        except Exception as exc:  # noqa: BLE001 - scipy raises many types for damaged files
            raise LoadError(f"{path.name} could not be read ({type(exc).__name__}: {exc}); it may be "
                            f"truncated or damaged") from None
        if xname not in m:
            raise LoadError(f"{path.name}: variable {xname!r} could not be read")
        X = m[xname]
        stack_shape = None
        if sp.issparse(X):
            if X.dtype.kind not in "biuf":
                raise LoadError(f"variable {xname!r} in {path.name} is a sparse {X.dtype} matrix; the data must "
                                f"be real numbers (complex values are not supported)")
            X = sp.csr_matrix(X, dtype=np.float64)
            if opts["transpose"]:
                X = X.T.tocsr()
        else:
            X = np.asarray(X)
            if X.dtype.kind not in "biuf":
                raise LoadError(f"variable {xname!r} in {path.name} is of type {X.dtype} ({variables[xname][1]}); "
                                f"the data must be a real numeric matrix")
            stack_shape = None
            if X.ndim == 3 and not opts["transpose"] and opts["image_shape"] is None:
                # MATLAB keeps a video or image stack as height x width x frames.
                stack_shape = X.shape[:2]
                X = X.transpose(2, 0, 1).reshape(X.shape[2], -1)
            if X.ndim != 2:
                raise LoadError(f"variable {xname!r} in {path.name} has shape {X.shape}; the data must be a "
                                f"2-D matrix or a height x width x frames stack")
            if opts["transpose"]:
                X = X.T
            X = X.astype(np.float64)
        n = X.shape[0]
        if n == 0 or X.shape[1] == 0:
            raise LoadError(f"variable {xname!r} in {path.name} has shape {X.shape}: no samples or features")
        keep = np.ones(n, dtype=bool)
        if sp.issparse(X):
            if not np.all(np.isfinite(X.data)):
                raise LoadError(f"sparse variable {xname!r} in {path.name} holds NaN or infinite values; "
                                f"clean them before saving")
        else:
            X, keep = handle_missing(X, opts["missing"], lambda i, j: f"row {i + 1}, column {j + 1}",
                                     lambda j: str(j + 1))
        labels = outliers = outliers_from = None
        if yname:
            y = m[yname]
            if sp.issparse(y):
                y = y.toarray()
            y = np.asarray(y)
            if y.dtype.kind == "U" and y.ndim == 2 and y.shape[0] == n:
                y = np.array(["".join(r).strip() for r in y])  # char matrix: one label per row
            elif y.dtype.kind == "O" and y.size == n:
                try:
                    y = np.array([str(np.asarray(v).squeeze()) for v in y.ravel()])  # cellstr
                except Exception:  # noqa: BLE001
                    raise LoadError(f"labels variable {yname!r} could not be read as text or numbers") from None
            y = y.reshape(-1)
            if y.shape[0] != n:
                hint = "; if samples are in columns pass transpose=True" if y.shape[0] == X.shape[1] else ""
                raise LoadError(f"labels variable {yname!r} has {y.shape[0]} entries but the data has {n} "
                                f"samples{hint}")
            if y.dtype.kind not in "biufU":
                raise LoadError(f"labels variable {yname!r} has type {y.dtype}; labels must be numbers or text")
            labels = parse_labels(y[keep])
            found = known_outliers(labels, yname) if opts["known_outliers"] else None
            if found is not None:
                outliers, outliers_from = found
        ids = None if keep.all() else [str(i) for i in np.flatnonzero(keep)]
        image_shape = parse_image_shape(opts["image_shape"], X.shape[1])
        if not sp.issparse(X) and stack_shape is not None:
            image_shape = stack_shape
        elif image_shape is not None:
            if sp.issparse(X):
                raise LoadError(f"variable {xname!r} is sparse; image_shape applies to dense image data")
            h, w = image_shape
            # MATLAB flattens an h x w image column by column; rows here are row-major images.
            X = np.ascontiguousarray(X.reshape(-1, w, h).transpose(0, 2, 1).reshape(X.shape[0], -1))
        return Dataset(X=X, labels=labels, sample_ids=ids, image_shape=image_shape, outliers=outliers,
                       outliers_from=outliers_from, warnings=choice.warnings)
