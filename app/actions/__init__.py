"""The window's actions and menus, declared once as tables, and their callbacks.

Each action is one row of :data:`ACTIONS`: its key gives the window attribute ``act_<key>`` and
the object name ``act_<key>``; its text, shortcuts and tip are written here only; ``callback``
is the function it calls with the window, from the module of its menu (:mod:`.file`,
:mod:`.export`, :mod:`.run`, :mod:`.help`; napari's ``qactions`` are the model). :data:`MENUS`
lists each menu's entries by key; ``-`` is a separator and ``@name`` a part the window fills
itself (recent files, demos, dock toggles, examples).
"""
from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Callable

from PySide6.QtGui import QAction, QKeySequence

from . import export, file, run
from . import help as help_menu


def _close(w) -> None:
    w.close()


@dataclass(frozen=True)
class ActionSpec:
    key: str
    text: str
    callback: Callable        # called with the window when the action is triggered
    shortcuts: tuple = ()
    tip: str = ""
    checkable: bool = False
    enabled: bool = True


ACTIONS = (
    ActionSpec("open", "&Open data…", file.open_dialog, ("Ctrl+O",), "Open a data file"),
    ActionSpec("open_options", "Open with o&ptions…", file.open_with_options_dialog, ("Ctrl+Shift+O",),
               "Open a data file choosing the loader's options (label column, delimiter…)"),
    ActionSpec("open_folder", "Open image &folder…", file.open_folder_dialog, (),
               "Open a folder of images as one sample per image"),
    ActionSpec("open_session", "Open &session…", file.open_session_dialog, (), "Reopen a saved session"),
    ActionSpec("save_session", "Sa&ve session", file.save_session_dialog, ("Ctrl+S",),
               "Save data reference, parameters and results"),
    ActionSpec("save_session_as", "Save session &as…", file.save_session_as_dialog, ("Ctrl+Shift+S",),
               "Save the session under a new name"),
    ActionSpec("reopen_last", "Reopen last session at start", file.toggle_reopen_last, (),
               "Open the last saved or opened session when the window starts", checkable=True),
    ActionSpec("export_figure", "Export &figure…", export.export_figure_dialog, ("Ctrl+Shift+E",),
               "Save the current view as PNG or SVG"),
    ActionSpec("export_results", "&Export results…", export.export_results_dialog, ("Ctrl+E",),
               "Save scores, flags and arrays of the current method"),
    ActionSpec("export_video", "Export decomposition &video…", export.export_video_dialog, (),
               "Save original | L | S | mask of every frame as MP4, GIF or PNG images"),
    ActionSpec("quit", "&Quit", _close, ("Ctrl+Q",), "Quit Robust Subspace Studio"),
    ActionSpec("run", "&Run", run.run, ("Ctrl+R", "F5"), "Fit the chosen method on the current data set"),
    ActionSpec("cancel", "&Cancel", run.cancel, ("Esc", "Ctrl+."), "Stop the running fit", enabled=False),
    ActionSpec("cancel_load", "Cancel &loading", run.cancel_load, (), "Stop loading the data", enabled=False),
    ActionSpec("reset", "Reset parameters to &defaults", run.reset_parameters, (),
               "Put the chosen method's parameters back to their defaults"),
    ActionSpec("keep_params", "&Keep parameters for new data", run.toggle_keep_params, (),
               "When other data is loaded, keep the parameters set on the previous data instead of "
               "going back to the new data's defaults", checkable=True),
    ActionSpec("method_help", "&Method help", help_menu.show_method_help, ("F1",),
               "What the chosen method does, when to use it, what its parameters mean"),
    ActionSpec("about", "&About", help_menu.show_about, (), "About Robust Subspace Studio"),
)

MENUS = (
    ("&File", ("open", "open_options", "open_folder", "@recent", "-", "open_session", "save_session",
               "save_session_as", "reopen_last", "-", "export_figure", "export_results", "export_video",
               "-", "quit")),
    ("&Demos", ("@demos",)),
    ("&Run", ("run", "cancel", "cancel_load", "-", "reset", "keep_params")),
    ("&View", ("@docks",)),
    ("&Help", ("method_help", "@examples", "-", "about")),
)


def build_actions(window) -> dict[str, QAction]:
    """Create every action of :data:`ACTIONS` on ``window`` (as ``window.act_<key>`` too)."""
    out = {}
    for spec in ACTIONS:
        act = QAction(spec.text, window)
        act.setObjectName(f"act_{spec.key}")
        if spec.shortcuts:
            act.setShortcuts([QKeySequence(s) for s in spec.shortcuts])
        if spec.tip:
            act.setStatusTip(spec.tip)
            act.setToolTip(spec.tip)
        act.setCheckable(spec.checkable)
        act.setEnabled(spec.enabled)
        act.triggered.connect(lambda checked=False, f=spec.callback: f(window))
        window.addAction(act)
        setattr(window, f"act_{spec.key}", act)
        out[spec.key] = act
    return out


def build_menus(window, actions: dict[str, QAction], parts: dict) -> dict:
    """Fill the menu bar from :data:`MENUS`; ``parts[name](menu)`` fills an ``@name`` entry."""
    menus = {}
    bar = window.menuBar()
    for title, entries in MENUS:
        menu = bar.addMenu(title)
        menu.setObjectName("menu_" + title.replace("&", "").lower())
        menu.setToolTipsVisible(True)
        for key in entries:
            if key == "-":
                menu.addSeparator()
            elif key.startswith("@"):
                parts[key[1:]](menu)
            else:
                menu.addAction(actions[key])
        menus[title.replace("&", "").lower()] = menu
    return menus
