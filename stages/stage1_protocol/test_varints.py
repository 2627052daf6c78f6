"""One varint reader and writer, with Kafka's bounds, and every hot-path copy held to it.

:func:`simplekafka.protocol.primitives.read_unsigned_varint` is the code base's
one varint reader (``read_varint``: zigzag, at most 5 bytes; ``read_varlong``:
at most 10), ``write_unsigned_varint`` its one writer. Three hot paths keep an
inlined copy because calling the shared function per varint is measurably
slower (docs/benchmarks.md): the plain record loop in ``records.py`` and the
run decoder in ``records_fast.py`` read one- and two-byte varints through the
``ZIGZAG`` table, and the Spark source reads varint columns with numpy. These
tests hold each copy to the shared reader, and check the Spark source against
parse_batch on the damage its old private reader let through.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simplekafka.protocol import batch_header as bh
from simplekafka.protocol import primitives as p
from simplekafka.protocol import records as records_module
from simplekafka.protocol import records_fast
from simplekafka.protocol.errors import CorruptBatchError, ProtocolError
from simplekafka.protocol.records import Record, build_batch, parse_batch

INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)
T0 = 1_700_000_000_000


def _outcome(read, buf: bytes, pos: int = 0):
    try:
        return read(buf, pos)
    except ProtocolError as exc:
        return "error", exc.offset


# ------------------------------------------------------------------ the shared reader


@settings(max_examples=300, deadline=None)
@given(INT32)
def test_varint_round_trip(value):
    out = bytearray()
    p.write_varint(out, value)
    assert len(out) <= p.VARINT_MAX_BYTES
    assert p.read_varint(bytes(out) + b"tail", 0) == (value, len(out))


@settings(max_examples=300, deadline=None)
@given(INT64)
def test_varlong_round_trip(value):
    out = bytearray()
    p.write_varlong(out, value)
    assert len(out) <= p.VARLONG_MAX_BYTES
    assert p.read_varlong(b"x" + bytes(out), 1) == (value, 1 + len(out))


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**64 - 1))
def test_unsigned_round_trip(value):
    encoded = p.encode_unsigned_varint(value)
    assert p.read_unsigned_varint(encoded, 0, p.VARLONG_MAX_BYTES) == (value, len(encoded))


def test_kafka_bounds_five_bytes_for_a_varint_ten_for_a_varlong():
    five = b"\x80\x80\x80\x80\x00"
    assert p.read_varint(five, 0) == (0, 5)
    with pytest.raises(ProtocolError, match="starting at offset 2 is longer than 5 bytes") as info:
        p.read_varint(b"ab\x80\x80\x80\x80\x80\x00", 2)
    assert info.value.offset == 7
    ten = b"\x80" * 9 + b"\x00"
    assert p.read_varlong(ten, 0) == (0, 10)
    with pytest.raises(ProtocolError, match="longer than 10 bytes") as info:
        p.read_varlong(b"\x80" * 10 + b"\x00", 0)
    assert info.value.offset == 10


def test_a_cut_off_varint_names_where_the_buffer_ends():
    with pytest.raises(ProtocolError, match="starting at offset 1 is cut off at offset 3") as info:
        p.read_varint(b"x\x80\x80", 1)
    assert info.value.offset == 3
    with pytest.raises(ProtocolError, match="cut off"):
        p.read_varint(b"", 0)


# ------------------------------------------------------------------ the inlined copies


def test_the_zigzag_table_is_the_shared_reader_on_every_one_and_two_byte_varint():
    """records.py and records_fast.py read one- and two-byte varints by ZIGZAG lookups."""
    zz = records_fast.ZIGZAG
    for b in range(0x80):
        assert p.read_varint(bytes([b]), 0) == (zz[b], 1)
    for low in range(0x80):
        for high in range(0x80):
            raw = bytes([low | 0x80, high])
            assert p.read_varint(raw, 0) == (zz[low | (high << 7)], 2)


def test_the_encoding_tables_are_the_shared_writer():
    for z in range(records_module._CACHE_SIZE):
        assert records_module._VARINT[z] == p.encode_unsigned_varint(z)
    for d in range(1 << 13):  # records_fast's consecutive offset deltas as two-byte varints
        encoded = p.encode_unsigned_varint(d << 1)
        if len(encoded) == 2:
            assert encoded == bytes([records_fast._DELTAS_2_HIGH[d], records_fast._DELTAS_2_LOW[d]])
    assert records_fast._DELTAS_1 == b"".join(p.encode_unsigned_varint(d << 1) for d in range(64))


def _shared_decode(section: bytes, count: int, base_offset: int, base_ts: int) -> list[Record]:
    """The records section read with nothing but the shared reader (the reference)."""
    records = []
    pos = 0
    for _ in range(count):
        length, pos = p.read_varint(section, pos)
        end = pos + length
        pos += 1
        ts, pos = p.read_varlong(section, pos)
        delta, pos = p.read_varint(section, pos)
        fields = []
        for _ in range(2):
            n, pos = p.read_varint(section, pos)
            fields.append(None if n < 0 else section[pos:pos + n])
            pos += max(n, 0)
        headers = []
        count_h, pos = p.read_varint(section, pos)
        for _ in range(count_h):
            n, pos = p.read_varint(section, pos)
            hkey = section[pos:pos + n].decode()
            pos += n
            n, pos = p.read_varint(section, pos)
            headers.append((hkey, None if n < 0 else section[pos:pos + n]))
            pos += max(n, 0)
        assert pos == end
        records.append(Record(base_offset + delta, base_ts + ts, fields[0], fields[1], headers))
    assert pos == len(section)
    return records


def _raw_record(ts_delta: int, offset_delta: int, key: bytes | None, value: bytes | None,
                headers: list[tuple[str, bytes | None]]) -> bytes:
    body = bytearray(b"\x00")
    p.write_varlong(body, ts_delta)
    p.write_varint(body, offset_delta)
    for field in (key, value):
        p.write_varint(body, -1 if field is None else len(field))
        body += field or b""
    p.write_varint(body, len(headers))
    for hkey, hvalue in headers:
        p.write_varint(body, len(hkey.encode()))
        body += hkey.encode()
        p.write_varint(body, -1 if hvalue is None else len(hvalue))
        body += hvalue or b""
    out = bytearray()
    p.write_varint(out, len(body))
    return bytes(out + body)


record_st = st.tuples(
    INT64.filter(lambda d: -(2**62) < d < 2**62),  # base_ts + delta stays an int64
    INT32,
    st.none() | st.binary(max_size=300),
    st.none() | st.binary(max_size=20_000),
    st.lists(st.tuples(st.text(max_size=5), st.none() | st.binary(max_size=200)), max_size=2),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(record_st, min_size=1, max_size=40) | st.lists(record_st, min_size=1,
                                                                 max_size=1).map(lambda r: r * 40))
def test_the_record_loops_decode_what_the_shared_reader_decodes(records):
    """The plain loop's and the run decoder's inlined varints against the shared reader."""
    section = b"".join(_raw_record(*r) for r in records)
    expected = _shared_decode(section, len(records), 0, 0)
    assert records_module._decode_records(section, len(records), 0, 0) == expected


# ------------------------------------------------------------------ the Spark source


def _column_outcome(raw: bytes, max_bytes: int):
    from simplekafka.spark.arrow_records import _varints

    buf = np.frombuffer(raw + bytes(16), np.uint8)
    values, sizes, too_long = _varints(buf, np.array([0], np.int64), max_bytes)
    if too_long[0]:
        return "too long"
    return int(values[0]), int(sizes[0])


def _shared_outcome(raw: bytes, max_bytes: int):
    read = p.read_varint if max_bytes == p.VARINT_MAX_BYTES else p.read_varlong
    try:
        return read(raw, 0)
    except ProtocolError:
        return "too long"


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([p.VARINT_MAX_BYTES, p.VARLONG_MAX_BYTES]),
       INT64 | st.binary(min_size=1, max_size=12).map(
           lambda b: bytes(x | 0x80 for x in b[:-1]) + bytes([b[-1] & 0x7F])))
def test_the_spark_columns_decode_what_the_shared_reader_decodes(max_bytes, value):
    if isinstance(value, int):
        out = bytearray()
        p.write_varlong(out, value)
        raw = bytes(out)
        if max_bytes == p.VARINT_MAX_BYTES and len(raw) > 5:
            raw = raw[:4] + bytes([raw[4] & 0x7F])  # a 5-byte varint out of int32's range
    else:
        raw = value
    assert _column_outcome(raw, max_bytes) == _shared_outcome(raw, max_bytes)


def _batch_of(section: bytes, count: int) -> bytes:
    """A batch of one uncompressed records section (header from build_batch, resealed)."""
    buf = bytearray(build_batch([(b"k", b"v")] * count)[:bh.HEADER_SIZE] + section)
    struct.pack_into(">i", buf, 8, len(buf) - bh.LOG_OVERHEAD)
    struct.pack_into(">I", buf, 17, bh.crc32c(memoryview(buf)[bh.CRC_START:]))
    return bytes(buf)


def _record_with_header_bytes(header_bytes: bytes) -> bytes:
    """One record, key b"k", value b"v", whose headers section is ``header_bytes``."""
    body = b"\x00\x00\x00" + b"\x02k" + b"\x02v" + header_bytes
    out = bytearray()
    p.write_varint(out, len(body))
    return bytes(out) + body


def _spark_headers(batch: bytes):
    from simplekafka.spark.arrow_records import decode_columns, to_arrow

    decoded, _ = decode_columns(batch, 0, 10)
    return to_arrow(decoded, "t", 0, include_headers=True).column("headers").to_pylist()


def test_the_spark_source_reads_good_headers():
    section = _record_with_header_bytes(b"\x02" + b"\x02a" + b"\x04xy")
    batch = _batch_of(section, 1)
    assert parse_batch(batch).records[0].headers == [("a", b"xy")]
    assert _spark_headers(batch) == [[{"key": "a", "value": b"xy"}]]


@pytest.mark.parametrize(
    ("header_bytes", "what"),
    [
        # one header whose key length is -1 (Kafka: "Invalid negative header key size");
        # the old reader stepped back a byte and made up a header with an empty key
        (b"\x02" + b"\x01" + b"\x04xy", "bad header key length"),
        # a header count of 1 written as an 11-byte varint: the old reader took it
        (b"\x82" + b"\x80" * 9 + b"\x00" + b"\x02a\x04xy", "longer than 5 bytes"),
        # a header key length of 1 written as a 6-byte varint: more than Kafka's 5
        (b"\x02" + b"\x82\x80\x80\x80\x80\x00" + b"a\x04xy", "longer than 5 bytes"),
        # a header value running past its record into the next one
        (b"\x02" + b"\x02a" + b"\x08xy", "declares|does not fit|cut"),
    ],
)
def test_the_spark_source_refuses_what_kafka_refuses(header_bytes, what):
    section = _record_with_header_bytes(header_bytes) + _record_with_header_bytes(b"\x00")
    batch = _batch_of(section, 2)
    with pytest.raises(CorruptBatchError, match=what):
        parse_batch(batch)
    with pytest.raises(CorruptBatchError, match=what):
        _spark_headers(batch)


def test_the_spark_source_refuses_a_six_byte_key_length():
    """Key lengths are read a column at a time: Kafka's 5-byte bound holds there too."""
    body = b"\x00\x00\x00" + b"\x82\x80\x80\x80\x80\x00" + b"k" + b"\x02v\x00"
    out = bytearray()
    p.write_varint(out, len(body))
    batch = _batch_of(bytes(out) + body, 1)
    with pytest.raises(CorruptBatchError, match="longer than 5 bytes"):
        parse_batch(batch)
    from simplekafka.spark.arrow_records import decode_columns

    with pytest.raises(CorruptBatchError, match="longer than 5 bytes"):
        decode_columns(batch, 0, 10)
