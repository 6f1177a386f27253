"""Exact order statistics of a long numpy array without sorting or partitioning all of it.

``np.partition`` of n values needs a copy it may reorder and several sweeps over it: at 30M
values (the limits, the calibration rows' medians) 0.3-0.5 s each, on one thread. Here a strided
sample of about :data:`SAMPLE` values brackets each wanted rank: for the rank's share q of the
values, the sample's quantiles q -/+ :data:`SIGMAS` binomial standard deviations. One sweep counts
the values below the bracket and gathers those inside it (a few per cent of them), and the
ranks are found in that small set. When a bracket misses its rank (the sample was unlucky, or
NaN fills the top), the whole array is partitioned as before. The answer is the same either way,
to the bit: it is the value ``np.partition`` puts at that rank.
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["kth_values", "BRACKET_MIN", "SAMPLE", "SIGMAS", "SPLIT_MIN"]

# Arrays shorter than this are partitioned directly (as quick, and simpler).
BRACKET_MIN = 1 << 18
# Values in the sample that places the brackets (every n // SAMPLE-th).
SAMPLE = 1 << 15
# Half-width of a bracket in binomial standard deviations of the sampled quantile.
SIGMAS = 5.0
# Values from which the sweeps run on two halves side by side where a core is free (_sweeps).
SPLIT_MIN = 1 << 19


def kth_values(values, ks, exclude=None, *, own=False) -> np.ndarray:
    """The ks-th smallest (0-based) of the entries of ``values`` (1-d) where ``exclude`` is not
    True, as ``np.partition`` of those entries places them. ``own``: ``values`` is the caller's
    to reorder (no copy is made on the fallback path)."""
    v = np.asarray(values).ravel()
    ks = np.asarray(ks, dtype=np.int64).ravel()
    keep = None if exclude is None else ~np.asarray(exclude, dtype=bool).ravel()
    if v.size >= BRACKET_MIN and ks.size:
        found = _bracketed(v, ks, keep)
        if found is not None:
            return found
    w = (v if own else v.copy()) if keep is None else v[keep]
    w.partition(np.unique(ks))
    return w[ks]


def _bracketed(v, ks, keep):
    m = v.size if keep is None else int(np.count_nonzero(keep))
    if m == 0 or ks.min() < 0 or ks.max() >= m:
        return None
    stride = max(1, v.size // SAMPLE)
    s = v[::stride] if keep is None else v[::stride][keep[::stride]]
    if s.size < 64:
        return None
    s = np.sort(s)
    groups = []                      # [low, high, [ks]] with overlapping brackets merged
    for k in np.unique(ks).tolist():
        q = k / m
        half = SIGMAS * math.sqrt(q * (1.0 - q) / s.size) + 2.0 / s.size
        i, j = math.floor((q - half) * s.size), math.ceil((q + half) * s.size)
        low = s[i] if i >= 0 else -np.inf
        high = s[j] if j < s.size else np.inf
        if not (low <= high):        # NaN at a bracket's end: partition instead
            return None
        if groups and low <= groups[-1][1]:
            groups[-1][1] = max(groups[-1][1], high)
            groups[-1][2].append(k)
        else:
            groups.append([low, high, [k]])
    found = {}
    for (_, _, group), (n_below, held) in zip(groups, _sweeps(v, keep, groups)):
        at = np.asarray(group, dtype=np.int64) - n_below
        if at.min() < 0 or at.max() >= held.size:
            return None
        held.partition(np.unique(at))
        found.update(zip(group, held[at].tolist()))
    return np.array([found[k] for k in ks.tolist()], dtype=v.dtype)


def _sweeps(v, keep, groups):
    """[(count of the kept values below the bracket, the kept values inside it, in order)] per
    bracket (low, high, _): the sweeps over the whole array. From :data:`SPLIT_MIN` values on,
    its two halves side by side where the process has a free core (``_lanes.both``): the counts
    added, the values joined in order, so the same answer (a few ms of sweeps between two
    threaded passes of a fit, which otherwise leave the other core idle)."""
    if v.size < SPLIT_MIN:
        return _sweep(v, keep, groups)
    from ._lanes import both
    h = v.size // 2
    a, b = both(lambda: _sweep(v[:h], None if keep is None else keep[:h], groups),
                lambda: _sweep(v[h:], None if keep is None else keep[h:], groups))
    return [(n1 + n2, np.concatenate([g1, g2])) for (n1, g1), (n2, g2) in zip(a, b)]


def _sweep(v, keep, groups):
    out = []
    with np.errstate(invalid="ignore"):
        for low, high, _ in groups:
            below = v < low
            inside = (v >= low) & (v <= high)
            if keep is not None:
                below &= keep
                inside &= keep
            n_below = int(np.count_nonzero(below))
            del below
            out.append((n_below, v[inside]))
            del inside
    return out
