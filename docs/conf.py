"""Sphinx configuration for cykafka's documentation (``./run docs``).

Every example that prints is executed when the site is built: Python scripts in
``examples/`` are shown with ``literalinclude`` and their output is produced by running
them (``program-output``), and short snippets are ``doctest`` blocks checked by the
``doctest`` builder.  ``./run docs`` builds with ``-W`` (a warning fails the build), so
an example that raises, or whose output no longer matches, fails CI.
"""

from __future__ import annotations

import sys
from pathlib import Path

import cykafka

sys.path.insert(0, str(Path(__file__).parent / "_ext"))

project = "cykafka"
author = "the cykafka developers"
copyright = "2026, the cykafka developers"
release = cykafka.__version__
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.doctest",
    "sphinx.ext.napoleon",
    "sphinxcontrib.programoutput",
    "generated",
    "fences",
]

source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
exclude_patterns = ["_build", "examples/*.md"]
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

html_theme = "furo"
html_title = f"cykafka {release}"
# Wide tables wrap inside the text column (docs/_static/tables.css).
html_static_path = ["_static"]
html_css_files = ["tables.css"]

autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_default_options = {"members": True, "undoc-members": False}

# Examples run from the docs folder, with the interpreter that built the site.
programoutput_use_ansi = False

doctest_global_setup = """
import cykafka
"""
