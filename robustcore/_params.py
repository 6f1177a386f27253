"""Parameter declarations: each method states its parameters once.

The same :class:`Param` objects validate arguments in ``fit`` (one error style for the whole
library), describe the methods on the command line, build the window's parameter forms, and give
scikit-learn its ``_parameter_constraints`` (:mod:`robustcore._constraints`), so none of these can
drift from the others.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import Any
from collections.abc import Callable, Mapping, Sequence

import numpy as np

__all__ = ["Param", "SeedParam", "SCALES", "scale_param", "param_error", "param_message", "validate_params",
           "check_range", "check_shape", "shape_errors"]


def _fmt(value: Any) -> str:
    """A bound or an option as a message writes it."""
    if isinstance(value, float):
        return f"{value:g}"
    return _got(value)


def _got(value: Any) -> str:
    """The refused value as a message echoes it: its repr (scikit-learn's messages echo the
    same), cut so that a 100 KB option value from a file stays a one-line error."""
    return f"{value!r:.80}"


def param_message(name: str, allowed: str, value: Any, owner: str | None = None, *,
                  got: str | None = None) -> str:
    """The one error style for a parameter's value (scikit-learn's, which its estimator checks
    expect): what was wrong, what is allowed (how to fix it), what was received (``got``: words
    for a value that is better described than echoed, e.g. "an empty field")."""
    of = f" of {owner}" if owner else ""
    return f"The {name!r} parameter{of} must be {allowed}. Got {got or _got(value)} instead."


def param_error(name: str, allowed: str, value: Any, owner: str | None = None) -> ValueError:
    """:func:`param_message` as a ``ValueError``: every refusal of a parameter's or an option's
    value, declared or bound by the data, reads the same."""
    return ValueError(param_message(name, allowed, value, owner))


def _join(parts: Sequence[str]) -> str:
    """Alternatives as scikit-learn lists them in its messages: "a", "a or b", "a, b or c"."""
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " or " + parts[-1]


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


def _number_in_range(value, low, high, low_inclusive, high_inclusive, integer):
    """The number as int/float when it is one and lies in the range, else None (the one range
    check: declared parameters and data-dependent bounds both go through here)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        return None
    v = float(value)
    if not math.isfinite(v) or (integer and not v.is_integer()):
        return None
    if low is not None and (v < low or (v == low and not low_inclusive)):
        return None
    if high is not None and (v > high or (v == high and not high_inclusive)):
        return None
    return int(value) if integer else v


def check_range(name: str, value, low=None, high=None, *, low_inclusive=True,
                high_inclusive=True, integer=False, hint: str = "", owner: str | None = None):
    """Check a number against bounds that may depend on the data (e.g. rank < min(n, d)).

    ``hint`` is appended to the allowed values to say how to fix the problem; ``owner`` names
    the estimator or function the parameter belongs to.
    """
    out = _number_in_range(value, low, high, low_inclusive, high_inclusive, integer)
    if out is None:
        raise param_error(name, _range_allowed(low, high, low_inclusive, high_inclusive, integer, hint),
                          value, owner)
    return out


def _range_allowed(low, high, low_inclusive, high_inclusive, integer, hint) -> str:
    """What :func:`check_range` says is allowed: "an integer in [1, 38] (hint)"."""
    kind = "an integer" if integer else "a number"
    allowed = f"{kind} {_interval(low, high, low_inclusive, high_inclusive)}".strip()
    return f"{allowed} ({hint})" if hint else allowed


