"""Tables on the terminal: left-aligned columns padded with spaces, never tabs.

As ``kafka-consumer-groups.sh`` prints them: a header of upper-case names and
one line per row, each column as wide as its widest cell, two spaces between
columns, no trailing spaces. ``None`` prints as ``-`` (Kafka's "nothing here").
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from typing import TextIO

GAP = "  "


def cell(value: object) -> str:
    """What a table shows for one value: ``-`` for None, else ``str(value)``."""
    return "-" if value is None else str(value)


def format_table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> list[str]:
    """The lines of a table: the header, then one line per row, columns aligned."""
    texts = [list(header)] + [[cell(v) for v in row] for row in rows]
    for row in texts:
        if len(row) != len(header):
            raise ValueError(f"a row of {len(row)} cells in a table of {len(header)} columns")
    widths = [max(len(row[i]) for row in texts) for i in range(len(header))]
    return [GAP.join(text.ljust(width) for text, width in zip(row, widths)).rstrip()
            for row in texts]


def print_table(header: Sequence[str], rows: Iterable[Sequence[object]],
                file: TextIO | None = None) -> None:
    """Print :func:`format_table`'s lines (to stdout unless ``file`` says otherwise)."""
    out = sys.stdout if file is None else file
    for line in format_table(header, rows):
        print(line, file=out)
