"""Which partitions of an internal topic this broker coordinates: own, load, unload.

Kafka factors this out of its two coordinators (the ``CoordinatorLoader`` and
partition ownership of its ``CoordinatorRuntime``; before it, the
``onElection``/``onResignation`` immigration and emigration of
``GroupMetadataManager`` and ``TransactionStateManager``). Here:

- :class:`CoordinatorLog` is the internal topic as a log: how many partitions,
  which ones this broker leads, an append with acks=all whose failures are
  mapped to what a coordinator's client should hear, reading a partition back
  from its start, and creating the topic (compacted) on first use.
- :class:`CoordinatorPartitions` is ownership: a key's partition is owned once
  it is loaded at the leader epoch it is led at now; a partition newly led is
  loaded (on the reactor, soon, so a request answers COORDINATOR_LOAD_IN_PROGRESS
  meanwhile), one no longer led, or led at another epoch, is unloaded.

What a partition holds (groups and offsets, transactional ids) and what
loading and unloading mean stay with each coordinator, as callbacks.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Protocol, TypeVar

from twisted.internet import defer
from twisted.python.failure import Failure

from simplekafka.broker.collaborators import (
    Config,
    Reactor,
    RecordAppender,
    ZooKeeperHandle,
    in_worker_thread,
)
from simplekafka.broker.metadata_cache import MetadataCache
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.records import RecordBatch, parse_batches

if TYPE_CHECKING:
    from simplekafka.broker.partition import Partition

log = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")


class IllegalStateTransition(RuntimeError):
    """A transition a coordinator's state machine does not have (a coordinator bug)."""


def now_ms() -> int:
    """Wall-clock milliseconds, as the coordinators stamp their records."""
    return int(time.time() * 1000)


def now_or_later(result: T | defer.Deferred, answer: Callable[[T], R]) -> R | defer.Deferred:
    """``answer(result)`` now, or once ``result``, a Deferred, fires: a coordinator answers
    at once when it refuses and later when it must wait for replication or a rebalance."""
    if isinstance(result, defer.Deferred):
        return result.addCallback(answer)
    return answer(result)


class InternalTopicReplicas(RecordAppender, Protocol):
    """The ReplicaManager, as a coordinator and its log use it."""

    partitions: dict[tuple[str, int], Partition]

    def get_partition(self, topic: str, partition: int) -> Partition | None: ...


class CoordinatorLog:
    """One internal topic, as a coordinator reads and writes it."""

    def __init__(self, topic: str, replicas: InternalTopicReplicas, cache: MetadataCache,
                 config: Config, reactor: Reactor, zookeeper: ZooKeeperHandle, *,
                 partitions_key: str, replication_key: str,
                 topic_config: Callable[[], dict[str, str]],
                 append_errors: Mapping[ErrorCode, ErrorCode], append_timeout_ms: int):
        self.topic = topic
        self.replicas = replicas
        self.cache = cache
        self.config = config
        self.reactor = reactor
        self.zookeeper = zookeeper
        self.partitions_key = partitions_key
        self.replication_key = replication_key
        self.topic_config = topic_config
        self.append_errors = append_errors
        self.append_timeout_ms = append_timeout_ms
        self._creating_topic = False

    @property
    def num_partitions(self) -> int:
        """The topic's partitions as the metadata knows them, else as it will be created."""
        known = self.cache.topics.get(self.topic)
        return len(known) if known else self.config[self.partitions_key]

    def local_leader(self, index: int) -> Partition | None:
        """The local partition ``index`` if this broker leads it."""
        partition = self.replicas.get_partition(self.topic, index)
        return partition if partition is not None and partition.is_leader else None

    def led_partitions(self) -> Iterator[int]:
        """The indexes of the topic's partitions this broker leads now."""
        for (topic, index), partition in list(self.replicas.partitions.items()):
            if topic == self.topic and partition.is_leader:
                yield index

    def append(self, index: int, batch: bytes) -> defer.Deferred:
        """Append one batch to partition ``index``; fires with an ErrorCode once replicated.

        Through ``ReplicaManager.append_records`` with acks=all, as any produce;
        its error codes become what the coordinator's client should hear (Kafka's
        mapping, per coordinator)."""
        if self.local_leader(index) is None:
            return defer.succeed(ErrorCode.NOT_COORDINATOR)
        key = (self.topic, index)
        appended = self.replicas.append_records(
            {key: batch}, acks=-1, timeout_ms=self.append_timeout_ms, internal=True)

        def code_of(results: dict) -> ErrorCode:
            code = results[key].error_code
            return self.append_errors.get(code, code)

        return appended.addCallback(code_of)

    def ensure_topic(self) -> None:
        """Create the topic (in the background) if no one has yet."""
        zk = self.zookeeper()
        if self._creating_topic or zk is None:
            return
        from simplekafka.coordination.topics import TopicError, create_topic

        self._creating_topic = True
        topic = self.topic
        live = max(len(self.cache.brokers), 1)
        replication = min(self.config[self.replication_key], live)
        partitions = self.config[self.partitions_key]
        work = in_worker_thread(self.reactor, create_topic, zk, topic, partitions,
                                replication, self.topic_config())

        def created(_: object) -> None:
            log.info("created %s: %d partitions, replication factor %d", topic, partitions,
                     replication)

        def failed(failure: Failure) -> None:
            if not failure.check(TopicError):
                log.warning("creating %s failed: %s", topic, failure.getErrorMessage())

        work.addCallbacks(created, failed)
        work.addBoth(lambda _: setattr(self, "_creating_topic", False))


