"""The Run menu's callbacks. Each takes the window; the work is the run controller's
(:class:`app.run_controller.RunController`) or the data controller's (loading)."""
from __future__ import annotations

__all__ = ["run", "cancel", "cancel_load", "reset_parameters", "toggle_keep_params"]


def run(w):
    return w.runs.run()


def cancel(w) -> None:
    w.runs.cancel()


def cancel_load(w) -> None:
    w.data.cancel_load()


def reset_parameters(w) -> None:
    w.method_panel.reset_current()


def toggle_keep_params(w) -> None:
    w.settings.set_keep_params_on_new_data(w.act_keep_params.isChecked())