@dataclass(frozen=True)
class Param:
    """One declared parameter.

    kind: ``int``, ``float``, ``bool`` or ``str`` (``str`` needs ``choices``).
    ``allow_none`` means ``None`` is accepted and means "automatic"; ``none_label`` says what
    automatic does (shown in forms and help). ``low``/``high`` bound numbers; the bounds may be
    exclusive. ``special`` lists strings a number parameter also takes (scikit-learn's
    ``contamination="auto"``). ``advanced`` parameters are folded away in the GUI form.

    ``help`` is one line (the form's tooltip, the command line's help); ``doc`` is the longer
    explanation the documentation adds after it (plain paragraphs separated by blank lines,
    reStructuredText inline markup allowed). Both are written only here: the estimator's
    docstring renders its Parameters section from them (:mod:`._docstring`).
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
    special: Sequence[str] = ()
    advanced: bool = False
    # A parameter that exists only for scripts (e.g. a callable) is hidden from forms and CLI.
    scriptable_only: bool = False
    extra: Mapping[str, Any] = field(default_factory=dict)
    doc: str = ""
    # The bound the data's SHAPE sets on a number: (n_samples, n_features, the run's other
    # values) -> (low, high, hint[, low_inclusive, high_inclusive]) for check_range (bounds
    # inclusive unless said), or None where these values set none. Stated
    # here once, it is what the estimator's fit refuses (check_shape), what the window's form
    # marks red as soon as data are loaded, and what the command line refuses before loading,
    # all with the same message. Bounds that need the values (a rank) stay in the fit.
    shape_rule: Callable[[int, int, Mapping[str, Any]], tuple | None] | None = None

    def parts(self) -> list[tuple[str, str]]:
        """What the parameter takes, as ``(kind, wording)`` pairs; ``kind`` is "special",
        "choices", "bool", "number", "instance" or "none". :meth:`allowed` joins the wordings;
        robustcore._constraints makes one scikit-learn constraint of each, with the same wording
        and the same test as :meth:`_check`, so the two validators cannot disagree."""
        out = []
        if self.special:
            out.append(("special", ", ".join(repr(s) for s in self.special)))
        if self.choices is not None:
            out.append(("choices", "one of " + ", ".join(_fmt(c) for c in self.choices)))
        elif self.kind is bool:
            out.append(("bool", "True or False"))
        elif self.kind in (int, float):
            kind = "an integer" if self.kind is int else "a number"
            bounds = _interval(self.low, self.high, self.low_inclusive, self.high_inclusive)
            out.append(("number", f"{kind} {bounds}".strip()))
        else:
            out.append(("instance", f"a {self.kind.__name__}"))
        if self.allow_none:
            out.append(("none", f"None ({self.none_label})"))
        return out

    def allowed(self) -> str:
        """Human description of the allowed values, used in errors and help."""
        return _join([text for _, text in self.parts()])

    def _number(self, value: Any):
        """``value`` as this parameter's number (int or float), or None."""
        return _number_in_range(value, self.low, self.high, self.low_inclusive, self.high_inclusive,
                                self.kind is int)

    def _check(self, value: Any) -> Any:
        """The value in canonical type, or ``_INVALID``."""
        if value is None:
            return None if self.allow_none else _INVALID
        if isinstance(value, str) and value in self.special:
            return value
        if self.choices is not None:
            return _match_choice(value, self.choices)
        if self.kind is bool:
            return bool(value) if isinstance(value, (bool, np.bool_)) else _INVALID
        if self.kind in (int, float):
            out = self._number(value)
            return _INVALID if out is None else out
        return value if isinstance(value, self.kind) else _INVALID

    def validate(self, value: Any) -> Any:
        """Return the value in canonical type, or raise ``ValueError`` in the library's style."""
        out = self._check(value)
        if out is _INVALID:
            raise param_error(self.name, self.allowed(), value)
        return out

    def check_shape(self, value: Any, n_samples: int, n_features: int,
                    values: Mapping[str, Any] | None = None) -> Any:
        """``value`` (already validated) checked against :attr:`shape_rule` for data of this
        shape; raises ``ValueError`` in the library's style. Names ("auto") and None pass: what
        they resolve to is the fit's business."""
        if self.shape_rule is None or value is None or isinstance(value, str):
            return value
        bound = self.shape_rule(int(n_samples), int(n_features), values or {})
        if bound is None:
            return value
        low, high, hint, low_in, high_in = (*bound, True, True)[:5]
        return check_range(self.name, value, low, high, low_inclusive=low_in, high_inclusive=high_in,
                           integer=self.kind is int, hint=hint)

    def shape_allowed(self, n_samples: int, n_features: int,
                      values: Mapping[str, Any] | None = None) -> str | None:
        """What data of this shape allow (the wording of :meth:`check_shape`'s refusal), or
        None where the shape sets no bound."""
        bound = None if self.shape_rule is None else self.shape_rule(int(n_samples), int(n_features),
                                                                     values or {})
        if bound is None:
            return None
        low, high, hint, low_in, high_in = (*bound, True, True)[:5]
        return _range_allowed(low, high, low_in, high_in, self.kind is int, hint)

    def parse(self, text: str) -> Any:
        """Parse a value typed by a user (command line ``key=value`` or a form) and validate it."""
        raw = text.strip()
        if self.allow_none and raw.lower() in ("none", "auto", ""):
            return None
        if raw in self.special:
            return raw
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


