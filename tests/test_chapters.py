"""Every chapter has the same spine, a short core path, and the outputs of its listings under them.

The spine (``## `` headings, in this order, each starting with these words):
Why, The picture, Build it, Run it and see, Break it, Exercise, Going further.
The core path is the chapter up to "Going further", without the output blocks
``tools/chapter_outputs.py`` writes (what the listings print is the machine's
text, not the chapter's); it is at most :data:`CORE_PATH_LIMIT` lines, and what
moved out of it is reachable from "Going further". Whether the written outputs
are what the listings print today is checked in ``tests/test_docs.py``, against
the docs build's own run.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = sorted((ROOT / "stages").glob("stage*_*/README.md"))
SPINE = ["Why", "The picture", "Build it", "Run it and see", "Break it", "Exercise",
         "Going further"]
CORE_PATH_LIMIT = 400
LINK = re.compile(r"\[[^\]]+\]\(([^)\s#]+)(?:#[^)]*)?\)")


def _tool():
    spec = importlib.util.spec_from_file_location("chapter_outputs",
                                                  ROOT / "tools" / "chapter_outputs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


chapter_outputs = _tool()


def headings(text: str) -> list[str]:
    """The chapter's level-2 headings, outside fenced blocks."""
    found, fence = [], None
    for line in text.splitlines():
        opening = re.match(r"^(`{3,}|~{3,})", line)
        if opening and fence is None:
            fence = opening.group(1)
        elif fence is not None and line.startswith(fence) and not line[len(fence):].strip():
            fence = None
        elif fence is None and line.startswith("## "):
            found.append(line[3:].strip())
    return found


def spine_problems(text: str) -> list[str]:
    found = headings(text)
    problems = []
    if len(found) != len(SPINE):
        problems.append(f"{len(found)} sections {found}, the spine has {len(SPINE)}: {SPINE}")
    for want, got in zip(SPINE, found):
        if not re.match(re.escape(want) + r"\b", got):
            problems.append(f"section {got!r} where the spine has {want!r}")
            break
    return problems


def core_path(text: str) -> list[str]:
    """The chapter's lines up to "## Going further", its written outputs (and their
    declarations) left out."""
    hand_written = chapter_outputs.without_outputs(text)
    # the "output varies" declarations are for the outputs tool; GitHub does not show them
    hand_written = chapter_outputs.DECLARED.sub("", hand_written)
    lines = hand_written.splitlines()
    end = next((n for n, line in enumerate(lines) if line.startswith("## Going further")),
               len(lines))
    return lines[:end]


def going_further(text: str) -> str:
    """The "Going further" section's text ('' if there is none)."""
    found = re.search(r"^## Going further.*", text, flags=re.M | re.S)
    return found.group(0) if found else ""


def going_further_links(chapter: Path, text: str) -> list[str]:
    """Relative links of the "Going further" section that do not resolve to a file."""
    section = going_further(text)
    missing = []
    for target in LINK.findall(section):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):
            continue  # a URL
        if not (chapter.parent / target).exists():
            missing.append(target)
    return missing


def test_there_are_nine_chapters():
    assert len(CHAPTERS) == 9


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.parent.name)
def test_every_chapter_has_the_spine(chapter):
    assert spine_problems(chapter.read_text()) == []


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.parent.name)
def test_every_chapters_core_path_is_short(chapter):
    lines = core_path(chapter.read_text())
    assert len(lines) <= CORE_PATH_LIMIT, (
        f"{chapter.parent.name}'s core path is {len(lines)} lines; move what is past the core "
        f"idea to a page under docs/further/ and link it from 'Going further'")


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.parent.name)
def test_going_further_links_reach_pages_that_exist(chapter):
    text = chapter.read_text()
    assert going_further_links(chapter, text) == []
    assert "docs/" in going_further(text), "Going further links the pages material moved to"


def test_every_further_page_is_linked_from_a_chapter():
    linked = set()
    for chapter in CHAPTERS:
        for target in LINK.findall(chapter.read_text()):
            linked.add((chapter.parent / target).resolve())
    pages = [p for p in (ROOT / "docs" / "further").glob("*.md") if p.name != "index.md"]
    assert pages, "docs/further holds the moved material"
    assert [p.name for p in pages if p.resolve() not in linked] == []


SPINE_TEXT = "\n".join(f"## {h}\n\ntext\n" for h in SPINE)


def test_the_spine_check_passes_a_chapter_with_the_spine():
    assert spine_problems("# Stage 0\n\n" + SPINE_TEXT) == []
    with_colon = SPINE_TEXT.replace("## Why", "## Why: frames")
    assert spine_problems(with_colon) == []


def test_the_spine_check_reports_a_missing_an_extra_and_a_swapped_section():
    assert spine_problems(SPINE_TEXT.replace("## Break it\n", "")) != []
    assert spine_problems(SPINE_TEXT + "## The tests\n") != []
    swapped = SPINE_TEXT.replace("## Build it", "## X").replace("## The picture", "## Build it")
    assert spine_problems(swapped.replace("## X", "## The picture")) != []
    assert spine_problems(SPINE_TEXT.replace("## Why", "## Whyever")) != []


