"""The first pass of every subspace fit, and the checks it pays for (in memory and out of core).

One pass over the rows (``robustcore._row_stats.Moments``) gives the column means and spreads
("standard" and "auto" scaling), the scatter matrix (PCA), the column minima and maxima (the
magnitude guard, as on the scaled values; bounds for blocks of ordinary values), and the non-finite entries
(the first one
named, as ``check_finite`` names it). "robust" scaling needs the columns' medians and MADs:
``np.median`` in memory; out of core, exact order statistics in three more passes (a sorted
sketch of every column rides on this pass; one pass gathers the medians and quartiles; a sketch
and a gather of |x - median| give the MADs).

Here too, lazy input is recognised and validated (:func:`input_rows`), with the in-memory
messages.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from .._passes import Rows, is_lazy, lazy_array
from .._row_stats import Moments, Sampled
from .._scaling import SCALES, fit_scaling, mixed_units, robust_scale, scaling_fields
from .._validation import (OVERFLOW_FIX, magnitude_error, nonfinite_error, validate_lazy,
                           validate_X)

__all__ = ["Scan", "input_rows", "scan", "load_rows", "budget_bytes", "constant_error"]


def input_rows(est, X, *, reset: bool, min_samples: int = 1, min_features: int = 1,
               finite: bool = False) -> Rows:
    """X (numpy, list, DataFrame, or lazy input) validated as :func:`validate_X` does, as Rows."""
    if is_lazy(X):
        from ..bigdata._dask import require_dask
        require_dask()
        return Rows(validate_lazy(est, lazy_array(X), reset=reset, min_samples=min_samples,
                                  min_features=min_features))
    return Rows(validate_X(est, X, reset=reset, min_samples=min_samples, min_features=min_features,
                           finite=finite))


def budget_bytes() -> int:
    from ..bigdata._dask import get_settings
    return int(get_settings().memory_budget)


def load_rows(rows: Rows, method: str, why: str) -> np.ndarray:
    """A lazy table's rows in memory for a route that needs them all (``why``), when they fit
    the memory budget; a clear error otherwise."""
    if not rows.lazy:
        return rows.X
    need = 8 * rows.n * rows.d
    if need > budget_bytes():
        raise ValueError(f"{method} {why}, so this {rows.n} x {rows.d} table must be in memory "
                         f"({need / 2**20:.0f} MB as float64), beyond the out-of-core memory budget "
                         f"({budget_bytes() / 2**20:.0f} MB); raise the budget "
                         f"(robustcore.bigdata.settings(memory_budget=...)) or load a part of the data")
    return rows.dense()


@dataclass
class Scan:
    """What the first pass found: the moments, the fitted scaling fields, and the scaled rows'
    largest |value|."""

    mom: Moments
    scaling: dict
    sketches: list | None
    sample: np.ndarray | None = None

    @property
    def center(self):
        return self.scaling["scale_center_"]

    @property
    def scale(self):
        return self.scaling["scale_"]

    @property
    def identity(self) -> bool:
        return self.scaling["scaling_"] == "none"

    def scaled_mean(self) -> np.ndarray:
        """The column means of the scaled rows (true units), with the digits the rounded
        centre lost: (shift - centre) is exact, the sums' part small (a column 1e6 +- 1e-3
        standardised at its rounded mean has a mean of 2.5e-8, not 0)."""
        m = self.mom
        with np.errstate(over="ignore", invalid="ignore"):
            return ((m.K - self.center) + np.ldexp(m.S / max(m.n, 1), m.e)) / self.scale


def _robust_out_of_core(rows: Rows, mom: Moments, sketches, rep):
    """Centres and spreads of "robust" scaling from exact order statistics (module doc)."""
    from ..bigdata import _reductions as red
    n = rows.n
    h25, h75 = (n - 1) * 0.25, (n - 1) * 0.75
    ks = sorted({(n - 1) // 2, n // 2, int(h25), min(int(h25) + 1, n - 1), int(h75),
                 min(int(h75) + 1, n - 1)})
    v = dict(zip(ks, rows.column_order_statistics(sketches, ks, progress=rep.span(0.0, 0.4),
                                                  message="medians")))
    center = 0.5 * (v[(n - 1) // 2] + v[n // 2])

    def quantile(h):
        lo = int(h)
        a, b = v[lo], v[min(lo + 1, n - 1)]
        return a + (h - lo) * (b - a)
    q25, q75 = quantile(h25), quantile(h75)
    dev = abs(rows.X - center)
    rows.passes += 1
    sk = _sketch_pass(dev, rep.span(0.4, 0.7))
    m = red.exact_order_statistics(dev, sk, [(n - 1) // 2, n // 2], progress=rep.span(0.7, 1.0),
                                   message="median absolute deviations")
    rows.passes += 1
    mad = 0.5 * (m[0] + m[1])
    std = mom.std()
    return center, robust_scale(mad, lambda flat: (q75 - q25)[flat], lambda flat: std[flat])


def _sketch_pass(A, rep):
    from dask import delayed

    from ..bigdata import _reductions as red
    from ..bigdata._dask import compute
    return list(compute(*[delayed(red.sketch)(b) for b in A.to_delayed().ravel()], progress=rep,
                        message="median absolute deviations"))


def scan(rows: Rows, how: str, *, method: str, scatter: bool = True, gram: bool = False,
         want_sketch: bool = False, sample_stride: int | None = None, row_sq=None, progress=None) -> Scan:
    """The first pass over ``rows``, the finiteness and magnitude checks, and the scaling
    ``how`` resolved (see the module doc). ``gram``: also Σ x̂x̂ᵀ of the unscaled rows of unit
    length (Coherence Pursuit's matrix, usable when no scaling results). ``want_sketch``: out
    of core, sketch every column in the same pass (for a later median). ``sample_stride``: also
    keep every ``sample_stride``-th row (``Scan.sample``, raw values: a view in memory, a copy
    out of core). ``row_sq`` (in memory, with ``gram``): every row's |x|² written there
    (``Moments``)."""
    from .._progress import Reporter
    rep = Reporter.of(progress)
    if how not in SCALES:
        raise ValueError(f"scale must be one of {', '.join(SCALES)}; got {how!r}")
    sketch = rows.lazy and (how == "robust" or want_sketch)
    make = functools.partial(Moments, rows.d, rows.shift(), scatter, gram, row_sq)
    # in memory the sample is a view of every stride-th row; out of core its rows are copied
    # in the pass (a fresh 40 MB copy cost 90 ms on first touch here: host-backed pages)
    copy_sample = bool(sample_stride) and rows.lazy
    if copy_sample:
        make = functools.partial(Sampled, make, sample_stride)
    first = rep.span(0.0, 0.5 if how == "robust" else 1.0)
    if sketch:
        mom, sketches = rows.reduce(make, with_sketch=True, message="column moments", progress=first)
    else:
        mom, sketches = rows.reduce(make, message="column moments", progress=first), None
    sample = None
    if copy_sample:
        mom, sample = mom.inner, mom.rows(rows.d)
    elif sample_stride:
        sample = rows.X[::sample_stride]
    if mom.bad:
        i, j, value = mom.first_bad
        raise nonfinite_error(mom.bad, i, j, value)
    mean, std = mom.true_mean(), mom.std()
    used = how if how != "auto" else ("standard" if mixed_units(std, mean) else "none")
    if used == "robust":
        if rows.lazy:
            center, spread = _robust_out_of_core(rows, mom, sketches, rep.span(0.5, 1.0))
            scaling = scaling_fields("robust", center, spread)
        else:
            c, s = fit_scaling(rows.X, "robust")
            scaling = {"scale_center_": c, "scale_": s, "scaling_": "robust"}
    else:
        scaling = scaling_fields(used, mean, std)
    sc = Scan(mom, scaling, sketches, sample)
    # the scaled rows' largest |value|, as check_magnitude finds it on them: (x - c) / s is
    # monotone in x, so each column's extremes are the scaled minimum and maximum. Blocks of
    # ordinary values give bounds instead (Moments._add_ordinary: within sqrt(rows) of the true
    # extremes, all under 2^400 and over 2^-400), which decide nothing the exact ones would not
    if sc.identity:
        top = max(-float(mom.lo.min()), float(mom.hi.max()))
    else:
        with np.errstate(over="ignore"):
            top = float(np.max(np.maximum(np.abs((mom.hi - sc.center) / sc.scale),
                                          np.abs((mom.lo - sc.center) / sc.scale))))
    err = magnitude_error(top, method, OVERFLOW_FIX)
    if err is not None:
        raise err
    return sc


def constant_error(method: str, n: int, center: bool) -> ValueError:
    """The refusal of data with no variance about the centre a subspace fit uses."""
    if center:
        what = f"all {n} rows of X are equal (every column is constant)"
    else:
        what = "every value of X is 0 (after scaling)"
    return ValueError(f"{what}, so {method} has no direction of variance to fit a subspace to and "
                      f"no spread to measure distances in; check that the right data were loaded, or "
                      f"drop the constant columns")

