"""Reading a fetch from the local replicas (Kafka's ``ReplicaManager.fetchMessages``).

The Fetch handler decodes the request into ``FetchParams`` and hands it here;
what comes back is a ``FetchResult`` (or a Deferred of one), which the handler
turns into the wire answer. In between, everything is the broker's domain:

* ``read_from_log`` reads each partition once (Kafka's ``readFromLog``): the
  leader (or, for a consumer with a rack, KIP-392, any replica) serves whole
  batches from the one holding the fetch offset, consumers up to the high
  watermark, followers up to the log end; always the first batch whole, even
  when it is larger than the size limits (KIP-74: a client must be able to
  make progress). A read_committed consumer (isolation_level 1) reads only
  below the last stable offset and gets the aborted transactions that overlap
  its records (from ``.txnindex``), so it can drop theirs; every answer
  carries the LSO. For a follower, ``Partition.fetch_records`` records where
  its log ends, which may move the high watermark and let it join the ISR. A
  partition's failure is its error code, never the whole fetch's.
* The replication throttle (``replication_quota.py``) is applied here: a
  moving replica over its rate gets nothing this time, its position still
  recorded.
* ``fetch_messages`` answers at once when there is enough (``min_bytes``), an
  error, or no wait; otherwise it parks the fetch (``delayed_fetch.py``).

A follower's incremental session fetch (``fetch_session.py``) skips its
*quiet* partitions: caught up, in sync, nothing new since the last answer.
Only the fetch is recorded for those, and the session settles them.

This is a part of the ReplicaManager in its own module, over the few lookups
it needs (``FetchSource``), so the handler's unit tests can give it real
partitions without a whole ReplicaManager.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeVar

from twisted.internet import defer

from simplekafka.broker.delayed_fetch import DelayedFetch
from simplekafka.broker.isr import now_ms
from simplekafka.protocol.api import READ_COMMITTED
from simplekafka.protocol.errors import ErrorCode, KafkaError
from simplekafka.storage import FileRegion

if TYPE_CHECKING:
    from simplekafka.broker.collaborators import Reactor
    from simplekafka.broker.partition import Partition
    from simplekafka.broker.replica_selector import RackAwareReplicaSelector
    from simplekafka.broker.replication_quota import ReplicationThrottle
    from simplekafka.protocol.fields import Struct
    from simplekafka.protocol.message_types import FetchRequest
    from simplekafka.storage.txn_index import AbortedTxn

log = logging.getLogger(__name__)

PartitionKey = tuple[str, int]
_Answer = TypeVar("_Answer")



def fetch_replica_id(request: FetchRequest | Struct) -> int:
    """Who sends a Fetch request: a follower's broker id, or -1 for a consumer. Up to v14 in
    ``replica_id``; v15+ (KIP-903) in ``replica_state``."""
    replica_id = request.get("replica_id")
    if replica_id is None:
        return request["replica_state"]["replica_id"]
    return replica_id

class FetchSource(Protocol):
    """The local partitions a fetch reads (``ReplicaManager``)."""

    def leader_partition(self, topic: str, partition: int) -> Partition: ...

    def get_partition(self, topic: str, partition: int) -> Partition | None: ...

    def readable_partition(self, topic: str, partition: int) -> Partition: ...


class FetchPartition:
    """One partition a fetch asks for: where to read, and (in a session) what its last
    answer said, so a quiet partition can be recognised without reading it."""

    __slots__ = ("current_leader_epoch", "fetch_offset", "high_watermark",
                 "last_fetched_epoch", "last_stable_offset", "log_start_offset", "partition",
                 "partition_max_bytes", "response_log_start_offset", "watched")

    def __init__(self, partition: int, fetch_offset: int, partition_max_bytes: int,
                 current_leader_epoch: int = -1, log_start_offset: int = -1,
                 last_fetched_epoch: int = -1):
        self.partition = partition
        self.fetch_offset = fetch_offset
        self.partition_max_bytes = partition_max_bytes
        self.current_leader_epoch = current_leader_epoch
        # Fetch v12+: the epoch of the last batch the fetcher holds (-1: not said); the
        # leader checks that its log agrees up to fetch_offset (see read_from_log).
        self.last_fetched_epoch = last_fetched_epoch
        self.log_start_offset = log_start_offset  # the follower's own (-1: a consumer)
        # The Partition a follower session listens on (settled).
        self.watched: Partition | None = None
        self.high_watermark = -1  # what the last answer naming it said (-1: never answered)
        self.last_stable_offset = -1
        self.response_log_start_offset = -1

    def update(self, newer: FetchPartition) -> None:
        """Take the position a later fetch of the same session names."""
        self.fetch_offset = newer.fetch_offset
        self.partition_max_bytes = newer.partition_max_bytes
        self.current_leader_epoch = newer.current_leader_epoch
        self.log_start_offset = newer.log_start_offset
        self.last_fetched_epoch = newer.last_fetched_epoch


# One topic of a fetch and the partitions it reads: a plain tuple, built once per fetch
# (an object of a class with an __init__ costs some five times as much to build).
FetchTopic = tuple[str, list[FetchPartition]]


class FetchPartitions(Protocol):
    """The partitions of one fetch, as its session sees them (``fetch_session.py``'s
    contexts). A follower's incremental fetch stands for its session's unsettled
    partitions as they are at each read, so ``topics`` is asked at every read."""

    incremental: bool  # a session's later fetch: the answer names only what changed

    def topics(self) -> list[FetchTopic]: ...

    def names_partitions(self) -> bool: ...

    def settle(self, topic: str, index: int, partition: Partition) -> None: ...

    def wait_on_session(self, waiter: Callable[[Partition], None]) -> bool: ...

    def stop_waiting(self, waiter: Callable[[Partition], None]) -> None: ...

    def fetch_offset(self, key: PartitionKey) -> int | None: ...


@dataclass(slots=True)
class FetchParams:
    """What a fetch asks, decoded from the request (Kafka's ``FetchParams``)."""

    replica_id: int  # >= 0: a follower broker; -1: a consumer
    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    isolation_level: int
    partitions: FetchPartitions
    client_rack: str | None = None  # Fetch v11+ from a consumer (KIP-392), maybe empty
    refused: frozenset[str] = frozenset()  # topics answered TOPIC_AUTHORIZATION_FAILED


class FetchPartitionData:
    """One partition's outcome (Kafka's ``FetchPartitionData``)."""

    __slots__ = ("aborted_transactions", "diverging_epoch", "error_code", "high_watermark",
                 "last_stable_offset", "log_start_offset", "partition_index",
                 "preferred_read_replica", "records")

    def __init__(self, partition_index: int, error_code: ErrorCode = ErrorCode.NONE):
        self.partition_index = partition_index
        self.error_code: ErrorCode | None = error_code  # None: a KafkaError without a code
        self.high_watermark = -1
        self.last_stable_offset = -1
        self.log_start_offset = -1
        self.aborted_transactions: list[AbortedTxn] = []
        self.preferred_read_replica = -1
        self.records: bytes | FileRegion = b""  # a region: sent by sendfile
        # (epoch, end offset) where the fetcher's log left this one (Fetch v12+); None: not.
        self.diverging_epoch: tuple[int, int] | None = None


#: What a read of a fetch comes to: (every partition's outcome by topic, in the order
#: read; the bytes read; whether any partition failed: a fetch with an error is answered
#: at once). A plain tuple: a fetch is read twice when it parks, and an object of a
#: class with an __init__ costs some five times as much to build.
FetchResult = tuple[list[tuple[str, list[FetchPartitionData]]], int, bool]


class FetchMessages:
    """Kafka's ``ReplicaManager.fetchMessages`` and ``readFromLog`` (see the module
    docstring); ``waiting`` counts the fetches parked right now."""

    def __init__(self, replicas: FetchSource, reactor: Reactor, is_stopping: Callable[[], bool],
                 selector: RackAwareReplicaSelector | None = None):
        self.replicas = replicas
        self.reactor = reactor
        self.is_stopping = is_stopping  # true once the broker shuts down
        self.selector = selector  # replica.selector.class (KIP-392); None: leaders serve
        self.waiting = 0

    @property
    def leader_throttle(self) -> ReplicationThrottle | None:
        """What this broker sends throttled followers (set on the ReplicaManager after the
        handlers are built; a unit test's lookups may have none)."""
        return getattr(self.replicas, "leader_throttle", None)

    def fetch_messages(self, params: FetchParams, respond: Callable[[FetchResult], _Answer]
                       ) -> _Answer | defer.Deferred[_Answer]:
        """Read now; answer now if there is enough, an error, or no wait; else park.

        ``respond`` makes the answer of the result (Kafka's ``responseCallback``): called
        now, or by the parked fetch when it completes, whose Deferred fires with it."""
        result = self.read_from_log(params)
        _responses, total_bytes, has_error = result
        if (params.max_wait_ms <= 0 or total_bytes >= max(params.min_bytes, 1) or has_error
                # A follower's session fetch may examine nothing (all settled) and park.
                or not params.partitions.names_partitions()):
            return respond(result)
        return DelayedFetch(self, params, respond).start()

    def read_from_log(self, params: FetchParams) -> FetchResult:
        """Read every partition of the fetch once (see the module docstring)."""
        remaining = params.max_bytes if params.max_bytes > 0 else 0x7FFFFFFF
        total = 0
        has_error = False
        responses: list[tuple[str, list[FetchPartitionData]]] = []
        replicas = self.replicas
        replica_id = params.replica_id
        read_committed = params.isolation_level == READ_COMMITTED and replica_id < 0
        throttle = self.leader_throttle if replica_id >= 0 else None
        client_rack = params.client_rack if replica_id < 0 else None
        any_replica = client_rack is not None
        selector = self.selector if client_rack else None
        wanted_partitions = params.partitions
        # An incremental session fetch from a follower leaves out what has nothing new.
        follower = replica_id if wanted_partitions.incremental else -1
        get_partition = replicas.get_partition
        now = now_ms() if follower >= 0 else 0.0  # only the quiet check needs the clock
        refused = params.refused
        for name, wanted_list in wanted_partitions.topics():
            partitions: list[FetchPartitionData] = []
            responses.append((name, partitions))
            if name in refused:
                has_error = True
                partitions += [FetchPartitionData(wanted.partition,
                                                  ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                               for wanted in wanted_list]
                continue
            for wanted in wanted_list:
                if follower >= 0:
                    quiet = get_partition(name, wanted.partition)
                    if quiet is not None and quiet.record_quiet_follower_fetch(
                            follower, wanted, now):
                        wanted_partitions.settle(name, wanted.partition, quiet)
                        continue
                answer = FetchPartitionData(wanted.partition)
                partitions.append(answer)
                try:
                    if any_replica:
                        partition = replicas.readable_partition(name, wanted.partition)
                    else:
                        partition = replicas.leader_partition(name, wanted.partition)
                    if wanted.current_leader_epoch >= 0:  # -1: the fetcher does not say
                        partition.check_leader_epoch(wanted.current_leader_epoch)
                    if wanted.last_fetched_epoch >= 0 and _diverged(partition, wanted, answer):
                        has_error = True  # answered now: the fetcher truncates first
                        continue
                    preferred = -1
                    if selector is not None and client_rack and partition.is_leader:
                        preferred = selector.preferred_read_replica(
                            partition, client_rack, wanted.fetch_offset)
                    limit = wanted.partition_max_bytes
                    if limit > remaining:
                        limit = remaining
                    in_sync = throttle is not None and replica_id in partition.isr
                    # (An in-sync replica is never throttled: no call to ask.)
                    if throttle is not None and not in_sync and throttle.holds_back(
                            name, wanted.partition, in_sync):
                        # A moving replica over its rate: nothing this time, but its
                        # position still counts (it is where its log ends).
                        records = partition.fetch_records(
                            wanted.fetch_offset, 0, replica_id, wanted.log_start_offset,
                            held_back=True)
                    elif preferred >= 0:
                        # Read elsewhere (KIP-392): no records, the consumer moves there.
                        answer.preferred_read_replica = preferred
                        records = b""
                        has_error = True  # answer now rather than park the fetch
                    elif limit > 0 or total == 0:
                        records = partition.fetch_records(
                            wanted.fetch_offset, limit if limit > 0 else 1, replica_id,
                            wanted.log_start_offset, not any_replica, read_committed)
                        if throttle is not None and not in_sync:
                            throttle.record(name, wanted.partition, in_sync, len(records))
                    else:
                        records = b""
                    answer.records = records
                    # A follower's is remembered (Partition.high_watermark_for).
                    answer.high_watermark = partition.high_watermark_for(replica_id) \
                        if replica_id >= 0 else partition.high_watermark
                    answer.last_stable_offset = partition.last_stable_offset
                    if read_committed:
                        answer.aborted_transactions = partition.aborted_transactions(
                            wanted.fetch_offset, records)
                    answer.log_start_offset = partition.log.log_start_offset  # a call less
                    size = len(records)
                    total += size
                    remaining -= size
                except KafkaError as exc:
                    answer.error_code = exc.error_code
                    has_error = True
                except Exception:
                    has_error = True
                    if self.is_stopping():
                        # A fetch parked before shutdown, answered after the logs closed.
                        answer.error_code = ErrorCode.NOT_LEADER_OR_FOLLOWER
                        continue
                    log.exception("fetch from %s-%d failed", name, wanted.partition)
                    answer.error_code = ErrorCode.KAFKA_STORAGE_ERROR
        return responses, total, has_error


def _diverged(partition: Partition, wanted: FetchPartition, answer: FetchPartitionData) -> bool:
    """Whether the fetcher's log left the leader's before ``fetch_offset``: the leader's
    log has no batch of ``last_fetched_epoch``, or that epoch ends earlier here. Then the
    answer carries no records but where the epoch ends here (the diverging epoch), and
    the fetcher truncates to it (Kafka's truncation on fetch, KIP-595/Fetch v12)."""
    epoch, end = partition.log.leader_epochs.end_offset_for(wanted.last_fetched_epoch)
    if epoch == wanted.last_fetched_epoch and end >= wanted.fetch_offset:
        return False
    answer.diverging_epoch = (epoch, end)
    answer.high_watermark = partition.high_watermark
    answer.last_stable_offset = partition.last_stable_offset
    answer.log_start_offset = partition.log_start_offset
    return True
