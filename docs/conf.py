"""Sphinx configuration of the skdpminimax documentation (build: ``sphinx-build -W docs docs/_build``).

The API reference, the estimator pages of estimators without a hand-written page and
the list of solvers are generated from the package's ``__all__`` lists at build time
(:mod:`docs._api`), so new modules, estimators and solvers appear without editing
the docs.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # the package of this checkout
sys.path.insert(0, HERE)

import skdpminimax  # noqa: E402
from _api import write_generated_pages  # noqa: E402

project = "skdpminimax"
author = "skdpminimax developers"
copyright = "skdpminimax developers"
release = version = skdpminimax.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "myst_parser",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
templates_path = ["_templates"]
exclude_patterns = ["_build", "_generated", "benchmarks.md", "auto_examples/*.ipynb",
                    "auto_examples/*.py", "auto_examples/*.zip", "auto_examples/*.md5",
                    "**/*.codeobj.json"]
html_theme = "alabaster"
html_static_path = []

autosummary_generate = True
autodoc_default_options = {"members": True, "inherited-members": False}
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_xref_param_type = False
myst_heading_anchors = 3

sphinx_gallery_conf = {
    "examples_dirs": os.path.join(os.path.dirname(HERE), "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": "/plot_",
    "doc_module": ("skdpminimax",),
    "backreferences_dir": "gen_modules/backreferences",
    "reference_url": {"skdpminimax": None},
    "download_all_examples": False,
    "remove_config_comments": True,
    "abort_on_example_error": True,
}

write_generated_pages(HERE)

# benchmarks.md (shared with the repository's readers) starts at "##": it is included
# under the page title of benchmarks_page.rst.
suppress_warnings = ["myst.header"]


def _skip_metadata_request_methods(app, what, name, obj, skip, options):
    # scikit-learn generates set_*_request methods whose docstrings point into its own docs.
    if name.startswith("set_") and name.endswith("_request"):
        return True
    return None


def setup(app):
    app.connect("autodoc-skip-member", _skip_metadata_request_methods)
