"""The docs site: built once per test session, warning-free, with each listing's output on its page.

The build runs each chapter's ``python`` listings (as one script per chapter,
in a temporary directory) and each notebook (in a Jupyter kernel), so it
starts ZooKeeper and brokers: the tests that need the built site are
integration tests. The build records what each listing printed, and
``test_chapter_listings_run`` checks that record and the page instead of
running the listings a second time.
"""

from __future__ import annotations

import ast
import html
import importlib
import importlib.metadata
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import jupytext
import pytest
import tomllib

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
_spec = importlib.util.spec_from_file_location("chapter_outputs",
                                               ROOT / "tools" / "chapter_outputs.py")
chapter_outputs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(chapter_outputs)
CHAPTERS = sorted((ROOT / "stages").glob("*/README.md"))
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.md"))
BUILD_TIMEOUT = 1800  # seconds: the build runs every chapter and notebook on a loaded machine
# The first test to use the site builds it: its timeout must cover the build.
pytestmark = pytest.mark.timeout(BUILD_TIMEOUT + 120)


class Site(NamedTuple):
    html: Path
    result: subprocess.CompletedProcess

    def page_text(self, page: str) -> str:
        """A built page's visible text (tags dropped, entities decoded)."""
        raw = (self.html / page).read_text()
        return html.unescape(re.sub(r"<[^>]+>", "", raw))


@pytest.fixture(scope="session")
def site(tmp_path_factory) -> Site:
    out = tmp_path_factory.mktemp("site") / "html"
    result = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
         str(DOCS), str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=BUILD_TIMEOUT, check=False,
        # tests/test_notebooks.py runs the notebooks; the pages' execution is tested below
        env={**os.environ, "SIMPLEKAFKA_DOCS_NOTEBOOKS": "off"})
    return Site(out, result)


def python_listings(chapter: Path) -> list[str]:
    """The ```python fenced blocks of a chapter, in order."""
    return re.findall(r"^```python[ \t]*\n(.*?)^```", chapter.read_text(), flags=re.S | re.M)


def stage_page(chapter: Path) -> str:
    return f"stages/stage{chapter.parent.name.split('_')[0].removeprefix('stage')}.html"


@pytest.mark.integration
def test_docs_build_without_warnings(site):
    assert site.result.returncode == 0, site.result.stdout[-5000:] + site.result.stderr[-5000:]


@pytest.mark.integration
@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.parent.name)
def test_chapter_listings_run(chapter, site):
    """Every listing ran in the docs build, in one script, and its output is on the page."""
    listings = python_listings(chapter)
    assert listings, f"{chapter} has no python listings to run"
    record_path = site.html / ".doctrees" / "listings" / f"{chapter.parent.name}.json"
    assert record_path.exists(), site.result.stdout[-3000:] + site.result.stderr[-3000:]
    record = json.loads(record_path.read_text())
    assert record["status"] == 0, record["listings"]
    assert [entry["code"] for entry in record["listings"]] == listings
    page = site.page_text(stage_page(chapter))
    for entry in record["listings"]:
        lines = [line.strip() for line in entry["output"].splitlines() if line.strip()]
        if lines:
            assert lines[0] in page, f"the output {lines[0]!r} is not on {stage_page(chapter)}"
    assert "Traceback (most recent call last)" not in page


@pytest.mark.integration
def test_a_chapter_page_holds_a_listings_printed_output(site):
    page = site.page_text("stages/stage1.html")
    # printed by the framing listing of chapter 1; in the README only as a written output
    assert "refused: frame at stream offset 0 announces 2147483647 bytes; the limit is 1024" in page
    assert "refused: frame at stream offset 0" not in chapter_outputs.without_outputs(
        (ROOT / "stages/stage1_protocol/README.md").read_text())


