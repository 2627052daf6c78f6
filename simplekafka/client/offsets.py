"""The offset look-ups that the consumer, the admin and the Spark source all make.

ListOffsets goes to each partition's leader (one request per leader, sent
together), with retries when leadership moves; OffsetFetch asks a group's
coordinator for its committed offsets. Written once here, in the client
layer, so the consumer and the admin cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Iterable

from simplekafka.client.client import Deadline, KafkaClient, wait_for
from simplekafka.client.errors import KafkaError, error_for
from simplekafka.protocol.api import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, ApiKey
from simplekafka.protocol.fields import Struct
from simplekafka.protocol.message_types import OffsetFetchRequest, OffsetFetchRequestTopics
from simplekafka.protocol.structs import OffsetAndMetadata, TopicPartition


def list_offsets(client: KafkaClient, wanted: dict[TopicPartition, int], timeout_ms: int,
                 isolation_level: int = 0) -> dict[TopicPartition, int]:
    """The offset for each partition's timestamp (EARLIEST_TIMESTAMP, LATEST_TIMESTAMP or ms).

    -1 where no record is that late. The requests to different leaders are in
    flight together; partitions already answered are not asked again when a
    retry follows a leader change.
    """
    return _ask_leaders(client, [wanted], timeout_ms, isolation_level)[0]


def list_offset_ranges(client: KafkaClient, partitions: Iterable[TopicPartition],
                       timeout_ms: int) -> tuple[dict[TopicPartition, int],
                                                 dict[TopicPartition, int]]:
    """(earliest, latest) offsets of ``partitions``: both asked of every leader at once.

    One round trip instead of two (a ListOffsets request may name a partition
    only once, so the two ends are two requests, sent together).
    """
    wanted = list(partitions)
    earliest, latest = _ask_leaders(client, [dict.fromkeys(wanted, EARLIEST_TIMESTAMP),
                                             dict.fromkeys(wanted, LATEST_TIMESTAMP)],
                                    timeout_ms)
    return earliest, latest


def _ask_leaders(client: KafkaClient, asks: list[dict[TopicPartition, int]], timeout_ms: int,
                 isolation_level: int = 0) -> list[dict[TopicPartition, int]]:
    """One ListOffsets per leader and per ask, all in flight together, with retries."""
    results: list[dict[TopicPartition, int]] = [{} for _ in asks]

    def attempt(deadline: Deadline) -> list[dict[TopicPartition, int]]:
        sent = []
        for ask, result in zip(asks, results):
            per_leader: dict[int, dict[str, list[dict[str, int]]]] = {}
            for tp, timestamp in ask.items():
                if tp in result:
                    continue
                leader = client.leader_for(tp.topic, tp.partition,
                                           max(1, int(deadline.remaining() * 1000)))
                per_leader.setdefault(leader, {}).setdefault(tp.topic, []).append(
                    {"partition_index": tp.partition, "current_leader_epoch": -1,
                     "timestamp": timestamp})
            sent += [(result, client.send(leader, ApiKey.LIST_OFFSETS, {
                "replica_id": -1, "isolation_level": isolation_level,
                "topics": [{"name": t, "partitions": p} for t, p in topics.items()]},
                timeout_ms=max(1, int(deadline.remaining(timeout_ms / 1000) * 1000))))
                for leader, topics in per_leader.items()]
        first_error: KafkaError | None = None
        for result, future in sent:
            answer = wait_for(future, deadline.remaining(timeout_ms / 1000) + 1)
            for topic in answer.topics:
                for part in topic.partitions:
                    tp = TopicPartition(topic.name, part.partition_index)
                    if part.error_code:
                        first_error = first_error or error_for(
                            part.error_code, f"listing offsets of {tp}")
                    else:
                        result[tp] = part.offset
        if first_error is not None:
            raise first_error
        return results

    return client.call_with_retries(attempt, timeout_ms)


def offset_fetch_request(group_id: str,
                         partitions: Iterable[TopicPartition] | None) -> OffsetFetchRequest:
    """An OffsetFetch body for ``partitions`` (None: every partition the group committed)."""
    topics: list[OffsetFetchRequestTopics] | None = None
    if partitions is not None:
        wanted: dict[str, list[int]] = {}
        for tp in partitions:
            wanted.setdefault(tp.topic, []).append(tp.partition)
        topics = [{"name": t, "partition_indexes": p} for t, p in wanted.items()]
    return {"group_id": group_id, "require_stable": False, "topics": topics}


def committed_offsets(answer: Struct, group_id: str
                      ) -> dict[TopicPartition, OffsetAndMetadata | None]:
    """The committed offsets in an OffsetFetch answer (None where nothing is committed).

    Raises the named error of the answer's top-level or first partition error.
    """
    if getattr(answer, "error_code", 0):
        raise error_for(answer.error_code, f"fetching the offsets of group {group_id!r}")
    found: dict[TopicPartition, OffsetAndMetadata | None] = {}
    for topic in answer.topics:
        for part in topic.partitions:
            tp = TopicPartition(topic.name, part.partition_index)
            if part.error_code:
                raise error_for(part.error_code, f"fetching the offset of {tp} for {group_id!r}")
            epoch = getattr(part, "committed_leader_epoch", -1)
            found[tp] = (OffsetAndMetadata(part.committed_offset, part.metadata or "", epoch)
                         if part.committed_offset >= 0 else None)
    return found


__all__ = ["EARLIEST_TIMESTAMP", "LATEST_TIMESTAMP", "committed_offsets", "list_offset_ranges",
           "list_offsets", "offset_fetch_request"]
