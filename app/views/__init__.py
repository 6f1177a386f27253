"""Result views. ``ResultViews`` is the central widget of the main window; ``render_view`` draws
one view offscreen into a PNG or SVG file (for the command line)."""
from .result_views import VIEW_NAMES, ResultViews, render_view, view_title

__all__ = ["ResultViews", "render_view", "VIEW_NAMES", "view_title"]