def _chapter_record(site: Site, chapter: Path) -> dict:
    record_path = site.html / ".doctrees" / "listings" / f"{chapter.parent.name}.json"
    assert record_path.exists(), site.result.stdout[-3000:] + site.result.stderr[-3000:]
    return json.loads(record_path.read_text())


@pytest.mark.integration
@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.parent.name)
def test_the_outputs_written_in_the_readme_are_what_the_listings_print(chapter, site):
    """The README's output blocks match the docs build's own run (ports, times, ids aside).

    On a failure, ``python tools/chapter_outputs.py --stage N`` writes them anew.
    """
    outputs = [entry["output"] for entry in _chapter_record(site, chapter)["listings"]]
    assert chapter_outputs.differences(chapter.read_text(), outputs, chapter.parent.name) == []


@pytest.mark.integration
def test_a_planted_stale_output_in_a_readme_is_reported(site):
    chapter = ROOT / "stages/stage1_protocol/README.md"
    outputs = [entry["output"] for entry in _chapter_record(site, chapter)["listings"]]
    text = chapter.read_text()
    first = next(n for n, out in enumerate(outputs) if out.strip())
    planted = chapter_outputs.with_outputs(
        text, [out + "one line more\n" if n == first else out for n, out in enumerate(outputs)])
    assert chapter_outputs.differences(planted, outputs) != []
    assert chapter_outputs.differences(chapter_outputs.without_outputs(text), outputs) != []


@pytest.mark.integration
def test_the_further_pages_listings_run(site):
    for page in sorted((DOCS / "further").glob("*.md")):
        text = page.read_text()
        if not python_listings(page):
            continue
        record = json.loads((site.html / ".doctrees" / "listings" /
                             f"further-{page.stem}.json").read_text())
        assert record["status"] == 0, record["listings"]
        built = site.page_text(f"further/{page.stem}.html")
        assert "Traceback (most recent call last)" not in built, page.name
        title = text.splitlines()[0].lstrip("# ")
        curly = built.replace("\u2019", "'").replace("\u201c", '"').replace("\u201d", '"')
        assert title in curly, (page.name, title)


def test_every_notebook_has_a_page():
    for notebook in NOTEBOOKS:
        page = DOCS / "notebooks" / notebook.name
        assert page.exists(), f"add {page.relative_to(ROOT)} (an include of the notebook)"
        assert f"../../notebooks/{notebook.name}" in page.read_text()


@pytest.mark.integration
def test_a_notebook_page_shows_its_outputs_when_the_site_runs_it(tmp_path):
    """A plain build runs the notebooks (the suite's own build leaves that to test_notebooks)."""
    notebook = NOTEBOOKS[0]  # 01, the protocol: no processes to start
    docs = tmp_path / "docs"
    (docs / "notebooks").mkdir(parents=True)
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / notebook.name).write_text(notebook.read_text())
    page = DOCS / "notebooks" / notebook.name
    (docs / "notebooks" / notebook.name).write_text(page.read_text())
    (docs / "conf.py").write_text((DOCS / "conf.py").read_text())
    for configuration in ("_ext", "_kernels", "_spark", "_static"):
        (docs / configuration).symlink_to(DOCS / configuration)
    (docs / "index.md").write_text(f"# Site\n\n```{{toctree}}\nnotebooks/{notebook.stem}\n```\n")
    env = {key: value for key, value in os.environ.items() if key != "SIMPLEKAFKA_DOCS_NOTEBOOKS"}
    result = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
         str(docs), str(tmp_path / "html")],
        cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False, env=env)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    raw = (tmp_path / "html" / "notebooks" / f"{notebook.stem}.html").read_text()
    code_cells = [c for c in jupytext.read(notebook).cells if c.cell_type == "code"]
    assert raw.count('class="cell_output') >= len(code_cells) // 2, "too few outputs on the page"
    assert "Traceback (most recent call last)" not in html.unescape(raw)
    # A quiet build: the kernel's start-up notices (ipykernel warns that it talks TCP
    # without encryption) stay out of it.
    assert "IPKernelApp" not in result.stderr + result.stdout, result.stderr[-3000:]


