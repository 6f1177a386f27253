"""Writing results to disk: per-sample CSV, arrays as NPZ, feature scores as CSV.

Every file carries where it came from (method, parameters, data provenance, library versions):
as ``#`` comment lines at the top of a CSV, as a JSON string entry ``metadata`` in an NPZ.
Writes are atomic (a temporary file in the target directory, then ``os.replace``) so a crash or
a full disk never leaves a half-written file under the final name, and an existing file is
refused unless the caller says ``overwrite=True`` (the window asks the user first). The files of
one result written into a folder are one set that says so while it is incomplete, and no
temporary file outlives its write (:mod:`app.writing`).
"""
from __future__ import annotations

import contextlib
import csv
import errno
import io
import json
import os
import zipfile
import zlib
from importlib import metadata as _md

import numpy as np

from .writing import forget_temp, new_temp, writing_set

__all__ = ["atomic_write_bytes", "atomic_write_text", "provenance_header", "export_results",
           "write_samples_csv", "write_arrays_npz", "write_features_csv", "planned_files",
           "library_versions", "npz_bytes"]


# -- atomic writes ------------------------------------------------------------------------------

def _umask() -> int:
    # os.umask can only be read by setting it; put it straight back.
    m = os.umask(0)
    os.umask(m)
    return m


def _target_error(exc: OSError, path: str) -> OSError:
    """The same kind of OSError, naming the file the user asked for rather than the hidden
    temporary, and saying what to do when the disk is full."""
    why = {errno.ENOSPC: "the disk is full", errno.EDQUOT: "the disk quota is exceeded",
           errno.EFBIG: "the file is too large for this file system"}.get(exc.errno)
    if why:
        message = (f"{why}: {path} was not written (nothing was changed); free some space or choose a "
                   f"folder on another disk, then export again")
    else:
        message = f"{path} could not be written: {exc.strerror or exc} (nothing was changed)"
    err = OSError(exc.errno, message, path)  # OSError() picks the subclass (PermissionError...)
    err.__cause__ = exc
    return err


def atomic_write_bytes(path, data: bytes, overwrite: bool = True) -> str:
    """Write ``data`` to ``path`` through a temporary file in the same directory and a rename.

    With ``overwrite=False`` an existing ``path`` raises ``FileExistsError`` and nothing is written.
    A failure (no permission, disk full...) raises an ``OSError`` whose message and ``filename``
    name ``path`` itself, never the hidden temporary, and leaves no temporary behind.
    Returns the path written.
    """
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    if not overwrite and os.path.exists(path):
        raise FileExistsError(f"{path} already exists; choose another name or allow overwriting")
    try:
        fd, tmp = new_temp(directory, suffix=".tmp")
    except OSError as exc:
        raise _target_error(exc, path) from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        # mkstemp creates the file private (0600); give it the permissions a plain open() would.
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError) and not isinstance(exc, FileExistsError):
            raise _target_error(exc, path) from None
        raise
    finally:
        forget_temp(tmp)
    return path


def atomic_write_text(path, text: str, overwrite: bool = True, encoding: str = "utf-8") -> str:
    """Text version of :func:`atomic_write_bytes` (newlines are written as given)."""
    return atomic_write_bytes(path, text.encode(encoding), overwrite=overwrite)


# -- provenance ---------------------------------------------------------------------------------

# PySide6 from pip is the wheels PySide6 (a shell) or PySide6-Essentials alone, which holds the
# module: its version read from the metadata, without importing Qt (0.05-0.1 s a command)
_DIST_NAMES = {"PySide6": ("PySide6", "PySide6-Essentials")}


def _installed_version(dist: str) -> str:
    for name in _DIST_NAMES.get(dist, (dist,))[:-1]:
        try:
            return _md.version(name)
        except _md.PackageNotFoundError:
            pass
    return _md.version(_DIST_NAMES.get(dist, (dist,))[-1])


def library_versions() -> dict:
    """Versions of this program and of the libraries that shape its numbers and figures."""
    out = {}
    for dist, module in (("robust-subspace-studio", "robustcore"), ("numpy", "numpy"),
                         ("scipy", "scipy"), ("PySide6", "PySide6"), ("pyqtgraph", "pyqtgraph")):
        version = None
        try:
            version = _installed_version(dist)
        except _md.PackageNotFoundError:
            try:
                mod = __import__(module)
                version = getattr(mod, "__version__", None)
            except ImportError:
                version = None
        out[dist] = version
    return out


