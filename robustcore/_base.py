"""The estimator base: scikit-learn's ``BaseEstimator`` driven by our ``Param`` declarations.

Each estimator declares its parameters once (``_params``, a tuple of :class:`~._params.Param`).
From that declaration come scikit-learn's ``_parameter_constraints`` (for
``check_param_validation`` and any tool that reads them), the validation in ``fit`` (one message
style: what is wrong, what is allowed, what was received), the window's forms, the command
line's help and the Parameters section of the estimator's docstring.
"""
from __future__ import annotations

import functools
import inspect
from typing import Any, ClassVar

from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.utils._param_validation import InvalidParameterError

from ._blas_policy import fit_blas_threads
from ._constraints import constraints
from ._docstring import with_parameters
from ._params import _INVALID, Param, param_message
from ._progress import Reporter

__all__ = ["ConvergenceWarning", "DegenerateFitWarning", "Estimator", "NotFittedError", "fit_protocol"]


class DegenerateFitWarning(UserWarning):
    """A fit that ran to its end but whose result cannot mean what the method promises: PCP
    with an empty or a full-rank low-rank part, a subspace that leaves no residual. The message
    says what to change (a parameter, the scaling, or another method)."""


def fit_protocol(fn=None, *, partial: bool = False):
    """Decorator of every ``fit`` (``@fit_protocol``) and ``partial_fit``
    (``@fit_protocol(partial=True)``): what each fit does besides its algorithm, written once.

    The body is written ``fit(self, X, y=None, progress=None, *, p)`` and holds only the
    algorithm. Before it runs, the previous fit is dropped (``partial``: kept) and the declared
    parameters are validated (``_validate_params``: one message style) into ``p``; ``progress``
    arrives as a :class:`~._progress.Reporter` (spans, cancel: ``Cancelled``). It runs under
    robustcore's BLAS thread rule (:mod:`._blas_policy`), and a fit that fails or is cancelled
    leaves the estimator unfitted rather than half-fitted (scikit-learn's ``validate_data`` sets
    ``n_features_in_`` before the work starts); a failed ``partial_fit`` keeps what earlier calls
    learned. A body without ``p`` or ``progress`` gets neither. The signature callers see
    (``inspect``, scikit-learn) is the body's without ``p``.
    """
    if fn is None:
        return functools.partial(fit_protocol, partial=partial)
    sig = inspect.signature(fn)
    wants_p = "p" in sig.parameters
    public = sig.replace(parameters=[q for q in sig.parameters.values() if q.name != "p"])
    names = list(public.parameters)[1:]           # after self
    at = names.index("progress") if "progress" in names else None

    @functools.wraps(fn)
    def fit(self, *args, **kwargs):
        with fit_blas_threads():
            try:
                if wants_p:
                    kwargs["p"] = self._validate_params() if partial else self._start_fit()
                elif not partial:
                    self._clear_fit()
                if at is not None:
                    # found by position once, when the class is built: partial_fit may be
                    # called once per sample
                    if len(args) > at:
                        args = (*args[:at], Reporter.of(args[at]), *args[at + 1:])
                    else:
                        kwargs["progress"] = Reporter.of(kwargs.get("progress"))
                return fn(self, *args, **kwargs)
            except BaseException:
                if not partial:
                    self._clear_fit()
                raise
    fit.__signature__ = public
    return fit


class Estimator(BaseEstimator):
    """Parameters live in ``__init__`` (stored unchanged), are declared once in ``_params`` and
    validated in ``fit``; fitted attributes end in ``_``.

    The class docstring's Parameters section is rendered from ``_params`` when the subclass is
    defined (:mod:`._docstring`); the docstring itself writes the summary and numpydoc's other
    standard sections. Subclasses write an explicit ``__init__`` (first parameter positional, the rest keyword-only)
    that stores every declared parameter under its own name, as scikit-learn requires; the
    tests check that its defaults are the declared ones. ``fit`` is decorated with
    :func:`fit_protocol`, which drops any previous fit and hands the body the validated
    parameters; the body publishes its results with ``_set_fitted`` at the end.
    """

    _params: ClassVar[tuple[Param, ...]] = ()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._parameter_constraints = {p.name: constraints(p) for p in cls._params}
        # The Parameters section is rendered from the declarations (robustcore._docstring), so
        # each parameter's help is written once, in its Param.
        if isinstance(cls.__dict__.get("__doc__"), str):
            cls.__doc__ = with_parameters(cls.__doc__, cls._params)

    @classmethod
    def param_specs(cls) -> tuple[Param, ...]:
        return cls._params

    def _validate_params(self) -> dict[str, Any]:
        """The validated parameters, or :class:`InvalidParameterError` in the one message
        style (``param_message``), the one scikit-learn's own validator gives from
        ``_parameter_constraints``."""
        # the declared names, read directly: get_params inspects __init__ on every call, which
        # costs more than a one-sample partial_fit
        values = {p.name: getattr(self, p.name) for p in self._params}
        out = {}
        for p in self._params:
            v = p._check(values[p.name])
            if v is _INVALID:
                raise InvalidParameterError(param_message(p.name, p.allowed(), values[p.name],
                                                          type(self).__name__))
            out[p.name] = v
        return out

    # -- fitting helpers -------------------------------------------------------------------
    def _fitted_names(self) -> list[str]:
        return [k for k in vars(self) if k.endswith("_") and not k.startswith("_")]

    def _clear_fit(self) -> None:
        for k in self._fitted_names():
            delattr(self, k)

    def _start_fit(self) -> dict[str, Any]:
        """Drop any previous fit and return the validated parameters (:func:`fit_protocol`'s
        first step)."""
        self._clear_fit()
        return self._validate_params()

    def _set_fitted(self, **attrs: Any) -> None:
        """Publish fitted attributes (all at once, at the end of a successful fit)."""
        for k, v in attrs.items():
            if not k.endswith("_"):
                raise AssertionError(f"fitted attribute {k!r} must end in '_'")
            setattr(self, k, v)

    def __sklearn_is_fitted__(self) -> bool:
        return bool(self._fitted_names())
