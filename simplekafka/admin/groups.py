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

import datetime
import re
from collections.abc import Iterable, Mapping
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


@dataclass(frozen=True)
class ResetTarget:
    """Where a reset moves each partition: Kafka's ``--to-earliest``, ``--to-latest``,
    ``--to-offset N`` ("offset"), ``--to-datetime``/``--by-duration`` ("timestamp", ms since
    the epoch), ``--shift-by N`` ("shift"), ``--to-current``, or ``--from-file``
    ("explicit": ``offsets`` per partition)."""

    kind: str
    value: int = 0
    offsets: Mapping[TopicPartition, int] | None = None

    KINDS = ("earliest", "latest", "offset", "timestamp", "shift", "current", "explicit")

    def __post_init__(self) -> None:
        if self.kind not in self.KINDS:
            raise ValueError(f"reset to one of {', '.join(self.KINDS)}, not {self.kind!r}")
        if self.kind == "offset" and self.value < 0:
            raise ValueError(f"an offset to reset to must be 0 or more, not {self.value}")


class ResetPlanError(ValueError):
    """The target cannot be computed for a partition (a shift without a committed offset)."""


def plan_reset(client: KafkaClient, group: GroupDescription,
               partitions: Iterable[TopicPartition], target: ResetTarget,
               timeout_ms: int) -> dict[TopicPartition, int]:
    """The new offset of every partition, each moved inside its log as Kafka's tool does.

    The one planner of ``simplekafka groups reset-offsets``, ``Admin.reset_offsets`` and
    the console's reset; it asks only ListOffsets and changes nothing. A time with no
    record at or after it gives the log end offset.
    """
    partitions = sorted(set(partitions))
    if not partitions:
        return {}
    committed = {tp: o.committed for tp, o in group.offsets.items() if o.committed is not None}
    earliest, latest = list_offset_ranges(client, partitions, timeout_ms)
    if target.kind == "earliest":
        requested = earliest
    elif target.kind == "latest":
        requested = latest
    elif target.kind == "offset":
        requested = dict.fromkeys(partitions, target.value)
    elif target.kind == "timestamp":
        # a time before 1970 is 0: negative timestamps mean EARLIEST/LATEST on the wire
        found = list_offsets(client, dict.fromkeys(partitions, max(0, target.value)),
                             timeout_ms)
        requested = {tp: latest[tp] if found.get(tp, -1) < 0 else found[tp]
                     for tp in partitions}
    elif target.kind == "shift":
        missing = [tp for tp in partitions if tp not in committed]
        if missing:
            raise ResetPlanError(f"cannot shift the offset of {missing[0].topic}-"
                                 f"{missing[0].partition}: the group has no committed offset "
                                 "there")
        requested = {tp: committed[tp] + target.value for tp in partitions}
    elif target.kind == "current":
        requested = {tp: committed.get(tp, latest[tp]) for tp in partitions}
    else:
        requested = dict(target.offsets or {})
    return {tp: min(max(requested[tp], earliest[tp]), latest[tp]) for tp in partitions}


def commit_offsets(client: KafkaClient, group_id: str, offsets: Mapping[TopicPartition, int],
                   timeout_ms: int) -> None:
    """OffsetCommit from outside the group (generation -1, no member id), as Kafka's tool
    does for an inactive group."""
    if not offsets:
        return
    by_topic: dict[str, list[tuple[int, int]]] = {}
    for tp, offset in sorted(offsets.items()):
        by_topic.setdefault(tp.topic, []).append((tp.partition, offset))
    body = {"group_id": group_id, "generation_id_or_member_epoch": -1, "member_id": "",
            "retention_time_ms": -1,
            "topics": [{"name": topic, "partitions": [
                {"partition_index": p, "committed_offset": offset, "committed_leader_epoch": -1,
                 "commit_timestamp": -1, "committed_metadata": ""} for p, offset in parts]}
                for topic, parts in by_topic.items()]}

    def attempt(deadline: Deadline) -> None:
        node = find_coordinator(client, group_id, max(1, int(deadline.remaining() * 1000)))
        answer = client.request(node, ApiKey.OFFSET_COMMIT, body,
                                timeout_ms=max(1, int(deadline.remaining() * 1000)))
        for topic in answer.topics:
            for p in topic.partitions:
                if p.error_code:
                    raise error_for(p.error_code,
                                    f"committing {topic.name}-{p.partition_index}")

    client.call_with_retries(attempt, timeout_ms)


def reset_offsets(client: KafkaClient, group_id: str, topic: str, to: str | int,
                  partitions: Iterable[int] | None, timeout_ms: int) -> dict[TopicPartition, int]:
    """Commit ``to`` (``"earliest"``, ``"latest"`` or an offset) for the group's partitions.

    Refused (NonEmptyGroupError) while the group has members. Returns what was committed.
    """
    if isinstance(to, int):
        target = ResetTarget("offset", to)
    elif to in ("earliest", "latest"):
        target = ResetTarget(to)
    else:
        raise ValueError(f"reset to 'earliest', 'latest' or an offset, not {to!r}")
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
    targets = plan_reset(client, description, [TopicPartition(topic, p) for p in indexes],
                         target, timeout_ms)
    commit_offsets(client, group_id, targets, timeout_ms)
    return targets


_DURATION = re.compile(
    r"P(?:(?P<days>\d+)D)?"
    r"(?:T(?=\d)(?:(?P<hours>\d+)H)?(?:(?P<minutes>\d+)M)?(?:(?P<seconds>\d+(?:[.,]\d+)?)S)?)?",
    re.IGNORECASE)


def parse_datetime(text: str) -> int:
    """Milliseconds since the epoch of an ISO 8601 time (local time if it names no zone,
    as Kafka's tool reads one); ValueError if it is not one."""
    value = text.strip()
    if value.endswith(("Z", "z")):
        value = value[:-1] + "+00:00"
    try:
        moment = datetime.datetime.fromisoformat(value)
        if moment.tzinfo is None:
            moment = moment.astimezone()
        return int(moment.timestamp() * 1000)
    except (ValueError, OverflowError, OSError):
        raise ValueError(f"expected an ISO 8601 time YYYY-MM-DDTHH:mm:SS.sss (optionally with "
                         f"a zone such as Z or +01:00), not {text!r}") from None


def parse_duration(text: str) -> int:
    """Milliseconds in an ISO 8601 duration as Java's Duration.parse reads it (PnDTnHnMn.nS);
    ValueError if it is not one."""
    found = _DURATION.fullmatch(text.strip())
    if not found or not any(found.groupdict().values()):
        raise ValueError(f"expected an ISO 8601 duration such as PT1H, PT15M or P1DT12H, "
                         f"not {text!r}")
    parts = {k: float((v or "0").replace(",", ".")) for k, v in found.groupdict().items()}
    seconds = (parts["days"] * 86_400 + parts["hours"] * 3_600 + parts["minutes"] * 60
               + parts["seconds"])
    return int(seconds * 1000)