def _jsonable(v):
    """Parameters and provenance as plain JSON (numpy scalars, tuples, generators described)."""
    if isinstance(v, (str, bool, int, float)) or v is None:
        return v
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, np.ndarray):
        return v.tolist() if v.size <= 64 else f"<array shape {v.shape}>"
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    return repr(v)


def provenance_header(result, dataset) -> dict:
    """What produced a result: method, parameters, seed, data identity and library versions."""
    params = dict(getattr(result, "params", {}) or {})
    prov = dataset.provenance.to_dict() if dataset is not None else {}
    data = {"name": getattr(dataset, "name", None),
            "samples": getattr(dataset, "n_samples", None),
            "features": getattr(dataset, "n_features", None),
            "fingerprint": getattr(result, "data_fingerprint", None),
            "sha256": prov.get("sha256"), "path": prov.get("path"), "demo": prov.get("demo"),
            "loader": prov.get("loader"), "loader_options": prov.get("options")}
    from robustcore.methods import METHOD_SCORE_DIRECTIONS, SCORE_DIRECTIONS
    # Which way each score column runs, so no reader has to guess (scikit-learn's score_samples
    # runs the other way from the SPE written here).
    known = {**SCORE_DIRECTIONS, **METHOD_SCORE_DIRECTIONS.get(result.method, {})}
    directions = {k: known[k] for k in getattr(result, "sample_scores", {}) or {} if k in known}
    header = {"method": result.method, "params": params, "seed": params.get("random_state"),
              "data": data, "versions": library_versions(), "score directions": directions}
    om = getattr(result, "outlier_map", None)
    if om is not None:   # what the map's columns are measured against
        header["outlier map"] = {"SD cut-off": om.sd_cutoff, "OD cut-off": om.od_cutoff,
                                 "regions": dict(om.counts)}
    header["warnings"] = list(getattr(result, "warnings", []) or [])
    return _jsonable(header)


def _comment_block(header: dict) -> str:
    lines = ["# Robust Subspace Studio export"]
    for key, value in header.items():
        lines.append(f"# {key}: {json.dumps(value, ensure_ascii=False, sort_keys=True)}")
    return "\n".join(lines) + "\n"


def _fmt(v) -> str:
    # repr of a Python float is the shortest text that reads back to the same double.
    if isinstance(v, (bool, np.bool_)):
        return "1" if v else "0"
    if isinstance(v, (float, np.floating)):
        return repr(float(v))
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    return str(v)


# -- the three kinds of file --------------------------------------------------------------------

def samples_csv_text(result, dataset) -> str:
    """Per-sample table: index, id, label, known outlier, every score, every flag (0/1)."""
    n = dataset.n_samples
    cols: list[tuple[str, object]] = [("index", np.arange(n)), ("sample_id", dataset.sample_ids)]
    if dataset.labels is not None:
        cols.append(("label", dataset.labels))
    if dataset.outliers is not None:
        cols.append(("known_outlier", dataset.outliers))
    for name, v in result.sample_scores.items():
        cols.append((name, np.asarray(v)))
    for name, v in result.flags.items():
        cols.append((f"flag_{name}", np.asarray(v, dtype=bool)))
    cols += _outlier_map_columns(result)
    for name, col in cols:
        if len(col) != n:
            raise ValueError(f"column {name!r} has {len(col)} values but the data set has {n} samples")
    buf = io.StringIO()
    buf.write(_comment_block(provenance_header(result, dataset)))
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([c for c, _ in cols])
    # a column at a time, as _fmt writes each value (a million rows took 30 s value by value),
    # in blocks of rows so the text of only one block is held as Python strings
    for s0 in range(0, n, 65_536):
        w.writerows(zip(*(_column_text(col[s0:s0 + 65_536]) for _, col in cols)))
    return buf.getvalue()


def _outlier_map_columns(result) -> list[tuple[str, np.ndarray]]:
    """The outlier map's numbers per sample (score and orthogonal distance, region by name), for
    a result that has the map: ROBPCA's are its own diagnostic (its distances in the cut-offs'
    units, not SPE and T² under other names), and were only in the NPZ."""
    from robustcore.outlier_map import REGIONS
    a = result.arrays
    if result.outlier_map is None or any(k not in a for k in ("score_distance", "orthogonal_distance", "map_region")):
        return []
    return [("score_distance", np.asarray(a["score_distance"], dtype=float)),
            ("orthogonal_distance", np.asarray(a["orthogonal_distance"], dtype=float)),
            ("map_region", np.asarray(REGIONS)[np.asarray(a["map_region"], dtype=np.int64)])]


