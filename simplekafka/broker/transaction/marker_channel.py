"""Writing a transaction's COMMIT or ABORT markers to its partitions' leaders, until written
(Kafka's ``TransactionMarkerChannelManager``).

The coordinator has logged its decision (PrepareCommit or PrepareAbort); now
every partition of the transaction must get a control batch. The partitions
are grouped by their current leader (from the metadata cache) into one
WriteTxnMarkers request per broker, sent over the same kind of channel the
controller uses (in order per broker, retried while the broker is
registered). A partition whose leader moved, or whose request failed, is
tried again after a short delay with a fresh leader; a partition whose topic
was deleted needs no marker. The Deferred fires once every partition has its
marker, and is abandoned (never fires) if the coordinator stops owning the
transactional id meanwhile: the next coordinator resends from its log.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Protocol

from twisted.internet import defer
from twisted.python.failure import Failure

from simplekafka.broker.collaborators import Reactor
from simplekafka.broker.metadata_cache import MetadataCache
from simplekafka.broker.transaction.state import TopicPartition
from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from simplekafka.protocol.fields import Struct

log = logging.getLogger(__name__)

RETRY_DELAY = 0.2
WRITE_TXN_MARKERS_VERSION = 1


class RequestChannel(Protocol):
    """Sends one request to a broker; fires with the decoded response (``ControllerChannel``)."""

    def send(self, broker_id: int, api_key: ApiKey, version: int, body: dict
             ) -> defer.Deferred: ...


class TransactionMarkerChannel:
    """Sends WriteTxnMarkers for the coordinator and retries until each partition has one."""

    def __init__(self, reactor: Reactor, cache: MetadataCache,
                 channel: Callable[[], RequestChannel | None]):
        self.reactor = reactor
        self.cache = cache
        self.channel = channel  # read when sending: built once the broker joins the cluster
        self.requests_sent = 0

    def send(self, producer_id: int, producer_epoch: int, committed: bool,
             partitions: Iterable[TopicPartition], coordinator_epoch: int,
             still_wanted: Callable[[], bool]) -> defer.Deferred:
        done: defer.Deferred = defer.Deferred()
        marker = (producer_id, producer_epoch, committed, coordinator_epoch)
        self._attempt(marker, set(partitions), still_wanted, done)
        return done

    def _attempt(self, marker: tuple, remaining: set[TopicPartition],
                 still_wanted: Callable[[], bool], done: defer.Deferred) -> None:
        if not still_wanted():
            log.info("markers for producer %d abandoned: no longer its coordinator", marker[0])
            return
        remaining -= {tp for tp in remaining if tp[0] not in self.cache.topics}  # deleted
        if not remaining:
            done.callback(None)
            return
        channel = self.channel()
        by_leader: dict[int, list[TopicPartition]] = {}
        for tp in sorted(remaining):
            state = self.cache.partition(*tp)
            leader = state.leader if state is not None else -1
            if leader >= 0 and self.cache.is_alive(leader):
                by_leader.setdefault(leader, []).append(tp)
        sends = []
        if channel is not None:
            for leader, tps in by_leader.items():
                self.requests_sent += 1
                sends.append(channel.send(leader, ApiKey.WRITE_TXN_MARKERS,
                                          WRITE_TXN_MARKERS_VERSION, _request(marker, tps))
                             .addCallbacks(_written, _nothing_written))
        answered = defer.gatherResults(sends, consumeErrors=True)

        def next_round(results: list[set[TopicPartition]]) -> None:
            for written in results:
                remaining.difference_update(written)
            if not remaining:
                done.callback(None)
                return
            self.reactor.callLater(RETRY_DELAY, self._attempt, marker, remaining,
                                   still_wanted, done)

        answered.addCallback(next_round)


def _request(marker: tuple, partitions: list[TopicPartition]) -> dict:
    producer_id, producer_epoch, committed, coordinator_epoch = marker
    by_topic: dict[str, list[int]] = {}
    for topic, index in partitions:
        by_topic.setdefault(topic, []).append(index)
    return {"markers": [{
        "producer_id": producer_id, "producer_epoch": producer_epoch,
        "transaction_result": committed, "coordinator_epoch": coordinator_epoch,
        "topics": [{"name": name, "partition_indexes": indexes}
                   for name, indexes in by_topic.items()]}]}


def _written(response: Struct) -> set[TopicPartition]:
    """The partitions the leader wrote the marker to (or that are gone for good)."""
    written = set()
    for result in response.markers:
        for topic in result.topics:
            for p in topic.partitions:
                if p.error_code == ErrorCode.NONE:
                    written.add((topic.name, p.partition_index))
                else:
                    log.info("marker for %s-%d not written: %s", topic.name,
                             p.partition_index, ErrorCode.of(p.error_code).name)
    return written


def _nothing_written(failure: Failure) -> set[TopicPartition]:
    log.info("WriteTxnMarkers failed: %s", failure.getErrorMessage())
    return set()
