"""RecordBatch v2: build and parse records, against ourselves and against kafka-python.

kafka-python's ``DefaultRecordBatchBuilder`` / ``DefaultRecordBatch`` are an
independent implementation of the same bytes: a batch either side builds must
decode on the other side to the same offsets, timestamps, keys, values and
headers, for every compression setting. And whatever bytes arrive, parsing
raises nothing but ProtocolError.
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from simplekafka.protocol import batch_header as bh
from simplekafka.protocol.compression import Compression, compress
from simplekafka.protocol.errors import CorruptBatchError, ErrorCode, ProtocolError
from simplekafka.protocol.records import (
    Record,
    RecordBatch,
    build_batch,
    parse_batch,
    parse_batches,
)

CODECS = list(Compression)
T0 = 1_700_000_000_000

nullable_bytes = st.none() | st.binary(max_size=300)
headers_st = st.lists(st.tuples(st.text(max_size=20), nullable_bytes), max_size=4)
records_st = st.lists(
    st.builds(
        Record,
        timestamp=st.integers(-1, 2**45),
        key=nullable_bytes,
        value=nullable_bytes,
        headers=headers_st,
    ),
    min_size=1,
    max_size=25,
)


def as_tuples(records) -> list[tuple]:
    """(offset, timestamp, key, value, headers) with headers as a list of tuples."""
    return [(r.offset, r.timestamp, r.key, r.value, [tuple(h) for h in r.headers]) for r in records]


def expected(records, base_offset: int) -> list[tuple]:
    return [
        (base_offset + i, r.timestamp, r.key, r.value, [tuple(h) for h in r.headers])
        for i, r in enumerate(records)
    ]


def compressible_records(count: int = 50) -> list[Record]:
    return [
        Record(
            timestamp=T0 + i * 3,
            key=None if i % 4 == 0 else b"user-%d" % (i % 7),
            value=None if i % 9 == 5 else b"event number %d: " % i + b"click " * 30,
            headers=[] if i % 3 else [("trace", b"abc%d" % i), ("empty", None), ("ünï", b"")],
        )
        for i in range(count)
    ]


def reseal(buf: bytes | bytearray) -> bytes:
    """Fix batchLength and the CRC after a test has edited a batch on purpose."""
    buf = bytearray(buf)
    struct.pack_into(">i", buf, 8, len(buf) - bh.LOG_OVERHEAD)
    struct.pack_into(">I", buf, 17, bh.crc32c(memoryview(buf)[bh.CRC_START :]))
    return bytes(buf)


def with_records_section(batch: bytes, section: bytes, count: int | None = None) -> bytes:
    """The same header around another (uncompressed) records section, resealed."""
    buf = bytearray(batch[: bh.HEADER_SIZE] + section)
    if count is not None:
        struct.pack_into(">i", buf, 57, count)
    return reseal(buf)


# ------------------------------------------------------------------ our own round trip


@settings(max_examples=200, deadline=None)
@given(
    records=records_st,
    codec=st.sampled_from(CODECS),
    base_offset=st.integers(0, 2**62),
    leader_epoch=st.integers(-1, 2**31 - 1),
)
def test_round_trip(records, codec, base_offset, leader_epoch):
    batch = build_batch(
        records, compression=codec, base_offset=base_offset, partition_leader_epoch=leader_epoch
    )
    parsed = parse_batch(batch)
    assert as_tuples(parsed.records) == expected(records, base_offset)
    header = parsed.header
    assert header.compression == codec
    assert header.records_count == len(records)
    assert header.base_timestamp == records[0].timestamp
    assert header.max_timestamp == max(r.timestamp for r in records)
    assert header.partition_leader_epoch == leader_epoch
    assert parsed.size == len(batch)


def test_producer_fields_and_flags_survive():
    batch = build_batch(
        [(b"k", b"v")] * 3,
        producer_id=12345,
        producer_epoch=7,
        base_sequence=99,
        is_transactional=True,
    )
    parsed = parse_batch(batch)
    assert bh.producer_info(batch) == (12345, 7, 99)
    assert parsed.is_transactional
    assert not parsed.is_control
    assert parsed.header.last_sequence == 101
    assert parse_batch(build_batch([(b"k", b"v")], is_control=True)).is_control


def test_record_batch_conveniences():
    parsed = parse_batch(build_batch(compressible_records(5), compression="zstd", base_offset=40))
    assert isinstance(parsed, RecordBatch)
    assert len(parsed) == 5
    assert [r.offset for r in parsed] == [40, 41, 42, 43, 44]
    assert (parsed.base_offset, parsed.last_offset, parsed.next_offset) == (40, 44, 45)
    assert parsed.compression is Compression.ZSTD
    assert parsed.timestamp_type == 0
    assert "compression=ZSTD" in repr(parsed)


def test_log_append_time_gives_every_record_the_max_timestamp():
    records = [Record(timestamp=T0 + d) for d in (5, 1, 9, 3)]
    parsed = parse_batch(build_batch(records, timestamp_type=1))
    assert parsed.timestamp_type == 1
    assert [r.timestamp for r in parsed] == [T0 + 9] * 4
    kafka_view = DefaultRecordBatch(bytearray(build_batch(records, timestamp_type=1)))
    assert [r.timestamp for r in kafka_view] == [T0 + 9] * 4


def test_values_and_deltas_beyond_the_small_varint_table():
    records = [
        Record(timestamp=T0, key=b"k" * 20_000, value=b"v" * 70_000, headers=[("h" * 9000, None)]),
        Record(timestamp=T0 - 10**9, key=None, value=b""),  # negative timestamp delta
        *[Record(timestamp=T0 + 2**40) for _ in range(9000)],  # offset deltas past 8191
    ]
    parsed = parse_batch(build_batch(records, compression="lz4"))
    assert as_tuples(parsed.records) == expected(records, 0)


def test_accepts_tuples_dicts_strings_and_generators():
    now_ms_floor = T0
    batch = build_batch(
        (
            rec
            for rec in [
                (b"k", b"v"),
                {"key": "clé", "value": bytearray(b"ba"), "headers": {"a": b"1"}, "timestamp": T0},
                Record(key=memoryview(b"mk"), value="text", headers=[(b"raw", b"2")]),
                (None, None),
            ]
        ),
    )
    records = parse_batch(batch).records
    assert [(r.key, r.value) for r in records] == [
        (b"k", b"v"),
        ("clé".encode(), b"ba"),
        (b"mk", b"text"),
        (None, None),
    ]
    assert records[1].headers == [("a", b"1")]
    assert records[2].headers == [("raw", b"2")]
    assert records[0].timestamp > now_ms_floor  # a missing timestamp means now
    assert records[1].timestamp == T0


@pytest.mark.parametrize(
    ("records", "kwargs", "error", "match"),
    [
        ([], {}, ValueError, "at least one record"),
        ([(b"k", b"v")], {"compression": "brotli"}, ValueError, "unknown compression"),
        ([(b"k", b"v")], {"compression": 6}, ValueError, "unknown compression"),
        ([(b"k", b"v")], {"producer_epoch": 2**15}, ValueError, "out of range"),
        ([(b"k", b"v")], {"base_offset": 2**63}, ValueError, "out of range"),
        ([(b"k", b"v")], {"timestamp_type": 2}, ValueError, "timestamp_type"),
        ([(1, b"v")], {}, TypeError, "key must be bytes"),
        ([(b"k", 2.5)], {}, TypeError, "value must be bytes"),
        ([b"just bytes"], {}, TypeError, "a record must be"),
        ([{"key": b"k", "velue": b"v"}], {}, TypeError, "unknown record fields"),
        ([Record(timestamp=1.5)], {}, TypeError, "timestamp must be an int"),
        ([Record(timestamp=-(2**63)), Record(timestamp=2**63 - 1)], {}, ValueError, "delta"),
        ([Record(timestamp=2**63)], {}, ValueError, "out of range"),
        ([Record(headers=[("only-key",)])], {}, TypeError, "a header must be"),
        ([Record(headers=[(3, b"v")])], {}, TypeError, "header key must be str"),
    ],
)
def test_bad_arguments_are_clear_errors(records, kwargs, error, match):
    with pytest.raises(error, match=match):
        build_batch(records, **kwargs)


# ------------------------------------------------------------------ cross-check with kafka-python


def kafka_python_batch(records, codec, producer=(-1, -1, -1)) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=int(codec),
        is_transactional=False,
        producer_id=producer[0],
        producer_epoch=producer[1],
        base_sequence=producer[2],
        batch_size=1 << 24,
    )
    for i, r in enumerate(records):
        meta = builder.append(
            i, timestamp=r.timestamp, key=r.key, value=r.value, headers=list(r.headers)
        )
        assert meta is not None
    return bytes(builder.build())


def kafka_python_records(buf: bytes) -> list[tuple]:
    batch = DefaultRecordBatch(bytearray(buf))
    assert batch.validate_crc()
    return [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in batch]


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
def test_kafka_python_batches_decode_with_ours(codec):
    records = compressible_records()
    built = kafka_python_batch(records, codec, producer=(77, 3, 1000))
    parsed = parse_batch(built)
    assert parsed.header.compression == codec  # payload compressible: kafka-python kept the codec
    assert as_tuples(parsed.records) == expected(records, 0)
    assert bh.producer_info(built) == (77, 3, 1000)


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
def test_our_batches_decode_with_kafka_python(codec):
    records = compressible_records()
    built = build_batch(
        records,
        compression=codec,
        base_offset=500,
        producer_id=77,
        producer_epoch=3,
        base_sequence=1000,
    )
    kafka_view = DefaultRecordBatch(bytearray(built))
    assert kafka_view.compression_type == codec
    assert (kafka_view.producer_id, kafka_view.producer_epoch, kafka_view.base_sequence) == (
        77,
        3,
        1000,
    )
    assert kafka_python_records(built) == expected(records, 500)


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
def test_byte_identical_to_kafka_python_when_uncompressed_or_deterministic(codec):
    records = compressible_records(10)
    ours = build_batch(records, compression=codec, partition_leader_epoch=0)
    theirs = kafka_python_batch(records, codec)
    if codec in (Compression.NONE, Compression.SNAPPY):
        # same records section and header: kafka-python also writes xerial snappy
        assert ours == theirs
    else:
        assert (
            ours[bh.HEADER_SIZE :] != b""
            and parse_batch(ours).records == parse_batch(theirs).records
        )


@settings(max_examples=100, deadline=None)
@given(records=records_st, codec=st.sampled_from(CODECS))
def test_cross_check_generated_records_both_ways(records, codec):
    records = [r._replace(timestamp=max(r.timestamp, 0)) for r in records]
    theirs = kafka_python_batch(records, codec)
    assert as_tuples(parse_batch(theirs).records) == expected(records, 0)
    ours = build_batch(records, compression=codec)
    assert kafka_python_records(ours) == expected(records, 0)


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
def test_cross_check_with_aiokafkas_compiled_codec(codec):
    """aiokafka's Cython record codec is a third, compiled implementation."""
    from aiokafka.record.default_records import DefaultRecordBatch as AioBatch
    from aiokafka.record.default_records import DefaultRecordBatchBuilder as AioBuilder

    records = compressible_records(30)
    ours = build_batch(records, compression=codec, base_offset=9)
    aio_view = AioBatch(ours)
    assert aio_view.validate_crc()
    assert aio_view.compression_type == codec
    got = [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in aio_view]
    assert got == expected(records, 9)

    builder = AioBuilder(2, int(codec), 0, -1, -1, -1, 1 << 24)
    for i, r in enumerate(records):
        assert builder.append(i, r.timestamp, r.key, r.value, list(r.headers)) is not None
    parsed = parse_batch(bytes(builder.build()))
    assert parsed.compression == codec
    assert as_tuples(parsed.records) == expected(records, 0)


