"""The ``center`` parameter: a location per column subtracted before a method looks at the
data, declared once for every estimator that has it (PCP, Coherence Pursuit).

* ``"none"``: the data as they are: entries are measured from zero.
* ``"median"``: each column's median: not moved by a minority of gross errors in the column.
* ``"mean"``: each column's mean.

Why it matters: a method that measures entries from zero (PCP's l1 penalty, Coherence
Pursuit's row normalisation) gives a different answer when a column is shifted by a constant,
though nothing about which rows are unusual has changed. With a centre, adding a constant to a
column changes the centre by that constant and nothing else.

Numpy only: the registry reads the declaration without importing scikit-learn.
"""
from __future__ import annotations

import numpy as np

from ._params import Param

__all__ = ["CENTERS", "center_param", "column_location"]

CENTERS = ("none", "median", "mean")


def center_param(default: str, doc: str = "") -> Param:
    """The ``center`` declaration; each estimator states its default, and in ``doc`` why."""
    return Param("center", str, default, "Location subtracted from each column first: none (entries "
                 "measured from zero), the median (robust to gross errors) or the mean.",
                 choices=CENTERS, doc=doc)


def column_location(X, how: str) -> np.ndarray:
    """Each column's location (d,) of a dense ``X`` (n, d) by ``how`` (zeros for "none")."""
    if how == "median":
        return np.median(X, axis=0)
    if how == "mean":
        return X.mean(axis=0)
    if how == "none":
        return np.zeros(X.shape[1])
    raise ValueError(f"center must be one of {', '.join(CENTERS)}; got {how!r}")
