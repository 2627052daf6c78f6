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

Whoever appends in bulk (the connection handling a read of several
requests, ``append_records`` for a produce of several partitions) opens
``wakeups_after()``; a partition that fires inside it is noted once, and its
listeners run when the outermost block closes, in the order the partitions
first fired: every parked fetch then reads the whole read's records. Nothing
else waits: the block closes before the read's own answers are sent, in the
same reactor turn, with no timer in between.
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger(__name__)

# id(partition) -> partition, while a block is open (dicts keep first-fired order).
_pending: dict[int, Any] | None = None


class _WakeupsAfter:
    """The context manager ``wakeups_after()`` returns (a class: cheaper than a generator)."""

    __slots__ = ("_outer",)

    def __enter__(self) -> None:
        global _pending
        self._outer = _pending is not None
        if not self._outer:
            _pending = {}

    def __exit__(self, *exc_info: object) -> None:
        global _pending
        if self._outer:
            return  # the outermost block wakes
        pending, _pending = _pending, None
        if pending:
            for partition in pending.values():
                try:
                    partition.wake_listeners()
                except Exception:  # as Kafka's tryCompleteActions: the others still wake
                    log.exception("waking the listeners of %s failed", partition)


def wakeups_after() -> _WakeupsAfter:
    """A block whose partitions' listeners run once, when the outermost block closes."""
    return _WakeupsAfter()


def defer_wakeup(partition: Any) -> bool:
    """Note ``partition`` for the open block's end; False (the caller wakes now) if none."""
    pending = _pending
    if pending is None:
        return False
    pending.setdefault(id(partition), partition)
    return True
