"""No chapter reaches ahead: a chapter uses no glossary term that a later stage introduces.

``docs/glossary.md`` holds one table, ``| term | aliases | stage | definition |``:
each term a learner meets, the stage whose chapter introduces it, and a
one-line definition. This module reads it and checks every chapter
(``stages/stageN_*/README.md``) against it.

The rules the check applies (the glossary page states them too):

* A term matches as whole words, case-insensitively, with a space in the term
  matching any run of spaces, newlines, hyphens or ``*`` (emphasis), and an optional plural
  ``s``/``es``. A term written in capitals (``ISR``, ``LSO``) is an acronym and
  matches only in capitals. ``_`` counts as a letter, so identifiers such as
  ``leader_epoch`` or ``checkpoint_high_watermarks`` are not the words
  "leader epoch" or "high watermark".
* Prose, headings, tables and every fenced block (listings, consoles, text
  diagrams) all count: what a learner reads is what is checked.
* Except inside an explicit aside, which is one of

  - a blockquote whose first line starts with ``Later, in stage N`` (after
    ``>`` and any ``*``/``_`` emphasis); it runs to the last consecutive
    ``>`` line;
  - a parenthesis that starts with ``(later, in stage N`` (any case); it runs
    to its matching ``)``, across lines.

  An aside admits the terms introduced in stage N or before. Its N must be
  later than the chapter's own stage: an aside "later, in stage 2" in
  chapter 3 is reported, as is a term of stage 9 inside an aside that says
  stage 7.
* Order inside one chapter is not checked: a chapter may name its own terms
  before the section that explains them.
"""

from __future__ import annotations

import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "docs" / "_ext"))
from executed_pages import OUTPUT_BLOCK

ROOT = Path(__file__).resolve().parent.parent
GLOSSARY = ROOT / "docs" / "glossary.md"
CHAPTERS = sorted((ROOT / "stages").glob("stage*_*/README.md"))
HEADER = re.compile(r"^\|\s*term\s*\|\s*aliases\s*\|\s*stage\s*\|\s*definition\s*\|\s*$", re.I)
ASIDE_START = re.compile(r"later,\s+in\s+stage\s+(\d+)", re.I)


@dataclass(frozen=True)
class Term:
    name: str
    aliases: tuple[str, ...]
    stage: int
    definition: str


@dataclass(frozen=True)
class Violation:
    chapter: str
    line: int
    term: str
    found: str
    stage: int
    message: str

    def __str__(self) -> str:
        return f"{self.chapter}:{self.line}: {self.message}"


def read_glossary(path: Path = GLOSSARY) -> list[Term]:
    """The glossary's terms: the rows under its ``| term | aliases | stage | definition |``."""
    lines = path.read_text().splitlines()
    start = next(n for n, line in enumerate(lines) if HEADER.match(line))
    terms = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        assert len(cells) == 4, f"glossary row without 4 cells: {line!r}"
        name, aliases, stage, definition = cells
        terms.append(Term(name.strip("*`"),
                          tuple(a.strip().strip("`") for a in aliases.split(",") if a.strip()),
                          int(stage), definition))
    return terms


def term_pattern(word: str) -> re.Pattern:
    acronym = word.isupper()
    body = r"[\s*-]+".join(re.escape(part) for part in re.split(r"[\s-]+", word))
    return re.compile(rf"(?<!\w){body}(?:e?s)?(?!\w)", 0 if acronym else re.I)


def chapter_stage(chapter: Path) -> int:
    return int(re.match(r"stage(\d+)_", chapter.parent.name).group(1))


def asides(text: str) -> list[tuple[int, int, int]]:
    """The (start, end, N) character spans of the explicit "later, in stage N" asides."""
    spans = []
    # blockquotes: a run of '>' lines whose first starts "Later, in stage N"
    offset = 0
    lines = text.splitlines(keepends=True)
    n = 0
    starts = []
    for line in lines:
        starts.append(offset)
        offset += len(line)
    while n < len(lines):
        quoted = re.match(r"\s*>\s?[*_]*(.*)", lines[n])
        if quoted and (first := ASIDE_START.match(quoted.group(1))):
            end = n
            while end + 1 < len(lines) and lines[end + 1].lstrip().startswith(">"):
                end += 1
            spans.append((starts[n], starts[end] + len(lines[end]), int(first.group(1))))
            n = end + 1
        else:
            n += 1
    # parentheses: "(later, in stage N ...)" to the matching ")"
    for match in re.finditer(r"\((?=\s*[*_]*later,\s+in\s+stage\s+\d+)", text, re.I):
        depth, at = 0, match.start()
        while at < len(text):
            depth += {"(": 1, ")": -1}.get(text[at], 0)
            if depth == 0:
                break
            at += 1
        stage = int(ASIDE_START.search(text, match.start()).group(1))
        spans.append((match.start(), at + 1, stage))
    return spans


