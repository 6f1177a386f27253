"""One rule, for NPZ archives and MATLAB files alike, for choosing the data and the labels among
the arrays a file holds, and for recognising a 0/1 labels array as known outliers."""
from __future__ import annotations

from dataclasses import dataclass, field
from collections.abc import Callable

import numpy as np

from ._errors import LoadError, shown

__all__ = ["DATA_NAMES", "LABEL_NAMES", "Choice", "pick_arrays", "known_outliers"]

# Names tried, in order, when the user has not chosen.
DATA_NAMES = ("X", "x", "data", "D", "features")
LABEL_NAMES = ("y", "Y", "labels", "label", "gt", "target", "targets")


@dataclass
class Choice:
    data: str
    labels: str | None
    warnings: list = field(default_factory=list)


def _size(shape) -> int:
    return int(np.prod(shape, dtype=np.float64)) if len(shape) else 1


def pick_arrays(file: str, shapes: dict, *, data: str | None, labels: str | None, options: tuple[str, str],
                listing: str, data_ok: Callable[[str], bool], labels_ok: Callable[[str], bool],
                samples: Callable[[tuple], int], transposed_hint: bool = False) -> Choice:
    """Choose the data array and the labels array of a file holding several named arrays.

    ``shapes`` maps each array's name to its shape; ``data``/``labels`` are the user's choices
    (None: guess; labels ``'none'``: no labels), ``options`` the two option names for messages.
    ``data_ok(name)`` says whether an array can be the data, ``labels_ok`` the labels;
    ``samples(shape)`` gives the number of samples of a data array of that shape (-1: unknown).
    Guessing takes the first of :data:`DATA_NAMES`, else the only matrix (2-D or 3-D, no side
    of 1), else the only usable array; the labels are the first of :data:`LABEL_NAMES` holding one
    entry per sample. A labels
    array that is there but has the wrong length is not dropped silently: it becomes a warning.
    """
    data_opt, labels_opt = options
    if data is None:
        data = next((c for c in DATA_NAMES if c in shapes and data_ok(c)), None)
        if data is None:
            usable = [k for k in shapes if data_ok(k)]
            matrices = [k for k in usable if len(shapes[k]) in (2, 3) and min(shapes[k]) > 1] or usable
            if len(matrices) != 1:
                raise LoadError(f"{file} holds several arrays ({listing}); choose the data with {data_opt}='NAME'")
            data = matrices[0]
    elif data not in shapes:
        raise LoadError(f"{data_opt}={shown(data)} is not in {file}; it holds: {listing}")
    warnings = []
    if labels is not None and labels.lower() == "none":
        labels = None
    elif labels is None:
        n = samples(shapes[data])
        named = [c for c in LABEL_NAMES if c in shapes and c != data and labels_ok(c)]
        labels = next((c for c in named if n in shapes[c] and _size(shapes[c]) == n), None)
        if labels is None and named and n >= 0:
            c = named[0]
            hint = ("; if samples are in columns pass transpose=True" if transposed_hint and
                    _size(shapes[c]) in shapes[data] else "")
            warnings.append(f"{file}: {c!r} looks like labels but holds {_size(shapes[c]):,} entries for {n:,} "
                            f"samples, so the data was loaded without labels (choose them with "
                            f"{labels_opt}='NAME'{hint})")
    elif labels not in shapes:
        raise LoadError(f"{labels_opt}={shown(labels)} is not in {file}; it holds: {listing}")
    return Choice(data, labels, warnings)


def known_outliers(labels: np.ndarray, name: str) -> tuple[np.ndarray, str] | None:
    """(mask, description) when ``labels`` is a 0/1 array with fewer 1s than 0s, the way outlier
    benchmarks (ODDS) mark their outliers: 1 = outlier. None otherwise."""
    y = np.asarray(labels)
    if y.dtype.kind not in "biuf" or y.size == 0:
        return None
    values = np.unique(y)
    if values.size != 2 or not np.array_equal(values, [0, 1]):
        return None
    ones = int(np.count_nonzero(y == 1))
    if ones >= y.size - ones:
        return None
    return y == 1, f"{name}: 1 = outlier"
