"""The docs site as a reader meets it, checked from its sources (no site build).

Diagrams sized to be read, the benchmarks page opening with its figures, the
landing page, output blocks told apart from code, the copy button, and a quiet
build. ``tests/test_docs.py`` checks the same on the built site (in Chromium
for the sizes) and the build's own output.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
CSS = DOCS / "_static" / "css" / "simplekafka.css"
# furo's content column: 46em of 16 px.
COLUMN_PX = 46 * 16
# The smallest label height a reader should have to read, in CSS pixels.
MIN_LABEL_PX = 9.0
PX_PER_PT = 96 / 72


class Svg:
    """What decides how large a Graphviz SVG's text comes out on a page."""

    def __init__(self, text: str, name: str):
        self.name = name
        width = re.search(r'<svg[^>]*\swidth="([\d.]+)pt"', text)
        view_box = re.search(r'<svg[^>]*\sviewBox="([-\d. ]+)"', text)
        assert width and view_box, f"{name}: no width in pt or no viewBox"
        self.width_px = float(width.group(1)) * PX_PER_PT  # its natural width on a page
        self.view_box_width = float(view_box.group(1).split()[2])
        sizes = [float(size) for size in re.findall(r'font-size="([\d.]+)"', text)]
        assert sizes, f"{name}: no text"
        self.smallest_font = min(sizes)  # in viewBox units

    def label_px(self, shown_width_px: float) -> float:
        """The height of its smallest text when the drawing is shown this wide."""
        return self.smallest_font * shown_width_px / self.view_box_width

    def shown_width_px(self, keeps_its_size: bool, column_px: float = COLUMN_PX) -> float:
        """Natural width if the site lets diagrams keep it (and scroll), else fit to the column."""
        return self.width_px if keeps_its_size else min(self.width_px, column_px)


def graphviz_dot_args() -> list[str]:
    """conf.py's arguments for `dot` (the fonts the site draws its own diagrams with)."""
    match = re.search(r"^graphviz_dot_args = (\[.*?\])$", (DOCS / "conf.py").read_text(), re.M)
    return ast.literal_eval(match.group(1)) if match else []


def diagrams() -> list[Svg]:
    """Every diagram the site shows: the chapters' committed SVGs and docs/diagrams/*.dot drawn."""
    found = [Svg(path.read_text(), str(path.relative_to(ROOT)))
             for path in sorted((ROOT / "stages").glob("*/*.svg"))]
    dot = shutil.which("dot")
    assert dot, "Graphviz's dot is needed (tools/bootstrap.sh installs it)"
    for source in sorted((DOCS / "diagrams").glob("*.dot")):
        drawn = subprocess.run([dot, "-Tsvg", *graphviz_dot_args(), str(source)],
                               capture_output=True, text=True, check=True, timeout=60).stdout
        found.append(Svg(drawn, str(source.relative_to(ROOT))))
    return found


def css_rules(css: str) -> dict[str, str]:
    """selector -> declarations of a plain stylesheet (comments dropped)."""
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.S)
    rules: dict[str, str] = {}
    for selectors, body in re.findall(r"([^{}]+)\{([^{}]*)\}", css):
        for selector in selectors.split(","):
            rules[" ".join(selector.split())] = rules.get(" ".join(selector.split()), "") + body
    return rules


def diagrams_keep_their_size() -> bool:
    """The site's CSS shows both kinds of diagram at their drawn size, in a scrolling box."""
    if not CSS.exists():
        return False
    rules = css_rules(CSS.read_text())

    def says(selector: str, declaration: str) -> bool:
        return re.search(declaration, rules.get(selector, "")) is not None

    return (says('p > img[src$=".svg"]', r"max-width:\s*none")
            and says("div.graphviz > object.graphviz", r"max-width:\s*none")
            and says('p:has(> img[src$=".svg"])', r"overflow-x:\s*auto")
            and says("div.graphviz", r"overflow-x:\s*auto"))


@pytest.mark.integration  # runs Graphviz's dot
def test_every_diagram_is_shown_with_labels_large_enough_to_read():
    keeps = diagrams_keep_their_size()
    small = {svg.name: round(svg.label_px(svg.shown_width_px(keeps)), 1) for svg in diagrams()
             if svg.label_px(svg.shown_width_px(keeps)) < MIN_LABEL_PX}
    assert small == {}, f"labels under {MIN_LABEL_PX} px on the page (name: px)"


