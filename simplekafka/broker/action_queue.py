"""Parked fetches are woken after the appends of a whole read, not after each (Kafka's ActionQueue).

Kafka's ``ReplicaManager.appendRecords`` does not complete delayed fetches as
it appends: it queues the partitions it touched, and the request handler
completes them once the whole request is handled (``tryCompleteActions``).
We do the same, and over a whole read: a producer that pipelines
(librdkafka at linger.ms=0 under load) delivers tens of one-record Produce
requests in one read. Woken at the first append, a parked follower fetch
answered with that one record; the follower was then out with its next
fetch while the others were appended, so they waited for the fetch after:
one more replication round trip for all but the first, and about twice the
follower fetches, answers and wake-ups the leader handled per read (traced
at three brokers, acks=all, 10,000 records/s: docs/benchmarks-method.md).

The queue is an instance the ReplicaManager owns (as Kafka's is), handed to
its partitions and to the listeners' connections. Whoever appends in bulk (the
connection handling a read of several requests, ``append_records`` for a
produce of several partitions) opens ``actions.wakeups_after()``; a partition
that fires inside it is noted once, and its listeners run when the outermost
block closes, in the order the partitions first fired: every parked fetch
then reads the whole read's records. Nothing else waits: the block closes
before the read's own answers are sent, in the same reactor turn, with no
timer in between.
"""

from __future__ import annotations

import logging
from typing import Protocol

log = logging.getLogger(__name__)


class Wakeable(Protocol):
    """What the queue wakes: a partition, whose parked fetches re-examine it."""

    def wake_listeners(self) -> None: ...


class ActionQueue:
    """Partitions whose parked fetches wake when the outermost open block closes.

    The queue is its own context manager (``with actions.wakeups_after():``; no
    object made per block: a read of one request opens one too).
    """

    __slots__ = ("_depth", "_pending")

    def __init__(self) -> None:
        self._depth = 0
        self._pending: dict[int, Wakeable] = {}  # id(partition) -> partition, first-fired order

    def wakeups_after(self) -> ActionQueue:
        """A block whose partitions' listeners run once, when the outermost block closes."""
        return self

    def __enter__(self) -> None:
        self._depth += 1

    def __exit__(self, *exc_info: object) -> None:
        self._depth -= 1
        if self._depth or not self._pending:
            return  # an outer block wakes, or nothing fired
        pending, self._pending = self._pending, {}
        for partition in pending.values():
            try:
                partition.wake_listeners()
            except Exception:  # as Kafka's tryCompleteActions: the others still wake
                log.exception("waking the listeners of %s failed", partition)

    def defer_wakeup(self, partition: Wakeable) -> bool:
        """Note ``partition`` for the open block's end; False (the caller wakes now) if none."""
        if not self._depth:
            return False
        self._pending.setdefault(id(partition), partition)
        return True
