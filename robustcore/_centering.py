"""The ``center`` parameter: a location per column subtracted before a method looks at the
data, declared once for every estimator that has it (PCP, Coherence Pursuit).

* ``"none"``: the data as they are: entries are measured from zero.
* ``"median"``: each column's median: not moved by a minority of gross errors in the column.
* ``"mean"``: each column's mean.
* ``"affine"`` (Coherence Pursuit only): the median, then one more constant coordinate, a
  robust length of the centred rows, before the rows are normalised (homogeneous
  coordinates: the subspace through the origin of the lifted rows is a flat of the data;
  ``robustcore.subspace._cop_affine``).

Why it matters: a method that measures entries from zero (PCP's l1 penalty, Coherence
Pursuit's row normalisation) gives a different answer when a column is shifted by a constant,
though nothing about which rows are unusual has changed. With a centre, adding a constant to a
column changes the centre by that constant and nothing else.

Numpy only: the registry reads the declaration without importing scikit-learn.
"""
from __future__ import annotations

import numpy as np

from ._params import Param

__all__ = ["CENTERS", "AFFINE_CENTERS", "center_param", "column_location"]

CENTERS = ("none", "median", "mean")
# Coherence Pursuit's: the centres plus the homogeneous-coordinates one (module doc)
AFFINE_CENTERS = CENTERS + ("affine",)


def center_param(default: str, doc: str = "", choices=CENTERS) -> Param:
    """The ``center`` declaration; each estimator states its default, and in ``doc`` why."""
    text = ("Location subtracted from each column first: none (entries measured from zero), the "
            "median (robust to gross errors) or the mean")
    if "affine" in choices:
        text += ("; affine: the median plus one constant coordinate, so the subspace is a flat "
                 "that keeps the common offset (none's model without its dependence on each "
                 "column's zero)")
    return Param("center", str, default, text + ".", choices=choices, doc=doc)


def column_location(X, how: str) -> np.ndarray:
    """Each column's location (d,) of a dense ``X`` (n, d) by ``how`` (zeros for "none")."""
    if how == "median":
        return np.median(X, axis=0)
    if how == "mean":
        return X.mean(axis=0)
    if how == "none":
        return np.zeros(X.shape[1])
    raise ValueError(f"center must be one of {', '.join(CENTERS)}; got {how!r}")
