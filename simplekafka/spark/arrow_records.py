"""Kafka record batches straight into Arrow columns, a column at a time.

``read()`` hands Spark ``pyarrow.RecordBatch`` objects: Spark's Python data
source moves Arrow to the JVM several times faster than tuples. Building them
without a Python object per record is the point of this module:

1. every record batch's header is checked (CRC included) and its records
   section, decompressed if needed, is appended to one buffer;
2. the start of every record is found: at once, when every record of a batch
   has the same length (what producers of fixed-shape data write), else by a
   short loop that reads only each record's length varint;
3. every other field (timestamp and offset deltas, key and value lengths,
   header count) is read for all records together with numpy: a varint column
   is decoded one byte position at a time across all records;
4. key and value bytes are gathered into Arrow binary buffers by fancy
   indexing; topic, partition and timestamp type columns are built whole.

Anything inconsistent is handed to :func:`simplekafka.protocol.records.parse_batch`,
which names the damage. Headers are decoded per record (they are rare and
small) and checked against their record's end whether or not ``includeHeaders``
asks for them. Every varint is the protocol layer's
(:func:`simplekafka.protocol.primitives.read_varint`, or the same decoding a
column at a time in numpy), with Kafka's bounds: 5 bytes for a varint, 10 for
the timestamp delta's varlong.
"""

from __future__ import annotations

from typing import NoReturn

import numpy as np
import pyarrow as pa

from simplekafka.protocol.batch_header import (
    ATTR_TIMESTAMP_TYPE,
    HEADER_SIZE,
    iter_batch_positions,
    validate_batch,
)
from simplekafka.protocol.compression import DEFAULT_MAX_DECOMPRESSED_BYTES, decompress
from simplekafka.protocol.errors import CorruptBatchError, ErrorCode, ProtocolError
from simplekafka.protocol.primitives import VARINT_MAX_BYTES, VARLONG_MAX_BYTES, read_varint
from simplekafka.protocol.records import parse_batch
from simplekafka.protocol.records_fast import ZIGZAG

_PAD = bytes(16)  # varint reads may look up to 10 bytes past a record's last field

HEADER_TYPE = pa.list_(
    pa.field("element", pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())]))
)


def kafka_arrow_schema(include_headers: bool) -> pa.Schema:
    """The Arrow form of Spark's Kafka source schema (what Spark checks ``read()`` against)."""
    fields = [
        pa.field("key", pa.binary()),
        pa.field("value", pa.binary()),
        pa.field("topic", pa.string()),
        pa.field("partition", pa.int32()),
        pa.field("offset", pa.int64()),
        pa.field("timestamp", pa.timestamp("us", tz="UTC")),
        pa.field("timestampType", pa.int32()),
    ]
    if include_headers:
        fields.append(pa.field("headers", HEADER_TYPE))
    return pa.schema(fields)


