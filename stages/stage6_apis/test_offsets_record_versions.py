"""``__consumer_offsets`` records in every version Kafka 3.9 reads: what we write is what a
ZooKeeper-mode Kafka 3.9 writes (offset key v1 and value v3, or v1 with an expiry; group key
v2 and value v3), every value version 0-4 round-trips, and bytes laid out by hand from Kafka's
definitions, the flexible v4 ones included, load."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from simplekafka.broker.group.records import (
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
)

# -- Kafka's encodings, by hand ----------------------------------------------------------------


def i16(n: int) -> bytes:
    return struct.pack(">h", n)


def i32(n: int) -> bytes:
    return struct.pack(">i", n)


def i64(n: int) -> bytes:
    return struct.pack(">q", n)


def string(text: str | None) -> bytes:
    return i16(-1) if text is None else i16(len(text.encode())) + text.encode()


def varint(n: int) -> bytes:  # unsigned, as compact lengths are
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def compact_string(text: str | None) -> bytes:
    return b"\x00" if text is None else varint(len(text.encode()) + 1) + text.encode()


def compact_bytes(data: bytes) -> bytes:
    return varint(len(data) + 1) + data


NO_TAGS = b"\x00"


# -- what we write -----------------------------------------------------------------------------


def test_keys_and_values_are_written_at_kafka_3_9s_versions_byte_for_byte():
    assert encode_offset_key(OffsetKey("g", "orders", 3)) == \
        i16(1) + string("g") + string("orders") + i32(3)
    assert encode_group_key(GroupKey("g")) == i16(2) + string("g")
    assert encode_offset_value(OffsetValue(42, 7, "m", 1000)) == \
        i16(3) + i64(42) + i32(7) + string("m") + i64(1000)
    # A commit with an expiry time: version 1, the only one that has the field.
    assert encode_offset_value(OffsetValue(42, 7, "m", 1000, 5000)) == \
        i16(1) + i64(42) + string("m") + i64(1000) + i64(5000)
    member = MemberValue("m-1", None, "client", "/10.0.0.1", 300_000, 10_000, b"S", b"A")
    assert encode_group_value(GroupValue("consumer", 5, "range", "m-1", 123, [member])) == (
        i16(3) + string("consumer") + i32(5) + string("range") + string("m-1") + i64(123)
        + i32(1) + string("m-1") + string(None) + string("client") + string("/10.0.0.1")
        + i32(300_000) + i32(10_000) + i32(1) + b"S" + i32(1) + b"A")


# -- every version round-trips -----------------------------------------------------------------

texts = st.text(max_size=20)
members = st.lists(st.builds(
    MemberValue, texts, st.none() | texts, texts, texts, st.integers(0, 2**31 - 1),
    st.integers(0, 2**31 - 1), st.binary(max_size=30), st.binary(max_size=30)), max_size=3)


def as_written_in(value: OffsetValue, version: int) -> OffsetValue:
    """What survives a version: the fields it lacks come back as Kafka's defaults."""
    return value._replace(leader_epoch=value.leader_epoch if version >= 3 else -1,
                          expire_timestamp=value.expire_timestamp if version == 1 else -1)


@pytest.mark.parametrize("version", range(5))
@given(offset=st.integers(0, 2**63 - 1), epoch=st.integers(-1, 2**31 - 1), metadata=texts,
       commit=st.integers(-1, 2**62), expire=st.integers(-1, 2**62))
def test_offset_values_round_trip_in_every_version(version, offset, epoch, metadata, commit,
                                                   expire):
    value = OffsetValue(offset, epoch, metadata, commit, expire)
    assert decode_offset_value(encode_offset_value(value, version)) == \
        as_written_in(value, version)


@pytest.mark.parametrize("version", range(5))
@given(protocol_type=texts, generation=st.integers(0, 2**31 - 1),
       protocol=st.none() | texts, leader=st.none() | texts, when=st.integers(-1, 2**62),
       group_members=members)