@pytest.mark.integration
@pytest.mark.parametrize("page, diagram", [
    ("index.html", "layers"), ("overview.html", "layers"), ("stages/stage4.html", "produce_path"),
    ("stages/stage7.html", "replication")])
def test_diagrams_are_drawn_from_their_graphviz_sources(page, diagram, site):
    raw = (site.html / page).read_text()
    images = re.findall(r'(?:data|src)="([^"]*graphviz-[0-9a-f]+\.svg)"', raw)
    assert images, f"{page} shows no Graphviz diagram"
    svgs = [(site.html / page).parent.joinpath(image).resolve().read_text() for image in images]
    assert any(f"<title>{diagram}</title>" in svg for svg in svgs)


@pytest.mark.parametrize("page, at_least", [("diagrams/produce_path.dot", 8),
                                             ("architecture.md", 40)])
def test_the_maps_name_modules_and_functions_that_exist(page, at_least):
    """The produce path diagram and the architecture map name real code, so they cannot
    drift from it."""
    names = re.findall(r"simplekafka(?:\.\w+)+", (DOCS / page).read_text())
    assert len(names) >= at_least
    for name in names:
        parts = name.split(".")
        for cut in range(len(parts), 0, -1):
            try:
                found = importlib.import_module(".".join(parts[:cut]))
                break
            except ImportError:
                continue
        for attribute in parts[cut:]:
            assert hasattr(found, attribute), f"{name}: no {attribute}"
            found = getattr(found, attribute)


@pytest.mark.integration
def test_the_benchmark_page_shows_the_suites_plots(site):
    plots = re.findall(r"\]\((_static/bench/[\w.]+\.png)\)", (DOCS / "benchmarks.md").read_text())
    assert plots, "docs/benchmarks.md shows no plots"
    raw = (site.html / "benchmarks.html").read_text()
    for plot in plots:
        name = Path(plot).name
        assert re.search(rf'src="[^"]*{re.escape(name)}"', raw), f"{name} is not on the page"
        assert (site.html / "_images" / name).stat().st_size > 5000


@pytest.mark.integration
def test_theme_and_search(site):
    assert "furo" in (site.html / "index.html").read_text()
    index = (site.html / "searchindex.js").read_text()
    for word in ("watermark", "varint", "segment"):
        assert f'"{word}"' in index, f"{word!r} is not in the search index"


def _imports(code: str) -> set[str]:
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return set()
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


def _requirement_names(requirements: list[str], extras: dict[str, list[str]]) -> set[str]:
    """Distribution names, with our own extras (``simplekafka[spark]``) expanded."""
    names = set()
    for requirement in requirements:
        name = re.split(r"[\[<>=!~ ;]", requirement, maxsplit=1)[0].lower().replace("_", "-")
        if name == "simplekafka":
            for extra in re.findall(r"\[(.*?)\]", requirement)[0].split(","):
                names |= _requirement_names(extras[extra.strip()], extras)
        else:
            names.add(name)
    return names


