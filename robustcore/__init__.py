"""robustcore: robust subspace methods, anomaly scores, feature ranking and online classifiers.

numpy, scipy and scikit-learn, no Qt. Every estimator is a scikit-learn estimator (pipelines,
clone, grid search, DataFrames; ``score_samples`` higher = more normal)::

    from robustcore import PCA, CoherencePursuit, PCP, ROBPCA, ResidualScorer, ESFS, SCW
"""
from __future__ import annotations

import importlib

__version__ = "0.1.0"

# Everything is imported on first use: `import robustcore` stays cheap for the command line, and
# robustcore._blas_policy can be imported before numpy (programs of ours set BLAS's thread count
# through it, and BLAS reads it when numpy loads).
_LAZY = {
    "Cancelled": "._progress",
    "NotFittedError": "._base",
    "Param": "._params",
    "PCA": ".subspace.pca",
    "CoherencePursuit": ".subspace.coherence_pursuit",
    "PCP": ".subspace.pcp",
    "ROBPCA": ".subspace.robpca",
    "ResidualScorer": ".anomaly",
    "ESFS": ".features.esfs",
    "SCW": ".online.scw",
    "Dataset": ".datasets",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'robustcore' has no attribute {name!r}")