class _Invalid:
    pass


_INVALID = _Invalid()


def _equal(a, b) -> bool:
    try:
        return bool(a == b)
    except Exception:       # noqa: BLE001 - e.g. an array compared with a number
        return False


def _match_choice(value: Any, choices: Sequence[Any]) -> Any:
    """The choice ``value`` equals, or ``_INVALID``; 1 == True in Python, but a parameter keeps
    bools and numbers apart."""
    for c in choices:
        if isinstance(value, (bool, np.bool_)) == isinstance(c, bool) and _equal(value, c):
            return c
    return _INVALID


class SeedParam(Param):
    """``random_state``: None, a non-negative int seed, or, from scripts, a
    ``numpy.random.Generator`` or ``RandomState`` (which forms and the command line cannot
    express). None draws fresh randomness in a script; the window and the command line pin an
    unset seed to 0 so that every run can be repeated (``app.session.pin_seed``)."""

    def __init__(self, help: str, name: str = "random_state", **kw):
        kw.setdefault("advanced", True)
        # What an empty seed box does: the window and the command line pin it to 0.
        kw.setdefault("none_label", "0 in the window and CLI; fresh randomness in scripts")
        super().__init__(name, int, None, help, low=0, allow_none=True, **kw)

    # what scripts may pass besides the declared values; forms and messages do not offer them
    unlisted = (np.random.Generator, np.random.RandomState)

    def _check(self, value: Any) -> Any:
        if isinstance(value, self.unlisted):
            return value
        return super()._check(value)


def validate_params(specs: Sequence[Param], values: Mapping[str, Any]) -> dict:
    """Validate a mapping of parameter values against declarations; unknown names are errors."""
    known = {p.name: p for p in specs}
    unknown = [k for k in values if k not in known]
    if unknown:
        names = ", ".join(sorted(known))
        raise ValueError(f"unknown parameter {unknown[0]!r:.80}; this method takes: {names}")
    out = {}
    for p in specs:
        out[p.name] = p.validate(values.get(p.name, p.default))
    return out


def check_shape(specs: Sequence[Param], name: str, values: Mapping[str, Any], n_samples: int,
                n_features: int) -> Any:
    """``values[name]`` checked against its declaration's shape rule (:meth:`Param.check_shape`):
    how a fit applies the declared rule."""
    spec = next(p for p in specs if p.name == name)
    return spec.check_shape(values[name], n_samples, n_features, values)


def shape_errors(specs: Sequence[Param], values: Mapping[str, Any], n_samples: int,
                 n_features: int) -> dict[str, str]:
    """name -> message, for every value in ``values`` (validated) that data of this shape
    refuse: what a form or the command line can say before the data are read."""
    out = {}
    for p in specs:
        if p.shape_rule is None or p.name not in values:
            continue
        try:
            p.check_shape(values[p.name], n_samples, n_features, values)
        except ValueError as exc:
            out[p.name] = str(exc)
    return out


SCALES = ("none", "standard", "robust", "auto")


def scale_param(default: str, doc: str = "") -> Param:
    """The ``scale`` declaration; each estimator states its default, and in ``doc`` what the
    scaling means for its results (the docstring's Parameters entry)."""
    return Param("scale", str, default, "Rescale each feature inside the method: none, standard "
                 "(mean / standard deviation), robust (median / MAD) or auto (none for images, video "
                 "and pixel ranges; else standard when the features' spreads differ more than "
                 "10x, i.e. mixed units, and none otherwise).",
                 choices=SCALES, doc=doc)