def _column_text(col) -> list[str]:
    """:func:`_fmt` of every value of ``col``, by the column's dtype where it has one."""
    a = np.asarray(col)
    if a.dtype == bool:
        return np.where(a, "1", "0").tolist()
    if a.dtype.kind == "f":
        return list(map(repr, a.tolist()))   # Python floats: the shortest text that reads back
    if a.dtype.kind in "iu":
        return list(map(str, a.tolist()))
    if a.dtype.kind == "U":
        return a.tolist()
    return [_fmt(v) for v in a]


def features_csv_text(result, dataset) -> str:
    """Feature scores (EVSC) sorted by rank: rank, feature index, feature name, scores."""
    if not result.feature_scores:
        raise ValueError(f"result of {result.method!r} has no feature scores to export")
    names = list(result.feature_scores)
    first = np.asarray(result.feature_scores[names[0]], dtype=float)
    ranking = result.arrays.get("ranking")
    order = np.asarray(ranking, dtype=np.int64) if ranking is not None else np.argsort(-first, kind="stable")
    buf = io.StringIO()
    buf.write(_comment_block(provenance_header(result, dataset)))
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["rank", "feature_index", "feature_name", *names])
    for rank, j in enumerate(order, start=1):
        w.writerow([rank, int(j), dataset.feature_names[int(j)],
                    *(_fmt(float(np.asarray(result.feature_scores[k])[j])) for k in names)])
    return buf.getvalue()


def arrays_npz_bytes(result, dataset) -> bytes:
    """All arrays, scores and flags of a result plus a JSON ``metadata`` string, as NPZ bytes.

    Keys: the result's array names as they are; ``score_<name>``, ``flag_<name>``,
    ``feature_<name>`` for per-sample scores, flags and feature scores. Nothing needs pickle.
    """
    out = {}
    for prefix, group in (("", result.all_arrays()), ("score_", result.sample_scores),
                          ("flag_", result.flags), ("feature_", result.feature_scores)):
        for name, v in group.items():
            a = np.asarray(v)
            if a.dtype == object:
                raise ValueError(f"array {name!r} of {result.method!r} holds Python objects and "
                                 f"cannot be written without pickle")
            out[prefix + name] = a
    if "metadata" in out:
        raise ValueError("a result array is named 'metadata', which the export reserves")
    out["metadata"] = np.array(json.dumps(provenance_header(result, dataset), sort_keys=True))
    return npz_bytes(out)


# A member is deflated when a sample of it shrinks to at most this share at zlib level 1: flags,
# masks, indices and mostly-zero arrays do (to 0.03-0.3), float64 results barely (0.96-0.97, at
# ~30 MB/s of CPU: PCP's L and S at 1,000,000 x 20 took 28-30 s to write, more than the fit).
DEFLATE_BELOW = 0.9
_SAMPLE = 1 << 16   # bytes, from each of four places in the array (~8 ms of zlib on float64)


def _deflate_pays(a: np.ndarray) -> bool:
    raw = np.ascontiguousarray(a).reshape(-1).view(np.uint8)
    if raw.size <= 4 * _SAMPLE:
        sample = raw.tobytes()
    else:
        sample = b"".join(raw[i:i + _SAMPLE].tobytes() for i in np.linspace(0, raw.size - _SAMPLE, 4).astype(np.int64))
    return len(zlib.compress(sample, 1)) <= DEFLATE_BELOW * len(sample)


