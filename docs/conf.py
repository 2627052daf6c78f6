"""Sphinx configuration for the SimpleKafka docs site (built warning-free in the tests).

The chapters' listings and the notebooks run while the site is built (see
_ext/executed_pages.py; notebooks through MyST-NB), so every listing's output is
on its page;
the diagrams are Graphviz sources in diagrams/; the benchmark page shows the
plots `simplekafka bench` draws into _static/bench/.

A `sphinx -q` build prints warnings and errors only: the notebooks' kernels and
Spark are configured to keep their start-up notices to themselves (below).
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
# The notebooks' Python kernel: ipykernel's own, at log level ERROR (ipykernel logs a
# WARNING at every start that its kernel talks TCP on 127.0.0.1 without encryption;
# the kernel's errors still show). JUPYTER_PATH is searched before the installed
# kernelspecs.
os.environ["JUPYTER_PATH"] = os.pathsep.join(
    [str(DOCS / "_kernels"), *filter(None, [os.environ.get("JUPYTER_PATH")])])
# Spark, started by notebook 08 and chapter 8's listings, logs errors only from its
# first line (it would announce its default logging set-up and warn about Hadoop's
# native library before the code can call setLogLevel): _spark/log4j2.properties.
# The notebooks' drivers find it here; the listings' drivers are handed the file itself
# (_ext/executed_pages.py), which keeps their class path the one the suite's archive of
# Spark's classes was written for.
os.environ.setdefault("SPARK_CONF_DIR", str(DOCS / "_spark"))

project = "SimpleKafka"
author = "The SimpleKafka developers"
copyright = "2026, The SimpleKafka developers"
extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
    "sphinx.ext.graphviz",
    "sphinx_copybutton",
    "executed_pages",
    "shared_navigation",
]
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb"}
# _static: the benchmark suite's plots and tables, which pages include
exclude_patterns = ["_build", "_static", "_kernels", "_spark", "jupyter_execute",
                    "**.ipynb_checkpoints"]
myst_heading_anchors = 3
autodoc_member_order = "bysource"
autodoc_typehints = "description"
suppress_warnings = ["myst.header"]

html_theme = "furo"
html_title = "SimpleKafka"
pygments_style = "friendly"
pygments_dark_style = "monokai"
# The site's own CSS (_static/css/simplekafka.css): a listing's output is labelled
# "Output" and wraps; diagrams keep the size they were drawn at and scroll sideways
# when wider than the column.
html_static_path = ["_static/css"]
html_css_files = ["simplekafka.css"]

# A copy button on code, not on what it printed: no button on a listing's output
# (class listing-output) or a notebook cell's (MyST-NB's div.output); in a console
# block only the commands are copied, without their `$ ` prompt.
copybutton_selector = "div:not(.listing-output):not(.output) > div.highlight > pre"
copybutton_prompt_text = "$ "
copybutton_only_copy_prompt_lines = True
copybutton_exclude = ".linenos, .gp, .go"

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