def test_the_docs_extra_installs_what_the_build_imports():
    """``pip install -e .[docs]`` alone builds the site: every import of the build is covered."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    allowed = _requirement_names(project["dependencies"], extras)
    allowed |= _requirement_names(extras["docs"], extras)
    pages = [*CHAPTERS, *sorted((DOCS / "further").glob("*.md"))]
    code = [listing for page in pages for listing in python_listings(page)]
    code += [c.source for nb in NOTEBOOKS for c in jupytext.read(nb).cells
             if c.cell_type == "code"]
    code += [p.read_text() for p in [DOCS / "conf.py", *sorted((DOCS / "_ext").glob("*.py"))]]
    imported = set().union(*map(_imports, code)) - set(sys.stdlib_module_names)
    imported -= {"simplekafka", "stages"}
    distributions = importlib.metadata.packages_distributions()
    for module in sorted(imported):
        names = {d.lower().replace("_", "-") for d in distributions.get(module, [])}
        assert names & allowed, f"{module} (from {names or 'nowhere'}) is not in the docs extra"


# What a quiet `sphinx -q` build must not print: the notebooks' kernels' and Spark's
# start-up logging, and any log line of a process the build starts.
NOISE = re.compile(r"IPKernelApp|log4j|Setting default log level|NativeCodeLoader"
                   r"|incubator modules|^\d\d/\d\d/\d\d \d\d:\d\d:\d\d |\bWARN\b", re.M)


@pytest.mark.integration
def test_a_quiet_build_prints_nothing_but_warnings(site):
    """``sphinx -q`` prints Sphinx's warnings and errors, not the log of what the build runs.

    This build leaves the notebooks to tests/test_notebooks.py; the notebook build
    above and tests/test_docs_site.py check the kernels and Spark stay quiet.
    """
    printed = site.result.stdout + site.result.stderr
    assert NOISE.search(printed) is None, printed[-3000:]


def _chromium_pages(site: Site, pages: list[str], check):
    """Open each built page in headless Chromium (Debian's) at a desktop size; run check."""
    from playwright.sync_api import sync_playwright

    from tests.test_console_browser import CHROMIUM, CHROMIUM_ARGS
    artifacts = ROOT / "test-artifacts" / "docs"
    artifacts.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            for name in pages:
                page.goto((site.html / name).as_uri())
                page.wait_for_load_state("load")
                check(name, page)
                page.screenshot(path=str(artifacts / (name.replace("/", "-") + ".png")),
                                full_page=False)
        finally:
            browser.close()


@pytest.mark.integration
def test_every_diagram_on_the_site_is_drawn_large_enough_to_read_in_chromium(site):
    """Each diagram's smallest label, as Chromium lays the page out, is at least 9 px high."""
    from tests.test_docs_site import MIN_LABEL_PX, Svg

    pages = ["index.html", "overview.html", *[f"stages/stage{n}.html" for n in range(1, 10)]]
    measured: dict[str, float] = {}

    def check(name, page):
        shown = page.evaluate("""() => [...document.querySelectorAll(
            'article img[src$=".svg"], article object.graphviz, article img.graphviz')]
            .map(e => ({url: e.src || e.data, width: e.getBoundingClientRect().width}))""")
        assert shown, f"{name} shows no diagram"
        for diagram in shown:
            path = Path(diagram["url"].removeprefix("file://"))
            svg = Svg(path.read_text(), path.name)
            measured[f"{name} {path.name}"] = svg.label_px(diagram["width"])

    _chromium_pages(site, pages, check)
    assert len(measured) >= 12, measured
    small = {key: round(px, 1) for key, px in measured.items() if px < MIN_LABEL_PX}
    assert small == {}, f"labels under {MIN_LABEL_PX} px"


@pytest.mark.integration
def test_outputs_are_labelled_wrapped_and_have_no_copy_button_in_chromium(site):
    """On chapter 1's page no output block overflows the column; code has a copy button."""
    def check(name, page):
        blocks = page.evaluate("""() => [...document.querySelectorAll('div.listing-output')]
            .map(div => {
                const pre = div.querySelector('pre');
                return {label: getComputedStyle(div, '::before').content,
                        overflows: pre.scrollWidth > pre.clientWidth + 1,
                        copy: div.querySelector('button.copybtn') !== null};
            })""")
        assert len(blocks) >= 10, f"{name}: {len(blocks)} output blocks"
        assert {block["label"] for block in blocks} == {'"Output"'}
        assert [block for block in blocks if block["overflows"]] == []
        assert not any(block["copy"] for block in blocks), "a copy button on an output"
        page.wait_for_selector("div.highlight-python button.copybtn", state="attached")

    _chromium_pages(site, ["stages/stage1.html"], check)
