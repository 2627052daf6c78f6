"""``__consumer_offsets``: which partition holds a group, and the bytes of its records.

A group lives in partition ``abs(java_string_hash(group_id)) % N`` of the
internal topic ``__consumer_offsets`` (N is ``offsets.topic.num.partitions``,
10 by default here, 50 in Kafka); the leader of that partition is the group's
coordinator. Every committed offset and every group's metadata is a record in
that partition, so a broker that becomes its leader rebuilds the groups by
reading it from the start (later records win; a record with a null value, a
tombstone, deletes its key).

The record formats are Kafka's own, declared below as Kafka 3.9 declares them
(``OffsetCommitKey``, ``OffsetCommitValue``, ``GroupMetadataKey``,
``GroupMetadataValue`` in its group coordinator's message definitions) and
encoded by the same codec as the wire protocol, so a learner can decode our log
with Kafka's tools and the other way round. Each key and value is an int16
version followed by that version of its message. A ZooKeeper-mode Kafka 3.9
writes, and so do we:

* offset commit: key v1 ``string group, string topic, int32 partition``; value
  v3 ``int64 offset, int32 leader_epoch, string metadata, int64
  commit_timestamp`` (v1, ``... commit_timestamp, int64 expire_timestamp``,
  for a commit with an expiry time, as OffsetCommit v1-4's retention time).
* group metadata: key v2 ``string group``; value v3 ``string protocol_type,
  int32 generation, nullable string protocol, nullable string leader, int64
  current_state_timestamp, members[...]`` where each member is ``string
  member_id, nullable string group_instance_id, string client_id, string
  client_host, int32 rebalance_timeout, int32 session_timeout, bytes
  subscription, bytes assignment``.

It reads every version Kafka 3.9 reads: offset commit values v0-4 and group
metadata values v0-4, v4 being the flexible encoding (compact strings, arrays
and bytes, tagged fields; KIP-915) that Kafka 4's new coordinator writes. Keys
of a version ZooKeeper-mode Kafka never wrote (3 and up: the new coordinator's
consumer group records) are RecordFormatError, which the loader skips.
"""

from __future__ import annotations

import struct
from functools import cache
from typing import NamedTuple, TypedDict

from simplekafka.protocol.definitions import F, build_struct
from simplekafka.protocol.errors import ProtocolError
from simplekafka.protocol.fields import Struct
from simplekafka.protocol.schema import Schema

OFFSETS_TOPIC = "__consumer_offsets"

OFFSET_KEY_VERSION = 1
GROUP_KEY_VERSION = 2
OFFSET_VALUE_VERSION = 3
OFFSET_VALUE_WITH_EXPIRY_VERSION = 1
GROUP_VALUE_VERSION = 3

# Kafka 3.9's definitions: (valid versions, first flexible version or None, fields).
_OFFSET_COMMIT_KEY = ((0, 1), None, [
    F("group", "string"),
    F("topic", "string"),
    F("partition", "int32"),
])
_GROUP_METADATA_KEY = ((2, 2), None, [
    F("group", "string"),
])
_OFFSET_COMMIT_VALUE = ((0, 4), 4, [
    F("offset", "int64"),
    F("leader_epoch", "int32", "3+", default=-1),
    F("metadata", "string"),
    F("commit_timestamp", "int64"),
    F("expire_timestamp", "int64", "1", default=-1),
])
_GROUP_METADATA_VALUE = ((0, 4), 4, [
    F("protocol_type", "string"),
    F("generation", "int32"),
    F("protocol", "string", nullable="0+"),
    F("leader", "string", nullable="0+"),
    F("current_state_timestamp", "int64", "2+", default=-1),
    F("members", [
        F("member_id", "string"),
        F("group_instance_id", "string", "3+", nullable="3+", default=None),
        F("client_id", "string"),
        F("client_host", "string"),
        F("rebalance_timeout", "int32", "1+", default=-1),
        F("session_timeout", "int32"),
        F("subscription", "bytes"),
        F("assignment", "bytes"),
    ]),
])
_Definition = tuple[tuple[int, int], int | None, list[F]]
_DEFINITIONS: dict[str, _Definition] = {
    "OffsetCommitKey": _OFFSET_COMMIT_KEY, "GroupMetadataKey": _GROUP_METADATA_KEY,
    "OffsetCommitValue": _OFFSET_COMMIT_VALUE, "GroupMetadataValue": _GROUP_METADATA_VALUE,
}


@cache
def record_schema(name: str, version: int) -> Schema:
    """One version of one of the four ``__consumer_offsets`` messages (by Kafka's name)."""
    (low, high), flexible, fields = _DEFINITIONS[name]
    if not low <= version <= high:
        raise RecordFormatError(f"{name} has no version {version} (valid: {low}-{high})")
    return build_struct(name, fields, version, flexible is not None and version >= flexible)


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
    expire_timestamp: int = -1  # -1: none (written as v3); else v1 carries it


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


