"""Chapters and notebooks as executed pages: the site shows what every listing prints.

A page whose source starts with an ``{include}`` of a chapter
(``stages/<stage>/README.md``) or of a text notebook (``notebooks/*.md``) gets
that file's text when Sphinx reads it.

* A chapter's ```` ```python ```` listings are run, top to bottom, as one
  Python script in a fresh temporary directory (exactly what a reader who
  pastes them into a file gets), and each listing's output (stdout and stderr,
  in the order printed) is put on the page right under it. A listing that
  fails fails the build: an error naming the page and the listing, and a non-zero
  exit status, once every other page is built (one flaky script costs its own
  page's tests, not the whole site's). What each listing printed is also written to
  ``<doctreedir>/listings/<stage>.json`` for the test suite, so a listing runs
  once per build, not once more in the tests. The output blocks that
  ``tools/chapter_outputs.py`` writes into the README (for GitHub) are dropped
  first: the page shows this run's output, and the tests compare the two.
* A notebook is a MyST-NB notebook already; MyST-NB runs it in a Jupyter kernel.
* A page under ``further/`` (the material a chapter's "Going further" links to)
  is run like a chapter: its own ```` ```python ```` listings, as one script, each
  output under its listing (recorded as ``listings/further-<page>.json``).

The listings of all pages are started when Sphinx is about to read them, in a
thread beside Sphinx's reading of the other pages; reading a page waits for its own
script. ``SIMPLEKAFKA_DOCS_LISTING_JOBS=2`` runs two scripts at once (the pages that
start Spark one after another, the others beside them), each page's script still on
its own in its own directory. It is not the default: on the suite's loaded two-core
machine it gained little (557 s -> 485 s for a build, at different loads), two Spark
pages side by side were slower than one after the other, and once, at a load
average of 10, a Spark listing's Python worker missed Spark's 10 s to connect back.

Whatever the page holds after the include (a diagram, say) goes in before the
chapter's first ``##`` section. The chapters stay plain markdown that reads well
on GitHub; only the site adds their outputs. A chapter's images are relative to
the chapter (``![...](record_batch.svg)``, beside its README, as GitHub resolves
them); the page lives elsewhere, so their paths are rewritten relative to it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.util import logging

log = logging.getLogger(__name__)

INCLUDE = re.compile(r"\A\s*```\{include\}\s+(\S+)\s*\n```\s*\n?", re.S)
LISTING = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)
MARK = "\x1esimplekafka-listing-{}\x1e"
IMAGE = re.compile(r"^(!\[[^\]]*\]\()([^)\s]+)(\)[ \t]*)$", re.M)  # a line holding one image
# The block tools/chapter_outputs.py writes under a listing in a README (GitHub shows no
# run); the site drops it and shows its own run's output instead.
OUTPUT_MARKER = "<!-- output: written by tools/chapter_outputs.py from a real run; do not edit -->"
OUTPUT_BLOCK = re.compile(
    r"\n" + re.escape(OUTPUT_MARKER) + r"\n(?P<fence>`{3,})text\n(?P<text>.*?)^(?P=fence)[ \t]*\n",
    re.S | re.M)
#: Spark's configuration for the build: log4j2.properties (errors only) and spark-env.sh.
SPARK_CONF = Path(__file__).resolve().parent.parent / "_spark"
#: Java's notice for the module Spark 4 adds; no JVM option turns it off.
INCUBATOR_NOTICE = re.compile(r"^WARNING: Using incubator modules: jdk\.incubator\.vector\n", re.M)
CHAPTER_TIMEOUT = 900  # seconds for all listings of a chapter; some start clusters
#: How many pages' scripts run at once (SIMPLEKAFKA_DOCS_LISTING_JOBS): one at a time.
LISTING_JOBS = 1


def run_listings(listings: list[str], root: Path) -> tuple[list[str], int]:
    """Run the listings as one script; return what each printed, and the exit status."""
    script = "\n\n".join(f"print({MARK.format(n)!r}, flush=True)\n{code}"
                         for n, code in enumerate(listings))
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": os.pathsep.join(
        [str(root), *filter(None, [os.environ.get("PYTHONPATH")])])}
    # Spark logs errors only (docs/_spark/log4j2.properties), for the site and
    # tools/chapter_outputs.py alike. Named to log4j itself, not through SPARK_CONF_DIR
    # (which conf.py sets for the notebooks): Spark puts that directory first on the
    # driver's class path, and a driver whose class path is not the suite's ignores the
    # class-data-sharing archive (tools/jvm_cds.py), silently, starting twice as slowly.
    env.setdefault("LOG4J_CONFIGURATION_FILE", str(SPARK_CONF / "log4j2.properties"))
    if env.get("SPARK_CONF_DIR") == str(SPARK_CONF):
        del env["SPARK_CONF_DIR"]
    with tempfile.TemporaryDirectory(prefix="simplekafka-chapter-") as workdir:
        path = Path(workdir) / "chapter.py"
        path.write_text(script)
        result = subprocess.run([sys.executable, str(path)], cwd=workdir, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                timeout=CHAPTER_TIMEOUT, check=False)
    outputs = [""] * len(listings)
    # What docs/_spark/spark-env.sh drops when Spark's scripts source it (see there).
    printed = INCUBATOR_NOTICE.sub("", result.stdout)
    pieces = re.split("\x1esimplekafka-listing-(\\d+)\x1e\n", printed)
    for number, text in zip(pieces[1::2], pieces[2::2]):
        outputs[int(number)] = text
    return outputs, result.returncode


def timed_listings(listings: list[str], root: Path) -> tuple[list[str], int, float]:
    """``run_listings`` and the seconds it took: a page's record keeps them, so a slow
    build shows which pages it spent its time on."""
    started = time.monotonic()
    outputs, status = run_listings(listings, root)
    return outputs, status, time.monotonic() - started


def _output_block(text: str) -> str:
    fence = "`" * max(3, max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    return f"\n{fence}{{code-block}} text\n:class: listing-output\n{text.rstrip()}\n{fence}\n"


def chapter_with_outputs(text: str, outputs: list[str], extra: str = "") -> str:
    """The chapter with each listing's output after it, and ``extra`` before its first section."""
    numbered = iter(range(len(outputs)))

    def with_output(match: re.Match) -> str:
        output = outputs[next(numbered)]
        return match.group(0) + (_output_block(output) if output.strip() else "")

    text = LISTING.sub(with_output, text)
    if extra.strip():
        first_section = re.search(r"^## ", text, flags=re.M)
        at = first_section.start() if first_section else len(text)
        text = text[:at] + extra.strip() + "\n\n" + text[at:]
    return text


