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
from typing import TYPE_CHECKING

from twisted.internet import defer

from simplekafka.broker.collaborators import Config, Reactor, ZooKeeperHandle
from simplekafka.broker.coordinator.runtime import (
    CoordinatorLog,
    InternalTopicReplicas,
    read_batches,
)
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
from simplekafka.protocol.records import build_batch

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
    """Reads and writes transactional ids' records in ``__transaction_state`` (through its
    ``CoordinatorLog``); owns no transaction state."""

    def __init__(self, replicas: InternalTopicReplicas, cache: MetadataCache, config: Config,
                 reactor: Reactor, zookeeper: ZooKeeperHandle):
        self.replicas = replicas
        self.cache = cache
        self.config = config
        self.topic_log = CoordinatorLog(
            TRANSACTION_STATE_TOPIC, replicas, cache, config, reactor, zookeeper,
            partitions_key="transaction.state.log.num.partitions",
            replication_key="transaction.state.log.replication.factor",
            topic_config=lambda: {"cleanup.policy": "compact"},
            append_errors=APPEND_ERRORS, append_timeout_ms=WRITE_TIMEOUT_MS)

    @property
    def num_partitions(self) -> int:
        return self.topic_log.num_partitions

    def partition_of(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self.num_partitions)

    def local_leader(self, index: int) -> Partition | None:
        return self.topic_log.local_leader(index)

    @staticmethod
    def read_partition(partition: Partition) -> dict[str, TxnTransition]:
        """Replay a partition's log from its start: each id's latest record."""
        found: dict[str, TxnTransition] = {}
        for batch in read_batches(partition):
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
        return found

    def store(self, transactional_id: str, transition: TxnTransition) -> defer.Deferred:
        """Append one id's new state; fires with an ErrorCode once replicated (acks=all)."""
        batch = build_batch([(encode_key(transactional_id), encode_value(transition))])
        return self.topic_log.append(self.partition_of(transactional_id), batch)

    def ensure_topic(self) -> None:
        """Create __transaction_state (compacted, in the background) if no one has yet."""
        self.topic_log.ensure_topic()
