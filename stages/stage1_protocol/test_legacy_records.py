"""Message formats v0/v1 (protocol/legacy_records.py): round trips and kafka-python's bytes.

kafka-python still carries a builder and reader for the old formats
(``kafka.record.legacy_records``), written from Kafka's ``LegacyRecord``: an
independent implementation to hold ours against. Uncompressed sets must be
identical byte for byte; compressed ones differ only where the format lets
writers differ (the compressor's own bytes, and the wrapper's offset: kafka-python
writes 0 where Kafka's builder writes the last inner offset), so their inner
message sets are compared byte for byte instead.
"""

from __future__ import annotations

import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record import MemoryRecords
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from simplekafka.protocol.compression import Compression, decompress
from simplekafka.protocol.errors import CorruptBatchError, ErrorCode
from simplekafka.protocol.legacy_records import (
    _messages,
    build_message_set,
    fix_lz4_v0,
    is_message_set,
    parse_message_set,
    xxh32,
)
from simplekafka.protocol.records import build_batch, build_end_txn_marker

_blob = st.none() | st.binary(max_size=40)
_message = st.tuples(st.integers(0, 2**40), _blob, _blob)


def _records(items, magic: int):
    """(offset, timestamp, key, value) with consecutive offsets from 0."""
    return [(i, ts if magic else None, key, value) for i, (ts, key, value) in enumerate(items)]


@settings(max_examples=60, deadline=None)
@given(items=st.lists(_message, min_size=1, max_size=8), magic=st.sampled_from([0, 1]),
       codec=st.sampled_from(["none", "gzip", "snappy", "lz4"]), base=st.integers(0, 2**40))
def test_message_sets_round_trip(items, magic, codec, base):
    records = [(base + o, ts, key, value) for o, ts, key, value in _records(items, magic)]
    parsed = parse_message_set(build_message_set(records, magic, codec))
    assert [(m.offset, m.timestamp, m.key, m.value, m.magic) for m in parsed] == [
        (o, ts if magic else -1, key, value, magic) for o, ts, key, value in records]
    assert {m.codec for m in parsed} == {int(Compression.of(codec))}


@settings(max_examples=60, deadline=None)
@given(items=st.lists(_message, min_size=1, max_size=8), magic=st.sampled_from([0, 1]))
def test_uncompressed_sets_are_kafka_pythons_byte_for_byte(items, magic):
    records = _records(items, magic)
    builder = LegacyRecordBatchBuilder(magic, 0, 1 << 20)
    for offset, ts, key, value in records:
        builder.append(offset, ts, key, value)
    assert build_message_set(records, magic) == bytes(builder.build())


# v0 lz4 is left out: kafka-python needs the xxhash package for it (not installed);
# test_v0_lz4_carries_the_old_header_checksum checks that frame against the xxh32 it needs.
@pytest.mark.parametrize(("magic", "codec"), [(0, "gzip"), (0, "snappy"), (1, "gzip"),
                                              (1, "snappy"), (1, "lz4")])
def test_compressed_sets_match_kafka_python_inside_the_wrapper(magic, codec):
    records = [(i, 1_700_000_000_000 + i, b"key-%d" % i if i % 2 else None, b"value " * i)
               for i in range(6)]
    builder = LegacyRecordBatchBuilder(magic, int(Compression.of(codec)), 1 << 20)
    for offset, ts, key, value in records:
        builder.append(offset, ts, key, value)
    theirs = bytes(builder.build())
    ours = build_message_set(records, magic, codec)
    ((_, _, _, their_inner),) = _wrapped(theirs)
    ((_, _, _, our_inner),) = _wrapped(ours)
    assert decompress(codec, our_inner) == decompress(codec, their_inner)
    # Each reads the other's: same offsets (after the wrapper's), keys, values, timestamps.
    read_theirs = [(m.timestamp, m.key, m.value) for m in parse_message_set(theirs)]
    assert read_theirs == [(ts if magic else -1, k, v) for _, ts, k, v in records]
    assert _kafka_python_reads(ours) == [(o, ts if magic else None, k, v)
                                         for o, ts, k, v in records]


