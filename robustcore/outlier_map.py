"""The outlier map of a PCA-type model: score distance against orthogonal distance.

Hubert, Rousseeuw & Vanden Branden, "ROBPCA: a new approach to robust principal component
analysis", Technometrics 47 (2005) 64-79; the same diagnostic is ``plot`` of a ``Pca`` object in
R's rrcov and ``diagPlot`` in rospca, whose cut-off rules are followed here.

For a model with centre ``mean`` (d,), orthonormal loadings ``components`` (k, d) and the variances
``variances`` (k,) of the scores along them:

* score distance  SD_i = sqrt(sum_j t_ij^2 / variances_j), t_i = components (x_i - mean): how far a
  sample lies ALONG the subspace (SD^2 is Hotelling's T^2). Cut-off sqrt(chi2_{k, crit}).
* orthogonal distance OD_i = |x_i - mean - components' t_i|: how far it lies OFF the subspace
  (OD^2 is the SPE). OD^(2/3) is roughly normal (Wilson-Hilferty); the cut-off is
  (centre + scale * z_crit)^(3/2) with centre/scale the mean/sd of OD^(2/3) for a classical fit
  and the median/MAD (x 1.4826) for a robust one, as in rrcov.

The four regions: regular (both below), good leverage (far along the subspace, close to it),
orthogonal outlier (off the subspace, typical along it) and bad leverage (both above). SPE alone
cannot see good-leverage points; T^2 alone cannot see orthogonal outliers: the map shows both.
"""
from __future__ import annotations

import numpy as np
from scipy import stats

from ._mad import MAD_NORMAL
from ._residual import residual_scores

__all__ = ["outlier_map", "outlier_map_of_scores", "REGIONS"]

REGIONS = ("regular", "good leverage", "orthogonal outlier", "bad leverage")


def outlier_map(X, components, mean, variances, *, robust: bool = True, crit: float = 0.975) -> dict:
    """Score and orthogonal distances of every row of ``X`` with their cut-offs and regions.

    Parameters
    ----------
    X : ndarray (n, d)
        Samples, in the units the model was fitted in.
    components : ndarray (k, d)
        Orthonormal rows spanning the model's subspace.
    mean : ndarray (d,)
    variances : ndarray (k,)
        Variance of the scores along each component, from the model (for a robust fit: from its
        inliers, never from all rows, or outliers widen the cut-offs that should expose them).
    robust : bool
        Median and MAD of OD^(2/3) for its cut-off (robust fits); False: mean and sd (PCA).
    crit : float in (0.5, 1)
        Quantile of both cut-offs (rrcov's default 0.975).

    Returns
    -------
    dict with ``score_distance`` (n,), ``orthogonal_distance`` (n,), ``sd_cutoff``, ``od_cutoff``
    (0.0 when the model leaves no orthogonal part, i.e. every OD is rounding), ``region`` (n,)
    int codes into :data:`REGIONS`, and ``counts`` (region name -> number of samples).
    """
    X = np.asarray(X, dtype=np.float64)
    C = np.atleast_2d(np.asarray(components, dtype=np.float64))
    m = np.asarray(mean, dtype=np.float64)
    var = np.asarray(variances, dtype=np.float64).ravel()
    k, d = C.shape
    if X.ndim != 2 or X.shape[1] != d or m.shape != (d,) or var.shape != (k,):
        raise ValueError(f"outlier_map needs X (n, {d}), mean ({d},) and variances ({k},) for "
                         f"{k} components of {d} features; got X {X.shape}, mean {m.shape}, "
                         f"variances {var.shape}")
    if not 0.5 < crit < 1.0:
        raise ValueError(f"crit must be in (0.5, 1); got {crit}")
    if np.any(~np.isfinite(var)) or np.any(var <= 0):
        raise ValueError("every score variance must be positive and finite; a component along "
                         "which the model's samples do not vary has no score distance")
    spe, t2, T = residual_scores(X, C, m, 1.0 / var, want_projection=True)
    return outlier_map_of_scores(spe, t2, T, robust=robust, crit=crit)


