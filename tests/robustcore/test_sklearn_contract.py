"""scikit-learn's own estimator checks over every registered estimator, plus pipelines, clone,
grid search and DataFrames.

Every estimator of the registry (robustcore.methods.METHODS) is checked, so a new method is
covered as soon as it is registered. ``CHECK_PARAMS`` gives the few parameters a class needs
for scikit-learn's small test data sets (documented with each); ``EXPECTED_FAILURES`` lists the
checks that cannot pass, each with its reason: they are reported as expected failures (xfail),
never silenced.
"""
from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.utils.estimator_checks import parametrize_with_checks

from robustcore.methods import METHODS

# scikit-learn's checks fit on make_blobs data with 2 features: a rank-2 subspace of 2-D data
# leaves no residual, so the subspace methods get rank 1. On three clean Gaussian blobs the
# methods' own limits (contamination="auto") rightly flag nothing, while the outlier checks want
# both -1 and +1 from predict: they run with a fraction (the check then also tries others).
CHECK_PARAMS = {
    "PCA": {"n_components": 1, "contamination": 0.1},
    "CoherencePursuit": {"n_components": 1, "contamination": 0.1},
    "ResidualScorer": {"n_components": 1, "contamination": 0.1},
    "PCP": {"contamination": 0.1},
}

EXPECTED_FAILURES: dict[str, dict[str, str]] = {}


def _estimators():
    classes = sorted({m.estimator_class for m in METHODS.values()}, key=lambda c: c.__name__)
    return [cls(**CHECK_PARAMS.get(cls.__name__, {})) for cls in classes]


def _expected_failures(est):
    return EXPECTED_FAILURES.get(type(est).__name__, {})


@parametrize_with_checks(_estimators(), expected_failed_checks=_expected_failures)
def test_sklearn_check(estimator, check):
    check(estimator)
