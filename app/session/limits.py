"""A session never raises a limit: the loader limits its data is opened with are the user's.

The bounded-resource policy's limit options (:data:`robustcore.datasets._limits.LIMIT_OPTIONS`:
``max_bytes``, ``max_features``; every loader declares them) are ordinary loader options, so a
session records them like any other, and a session file can be written, honestly, with a matching
sha256, that asks for ``max_bytes`` = 10 TB beside a small file that inflates to gigabytes.
Reopening (the window) and replaying (the command line) therefore take each limit from the user:
their own value (``replay --option max_bytes=...``), or else the policy's default (out of core:
the memory budget of :func:`robustcore.bigdata.settings`, which the window's setting and
``--memory-budget`` set). A session's value above it is lowered to it, and the user is told so;
a lower one is kept (it only asks for less).
"""
from __future__ import annotations

from collections.abc import Mapping

from robustcore.datasets._limits import LIMIT_OPTIONS, format_bytes

__all__ = ["LIMIT_NAMES", "user_limits", "cap_limits"]

#: The names of the limit options, in the policy's one declaration.
LIMIT_NAMES = tuple(p.name for p in LIMIT_OPTIONS)


def user_limits(given: Mapping | None = None, *, lazy: bool = False) -> dict:
    """name -> the ceiling the user allows for each limit option: ``given`` (validated by the
    option's own declaration), else the policy's default (out of core, ``max_bytes``: the current
    memory budget, as :func:`robustcore.bigdata.open_lazy` uses)."""
    given = dict(given or {})
    unknown = sorted(set(given) - set(LIMIT_NAMES))
    if unknown:
        raise ValueError(f"{unknown[0]!r:.80} is not a limit option; the limits are: {', '.join(LIMIT_NAMES)}")
    out = {}
    for p in LIMIT_OPTIONS:
        if given.get(p.name) is not None:
            out[p.name] = p.validate(given[p.name])
        elif lazy and p.name == "max_bytes":
            from robustcore.bigdata import get_settings
            out[p.name] = int(get_settings().memory_budget)
        else:
            out[p.name] = p.default
    return out


def _shown(name: str, value: int) -> str:
    return f"{value:,} ({format_bytes(value)})" if name == "max_bytes" else f"{value:,}"


def cap_limits(options: Mapping, given: Mapping | None = None, *, lazy: bool = False,
               how: str = "") -> tuple[dict, list[str]]:
    """``options`` (a session's loader options) with each limit option at most the user's
    (:func:`user_limits` of ``given``), a limit the user gave set even where the session names
    none, and one note per value lowered. ``how``: how the user raises a limit (e.g. "pass
    --option {name}=N to replay", {name} the option), added to each note."""
    ceilings = user_limits(given, lazy=lazy)
    out, notes = dict(options), []
    for name in LIMIT_NAMES:
        asked, ceiling = out.get(name), ceilings[name]
        if asked is None:
            if (given or {}).get(name) is not None:
                out[name] = ceiling
            continue
        number = not isinstance(asked, bool) and isinstance(asked, (int, float))
        if not number or asked > ceiling:
            out[name] = ceiling
            why = _shown(name, int(asked)) if number else f"{asked!r:.40}"
            notes.append(f"the session asks for {name}={why}, above the limit here, {_shown(name, ceiling)}; "
                         f"a session never raises a limit, so {name}={ceiling} is used"
                         + (f" ({how.format(name=name)})" if how else ""))
    return out, notes