def outlier_map_of_scores(spe, t2, projection, *, robust: bool = True, crit: float = 0.975,
                          cutoffs=None, variances=None) -> dict:
    """The outlier map from a model's own per-row scores: SD = sqrt(T²) (T² in units of the
    model's score variances), OD = sqrt(SPE), and the coordinates ``projection`` (n, k) in the
    subspace. What :func:`outlier_map` returns, with no second pass over the data. ``cutoffs``:
    the model's own (SD, OD) cut-offs (ROBPCA's), used instead of the rule above (OD 0: none).

    The scores may be per-row results on disk (:class:`robustcore.bigdata.StoredRows`, an
    out-of-core fit's) or Dask arrays (computed once first): then the distances and regions are
    per-row results made slice by slice and kept by the memory budget's rule (in memory or
    stored), the cut-offs come from exact order statistics or sums over slices of the stored
    values, and nothing is read whole (:func:`_sliced_map`). There
    ``variances`` (k,), the score variances T² was computed with, bound |t|² by max(variances) T²:
    when that bound already fails the rounding test below, the coordinates are not read."""
    if not all(isinstance(a, np.ndarray) for a in (spe, t2, projection)):
        from .bigdata._rows import sliceable
        return _sliced_map(sliceable(spe, "spe"), sliceable(t2, "t2"), projection, robust=robust, crit=crit,
                           cutoffs=cutoffs, variances=variances)
    spe = np.asarray(spe, dtype=np.float64)
    t2 = np.asarray(t2, dtype=np.float64)
    T = np.asarray(projection, dtype=np.float64).reshape(spe.shape[0], -1)
    k = T.shape[1]
    _check(crit, bool(np.all(np.isfinite(t2))))
    sd, od = np.sqrt(t2), np.sqrt(spe)
    if cutoffs is not None:
        sd_cut, od_cut = (float(c) for c in cutoffs)
        return _regions(sd, od, sd_cut, od_cut, od > od_cut if od_cut > 0 else np.zeros(od.shape, bool))
    sd_cut = _sd_cutoff(k, crit)
    # An OD at rounding level of the data's size means the model spans the data (k = its rank):
    # |z|² = SPE + |t|² for each row (t its coordinates)
    scale = float(np.sqrt(np.max(spe + np.einsum("ij,ij->i", T, T), initial=0.0)))
    if od.max(initial=0.0) <= 1e-10 * max(scale, 1e-300):
        od_cut = 0.0
        far_off = np.zeros(od.shape, dtype=bool)
    else:
        w = od ** (2.0 / 3.0)
        if robust:
            centre = float(np.median(w))
            spread = MAD_NORMAL * float(np.median(np.abs(w - centre)))
        else:
            centre = float(w.mean())
            spread = float(w.std(ddof=1)) if w.size > 1 else 0.0
        od_cut = _od_cutoff(centre, spread, crit)
        far_off = od > od_cut
    return _regions(sd, od, sd_cut, od_cut, far_off)


def _check(crit: float, t2_finite: bool) -> None:
    if not 0.5 < crit < 1.0:
        raise ValueError(f"crit must be in (0.5, 1); got {crit}")
    if not t2_finite:
        raise ValueError("every score variance must be positive and finite; a component along "
                         "which the model's samples do not vary has no score distance")


def _sd_cutoff(k: int, crit: float) -> float:
    return float(np.sqrt(stats.chi2.ppf(crit, k)))


def _od_cutoff(centre: float, spread: float, crit: float) -> float:
    """Wilson-Hilferty: OD^(2/3) roughly normal with this centre and spread."""
    return float(max(centre + spread * stats.norm.ppf(crit), 0.0) ** 1.5)


def _rounding_only(od_max: float, scale2: float) -> bool:
    """Whether every OD is at rounding level of the data's size (max |z|² = ``scale2``)."""
    return bool(np.sqrt(max(od_max, 0.0)) <= 1e-10 * max(np.sqrt(max(scale2, 0.0)), 1e-300))


def _cbrt(spe):
    """OD^(2/3) of a slice of SPE (float64, as the stored OD^(2/3) was made)."""
    return np.cbrt(np.asarray(spe, dtype=np.float64))


def _median_and_mad(spe, n: int, window) -> tuple[float, float]:
    """Median of OD^(2/3) = cbrt(SPE) (as the Dask route's da.cbrt of the float64 SPE) and the
    median of its absolute deviations from it, exact: from the distances' sweep's windows
    (robustcore.bigdata._median_window, no sweep) when they prove both, else over slices of
    the SPE, made again in each of four sweeps (a histogram and a gather each: at 30M rows
    0.63 s of CPU; storing the cube roots would cost a write of 240 MB)."""
    from ._passes import kth_of_slices_of, percentile_of
    from .bigdata._median_window import Unproven
    if window is not None:
        try:
            centre = percentile_of(window.kth_values, n, 50.0)
            return centre, percentile_of(lambda ks: window.kth_deviations(centre, ks), n, 50.0)
        except Unproven:
            pass
        finally:
            window.release()
    centre = percentile_of(lambda ks: kth_of_slices_of(spe, ks, fn=_cbrt), n, 50.0)
    return centre, percentile_of(lambda ks: kth_of_slices_of(spe, ks, fn=lambda v: abs(_cbrt(v) - centre)), n, 50.0)


