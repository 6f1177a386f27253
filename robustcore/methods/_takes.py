"""Which data each method takes, declared once, and THE message when it cannot take them.

In memory every method takes any data set (an image stack is a table of pixels too). Opened out
of core (:class:`robustcore.bigdata.LazyDataset`) a method takes only the kinds listed here:
the subspace models fit a table a block of rows at a time, the streaming method reads a video a
batch of frames at a time, and the rest need their rows in memory. :func:`refusal` says so in
one message for :meth:`Method.run`, the window's method list and the command line alike.
"""
from __future__ import annotations

from ..datasets._kind import Kind

__all__ = ["LAZY_KINDS", "lazy_kinds", "lazy_methods", "refusal"]

#: method name -> the kinds of data it takes opened out of core (absent: in memory only).
LAZY_KINDS: dict[str, tuple[Kind, ...]] = {
    "pca": ("table",),
    "coherence-pursuit": ("table",),
    "robpca": ("table",),
    "residual": ("table",),
    "online-rpca": ("frames",),
}

# A data set's kind, and what a method that takes it is said to take, in words.
_IS = {"table": "a table", "frames": "a video"}
_TAKES = {"table": "a table", "frames": "video frames"}


def lazy_kinds(name: str) -> tuple[Kind, ...]:
    return LAZY_KINDS.get(name, ())


def lazy_methods(kind: Kind | None = None) -> tuple[str, ...]:
    """The methods that run on data of ``kind`` opened out of core (any kind: None)."""
    return tuple(name for name, kinds in LAZY_KINDS.items() if kind is None or kind in kinds)


def refusal(method, dataset=None, *, kind: Kind | None = None, lazy: bool = True,
            subject: str | None = None) -> str | None:
    """Why ``method`` cannot run on ``dataset`` (None: it can).

    Without a data set (the command line, before it opens a file it will read out of core) give
    the ``kind`` when known and the ``subject`` (what the data are called, e.g. "'big.zarr'").
    """
    if dataset is not None:
        lazy, kind, subject = dataset.is_lazy, dataset.kind, f"'{dataset.name}'"
    if not lazy:
        return None
    subject = subject or "the data"
    others = f"methods that run out of core{' on ' + _IS[kind] if kind else ''}: {', '.join(lazy_methods(kind))}"
    takes = lazy_kinds(method.name)
    if not takes:
        return f"{method.title} needs the data in memory, and {subject} is opened out of core; {others}"
    if kind is not None and kind not in takes:
        return (f"{method.title} takes {' or '.join(_TAKES[k] for k in takes)} out of core, and {subject} is "
                f"{_IS[kind]}; {others}")
    return None
