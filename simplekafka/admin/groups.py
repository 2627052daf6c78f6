"""Consumer groups seen from outside: list, describe (with lag), delete, reset offsets.

What ``kafka-consumer-groups.sh`` does. Each broker knows only the groups it
coordinates, so listing asks every broker (ListGroups). Describing asks the
group's coordinator (DescribeGroups for members and assignments, OffsetFetch
for committed offsets) and the partition leaders (ListOffsets for the end
offsets); lag is end offset minus committed offset. Deleting (DeleteGroups)
and resetting offsets are refused while the group has members, as in Kafka:
an active member would overwrite the reset with its next commit.
"""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from simplekafka.client.client import Deadline, KafkaClient, wait_for
from simplekafka.client.errors import KafkaError, error_for
from simplekafka.client.group_protocol import decode_assignment, find_coordinator
from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.structs import TopicPartition

EARLIEST = -2
LATEST = -1


@dataclass(frozen=True)
class MemberDescription:
    """One member of a group and the partitions it was assigned."""

    member_id: str
    client_id: str
    client_host: str
    assignment: list[TopicPartition]


@dataclass(frozen=True)
class PartitionOffsets:
    """A partition's committed offset (None: nothing committed), end offset and lag."""

    committed: int | None
    end: int
    lag: int | None


@dataclass(frozen=True)
class GroupDescription:
    """A group's state, members, and offsets of every partition it committed or owns."""

    group_id: str
    state: str
    protocol_type: str
    protocol: str
    coordinator: int
    members: list[MemberDescription]
    offsets: dict[TopicPartition, PartitionOffsets] = field(default_factory=dict)


def list_groups(client: KafkaClient, timeout_ms: int) -> list[tuple[str, str]]:
    """(group id, protocol type) of every group in the cluster, sorted."""
    snapshot = client.refresh_metadata(None, timeout_ms)
    found: set[tuple[str, str]] = set()
    for node in sorted(snapshot.brokers):
        def attempt(deadline: Deadline, node: int = node) -> list:
            answer = client.request(node, ApiKey.LIST_GROUPS, {},
                                    timeout_ms=max(1, int(deadline.remaining() * 1000)))
            if answer.error_code:
                raise error_for(answer.error_code, f"listing the groups of broker {node}")
            return answer.groups

        for group in client.call_with_retries(attempt, timeout_ms):
            found.add((group.group_id, group.protocol_type))
    return sorted(found)


def describe_group(client: KafkaClient, group_id: str, timeout_ms: int) -> GroupDescription:
    """State, members with assignments, committed offsets, end offsets and lag."""
    coordinator = [find_coordinator(client, group_id, timeout_ms)]

    def attempt(deadline: Deadline):
        try:
            answer = client.request(coordinator[0], ApiKey.DESCRIBE_GROUPS,
                                    {"groups": [group_id]},
                                    timeout_ms=max(1, int(deadline.remaining() * 1000)))
        except KafkaError:
            coordinator[0] = find_coordinator(client, group_id, timeout_ms)
            raise
        described = answer.groups[0]
        if described.error_code in (ErrorCode.NOT_COORDINATOR,
                                    ErrorCode.COORDINATOR_NOT_AVAILABLE):
            coordinator[0] = find_coordinator(client, group_id, timeout_ms)
        if described.error_code:
            raise error_for(described.error_code, f"describing group {group_id!r}")
        return described

    described = client.call_with_retries(attempt, timeout_ms)
    members = []
    for m in described.members:
        try:
            assignment = decode_assignment(m.member_assignment)
        except ValueError:
            assignment = []
        members.append(MemberDescription(m.member_id, m.client_id, m.client_host, assignment))
    committed = fetch_offsets(client, coordinator[0], group_id, None, timeout_ms)
    partitions = set(committed) | {tp for m in members for tp in m.assignment}
    ends = list_offsets(client, {tp: LATEST for tp in partitions}, timeout_ms)
    offsets = {}
    for tp in sorted(partitions):
        done = committed.get(tp)
        end = ends.get(tp, -1)
        offsets[tp] = PartitionOffsets(done, end, None if done is None else max(end - done, 0))
    return GroupDescription(group_id, described.group_state, described.protocol_type,
                            described.protocol_data, coordinator[0], members, offsets)


