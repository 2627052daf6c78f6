"""A small site shaped like ``docs/``: the real ``_ext`` extensions, an index, and a page
per chapter that includes ``stages/<name>/README.md`` as the real stage pages do.

For tests of what the site build does to chapters (their listings run, their images
moved) without building the whole site.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def small_site(root: Path, chapters: dict[str, str], project: str = "small") -> Path:
    """Write ``root/docs`` with one page per chapter (``stage<N>_<name>`` -> its README
    text, under ``root/stages``); returns the docs directory."""
    docs = root / "docs"
    (docs / "stages").mkdir(parents=True)
    shutil.copytree(ROOT / "docs" / "_ext", docs / "_ext",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (docs / "conf.py").write_text(
        "import sys\nfrom pathlib import Path\n"
        "sys.path.insert(0, str(Path(__file__).parent / '_ext'))\n"
        f"project = {project!r}\nextensions = ['myst_parser', 'executed_pages']\n"
        "exclude_patterns = ['_build']\n")
    pages = []
    for name, text in chapters.items():
        chapter = root / "stages" / name
        chapter.mkdir(parents=True)
        (chapter / "README.md").write_text(text)
        page = f"stage{name.split('_')[0].removeprefix('stage')}"
        (docs / "stages" / f"{page}.md").write_text(
            f"```{{include}} ../../stages/{name}/README.md\n```\n")
        pages.append(f"stages/{page}")
    (docs / "index.md").write_text("# Site\n\n```{toctree}\n" + "\n".join(pages) + "\n```\n")
    return docs


def build(docs: Path, out: Path, *flags: str) -> subprocess.CompletedProcess:
    """``sphinx -b html`` of ``docs`` into ``out`` (quiet), with ``flags`` such as -W."""
    return subprocess.run([sys.executable, "-m", "sphinx", *flags, "-q", "-b", "html",
                           str(docs), str(out)],
                          cwd=docs.parent, capture_output=True, text=True, timeout=300,
                          check=False)
