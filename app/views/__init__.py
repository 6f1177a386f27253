"""Result views. ``ResultViews`` is the central widget of the main window."""
from .result_views import ResultViews

__all__ = ["ResultViews"]
