"""Sphinx configuration for the SimpleKafka docs site (built warning-free in the tests)."""

import os
import sys

sys.path.insert(0, os.path.abspath(".."))

project = "SimpleKafka"
author = "The SimpleKafka developers"
copyright = "2026, The SimpleKafka developers"
extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinx.ext.viewcode"]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "_static"]  # _static: plots and tables that pages include
myst_heading_anchors = 3
autodoc_member_order = "bysource"
autodoc_typehints = "description"
html_theme = "alabaster"
suppress_warnings = ["myst.header"]
