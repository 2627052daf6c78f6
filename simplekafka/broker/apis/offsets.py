"""ListOffsets, OffsetForLeaderEpoch, DeleteRecords: where a partition starts and ends.

ListOffsets answers the earliest offset (timestamp -2), the latest one a
consumer may read (-1, the high watermark; the last stable offset for a
read_committed consumer, isolation level 1) or the first offset whose record
timestamp is at or after a given time, or (-3, KIP-734) the first record with
the largest timestamp. With no tiered storage (KIP-405) the local log is the
whole log: the earliest local offset (-4, v8+) is the earliest offset, and the
last tiered offset (-5, v9+, KIP-1005) is none (-1, with leader epoch -1), as
Kafka answers without remote storage. OffsetForLeaderEpoch answers where a
leader epoch ended in this leader's log; clients use it to check their position
after a leader change, followers to know where to truncate (KIP-101).
DeleteRecords moves where a partition starts (KIP-107). ListOffsets v0, which
Kafka 3.9 still serves, answers segment boundaries (``old_style_offsets``), as
Kafka's ``legacyFetchOffsetsBefore`` does. OffsetForLeaderEpoch is served from
v0, as Kafka 3.9 serves it: v0 and v1 carry no current leader epoch (nothing is
fenced), v0's answer no leader epoch.

Authorization, per topic as Kafka: Describe for ListOffsets and a client's
OffsetForLeaderEpoch (a follower's needs ClusterAction), Delete for
DeleteRecords; a refused partition answers TOPIC_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterable, Sequence
from typing import TypedDict, TypeVar

from twisted.internet import defer

from simplekafka.broker.apis.collaborators import Authorizer, Leaders, RecordDeleter
from simplekafka.broker.dispatch import RequestContext
from simplekafka.broker.security.authorizer import ALLOW_EVERYONE
from simplekafka.protocol.acls import CLUSTER_NAME, AclOperation, ResourceType
from simplekafka.protocol.api import (
    EARLIEST_LOCAL_TIMESTAMP,
    EARLIEST_TIMESTAMP,
    LATEST_TIERED_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    READ_COMMITTED,
)
from simplekafka.protocol.errors import ErrorCode, KafkaError, error_for
from simplekafka.protocol.message_types import (
    DeleteRecordsRequest,
    DeleteRecordsRequestTopicsPartitions,
    DeleteRecordsResponse,
    DeleteRecordsResponseTopicsPartitions,
    ListOffsetsRequest,
    ListOffsetsRequestTopicsPartitions,
    ListOffsetsResponse,
    ListOffsetsResponseTopicsPartitions,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochRequestTopicsPartitions,
    OffsetForLeaderEpochResponse,
    OffsetForLeaderEpochResponseTopicsPartitions,
)
from simplekafka.storage.segment import LogSegment

log = logging.getLogger(__name__)


class _Answered(TypedDict):
    """What every per-partition answer here has: its error code."""

    error_code: int


W = TypeVar("W")  # one requested partition
A = TypeVar("A", bound=_Answered)  # its answer


def _check(authorizer: Authorizer, context: RequestContext, operation: AclOperation,
           topic: str) -> None:
    """Raise TOPIC_AUTHORIZATION_FAILED unless the principal may do ``operation`` on
    ``topic`` (ClusterAction is asked of the cluster)."""
    if operation == AclOperation.CLUSTER_ACTION:
        allowed = authorizer.authorize(context, operation, ResourceType.CLUSTER, CLUSTER_NAME)
    else:
        allowed = authorizer.authorize(context, operation, ResourceType.TOPIC, topic)
    if not allowed:
        raise error_for(ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                        f"not authorized to {operation.kafka_name} topic {topic}")


def _answer_each_partition(api: str, requested: Iterable[tuple[str, Sequence[W]]],
                           blank: Callable[[W], A], fill: Callable[[str, W, A], None],
                           storage_errors: bool = True) -> list[tuple[str, list[A]]]:
    """One answer per requested (topic, partitions): a partition that fails gets its error
    code and the others are still answered (with ``storage_errors``, an unexpected failure
    is logged and answered KAFKA_STORAGE_ERROR rather than failing the request)."""
    topics = []
    for name, wanted_partitions in requested:
        partitions = []
        for wanted in wanted_partitions:
            answer = blank(wanted)
            try:
                fill(name, wanted, answer)
            except KafkaError as exc:
                answer["error_code"] = exc.error_code or ErrorCode.UNKNOWN_SERVER_ERROR
            except Exception:
                if not storage_errors:
                    raise
                log.exception("%s on %s failed (%r)", api, name, wanted)
                answer["error_code"] = ErrorCode.KAFKA_STORAGE_ERROR
            partitions.append(answer)
        topics.append((name, partitions))
    return topics


class ListOffsetsHandler:
    """ApiKey.LIST_OFFSETS: earliest, latest, or by timestamp, per partition."""

    def __init__(self, leaders: Leaders, authorizer: Authorizer = ALLOW_EVERYONE):
        self.leaders = leaders
        self.authorizer = authorizer

    def __call__(self, context: RequestContext, request: ListOffsetsRequest
                 ) -> ListOffsetsResponse:
        version = context.api_version
        replica_id = request["replica_id"]

        def blank(wanted: ListOffsetsRequestTopicsPartitions
                  ) -> ListOffsetsResponseTopicsPartitions:
            return {"partition_index": wanted["partition_index"],
                    "error_code": ErrorCode.NONE, "timestamp": -1, "offset": -1,
                    "leader_epoch": -1, "old_style_offsets": []}

        def fill(topic: str, wanted: ListOffsetsRequestTopicsPartitions,
                 answer: ListOffsetsResponseTopicsPartitions) -> None:
            _check(self.authorizer, context, AclOperation.DESCRIBE, topic)
            if version == 0:
                self._answer_v0(topic, wanted, replica_id, answer)
                return
            self._answer(topic, wanted, replica_id, answer,
                         version >= 2 and request["isolation_level"] == READ_COMMITTED,
                         wanted["current_leader_epoch"] if version >= 4 else -1)

        topics = _answer_each_partition(
            "ListOffsets", [(t["name"], t["partitions"]) for t in request["topics"]],
            blank, fill)
        return {"throttle_time_ms": 0,
                "topics": [{"name": name, "partitions": parts} for name, parts in topics]}

    def _answer(self, topic: str, wanted: ListOffsetsRequestTopicsPartitions, replica_id: int,
                answer: ListOffsetsResponseTopicsPartitions, read_committed: bool = False,
                current_leader_epoch: int = -1) -> None:
        partition = self.leaders.leader_partition(topic, wanted["partition_index"])
        partition.check_leader_epoch(current_leader_epoch)
        timestamp = wanted["timestamp"]
        if timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
            answer["offset"] = partition.log_start_offset
        elif timestamp == LATEST_TIERED_TIMESTAMP:
            return  # nothing tiered: offset -1, timestamp -1, leader epoch -1
        elif timestamp == LATEST_TIMESTAMP:
            answer["offset"] = (partition.log_end_offset if replica_id >= 0
                                else partition.last_stable_offset if read_committed
                                else partition.high_watermark)
        elif timestamp < 0 and timestamp != MAX_TIMESTAMP:
            raise error_for(ErrorCode.INVALID_REQUEST,
                             f"timestamp {timestamp} is not -1 to -5 or a time")
        else:
            found = partition.log.find_offset_by_timestamp(timestamp)
            visible_end = (partition.last_stable_offset if read_committed
                           else partition.high_watermark)
            if found is None or found.offset >= visible_end:
                return  # no such record (yet): offset -1, timestamp -1
            answer["offset"] = found.offset
            answer["timestamp"] = found.timestamp
        answer["leader_epoch"] = partition.leader_epoch


    def _answer_v0(self, topic: str, wanted: ListOffsetsRequestTopicsPartitions,
                   replica_id: int, answer: ListOffsetsResponseTopicsPartitions) -> None:
        """Version 0 (Kafka's ``legacyFetchOffsetsBefore``): up to ``max_num_offsets``
        segment boundaries, newest first. Each segment stands for its base offset (at least
        the log start) and its file's modification time, the log end for now; -1 (latest)
        starts from the end, -2 (earliest) from the first segment, a time from the newest
        boundary not younger than it. A consumer (replica id -1) never sees an offset past
        the high watermark: the high watermark stands first instead."""
        timestamp = wanted["timestamp"]
        if timestamp < EARLIEST_TIMESTAMP:
            raise error_for(ErrorCode.UNSUPPORTED_VERSION,
                            f"timestamp {timestamp} needs ListOffsets v1+")
        partition = self.leaders.leader_partition(topic, wanted["partition_index"])
        log_ = partition.log
        start = partition.log_start_offset
        segments = list(log_.segments)
        boundaries = [(max(seg.base_offset, start), _mtime_ms(seg)) for seg in segments]
        if segments and segments[-1].size > 0:
            boundaries.append((log_.log_end_offset, int(time.time() * 1000)))
        if timestamp == LATEST_TIMESTAMP:
            index = len(boundaries) - 1
        elif timestamp == EARLIEST_TIMESTAMP:
            index = 0
        else:
            index = len(boundaries) - 1
            while index >= 0 and boundaries[index][1] > timestamp:
                index -= 1
        count = max(0, min(wanted["max_num_offsets"], index + 1))
        offsets = sorted((boundaries[index - j][0] for j in range(count)), reverse=True)
        if replica_id == -1:
            high_watermark = partition.high_watermark
            if any(o > high_watermark for o in offsets):
                offsets = [high_watermark] + [o for o in offsets if o <= high_watermark]
        answer["old_style_offsets"] = offsets


def _mtime_ms(segment: LogSegment) -> int:
    try:
        return int(os.stat(segment.log_path).st_mtime * 1000)
    except OSError:
        return int(time.time() * 1000)


class OffsetForLeaderEpochHandler:
    """ApiKey.OFFSET_FOR_LEADER_EPOCH: where an epoch ended in this leader's log."""

    def __init__(self, leaders: Leaders, authorizer: Authorizer = ALLOW_EVERYONE):
        self.leaders = leaders
        self.authorizer = authorizer

    def __call__(self, context: RequestContext, request: OffsetForLeaderEpochRequest
                 ) -> OffsetForLeaderEpochResponse:
        version = context.api_version
        # v0-2 have no replica id: -2, Kafka's "debug consumer", as a v3+ default.
        replica_id = request["replica_id"] if version >= 3 else -2
        operation = AclOperation.CLUSTER_ACTION if replica_id >= 0 else AclOperation.DESCRIBE

        def blank(wanted: OffsetForLeaderEpochRequestTopicsPartitions
                  ) -> OffsetForLeaderEpochResponseTopicsPartitions:
            return {"error_code": ErrorCode.NONE, "partition": wanted["partition"],
                    "leader_epoch": -1, "end_offset": -1}

        def fill(topic: str, wanted: OffsetForLeaderEpochRequestTopicsPartitions,
                 answer: OffsetForLeaderEpochResponseTopicsPartitions) -> None:
            _check(self.authorizer, context, operation, topic)
            partition = self.leaders.leader_partition(topic, wanted["partition"])
            partition.check_leader_epoch(wanted["current_leader_epoch"] if version >= 2 else -1)
            epoch, end = partition.log.leader_epochs.end_offset_for(wanted["leader_epoch"])
            answer["leader_epoch"] = epoch  # not on the wire in v0
            answer["end_offset"] = end

        topics = _answer_each_partition(
            "OffsetForLeaderEpoch", [(t["topic"], t["partitions"]) for t in request["topics"]],
            blank, fill, storage_errors=False)
        return {"throttle_time_ms": 0,
                "topics": [{"topic": name, "partitions": parts} for name, parts in topics]}


class DeleteRecordsHandler:
    """ApiKey.DELETE_RECORDS: move each partition's log start offset; answer the low watermark.

    As Kafka: the answer waits until every in-sync replica's log starts at the
    new offset (at most ``timeout_ms``, then REQUEST_TIMED_OUT).
    """

    def __init__(self, replica_manager: RecordDeleter, authorizer: Authorizer = ALLOW_EVERYONE):
        self.replica_manager = replica_manager
        self.authorizer = authorizer

    def __call__(self, context: RequestContext, request: DeleteRecordsRequest
                 ) -> DeleteRecordsResponse | defer.Deferred:
        waits: list[defer.Deferred] = []

        def blank(wanted: DeleteRecordsRequestTopicsPartitions
                  ) -> DeleteRecordsResponseTopicsPartitions:
            return {"partition_index": wanted["partition_index"], "low_watermark": -1,
                    "error_code": ErrorCode.NONE}

        def fill(topic: str, wanted: DeleteRecordsRequestTopicsPartitions,
                 answer: DeleteRecordsResponseTopicsPartitions) -> None:
            _check(self.authorizer, context, AclOperation.DELETE, topic)
            waits.append(self.replica_manager.delete_records(
                topic, wanted["partition_index"], wanted["offset"], request["timeout_ms"]
            ).addCallback(_fill, answer))

        topics = _answer_each_partition(
            "DeleteRecords", [(t["name"], t["partitions"]) for t in request["topics"]],
            blank, fill)
        body: DeleteRecordsResponse = {
            "throttle_time_ms": 0,
            "topics": [{"name": name, "partitions": parts} for name, parts in topics]}
        if all(wait.called for wait in waits):
            return body
        return defer.gatherResults(waits).addCallback(lambda _: body)


def _fill(outcome: tuple[ErrorCode, int], answer: DeleteRecordsResponseTopicsPartitions) -> None:
    answer["error_code"], answer["low_watermark"] = outcome
