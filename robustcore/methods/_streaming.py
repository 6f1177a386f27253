"""The streaming method's adapter: robustcore.bigdata's, imported when first run (it needs Dask
only then), given the method's rule and completed with what the views draw of its basis."""
from __future__ import annotations

from ._models import rows_in_memory
from ._rules import SPARSE_RULE

__all__ = ["run_online_rpca"]


def run_online_rpca(est, dataset, values, rep):
    """OR-PCA a batch of frames at a time, flagged by SPARSE_RULE; its components span a linear
    subspace (through the origin), so for data in memory the projection onto it too."""
    from ..bigdata._adapters import run_online_rpca as stream
    fields = stream(est, dataset, values, rep, SPARSE_RULE)
    sub = fields.get("subspace")
    if sub is not None and not dataset.is_lazy:
        fields["arrays"]["projection"] = rows_in_memory(dataset) @ sub.components.T
    return fields
