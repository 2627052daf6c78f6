"""Answers released together leave together: one write per connection, not one per answer.

A high-watermark advance answers every acks=all produce it commits at once, and
those are mostly pipelined requests of one producer: with each answer written
on its own, a single follower fetch made the leader send (and wake the
producer) once per request, 20 to 80 times. Whoever completes waiters in bulk
opens ``answers.together()`` (an ``AnswersTogether`` the ReplicaManager owns,
handed to its partitions and to the listeners' connections); while it is
open, the connections (``server.KafkaConnection``) hand their answers to
``hold`` instead of the socket, and when the outermost one closes, each
connection writes what it gathered in one send, in the order the answers were
released. Nothing else is held: a fetch woken by the same advance is answered
after the block.
"""

from __future__ import annotations

from collections.abc import Callable

from simplekafka.broker.socket_writer import Piece

Writer = Callable[[list[Piece]], None]


class AnswersTogether:
    """Answers released inside an open block, per connection, sent when it closes."""

    __slots__ = ("_held", "depth")

    def __init__(self) -> None:
        self.depth = 0  # open blocks; a writer reads it first (no call while none is open)
        self._held: dict[int, tuple[Writer, list[Piece]]] = {}

    def together(self) -> AnswersTogether:
        """Gather the answers written inside the block; send them per connection at its end."""
        return self

    def __enter__(self) -> None:
        self.depth += 1

    def __exit__(self, *exc_info: object) -> None:
        self.depth -= 1
        if self.depth or not self._held:
            return  # an outer block sends, or nothing was held
        held, self._held = self._held, {}
        for write, frames in held.values():
            write(frames)

    def hold(self, owner: object, write: Writer, frames: list[Piece]) -> bool:
        """Keep ``frames`` for ``write`` (the ``owner`` connection's) if a block is open."""
        if not self.depth:
            return False
        entry = self._held.get(id(owner))
        if entry is None:
            self._held[id(owner)] = (write, list(frames))
        else:
            entry[1].extend(frames)
        return True
