"""Transactional ids on disk: load and store them in ``__transaction_state`` (Kafka's
``TransactionStateManager``).

Every state change of a transactional id is one record in its partition of
``__transaction_state`` (formats in ``transaction.records``), appended through
``ReplicaManager.append_records`` with acks=all: the coordinator answers a
client, or sends markers, only once the high watermark passed the record, so
the decision survives the coordinator's broker. A broker that becomes leader
of such a partition reads it from the start to rebuild its transactional ids
(later records win), and one that stops leading it forgets them.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from twisted.internet import defer

from simplekafka.broker.apis.collaborators import (
    Config,
    Reactor,
    ZooKeeperHandle,
    in_worker_thread,
)
from simplekafka.broker.group.metadata_manager import OffsetsLog
from simplekafka.broker.metadata_cache import MetadataCache
from simplekafka.broker.transaction.records import (
    TRANSACTION_STATE_TOPIC,
    RecordFormatError,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
    partition_for,
)
from simplekafka.broker.transaction.state import TxnTransition
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.records import build_batch, parse_batches

if TYPE_CHECKING:
    from simplekafka.broker.partition import Partition

log = logging.getLogger(__name__)

WRITE_TIMEOUT_MS = 5_000  # Kafka's transaction.state.log... request.timeout for the append

# A failed append to __transaction_state, as a transactional client should hear it.
APPEND_ERRORS = {
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.NOT_COORDINATOR,
    ErrorCode.KAFKA_STORAGE_ERROR: ErrorCode.NOT_COORDINATOR,
    ErrorCode.NOT_ENOUGH_REPLICAS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.REQUEST_TIMED_OUT: ErrorCode.COORDINATOR_NOT_AVAILABLE,
}


class TransactionStateManager:
    """Reads and writes transactional ids' records; owns nothing but the topic's creation."""

    def __init__(self, replicas: OffsetsLog, cache: MetadataCache, config: Config,
                 reactor: Reactor, zookeeper: ZooKeeperHandle):
        self.replicas = replicas
        self.cache = cache
        self.config = config
        self.reactor = reactor
        self.zookeeper = zookeeper
        self._creating_topic = False

    @property
    def num_partitions(self) -> int:
        known = self.cache.topics.get(TRANSACTION_STATE_TOPIC)
        return len(known) if known else self.config["transaction.state.log.num.partitions"]

    def partition_of(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self.num_partitions)

    def local_leader(self, index: int) -> Partition | None:
        partition = self.replicas.get_partition(TRANSACTION_STATE_TOPIC, index)
        return partition if partition is not None and partition.is_leader else None

    @staticmethod
    def read_partition(partition: Partition) -> dict[str, TxnTransition]:
        """Replay a partition's log from its start: each id's latest record."""
        found: dict[str, TxnTransition] = {}
        the_log: Any = partition.log
        position, end = the_log.log_start_offset, the_log.log_end_offset
        while position < end:
            chunk = the_log.read(position, 1 << 20)
            batches = parse_batches(bytes(chunk)) if chunk else []
            if not batches:
                break
            for batch in batches:
                for record in batch:
                    try:
                        transactional_id = decode_key(record.key or b"")
                        if record.value is None:
                            found.pop(transactional_id, None)
                        else:
                            found[transactional_id] = decode_value(record.value)
                    except RecordFormatError as exc:
                        log.warning("skipping unreadable %s record: %s",
                                    TRANSACTION_STATE_TOPIC, exc)
                position = max(position, batch.next_offset)
        return found

    def store(self, transactional_id: str, transition: TxnTransition) -> defer.Deferred:
        """Append one id's new state; fires with an ErrorCode once replicated (acks=all)."""
        index = self.partition_of(transactional_id)
        if self.local_leader(index) is None:
            return defer.succeed(ErrorCode.NOT_COORDINATOR)
        key = (TRANSACTION_STATE_TOPIC, index)
        batch = build_batch([(encode_key(transactional_id), encode_value(transition))])
        appended = self.replicas.append_records({key: batch}, acks=-1,
                                                timeout_ms=WRITE_TIMEOUT_MS, internal=True)

        def code_of(results: dict) -> ErrorCode:
            code = results[key].error_code
            return APPEND_ERRORS.get(code, code)

        return appended.addCallback(code_of)

    def ensure_topic(self) -> None:
        """Create __transaction_state (compacted, in the background) if no one has yet."""
        zk = self.zookeeper()
        if self._creating_topic or zk is None:
            return
        from simplekafka.coordination.topics import TopicError, create_topic

        self._creating_topic = True
        live = max(len(self.cache.brokers), 1)
        replication = min(self.config["transaction.state.log.replication.factor"], live)
        partitions = self.config["transaction.state.log.num.partitions"]
        work = in_worker_thread(self.reactor, create_topic, zk, TRANSACTION_STATE_TOPIC,
                                partitions, replication, {"cleanup.policy": "compact"})

        def created(_: Any) -> None:
            log.info("created %s: %d partitions, replication factor %d",
                     TRANSACTION_STATE_TOPIC, partitions, replication)

        def failed(failure: Any) -> None:
            if not failure.check(TopicError):
                log.warning("creating %s failed: %s", TRANSACTION_STATE_TOPIC,
                            failure.getErrorMessage())

        work.addCallbacks(created, failed)
        work.addBoth(lambda _: setattr(self, "_creating_topic", False))
