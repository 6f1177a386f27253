"""In-app help: one page per method, generated from the registry (what it does, when to use it,
its outlier rule, the views it feeds, the paper) and from its parameter declarations (what each
parameter means, its default and what it accepts), so the page can never disagree with the form.
"""
from __future__ import annotations

from html import escape

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QTextBrowser, QVBoxLayout

from robustcore.methods import METHODS

from .views import view_title

__all__ = ["method_help_html", "HelpDialog"]


def _default(p) -> str:
    if p.default is None:
        return f"automatic ({p.none_label})" if p.none_label else "automatic"
    if isinstance(p.default, bool):
        return "on" if p.default else "off"
    return str(p.default)


def method_help_html(name: str) -> str:
    """The help page of method ``name`` as HTML."""
    m = METHODS[name]
    parts = [f"<h2>{escape(m.title)}</h2>", f"<p><i>{escape(m.description)}</i></p>"]
    if m.about:
        parts.append(f"<h3>What it does, when to use it</h3><p>{escape(m.about)}</p>")
    if m.outlier_rule is not None:
        parts.append(f"<p><b>Outlier rule:</b> {escape(m.outlier_rule.describe())}"
                     + (f", alpha set by the <code>{m.outlier_rule.alpha_param}</code> parameter"
                        if m.outlier_rule.alpha_param else "") + ".</p>")
    if m.views:
        parts.append("<p><b>Views:</b> " + ", ".join(escape(view_title(v)) for v in m.views) + "</p>")
    if m.needs_labels:
        parts.append("<p><b>Needs class labels</b> (a label column in the data).</p>")
    rows = []
    for p in m.params():
        tag = " <small>(advanced)</small>" if p.advanced else ""
        rows.append(f"<tr><td valign='top'><code>{escape(p.name)}</code>{tag}</td>"
                    f"<td valign='top'>{escape(p.help)}<br><small>default: {escape(_default(p))}; "
                    f"allowed: {escape(p.allowed())}</small></td></tr>")
    parts.append("<h3>Parameters</h3><table cellspacing='0' cellpadding='4'>" + "".join(rows) + "</table>")
    if m.reference:
        parts.append(f"<h3>Reference</h3><p>{escape(m.reference)}</p>")
    parts.append(f"<p><small>Command line: <code>robust-studio run --method {m.name} "
                 f"--param NAME=VALUE …</code></small></p>")
    return "\n".join(parts)


class HelpDialog(QDialog):
    """A non-modal window showing one method's help page; ``show_method`` switches the page."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("method_help")
        self.setWindowFlag(Qt.WindowType.WindowContextHelpButtonHint, False)
        self.browser = QTextBrowser()
        self.browser.setOpenExternalLinks(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.close)
        lay = QVBoxLayout(self)
        lay.addWidget(self.browser)
        lay.addWidget(buttons)
        self.resize(620, 640)
        self.method = None

    def show_method(self, name: str) -> None:
        self.method = name
        self.setWindowTitle(f"{METHODS[name].title}: help")
        self.browser.setHtml(method_help_html(name))
        self.show()
        self.raise_()
