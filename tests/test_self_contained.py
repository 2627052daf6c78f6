"""The repository stands alone: it cites no file outside it, and its rule numbers resolve.

Comments and tests that name a replication rule say "replication rule N", and
N is one of the numbered rules of the "Replication rules" section of
docs/design-notes.md, which holds their text.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SKIP_DIRS = {".git", ".venv", "_build", "node_modules", "__pycache__", ".hypothesis",
             "test-artifacts", ".pytest_cache", ".mypy_cache", ".ruff_cache"}
TEXT_SUFFIXES = {".py", ".md", ".sh", ".toml", ".cfg", ".txt", ".yml", ".yaml", ".json",
                 ".html", ".js", ".css", ".ini", ".rst"}


def _text_files() -> list[Path]:
    files = []
    for path in ROOT.rglob("*"):
        if SKIP_DIRS & set(path.relative_to(ROOT).parts) or not path.is_file():
            continue
        if path.suffix in TEXT_SUFFIXES or path.name in ("run_tests.sh", "run_cluster.sh"):
            files.append(path)
    return files


def _rules_section() -> str:
    notes = (ROOT / "docs" / "design-notes.md").read_text()
    match = re.search(r"^## Replication rules\n(.*?)^## ", notes, flags=re.S | re.M)
    assert match, "docs/design-notes.md lacks its '## Replication rules' section"
    return match.group(1)


def test_nothing_cites_files_outside_the_repository():
    outside = re.compile(r"DESIGN\.md|\.\./shared|shared/reference")
    offenders = [f"{path.relative_to(ROOT)}:{number}"
                 for path in _text_files() if path != Path(__file__)
                 for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
                 if outside.search(line)]
    assert offenders == []


def test_the_replication_rules_are_numbered_one_to_five():
    numbers = re.findall(r"^(\d)\. \*\*", _rules_section(), flags=re.M)
    assert numbers == ["1", "2", "3", "4", "5"]


def test_every_rule_reference_names_a_replication_rule():
    """A bare "rule 5" is ambiguous; "replication rule 5" points at the section."""
    bare = re.compile(r"(?<![Rr]eplication )\b[Rr]ule \d\b")
    offenders = []
    for path in _text_files():
        if path.suffix not in (".py", ".md") or path == Path(__file__):
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            for match in bare.finditer(line):
                if "section" in line[match.end():match.end() + 9]:  # "(rule 1 section)"
                    continue
                offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert offenders == []
    cited = {int(n) for path in _text_files() if path.suffix == ".py"
             for n in re.findall(r"[Rr]eplication rule (\d)", path.read_text(errors="replace"))}
    assert cited and cited <= {1, 2, 3, 4, 5}