def _sliced_map(spe, t2, projection, *, robust, crit, cutoffs, variances) -> dict:
    """:func:`outlier_map_of_scores` of per-row results held in memory or stored (not Dask
    arrays: a fit's results are always these, in memory, out of core and with a cluster), in
    plain numpy slices (robustcore.bigdata._rows.fill_rows; 30M rows, T² and the distances
    stored: 3.1-3.8 s of CPU through Dask's blocks, ~1 s in slices). The first sweep makes both
    distances, the maxima of the rounding test and, for a classical fit, the mean and spread of
    OD^(2/3) (merged slice by slice); the second the regions and their counts. A robust fit's
    median and MAD of OD^(2/3) are exact order statistics: from the values near them that the
    first sweep keeps (:func:`_median_and_mad`), else over slices of the SPE (never written
    whole). ``projection`` may stay a Dask array: it is read only where the rounding test needs
    it. There ``variances`` (k,), the score variances T² was computed with, bound |t|² by
    max(variances) T²: when that bound already fails the rounding test, the coordinates are
    not read."""
    from .bigdata._dask import compute
    from .bigdata._median_window import MedianWindow
    from .bigdata._rows import StoredRows, as_dask_rows, chunks_of, fill_rows
    n = int(spe.shape[0])
    k = int(np.prod(projection.shape[1:], dtype=np.int64)) if len(projection.shape) > 1 else 1
    classical = cutoffs is None and not robust
    acc = {"t2_max": -np.inf, "spe_max": -np.inf, "n": 0, "mean": 0.0, "m2": 0.0}
    # a robust fit's median and MAD of OD^(2/3), from values this sweep makes anyway
    window = MedianWindow(n) if cutoffs is None and robust else None

    def distances(t2_part, spe_part):
        T2 = np.asarray(t2_part, dtype=np.float64)
        S = np.asarray(spe_part, dtype=np.float64)
        # NaN and inf of T² surface in its maximum (np.maximum keeps a NaN)
        acc["t2_max"] = np.maximum(acc["t2_max"], np.max(T2, initial=-np.inf))
        acc["spe_max"] = np.maximum(acc["spe_max"], np.max(S, initial=-np.inf))
        if window is not None:
            window.add(np.cbrt(S))
        if classical and S.size:
            # OD^(2/3)'s count, mean and squared deviations, merged (Chan et al.)
            W = np.cbrt(S)
            b, m = W.size, float(W.mean())
            W -= m
            m2 = float(np.dot(W, W))
            na, tot = acc["n"], acc["n"] + b
            delta = m - acc["mean"]
            acc.update(n=tot, mean=acc["mean"] + delta * b / tot, m2=acc["m2"] + m2 + delta * delta * na * b / tot)
        return {"sd": np.sqrt(T2), "od": np.sqrt(S)}
    # the distances are read once more, for the regions
    got = fill_rows(distances, {"sd": ("f8", ()), "od": ("f8", ())}, [t2, spe], name="outlier_map",
                    direct=("sd", "od"))
    t2_max, od_max = float(acc["t2_max"]), float(acc["spe_max"])
    _check(crit, bool(np.isfinite(t2_max)))
    sd, od = got["sd"], got["od"]

    def od_cutoff():
        if cutoffs is not None:
            return float(cutoffs[1])
        # |z|² = SPE + |t|² <= max SPE + max(variances) max T² (with room for T²'s rounding):
        # the exact maximum, a pass over the coordinates, only where the bound leaves it open
        bound = None if variances is None else (od_max + float(np.max(variances)) * t2_max) * (1.0 + 1e-6)
        if bound is None or not np.isfinite(bound) or _rounding_only(od_max, bound):
            stored = next((a for a in (spe, t2) if isinstance(a, StoredRows)), None)
            chunks = chunks_of(stored.z) if stored is not None else (n,)
            S = as_dask_rows(spe, chunks).astype(np.float64)
            P = as_dask_rows(projection, chunks).astype(np.float64).reshape(n, -1)
            if _rounding_only(od_max, compute((S + (P * P).sum(axis=1)).max(), message="outlier map")[0]):
                return 0.0
        if classical:
            centre, spread = float(acc["mean"]), float(np.sqrt(acc["m2"] / (acc["n"] - 1))) if acc["n"] > 1 else 0.0
        else:
            centre, spread = _median_and_mad(spe, n, window if np.isfinite(od_max) else None)
            spread *= MAD_NORMAL
        return _od_cutoff(centre, spread, crit)
    sd_cut = float(cutoffs[0]) if cutoffs is not None else _sd_cutoff(k, crit)
    od_cut = od_cutoff()
    counts = np.zeros(len(REGIONS), dtype=np.int64)

    def regions(sd_part, od_part):
        sd_part, od_part = np.asarray(sd_part), np.asarray(od_part)
        far_off = od_part > od_cut if od_cut > 0 else np.zeros(od_part.shape, dtype=bool)
        code = (sd_part > sd_cut).astype(np.int8) + 2 * far_off.astype(np.int8)
        counts[:] += np.bincount(code, minlength=len(REGIONS))
        return {"region": code}
    region = fill_rows(regions, {"region": (np.int8, ())}, [sd, od], name="outlier_map")["region"]
    return {"score_distance": sd, "orthogonal_distance": od, "sd_cutoff": sd_cut, "od_cutoff": od_cut,
            "region": region, "counts": {name: int(counts[i]) for i, name in enumerate(REGIONS)}}


def _regions(sd, od, sd_cut, od_cut, far_off) -> dict:
    far_along = sd > sd_cut
    region = far_along.astype(np.int8) + 2 * far_off.astype(np.int8)
    counts = {name: int(np.sum(region == i)) for i, name in enumerate(REGIONS)}
    return {"score_distance": sd, "orthogonal_distance": od, "sd_cutoff": sd_cut,
            "od_cutoff": od_cut, "region": region, "counts": counts}