def test_several_batches_read_by_kafka_python_memory_records():
    batches = [
        build_batch(compressible_records(n), compression=c, base_offset=off)
        for n, c, off in ((3, "gzip", 0), (5, "none", 3), (2, "zstd", 8))
    ]
    memory = MemoryRecords(b"".join(batches))
    offsets = []
    while memory.has_next():
        offsets.extend(r.offset for r in memory.next_batch())
    assert offsets == list(range(10))


def test_parse_batches_reads_whole_batches_and_skips_a_partial_tail():
    batches = [build_batch(compressible_records(n), base_offset=o) for n, o in ((2, 0), (3, 2))]
    tail = build_batch(compressible_records(4), base_offset=5)
    for cut in (0, 5, 12, 60, len(tail) - 1):
        parsed = parse_batches(b"".join(batches) + tail[:cut])
        assert [len(b) for b in parsed] == [2, 3]
    assert parse_batches(b"") == []
    assert [len(b) for b in parse_batches(memoryview(b"".join(batches) + tail))] == [2, 3, 4]


def test_parse_batches_rejects_an_impossible_length():
    buf = bytearray(build_batch([(b"k", b"v")]))
    struct.pack_into(">i", buf, 8, 3)
    with pytest.raises(CorruptBatchError, match="shorter than a batch header") as info:
        parse_batches(bytes(buf))
    assert info.value.offset == 8


