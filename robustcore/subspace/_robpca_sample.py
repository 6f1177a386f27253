"""ROBPCA out of core: its robust stages on a bounded random sample of the rows.

Every stage of ROBPCA but the last scoring needs all its rows at once (the outlyingness sorts
the projections of every row on each of 250 directions; the MCD concentrates on subsets), so a
table opened out of core is fitted on a uniform random sample of SAMPLE_ROWS rows, the bound of
the samples Coherence Pursuit's out-of-core passes place their cuts from
(``_cop_calibration.SAMPLE_ROWS``, 100,000). At that size the robust stages are estimates of
the table's to within sampling error of order 1 / sqrt(100,000) of a spread, well inside what
the h-subsets (75 % of the rows) and the cut-offs at 0.975 resolve, and the fit stays a matter
of seconds (the outlyingness is the cost: 250 sorts of the sample). The orthogonal-distance
cut-off is the Wilson-Hilferty rule on the sample's distances. Every row is then scored in one
pass (``row_results``/``fit_row_results``: score and orthogonal distances, flags) with those
cut-offs. A table of at most SAMPLE_ROWS rows is its own sample: it is read into memory and
fitted as in memory, to the same numbers.

The fit reads the table twice: the first pass (``_scan.scan``) checks every value (the
in-memory refusals: non-finite values, magnitudes) and fits the scaling on all rows; the second
copies the sampled rows.
"""
from __future__ import annotations

import functools

import numpy as np

from .._scaling import apply_scaling
from ._cop_calibration import SAMPLE_ROWS
from ._scan import budget_bytes, scan

__all__ = ["SAMPLE_ROWS", "sampled_rows"]


class _Picked:
    """Copies of the rows whose index is in ``idx`` (sorted), from the blocks of a pass."""

    def __init__(self, idx):
        self.idx, self.parts = idx, []

    def add(self, B, start, *extra):
        lo, hi = np.searchsorted(self.idx, [start, start + B.shape[0]])
        if hi > lo:
            self.parts.append((start, B[self.idx[lo:hi] - start]))     # fancy indexing: a copy

    def merge(self, other: _Picked) -> _Picked:
        self.parts += other.parts
        return self

    def rows(self, d) -> np.ndarray:
        parts = [b for _, b in sorted(self.parts, key=lambda t: t[0])]
        return np.vstack(parts) if parts else np.zeros((0, d))


def sampled_rows(rows, how: str, rng, rep):
    """(the scaled rows of a uniform random sample of SAMPLE_ROWS rows of the lazy ``rows``, in
    table order; the scaling fields fitted on every row), with ``rng`` (numpy Generator)."""
    m = min(rows.n, SAMPLE_ROWS)
    need = 8 * m * rows.d
    if need > budget_bytes():
        raise ValueError(f"ROBPCA fits its robust stages on a sample of {m} rows, {need / 2**20:.0f} MB "
                         f"as float64 for this table's {rows.d} columns, beyond the out-of-core memory "
                         f"budget ({budget_bytes() / 2**20:.0f} MB); raise the budget "
                         f"(robustcore.bigdata.settings(memory_budget=...)) or select fewer columns")
    rep(0.0, "column moments")
    sc = scan(rows, how, method="ROBPCA", scatter=False, progress=rep.span(0.0, 0.5))
    idx = np.sort(rng.choice(rows.n, m, replace=False))
    S = rows.reduce(functools.partial(_Picked, idx), progress=rep.span(0.5, 1.0), message="sample").rows(rows.d)
    return apply_scaling(S, sc.center, sc.scale), sc.scaling
