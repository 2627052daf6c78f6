"""``__consumer_offsets``: which partition holds a group, and the bytes of its records.

A group lives in partition ``abs(java_string_hash(group_id)) % N`` of the
internal topic ``__consumer_offsets`` (N is ``offsets.topic.num.partitions``,
10 by default here, 50 in Kafka); the leader of that partition is the group's
coordinator. Every committed offset and every group's metadata is a record in
that partition, so a broker that becomes its leader rebuilds the groups by
reading it from the start (later records win; a record with a null value, a
tombstone, deletes its key).

The record formats are Kafka's own (``GroupMetadataManager`` in Kafka 2.x), so a
learner can decode our log with Kafka's tools and the other way round:

* offset commit: key ``int16 version=1, string group, string topic, int32
  partition``; value ``int16 version=3, int64 offset, int32 leader_epoch,
  string metadata, int64 commit_timestamp``.
* group metadata: key ``int16 version=2, string group``; value ``int16
  version=3, string protocol_type, int32 generation, nullable string protocol,
  nullable string leader, int64 state_timestamp, members[...]`` where each
  member is ``string member_id, nullable string group_instance_id, string
  client_id, string client_host, int32 rebalance_timeout, int32
  session_timeout, bytes subscription, bytes assignment``.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

OFFSETS_TOPIC = "__consumer_offsets"

OFFSET_KEY_VERSION = 1
GROUP_KEY_VERSION = 2
OFFSET_VALUE_VERSION = 3
GROUP_VALUE_VERSION = 3


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode()``: 31-based over UTF-16 code units, as a signed int32."""
    h = 0
    for unit in struct.unpack(f">{len(text.encode('utf-16-be')) // 2}H",
                              text.encode("utf-16-be")):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def partition_for(group_id: str, num_partitions: int) -> int:
    """The ``__consumer_offsets`` partition of a group (Kafka's ``Utils.abs`` maps MIN to 0)."""
    h = java_string_hash(group_id)
    return (0 if h == -(1 << 31) else abs(h)) % num_partitions


class OffsetKey(NamedTuple):
    group_id: str
    topic: str
    partition: int


class GroupKey(NamedTuple):
    group_id: str


class OffsetValue(NamedTuple):
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int


class MemberValue(NamedTuple):
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes


class GroupValue(NamedTuple):
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    state_timestamp: int
    members: list[MemberValue]


class RecordFormatError(ValueError):
    """A ``__consumer_offsets`` record this code cannot read."""


# -- writing --------------------------------------------------------------------------------

def _string(value: str | None) -> bytes:
    if value is None:
        return b"\xff\xff"
    raw = value.encode("utf-8")
    if len(raw) > 0x7FFF:
        raise ValueError(f"string of {len(raw)} bytes is too long for an int16 length")
    return struct.pack(">h", len(raw)) + raw


def _bytes(value: bytes | None) -> bytes:
    if value is None:
        return b"\xff\xff\xff\xff"
    return struct.pack(">i", len(value)) + bytes(value)


def encode_offset_key(key: OffsetKey) -> bytes:
    return (struct.pack(">h", OFFSET_KEY_VERSION) + _string(key.group_id) + _string(key.topic)
            + struct.pack(">i", key.partition))


def encode_group_key(key: GroupKey) -> bytes:
    return struct.pack(">h", GROUP_KEY_VERSION) + _string(key.group_id)


def encode_offset_value(value: OffsetValue) -> bytes:
    return (struct.pack(">hqi", OFFSET_VALUE_VERSION, value.offset, value.leader_epoch)
            + _string(value.metadata) + struct.pack(">q", value.commit_timestamp))


def encode_group_value(value: GroupValue) -> bytes:
    parts = [struct.pack(">h", GROUP_VALUE_VERSION), _string(value.protocol_type),
             struct.pack(">i", value.generation), _string(value.protocol), _string(value.leader),
             struct.pack(">qi", value.state_timestamp, len(value.members))]
    for m in value.members:
        parts += [_string(m.member_id), _string(m.group_instance_id), _string(m.client_id),
                  _string(m.client_host),
                  struct.pack(">ii", m.rebalance_timeout_ms, m.session_timeout_ms),
                  _bytes(m.subscription), _bytes(m.assignment)]
    return b"".join(parts)


# -- reading --------------------------------------------------------------------------------

class _Reader:
    def __init__(self, data: bytes):
        self.data = bytes(data)
        self.pos = 0

    def unpack(self, fmt: str) -> tuple:
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise RecordFormatError("record ends early")
        values = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return values

    def string(self) -> str | None:
        (length,) = self.unpack(">h")
        if length < 0:
            return None
        raw = self.data[self.pos:self.pos + length]
        if len(raw) < length:
            raise RecordFormatError("string runs past the record")
        self.pos += length
        return raw.decode("utf-8", errors="replace")

    def bytes_(self) -> bytes:
        (length,) = self.unpack(">i")
        if length < 0:
            return b""
        raw = self.data[self.pos:self.pos + length]
        if len(raw) < length:
            raise RecordFormatError("bytes run past the record")
        self.pos += length
        return raw


def decode_key(data: bytes) -> OffsetKey | GroupKey:
    """An offset-commit or group-metadata key (RecordFormatError for anything else)."""
    reader = _Reader(data)
    (version,) = reader.unpack(">h")
    if version in (0, 1):
        return OffsetKey(reader.string() or "", reader.string() or "", reader.unpack(">i")[0])
    if version == GROUP_KEY_VERSION:
        return GroupKey(reader.string() or "")
    raise RecordFormatError(f"unknown key version {version}")


def decode_offset_value(data: bytes) -> OffsetValue:
    reader = _Reader(data)
    (version,) = reader.unpack(">h")
    if version not in (1, 3):
        raise RecordFormatError(f"offset value version {version} is not read here")
    offset = reader.unpack(">q")[0]
    epoch = reader.unpack(">i")[0] if version >= 3 else -1
    metadata = reader.string() or ""
    (timestamp,) = reader.unpack(">q")
    return OffsetValue(offset, epoch, metadata, timestamp)


def decode_group_value(data: bytes) -> GroupValue:
    reader = _Reader(data)
    (version,) = reader.unpack(">h")
    if version != GROUP_VALUE_VERSION:
        raise RecordFormatError(f"group value version {version} is not read here")
    protocol_type = reader.string() or ""
    (generation,) = reader.unpack(">i")
    protocol = reader.string()
    leader = reader.string()
    state_timestamp, count = reader.unpack(">qi")
    members = []
    for _ in range(max(count, 0)):
        member_id = reader.string() or ""
        instance = reader.string()
        client_id = reader.string() or ""
        client_host = reader.string() or ""
        rebalance, session = reader.unpack(">ii")
        members.append(MemberValue(member_id, instance, client_id, client_host, rebalance,
                                   session, reader.bytes_(), reader.bytes_()))
    return GroupValue(protocol_type, generation, protocol, leader, state_timestamp, members)
