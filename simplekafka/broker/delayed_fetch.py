"""A fetch waiting for records (Kafka's ``DelayedFetch``).

When a fetch finds less than ``min_bytes`` to return, it waits: it listens on
its partitions and is re-read when any of them gets an append, or answered as
it is when ``max_wait_ms`` runs out. That is what lets a consumer see a record
within milliseconds of its produce without busy polling. The wake-up is a plain
call from the append (or the high-watermark move) to the parked fetch, so the
answer is written in the same reactor turn, with no timer in between.

A follower's parked fetch is also answered when the high watermark passes the
one its last answer carried, within ``HW_NOTICE_SECONDS`` (Kafka's followers
wait for their next fetch, up to replica.fetch.wait.max.ms): its own readers
(KIP-392) and checkpoints need the HW. Not at once: under load the next
append wakes the fetch within that time and its answer carries the HW with
the records, where an answer for the HW alone cost the leader a fetch round
trip more per advance, a quarter of its fetches at three brokers.

A follower's session fetch is woken by its session when a settled partition
changes (``fetch_session.py``), so it need not listen on each of thousands of
partitions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from twisted.internet import defer

from simplekafka.protocol.api import READ_COMMITTED

if TYPE_CHECKING:
    from simplekafka.broker.collaborators import DelayedCall
    from simplekafka.broker.fetch_messages import FetchMessages, FetchParams, FetchResult
    from simplekafka.broker.partition import Partition

# A parked follower fetch told an old high watermark is answered for the new one after
# this long at most (sooner if records come); see the module docstring.
HW_NOTICE_SECONDS = 0.01


class DelayedFetch:
    """A parked fetch: re-read on appends to its partitions, answered at max_wait_ms."""

    def __init__(self, fetches: FetchMessages, params: FetchParams,
                 respond: Callable[[FetchResult], object]):
        self.fetches = fetches
        self.params = params
        self.respond = respond  # the answer of the result (Kafka's responseCallback)
        self.result: defer.Deferred = defer.Deferred()
        self.timer: DelayedCall | None = None
        # The partitions it listens on, and where it reads each.
        self.partitions: list[Partition] = []
        self.offsets: dict[tuple[str, int], int] = {}
        get_partition = fetches.replicas.get_partition
        for name, partitions in params.partitions.topics():
            for wanted in partitions:
                self.offsets[(name, wanted.partition)] = wanted.fetch_offset
                partition = get_partition(name, wanted.partition)
                if partition is not None:
                    self.partitions.append(partition)
        self.is_follower = params.replica_id >= 0
        self.read_committed = params.isolation_level == READ_COMMITTED
        self.on_session = False  # the session wakes it (a follower's session fetch)

    def start(self) -> defer.Deferred:
        """Listen and set the max_wait timer; the Deferred fires with the answer ``respond``
        makes of the FetchResult."""
        for partition in self.partitions:
            partition.add_append_listener(self.on_append)
        self.on_session = self.params.partitions.wait_on_session(self.on_append)
        self.fetches.waiting += 1
        self.timer = self.fetches.reactor.callLater(
            self.params.max_wait_ms / 1000.0, self.complete)
        return self.result

    def on_append(self, partition: Partition) -> None:
        if self.result.called:
            return
        params = self.params
        throttle = self.fetches.leader_throttle if self.is_follower else None
        if throttle is not None and params.replica_id not in partition.isr and \
                throttle.holds_back(partition.topic, partition.index, False):
            return  # a throttled moving replica: nothing would be sent now, keep waiting
        if self.is_follower and partition.follower_behind_hw(params.replica_id):
            # The HW moved past what this follower was told: it learns it from the answer
            # the next append brings, or within HW_NOTICE_SECONDS, not at max_wait.
            self._answer_within(HW_NOTICE_SECONDS)
        if params.min_bytes <= 1:
            # One visible byte will do: answer as soon as this partition has some past the
            # fetch offset, without re-reading every partition of the fetch on each append.
            visible_end = partition.log_end_offset if self.is_follower \
                else partition.last_stable_offset if self.read_committed \
                else partition.high_watermark
            key = (partition.topic, partition.index)
            offset = self.offsets.get(key)
            if offset is None:
                offset = params.partitions.fetch_offset(key)  # a settled session partition
            if offset is not None and visible_end > offset:
                self.complete()
            return
        result = self.fetches.read_from_log(params)
        _responses, total_bytes, has_error = result
        if total_bytes >= params.min_bytes or has_error:
            self.complete(result)

    def _answer_within(self, seconds: float) -> None:
        """Bring the max_wait timer forward to ``seconds`` from now, if it is later."""
        timer = self.timer
        if timer is not None and timer.active() and (
                timer.getTime() - self.fetches.reactor.seconds() > seconds):
            timer.reset(seconds)

    def complete(self, result: FetchResult | None = None) -> None:
        if self.result.called:
            return
        for partition in self.partitions:
            partition.remove_append_listener(self.on_append)
        if self.on_session:
            self.params.partitions.stop_waiting(self.on_append)
        if self.timer is not None and self.timer.active():
            self.timer.cancel()
        self.fetches.waiting -= 1
        if result is None:
            result = self.fetches.read_from_log(self.params)
        try:
            answer = self.respond(result)
        except Exception:  # the waiter gets the failure; the append that woke us goes on
            self.result.errback()
            return
        self.result.callback(answer)
