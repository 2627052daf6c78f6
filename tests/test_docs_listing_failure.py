"""A chapter listing that fails fails the docs build, and costs only its own page.

The site's build runs every chapter's listings (``docs/_ext/executed_pages.py``);
the suite's site tests all share that one build. Were a failing listing to stop
the build, every site test would fail with it; instead the build goes on, builds
every other page and records its listings, and exits non-zero with an error that
names the chapter and the listing. A small site shaped like ``docs/`` shows it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.small_site import build, small_site

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.integration  # builds small sites, whose listings run as processes


BROKEN = ("# Stage 0\n\n## 0.1 First\n\n```python\nprint('first ran')\n```\n\n"
          "## 0.2 Second\n\n```python\nimport sys\nprint('about to fail')\nsys.exit(3)\n```\n\n"
          "## 0.3 Third\n\n```python\nprint('never')\n```\n")
FINE = "# Stage 9\n\n## 9.1 Only\n\n```python\nprint('stage nine ran')\n```\n"


def _site(tmp_path: Path, *flags: str) -> subprocess.CompletedProcess:
    """Two chapters: stage 0's second listing exits 3, stage 9's listings run."""
    docs = small_site(tmp_path, {"stage0_broken": BROKEN, "stage9_fine": FINE},
                      project="listings")
    return build(docs, tmp_path / "html", *flags)


def _record(tmp_path: Path, name: str) -> dict:
    return json.loads((tmp_path / "html" / ".doctrees" / "listings" / f"{name}.json").read_text())


@pytest.mark.parametrize("flags", [("-W", "--keep-going"), ()], ids=["-W", "plain"])
def test_a_failing_listing_fails_the_build_but_every_other_page_is_built(tmp_path, flags):
    result = _site(tmp_path, *flags)
    said = result.stdout + result.stderr
    assert result.returncode != 0, said
    assert "stage0_broken/README.md: listing 2 failed (exit status 3)" in said
    assert "about to fail" in said
    broken = _record(tmp_path, "stage0_broken")
    assert broken["status"] == 3
    outputs = [entry["output"] for entry in broken["listings"]]
    assert outputs == ["first ran\n", "about to fail\n", ""]
    fine = _record(tmp_path, "stage9_fine")
    assert fine["status"] == 0
    assert "stage nine ran" in (tmp_path / "html" / "stages" / "stage9.html").read_text()
    # the failing page is built too, with what its listings printed up to the failure
    assert "about to fail" in (tmp_path / "html" / "stages" / "stage0.html").read_text()


def test_a_build_whose_listings_all_run_succeeds(tmp_path):
    """The same small site with the failing line taken out: exit status 0."""
    result = _site(tmp_path, "-W", "--keep-going")
    assert result.returncode != 0  # as built above
    chapter = tmp_path / "stages" / "stage0_broken" / "README.md"
    chapter.write_text(chapter.read_text().replace("sys.exit(3)\n", ""))
    shutil.rmtree(tmp_path / "html")
    again = build(tmp_path / "docs", tmp_path / "html", "-W", "--keep-going")
    assert again.returncode == 0, again.stdout + again.stderr
    assert _record(tmp_path, "stage0_broken")["status"] == 0