def with_images_from(text: str, chapter_dir: Path, page_dir: Path) -> str:
    """The chapter with its relative image paths made relative to the page's directory."""
    def moved(match: re.Match) -> str:
        target = match.group(2)
        if re.match(r"[a-z][a-z0-9+.-]*:|/|#", target):
            return match.group(0)  # a URL, a site-absolute path or an anchor: unchanged
        return match.group(1) + os.path.relpath(chapter_dir / target, page_dir) + match.group(3)

    return IMAGE.sub(moved, text)


def with_outputs_run(app: Sphinx, name: str, text: str, path: Path) -> str:
    """``text`` with each listing's output under it; a failing listing fails the build."""
    listings = LISTING.findall(text)
    started = _started(app).pop(name, None)
    if started is None:  # not started ahead (a page Sphinx reads again, say): run it now
        log.info("running the %d listings of %s", len(listings), name)
        outputs, status, seconds = timed_listings(listings, Path(app.confdir).parent)
    else:
        outputs, status, seconds = started.result()
    record = Path(app.doctreedir) / "listings" / f"{name}.json"
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text(json.dumps({
        "chapter": str(path), "status": status, "seconds": round(seconds, 1), "listings": [
        {"code": code, "output": output} for code, output in zip(listings, outputs)]},
        indent=1))
    if status != 0:
        # The build goes on, so one failing script costs its own page, not the site; the
        # page shows the traceback under the listing and the build exits non-zero.
        failed = max((n for n, out in enumerate(outputs) if out), default=0)
        log.error("%s: listing %d failed (exit status %d):\n%s", path, failed + 1, status,
                  outputs[failed][-4000:], type="simplekafka", subtype="listing")
        app.statuscode = 1
    return chapter_with_outputs(text, outputs)


