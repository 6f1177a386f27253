"""ROBPCA's sample rule (``max_samples``): its robust stages on a bounded random sample of the
rows, the same rule in memory and out of core.

Every stage of ROBPCA but the last scoring needs all its rows at once (the outlyingness sorts
the projections of every row on each of 250 directions; the MCD concentrates on subsets), so a
table of more than ``max_samples`` rows ("auto": SAMPLE_ROWS, the bound of the samples Coherence
Pursuit's out-of-core passes place their cuts from, ``_cop_calibration.SAMPLE_ROWS``, 100,000)
is fitted on a uniform random sample of that many rows: the same seeded draw of sorted row
indices (:func:`sample_index`, the fit's first use of its Generator) whether the rows are in
memory or out of core, so the same table gives the same fit either way. The scaling is fitted on
every row in both. At that size the robust stages are estimates of
the table's to within sampling error of order 1 / sqrt(100,000) of a spread, well inside what
the h-subsets (75 % of the rows) and the cut-offs at 0.975 resolve, and the fit stays a matter
of seconds (the outlyingness is the cost: 250 sorts of the sample). The orthogonal-distance
cut-off is the Wilson-Hilferty rule on the sample's distances. Every row is then scored in one
pass (``row_results``/``fit_row_results``: score and orthogonal distances, flags) with those
cut-offs. A table of at most ``max_samples`` rows is its own sample (no draw: a table of at most
100,000 rows is fitted as before the rule existed); out of core it is read into memory and fitted
as in memory, to the same numbers.

``max_samples="all"`` fits the robust stages on every row. In memory the rows are there already;
out of core they must fit the memory budget, else the fit is refused with a message that says how
to fix it (:func:`check_budget`): the budget bounds what an out-of-core run copies into memory,
and an in-memory table has been copied already, so refusing it there would only take away a fit
the machine can make.

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

__all__ = ["SAMPLE_ROWS", "sample_size", "sample_index", "check_budget", "sampled_rows"]


def sample_size(max_samples, n: int) -> int | None:
    """The rows of the sample the robust stages are fitted on, for ``max_samples`` (validated:
    "auto", "all" or an int) and ``n`` training rows; None when that is every row (no draw)."""
    if max_samples == "all":
        return None
    m = SAMPLE_ROWS if max_samples == "auto" else int(max_samples)
    return m if m < n else None


def sample_index(rng, n: int, m: int) -> np.ndarray:
    """The sorted indices of a uniform random sample of ``m`` of ``n`` rows, drawn from ``rng``
    (numpy Generator): the one draw of the in-memory and out-of-core fits."""
    return np.sort(rng.choice(n, m, replace=False))


def check_budget(rows, m: int | None, max_samples) -> None:
    """Refuse an out-of-core fit whose robust stages' rows (``m``, None: every row) do not fit
    the memory budget as float64, saying how to fix it."""
    count = rows.n if m is None else m
    need = 8 * count * rows.d
    if need > budget_bytes():
        raise ValueError(f"ROBPCA fits its robust stages on {count} rows (max_samples={max_samples!r}), "
                         f"{need / 2**20:.0f} MB as float64 for this table's {rows.d} columns, beyond the "
                         f"out-of-core memory budget ({budget_bytes() / 2**20:.0f} MB); set a smaller "
                         f"max_samples ('auto' samples {SAMPLE_ROWS} rows), raise the budget "
                         f"(robustcore.bigdata.settings(memory_budget=...)) or select fewer columns")


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


def sampled_rows(rows, how: str, rng, rep, m: int | None = None):
    """(the scaled rows of a uniform random sample of ``m`` (default SAMPLE_ROWS) rows of the
    lazy ``rows``, in table order; the scaling fields fitted on every row), with ``rng`` (numpy
    Generator; :func:`sample_index`). The caller has checked the budget (:func:`check_budget`)."""
    m = min(rows.n, SAMPLE_ROWS if m is None else m)
    rep(0.0, "column moments")
    sc = scan(rows, how, method="ROBPCA", scatter=False, progress=rep.span(0.0, 0.5))
    idx = sample_index(rng, rows.n, m)
    S = rows.reduce(functools.partial(_Picked, idx), progress=rep.span(0.5, 1.0), message="sample").rows(rows.d)
    return apply_scaling(S, sc.center, sc.scale), sc.scaling
