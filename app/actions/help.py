"""The Help menu's callbacks: About, a method's help page, and the examples. Each takes the window."""
from __future__ import annotations

from PySide6.QtWidgets import QMessageBox

__all__ = ["show_about", "show_method_help", "open_example"]


def show_about(w) -> None:
    from robustcore import __version__
    QMessageBox.about(w, "About Robust Subspace Studio",
                      f"<b>Robust Subspace Studio</b> {__version__}<br>Robust subspace analysis of "
                      f"data with outliers: PCA, Coherence Pursuit, PCP, SPE/T² scoring, ESFS, SCW.")


def show_method_help(w, name: str | None = None) -> None:
    """The help page of ``name`` (default: the method chosen in the Method panel)."""
    from robustcore.methods import METHODS

    from ..help import HelpDialog
    name = name or w.method_panel.method_name()
    if name not in METHODS:
        return
    if w.help_dialog is None:
        w.help_dialog = HelpDialog(w)
    w.help_dialog.show_method(name)


def open_example(w, example) -> None:
    """Help > Examples: load the demo, run its methods, show its view (see app.examples)."""
    from ..examples import ExamplePlayer
    if w.example is not None:
        w.example._stop()
    w.example = ExamplePlayer(w, example)
