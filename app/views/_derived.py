"""What views read from a RunResult. Nothing is fitted or calibrated here: the registry's adapters
(:mod:`robustcore.methods`) put every number a view draws in the result, and the registry
declares each method's outlier rule once. These helpers only pick the numbers out, and evaluate
the result's own model where a view needs it (the projection of one sample, SPE on a grid), in
the units the model lives in (:func:`model_units`: a fit with ``scale`` set works on scaled data).
"""
from __future__ import annotations

import numpy as np

from robustcore import compare
from robustcore.methods import METHODS


def method_title(method: str) -> str:
    m = METHODS.get(method)
    return m.title if m is not None else method


def short_title(method: str) -> str:
    m = METHODS.get(method)
    return (m.short or m.title) if m is not None else method


def has_subspace(result) -> bool:
    return result is not None and result.subspace is not None


def subspace(result) -> dict | None:
    """``{"components" (r, d), "mean" (d,), "projection" (n, r), "source"}`` of a subspace
    result, ``source`` naming where the subspace comes from (the registry's declaration).
    ``projection`` is numpy, or rows on disk (StoredRows) for a result too large for memory."""
    if not has_subspace(result):
        return None
    proj = result.arrays.get("projection")
    if proj is None:
        raise ValueError(f"result {result.method!r} has components but no projection")
    if len(getattr(proj, "shape", ())) != 2:
        proj = np.asarray(proj)
        proj = proj.reshape(proj.shape[0], -1)
    # else kept as it is: an out-of-core result's may be on disk (StoredRows), read by blocks
    s = result.subspace
    m = METHODS.get(result.method)
    return {"components": s.components, "mean": s.mean, "projection": proj,
            "source": s.source or (m.subspace if m is not None and m.subspace else result.method)}


def model_units(result, X) -> np.ndarray:
    """X in the units the result's subspace lives in: scaled as the estimator scaled its input,
    otherwise X itself."""
    s = result.subspace
    return s.to_model_units(X) if s is not None and s.scaled else X


def _original_units(result, Z) -> np.ndarray:
    s = result.subspace
    return s.to_original_units(Z) if s is not None else Z


def common_units(results) -> tuple[np.ndarray | None, np.ndarray | None, str]:
    """One unit to compare several results' subspaces in: ``(center, scale, name)``, rows x
    measured as ``(x - center) / scale`` (None, None: the data's own units).

    When every result that scaled its input scaled it the same way (PCA and Coherence Pursuit
    both standardising a mixed-unit table), that scaling: the units those methods chose, into
    which the others (robust PCA's L lives in the data's units) are mapped. Otherwise the
    data's own units. Either way every number of the comparison is in the one unit named."""
    scaled = [r.subspace for r in results if r is not None and r.subspace is not None and r.subspace.scaled]
    if not scaled:
        return None, None, "data units"
    first = scaled[0]
    same = all(np.allclose(s.scale, first.scale, rtol=1e-9, atol=0) and
               np.allclose(s.scale_center, first.scale_center, rtol=1e-9, atol=1e-300) for s in scaled[1:])
    if not same:
        return None, None, "data units"
    name = {"standard": "standardised units", "robust": "robustly scaled units"}.get(first.scaling,
                                                                                   f"{first.scaling}-scaled units")
    return first.scale_center, first.scale, name


def rank(result) -> int | None:
    """The rank of the result's own subspace: robust PCA's rank of L, else the number of components."""
    return None if result is None else result.rank


def outlier_rule(result) -> str:
    """The rule behind ``result.flags["outlier"]`` in words, as the run recorded it."""
    if result.outliers is not None:
        return result.outliers.rule
    m = METHODS.get(result.method)
    if m is not None and m.outlier_rule is not None:
        return m.outlier_rule.describe(result.params)
    return "flagged by the method"


def outlier_flags(result) -> tuple[np.ndarray, str] | None:
    """(flags (n,), rule in words): the samples this result flags as outliers, or None when it
    flags none (no limits: e.g. a subspace of full rank)."""
    if result is None or "outlier" not in result.flags:
        return None
    return np.asarray(result.flags["outlier"], dtype=bool), outlier_rule(result)


