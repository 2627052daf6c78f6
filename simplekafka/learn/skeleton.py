"""Turn a reference solution into a learner's starter: same module, exercise bodies removed.

Signatures, docstrings, constants, imports and the given helpers stay as they
are; the body of each exercise function (or method) becomes ``raise
NotImplementedError(...)`` naming its exercise. Made from the solution's own
source, so a starter can never drift from what the checks expect.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping


def _functions(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    """Top-level functions and methods of top-level classes, by (qualified) name."""
    found: dict[str, ast.FunctionDef] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            found[node.name] = node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    found[f"{node.name}.{item.name}"] = item
    return found


def make_starter(source: str, to_write: Mapping[str, str], banner: str) -> str:
    """``source`` with the body of each function named in ``to_write`` replaced.

    ``to_write`` maps a function name (``Class.method`` for a method) to the
    message its ``NotImplementedError`` carries.
    """
    lines = source.splitlines(keepends=True)
    functions = _functions(ast.parse(source))
    missing = sorted(set(to_write) - set(functions))
    if missing:
        raise ValueError(f"the solution has no function(s) {missing}")
    cuts = []
    for name, message in to_write.items():
        node = functions[name]
        body = node.body
        if (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            body = body[1:]
        if not body:
            continue
        first, last = body[0].lineno - 1, body[-1].end_lineno or body[-1].lineno
        indent = " " * body[0].col_offset
        cuts.append((first, last, f"{indent}raise NotImplementedError({message!r})\n"))
    for first, last, replacement in sorted(cuts, reverse=True):
        lines[first:last] = [replacement]
    return banner + "".join(lines)
