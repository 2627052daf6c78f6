"""Write each listing's real output under it in the chapters, or check that it is current.

    python tools/chapter_outputs.py              # run every chapter's listings, write the outputs
    python tools/chapter_outputs.py --stage 3    # one chapter
    python tools/chapter_outputs.py --check      # run them and report where a README differs

A chapter (``stages/stageN_*/README.md``) is read on GitHub and by ``simplekafka
learn start``, where no listing runs; so what each ```` ```python ```` listing
prints stands under it in the README itself, in a block this command writes::

    <!-- output: written by tools/chapter_outputs.py from a real run; do not edit -->
    ```text
    ...
    ```

The listings run exactly as the site runs them (``docs/_ext/executed_pages.py``:
one script per chapter, in a fresh temporary directory); the site drops these
blocks and puts its own run's output in their place, and ``tests/test_docs.py``
compares that run with the README. Ports, times, ids and other values that
change from run to run are compared through :data:`VOLATILE`; a listing whose
output varies in more ways (which broker wins an election, say) is preceded by
one or more lines ``<!-- output varies: REGEX -->``, and what those match in its
output is ignored too (GitHub does not show the comment).
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "docs" / "_ext"))

from executed_pages import LISTING, OUTPUT_BLOCK, run_listings  # noqa: E402
from executed_pages import OUTPUT_MARKER as MARKER  # noqa: E402

# A listing, then (optionally) the output block this tool wrote under it.
LISTING_AND_OUTPUT = re.compile(
    r"(?P<listing>^```python[ \t]*\n.*?^```[ \t]*\n)"
    r"(?P<output>\n" + re.escape(MARKER) + r"\n(?P<fence>`{3,})text\n.*?^(?P=fence)[ \t]*\n)?",
    re.S | re.M)
DECLARED = re.compile(r"<!-- output varies: (.+?) -->[ \t]*\n(?:[ \t]*\n)*")

# What changes from one run to the next, each matched span replaced by its name.
VOLATILE: list[tuple[str, str]] = [
    ("<uuid>", r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"),
    ("<timestamp>", r"\b\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?"),
    ("<epoch-ms>", r"\b1[6-9]\d{11}\b"),
    ("<address>", r"\b(?:127\.0\.0\.1|localhost|0\.0\.0\.0):\d+\b"),
    ("<port>", r"\bport[ =]\d+\b"),
    ("<pid>", r"\bpid \d+\b"),
    ("<path>", r"(?:/tmp|/var/tmp|/private/var)/[^\s'\"),\]]+"),
    ("<duration>", r"\b\d+(?:\.\d+)?\s?(?:ns|µs|us|ms|s|seconds?|minutes?)\b"),
    ("<rate>", r"\b\d+(?:\.\d+)?\s?(?:[kMG]i?B|bytes|records|msgs?)/s\b"),
    ("<seed>", r"(?<=seed )\d+|(?<=SIMPLEKAFKA_SEED=)\d+"),
    ("<hex-id>", r"\b0x[0-9a-f]{8,}\b"),
    # Kafka's cluster id: 22 characters of URL-safe base64 (letters of both cases)
    ("<cluster-id>", r"(?<![\w-])(?=[\w-]*[A-Z])(?=[\w-]*[a-z])[A-Za-z0-9_-]{22}(?![\w-])"),
    ("<member-id>", r"\b[\w.-]+-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f-]{9,}\b"),
]


def chapters(stage: int | None = None) -> list[Path]:
    found = sorted((ROOT / "stages").glob("stage*_*/README.md"))
    return [c for c in found if stage is None or c.parent.name.startswith(f"stage{stage}_")]


def without_outputs(text: str) -> str:
    """The chapter as written by hand: every output block this tool wrote taken out."""
    return OUTPUT_BLOCK.sub("", text)


def committed_outputs(text: str) -> list[str | None]:
    """The output written under each listing, in order; None where a listing has none."""
    return [m.group("output") and OUTPUT_BLOCK.match(m.group("output")).group("text")
            for m in LISTING_AND_OUTPUT.finditer(text)]


def output_block(output: str) -> str:
    body = output.rstrip() + "\n"
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"\n{MARKER}\n{fence}text\n{body}{fence}\n"


def with_outputs(text: str, outputs: list[str]) -> str:
    """The chapter with each listing's output block replaced by (or given) ``outputs``."""
    numbered = iter(outputs)

    def replace(match: re.Match) -> str:
        output = next(numbered)
        return match.group("listing") + (output_block(output) if output.strip() else "")

    return LISTING_AND_OUTPUT.sub(replace, text)


def normalised(output: str, declared: Iterable[str] = ()) -> str:
    """``output`` with what varies between runs named instead, and trailing space dropped."""
    for name, pattern in VOLATILE:
        output = re.sub(pattern, name, output)
    for pattern in declared:
        output = re.sub(pattern, "<declared>", output)
    return "\n".join(line.rstrip() for line in output.strip().splitlines())


def declared_variations(text: str) -> list[list[str]]:
    """Per listing, the patterns of the ``<!-- output varies -->`` lines right above it."""
    found = []
    for match in LISTING_AND_OUTPUT.finditer(text):
        before, patterns = text[:match.start()], []
        while (last := re.search(DECLARED.pattern + r"\Z", before)) is not None:
            patterns.insert(0, last.group(1))
            before = before[:last.start()]
        found.append(patterns)
    return found


def differences(text: str, fresh: list[str], where: str = "chapter") -> list[str]:
    """What differs between the outputs standing in ``text`` and a fresh run's ``fresh``."""
    declared = declared_variations(text)
    standing = committed_outputs(text)
    if len(standing) != len(fresh):
        return [f"{where}: {len(standing)} listings in the text, {len(fresh)} in the run"]
    problems = []
    for number, (old, new, varies) in enumerate(zip(standing, fresh, declared), 1):
        if not new.strip() and old is None:
            continue
        if old is None:
            problems.append(f"{where}: listing {number} prints output but has none under it")
            continue
        a, b = normalised(old, varies), normalised(new, varies)
        if a != b:
            diff = difflib.unified_diff(a.splitlines(), b.splitlines(), "in the README",
                                        "this run", lineterm="", n=1)
            problems.append(f"{where}: listing {number}'s output differs:\n" + "\n".join(diff))
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stage", type=int, help="only this stage's chapter")
    parser.add_argument("--check", action="store_true",
                        help="report outputs that differ from a fresh run; write nothing")
    args = parser.parse_args(argv)
    failed = False
    for chapter in chapters(args.stage):
        text = chapter.read_text()
        listings = LISTING.findall(without_outputs(text))
        outputs, status = run_listings(listings, ROOT)
        name = chapter.relative_to(ROOT)
        if status != 0:
            print(f"{name}: the listings failed (exit {status}); nothing written", file=sys.stderr)
            print("".join(outputs)[-3000:], file=sys.stderr)
            failed = True
            continue
        if args.check:
            problems = differences(text, outputs, str(name))
            print("\n".join(problems) if problems else f"{name}: current")
            failed |= bool(problems)
        else:
            chapter.write_text(with_outputs(text, outputs))
            print(f"{name}: {sum(1 for o in outputs if o.strip())} outputs written")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
