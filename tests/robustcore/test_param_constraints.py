"""One validator: for every registered estimator and every declared parameter, scikit-learn's
validator run over the class's ``_parameter_constraints`` and the fit's own check
(``Estimator._validate_params``, i.e. ``Param``) accept the same edge values, and refuse them
with the same message."""
from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.utils._param_validation import InvalidParameterError, validate_parameter_constraints

from robustcore.methods import METHODS


def _classes():
    return sorted({m.estimator_class for m in METHODS.values()}, key=lambda c: c.__name__)


class _Other:
    def __repr__(self):
        return "<other>"


def edge_values(p) -> list:
    """Values at and around the edges of declaration ``p``: bools where numbers go, integral
    floats where integers go, NaN, infinities, negatives, zero, each bound and its neighbours,
    strings outside the set, None, numpy scalars and things of no allowed type."""
    vals = [None, True, False, np.bool_(True), 0, 1, -1, 0.0, -0.5, 0.5, 2.5, 3.0, 7, np.int64(2),
            np.float32(0.5), math.nan, math.inf, -math.inf, 10 ** 9, 2 ** 40, "", "auto", "nonsense",
            "None", "1", _Other(), [1], np.random.default_rng(0), np.random.RandomState(0)]
    for bound in (p.low, p.high):
        if bound is not None:
            vals += [bound, float(bound), bound - 1, bound + 1, math.nextafter(bound, -math.inf),
                     math.nextafter(bound, math.inf)]
            if float(bound).is_integer():
                vals += [int(bound), np.int64(bound), np.float64(bound)]
    for c in [*(p.choices or ()), *p.special]:
        vals.append(c)
        if isinstance(c, str):
            vals += [c.upper(), c + " ", np.str_(c)]
        elif not isinstance(c, bool):
            vals += [float(c), np.int64(c), str(c)]
    return vals


def _sklearn_refusal(cls, name, value):
    try:
        validate_parameter_constraints({name: cls._parameter_constraints[name]}, {name: value},
                                       caller_name=cls.__name__)
    except InvalidParameterError as exc:
        return str(exc)
    return None


def _own_refusal(cls, name, value):
    est = cls().set_params(**{name: value})
    try:
        est._validate_params()
    except InvalidParameterError as exc:
        return str(exc)
    return None


@pytest.mark.parametrize("cls", _classes(), ids=lambda c: c.__name__)
def test_both_validators_accept_and_refuse_the_same_edge_values(cls):
    checked = refused = 0
    for p in cls.param_specs():
        for value in edge_values(p):
            ours = _own_refusal(cls, p.name, value)
            theirs = _sklearn_refusal(cls, p.name, value)
            assert (ours is None) == (theirs is None), (
                f"{cls.__name__}.{p.name}={value!r}: the fit {'refuses' if ours else 'accepts'} it, "
                f"scikit-learn's constraints {'refuse' if theirs else 'accept'} it")
            assert ours == theirs
            checked += 1
            refused += ours is not None
    # the edges are edges: both sides of each declaration are exercised
    assert 0 < refused < checked


def test_the_known_disagreements_are_gone():
    """What scikit-learn's plain constraints got wrong: a bool as a count, an integral float
    refused, a numpy integer refused as a choice, a bool as a seed."""
    from robustcore import PCA, CoherencePursuit
    msg = _own_refusal(PCA, "n_components", True)
    assert msg == _sklearn_refusal(PCA, "n_components", True) == (
        "The 'n_components' parameter of PCA must be an integer >= 1 or None (elbow of the scree "
        "plot). Got True instead.")
    assert _sklearn_refusal(PCA, "n_components", 3.0) is None and PCA(3.0)._validate_params()["n_components"] == 3
    assert _sklearn_refusal(CoherencePursuit, "norm", np.int64(1)) is None
    assert _sklearn_refusal(CoherencePursuit, "random_state", True) is not None
    assert _sklearn_refusal(CoherencePursuit, "random_state", np.random.default_rng(1)) is None


@pytest.mark.parametrize("cls", _classes(), ids=lambda c: c.__name__)
def test_constraints_are_scikit_learns_vocabulary(cls):
    """Tools that read the constraints (scikit-learn's estimator checks make invalid values from
    them) see its own types: an Interval with the declared bounds, string options."""
    from sklearn.utils._param_validation import Interval, StrOptions, make_constraint
    for p in cls.param_specs():
        made = [make_constraint(c) for c in cls._parameter_constraints[p.name]]
        if p.kind in (int, float) and p.choices is None:
            (interval,) = [c for c in made if isinstance(c, Interval)]
            assert (interval.left, interval.right) == (p.low, p.high)
        if p.choices is not None and all(isinstance(c, str) for c in p.choices):
            assert any(isinstance(c, StrOptions) and c.options == set(p.choices) for c in made)
