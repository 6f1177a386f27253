"""Leaves scikit-learn's metadata-routing methods out of the API reference.

scikit-learn generates ``set_<method>_request`` on every estimator; their docstrings point into
scikit-learn's own glossary and say nothing about this project's methods.
"""
from __future__ import annotations


def _skip(app, what, name, obj, skip, options):
    if name.startswith("set_") and name.endswith("_request"):
        return True
    return None


def setup(app):
    app.connect("autodoc-skip-member", _skip)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
