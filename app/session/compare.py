"""Comparing two runs' numbers: what a replay checks before it says it reproduced a session."""
from __future__ import annotations

from typing import Mapping

import numpy as np

__all__ = ["compare_arrays", "compare_results"]


def compare_arrays(a: Mapping, b: Mapping, rtol: float = 1e-7, atol: float = 1e-10) -> list[str]:
    """Differences between two name -> array mappings (empty list: the same numbers).

    Floating-point arrays are compared to tolerance, integer, boolean and text arrays exactly.
    """
    diffs = []
    for name in sorted(set(a) | set(b)):
        if name not in a or name not in b:
            diffs.append(f"'{name}' is in only one of the two")
            continue
        x, y = np.asarray(a[name]), np.asarray(b[name])
        if x.shape != y.shape:
            diffs.append(f"'{name}': shapes {x.shape} and {y.shape}")
        elif x.dtype.kind in "fc" or y.dtype.kind in "fc":
            if not np.allclose(x, y, rtol=rtol, atol=atol, equal_nan=True):
                err = float(np.max(np.abs(x.astype(complex) - y.astype(complex)))) if x.size else 0.0
                diffs.append(f"'{name}': max abs difference {err:.3g}")
        elif not np.array_equal(x, y):
            diffs.append(f"'{name}': {int(np.sum(x != y))} entries differ")
    return diffs


def compare_results(a, b, rtol: float = 1e-7, atol: float = 1e-10) -> list[str]:
    """Differences between two RunResults of the same method (empty list: the same numbers)."""
    def flat(res):
        return {f"{kind} {name}": v for kind in ("sample_scores", "flags", "arrays", "feature_scores")
                for name, v in getattr(res, kind).items()}
    return compare_arrays(flat(a), flat(b), rtol=rtol, atol=atol)