def test_group_values_round_trip_in_every_version(version, protocol_type, generation, protocol,
                                                  leader, when, group_members):
    value = GroupValue(protocol_type, generation, protocol, leader, when, group_members)
    expected = value._replace(
        state_timestamp=when if version >= 2 else -1,
        members=[m._replace(group_instance_id=m.group_instance_id if version >= 3 else None,
                            rebalance_timeout_ms=m.rebalance_timeout_ms if version >= 1 else -1)
                 for m in group_members])
    assert decode_group_value(encode_group_value(value, version)) == expected


# -- bytes laid out by hand from Kafka's definitions -------------------------------------------


def test_flexible_offset_commit_value_v4_loads():
    data = i16(4) + i64(99) + i32(6) + compact_string("meta") + i64(1_700_000_000_000) + NO_TAGS
    assert decode_offset_value(data) == OffsetValue(99, 6, "meta", 1_700_000_000_000)


def test_flexible_offset_commit_value_v4_with_an_unknown_tagged_field_loads():
    tags = varint(1) + varint(9) + varint(3) + b"xyz"  # one field, tag 9, 3 bytes
    data = i16(4) + i64(1) + i32(0) + compact_string("") + i64(5) + tags
    assert decode_offset_value(data) == OffsetValue(1, 0, "", 5)


def test_flexible_group_metadata_value_v4_loads():
    member = (compact_string("consumer-1-abc") + compact_string("static-1")
              + compact_string("consumer-1") + compact_string("/127.0.0.1")
              + i32(300_000) + i32(45_000) + compact_bytes(b"\x00\x01sub")
              + compact_bytes(b"\x00\x01asg") + NO_TAGS)
    data = (i16(4) + compact_string("consumer") + i32(12) + compact_string("cooperative-sticky")
            + compact_string("consumer-1-abc") + i64(1_700_000_000_123)
            + varint(2) + member + NO_TAGS)
    assert decode_group_value(data) == GroupValue(
        "consumer", 12, "cooperative-sticky", "consumer-1-abc", 1_700_000_000_123,
        [MemberValue("consumer-1-abc", "static-1", "consumer-1", "/127.0.0.1", 300_000, 45_000,
                     b"\x00\x01sub", b"\x00\x01asg")])


def test_an_empty_group_v4_with_null_protocol_and_leader_loads():
    data = (i16(4) + compact_string("consumer") + i32(3) + compact_string(None)
            + compact_string(None) + i64(-1) + varint(1) + NO_TAGS)
    assert decode_group_value(data) == GroupValue("consumer", 3, None, None, -1, [])


def test_old_versions_laid_out_by_hand_load():
    assert decode_offset_value(i16(0) + i64(5) + string("m") + i64(9)) == \
        OffsetValue(5, -1, "m", 9)
    assert decode_offset_value(i16(2) + i64(5) + string("m") + i64(9)) == \
        OffsetValue(5, -1, "m", 9)
    v0_member = string("m") + string("c") + string("/h") + i32(10) + i32(1) + b"s" + i32(0)
    assert decode_group_value(i16(0) + string("consumer") + i32(1) + string("range")
                              + string("m") + i32(1) + v0_member) == GroupValue(
        "consumer", 1, "range", "m", -1, [MemberValue("m", None, "c", "/h", -1, 10, b"s", b"")])
    assert decode_key(i16(0) + string("g") + string("t") + i32(1)) == OffsetKey("g", "t", 1)


def test_what_kafka_3_9_never_wrote_or_cut_short_is_a_record_format_error():
    with pytest.raises(RecordFormatError):
        decode_key(i16(3) + string("g"))  # the KRaft coordinator's consumer group records
    with pytest.raises(RecordFormatError):
        decode_offset_value(i16(5) + i64(1))
    with pytest.raises(RecordFormatError):
        decode_offset_value(i16(3) + i64(1))
    with pytest.raises(RecordFormatError):
        decode_group_value(b"\x00")