@pytest.mark.integration  # runs Graphviz's dot
@pytest.mark.parametrize("picture", ["layers.dot", "replication.dot"])
def test_the_pictures_pages_open_with_fit_the_column(picture):
    """The landing page's and overview's picture and chapter 7's: whole, without scrolling."""
    (svg,) = [d for d in diagrams() if d.name == f"docs/diagrams/{picture}"]
    assert svg.width_px <= COLUMN_PX


def test_the_replication_diagram_matches_the_chapters_text():
    """docs/diagrams/replication.dot shows the state of the chapter's text diagram."""
    source = (DOCS / "diagrams" / "replication.dot").read_text()
    chapter = (ROOT / "stages" / "stage7_cluster" / "README.md").read_text()
    leos = re.findall(r"LEO (\d+)", source)
    assert leos == ["5", "5", "3"]
    assert "min(5, 5, 3) = 3" in source
    for line in ("leader, leader epoch 3", "LEO 5", "follower, LEO 5", "follower, LEO 3",
                 "min LEO over the ISR = 3"):
        assert line in chapter, f"the chapter's text diagram no longer says {line!r}"


def test_the_benchmarks_page_opens_with_the_summary_and_the_headline_plots():
    page = (DOCS / "benchmarks.md").read_text()
    lines = page.splitlines()
    first_table = next(n for n, line in enumerate(lines) if line.startswith("|"))
    first_plot = next(n for n, line in enumerate(lines) if line.startswith("!["))
    assert first_table < 25 and first_plot < 50, (first_table, first_plot)
    assert len(lines) < 150, "method and history belong on benchmarks-method.md"
    method = (DOCS / "benchmarks-method.md").read_text()
    assert "](benchmarks-method.md" in page and "](benchmarks.md)" in method
    for section in ("## The suite", "### Where the latency tail comes from",
                    "## Component scripts", "## How today's figures were taken"):
        assert section in method
    assert re.search(r"^benchmarks-method$", (DOCS / "index.md").read_text(), re.M)


def test_the_landing_page_shows_the_system_and_three_ways_in():
    index = (DOCS / "index.md").read_text()
    before_toc = index.split("```{toctree}")[0]
    assert re.search(r"```\{graphviz\} /diagrams/layers\.dot", before_toc), "the picture"
    for way in ("stages/stage1.md", "learn.md", "operating.md"):
        assert f"]({way})" in before_toc, way
    assert "run_cluster.sh" in before_toc and "simplekafka learn" in before_toc
    toctrees = re.findall(r"```\{toctree\}\n((?::\w+:.*\n)*)", index)
    assert toctrees and all(":hidden:" in options for options in toctrees), \
        "the sidebar lists the pages; the landing page does not repeat it"


def test_outputs_are_labelled_and_wrapped_and_the_copy_button_skips_them():
    rules = css_rules(CSS.read_text())
    assert 'content: "Output"' in rules["div.listing-output::before"]
    assert re.search(r"white-space:\s*pre-wrap", rules["div.listing-output pre"])
    assert "border-left" in rules["div.listing-output"]
    conf = (DOCS / "conf.py").read_text()
    assert re.search(r'html_css_files = \["simplekafka.css"\]', conf)
    assert re.search(r'html_static_path = \["_static/css"\]', conf)
    assert '"sphinx_copybutton"' in conf
    assert re.search(r'copybutton_selector = ".*:not\(\.listing-output\).*"', conf)
    assert re.search(r'copybutton_exclude = ".*\.gp.*\.go', conf)
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    assert any(req.startswith("sphinx-copybutton") for req in extras["docs"])


@pytest.mark.integration
@pytest.mark.timeout(400)
def test_spark_started_as_the_docs_build_starts_it_prints_no_log_lines(tmp_path):
    """Chapter 8 and notebook 08 start Spark; under the build's SPARK_CONF_DIR it stays quiet."""
    script = tmp_path / "spark.py"
    script.write_text("from simplekafka.spark.session import local_spark\n"
                      "spark = local_spark()\nprint('Spark', spark.version)\nspark.stop()\n")
    env = {**os.environ, "SPARK_CONF_DIR": str(DOCS / "_spark"),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=360, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.startswith("Spark ")
    assert result.stderr.strip() == "", result.stderr[-3000:]