def without_written_outputs(text: str) -> str:
    """``text`` with the output blocks tools/chapter_outputs.py wrote blanked, lines kept.

    They are what the system printed (an ApiVersions answer lists HEARTBEAT in
    stage 1), not the chapter's words; the listing that printed them is checked.
    """
    return OUTPUT_BLOCK.sub(lambda block: "\n" * block.group(0).count("\n"), text)


def check_chapter(chapter: Path, terms: list[Term], name: str | None = None) -> list[Violation]:
    """Every use in ``chapter`` of a term a later stage introduces, outside a fitting aside."""
    name = name or str(chapter.relative_to(ROOT))
    text = without_written_outputs(chapter.read_text())
    stage = chapter_stage(chapter)
    spans = asides(text)

    def line_of(at: int) -> int:
        return text.count("\n", 0, at) + 1

    found = []
    for start, _end, aside_stage in spans:
        if aside_stage <= stage:
            found.append(Violation(name, line_of(start), "", "", aside_stage,
                                   f'an aside "later, in stage {aside_stage}" in the chapter '
                                   f"of stage {stage}: stage {aside_stage} is not later"))
    for term in terms:
        if term.stage <= stage:
            continue
        seen = set()
        for word in (term.name, *term.aliases):
            for match in term_pattern(word).finditer(text):
                if match.start() in seen:
                    continue
                seen.add(match.start())
                covering = [s for s0, s1, s in spans if s0 <= match.start() < s1]
                if any(term.stage <= s for s in covering):
                    continue
                why = (f" (inside an aside for stage {max(covering)})" if covering else "")
                found.append(Violation(
                    name, line_of(match.start()), term.name, match.group(0), term.stage,
                    f"{match.group(0)!r} is {term.name!r}, introduced in stage {term.stage}{why}"))
    return sorted(found, key=lambda v: (v.line, v.term))


# --- the glossary itself -------------------------------------------------------------------


def test_the_glossary_is_well_formed():
    terms = read_glossary()
    assert len(terms) >= 40
    names = [t.name.lower() for t in terms]
    assert len(names) == len(set(names)), "a term is listed twice"
    words = [w.lower() for t in terms for w in (t.name, *t.aliases)]
    assert len(words) == len(set(words)), "a word is the name or alias of two terms"
    for term in terms:
        assert 1 <= term.stage <= len(CHAPTERS), term
        assert term.definition and "\n" not in term.definition, term


def test_the_issue_s_terms_are_in_the_glossary():
    words = {w.lower() for t in read_glossary() for w in (t.name, *t.aliases)}
    for word in ("record batch", "varint", "correlation id", "znode", "ephemeral node", "session",
                 "controller", "controller epoch", "broker epoch", "segment", "offset index",
                 "log end offset", "high watermark", "ISR", "leader epoch", "reactor",
                 "Deferred", "Twisted protocol", "consumer group", "generation", "rebalance",
                 "partitioner", "accumulator", "micro-batch", "streaming checkpoint",
                 "last stable offset", "transaction marker", "producer id", "producer epoch",
                 "fencing"):
        assert word.lower() in words, f"{word} is not in docs/glossary.md"


def test_each_term_is_used_by_the_chapter_that_introduces_it():
    """A glossary stage is where the term is met: its chapter names the term (or an alias)."""
    terms = read_glossary()
    chapters = {chapter_stage(c): c.read_text() for c in CHAPTERS}
    for term in terms:
        text = chapters[term.stage]
        assert any(term_pattern(w).search(text) for w in (term.name, *term.aliases)), (
            f"{term.name!r}: the glossary says stage {term.stage}, whose chapter never names it")


def test_the_glossary_page_is_in_the_site():
    assert re.search(r"^glossary$", (ROOT / "docs" / "index.md").read_text(), re.M)


