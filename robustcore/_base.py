"""Base class giving every estimator scikit-learn's conventions from its parameter declaration."""
from __future__ import annotations

from typing import Any, ClassVar

from ._params import Param, validate_params

__all__ = ["ConvergenceWarning", "Estimator", "NotFittedError"]


class NotFittedError(ValueError, AttributeError):
    """Raised when a method that needs a fitted estimator is called before ``fit``."""


class ConvergenceWarning(UserWarning):
    """Warned when an iterative fit stops at its iteration limit before meeting its tolerance.

    The estimator is still fitted (with ``converged_ = False``) so the partial result can be inspected.
    """


class Estimator:
    """Parameters live in ``__init__`` (stored unchanged), are declared once in ``_params`` and
    validated in ``fit``; fitted attributes end in ``_``.

    Subclasses write an explicit ``__init__`` that stores every declared parameter under its own
    name, as scikit-learn requires, and call ``self._start_fit()`` first thing in ``fit`` to get
    the validated parameters and drop any previous fit (so a failed or cancelled fit leaves the
    estimator unfitted rather than half-fitted).
    """

    _params: ClassVar[tuple[Param, ...]] = ()

    @classmethod
    def param_specs(cls) -> tuple[Param, ...]:
        return cls._params

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        return {p.name: getattr(self, p.name) for p in self._params}

    def set_params(self, **params: Any) -> "Estimator":
        known = {p.name for p in self._params}
        for k, v in params.items():
            if k not in known:
                raise ValueError(f"unknown parameter {k!r} for {type(self).__name__}; "
                                 f"valid parameters: {', '.join(sorted(known))}")
            setattr(self, k, v)
        return self

    def __repr__(self) -> str:
        changed = []
        for p in self._params:
            v = getattr(self, p.name, p.default)
            try:
                same = v == p.default
                same = bool(same)
            except Exception:
                same = False
            if not same:
                changed.append(f"{p.name}={v!r}")
        return f"{type(self).__name__}({', '.join(changed)})"

    # -- fitting helpers -------------------------------------------------------------------
    def _fitted_names(self) -> list[str]:
        return [k for k in vars(self) if k.endswith("_") and not k.startswith("_")]

    def _clear_fit(self) -> None:
        for k in self._fitted_names():
            delattr(self, k)

    def _start_fit(self) -> dict[str, Any]:
        """Drop any previous fit and return the validated parameters."""
        self._clear_fit()
        return validate_params(self._params, self.get_params())

    def _set_fitted(self, **attrs: Any) -> None:
        """Publish all fitted attributes at once, at the very end of a successful fit."""
        for k, v in attrs.items():
            if not k.endswith("_"):
                raise AssertionError(f"fitted attribute {k!r} must end in '_'")
            setattr(self, k, v)

    def _check_fitted(self, *names: str) -> None:
        names = names or ()
        fitted = self._fitted_names()
        if not fitted or any(n not in fitted for n in names):
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet; call fit(X) first")

    def __sklearn_is_fitted__(self) -> bool:
        return bool(self._fitted_names())
