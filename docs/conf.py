"""Sphinx configuration: user guide, method pages, API reference and the example gallery.

Build from the repository root: ``sphinx-build -W -b html docs docs/_build/html``.
"""
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).parent / "_ext"))
# The gallery runs the examples; numerics on one BLAS thread as in the test suite (the rule of
# robustcore._blas_policy, before numpy loads), figures drawn without a display.
from robustcore._blas_policy import default_to_one_thread  # noqa: E402

default_to_one_thread()
os.environ.setdefault("MPLBACKEND", "Agg")

import robustcore  # noqa: E402

project = "Robust Subspace Studio"
author = "Robust Subspace Studio developers"
copyright = "2026, " + author
version = release = robustcore.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "param_tables",
    "skip_routing_methods",
]

exclude_patterns = ["_build", "examples/README.txt", "**/sizes/**"]
templates_path = ["_templates"]
html_theme = "alabaster"
html_static_path = []
html_theme_options = {"page_width": "1100px", "sidebar_width": "240px"}

autosummary_generate = True
autodoc_default_options = {"members": True}
# numpydoc lists the methods of each class itself; autosummary stubs for each would duplicate
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False

intersphinx_mapping = {}  # offline builds: references to numpy/sklearn stay plain text

sphinx_gallery_conf = {
    "examples_dirs": "examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
}
