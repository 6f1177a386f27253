"""What every data set is, in memory or on disk: the one declared data type methods and views read.

:class:`~robustcore.datasets.Dataset` (rows in memory) and
:class:`~robustcore.bigdata.LazyDataset` (rows left on disk, read a block at a time) both
implement :class:`DatasetLike`. Code that must tell them apart reads ``is_lazy`` and ``kind``;
code that may be handed something else (a bare array) asks ``isinstance(x, DatasetLike)``
first. Which methods take which data is the registry's declaration
(:attr:`robustcore.methods.Method.lazy_kinds`), not this module's.

This module imports nothing but the standard library: the row passes (``robustcore._passes``)
ask it whether their input is lazy.
"""
from __future__ import annotations

from typing import Any, Literal, Protocol, runtime_checkable

__all__ = ["Kind", "KINDS", "DatasetLike", "is_lazy_dataset"]

#: What a data set's rows are: samples of a table, or the frames of a video (or image stack).
Kind = Literal["table", "frames"]
KINDS: tuple[Kind, ...] = ("table", "frames")


@runtime_checkable
class DatasetLike(Protocol):
    """A data set: ``n_samples`` rows of ``n_features`` values, named, with where it came from.

    is_lazy : True when the rows stay on disk (no ``X`` in memory; ``dense()`` loads them when
        they fit).
    kind : "frames" when each row is an image (a video, an image stack; ``image_shape`` gives
        its height and width), else "table".
    provenance : the :class:`~robustcore.datasets.Provenance` that finds and verifies it again.
    fingerprint() : the identity results are tagged with (a file hash when known, else one of
        the content).
    """

    is_lazy: bool
    kind: Kind
    name: str
    provenance: Any     # a robustcore.datasets.Provenance (not imported: it needs numpy and scipy)

    @property
    def n_samples(self) -> int: ...

    @property
    def n_features(self) -> int: ...

    def fingerprint(self) -> str: ...


def is_lazy_dataset(x) -> bool:
    """Whether ``x`` is a data set whose rows stay on disk (False for arrays and None)."""
    return isinstance(x, DatasetLike) and x.is_lazy
