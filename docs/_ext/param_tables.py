"""``.. param-table:: NAME``: a method's parameter table, read from its declaration.

NAME is a method of the registry (``pca``, ``coherence-pursuit``... as in
``robustcore.methods.METHODS``): its estimator's parameters plus the run-level ones the window
and the command line add. Or NAME is the dotted path of an estimator class
(``robustcore.PCA``): its declared parameters. Either way the rows come from the
same ``Param`` objects that validate ``fit``, build the window's forms and the CLI help, so the
documentation shows the defaults the code has.
"""
from __future__ import annotations

import importlib

__all__ = ["param_rows", "setup"]


def _params(target: str):
    if "." in target:
        module, _, name = target.rpartition(".")
        cls = getattr(importlib.import_module(module), name)
        return list(cls.param_specs()), set()
    from robustcore.methods import get_method
    m = get_method(target)
    own = list(m.estimator_class.param_specs())
    return own + list(m.extra_params), {p.name for p in m.extra_params}


def _default(p) -> str:
    if p.default is None:
        return f"None ({p.none_label})"
    return repr(p.default)


def param_rows(target: str) -> list[tuple[str, str, str, str]]:
    """(name, default, allowed values, help) per declared parameter of ``target``."""
    params, run_level = _params(target)
    rows = []
    for p in params:
        notes = []
        if p.advanced:
            notes.append("under Advanced in the window")
        if p.scriptable_only:
            notes.append("from Python only")
        if p.name in run_level:
            notes.append("window and command line only, not an estimator parameter")
        text = p.help + (f" ({'; '.join(notes)})" if notes else "")
        rows.append((p.name, _default(p), p.allowed(), text))
    return rows


def setup(app):
    from docutils import nodes
    from docutils.parsers.rst import Directive

    def literal(text):
        return nodes.paragraph("", "", nodes.literal(text, text))

    def para(text):
        return nodes.paragraph(text, text)

    class ParamTable(Directive):
        required_arguments = 1

        def run(self):
            rows = param_rows(self.arguments[0])
            table = nodes.table(classes=["param-table"])
            group = nodes.tgroup(cols=4)
            table += group
            for width in (18, 18, 28, 36):
                group += nodes.colspec(colwidth=width)
            head = nodes.thead()
            body = nodes.tbody()
            group += head
            group += body
            header = nodes.row()
            for title in ("parameter", "default", "allowed values", "what it does"):
                header += nodes.entry("", para(title))
            head += header
            for name, default, allowed, text in rows:
                row = nodes.row()
                row += nodes.entry("", literal(name))
                row += nodes.entry("", literal(default))
                row += nodes.entry("", para(allowed))
                row += nodes.entry("", para(text))
                body += row
            return [table]

    app.add_directive("param-table", ParamTable)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
