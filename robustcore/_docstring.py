"""Estimator docstrings whose Parameters section is rendered from the ``Param`` declarations.

Each parameter's help is written ONCE, in its :class:`~._params.Param` (``help``: one line,
shown in the window's form and the command line's help; ``doc``: the longer explanation, for
the documentation). :class:`~._base.Estimator` renders the numpydoc ``Parameters`` section from
``_params`` when a subclass is defined (``__init_subclass__``) and inserts it into the class
docstring before its first section. The hand-written docstring then holds the summary and only
numpydoc's standard sections (Attributes, See Also, Notes, References, Examples); topics of
their own (an outlier score, how new samples are handled) are paragraphs of Notes that start
with a bold title.

To move an estimator to this: delete its hand-written Parameters section, put any text of it
that the ``Param`` lacks into that ``Param``'s ``doc``, and rename other sections to standard
ones (``tests/robustcore/test_docstrings.py`` checks every estimator). A docstring that still
has a Parameters section of its own is left as it is.
"""
from __future__ import annotations

import inspect
import re
import textwrap

__all__ = ["STANDARD_SECTIONS", "render_parameters", "sections", "with_parameters"]

#: numpydoc's sections (numpydoc.docscrape.NumpyDocString), in their order.
STANDARD_SECTIONS = ("Parameters", "Returns", "Yields", "Receives", "Other Parameters", "Raises", "Warns",
                     "Warnings", "See Also", "Notes", "References", "Examples", "Attributes", "Methods")

_UNDERLINE = re.compile(r"^\s*-{3,}\s*$")
_WIDTH = 96


def sections(doc: str) -> list[str]:
    """The section titles of a numpydoc docstring (a line underlined by dashes), in order."""
    lines = inspect.cleandoc(doc or "").splitlines()
    return [lines[i].strip() for i in range(len(lines) - 1)
            if lines[i].strip() and _UNDERLINE.match(lines[i + 1]) and not _UNDERLINE.match(lines[i])]


def _fmt(value) -> str:
    return f"{value:g}" if isinstance(value, float) else repr(value)


def _type(p) -> str:
    """numpydoc's type line of a parameter, from its declaration."""
    from ._params import SeedParam, _interval
    if isinstance(p, SeedParam):
        return "int, numpy.random.Generator, RandomState or None, default=None"
    if p.choices is not None:
        text = "{" + ", ".join(_fmt(c) for c in p.choices) + "}"
    elif p.kind is bool:
        text = "bool"
    elif p.kind in (int, float):
        text = f"{p.kind.__name__} {_interval(p.low, p.high, p.low_inclusive, p.high_inclusive)}".strip()
    else:
        text = p.kind.__name__
    if p.special:
        text = " or ".join(_fmt(s) for s in p.special) + " or " + text
    if p.allow_none:
        text += " or None"
    return f"{text}, default={p.default!r}"


_MARKUP = re.compile(r"[|*`]|\w_$")


def _plain(text: str) -> str:
    """``help`` is plain text (a form's tooltip): words that reStructuredText would read as markup
    (``|S|``, ``a*I``, ``name_``) become inline literals."""
    out = []
    for word in text.split(" "):
        m = re.fullmatch(r"([(\[\"']*)(.*?)([)\]\"'.,:;!?]*)", word)
        lead, core, trail = m.groups()
        out.append(f"{lead}``{core}``{trail}" if core and _MARKUP.search(core) else word)
    return " ".join(out)


def _entry(p) -> list[str]:
    """``name : type, default=...`` and the description: the help line, what None means, then the
    paragraphs of ``doc`` (separated by blank lines), each wrapped."""
    paras = [" ".join(x.split()) for x in p.doc.strip().split("\n\n")] if p.doc.strip() else []
    first = _plain(p.help.strip())
    if p.allow_none and p.default is None and p.none_label:
        first += f" None: {p.none_label}."
    lines = [f"{p.name} : {_type(p)}"]
    for k, para in enumerate([" ".join([first] + paras[:1])] + paras[1:]):
        if k:
            lines.append("")
        lines += textwrap.wrap(para, _WIDTH - 4, initial_indent="    ", subsequent_indent="    ",
                               break_on_hyphens=False, break_long_words=False)
    return lines


def render_parameters(params) -> str:
    """The numpydoc Parameters section of ``params`` (Param declarations), one entry each."""
    lines = ["Parameters", "----------"]
    for p in params:
        lines += _entry(p)
    return "\n".join(lines)


def with_parameters(doc: str | None, params) -> str | None:
    """``doc`` with the rendered Parameters section inserted before its first section (at the end
    when it has none). A docstring that has a Parameters section already is returned unchanged."""
    if not doc or not params:
        return doc
    if "Parameters" in sections(doc):
        return doc
    lines = inspect.cleandoc(doc).splitlines()
    at = next((i for i in range(len(lines) - 1)
               if lines[i].strip() and _UNDERLINE.match(lines[i + 1]) and not _UNDERLINE.match(lines[i])),
              len(lines))
    head = "\n".join(lines[:at]).rstrip()
    tail = "\n".join(lines[at:]).strip()
    return head + "\n\n" + render_parameters(params) + ("\n\n" + tail if tail else "") + "\n"
