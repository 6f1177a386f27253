"""Parameter declarations: each method states its parameters once.

The same :class:`Param` objects validate arguments in ``fit`` (one error style for the whole
library), describe the methods on the command line, and build the window's parameter forms.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

__all__ = ["Param", "SeedParam", "param_error", "validate_params", "check_range"]


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return repr(value)


def param_error(name: str, allowed: str, value: Any) -> ValueError:
    """The one error style: what is wrong, what is allowed, what was received."""
    return ValueError(f"{name} must be {allowed}; got {_fmt(value)}")


def _interval(low, high, low_inclusive, high_inclusive) -> str:
    if low is not None and high is not None:
        lb = "[" if low_inclusive else "("
        rb = "]" if high_inclusive else ")"
        return f"in {lb}{_fmt(low)}, {_fmt(high)}{rb}"
    if low is not None:
        return f"{'>=' if low_inclusive else '>'} {_fmt(low)}"
    if high is not None:
        return f"{'<=' if high_inclusive else '<'} {_fmt(high)}"
    return ""


def check_range(name: str, value, low=None, high=None, *, low_inclusive=True,
                high_inclusive=True, integer=False, hint: str = ""):
    """Check a number against bounds that may depend on the data (e.g. rank < min(n, d)).

    ``hint`` is appended to the message to say how to fix the problem.
    """
    kind = "an integer" if integer else "a number"
    allowed = f"{kind} {_interval(low, high, low_inclusive, high_inclusive)}".strip()
    if hint:
        allowed = f"{allowed} ({hint})"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise param_error(name, allowed, value)
    if integer and not float(value).is_integer():
        raise param_error(name, allowed, value)
    if not math.isfinite(float(value)):
        raise param_error(name, allowed, value)
    if low is not None and (value < low or (value == low and not low_inclusive)):
        raise param_error(name, allowed, value)
    if high is not None and (value > high or (value == high and not high_inclusive)):
        raise param_error(name, allowed, value)
    return int(value) if integer else float(value)


@dataclass(frozen=True)
class Param:
    """One declared parameter.

    kind: ``int``, ``float``, ``bool`` or ``str`` (``str`` needs ``choices``).
    ``allow_none`` means ``None`` is accepted and means "automatic"; ``none_label`` says what
    automatic does (shown in forms and help). ``low``/``high`` bound numbers; the bounds may be
    exclusive. ``advanced`` parameters are folded away in the GUI form.
    """

    name: str
    kind: type
    default: Any
    help: str
    low: float | None = None
    high: float | None = None
    low_inclusive: bool = True
    high_inclusive: bool = True
    choices: Sequence[Any] | None = None
    allow_none: bool = False
    none_label: str = "auto"
    advanced: bool = False
    # A parameter that exists only for scripts (e.g. a callable) is hidden from forms and CLI.
    scriptable_only: bool = False
    extra: Mapping[str, Any] = field(default_factory=dict)

    def allowed(self) -> str:
        """Human description of the allowed values, used in errors and help."""
        if self.choices is not None:
            text = "one of " + ", ".join(_fmt(c) for c in self.choices)
        elif self.kind is bool:
            text = "True or False"
        elif self.kind in (int, float):
            kind = "an integer" if self.kind is int else "a number"
            text = f"{kind} {_interval(self.low, self.high, self.low_inclusive, self.high_inclusive)}".strip()
        else:
            text = f"a {self.kind.__name__}"
        if self.allow_none:
            text += f", or None ({self.none_label})"
        return text

    def validate(self, value: Any) -> Any:
        """Return the value in canonical type, or raise ``ValueError`` in the library's style."""
        if value is None:
            if self.allow_none:
                return None
            raise param_error(self.name, self.allowed(), value)
        if self.choices is not None:
            if value in self.choices and not (isinstance(value, bool) and self.kind is not bool):
                return value
            raise param_error(self.name, self.allowed(), value)
        if self.kind is bool:
            if isinstance(value, (bool,)) or (hasattr(value, "dtype") and value.dtype == bool):
                return bool(value)
            raise param_error(self.name, self.allowed(), value)
        if self.kind in (int, float):
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                raise param_error(self.name, self.allowed(), value)
            if self.kind is int and not float(value).is_integer():
                raise param_error(self.name, self.allowed(), value)
            if not math.isfinite(float(value)):
                raise param_error(self.name, self.allowed(), value)
            v = int(value) if self.kind is int else float(value)
            if self.low is not None and (v < self.low or (v == self.low and not self.low_inclusive)):
                raise param_error(self.name, self.allowed(), value)
            if self.high is not None and (v > self.high or (v == self.high and not self.high_inclusive)):
                raise param_error(self.name, self.allowed(), value)
            return v
        if not isinstance(value, self.kind):
            raise param_error(self.name, self.allowed(), value)
        return value

    def parse(self, text: str) -> Any:
        """Parse a value typed by a user (command line ``key=value`` or a form) and validate it."""
        raw = text.strip()
        if self.allow_none and raw.lower() in ("none", "auto", ""):
            return None
        if self.kind is bool:
            low = raw.lower()
            if low in ("1", "true", "yes", "on"):
                return True
            if low in ("0", "false", "no", "off"):
                return False
            raise param_error(self.name, self.allowed(), raw)
        if self.kind in (int, float) and self.choices is None:
            try:
                num = float(raw)
            except ValueError:
                raise param_error(self.name, self.allowed(), raw) from None
            if self.kind is int and num.is_integer():
                num = int(num)
            return self.validate(num)
        if self.choices is not None:
            for c in self.choices:
                if str(c) == raw:
                    return c
            raise param_error(self.name, self.allowed(), raw)
        return self.validate(raw)


class SeedParam(Param):
    """``random_state``: None (fresh randomness), a non-negative int seed, or, from scripts, a
    ``numpy.random.Generator`` (which forms and the command line cannot express)."""

    def __init__(self, help: str, name: str = "random_state", **kw):
        kw.setdefault("advanced", True)
        kw.setdefault("none_label", "fresh randomness")
        super().__init__(name, int, None, help, low=0, allow_none=True, **kw)

    def validate(self, value: Any) -> Any:
        if type(value).__name__ == "Generator" and hasattr(value, "bit_generator"):
            return value
        return super().validate(value)


def validate_params(specs: Sequence[Param], values: Mapping[str, Any]) -> dict:
    """Validate a mapping of parameter values against declarations; unknown names are errors."""
    known = {p.name: p for p in specs}
    unknown = [k for k in values if k not in known]
    if unknown:
        names = ", ".join(sorted(known))
        raise ValueError(f"unknown parameter {unknown[0]!r}; this method takes: {names}")
    out = {}
    for p in specs:
        out[p.name] = p.validate(values.get(p.name, p.default))
    return out