# ------------------------------------------------------------------ corrupt batches


def test_wrong_crc_is_rejected():
    buf = bytearray(build_batch(compressible_records(3)))
    buf[70] ^= 0x01
    with pytest.raises(CorruptBatchError, match="CRC mismatch") as info:
        parse_batch(buf)
    assert info.value.error_code == ErrorCode.CORRUPT_MESSAGE
    assert info.value.offset == 17


def test_wrong_magic_is_rejected():
    buf = bytearray(build_batch([(b"k", b"v")]))
    buf[16] = 0
    with pytest.raises(CorruptBatchError, match="unsupported magic 0"):
        parse_batch(buf)


def test_wrong_length_is_rejected():
    batch = build_batch([(b"k", b"v")])
    with pytest.raises(CorruptBatchError, match="runs past the end"):
        parse_batch(batch[:-3])
    with pytest.raises(CorruptBatchError, match="truncated batch"):
        parse_batch(batch[:20])


def test_more_declared_records_than_present():
    batch = build_batch([(b"k", b"v"), (b"k2", b"v2")])
    bad = with_records_section(batch, batch[bh.HEADER_SIZE :], count=3)
    with pytest.raises(CorruptBatchError, match="cut short"):
        parse_batch(bad)


def test_fewer_declared_records_than_present():
    batch = build_batch([(b"k", b"v"), (b"k2", b"v2")])
    bad = with_records_section(batch, batch[bh.HEADER_SIZE :], count=1)
    with pytest.raises(CorruptBatchError, match="left over after 1 records") as info:
        parse_batch(bad)
    assert info.value.offset > bh.HEADER_SIZE


