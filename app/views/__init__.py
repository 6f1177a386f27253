"""Result views. ``ResultViews`` is the central widget of the main window; ``render_view`` draws
one view offscreen into a PNG or SVG file (for the command line). The view names are in
:mod:`app.views.catalog`, which imports no Qt; the rest is imported when first used."""
from .catalog import VIEW_NAMES

__all__ = ["ResultViews", "render_view", "VIEW_NAMES", "view_title"]


def __getattr__(name):
    if name in ("ResultViews", "render_view", "view_title"):
        from . import result_views
        return getattr(result_views, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