def _varints(
    buf: np.ndarray, at: np.ndarray, max_bytes: int = VARINT_MAX_BYTES
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Zigzag varints starting at every position of ``at``: (values, sizes, too long).

    The protocol layer's varint (:func:`simplekafka.protocol.primitives.read_varint`)
    read a column at a time with numpy; stages/stage1_protocol/test_varints.py holds the two
    together. Kafka's bound holds: at most ``max_bytes`` bytes (5 for a varint,
    10 for the timestamp's varlong); ``too long`` marks the varints that go on.
    Decoded in unsigned 64 bits, so a varlong's top bit survives the zigzag
    (the old signed decoding turned the largest deltas negative).
    """
    first = buf[at]
    value = (first & 0x7F).astype(np.uint64)
    size = np.ones(len(at), np.int64)
    more = first >= 0x80
    shift = 7
    while more.any() and shift < 7 * max_bytes:
        idx = np.nonzero(more)[0]
        byte = buf[at[idx] + size[idx]].astype(np.uint64)
        value[idx] |= (byte & np.uint64(0x7F)) << np.uint64(shift)
        size[idx] += 1
        more[idx] = byte >= 0x80
        shift += 7
    if max_bytes == VARINT_MAX_BYTES:  # an int32: bits past the 32nd dropped, as Kafka does
        value &= np.uint64(0xFFFFFFFF)
    signed = (value >> np.uint64(1)).astype(np.int64) ^ -(value & np.uint64(1)).astype(np.int64)
    return signed, size, more


def _record_starts(section: bytes, count: int, base: int) -> np.ndarray | None:
    """Start of each record in ``section`` (shifted by ``base``); None if it does not add up.

    Records of one length sit at a fixed stride, and a producer's batch is
    mostly such runs (the offset delta's varint grows a byte at 64, the
    timestamp delta's now and then): a run is found with one numpy comparison
    per length byte. Where lengths vary, a plain loop reads only the length
    varints, for a stretch that grows while runs keep failing.
    """
    data = np.frombuffer(section, np.uint8)
    end = len(section)
    zz = ZIGZAG  # checked against the shared reader by test_varints.py
    parts = []
    pos = 0
    left = count
    stretch = 0
    while left > 0:
        if pos >= end:
            return None
        if stretch:  # lengths vary here: the plain loop for a while
            taken = min(stretch, left)
            starts: list[int] = []
            append = starts.append
            for _ in range(taken):
                if pos >= end:
                    return None
                append(pos)
                v = section[pos]
                if v < 0x80:  # one- and two-byte lengths inline, as records.py reads them
                    pos += 1 + zz[v]
                elif pos + 1 < end and section[pos + 1] < 0x80:
                    pos += 2 + zz[(v & 0x7F) | (section[pos + 1] << 7)]
                else:
                    try:
                        n, pos = read_varint(section, pos)
                    except ProtocolError:
                        return None
                    pos += n
            parts.append(np.array(starts, np.int64))
            left -= taken
            stretch = min(stretch * 2, 4096)
            if pos > end:
                return None
            # fall through to try a run again
            if left == 0:
                break
        try:
            length, body = read_varint(section, pos)
        except ProtocolError:
            return None
        size = body - pos
        stride = size + length
        if stride <= size:
            return None
        most = min(left, (end - pos) // stride)
        if most < 1:
            return None
        run = most
        if most > 1:
            stop = pos + most * stride
            for k in range(size):
                column = data[pos + k:stop:stride]
                misses = np.flatnonzero(column != column[0])
                if len(misses):
                    run = min(run, int(misses[0]))
        parts.append(pos + np.arange(run, dtype=np.int64) * stride)
        pos += run * stride
        left -= run
        stretch = 0 if run >= 16 else max(16, stretch)
    if pos != end:
        return None
    return (np.concatenate(parts) if len(parts) > 1 else parts[0]) + base


def _binary(buf: np.ndarray, at: np.ndarray, length: np.ndarray, kind: pa.DataType) -> pa.Array:
    """A binary (or string) Arrow array of ``buf[at:at+length]``, null where ``length < 0``."""
    n = len(at)
    valid = length >= 0
    lens = np.where(valid, length, 0)
    offsets = np.zeros(n + 1, np.int32)
    np.cumsum(lens, out=offsets[1:])
    total = int(offsets[-1])
    if total == 0:
        data = np.empty(0, np.uint8)
    elif n and lens.min() == lens.max():  # one length for all: a 2-D gather
        data = buf[(at[:, None] + np.arange(int(lens[0]))).ravel()]
    else:
        data = buf[np.repeat(at - offsets[:-1], lens) + np.arange(total)]
    nulls = n - int(valid.sum())
    validity = None if nulls == 0 else pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(
        kind, n, [validity, pa.py_buffer(offsets), pa.py_buffer(data)], null_count=nulls
    )


def _fixed(values: np.ndarray, kind: pa.DataType, dtype: type) -> pa.Array:
    """A null-free fixed-width Arrow array over ``values`` as ``dtype``.

    Built from the buffer, as the binary columns are: ``pa.array`` of a numpy array
    imports pandas when it is installed (to ask whether the array is a pandas one),
    which cost each Spark worker process about 0.75 s of CPU before its first batch.
    """
    data: np.ndarray = np.ascontiguousarray(values, dtype=dtype)
    return pa.Array.from_buffers(kind, len(data), [None, pa.py_buffer(data)], null_count=0)


def _repeated_string(text: str, n: int) -> pa.Array:
    raw = text.encode()
    offsets = np.arange(n + 1, dtype=np.int32) * len(raw)
    return pa.Array.from_buffers(
        pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(raw * n)]
    )


def _headers_of(data: bytes, pos: int, end: int) -> list[dict] | None:
    """The headers of the record whose headers start at ``pos`` and which ends at ``end``.

    None if they do not add up (a negative count or key length, a varint too
    long, a header past the record's end): the batch is then handed to
    parse_batch, which names the damage.
    """
    try:
        count, pos = read_varint(data, pos)
        headers = []
        for _ in range(count):
            size, pos = read_varint(data, pos)
            if size < 0 or pos + size > end:
                return None
            key = data[pos:pos + size].decode()
            pos += size
            size, pos = read_varint(data, pos)
            value = None if size < 0 else data[pos:pos + size]
            pos += max(size, 0)
            headers.append({"key": key, "value": value})
    except (ProtocolError, UnicodeDecodeError):
        return None
    return headers if pos == end else None


class DecodedRecords:
    """The columns of the records kept from one fetch answer (numpy, before Arrow)."""

    def __init__(self, buf: bytes, arrays: dict[str, np.ndarray],
                 headers: dict[int, list[dict]] | None = None) -> None:
        self.buf = buf
        self.arrays = arrays
        self.headers = headers or {}  # the decoded headers, by where they start in buf

    def __len__(self) -> int:
        return len(self.arrays["offset"])

    @property
    def next_offset(self) -> int | None:
        offsets = self.arrays["offset"]
        return int(offsets[-1]) + 1 if len(offsets) else None


def decode_columns(
    records: bytes | memoryview, low: int, high: int, check_crc: bool = True
) -> tuple[DecodedRecords, int]:
    """The records with ``low <= offset < high`` of a fetch answer, as numpy columns.

    Also returns the offset after the last whole batch (where the next fetch starts).
    """
    sections: list[bytes] = []
    counts: list[int] = []
    bases: list[int] = []
    base_ts: list[int] = []
    log_append: list[int] = []  # the batch's max timestamp if LogAppendTime, else -1
    batch_starts: list[tuple[int, int]] = []
    next_fetch = low
    length = 0
    for pos, size in iter_batch_positions(records):
        header = validate_batch(records, pos, check_crc)
        next_fetch = max(next_fetch, header.next_offset)
        if header.next_offset <= low or header.base_offset >= high or header.is_control:
            continue
        raw = memoryview(records)[pos + HEADER_SIZE:pos + size]
        codec = header.attributes & 0x07
        section = decompress(codec, raw, DEFAULT_MAX_DECOMPRESSED_BYTES) if codec else bytes(raw)
        sections.append(section)
        counts.append(header.records_count)
        bases.append(header.base_offset)
        base_ts.append(header.base_timestamp)
        log_append.append(header.max_timestamp if header.attributes & ATTR_TIMESTAMP_TYPE else -1)
        batch_starts.append((pos, length))
        length += len(section)
    starts_parts: list[np.ndarray] = []
    offset_in_buf = 0
    for i, section in enumerate(sections):
        starts = _record_starts(section, counts[i], offset_in_buf)
        if starts is None:
            _raise_corrupt(records, batch_starts[i][0])
        starts_parts.append(starts)
        offset_in_buf += len(section)
    buf_bytes = b"".join(sections) + _PAD
    buf = np.frombuffer(buf_bytes, np.uint8)
    starts = np.concatenate(starts_parts) if starts_parts else np.empty(0, np.int64)
    counts_arr = np.array(counts, np.int64)
    rec_len, n0, long0 = _varints(buf, starts)
    rec_end = starts + n0 + rec_len
    ts_delta, n1, long1 = _varints(buf, starts + n0 + 1, VARLONG_MAX_BYTES)
    offset_at = starts + n0 + 1 + n1
    offset_delta, n2, long2 = _varints(buf, offset_at)
    key_len_at = offset_at + n2
    key_len, n3, long3 = _varints(buf, key_len_at)
    key_at = key_len_at + n3
    value_len_at = key_at + np.maximum(key_len, 0)
    value_len, n4, long4 = _varints(buf, value_len_at)
    value_at = value_len_at + n4
    headers_at = value_at + np.maximum(value_len, 0)
    header_count, n5, long5 = _varints(buf, headers_at)
    bad = (headers_at + n5 > rec_end) | ((header_count == 0) & (headers_at + n5 != rec_end))
    bad |= (header_count < 0) | (key_len < -1) | (value_len < -1)
    bad |= long0 | long1 | long2 | long3 | long4 | long5
    headers: dict[int, list[dict]] = {}  # by where they start in buf_bytes
    if not bad.any():  # records with headers: each read and checked against its end
        for k in np.flatnonzero(header_count > 0):
            parsed = _headers_of(buf_bytes, int(headers_at[k]), int(rec_end[k]))
            if parsed is None:
                bad[k] = True
                break
            headers[int(headers_at[k])] = parsed
    if bad.any():
        which = int(np.searchsorted(np.cumsum(counts_arr), int(np.argmax(bad)), side="right"))
        _raise_corrupt(records, batch_starts[which][0])
    offsets = np.repeat(np.array(bases, np.int64), counts_arr) + offset_delta
    appended = np.repeat(np.array(log_append, np.int64), counts_arr)
    timestamps = np.where(
        appended >= 0, appended, np.repeat(np.array(base_ts, np.int64), counts_arr) + ts_delta
    )
    keep = (offsets >= low) & (offsets < high)
    pick: np.ndarray | slice
    if not keep.all():
        pick = np.nonzero(keep)[0]
    else:
        pick = slice(None)
    arrays = {
        "offset": offsets[pick],
        "timestamp": timestamps[pick],
        "timestamp_type": (appended[pick] >= 0).astype(np.int32),
        "key_at": key_at[pick],
        "key_len": key_len[pick],
        "value_at": value_at[pick],
        "value_len": value_len[pick],
        "headers_at": headers_at[pick],
        "header_count": header_count[pick],
    }
    return DecodedRecords(buf_bytes, arrays, headers), next_fetch


def _raise_corrupt(records: bytes | memoryview, pos: int) -> NoReturn:
    parse_batch(records, pos)  # names the damage
    raise CorruptBatchError(
        "record batch fields do not add up", ErrorCode.CORRUPT_MESSAGE, offset=pos,
        expected="records that fill their batch",
    )


def to_arrow(
    decoded: DecodedRecords, topic: str, partition: int, include_headers: bool
) -> pa.RecordBatch:
    """Spark's Kafka schema as one Arrow record batch (see :func:`kafka_arrow_schema`)."""
    cols = decoded.arrays
    n = len(decoded)
    buf = np.frombuffer(decoded.buf, np.uint8)
    columns = [
        _binary(buf, cols["key_at"], cols["key_len"], pa.binary()),
        _binary(buf, cols["value_at"], cols["value_len"], pa.binary()),
        _repeated_string(topic, n),
        _fixed(np.full(n, partition, np.int32), pa.int32(), np.int32),
        _fixed(cols["offset"], pa.int64(), np.int64),
        _fixed(cols["timestamp"] * 1000, pa.timestamp("us", tz="UTC"), np.int64),
        _fixed(cols["timestamp_type"], pa.int32(), np.int32),
    ]
    if include_headers:
        lists: list[list[dict]] = [[] for _ in range(n)]
        for i in np.nonzero(cols["header_count"] > 0)[0]:
            lists[i] = decoded.headers[int(cols["headers_at"][i])]
        columns.append(pa.array(lists, HEADER_TYPE))
    return pa.RecordBatch.from_arrays(columns, schema=kafka_arrow_schema(include_headers))