def test_a_heading_inside_a_listing_is_not_a_section():
    fenced = SPINE_TEXT.replace("text\n", "```python\n## not a heading\n```\n", 1)
    assert spine_problems(fenced) == []


def test_the_core_path_ends_at_going_further_and_leaves_written_outputs_out():
    listing = "```python\nprint(1)\n```\n"
    text = chapter_outputs.with_outputs(
        "# S\n" + listing + "## Going further\n" + "x\n" * 500, ["1\n" * 50])
    assert len(core_path(text)) == 4
    planted = "# S\n" + "line\n" * CORE_PATH_LIMIT + "## Going further\n"
    assert len(core_path(planted)) > CORE_PATH_LIMIT


def test_a_going_further_link_to_a_missing_page_is_reported(tmp_path):
    chapter = tmp_path / "stages" / "stage0_x" / "README.md"
    chapter.parent.mkdir(parents=True)
    (tmp_path / "docs" / "further").mkdir(parents=True)
    (tmp_path / "docs" / "further" / "there.md").write_text("# There\n")
    text = ("## Going further\n\n- [there](../../docs/further/there.md)\n"
            "- [gone](../../docs/further/gone.md)\n- [kafka](https://kafka.apache.org/)\n")
    assert going_further_links(chapter, text) == ["../../docs/further/gone.md"]


# The outputs tool, on text (the run against the real chapters is in test_docs).

CHAPTER = "# S\n\n```python\nprint('a')\n```\n\nprose\n\n```python\nx = 1\n```\n"


def test_outputs_are_written_under_their_listings_and_rewritten_in_place():
    once = chapter_outputs.with_outputs(CHAPTER, ["a\n", ""])
    assert once.count(chapter_outputs.MARKER) == 1
    assert once.index("print('a')") < once.index("\na\n") < once.index("prose")
    again = chapter_outputs.with_outputs(once, ["b\n", ""])
    assert again.count(chapter_outputs.MARKER) == 1 and "\nb\n" in again and "\na\n" not in again
    assert chapter_outputs.without_outputs(again) == CHAPTER
    assert chapter_outputs.committed_outputs(again) == ["b\n", None]


def test_an_output_holding_backticks_gets_a_longer_fence():
    text = chapter_outputs.with_outputs(CHAPTER, ["```\n", ""])
    assert "````text" in text
    assert chapter_outputs.committed_outputs(text) == ["```\n", None]


def test_a_current_output_passes_and_a_changed_one_is_reported():
    text = chapter_outputs.with_outputs(CHAPTER, ["a\n", ""])
    assert chapter_outputs.differences(text, ["a\n", ""]) == []
    problems = chapter_outputs.differences(text, ["A\n", ""])
    assert len(problems) == 1 and "listing 1" in problems[0] and "-a" in problems[0]


def test_a_listing_that_prints_without_an_output_block_is_reported():
    assert "has none under it" in chapter_outputs.differences(CHAPTER, ["a\n", ""])[0]
    assert "listings" in chapter_outputs.differences(CHAPTER, ["a\n"])[0]


def test_ports_times_and_ids_are_ignored_but_values_are_not():
    member = "member rdkafka-{}-aaaa-bbbb-cccc-0123456789ab\n"
    text = chapter_outputs.with_outputs(CHAPTER, [
        "bootstrap 127.0.0.1:40123 took 12.5 ms, " + member.format("1b2c3d4e"), ""])
    same = "bootstrap 127.0.0.1:51000 took 3 ms, " + member.format("99999999")
    assert chapter_outputs.differences(text, [same, ""]) == []
    other_value = same.replace("bootstrap", "bootstraps")
    assert chapter_outputs.differences(text, [other_value, ""]) != []


def test_a_listing_may_declare_what_varies_in_its_output():
    text = chapter_outputs.with_outputs(CHAPTER, ["leader: broker 2\n", ""])
    assert chapter_outputs.differences(text, ["leader: broker 0\n", ""]) != []
    declared = text.replace("```python\nprint('a')",
                            "<!-- output varies: broker \\d -->\n\n```python\nprint('a')")
    assert chapter_outputs.declared_variations(declared) == [["broker \\d"], []]
    assert chapter_outputs.differences(declared, ["leader: broker 0\n", ""]) == []
    assert chapter_outputs.differences(declared, ["leader: node 0\n", ""]) != []
    elsewhere = "<!-- output varies: broker \\d -->\n\nprose\n\n" + text
    assert chapter_outputs.differences(elsewhere, ["leader: broker 0\n", ""]) != [], (
        "a declaration applies to the listing right under it only")


def test_a_kafka_cluster_id_is_ignored():
    text = chapter_outputs.with_outputs(CHAPTER, ['id = {"id":"uRLiTMVXRVitDx39mMCDxg"}\n', ""])
    assert chapter_outputs.differences(text, ['id = {"id":"obJnhTMCRBGxvO4EqQHiyA"}\n', ""]) == []
    no_digit = 'id = {"id":"UGKGIRLyQWOYiIkur-YBeA"}\n'
    assert chapter_outputs.differences(text, [no_digit, ""]) == []
