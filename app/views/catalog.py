"""The one table of result views: name (the command line's ``--figure`` name) -> where its class
lives. No Qt here, so the command line can list and check view names without a display; the
classes are imported when a view is built (:func:`view_class`)."""
from __future__ import annotations

import importlib

__all__ = ["VIEW_CLASSES", "VIEW_NAMES", "view_class"]

VIEW_CLASSES = {
    "scatter": ("scatter", "ScatterView"),
    "detail": ("detail", "DetailView"),
    "decomposition": ("decomposition", "DecompositionView"),
    "ranking": ("ranking", "RankingView"),
    "contour": ("contour", "ContourView"),
    "outlier-map": ("outlier_map", "OutlierMapView"),
    "learning-curve": ("learning_curve", "LearningCurveView"),
    "comparison": ("comparison", "ComparisonView"),
    "evaluation": ("evaluation", "EvaluationView"),
}
VIEW_NAMES = tuple(VIEW_CLASSES)


def view_class(name: str):
    module, cls = VIEW_CLASSES[name]
    return getattr(importlib.import_module(f"app.views.{module}"), cls)