def executed_text(app: Sphinx, docname: str, source: str) -> tuple[str, str, Path] | None:
    """(record name, the text whose listings run, its file) for a page that runs listings."""
    if docname.startswith("further/"):
        if LISTING.search(source):
            return docname.replace("/", "-"), source, Path(app.env.doc2path(docname))
        return None
    match = INCLUDE.match(source)
    if match is None:
        return None
    path = (Path(app.env.doc2path(docname)).parent / match.group(1)).resolve()
    if path.name == "README.md" and path.parent.parent.name == "stages":
        return path.parent.name, OUTPUT_BLOCK.sub("", path.read_text()), path
    return None


def _started(app: Sphinx) -> dict[str, Future]:
    if not hasattr(app, "simplekafka_listings"):
        app.simplekafka_listings = {}  # type: ignore[attr-defined]
    return app.simplekafka_listings  # type: ignore[attr-defined]


def start_listings(app: Sphinx, env, docnames: list[str]) -> None:
    """Start the listings of every page about to be read: Spark's in turn, the rest beside."""
    pages = []
    for docname in docnames:
        found = executed_text(app, docname, Path(env.doc2path(docname)).read_text())
        if found is not None:
            pages.append(found)
    # Sphinx's own parallel reading (-j) forks readers, which would not have the threads.
    if not pages or app.parallel > 1:
        return
    jobs = max(1, int(os.environ.get("SIMPLEKAFKA_DOCS_LISTING_JOBS", LISTING_JOBS)))
    spark = ThreadPoolExecutor(1, thread_name_prefix="listings-spark")
    others = spark if jobs == 1 else ThreadPoolExecutor(jobs - 1, thread_name_prefix="listings")
    app.simplekafka_listing_pools = [spark, others]  # type: ignore[attr-defined]
    root = Path(app.confdir).parent
    for name, text, _path in pages:
        listings = LISTING.findall(text)
        log.info("running the %d listings of %s", len(listings), name)
        pool = spark if "spark" in "".join(listings) else others
        _started(app)[name] = pool.submit(timed_listings, listings, root)


def stop_listings(app: Sphinx, _exception: Exception | None) -> None:
    """A build that ends early (an error) does not start the scripts still waiting."""
    for pool in getattr(app, "simplekafka_listing_pools", []):
        pool.shutdown(wait=True, cancel_futures=True)


def on_source_read(app: Sphinx, docname: str, source: list[str]) -> None:
    found = executed_text(app, docname, source[0])
    if docname.startswith("further/"):
        if found is not None:
            source[0] = with_outputs_run(app, *found)
        return
    match = INCLUDE.match(source[0])
    if match is None:
        return
    path = (Path(app.env.doc2path(docname)).parent / match.group(1)).resolve()
    extra = source[0][match.end():]
    if found is not None:
        text = with_outputs_run(app, *found)
        if extra.strip():
            first_section = re.search(r"^## ", text, flags=re.M)
            at = first_section.start() if first_section else len(text)
            text = text[:at] + extra.strip() + "\n\n" + text[at:]
        source[0] = with_images_from(text, path.parent, Path(app.env.doc2path(docname)).parent)
    elif path.parent.name == "notebooks" and path.suffix == ".md":
        source[0] = path.read_text() + ("\n" + extra if extra.strip() else "")
    else:
        return
    app.env.note_dependency(str(path))


def setup(app: Sphinx) -> dict:
    app.connect("env-before-read-docs", start_listings)
    app.connect("source-read", on_source_read)
    app.connect("build-finished", stop_listings)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