def fetch_offsets(client: KafkaClient, coordinator: int, group_id: str,
                  partitions: Iterable[TopicPartition] | None,
                  timeout_ms: int) -> dict[TopicPartition, int]:
    """Committed offsets (all the group has, if ``partitions`` is None)."""
    topics = None
    if partitions is not None:
        wanted: dict[str, list[int]] = {}
        for tp in partitions:
            wanted.setdefault(tp.topic, []).append(tp.partition)
        topics = [{"name": t, "partition_indexes": p} for t, p in wanted.items()]
    answer = client.request(coordinator, ApiKey.OFFSET_FETCH,
                            {"group_id": group_id, "topics": topics}, timeout_ms=timeout_ms)
    if getattr(answer, "error_code", 0):
        raise error_for(answer.error_code, f"fetching the offsets of {group_id!r}")
    return {TopicPartition(t.name, p.partition_index): p.committed_offset
            for t in answer.topics for p in t.partitions if p.committed_offset >= 0}


def list_offsets(client: KafkaClient, wanted: dict[TopicPartition, int],
                 timeout_ms: int) -> dict[TopicPartition, int]:
    """Offsets by timestamp (EARLIEST, LATEST) from each partition's leader.

    The requests to different leaders are in flight together.
    """
    result: dict[TopicPartition, int] = {}

    def attempt(deadline: Deadline) -> dict[TopicPartition, int]:
        per_leader: dict[int, list[TopicPartition]] = {}
        for tp in wanted:
            if tp not in result:
                leader = client.leader_for(tp.topic, tp.partition,
                                           max(1, int(deadline.remaining() * 1000)))
                per_leader.setdefault(leader, []).append(tp)
        sent = [_send_list_offsets(client, leader, {tp: wanted[tp] for tp in tps}, deadline)
                for leader, tps in per_leader.items()]
        for future in sent:
            _read_list_offsets(wait_for(future, deadline.remaining() + 1.0), result)
        return result

    return client.call_with_retries(attempt, timeout_ms)


def list_offset_ranges(client: KafkaClient, partitions: Iterable[TopicPartition],
                       timeout_ms: int) -> tuple[dict[TopicPartition, int],
                                                 dict[TopicPartition, int]]:
    """(earliest, latest) offsets of ``partitions``: both asked of every leader at once.

    One round trip instead of two (a ListOffsets request may name a partition
    only once, so the two ends are two requests, sent together).
    """
    earliest: dict[TopicPartition, int] = {}
    latest: dict[TopicPartition, int] = {}
    wanted = list(partitions)

    def attempt(deadline: Deadline) -> tuple[dict, dict]:
        per_leader: dict[int, list[TopicPartition]] = {}
        for tp in wanted:
            if tp not in earliest or tp not in latest:
                leader = client.leader_for(tp.topic, tp.partition,
                                           max(1, int(deadline.remaining() * 1000)))
                per_leader.setdefault(leader, []).append(tp)
        sent = [(into, _send_list_offsets(client, leader, dict.fromkeys(tps, timestamp),
                                          deadline))
                for leader, tps in per_leader.items()
                for into, timestamp in ((earliest, EARLIEST), (latest, LATEST))]
        for into, future in sent:
            _read_list_offsets(wait_for(future, deadline.remaining() + 1.0), into)
        return earliest, latest

    return client.call_with_retries(attempt, timeout_ms)


