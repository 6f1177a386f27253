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
    return result is not None and "components" in result.arrays and "mean" in result.arrays


def subspace(result) -> dict | None:
    """``{"components" (r, d), "mean" (d,), "projection" (n, r), "source"}`` of a subspace
    result, ``source`` naming where the subspace comes from (the registry's declaration)."""
    if not has_subspace(result):
        return None
    a = result.arrays
    proj = a.get("projection")
    if proj is None:
        raise ValueError(f"result {result.method!r} has components but no projection")
    proj = np.asarray(proj)   # an out-of-core result may hold it in a Zarr store
    m = METHODS.get(result.method)
    return {"components": np.atleast_2d(a["components"]), "mean": np.asarray(a["mean"]),
            "projection": proj.reshape(proj.shape[0], -1),
            "source": (m.subspace if m is not None and m.subspace else result.method)}


def model_units(result, X) -> np.ndarray:
    """X in the units the result's subspace lives in: scaled as the estimator scaled its input
    (arrays "scale_center" and "scale", present when it did), otherwise X itself."""
    a = result.arrays
    if "scale" in a and "scale_center" in a:
        return (np.asarray(X, dtype=float) - a["scale_center"]) / a["scale"]
    return X


def _original_units(result, Z) -> np.ndarray:
    a = result.arrays
    if "scale" in a and "scale_center" in a:
        return Z * a["scale"] + a["scale_center"]
    return Z


def rank(result) -> int | None:
    """The rank of the result's own subspace: PCP's rank of L, else the number of components."""
    if result is None:
        return None
    if "rank of L" in result.summary:
        return int(result.summary["rank of L"])
    sub = result.arrays.get("components")
    return None if sub is None else int(np.atleast_2d(sub).shape[0])


def outlier_rule(result) -> str:
    """The rule behind ``result.flags["outlier"]`` in words, as the registry declares it."""
    m = METHODS.get(result.method)
    if m is not None and m.outlier_rule is not None:
        return m.outlier_rule.describe(result.params)
    return str(result.summary.get("outlier rule", "flagged by the method"))


def outlier_flags(result) -> tuple[np.ndarray, str] | None:
    """(flags (n,), rule in words): the samples this result flags as outliers, or None when it
    flags none (no limits: e.g. a subspace of full rank)."""
    if result is None or "outlier" not in result.flags:
        return None
    return np.asarray(result.flags["outlier"], dtype=bool), outlier_rule(result)


def map_model(result) -> tuple[dict | None, str]:
    """What the SPE/T² map draws: ``({"components", "mean", "variances", "spe_limit",
    "t2_limit", "residual_direction", "data_plane"}, "")``, or ``(None, why not)``."""
    if result is None:
        return None, "no result"
    a, s = result.arrays, result.summary
    need = ("components", "mean", "component_variances", "residual_direction", "data_plane")
    if "SPE limit" not in s or any(k not in a for k in need):
        why = s.get("no limits") or "this result has no SPE/T² control limits"
        return None, str(why)
    return {"components": np.atleast_2d(a["components"]), "mean": np.asarray(a["mean"]),
            "variances": np.asarray(a["component_variances"]), "spe_limit": float(s["SPE limit"]),
            "t2_limit": float(s["T2 limit"]), "residual_direction": np.asarray(a["residual_direction"]),
            "data_plane": np.asarray(a["data_plane"])}, ""


def reconstruction(result, dataset, rows) -> np.ndarray | None:
    """Reconstructions of samples ``rows`` (m, d): L for PCP, the subspace projection otherwise."""
    rows = np.atleast_1d(np.asarray(rows, dtype=np.int64))
    if "low_rank" in result.arrays:
        return np.asarray(result.arrays["low_rank"])[rows]
    sub = subspace(result)
    if sub is None:
        return None
    X = model_units(result, dataset.dense()[rows])
    return _original_units(result, compare.reconstruct(X, sub["components"], sub["mean"]))


def contributions(result, dataset, row: int) -> np.ndarray | None:
    """Per-feature squared residuals of one sample (d,) (the result's own when it has them)."""
    if "contributions" in result.arrays:
        return np.asarray(result.arrays["contributions"])[row]
    if "sparse" in result.arrays:
        return np.asarray(result.arrays["sparse"])[row] ** 2
    sub = subspace(result)
    if sub is None:
        return None
    X = model_units(result, dataset.dense()[row])
    return compare.residual_contributions(X, sub["components"], sub["mean"])[0]
