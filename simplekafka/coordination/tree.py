"""Printing the znode tree, the way a learner would explore it with ``zkCli ls -R`` and ``get``."""

from __future__ import annotations

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

__all__ = ["format_tree"]


def format_tree(zk: KazooClient, path: str = "/", skip: tuple[str, ...] = ("/zookeeper",),
                max_value: int = 400) -> str:
    """The tree under ``path``, one znode a line, indented, with its value and
    ``(ephemeral)`` or ``czxid`` where they teach something."""
    lines: list[str] = []
    _walk(zk, path, 0, skip, max_value, lines)
    return "\n".join(lines)


def _walk(zk: KazooClient, path: str, depth: int, skip: tuple[str, ...], max_value: int,
          lines: list[str]) -> None:
    if path in skip:
        return
    try:
        data, stat = zk.get(path)
        children = sorted(zk.get_children(path), key=_natural)
    except NoNodeError:
        return  # deleted while we looked
    name = path if depth == 0 else path.rsplit("/", 1)[-1]
    text = (data or b"").decode("utf-8", "replace")
    if len(text) > max_value:
        text = text[: max_value - 3] + "..."
    marks = f"  (ephemeral, czxid {stat.czxid})" if stat.ephemeralOwner else ""
    lines.append(f"{'  ' * depth}{name}" + (f" = {text}" if text else "") + marks)
    for child in children:
        _walk(zk, f"{path.rstrip('/')}/{child}", depth + 1, skip, max_value, lines)


def _natural(name: str) -> tuple[int, int | str]:
    """Numbers in numeric order (broker 10 after broker 9), names alphabetically."""
    return (0, int(name)) if name.isdigit() else (1, name)