def test_record_length_disagreeing_with_its_fields():
    batch = build_batch([(b"k", b"v")])
    section = bytearray(batch[bh.HEADER_SIZE :])
    section[0] += 2  # zigzag: length + 1
    with pytest.raises(CorruptBatchError, match=r"does not fit|declares"):
        parse_batch(with_records_section(batch, bytes(section) + b"\x00"))


@pytest.mark.parametrize(
    ("record_body", "match"),
    [
        # attributes, ts delta, offset delta, key -1, value -1, header count -1
        (b"\x00\x00\x00\x01\x01\x01", "negative header count"),
        # one header whose key is not UTF-8
        (b"\x00\x00\x00\x01\x01\x02\x02\xff\x01", "not valid UTF-8"),
        # header key length -1
        (b"\x00\x00\x00\x01\x01\x02\x01\x01", "bad header key length"),
        # an 11-byte varint as the timestamp delta
        (b"\x00" + b"\xff" * 10 + b"\x01\x00\x01\x01\x00", "longer than 10 bytes"),
    ],
)
def test_bad_record_fields_are_named(record_body, match):
    batch = build_batch([(b"k", b"v")])
    length = bytes([len(record_body) << 1])
    with pytest.raises(CorruptBatchError, match=match):
        parse_batch(with_records_section(batch, length + record_body))


def test_compressed_garbage_is_a_corrupt_batch():
    batch = build_batch([(b"k", b"v")], compression="gzip")
    bad = with_records_section(batch, b"definitely not gzip")
    with pytest.raises(CorruptBatchError, match="gzip data does not decompress"):
        parse_batch(bad)


