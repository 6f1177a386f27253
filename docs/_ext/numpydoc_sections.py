"""Map the docstring sections some estimators still use beyond numpydoc's onto numpydoc's own.

numpydoc knows a fixed set of sections and drops any other with a warning. Estimators now write
only numpydoc's sections, with their Parameters rendered from the declarations
(``robustcore/_docstring.py``); PCA, CoherencePursuit and ResidualScorer still write "Fitted
attributes" (numpydoc: Attributes) and an "Outlier score" heading, which become titled
paragraphs of the Notes section here. Delete the mapping (``_process``) once they are moved:
``tests/robustcore/test_docstrings.py`` marks them pending until then. Runs before numpydoc on
every docstring autodoc reads.
"""
from __future__ import annotations

import re

RENAMED = {"fitted attributes": "Attributes"}
INTO_NOTES = {"outlier score", "new samples", "multi-class", "probabilities"}
_UNDERLINE = re.compile(r"^\s*-{3,}\s*$")


def _sections(lines):
    """Split into (title or None, body lines), by numpydoc headers (a line, then dashes)."""
    out, title, body = [], None, []
    i = 0
    while i < len(lines):
        if i + 1 < len(lines) and lines[i].strip() and _UNDERLINE.match(lines[i + 1]):
            out.append((title, body))
            title, body = lines[i].strip(), []
            i += 2
            continue
        body.append(lines[i])
        i += 1
    out.append((title, body))
    return out


def normalise(lines: list[str]) -> list[str]:
    parts = _sections(lines)
    kept, notes = [], []
    for title, body in parts:
        key = (title or "").lower()
        if key in INTO_NOTES:
            notes.append((title, body))
        elif key == "notes":
            notes.insert(0, (None, body))
        else:
            kept.append((RENAMED.get(key, title), body))
    out: list[str] = []
    for title, body in kept:
        if title is not None:
            out += [title, "-" * len(title)]
        out += body
    if notes:
        if out and out[-1].strip():
            out.append("")
        out += ["Notes", "-----"]
        for title, body in notes:
            if title is not None:
                out += [f"**{title}.**", ""]
            out += body
            if body and body[-1].strip():
                out.append("")
    return out


def _process(app, what, name, obj, options, lines):
    if any(_UNDERLINE.match(x) for x in lines):
        lines[:] = normalise(lines)


def _skip(app, what, name, obj, skip, options):
    # scikit-learn generates set_<method>_request on every estimator for metadata routing;
    # its docstrings refer to scikit-learn's own glossary
    if name.startswith("set_") and name.endswith("_request"):
        return True
    return None


def setup(app):
    # numpydoc connects at the default priority (500): run before it
    app.connect("autodoc-process-docstring", _process, priority=400)
    app.connect("autodoc-skip-member", _skip)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
