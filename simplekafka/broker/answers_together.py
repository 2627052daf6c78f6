"""Answers released together leave together: one write per connection, not one per answer.

A high-watermark advance answers every acks=all produce it commits at once, and
those are mostly pipelined requests of one producer: with each answer written
on its own, a single follower fetch made the leader send (and wake the
producer) once per request, 20 to 80 times. Whoever completes waiters in bulk
opens ``answers_together()``; while it is open, the broker's connections
(``server.KafkaConnection``) hand their answers to ``hold`` instead of the
socket, and when the outermost one closes, each connection writes what it
gathered in one send, in the order the answers were released. Nothing else is
held: a fetch woken by the same advance is answered after the block.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

Writer = Callable[[list[bytes]], None]

_held: dict[int, tuple[Writer, list[bytes]]] | None = None


@contextmanager
def answers_together() -> Iterator[None]:
    """Gather the answers written inside the block; send them per connection at its end."""
    global _held
    if _held is not None:  # an outer block sends
        yield
        return
    held: dict[int, tuple[Writer, list[bytes]]] = {}
    _held = held
    try:
        yield
    finally:
        _held = None
        for write, frames in held.values():
            write(frames)


def hold(owner: object, write: Writer, frames: list[bytes]) -> bool:
    """Keep ``frames`` for ``write`` (the ``owner`` connection's) if a block is open."""
    if _held is None:
        return False
    entry = _held.get(id(owner))
    if entry is None:
        _held[id(owner)] = (write, list(frames))
    else:
        entry[1].extend(frames)
    return True
