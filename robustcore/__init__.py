"""robustcore: robust subspace methods, anomaly scores, feature ranking and online classifiers.

numpy, scipy and scikit-learn, no Qt. Every estimator is a scikit-learn estimator (pipelines,
clone, grid search, DataFrames; ``score_samples`` higher = more normal)::

    from robustcore import PCA, CoherencePursuit, PCP, ResidualScorer, ESFS, SCW
"""
from __future__ import annotations

import importlib

from ._base import NotFittedError
from ._params import Param
from ._progress import Cancelled

__version__ = "0.1.0"

_LAZY = {
    "PCA": ".subspace.pca",
    "CoherencePursuit": ".subspace.coherence_pursuit",
    "PCP": ".subspace.pcp",
    "ResidualScorer": ".anomaly",
    "ESFS": ".features.esfs",
    "SCW": ".online.scw",
    "Dataset": ".datasets",
}

__all__ = ["Cancelled", "NotFittedError", "Param", "__version__", *_LAZY]


def __getattr__(name):
    # Estimators are imported on first use so `import robustcore` stays cheap for the CLI.
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'robustcore' has no attribute {name!r}")