def map_place(result, i: int) -> str:
    """'SD 7.84 · OD 1.27 · bad leverage': where sample i lies on the result's outlier map ("" for
    a result without one). One row is read: the columns may be stored."""
    a = result.arrays if result is not None else {}
    if result is None or result.outlier_map is None or \
            any(k not in a for k in ("score_distance", "orthogonal_distance", "map_region")):
        return ""
    from robustcore.outlier_map import REGIONS

    from ._common import fmt
    return (f"SD {fmt(float(a['score_distance'][i]))} · OD {fmt(float(a['orthogonal_distance'][i]))} · "
            f"{REGIONS[int(a['map_region'][i])]}")


def map_model(result) -> tuple[dict | None, str]:
    """What the SPE/T² map draws: ``({"components", "mean", "variances", "spe_limit",
    "t2_limit", "residual_direction", "data_plane"}, "")``, or ``(None, why not)``."""
    if result is None:
        return None, "no result"
    s, lim = result.subspace, result.limits
    if s is None or lim is None or s.variances is None or lim.residual_direction is None \
            or lim.data_plane is None:
        return None, result.no_limits or "this result has no SPE/T² control limits"
    return {"components": s.components, "mean": s.mean, "variances": s.variances, "spe_limit": lim.spe,
            "t2_limit": lim.t2, "residual_direction": lim.residual_direction,
            "data_plane": lim.data_plane}, ""


def dense_rows(dataset, rows) -> np.ndarray:
    """Rows ``rows`` of the data as a dense (m, d) array. A sparse data set densifies those rows
    only: its whole dense copy (a 300,000 x 47,000 LIBSVM file: 113 GB) to show one sample was
    refused or took the memory of the machine (issue 24)."""
    rows = np.atleast_1d(np.asarray(rows, dtype=np.int64))
    if getattr(dataset, "is_lazy", False):
        return _rows_on_disk(dataset, rows)
    if getattr(dataset, "is_sparse", False):
        return np.asarray(dataset.X[rows].toarray(), dtype=np.float64)
    return np.asarray(dataset.dense()[rows])


def _rows_on_disk(dataset, rows) -> np.ndarray:
    """Rows of data opened out of core, read one by one from the file (a chunk read each: call
    it off the GUI thread). The reader's rows, not a Dask block: through Dask one row read the
    whole block that holds it (67 MB at 30,000,000 x 20)."""
    src = dataset.source
    if dataset.kind == "frames":
        return np.stack([np.asarray(src.frame(int(r)), dtype=np.float64) for r in rows])
    reader = getattr(src, "reader", None)
    if reader is not None:
        return np.stack([np.asarray(reader.read(int(r), int(r) + 1)[0], dtype=np.float64) for r in rows])
    from robustcore.bigdata import compute
    (out,) = compute(src.array[rows], message="reading samples")
    return np.array(out, dtype=np.float64)


def rows_of(values, rows) -> np.ndarray:
    """Rows ``rows`` of a per-row result, in memory or on disk (StoredRows): only those read."""
    return np.stack([np.asarray(values[int(r)]) for r in np.atleast_1d(rows)])


def reconstruction(result, dataset, rows) -> np.ndarray | None:
    """Reconstructions of samples ``rows`` (m, d): L for PCP, the subspace projection otherwise."""
    rows = np.atleast_1d(np.asarray(rows, dtype=np.int64))
    if "low_rank" in result.arrays:
        return rows_of(result.arrays["low_rank"], rows)
    sub = subspace(result)
    if sub is None:
        return None
    X = model_units(result, dense_rows(dataset, rows))
    return _original_units(result, compare.reconstruct(X, sub["components"], sub["mean"]))


def contributions(result, dataset, row: int) -> np.ndarray | None:
    """Per-feature squared residuals of one sample (d,) (the result's own when it has them)."""
    if "contributions" in result.arrays:
        return rows_of(result.arrays["contributions"], [row])[0]
    if "sparse" in result.arrays:
        return rows_of(result.arrays["sparse"], [row])[0] ** 2
    sub = subspace(result)
    if sub is None:
        return None
    X = model_units(result, dense_rows(dataset, [row])[0])
    return compare.residual_contributions(X, sub["components"], sub["mean"])[0]
