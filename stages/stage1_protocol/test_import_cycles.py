"""No import circle inside simplekafka/protocol: each module can be read after what it imports.

Every import counts, at module level or inside a function, under
``TYPE_CHECKING`` or not: a circle that only works because one side imports
late is still a circle to a reader (``schema`` and ``codegen`` were one until
the field model they share moved to ``protocol/fields.py``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import simplekafka.protocol

PACKAGE = "simplekafka.protocol"
ROOT = Path(simplekafka.protocol.__file__).resolve().parent


def _module_names() -> dict[str, Path]:
    names = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names[".".join((PACKAGE, *parts))] = path
    return names


def import_graph(sources: dict[str, str]) -> dict[str, set[str]]:
    """module -> the modules of the same package it imports (``sources``: name -> code)."""
    graph: dict[str, set[str]] = {name: set() for name in sources}
    for name, code in sources.items():
        package = name if name == PACKAGE else name.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(code)):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: from the package this module is in
                    anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                    base = f"{anchor}.{base}" if base else anchor
                for alias in node.names:  # `from pkg import submodule` imports the submodule
                    sub = f"{base}.{alias.name}"
                    targets.append(sub if sub in sources else base)
            for target in targets:
                if target in sources and target != name:
                    graph[name].add(target)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle (its modules, the first repeated at the end), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def _sources() -> dict[str, str]:
    return {name: path.read_text() for name, path in _module_names().items()}


def test_the_protocol_package_has_no_import_circle():
    cycle = find_cycle(import_graph(_sources()))
    assert cycle is None, "import circle: " + " -> ".join(cycle or [])


def test_a_planted_circle_is_found_even_when_imported_late():
    sources = _sources()
    sources[f"{PACKAGE}.primitives"] += (
        "\n\ndef _late():\n    from simplekafka.protocol.schema import Schema\n    return Schema\n"
    )
    cycle = find_cycle(import_graph(sources))
    assert cycle is not None and f"{PACKAGE}.primitives" in cycle


def test_the_graph_sees_every_import_form():
    sources = {
        PACKAGE: "from simplekafka.protocol import a\n",
        f"{PACKAGE}.a": ("from typing import TYPE_CHECKING\n"
                         "if TYPE_CHECKING:\n    from . import b\n"),
        f"{PACKAGE}.b": "import simplekafka.protocol.c\n",
        f"{PACKAGE}.c": "def f():\n    from .a import x\n",
    }
    graph = import_graph(sources)
    assert graph == {PACKAGE: {f"{PACKAGE}.a"}, f"{PACKAGE}.a": {f"{PACKAGE}.b"},
                     f"{PACKAGE}.b": {f"{PACKAGE}.c"}, f"{PACKAGE}.c": {f"{PACKAGE}.a"}}
    assert find_cycle(graph) == [f"{PACKAGE}.a", f"{PACKAGE}.b", f"{PACKAGE}.c", f"{PACKAGE}.a"]
