"""The "consumer" group protocol's bytes, and finding a group's coordinator.

Every Kafka client puts the same bytes in JoinGroup's protocol metadata and in
SyncGroup's assignments (``ConsumerProtocolSubscription`` and
``ConsumerProtocolAssignment``, version 0), which is what lets a group mix
clients::

    subscription: int16 version, [string topic], bytes user_data
                  (v1+: [string topic, [int32 partition]] owned_partitions, KIP-429)
    assignment:   int16 version, [string topic, [int32 partition]], bytes user_data

The consumer (to join) and the admin client (to describe groups) both need
them, so they live here, below both.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import NamedTuple

from simplekafka.client.client import Deadline, KafkaClient
from simplekafka.client.errors import error_for
from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.structs import TopicPartition

PROTOCOL_TYPE = "consumer"


class Subscription(NamedTuple):
    """What one member asked for: its topics, and assignor-specific user data.

    ``owned_partitions`` (version 1, KIP-429) is what the member holds now, which a
    cooperative assignor needs; None writes version 0.
    """

    topics: list[str]
    user_data: bytes = b""
    owned_partitions: tuple[TopicPartition, ...] | None = None


def _string(text: str) -> bytes:
    raw = text.encode("utf-8")
    return struct.pack(">h", len(raw)) + raw


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = bytes(data or b"")
        self.pos = 0

    def take(self, fmt: str) -> tuple:
        values = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return values

    def string(self) -> str:
        (length,) = self.take(">h")
        raw = self.data[self.pos:self.pos + max(length, 0)]
        self.pos += max(length, 0)
        return raw.decode("utf-8", errors="replace")

    def bytes_(self) -> bytes:
        if self.pos + 4 > len(self.data):
            return b""
        (length,) = self.take(">i")
        raw = self.data[self.pos:self.pos + max(length, 0)]
        self.pos += max(length, 0)
        return raw


def encode_subscription(subscription: Subscription) -> bytes:
    topics = sorted(subscription.topics)
    owned = subscription.owned_partitions
    encoded = (struct.pack(">hi", 0 if owned is None else 1, len(topics))
               + b"".join(_string(t) for t in topics)
               + struct.pack(">i", len(subscription.user_data)) + subscription.user_data)
    return encoded if owned is None else encoded + encode_partitions(owned)


def decode_subscription(data: bytes) -> Subscription:
    """A member's subscription (v1's owned partitions read; later fields ignored)."""
    try:
        reader = _Reader(data)
        version, count = reader.take(">hi")
        topics = [reader.string() for _ in range(max(count, 0))]
        user_data = reader.bytes_()
        owned = None
        if version >= 1 and reader.pos + 4 <= len(reader.data):
            owned = tuple(decode_partitions_from(reader))
        return Subscription(topics, user_data, owned)
    except struct.error:
        raise ValueError("subscription metadata is truncated") from None


def encode_partitions(partitions: Iterable[TopicPartition]) -> bytes:
    """``[string topic, [int32 partition]]``: the shape of an assignment's body."""
    by_topic: dict[str, list[int]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    parts = [struct.pack(">i", len(by_topic))]
    for topic in sorted(by_topic):
        indexes = sorted(by_topic[topic])
        parts += [_string(topic), struct.pack(f">i{len(indexes)}i", len(indexes), *indexes)]
    return b"".join(parts)


def decode_partitions_from(reader: _Reader) -> list[TopicPartition]:
    (count,) = reader.take(">i")
    out = []
    for _ in range(max(count, 0)):
        topic = reader.string()
        (n,) = reader.take(">i")
        out += [TopicPartition(topic, p) for p in reader.take(f">{max(n, 0)}i")]
    return out


def encode_assignment(partitions: Iterable[TopicPartition], user_data: bytes = b"") -> bytes:
    return (struct.pack(">h", 0) + encode_partitions(partitions)
            + struct.pack(">i", len(user_data)) + user_data)


def decode_assignment(data: bytes) -> list[TopicPartition]:
    """The partitions in an assignment (empty bytes: nothing assigned)."""
    if not data:
        return []
    try:
        reader = _Reader(data)
        reader.take(">h")
        return sorted(decode_partitions_from(reader))
    except struct.error:
        raise ValueError("assignment is truncated") from None


def decode_partitions(data: bytes) -> list[TopicPartition]:
    """``[string topic, [int32 partition]]`` bytes (as sticky user data) back to partitions."""
    return sorted(decode_partitions_from(_Reader(data)))


def find_coordinator(client: KafkaClient, group_id: str, timeout_ms: int) -> int:
    """The node id coordinating ``group_id`` (FindCoordinator, retried until the timeout)."""

    def attempt(deadline: Deadline) -> int:
        answer = client.request(
            client.least_loaded_node(), ApiKey.FIND_COORDINATOR,
            {"key": group_id, "key_type": 0},
            timeout_ms=max(1, int(deadline.remaining() * 1000)))
        if answer.error_code:
            raise error_for(answer.error_code, f"finding the coordinator of {group_id!r}")
        if client.metadata.broker(answer.node_id) is None:
            client.refresh_metadata(None, max(200, int(deadline.remaining() * 1000)))
        return answer.node_id

    return client.call_with_retries(attempt, timeout_ms)
