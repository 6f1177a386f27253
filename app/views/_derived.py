"""Numbers a view needs beyond what a RunResult holds, computed by robustcore ONCE per result.

Each helper caches on the result object itself (attribute ``_view_cache``), so every view and
every repaint shares one computation and a new run (a new result object) starts fresh.
"""
from __future__ import annotations

import numpy as np

from robustcore import compare

SUBSPACE_METHODS = ("pca", "coherence-pursuit", "residual", "pcp")
ALPHA = 0.01  # false-alarm rate of the limits drawn for results that did not choose one


def _cache(result) -> dict:
    c = getattr(result, "_view_cache", None)
    if c is None:
        c = {}
        try:
            result._view_cache = c
        except AttributeError:  # a frozen or slotted result: no caching, still correct
            pass
    return c


def _memo(result, key, make):
    c = _cache(result)
    if key not in c:
        c[key] = make()
    return c[key]


def has_subspace(result) -> bool:
    return result is not None and ("components" in result.arrays or "low_rank" in result.arrays)


def subspace(result) -> dict | None:
    """``{"components" (r, d), "mean" (d,), "projection" (n, r), "source"}`` of a subspace result.

    For PCP the subspace is the PCA of the low-rank part L (its numerical rank, at most 10
    directions are drawn), so PCP sits in the same scatter and comparison as the others.
    """
    if result is None:
        return None
    a = result.arrays
    if "components" in a and "mean" in a:
        def make():
            proj = a.get("projection")
            if proj is None:
                raise ValueError(f"result {result.method!r} has components but no projection")
            return {"components": np.atleast_2d(a["components"]), "mean": np.asarray(a["mean"]),
                    "projection": np.asarray(proj).reshape(len(proj), -1), "source": result.method}
        return _memo(result, "subspace", make)
    if "low_rank" in a:
        def make():
            r = result.summary.get("rank of L")
            r = int(r) if r else None
            out = compare.lowrank_subspace(a["low_rank"], n_components=None if r is None else min(max(r, 1), 10))
            out["source"] = "PCA of L"
            return out
        return _memo(result, "subspace", make)
    return None


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


def scorer(result, dataset):
    """A fitted ResidualScorer for the result's subspace, taking data in the subspace's units
    (:func:`model_units`): the result's own for an unscaled "residual" run."""
    if result.method == "residual" and hasattr(result.estimator, "spe_limit_") \
            and "scale" not in result.arrays:
        return result.estimator
    sub = subspace(result)
    if sub is None:
        return None

    def make():
        from robustcore.anomaly import ResidualScorer
        X = model_units(result, dataset.dense())
        r = sub["components"].shape[0]
        return ResidualScorer(n_components=r, alpha=ALPHA).fit_subspace(
            X, components=sub["components"], mean=sub["mean"])
    return _memo(result, "scorer", make)


def outlier_flags(result, dataset) -> tuple[np.ndarray, str] | None:
    """(flags (n,), rule in words): which samples this result treats as outliers."""
    if result is None:
        return None
    f = result.flags
    if "outlier" in f:
        return np.asarray(f["outlier"], dtype=bool), str(result.summary.get("outlier rule", "flagged by the method"))
    if "outside_either" in f:
        return np.asarray(f["outside_either"], dtype=bool), "SPE or T² above its limit"
    if "sparse_score" in result.sample_scores:
        def make():
            s = np.asarray(result.sample_scores["sparse_score"], dtype=float)
            t = compare.robust_threshold(s)
            return compare.flags_above(s, t), "sparse-part score above median + 3·MAD"
        return _memo(result, "flags", make)
    if has_subspace(result):
        def make():
            sc = scorer(result, dataset)
            fl = sc.flag(model_units(result, dataset.dense()))
            return np.asarray(fl["either"], dtype=bool), f"SPE or T² above its limit (α = {ALPHA})"
        return _memo(result, "flags", make)
    if "misclassified" in f:
        return np.asarray(f["misclassified"], dtype=bool), "misclassified"
    return None


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