class _MemberFields(TypedDict):
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription: bytes
    assignment: bytes


# -- writing --------------------------------------------------------------------------------

def _versioned(name: str, version: int, fields: object) -> bytes:
    return struct.pack(">h", version) + record_schema(name, version).encode(fields)


def encode_offset_key(key: OffsetKey) -> bytes:
    return _versioned("OffsetCommitKey", OFFSET_KEY_VERSION,
                      {"group": key.group_id, "topic": key.topic, "partition": key.partition})


def encode_group_key(key: GroupKey) -> bytes:
    return _versioned("GroupMetadataKey", GROUP_KEY_VERSION, {"group": key.group_id})


def encode_offset_value(value: OffsetValue, version: int | None = None) -> bytes:
    """Version 3, or 1 when the commit has an expiry time (as Kafka 3.9 chooses); another
    ``version`` (0-4) for tests and tools."""
    if version is None:
        version = OFFSET_VALUE_VERSION if value.expire_timestamp < 0 \
            else OFFSET_VALUE_WITH_EXPIRY_VERSION
    return _versioned("OffsetCommitValue", version, {
        "offset": value.offset, "leader_epoch": value.leader_epoch,
        "metadata": value.metadata, "commit_timestamp": value.commit_timestamp,
        "expire_timestamp": value.expire_timestamp})


def encode_group_value(value: GroupValue, version: int = GROUP_VALUE_VERSION) -> bytes:
    """Version 3 (Kafka 3.9's); another ``version`` (0-4) for tests and tools."""
    members: list[_MemberFields] = [{
        "member_id": m.member_id, "group_instance_id": m.group_instance_id,
        "client_id": m.client_id, "client_host": m.client_host,
        "rebalance_timeout": m.rebalance_timeout_ms, "session_timeout": m.session_timeout_ms,
        "subscription": m.subscription, "assignment": m.assignment} for m in value.members]
    return _versioned("GroupMetadataValue", version, {
        "protocol_type": value.protocol_type, "generation": value.generation,
        "protocol": value.protocol, "leader": value.leader,
        "current_state_timestamp": value.state_timestamp, "members": members})


# -- reading --------------------------------------------------------------------------------

def _read(name: str, data: bytes) -> tuple[int, Struct]:
    """The version prefix and the message after it (trailing bytes ignored, as Kafka's
    ``readMessage``: a newer writer may add them)."""
    if len(data) < 2:
        raise RecordFormatError(f"{name}: record ends early")
    (version,) = struct.unpack_from(">h", data, 0)
    schema = record_schema(name, version)
    try:
        fields, _ = schema.read(memoryview(data)[2:], 0)
    except (ProtocolError, struct.error, IndexError, ValueError, UnicodeDecodeError) as exc:
        raise RecordFormatError(f"{name} v{version}: {exc}") from None
    return version, fields


def decode_key(data: bytes) -> OffsetKey | GroupKey:
    """An offset-commit or group-metadata key (RecordFormatError for anything else)."""
    if len(data) < 2:
        raise RecordFormatError("key ends early")
    (version,) = struct.unpack_from(">h", data, 0)
    if version in (0, 1):
        _, key = _read("OffsetCommitKey", data)
        return OffsetKey(_text(key.group), _text(key.topic), key.partition)
    if version == GROUP_KEY_VERSION:
        _, key = _read("GroupMetadataKey", data)
        return GroupKey(_text(key.group))
    raise RecordFormatError(f"unknown key version {version}")


def decode_offset_value(data: bytes) -> OffsetValue:
    """An offset commit value of any version 0-4."""
    _, value = _read("OffsetCommitValue", data)
    return OffsetValue(value.offset, getattr(value, "leader_epoch", -1), _text(value.metadata),
                       value.commit_timestamp, getattr(value, "expire_timestamp", -1))


def decode_group_value(data: bytes) -> GroupValue:
    """A group metadata value of any version 0-4."""
    _, value = _read("GroupMetadataValue", data)
    # A field a version lacks is not in its Struct: Kafka's default then (-1, null).
    members = [MemberValue(_text(m.member_id), getattr(m, "group_instance_id", None),
                           _text(m.client_id), _text(m.client_host),
                           getattr(m, "rebalance_timeout", -1), m.session_timeout,
                           bytes(m.subscription or b""), bytes(m.assignment or b""))
               for m in value.members or []]
    return GroupValue(_text(value.protocol_type), value.generation, value.protocol,
                      value.leader, getattr(value, "current_state_timestamp", -1), members)


def _text(value: str | None) -> str:
    return value or ""
