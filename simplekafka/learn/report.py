"""How a failed exercise is explained: expected against got, down to the byte or the step."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from simplekafka.protocol.dissect import Dissection, Node, render_tree

CONTEXT_ROWS = 2


class ExerciseFailed(AssertionError):
    """One exercise check went wrong; ``lines`` say what was expected and what came."""

    def __init__(self, summary: str, lines: Sequence[str] = ()):
        super().__init__(summary)
        self.summary = summary
        self.lines = list(lines)


class Steps:
    """The steps a behaviour check has taken, printed when one of them goes wrong."""

    def __init__(self) -> None:
        self.done: list[str] = []

    def step(self, text: str) -> None:
        self.done.append(text)

    def fail(self, summary: str, expected: object, got: object) -> ExerciseFailed:
        lines = ["steps:"] + [f"  {n}. {text}" for n, text in enumerate(self.done, 1)]
        lines += [f"expected: {expected!r}", f"got:      {got!r}"]
        return ExerciseFailed(summary, lines)

    def expect(self, summary: str, expected: object, got: object) -> None:
        if expected != got:
            raise self.fail(summary, expected, got)


def first_difference(expected: bytes, got: bytes) -> int | None:
    """Index of the first byte that differs (or where one ends early); None if equal."""
    for index, (a, b) in enumerate(zip(expected, got)):
        if a != b:
            return index
    if len(expected) == len(got):
        return None
    return min(len(expected), len(got))


def field_at(dissection: Dissection, offset: int) -> str | None:
    """The dotted path of the innermost field holding byte ``offset`` (in the data's own space)."""

    def walk(node: Node, path: list[str]) -> list[str] | None:
        for child in node.children:
            if child.space == "" and child.offset <= offset < child.offset + child.length:
                return walk(child, [*path, child.name]) or [*path, child.name]
        return None

    found = walk(dissection.root, [])
    return ".".join(found) if found else None


def hexdump_rows(data: bytes, mark: int, label: str) -> list[str]:
    """Rows of 16 bytes around ``mark``, with a caret under byte ``mark``."""
    mark_row = mark // 16
    first = max(0, mark_row - CONTEXT_ROWS)
    last = max(first, min(max(len(data) - 1, 0) // 16, mark_row + CONTEXT_ROWS))
    lines = [f"{label} ({len(data)} bytes):"]
    for row in range(first, max(last, mark_row) + 1):
        chunk = data[row * 16 : row * 16 + 16]
        lines.append(f"  {row * 16:04x}  {chunk.hex(' ')}")
        if row == mark_row:
            marker = "^^" if mark < len(data) else "^ (ends here)"
            lines.append("        " + " " * ((mark - row * 16) * 3) + marker)
    return lines


def byte_diff(summary: str, expected: bytes, got: bytes,
              dissect: Callable[[bytes], Dissection] | None = None) -> ExerciseFailed | None:
    """None when equal; else a failure with both hexdumps, carets and the field named."""
    expected, got = bytes(expected), bytes(got)
    at = first_difference(expected, got)
    if at is None:
        return None
    dissection = dissect(expected) if dissect is not None else None
    field = field_at(dissection, at) if dissection is not None else None
    where = f"first difference at byte {at}" + (f", in field {field}" if field else "")
    lines = [*hexdump_rows(expected, at, "expected"), *hexdump_rows(got, at, "got")]
    if dissection is not None:
        lines.append("the expected bytes, field by field (simplekafka.protocol.dissect):")
        rows = render_tree(dissection)
        leaf = _leaf_node(dissection, at)
        lines.append("  " + rows[0])
        for row, node in zip(rows[1:], _in_tree_order(dissection.root)):
            lines.append("  " + row + ("   <-- first difference" if node is leaf else ""))
    return ExerciseFailed(f"{summary}: {where}", lines)


def _in_tree_order(root: Node) -> list[Node]:
    """The nodes in the order render_tree prints them (depth first, root left out)."""
    order: list[Node] = []

    def walk(node: Node) -> None:
        order.append(node)
        for child in node.children:
            walk(child)

    for child in root.children:
        walk(child)
    return order


def _leaf_node(dissection: Dissection, at: int) -> Node | None:
    """The innermost node holding byte ``at`` in the data's own space."""
    node, found = dissection.root, None
    while True:
        child = next((c for c in node.children if c.space == ""
                      and c.offset <= at < c.offset + c.length), None)
        if child is None:
            return found
        node = found = child