def npz_bytes(arrays: dict) -> bytes:
    """``arrays`` (name -> array) as the bytes of an NPZ: numpy's zip of ``NAME.npy`` members,
    read by ``np.load(path, allow_pickle=False)``. A member is deflated (zlib level 1) when that
    pays (:data:`DEFLATE_BELOW`), else stored as it is: np.load reads both. Object arrays are
    refused (they would need pickle)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        for name, value in arrays.items():
            a = np.asanyarray(value)
            if a.dtype.hasobject:
                raise ValueError(f"array {name!r} holds Python objects and cannot be written without pickle")
            if a.nbytes and _deflate_pays(a):
                member = io.BytesIO()
                np.lib.format.write_array(member, a, allow_pickle=False)
                zf.writestr(name + ".npy", member.getbuffer(), compress_type=zipfile.ZIP_DEFLATED, compresslevel=1)
            else:
                with zf.open(name + ".npy", "w", force_zip64=True) as fh:
                    np.lib.format.write_array(fh, a, allow_pickle=False)
    return buf.getvalue()


def write_samples_csv(result, dataset, path, overwrite=False) -> str:
    return atomic_write_text(path, samples_csv_text(result, dataset), overwrite=overwrite)


def write_features_csv(result, dataset, path, overwrite=False) -> str:
    return atomic_write_text(path, features_csv_text(result, dataset), overwrite=overwrite)


def write_arrays_npz(result, dataset, path, overwrite=False) -> str:
    return atomic_write_bytes(path, arrays_npz_bytes(result, dataset), overwrite=overwrite)


_KINDS = {"samples": ("-samples.csv", samples_csv_text, "text"),
          "arrays": ("-arrays.npz", arrays_npz_bytes, "bytes"),
          "features": ("-features.csv", features_csv_text, "text")}


def _available_kinds(result) -> list[str]:
    kinds = []
    if result.sample_scores or result.flags:
        kinds.append("samples")
    if result.all_arrays() or result.sample_scores or result.flags or result.feature_scores:
        kinds.append("arrays")
    if result.feature_scores:
        kinds.append("features")
    return kinds


def planned_files(result, path) -> list[tuple[str, str]]:
    """``[(kind, file path), ...]`` that :func:`export_results` would write for ``path``.

    A directory gets every file the result has (``<method>-samples.csv``, ``<method>-arrays.npz``,
    ``<method>-features.csv``); a ``.npz`` path gets the arrays; a ``.csv`` path gets the
    per-sample table, or the feature scores for a result that has only those.
    """
    path = os.fspath(path)
    kinds = _available_kinds(result)
    if os.path.isdir(path):
        return [(k, os.path.join(path, result.method + _KINDS[k][0])) for k in kinds]
    ext = os.path.splitext(path)[1].lower()
    if ext == ".npz":
        return [("arrays", path)]
    if ext == ".csv":
        if "samples" in kinds:
            return [("samples", path)]
        if "features" in kinds:
            return [("features", path)]
        raise ValueError(f"result of {result.method!r} has no per-sample or feature scores for a CSV")
    raise ValueError(f"export path must be an existing folder or end in .csv or .npz; got {path!r}")


def export_results(result, dataset, path, overwrite: bool = False, kinds=None) -> list[str]:
    """Write a result's scores, flags and arrays; return the paths written.

    Parameters
    ----------
    result : robustcore.result.RunResult
    dataset : robustcore.datasets.Dataset the result was computed on.
    path : a folder (every kind of file the result has) or a ``.csv`` / ``.npz`` file.
    overwrite : bool
        When False, an existing target raises ``FileExistsError`` before anything is written.
    kinds : optional subset of {"samples", "arrays", "features"} for a folder export.
    """
    if dataset is None:
        raise ValueError("no data set: results can only be exported with the data they came from")
    if getattr(result, "data_fingerprint", None) not in (None, dataset.fingerprint()):
        raise ValueError(f"the {result.method!r} result was computed on other data than "
                         f"'{dataset.name}'; run it again before exporting")
    plan = planned_files(result, path)
    if kinds is not None:
        plan = [(k, p) for k, p in plan if k in set(kinds)]
    if not overwrite:
        existing = [p for _, p in plan if os.path.exists(p)]
        if existing:
            raise FileExistsError(f"{', '.join(existing)} already exist(s); choose another name or "
                                  f"allow overwriting")
    written = []
    # Several files into a folder are one set: it says so while it is incomplete (app.writing).
    together = writing_set(path, f"{result.method}-results", f"the results of {result.method}") \
        if len(plan) > 1 and os.path.isdir(path) else contextlib.nullcontext()
    with together:
        for kind, p in plan:
            _, make, mode = _KINDS[kind]
            payload = make(result, dataset)
            if mode == "text":
                atomic_write_text(p, payload, overwrite=overwrite)
            else:
                atomic_write_bytes(p, payload, overwrite=overwrite)
            written.append(p)
    return written
