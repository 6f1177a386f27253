"""Parameters renamed since 0.1: sessions and settings written by 0.1 go through
:func:`upgrade_params` before they are validated."""
from __future__ import annotations

__all__ = ["RENAMED_PARAMS", "upgrade_params"]

# method -> {old name: (new name, {old value: new value} or None)}
RENAMED_PARAMS = {
    "esfs": {"standardize": ("scale", {True: "standard", False: "none"})},
    "pcp": {"score": ("score_norm", None)},
}


def upgrade_params(method: str, params: dict) -> dict:
    """``params`` of ``method`` with 0.1's parameter names and values turned into today's."""
    out = dict(params)
    for old, (new, values) in RENAMED_PARAMS.get(method, {}).items():
        if old in out and new not in out:
            v = out.pop(old)
            out[new] = values.get(v, v) if values is not None and isinstance(v, (bool, str)) else v
    return out