def _send_list_offsets(client: KafkaClient, leader: int, wanted: dict[TopicPartition, int],
                       deadline: Deadline) -> Future:
    topics: dict[str, list[dict]] = {}
    for tp, timestamp in wanted.items():
        topics.setdefault(tp.topic, []).append(
            {"partition_index": tp.partition, "current_leader_epoch": -1,
             "timestamp": timestamp})
    return client.send(leader, ApiKey.LIST_OFFSETS, {
        "replica_id": -1, "isolation_level": 0,
        "topics": [{"name": t, "partitions": p} for t, p in topics.items()]},
        timeout_ms=max(1, int(deadline.remaining() * 1000)))


def _read_list_offsets(answer: Any, into: dict[TopicPartition, int]) -> None:
    for topic in answer.topics:
        for part in topic.partitions:
            if part.error_code:
                raise error_for(part.error_code, f"{topic.name}-{part.partition_index}")
            into[TopicPartition(topic.name, part.partition_index)] = part.offset


def delete_groups(client: KafkaClient, group_ids: Iterable[str], timeout_ms: int) -> None:
    """Delete empty groups and their committed offsets (NON_EMPTY_GROUP if one has members)."""
    for group_id in group_ids:
        def attempt(deadline: Deadline, group_id: str = group_id) -> None:
            node = find_coordinator(client, group_id, max(1, int(deadline.remaining() * 1000)))
            answer = client.request(node, ApiKey.DELETE_GROUPS, {"groups_names": [group_id]},
                                    timeout_ms=max(1, int(deadline.remaining() * 1000)))
            code = answer.results[0].error_code
            if code:
                raise error_for(code, f"deleting group {group_id!r}")

        client.call_with_retries(attempt, timeout_ms)


def reset_offsets(client: KafkaClient, group_id: str, topic: str, to: str | int,
                  partitions: Iterable[int] | None, timeout_ms: int) -> dict[TopicPartition, int]:
    """Commit ``to`` (``"earliest"``, ``"latest"`` or an offset) for the group's partitions.

    Refused (NonEmptyGroupError) while the group has members. Returns what was committed.
    """
    description = describe_group(client, group_id, timeout_ms)
    if description.members:
        raise error_for(ErrorCode.NON_EMPTY_GROUP,
                        f"group {group_id!r} has {len(description.members)} active members; "
                        "stop them before resetting offsets")
    known = client.partitions_for(topic, timeout_ms)
    indexes = sorted(known if partitions is None else set(partitions))
    missing = [p for p in indexes if p not in known]
    if missing:
        raise error_for(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                        f"topic {topic!r} has no partition {missing[0]}")
    tps = [TopicPartition(topic, p) for p in indexes]
    if isinstance(to, int):
        if to < 0:
            raise ValueError(f"an offset to reset to must be 0 or more, not {to}")
        starts = list_offsets(client, {tp: EARLIEST for tp in tps}, timeout_ms)
        ends = list_offsets(client, {tp: LATEST for tp in tps}, timeout_ms)
        targets = {tp: min(max(to, starts[tp]), ends[tp]) for tp in tps}
    elif to in ("earliest", "latest"):
        targets = list_offsets(client, {tp: EARLIEST if to == "earliest" else LATEST
                                         for tp in tps}, timeout_ms)
    else:
        raise ValueError(f"reset to 'earliest', 'latest' or an offset, not {to!r}")
    body = {"group_id": group_id, "generation_id_or_member_epoch": -1, "member_id": "",
            "retention_time_ms": -1,
            "topics": [{"name": topic, "partitions": [
                {"partition_index": tp.partition, "committed_offset": offset,
                 "committed_leader_epoch": -1, "commit_timestamp": -1,
                 "committed_metadata": ""} for tp, offset in sorted(targets.items())]}]}

    def attempt(deadline: Deadline) -> None:
        node = find_coordinator(client, group_id, max(1, int(deadline.remaining() * 1000)))
        answer = client.request(node, ApiKey.OFFSET_COMMIT, body,
                                timeout_ms=max(1, int(deadline.remaining() * 1000)))
        for t in answer.topics:
            for p in t.partitions:
                if p.error_code:
                    raise error_for(p.error_code, f"resetting {t.name}-{p.partition_index}")

    client.call_with_retries(attempt, timeout_ms)
    return targets
