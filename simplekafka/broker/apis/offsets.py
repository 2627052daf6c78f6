"""ListOffsets, OffsetForLeaderEpoch, DeleteRecords: where a partition starts and ends.

ListOffsets answers the earliest offset (timestamp -2), the latest one a
consumer may read (-1, the high watermark) or the first offset whose record
timestamp is at or after a given time, or (-3, KIP-734) the first record with
the largest timestamp. OffsetForLeaderEpoch answers where a
leader epoch ended in this leader's log; clients use it to check their position
after a leader change, followers to know where to truncate (KIP-101).
DeleteRecords moves where a partition starts (KIP-107).
"""

from __future__ import annotations

import logging
from typing import Any

from twisted.internet import defer

from simplekafka.broker.apis.collaborators import Leaders, RecordDeleter
from simplekafka.broker.dispatch import RequestContext
from simplekafka.protocol.errors import ErrorCode, KafkaError, error_for

log = logging.getLogger(__name__)

LATEST = -1
EARLIEST = -2
MAX_TIMESTAMP = -3  # v7 (KIP-734): the record with the largest timestamp


class ListOffsetsHandler:
    """ApiKey.LIST_OFFSETS: earliest, latest, or by timestamp, per partition."""

    def __init__(self, leaders: Leaders):
        self.leaders = leaders

    def __call__(self, context: RequestContext, request: Any) -> dict:
        topics = []
        for topic in request.topics:
            partitions = []
            for wanted in topic.partitions:
                answer = {"partition_index": wanted.partition_index,
                          "error_code": ErrorCode.NONE, "timestamp": -1, "offset": -1,
                          "leader_epoch": -1, "old_style_offsets": []}
                try:
                    self._answer(topic.name, wanted, request.replica_id, answer)
                except KafkaError as exc:
                    answer["error_code"] = exc.error_code
                except Exception:
                    log.exception("ListOffsets on %s-%d failed", topic.name,
                                  wanted.partition_index)
                    answer["error_code"] = ErrorCode.KAFKA_STORAGE_ERROR
                partitions.append(answer)
            topics.append({"name": topic.name, "partitions": partitions})
        return {"throttle_time_ms": 0, "topics": topics}

    def _answer(self, topic: str, wanted: Any, replica_id: int, answer: dict) -> None:
        partition = self.leaders.leader_partition(topic, wanted.partition_index)
        partition.check_leader_epoch(getattr(wanted, "current_leader_epoch", -1))
        if wanted.timestamp == EARLIEST:
            answer["offset"] = partition.log_start_offset
        elif wanted.timestamp == LATEST:
            answer["offset"] = (partition.log_end_offset if replica_id >= 0
                                else partition.high_watermark)
        elif wanted.timestamp < 0 and wanted.timestamp != MAX_TIMESTAMP:
            raise error_for(ErrorCode.INVALID_REQUEST,
                             f"timestamp {wanted.timestamp} is not -1, -2, -3 or a time")
        else:
            found = partition.log.find_offset_by_timestamp(wanted.timestamp)
            if found is None or found.offset >= partition.high_watermark:
                return  # no such record (yet): offset -1, timestamp -1
            answer["offset"] = found.offset
            answer["timestamp"] = found.timestamp
        answer["leader_epoch"] = partition.leader_epoch


class OffsetForLeaderEpochHandler:
    """ApiKey.OFFSET_FOR_LEADER_EPOCH: where an epoch ended in this leader's log."""

    def __init__(self, leaders: Leaders):
        self.leaders = leaders

    def __call__(self, context: RequestContext, request: Any) -> dict:
        topics = []
        for topic in request.topics:
            partitions = []
            for wanted in topic.partitions:
                answer = {"error_code": ErrorCode.NONE, "partition": wanted.partition,
                          "leader_epoch": -1, "end_offset": -1}
                try:
                    partition = self.leaders.leader_partition(topic.topic, wanted.partition)
                    partition.check_leader_epoch(wanted.current_leader_epoch)
                    epoch, end = partition.log.leader_epochs.end_offset_for(wanted.leader_epoch)
                    answer["leader_epoch"] = epoch
                    answer["end_offset"] = end
                except KafkaError as exc:
                    answer["error_code"] = exc.error_code
                partitions.append(answer)
            topics.append({"topic": topic.topic, "partitions": partitions})
        return {"throttle_time_ms": 0, "topics": topics}


class DeleteRecordsHandler:
    """ApiKey.DELETE_RECORDS: move each partition's log start offset; answer the low watermark.

    As Kafka: the answer waits until every in-sync replica's log starts at the
    new offset (at most ``timeout_ms``, then REQUEST_TIMED_OUT).
    """

    def __init__(self, replica_manager: RecordDeleter):
        self.replica_manager = replica_manager

    def __call__(self, context: RequestContext, request: Any) -> dict | defer.Deferred:
        topics = []
        waits = []
        for topic in request.topics:
            partitions = []
            for wanted in topic.partitions:
                answer = {"partition_index": wanted.partition_index, "low_watermark": -1,
                          "error_code": ErrorCode.NONE}
                try:
                    waits.append(self.replica_manager.delete_records(
                        topic.name, wanted.partition_index, wanted.offset, request.timeout_ms
                    ).addCallback(_fill, answer))
                except KafkaError as exc:
                    answer["error_code"] = exc.error_code
                except Exception:
                    log.exception("DeleteRecords on %s-%d failed", topic.name,
                                  wanted.partition_index)
                    answer["error_code"] = ErrorCode.KAFKA_STORAGE_ERROR
                partitions.append(answer)
            topics.append({"name": topic.name, "partitions": partitions})
        body = {"throttle_time_ms": 0, "topics": topics}
        if all(wait.called for wait in waits):
            return body
        return defer.gatherResults(waits).addCallback(lambda _: body)


def _fill(outcome: tuple[ErrorCode, int], answer: dict) -> None:
    answer["error_code"], answer["low_watermark"] = outcome
