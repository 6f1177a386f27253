"""Comparing two runs' numbers: what a replay checks before it says it reproduced a session."""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np

__all__ = ["compare_arrays", "compare_results", "compare_facts"]

# Facts that say where a run put its files or how long it took, not what it computed: never
# compared.
_WHERE = {("storage", "results_in")}

# Bytes of one block when an array is not in memory (a Zarr store): compared a block of rows at a
# time, so a replay of a 50-million-row run never holds a whole score column twice.
_BLOCK_BYTES = 32 << 20


def _blocks(x, y):
    """Pairs of numpy blocks of ``x`` and ``y`` (same shape): whole when both are in memory."""
    if isinstance(x, np.ndarray) and isinstance(y, np.ndarray) or not np.shape(x):
        yield np.asarray(x), np.asarray(y)
        return
    shape = tuple(x.shape)
    row = max(1, int(np.prod(shape[1:], dtype=np.int64)) * 8)
    step = max(1, _BLOCK_BYTES // row)
    for s in range(0, shape[0], step):
        yield np.asarray(x[s:s + step]), np.asarray(y[s:s + step])


def compare_arrays(a: Mapping, b: Mapping, rtol: float = 1e-7, atol: float = 1e-10) -> list[str]:
    """Differences between two name -> array mappings (empty list: the same numbers).

    Floating-point arrays are compared to tolerance, integer, boolean and text arrays exactly.
    Arrays held on disk (Zarr) are read a block of rows at a time.
    """
    diffs = []
    for name in sorted(set(a) | set(b)):
        if name not in a or name not in b:
            diffs.append(f"'{name}' is in only one of the two")
            continue
        x, y = a[name], b[name]
        if tuple(np.shape(x)) != tuple(np.shape(y)):
            diffs.append(f"'{name}': shapes {tuple(np.shape(x))} and {tuple(np.shape(y))}")
            continue
        err, differ, floating = 0.0, 0, False
        for xb, yb in _blocks(x, y):
            if xb.dtype.kind in "fc" or yb.dtype.kind in "fc":
                floating = True
                if not np.allclose(xb, yb, rtol=rtol, atol=atol, equal_nan=True):
                    err = max(err, float(np.max(np.abs(xb.astype(complex) - yb.astype(complex)))) if xb.size else 0.0)
                    differ += 1
            elif not np.array_equal(xb, yb):
                differ += int(np.sum(xb != yb))
        if differ:
            diffs.append(f"'{name}': max abs difference {err:.3g}" if floating else
                         f"'{name}': {differ} entries differ")
    return diffs


def compare_results(a, b, rtol: float = 1e-7, atol: float = 1e-10) -> list[str]:
    """Differences between two RunResults of the same method (empty list: the same numbers)."""
    def flat(res):
        return {f"{kind} {name}": v for kind in ("sample_scores", "flags", "arrays", "feature_scores")
                for name, v in res.fields_of(kind).items()}
    return compare_arrays(flat(a), flat(b), rtol=rtol, atol=atol)


def compare_facts(old: Mapping, new: Mapping, rtol: float = 1e-7) -> list[str]:
    """Differences between two runs' typed numbers (:meth:`robustcore.result.RunResult.facts`):
    numbers to ``rtol``, everything else exactly."""
    import math
    diffs = []
    for part in sorted(set(old) | set(new)):
        a, b = old.get(part), new.get(part)
        if not isinstance(a, Mapping) or not isinstance(b, Mapping):
            if a != b:
                diffs.append(f"'{part}': saved {a!r}, now {b!r}")
            continue
        for key in sorted(set(a) | set(b)):
            if (part, key) in _WHERE:
                continue
            x, y = a.get(key), b.get(key)
            numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (x, y))
            same = (math.isclose(float(x), float(y), rel_tol=rtol, abs_tol=1e-12) if numbers
                    else x == y or str(x) == str(y))
            if not same:
                diffs.append(f"'{part}.{key}': saved {x!r}, now {y!r}")
    return diffs