def _wrapped(message_set: bytes):
    """(offset, magic, attributes, value) of each top-level message: the raw wrapper."""
    return [(o, m, a, v) for o, m, a, _, _, v in _messages(message_set, True)]


def _kafka_python_reads(message_set: bytes) -> list[tuple]:
    records = MemoryRecords(message_set)
    out = []
    while records.has_next():
        out += [(r.offset, r.timestamp, r.key, r.value) for r in records.next_batch()]
    return out


def test_v1_wrapper_carries_the_last_offset_and_inner_offsets_are_relative():
    message_set = build_message_set([(100, 5, None, b"a"), (101, 9, None, b"b")], 1, "gzip")
    ((offset, magic, attributes, value),) = _wrapped(message_set)
    assert (offset, magic, attributes & 0x07) == (101, 1, Compression.GZIP)
    assert [o for o, *_ in _wrapped(decompress("gzip", value))] == [0, 1]
    assert [m.offset for m in parse_message_set(message_set)] == [100, 101]


def test_v0_lz4_carries_the_old_header_checksum():
    """Kafka 0.8-0.9 hashed the frame's magic bytes into the descriptor's checksum."""
    message_set = build_message_set([(0, None, None, b"x" * 200)], 0, "lz4")
    ((_, _, _, frame),) = _wrapped(message_set)
    assert frame[4] & 0x08 == 0  # no content size: those brokers could not read one
    assert frame[6] == (xxh32(frame[0:6]) >> 8) & 0xFF  # the old, wrong checksum
    assert fix_lz4_v0(frame)[6] == (xxh32(frame[4:6]) >> 8) & 0xFF
    assert [m.value for m in parse_message_set(message_set)] == [b"x" * 200]


def test_log_append_time_is_on_the_wrapper_and_every_message():
    for codec in ("none", "gzip"):
        message_set = build_message_set([(0, 5, None, b"a"), (1, 9, None, b"b")], 1, codec,
                                        timestamp_type=1, log_append_time=777)
        assert [(m.timestamp, m.timestamp_type) for m in parse_message_set(message_set)] == [
            (777, 1), (777, 1)]


def test_a_bad_crc_is_corrupt_message():
    message_set = bytearray(build_message_set([(0, 1, b"k", b"v")], 1))
    message_set[-1] ^= 0x01
    with pytest.raises(CorruptBatchError) as caught:
        parse_message_set(bytes(message_set))
    assert caught.value.error_code == ErrorCode.CORRUPT_MESSAGE
    assert parse_message_set(bytes(message_set), check_crc=False)[0].value == b"w"


def test_the_crc_is_plain_crc32_over_magic_onwards():
    message_set = build_message_set([(0, 1, b"k", b"v")], 1)
    assert int.from_bytes(message_set[12:16], "big") == zlib.crc32(message_set[16:])


def test_a_partial_trailing_message_is_left_out_and_garbage_is_an_error():
    message_set = build_message_set([(0, 1, None, b"a"), (1, 2, None, b"b")], 1)
    assert [m.value for m in parse_message_set(message_set[:-3])] == [b"a"]
    with pytest.raises(CorruptBatchError):
        parse_message_set(message_set[:12] + b"\x00\x00\x00\x01" + message_set[16:])
    with pytest.raises(ValueError, match="zstd"):
        build_message_set([(0, 1, None, b"a")], 1, "zstd")


def test_is_message_set_tells_the_formats_apart():
    assert is_message_set(build_message_set([(0, 1, None, b"a")], 0))
    assert is_message_set(build_message_set([(0, 1, None, b"a")], 1))
    assert not is_message_set(build_batch([(None, b"a")]))
    assert not is_message_set(build_end_txn_marker(1, 0, True, 0))
