"""scikit-learn's ``_parameter_constraints`` vocabulary for our ``Param`` declarations.

scikit-learn's own constraints differ from the declarations at the edges: ``Interval(Integral)``
takes ``True`` (a bool is an Integral), refuses ``3.0`` where a declaration takes it as 3, and
``Options(int, {1, 2})`` refuses ``np.int64(2)``. So each part of a declaration
(:meth:`~._params.Param.parts`) becomes a subclass of scikit-learn's matching constraint
(tools that read the constraints still see an ``Interval`` with its bounds, or the options)
whose test is the declaration's own and whose wording is the declaration's: both validators
accept the same values and refuse them with the same message
(tests/robustcore/test_param_constraints.py).

This module imports scikit-learn; ``robustcore._params`` does not (the registry reads the
declarations without it), so the estimator base builds the constraints when a class is defined.
"""
from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import Interval, Options, StrOptions

from ._params import _INVALID, _match_choice

__all__ = ["constraints", "constraint_of"]


class _Worded:
    """The wording of a declaration's part stands for scikit-learn's in its messages."""

    text = ""

    def __str__(self):
        return self.text


class _Numbers(_Worded, Interval):
    def __init__(self, param, text):
        if param.low is None and param.high is None:
            closed = "neither"
        elif param.low is None:
            closed = "right" if param.high_inclusive else "neither"
        elif param.high is None:
            closed = "left" if param.low_inclusive else "neither"
        else:
            closed = {(True, True): "both", (True, False): "left", (False, True): "right",
                      (False, False): "neither"}[(param.low_inclusive, param.high_inclusive)]
        super().__init__(Integral if param.kind is int else Real, param.low, param.high, closed=closed)
        self.param, self.text = param, text

    def is_satisfied_by(self, val):
        return self.param._number(val) is not None


class _Choices(_Worded, Options):
    def __init__(self, choices, text):
        super().__init__(object, set(choices))
        self.choices, self.text = tuple(choices), text

    def is_satisfied_by(self, val):
        return _match_choice(val, self.choices) is not _INVALID


class _Strings(_Worded, StrOptions):
    """Special strings, or choices that are all strings (scikit-learn's estimator checks then
    try a string that is not one of them)."""

    def __init__(self, strings, text):
        super().__init__(set(strings))
        self.strings, self.text = tuple(strings), text

    def is_satisfied_by(self, val):
        return isinstance(val, str) and _match_choice(val, self.strings) is not _INVALID


class _Instances(_Worded, Options):
    def __init__(self, types, text, hidden=False):
        super().__init__(object, set())
        self.types, self.text, self.hidden = types, text, hidden

    def is_satisfied_by(self, val):
        return isinstance(val, self.types)


def constraints(param) -> list:
    """``param``'s declaration in scikit-learn's ``_parameter_constraints`` vocabulary: one
    constraint per part (``Param.parts``), each refusing what ``Param._check`` refuses, and the
    values a script may pass unlisted (``unlisted``: a seed's Generator) hidden from messages."""
    out = [constraint_of(param, kind, text) for kind, text in param.parts()]
    unlisted = getattr(param, "unlisted", ())
    if unlisted:
        out.append(_Instances(unlisted, "", hidden=True))
    return out


def constraint_of(param, kind: str, text: str):
    """The scikit-learn constraint of one part ``(kind, text)`` of ``param``'s declaration."""
    if kind == "special":
        return _Strings(param.special, text)
    if kind == "choices":
        if all(isinstance(c, str) for c in param.choices):
            return _Strings(param.choices, text)
        return _Choices(param.choices, text)
    if kind == "bool":
        return _Instances((bool, np.bool_), text)
    if kind == "number":
        return _Numbers(param, text)
    if kind == "none":
        return _Instances(type(None), text)
    return _Instances(param.kind, text)
