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
from dataclasses import dataclass, field

from simplekafka.client.client import Deadline, KafkaClient
from simplekafka.client.errors import KafkaError, error_for
from simplekafka.client.group_protocol import decode_assignment, find_coordinator
from simplekafka.client.offsets import (
    committed_offsets,
    list_offsets,
    offset_fetch_request,
)
from simplekafka.client.offsets import list_offset_ranges as list_offset_ranges  # re-exported
from simplekafka.protocol.api import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, ApiKey
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.structs import TopicPartition

EARLIEST = EARLIEST_TIMESTAMP
LATEST = LATEST_TIMESTAMP


@dataclass(frozen=True)
class MemberDescription:
    """One member of a group and the partitions it was assigned."""

    member_id: str
    client_id: str
    client_host: str
    assignment: list[TopicPartition]
    group_instance_id: str | None = None  # a static member's name (KIP-345)


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
        members.append(MemberDescription(m.member_id, m.client_id, m.client_host, assignment,
                                         getattr(m, "group_instance_id", None)))
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
    answer = client.request(coordinator, ApiKey.OFFSET_FETCH,
                            offset_fetch_request(group_id, partitions), timeout_ms=timeout_ms)
    return {tp: committed.offset
            for tp, committed in committed_offsets(answer, group_id).items() if committed}


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
