"""Parsing what the command line is given: ``--param``, ``--option``, ``--select``, sizes and
budgets, each checked with a message that says what is wrong and what would do."""
from __future__ import annotations

import argparse
import json

__all__ = ["UsageError", "parse_params", "parse_options", "parse_selection", "parse_size", "parse_scale",
           "parse_budget"]


class UsageError(Exception):
    """A problem with what the user asked for: reported on stderr, exit code 2."""


def _split_kv(text: str, flag: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise UsageError(f"{flag} must be KEY=VALUE; got {text!r}")
    return key.strip(), value


def parse_params(methods: list, items: list[str]) -> dict:
    """``--param`` strings -> {method name: {param: value}}, parsed and checked by each ``Param``.

    ``key=value`` applies to every chosen method that has a parameter ``key``;
    ``method:key=value`` to that method only. A key no chosen method has is an error that lists
    the parameters that exist.
    """
    out = {m.name: {} for m in methods}
    by_name = {m.name: m for m in methods}
    for item in items:
        key, value = _split_kv(item, "--param")
        targets = methods
        if ":" in key:
            mname, key = (s.strip() for s in key.split(":", 1))
            if mname not in by_name:
                raise UsageError(f"--param {item!r} names method {mname!r}, which is not being run; "
                                 f"methods in this run: {', '.join(by_name)}")
            targets = [by_name[mname]]
        hit = False
        for m in targets:
            spec = next((p for p in m.params() if p.name == key), None)
            if spec is None:
                continue
            hit = True
            try:
                out[m.name][key] = spec.parse(value)
            except ValueError as exc:
                raise UsageError(str(exc) if len(methods) == 1 else f"{m.name}: {exc}") from None
        if not hit:
            names = sorted({p.name for m in targets for p in m.params()})
            which = targets[0].name if len(targets) == 1 else "these methods"
            raise UsageError(f"unknown parameter {key!r}; {which} take(s): {', '.join(names)}")
    return out


def parse_options(items: list[str], loader=None) -> dict:
    """Loader ``--option key=value`` strings, parsed by the loader's own option declarations.

    Without a loader (or for a name it does not declare) values are JSON literals (numbers,
    true/false, null) or text, and the loader's validation reports what is wrong.
    """
    specs = {p.name: p for p in getattr(loader, "options", ())}
    out = {}
    for item in items:
        key, value = _split_kv(item, "--option")
        if key in specs:
            out[key] = specs[key].parse(value)
            continue
        try:
            out[key] = json.loads(value)
        except ValueError:
            out[key] = value
    return out


def parse_selection(text: str | None, n_samples: int) -> list[int]:
    """``"3,17,40-45"`` -> sorted unique 0-based sample indices, each checked against the data."""
    if not text:
        return []
    out = set()
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        lo, sep, hi = part.partition("-")
        try:
            a, b = (int(lo), int(hi)) if sep else (int(part), int(part))
        except ValueError:
            raise UsageError(f"--select must be indices and ranges like 3,17,40-45; got {part!r}") from None
        if a > b:
            raise UsageError(f"--select range {part!r} runs backwards; write it as {b}-{a}")
        if a < 0 or b >= n_samples:
            raise UsageError(f"--select index {a if a < 0 else b} is outside the data set: it has "
                             f"{n_samples} samples, indices 0 to {n_samples - 1}")
        out.update(range(a, b + 1))
    return sorted(out)


def parse_size(text: str) -> tuple[int, int]:
    try:
        w, h = (int(v) for v in text.lower().split("x"))
        if w < 50 or h < 50 or w > 10000 or h > 10000:
            raise ValueError
    except ValueError:
        raise argparse.ArgumentTypeError(f"size must be WIDTHxHEIGHT in pixels, each in [50, 10000]; "
                                         f"got {text!r}") from None
    return w, h


def parse_scale(text: str) -> float:
    try:
        v = float(text)
        if not 0.1 <= v <= 10:
            raise ValueError
    except ValueError:
        raise argparse.ArgumentTypeError(f"scale must be a number in [0.1, 10]; got {text!r}") from None
    return v


def parse_budget(text: str) -> int:
    try:
        v = float(text)
        if not 1e-6 <= v <= 1e6:
            raise ValueError
    except ValueError:
        raise argparse.ArgumentTypeError(f"memory budget must be a number of gigabytes in [1e-6, 1e6]; "
                                         f"got {text!r}") from None
    return int(v * 2**30)