def read_batches(partition: Partition) -> Iterator[RecordBatch]:
    """A partition's batches from its log start to its end, as a new leader replays them."""
    the_log = partition.log
    position, end = the_log.log_start_offset, the_log.log_end_offset
    while position < end:
        chunk = the_log.read(position, 1 << 20)
        batches = parse_batches(bytes(chunk)) if chunk else []
        if not batches:
            return
        for batch in batches:
            yield batch
            position = max(position, batch.next_offset)


class CoordinatorPartitions:
    """Which of an internal topic's partitions are loaded, and at which leader epoch.

    ``load(index, partition)`` rebuilds a partition's state from its log;
    ``unload(index)`` forgets it. Both belong to the coordinator; this class
    decides when. The partition and the leaders are found through
    ``local_leader`` and ``led_partitions``, asked each time (so a coordinator
    may be given another log).
    """

    def __init__(self, topic: str, reactor: Reactor,
                 local_leader: Callable[[int], Partition | None],
                 led_partitions: Callable[[], Iterable[int]],
                 load: Callable[[int, Partition], None], unload: Callable[[int], None]):
        self.topic = topic
        self.reactor = reactor
        self.local_leader = local_leader
        self.led_partitions = led_partitions
        self.load = load
        self.unload = unload
        self.loaded: dict[int, int] = {}  # partition -> the leader epoch it was loaded at
        self.loading: set[int] = set()

    def check(self, index: int) -> ErrorCode | None:
        """None if partition ``index`` is owned and loaded now; else the error to answer
        (NOT_COORDINATOR, or COORDINATOR_LOAD_IN_PROGRESS with its load scheduled)."""
        partition = self.local_leader(index)
        if partition is None:
            if index in self.loaded:
                self.drop(index)
            return ErrorCode.NOT_COORDINATOR
        if self.loaded.get(index) != partition.leader_epoch:
            if index in self.loaded:
                self.drop(index)
            self.schedule_load(index)
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        return None

    def epoch(self, index: int) -> int:
        """The leader epoch partition ``index`` was loaded at (the coordinator epoch), or -1."""
        return self.loaded.get(index, -1)

    def sync(self) -> None:
        """After a metadata change: unload partitions no longer led, load newly led ones."""
        for index, epoch in list(self.loaded.items()):
            partition = self.local_leader(index)
            if partition is None or partition.leader_epoch != epoch:
                self.drop(index)
        for index in self.led_partitions():
            if index not in self.loaded:
                self.schedule_load(index)

    def schedule_load(self, index: int) -> None:
        if index not in self.loading:
            self.loading.add(index)
            self.reactor.callLater(0, self.run_load, index)

    def run_load(self, index: int) -> None:
        """Load partition ``index`` if this broker still leads it and has not loaded it at
        this epoch (a leadership change may have come between scheduling and now)."""
        self.loading.discard(index)
        partition = self.local_leader(index)
        if partition is None or self.loaded.get(index) == partition.leader_epoch:
            return
        # Owned from here on, so what ``load`` starts (a transaction's markers) sees it owned;
        # a load that fails leaves it unloaded, to be tried again on the next request.
        self.loaded[index] = partition.leader_epoch
        try:
            self.load(index, partition)
        except BaseException:
            self.loaded.pop(index, None)
            raise

    def drop(self, index: int) -> None:
        """This broker no longer coordinates partition ``index``."""
        self.loaded.pop(index, None)
        self.unload(index)
