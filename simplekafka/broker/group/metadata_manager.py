"""Groups on disk: load, store and expire them in ``__consumer_offsets`` (Kafka's
``GroupMetadataManager``).

Everything the coordinator persists is a record in the group's partition of
``__consumer_offsets`` (formats in ``group.records``), appended through
``ReplicaManager.append_records`` with acks=all like any producer's batch: a
commit is acknowledged only once the high watermark passed it, so it survives
the coordinator's broker. A broker that becomes leader of such a partition
reads it from the start to rebuild its groups (later records win, a tombstone
deletes its key). Expiry decides which offsets of an empty group are older than
``offsets.retention.minutes``; tombstones delete them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, NamedTuple

from twisted.internet import defer

from simplekafka.broker.collaborators import Config, Reactor, ZooKeeperHandle
from simplekafka.broker.coordinator.runtime import (
    CoordinatorLog,
    InternalTopicReplicas,
    read_batches,
)
from simplekafka.broker.group.records import (
    OFFSETS_TOPIC,
    GroupKey,
    GroupValue,
    MemberValue,
    OffsetKey,
    OffsetValue,
    RecordFormatError,
    decode_group_value,
    decode_key,
    decode_offset_value,
    encode_group_key,
    encode_group_value,
    encode_offset_key,
    encode_offset_value,
    partition_for,
)
from simplekafka.broker.group.state import Group
from simplekafka.broker.metadata_cache import MetadataCache
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.records import Record, RecordBatch, build_batch

if TYPE_CHECKING:
    from simplekafka.broker.partition import Partition

log = logging.getLogger(__name__)

COMMIT_TIMEOUT_MS = 5_000  # Kafka's offsets.commit.timeout.ms

# A failed append to __consumer_offsets, as the group client should hear it (Kafka's mapping).
APPEND_ERRORS = {
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.REQUEST_TIMED_OUT: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.MESSAGE_TOO_LARGE: ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
    ErrorCode.RECORD_LIST_TOO_LARGE: ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
    ErrorCode.KAFKA_STORAGE_ERROR: ErrorCode.NOT_COORDINATOR,
}

OffsetsKey = tuple[str, int]


class PartitionContents(NamedTuple):
    """What one ``__consumer_offsets`` partition says, read from its start."""

    groups: dict[str, GroupValue | None]  # None: the group was deleted
    offsets: dict[str, dict[OffsetsKey, OffsetValue | None]]  # None: the offset was deleted
    records: int
    # producer id -> group -> offsets of transactions with no marker yet (TxnOffsetCommit)
    pending: dict[int, dict[str, dict[OffsetsKey, OffsetValue]]]


class GroupMetadataManager:
    """Reads and writes the groups' records in ``__consumer_offsets`` (through its
    ``CoordinatorLog``); owns no group state."""

    def __init__(self, replicas: InternalTopicReplicas, cache: MetadataCache, config: Config,
                 reactor: Reactor, zookeeper: ZooKeeperHandle):
        self.replicas = replicas
        self.cache = cache
        self.config = config
        self.topic_log = CoordinatorLog(
            OFFSETS_TOPIC, replicas, cache, config, reactor, zookeeper,
            partitions_key="offsets.topic.num.partitions",
            replication_key="offsets.topic.replication.factor",
            # Kafka's settings: compacted, so a group's offsets take one record per key
            topic_config=lambda: {"cleanup.policy": "compact",
                                  "segment.bytes": str(config["offsets.topic.segment.bytes"])},
            append_errors=APPEND_ERRORS, append_timeout_ms=COMMIT_TIMEOUT_MS)

    # -- which partition ------------------------------------------------------------------

    @property
    def num_partitions(self) -> int:
        return self.topic_log.num_partitions

    def partition_of(self, group_id: str) -> int:
        return partition_for(group_id, self.num_partitions)

    def local_leader(self, index: int) -> Partition | None:
        """The local partition ``index`` of __consumer_offsets if this broker leads it."""
        return self.topic_log.local_leader(index)

    # -- load -------------------------------------------------------------------------------

    @staticmethod
    def read_partition(partition: Partition) -> PartitionContents:
        """Replay a partition's log from its start (later records win)."""
        offsets: dict[str, dict[OffsetsKey, OffsetValue | None]] = {}
        groups: dict[str, GroupValue | None] = {}
        records = 0
        pending: dict[int, dict[str, dict[OffsetsKey, OffsetValue | None]]] = {}
        for batch in read_batches(partition):
            producer_id = batch.header.producer_id
            if batch.is_control:
                # A transaction's marker: its offsets count (commit) or never did.
                ended = pending.pop(producer_id, {})
                if _is_commit(batch):
                    for group_id, entries in ended.items():
                        offsets.setdefault(group_id, {}).update(entries)
            elif batch.is_transactional:
                for record in batch:
                    records += 1
                    _replay(record, pending.setdefault(producer_id, {}), {})
            else:
                for record in batch:
                    records += 1
                    _replay(record, offsets, groups)
        return PartitionContents(groups, offsets, records, {
            pid: {g: {k: v for k, v in e.items() if v is not None} for g, e in by_group.items()}
            for pid, by_group in pending.items()})

    # -- store ------------------------------------------------------------------------------

    def append(self, group_id: str, entries: list[tuple[bytes, bytes | None]],
               producer: tuple[int, int] | None = None) -> defer.Deferred:
        """Append records to the group's partition; fires with an ErrorCode once replicated
        (acks=all, ``CoordinatorLog.append``). ``producer`` (id, epoch) makes the batch
        part of that producer's transaction."""
        if producer is None:
            batch = build_batch(entries)
        else:
            batch = build_batch(entries, producer_id=producer[0], producer_epoch=producer[1],
                                base_sequence=0, is_transactional=True)
        return self.topic_log.append(self.partition_of(group_id), batch)

    def store_group(self, group: Group) -> defer.Deferred:
        """Write the group's metadata record (generation, protocol, members, assignments)."""
        value = GroupValue(
            group.protocol_type or "", group.generation, group.protocol, group.leader_id,
            group.state_timestamp,
            [MemberValue(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                         m.rebalance_timeout_ms, m.session_timeout_ms,
                         m.metadata_for(group.protocol or ""), m.assignment)
             for m in group.members.values()])
        return self.append(group.group_id,
                           [(encode_group_key(GroupKey(group.group_id)),
                             encode_group_value(value))])

    def store_offsets(self, group_id: str, offsets: Iterable[tuple[OffsetsKey, OffsetValue]],
                      producer: tuple[int, int] | None = None) -> defer.Deferred:
        """Write committed offsets, one record each, in one batch (in ``producer``'s
        transaction if given)."""
        return self.append(group_id, [
            (encode_offset_key(OffsetKey(group_id, *key)), encode_offset_value(value))
            for key, value in offsets], producer)

    def delete(self, group_id: str, offsets: Iterable[OffsetsKey], whole_group: bool
               ) -> defer.Deferred:
        """Tombstone offsets and, if ``whole_group``, the group's metadata record."""
        entries: list[tuple[bytes, bytes | None]] = [
            (encode_offset_key(OffsetKey(group_id, *key)), None) for key in offsets]
        if whole_group:
            entries.append((encode_group_key(GroupKey(group_id)), None))
        if not entries:
            return defer.succeed(ErrorCode.NONE)
        return self.append(group_id, entries)

    def ensure_offsets_topic(self) -> None:
        """Create __consumer_offsets (in the background) if no one has yet."""
        self.topic_log.ensure_topic()


def expired_offsets(group: Group, now_ms: int, retention_ms: int) -> list[OffsetsKey]:
    """The offsets of an empty group older than the retention (Kafka: since it emptied)."""
    since = max(group.state_timestamp, 0)
    return [key for key, value in group.offsets.items()
            if now_ms - max(value.commit_timestamp, since) >= retention_ms]


def _is_commit(batch: RecordBatch) -> bool:
    """Whether a control batch is a COMMIT marker (key: int16 version, int16 type 1)."""
    for record in batch:
        key = record.key or b""
        return len(key) >= 4 and int.from_bytes(key[2:4], "big", signed=True) == 1
    return False


def _replay(record: Record, offsets: dict, groups: dict) -> None:
    try:
        key = decode_key(record.key or b"")
        if isinstance(key, OffsetKey):
            offset = decode_offset_value(record.value) if record.value is not None else None
            offsets.setdefault(key.group_id, {})[(key.topic, key.partition)] = offset
        else:
            value = decode_group_value(record.value) if record.value is not None else None
            groups[key.group_id] = value
            if value is None:
                offsets.pop(key.group_id, None)
    except RecordFormatError as exc:
        log.warning("skipping unreadable %s record: %s", OFFSETS_TOPIC, exc)