def test_unknown_codec_in_attributes():
    buf = bytearray(build_batch([(b"k", b"v")]))
    struct.pack_into(">h", buf, 21, 6)
    with pytest.raises(CorruptBatchError) as info:
        parse_batch(reseal(buf))
    assert info.value.error_code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE


def test_records_section_errors_point_into_the_buffer():
    prefix = build_batch([(b"a", b"b")])
    batch = build_batch([(b"k", b"v")])
    bad = with_records_section(batch, batch[bh.HEADER_SIZE :] + b"\x00\x00")
    with pytest.raises(CorruptBatchError) as info:
        parse_batch(prefix + bad, pos=len(prefix))
    assert info.value.offset == len(prefix) + len(bad) - 2


# ------------------------------------------------------------------ fuzzing: only ProtocolError


def only_protocol_errors(fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except ProtocolError:
        pass


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_random_bytes_raise_only_protocol_error(buf):
    only_protocol_errors(parse_batch, buf)
    only_protocol_errors(parse_batch, buf, check_crc=False)
    only_protocol_errors(parse_batches, buf)


@settings(max_examples=300, deadline=None)
@given(section=st.binary(max_size=200), count=st.integers(-2, 40), codec=st.sampled_from(CODECS))
def test_random_records_section_in_a_valid_header(section, count, codec):
    batch = build_batch([(b"k", b"v")])
    buf = bytearray(with_records_section(batch, section, count=count))
    struct.pack_into(">h", buf, 21, int(codec))
    only_protocol_errors(parse_batch, reseal(buf))


@settings(max_examples=300, deadline=None)
@given(data=st.data(), codec=st.sampled_from(CODECS))
def test_damaged_valid_batches_raise_only_protocol_error(data, codec):
    buf = bytearray(build_batch(compressible_records(4), compression=codec))
    for _ in range(data.draw(st.integers(1, 3))):
        index = data.draw(st.integers(0, len(buf) - 1))
        buf[index] = data.draw(st.integers(0, 255))
    only_protocol_errors(parse_batch, bytes(buf), check_crc=False)
    only_protocol_errors(parse_batch, reseal(buf))


@settings(max_examples=100, deadline=None)
@given(records=st.lists(st.tuples(nullable_bytes, nullable_bytes), min_size=1, max_size=30))
def test_damaged_compressed_section_raises_only_protocol_error(records):
    section = build_batch(records)[bh.HEADER_SIZE :]
    for codec in CODECS[1:]:
        packed = bytearray(compress(codec, section[:-1]))  # a record cut short inside the stream
        only_protocol_errors(
            parse_batch, with_records_section(build_batch(records, compression=codec), packed)
        )


def test_rebuild_batch_keeps_offsets_and_producer_fields_for_the_log_cleaner():
    """The cleaner's thinned batch: same base and last offset, the kept records at their
    own offsets (gaps inside), a valid CRC; kafka-python reads it the same way."""
    from kafka.record.default_records import DefaultRecordBatch

    from simplekafka.protocol.batch_header import ATTR_DELETE_HORIZON, validate_batch
    from simplekafka.protocol.records import rebuild_batch

    original = build_batch([{"key": b"k%d" % n, "value": b"v%d" % n, "timestamp": 1000 + n}
                            for n in range(5)], compression="zstd", base_offset=100,
                           producer_id=7, producer_epoch=1, base_sequence=40)
    parsed = parse_batch(original)
    kept = [parsed.records[1], parsed.records[4]]
    rebuilt = rebuild_batch(parsed.header, kept, base_timestamp=99_000,
                            attributes=parsed.header.attributes | ATTR_DELETE_HORIZON)
    header = validate_batch(rebuilt, 0, check_crc=True)
    assert (header.base_offset, header.last_offset, header.records_count) == (100, 104, 2)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (7, 1, 40)
    assert header.base_timestamp == 99_000 and header.max_timestamp == 1004
    again = parse_batch(rebuilt)
    assert [(r.offset, r.key, r.timestamp) for r in again] == [
        (101, b"k1", 1001), (104, b"k4", 1004)]
    theirs = DefaultRecordBatch(rebuilt)
    assert theirs.validate_crc()
    assert [(r.offset, r.key, r.timestamp) for r in theirs] == [
        (101, b"k1", 1001), (104, b"k4", 1004)]