# --- the chapters -------------------------------------------------------------------------


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.parent.name)
def test_no_chapter_uses_a_term_of_a_later_stage(chapter):
    violations = check_chapter(chapter, read_glossary())
    assert not violations, "\n".join(map(str, violations))


# --- the checker, on planted violations ---------------------------------------------------


def _copy(tmp_path: Path, name: str) -> Path:
    chapter = next(c for c in CHAPTERS if c.parent.name == name)
    copy = tmp_path / name / "README.md"
    copy.parent.mkdir()
    shutil.copy(chapter, copy)
    return copy


def _plant(copy: Path, after_heading: str, text: str) -> int:
    """Insert ``text`` after the first heading starting with ``after_heading``; return its line."""
    lines = copy.read_text().splitlines(keepends=True)
    at = next(n for n, line in enumerate(lines) if line.startswith(after_heading)) + 1
    lines[at:at] = ["\n", text]
    copy.write_text("".join(lines))
    return at + 2


def test_a_planted_reach_ahead_is_reported_with_chapter_line_and_term(tmp_path):
    copy = _copy(tmp_path, "stage2_zookeeper")
    terms = read_glossary()
    assert check_chapter(copy, terms, "copy") == []
    line = _plant(copy, "### 2.3", "The controller also tracks the\nISR of each partition.\n")
    violations = check_chapter(copy, terms, "stage2 copy")
    assert [(v.chapter, v.line, v.term) for v in violations] == [
        ("stage2 copy", line + 1, "ISR")]
    assert "introduced in stage 7" in str(violations[0])
    assert str(violations[0]).startswith(f"stage2 copy:{line + 1}: ")


def test_a_planted_reach_ahead_in_a_listing_is_reported(tmp_path):
    copy = _copy(tmp_path, "stage4_broker")
    line = _plant(copy, "## ", "```python\nprint('join the consumer group')\n```\n")
    violations = check_chapter(copy, read_glossary(), "copy")
    assert [(v.line, v.term) for v in violations] == [(line + 1, "consumer group")]


def test_an_aside_admits_a_later_term_but_only_up_to_its_stage(tmp_path):
    copy = _copy(tmp_path, "stage2_zookeeper")
    terms = read_glossary()
    _plant(copy, "### 2.3", "> Later, in stage 7: the high watermark\n> and the ISR.\n")
    _plant(copy, "### 2.4", "Replicas (later, in stage 7, the ISR (in-sync\nreplicas)) follow.\n")
    assert check_chapter(copy, terms, "copy") == []
    line = _plant(copy, "### 2.5", "> Later, in stage 7: the last stable offset.\n")
    violations = check_chapter(copy, terms, "copy")
    assert [(v.line, v.term) for v in violations] == [(line, "last stable offset")]
    assert "inside an aside for stage 7" in str(violations[0])


def test_an_aside_must_point_to_a_later_stage(tmp_path):
    copy = _copy(tmp_path, "stage3_storage")
    line = _plant(copy, "### 3.2", "(later, in stage 2, the controller)\n")
    violations = check_chapter(copy, read_glossary(), "copy")
    assert [(v.line, v.term) for v in violations] == [(line, "")]
    assert "is not later" in violations[0].message


def test_identifiers_and_lowercase_acronyms_are_not_terms():
    assert not term_pattern("leader epoch").search("patch_leader_epoch(batch, 3)")
    assert not term_pattern("ISR").search("isr=(1, 2, 3)")
    assert term_pattern("ISR").search("shrinks the ISRs")
    assert term_pattern("high watermark").search("the high\n  watermarks")
    assert term_pattern("micro-batch").search("each micro batch")
    assert term_pattern("unclean election").search("an *unclean* election")


def test_a_term_in_a_written_output_is_not_the_chapters_word(tmp_path):
    chapter = tmp_path / "stage1_demo" / "README.md"
    chapter.parent.mkdir()
    block = ("```python\nprint(api_names)\n```\n\n"
             "<!-- output: written by tools/chapter_outputs.py from a real run; do not edit -->\n"
             "```text\nHEARTBEAT 12\n```\n")
    chapter.write_text("# Stage 1\n\n" + block)
    assert check_chapter(chapter, read_glossary(), "demo") == []
    chapter.write_text("# Stage 1\n\nThe heartbeat keeps a member alive.\n\n" + block)
    found = check_chapter(chapter, read_glossary(), "demo")
    assert [(v.term, v.line) for v in found] == [("heartbeat", 3)]
