"""Sphinx configuration for the SimpleKafka docs site (built warning-free in the tests).

The chapters' listings and the notebooks run while the site is built (see
_ext/executed_pages.py; notebooks through MyST-NB), so every listing's output is
on its page;
the diagrams are Graphviz sources in diagrams/; the benchmark page shows the
plots `simplekafka bench` draws into _static/bench/.
"""

import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(DOCS / "_ext"))
# The notebooks' kernels inherit this, so they import this checkout's simplekafka.
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])

project = "SimpleKafka"
author = "The SimpleKafka developers"
copyright = "2026, The SimpleKafka developers"
extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
    "sphinx.ext.graphviz",
    "executed_pages",
]
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb"}
# _static: the benchmark suite's plots and tables, which pages include
exclude_patterns = ["_build", "_static", "jupyter_execute", "**.ipynb_checkpoints"]
myst_heading_anchors = 3
autodoc_member_order = "bysource"
autodoc_typehints = "description"
suppress_warnings = ["myst.header"]

html_theme = "furo"
html_title = "SimpleKafka"
pygments_style = "friendly"
pygments_dark_style = "monokai"

# MyST-NB: run every notebook on each build, one kernel per page, in a temporary
# directory; a failing cell fails the build. The test suite runs every notebook
# itself (tests/test_notebooks.py, with the "now you try" answers checked), so its
# site build says SIMPLEKAFKA_DOCS_NOTEBOOKS=off and they do not run twice.
nb_execution_mode = os.environ.get("SIMPLEKAFKA_DOCS_NOTEBOOKS", "force")
nb_execution_timeout = 600  # seconds per cell: some start a three-broker cluster
nb_execution_in_temp = True
nb_execution_raise_on_error = True
nb_execution_show_tb = True
nb_merge_streams = True

graphviz_output_format = "svg"
graphviz_dot_args = ["-Gfontname=Helvetica", "-Nfontname=Helvetica", "-Efontname=Helvetica"]
