"""RecordBatch v2 and its records: the model, the builder and the plain parsing loop.

The broker never calls this module on its hot path (it only touches the batch
header, see :mod:`simplekafka.protocol.batch_header`); producers, consumers,
the dissector and the tests do.

A record inside a batch is small and varint-heavy (all lengths and deltas are
zigzag varints)::

    length        varint   bytes that follow, up to the end of this record
    attributes    int8     unused, always 0
    timestampDelta varlong  timestamp - batch baseTimestamp
    offsetDelta   varint   offset - batch baseOffset
    keyLength     varint   -1 means a null key
    key           bytes
    valueLength   varint   -1 means a null value
    value         bytes
    headerCount   varint
    headers       (keyLength varint, key utf-8, valueLength varint, value) * headerCount

The loops below are written for speed in pure Python: small varints come from a
precomputed table when encoding, and one- and two-byte varints are read inline
when decoding, because nearly every varint in a typical batch is that short
(docs/design-notes.md has the details, docs/benchmarks.md the figures). Runs of
same-shaped records are decoded a column at a time by
:mod:`simplekafka.protocol.records_fast`; the plain loop here handles the rest
and is the reference the run decoder is tested against.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple, overload

import crc32c as _crc32c

from simplekafka.protocol.batch_header import (
    ATTR_CONTROL,
    ATTR_TIMESTAMP_TYPE,
    ATTR_TRANSACTIONAL,
    HEADER_SIZE,
    LOG_OVERHEAD,
    BatchHeader,
    batch_spans,
    validate_batch,
)
from simplekafka.protocol.compression import Compression, compress, decompress
from simplekafka.protocol.errors import CorruptBatchError, ErrorCode, ProtocolError
from simplekafka.protocol.primitives import encode_unsigned_varint, read_varint, read_varlong
from simplekafka.protocol.records_fast import MIN_RUN, ZIGZAG
from simplekafka.protocol.records_fast import decode_run as _decode_run

__all__ = [
    "ControlMarker",
    "Record",
    "RecordBatch",
    "build_batch",
    "build_end_txn_marker",
    "parse_batch",
    "parse_batches",
    "parse_control_marker",
    "rebuild_batch",
]

MAGIC = 2
TIMESTAMP_CREATE_TIME = 0
TIMESTAMP_LOG_APPEND_TIME = 1

# bytes 21..60 of the header (the CRC-covered part), and bytes 0..20
_HEADER_TAIL = struct.Struct(">hiqqqhii")
_HEADER_HEAD = struct.Struct(">qiibI")

Header = tuple[str, "bytes | None"]


class Record(NamedTuple):
    """One record. ``offset`` is absolute once parsed; ``build_batch`` ignores it.

    ``timestamp`` is milliseconds since the epoch; None when building means "now".
    ``headers`` is a list of (key, value) pairs, keys are str, values bytes or None.
    """

    offset: int = 0
    timestamp: int | None = None
    key: bytes | None = None
    value: bytes | None = None
    headers: Sequence[Header] = ()


class RecordBatch:
    """A parsed batch: its header and its records (with absolute offsets)."""

    __slots__ = ("header", "records")

    def __init__(self, header: BatchHeader, records: list[Record]):
        self.header = header
        self.records = records

    def __iter__(self) -> Iterator[Record]:
        return iter(self.records)

    def __len__(self) -> int:
        return len(self.records)

    def __repr__(self) -> str:
        return (
            f"RecordBatch(base_offset={self.header.base_offset}, records={len(self.records)}, "
            f"compression={Compression(self.header.compression).name})"
        )

    @property
    def base_offset(self) -> int:
        return self.header.base_offset

    @property
    def last_offset(self) -> int:
        return self.header.last_offset

    @property
    def next_offset(self) -> int:
        return self.header.next_offset

    @property
    def size(self) -> int:
        """Bytes the batch occupies on the wire."""
        return self.header.size

    @property
    def compression(self) -> Compression:
        return Compression(self.header.compression)

    @property
    def timestamp_type(self) -> int:
        """0 CreateTime, 1 LogAppendTime."""
        return 1 if self.header.attributes & ATTR_TIMESTAMP_TYPE else 0

    @property
    def is_transactional(self) -> bool:
        return self.header.is_transactional

    @property
    def is_control(self) -> bool:
        return self.header.is_control


# ---------------------------------------------------------------- varints


# Varints come from the protocol layer's one reader and writer
# (simplekafka.protocol.primitives); the loops below read one- and two-byte
# varints inline with the ZIGZAG table and call the shared reader for the rest
# (stages/stage1_protocol/test_varints.py holds the two together).

# Encoded bytes of every zigzag value below this: one table lookup per varint.
_CACHE_SIZE = 1 << 14
_VARINT = tuple(encode_unsigned_varint(z) for z in range(_CACHE_SIZE))


def _varlong_bytes(z: int, timestamp: int, base_timestamp: int) -> bytes:
    """A zigzagged timestamp delta, which must fit Kafka's varlong (int64)."""
    if z >= 1 << 64:
        raise ValueError(
            f"timestamp {timestamp} is too far from the batch's first timestamp "
            f"{base_timestamp}: the delta must fit a signed 64-bit integer"
        )
    return encode_unsigned_varint(z)


def _zigzag_bytes(n: int) -> bytes:
    z = n << 1 if n >= 0 else ((-n) << 1) - 1
    return _VARINT[z] if z < _CACHE_SIZE else encode_unsigned_varint(z)


# Zigzag-decoded value of every one- or two-byte varint (the raw 14-bit number).
_ZIGZAG = ZIGZAG


# ---------------------------------------------------------------- building


@overload
def _as_bytes(data: None, what: str) -> None: ...
@overload
def _as_bytes(data: bytes | bytearray | memoryview | str, what: str) -> bytes: ...
def _as_bytes(data: Any, what: str) -> bytes | None:
    if data is None or type(data) is bytes:
        return data
    if isinstance(data, (bytearray, memoryview)):
        return bytes(data)
    if isinstance(data, str):
        return data.encode()
    raise TypeError(f"record {what} must be bytes, str or None, not {type(data).__name__}")


def _encode_headers(headers: Iterable[Header] | Mapping[str, bytes | None]) -> bytes:
    if isinstance(headers, Mapping):
        headers = list(headers.items())
    else:
        headers = list(headers)
    parts = [_zigzag_bytes(len(headers))]
    for item in headers:
        try:
            hkey, hvalue = item
        except (TypeError, ValueError):
            raise TypeError(f"a header must be a (key, value) pair, not {item!r}") from None
        raw_key: bytes
        if isinstance(hkey, str):
            raw_key = hkey.encode()
        elif isinstance(hkey, (bytes, bytearray, memoryview)):
            raw_key = bytes(hkey)
        else:
            raise TypeError(f"header key must be str, not {type(hkey).__name__}")
        hvalue = _as_bytes(hvalue, "header value")
        parts.append(_zigzag_bytes(len(raw_key)))
        parts.append(raw_key)
        if hvalue is None:
            parts.append(b"\x01")
        else:
            parts.append(_zigzag_bytes(len(hvalue)))
            parts.append(hvalue)
    return b"".join(parts)


# A record to build comes in one of three shapes (a Record, a (key, value) pair, a dict),
# each field of the caller's type, checked one by one in the loop below (a hot path: no
# narrowing beyond the checks it already makes), so these take and give Any.
def _unpack_record(rec: Any) -> tuple[Any, Any, Any, Any]:
    """(timestamp, key, value, headers) from a Record, a (key, value) pair or a dict."""
    if isinstance(rec, Record):
        return rec.timestamp, rec.key, rec.value, rec.headers
    if isinstance(rec, Mapping):
        unknown = set(rec) - {"key", "value", "headers", "timestamp", "offset"}
        if unknown:
            raise TypeError(f"unknown record fields: {sorted(unknown)}")
        return rec.get("timestamp"), rec.get("key"), rec.get("value"), rec.get("headers")
    if isinstance(rec, tuple) and len(rec) == 2:
        return None, rec[0], rec[1], None
    raise TypeError(
        f"a record must be a Record, a (key, value) tuple or a dict, not {type(rec).__name__}"
    )


def _encode_records(records: Sequence[Any], now_ms: int, offset_base: int | None = None,
                    base_timestamp: int | None = None) -> tuple[bytes, int, int]:
    """Encode the records section; returns (bytes, base_timestamp, max_timestamp).

    Offset deltas are the records' positions, or with ``offset_base`` their own
    ``offset - offset_base`` (a compacted batch keeps its records' offsets).
    """
    first_ts = _unpack_record(records[0])[0]
    base_ts = now_ms if first_ts is None else first_ts
    if base_timestamp is not None:
        base_ts = base_timestamp
    max_ts = base_ts
    varint = _VARINT
    limit = _CACHE_SIZE
    record_type = Record
    parts: list[bytes] = []
    append = parts.append
    for delta, rec in enumerate(records):
        if type(rec) is record_type:
            offset, ts, key, value, headers = rec
            if offset_base is not None:
                delta = offset - offset_base
        elif type(rec) is tuple and len(rec) == 2:
            key, value = rec
            ts = headers = None
        else:
            ts, key, value, headers = _unpack_record(rec)
        if ts is None:
            ts = now_ms
        elif type(ts) is not int:
            raise TypeError(f"record timestamp must be an int (ms), not {type(ts).__name__}")
        if ts > max_ts:
            max_ts = ts
        z = ts - base_ts
        z = z << 1 if z >= 0 else ((-z) << 1) - 1
        ts_part = varint[z] if z < limit else _varlong_bytes(z, ts, base_ts)
        z = delta << 1
        offset_part = varint[z] if z < limit else encode_unsigned_varint(z)
        if key is None:
            key_len = b"\x01"
            key = b""
        else:
            if type(key) is not bytes:
                key = _as_bytes(key, "key")
            z = len(key) << 1
            key_len = varint[z] if z < limit else encode_unsigned_varint(z)
        if value is None:
            value_len = b"\x01"
            value = b""
        else:
            if type(value) is not bytes:
                value = _as_bytes(value, "value")
            z = len(value) << 1
            value_len = varint[z] if z < limit else encode_unsigned_varint(z)
        header_part = _encode_headers(headers) if headers else b"\x00"
        body = b"".join(
            (b"\x00", ts_part, offset_part, key_len, key, value_len, value, header_part)
        )
        z = len(body) << 1
        append(varint[z] if z < limit else encode_unsigned_varint(z))
        append(body)
    return b"".join(parts), base_ts, max_ts


def build_batch(
    records: Iterable[Any],
    compression: int | str = 0,
    base_offset: int = 0,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    partition_leader_epoch: int = -1,
    is_transactional: bool = False,
    timestamp_type: int = TIMESTAMP_CREATE_TIME,
    is_control: bool = False,
    compression_level: int | None = None,
) -> bytes:
    """Encode ``records`` as one RecordBatch v2, ready for a ProduceRequest.

    Each record is a :class:`Record`, a ``(key, value)`` tuple or a dict with
    ``key``, ``value`` and optionally ``headers`` and ``timestamp``. Offsets are
    assigned by position (offset delta 0, 1, 2...); a record's own ``offset``
    is ignored. A missing timestamp means now. ``compression`` is a codec id
    or name (``"gzip"``...), ``compression_level`` the codec's level (None:
    the default in compression.DEFAULT_LEVELS). Raises ValueError or TypeError
    for bad arguments.
    """
    if not isinstance(records, Sequence):
        records = list(records)
    if not records:
        raise ValueError("a record batch needs at least one record")
    try:
        codec = Compression.of(compression)
    except CorruptBatchError as exc:
        raise ValueError(str(exc)) from None
    if timestamp_type not in (TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME):
        raise ValueError(
            f"timestamp_type must be 0 (CreateTime) or 1 (LogAppendTime), not {timestamp_type}"
        )
    now_ms = int(time.time() * 1000)
    payload, base_ts, max_ts = _encode_records(records, now_ms)
    if codec is not Compression.NONE:
        payload = compress(codec, payload, compression_level)
    attributes = int(codec)
    if timestamp_type == TIMESTAMP_LOG_APPEND_TIME:
        attributes |= ATTR_TIMESTAMP_TYPE
    if is_transactional:
        attributes |= ATTR_TRANSACTIONAL
    if is_control:
        attributes |= ATTR_CONTROL
    try:
        tail = _HEADER_TAIL.pack(
            attributes,
            len(records) - 1,
            base_ts,
            max_ts,
            producer_id,
            producer_epoch,
            base_sequence,
            len(records),
        )
        crc = _crc32c.crc32c(payload, _crc32c.crc32c(tail))
        head = _HEADER_HEAD.pack(
            base_offset, len(tail) + len(payload) + 9, partition_leader_epoch, MAGIC, crc
        )
    except struct.error as exc:
        raise ValueError(f"batch header field out of range: {exc}") from None
    return b"".join((head, tail, payload))


# ---------------------------------------------------------------- parsing

_FIRST_STRETCH = 8  # records decoded one by one after a miss, before the next try


def _decode_records(data: bytes, count: int, base_offset: int, base_ts: int) -> list[Record]:
    """Decode ``count`` records filling ``data`` exactly (offsets in errors are within data).

    Runs of records that share one shape are decoded a column at a time
    (:mod:`simplekafka.protocol.records_fast`); whatever is left goes through
    :func:`_decode_each`, the plain loop, which also reports every kind of
    damage. Both give the same records.
    """
    records: list[Record] = []
    end = len(data)
    if count < MIN_RUN:  # too few records for a run: the plain loop at once
        pos = _decode_each(data, 0, count, base_offset, base_ts, records)
        left = 0
    else:
        pos = 0
        left = count
    stretch = _FIRST_STRETCH
    while left > 0:
        taken, pos = _decode_run(data, pos, left, base_offset, base_ts, records, Record)
        if taken:
            left -= taken
            stretch = _FIRST_STRETCH
            continue
        # Not a run here: decode a stretch one by one, four times as long after
        # every miss in a row, so that a batch of records of all shapes costs
        # hardly more than the plain loop.
        taken = min(left, stretch)
        pos = _decode_each(data, pos, taken, base_offset, base_ts, records)
        left -= taken
        stretch *= 4
    if pos != end:
        raise CorruptBatchError(
            f"{end - pos} bytes left over after {count} records",
            ErrorCode.CORRUPT_MESSAGE,
            offset=pos,
            expected="end of batch",
        )
    return records


def _decode_each(
    data: bytes, pos: int, count: int, base_offset: int, base_ts: int, records: list[Record]
) -> int:
    """Decode ``count`` records one by one from ``pos`` into ``records``; the new position.

    The general path: any record shape, every field checked.

    Each varint is read inline: one byte (the common case), two bytes (lengths
    up to 8191), or else by the protocol layer's one reader (``read_varint``,
    at most 5 bytes; ``read_varlong`` for the timestamp delta, at most 10);
    ``zz`` turns a one- or two-byte varint into its zigzag-decoded value with
    one lookup. Calling the shared reader for every varint costs more than the
    inlined lookups (docs/benchmarks.md); stages/stage1_protocol/test_varints.py holds them to it.
    """
    append = records.append
    new = tuple.__new__
    record_type = Record
    varint = read_varint
    zz = _ZIGZAG
    end = len(data)
    rec_start = pos
    try:
        for _ in range(count):
            rec_start = pos
            v = data[pos]
            if v < 0x80:
                n = zz[v]
                pos += 1
            elif data[pos + 1] < 0x80:
                n = zz[(v & 0x7F) | (data[pos + 1] << 7)]
                pos += 2
            else:
                n, pos = varint(data, pos)
            rec_end = pos + n
            if rec_end > end or n <= 0:
                raise CorruptBatchError(
                    f"record length {n} does not fit the {end - pos} bytes left",
                    offset=rec_start,
                    expected=f"record length 1..{end - pos}",
                )
            pos += 1  # attributes: unused in v2
            v = data[pos]
            if v < 0x80:
                n = zz[v]
                pos += 1
            elif data[pos + 1] < 0x80:
                n = zz[(v & 0x7F) | (data[pos + 1] << 7)]
                pos += 2
            else:
                n, pos = read_varlong(data, pos)
            timestamp = base_ts + n
            v = data[pos]
            if v < 0x80:
                n = zz[v]
                pos += 1
            elif data[pos + 1] < 0x80:
                n = zz[(v & 0x7F) | (data[pos + 1] << 7)]
                pos += 2
            else:
                n, pos = varint(data, pos)
            offset = base_offset + n
            v = data[pos]
            if v < 0x80:
                n = zz[v]
                pos += 1
            elif data[pos + 1] < 0x80:
                n = zz[(v & 0x7F) | (data[pos + 1] << 7)]
                pos += 2
            else:
                n, pos = varint(data, pos)
            if n < 0:  # a negative length is a null key
                key = None
            else:
                key = data[pos : pos + n]
                pos += n
            v = data[pos]
            if v < 0x80:
                n = zz[v]
                pos += 1
            elif data[pos + 1] < 0x80:
                n = zz[(v & 0x7F) | (data[pos + 1] << 7)]
                pos += 2
            else:
                n, pos = varint(data, pos)
            if n < 0:
                value = None
            else:
                value = data[pos : pos + n]
                pos += n
            headers: list[Header]
            if data[pos] == 0:
                pos += 1
                headers = []
            else:
                headers, pos = _decode_headers(data, pos)
            if pos != rec_end:
                raise CorruptBatchError(
                    f"record declares {rec_end - rec_start} bytes but its fields take "
                    f"{pos - rec_start}",
                    offset=rec_start,
                    expected="record length matching its fields",
                )
            append(new(record_type, (offset, timestamp, key, value, headers)))
    except IndexError:
        raise CorruptBatchError(
            f"record at byte {rec_start} of the records section is cut short",
            offset=end,
            expected="more record bytes",
        ) from None
    except CorruptBatchError:
        raise
    except ProtocolError as exc:  # a varint too long or cut off: the batch is corrupt
        raise CorruptBatchError(
            f"record at byte {rec_start} of the records section: {exc}",
            offset=exc.offset,
            expected=exc.expected,
        ) from None
    return pos


def _decode_headers(data: bytes, pos: int) -> tuple[list[Header], int]:
    start = pos
    count, pos = read_varint(data, pos)
    if count < 0:
        raise CorruptBatchError(
            f"negative header count {count}", offset=start, expected="header count >= 0"
        )
    headers: list[Header] = []
    for _ in range(count):
        field = pos
        size, pos = read_varint(data, pos)
        if size < 0 or pos + size > len(data):
            raise CorruptBatchError(
                f"bad header key length {size}", offset=field, expected="header key length >= 0"
            )
        try:
            hkey = data[pos : pos + size].decode()
        except UnicodeDecodeError:
            raise CorruptBatchError(
                "header key is not valid UTF-8", offset=pos, expected="a UTF-8 header key"
            ) from None
        pos += size
        size, pos = read_varint(data, pos)
        if size < 0:
            hvalue = None
        else:
            hvalue = data[pos : pos + size]
            pos += size
        headers.append((hkey, hvalue))
    return headers, pos


def parse_batch(
    buf: bytes | bytearray | memoryview, pos: int = 0, check_crc: bool = True,
    max_decompressed_bytes: int | None = None,
) -> RecordBatch:
    """Validate and decode the batch at ``pos``: header, decompressed records, absolute offsets.

    Raises CorruptBatchError (a ProtocolError) for anything wrong; ``offset``
    is a byte position in ``buf`` (within the decompressed records section for
    errors inside a compressed batch, where no position in ``buf`` exists).
    A compressed section that would grow past ``max_decompressed_bytes``
    raises DecompressedTooLargeError (a CorruptBatchError) instead.
    """
    header = validate_batch(buf, pos, check_crc)
    section = memoryview(buf)[pos + HEADER_SIZE : pos + header.size]
    codec = header.attributes & 0x07
    compressed = codec != 0
    data = decompress(codec, section, max_decompressed_bytes) if compressed else bytes(section)
    try:
        records = _decode_records(
            data, header.records_count, header.base_offset, header.base_timestamp
        )
    except CorruptBatchError as exc:
        if not compressed and exc.offset is not None:
            exc.offset += pos + HEADER_SIZE
        raise
    if header.attributes & ATTR_TIMESTAMP_TYPE:
        # LogAppendTime: the broker's time, kept once in maxTimestamp, is every record's time
        append_time = header.max_timestamp
        records = [record._replace(timestamp=append_time) for record in records]
    return RecordBatch(header, records)


def rebuild_batch(original: BatchHeader, records: Sequence[Record],
                  base_timestamp: int | None = None, attributes: int | None = None) -> bytes:
    """A batch holding ``records`` (a subset of ``original``'s) under ``original``'s header.

    What the log cleaner writes: base offset, last offset delta, producer
    fields, partition leader epoch and codec stay; the records keep their
    offsets (gaps are fine); maxTimestamp is recomputed (kept under
    LogAppendTime); the CRC is new. ``base_timestamp`` and ``attributes``
    replace the originals (the cleaner stores a delete horizon there, KIP-534).
    """
    if not records:
        raise ValueError("a rebuilt batch needs at least one record")
    attributes = original.attributes if attributes is None else attributes
    if attributes & ATTR_TIMESTAMP_TYPE:  # every record's time is the batch's maxTimestamp
        base_timestamp = original.base_timestamp if base_timestamp is None else base_timestamp
        records = [record._replace(timestamp=base_timestamp) for record in records]
        max_ts = original.max_timestamp
    else:
        max_ts = max(record.timestamp if record.timestamp is not None else -1
                     for record in records)
    payload, base_ts, _ = _encode_records(records, 0, original.base_offset, base_timestamp)
    codec = attributes & 0x07
    if codec:
        payload = compress(codec, payload)
    tail = _HEADER_TAIL.pack(attributes, original.last_offset_delta, base_ts, max_ts,
                             original.producer_id, original.producer_epoch,
                             original.base_sequence, len(records))
    crc = _crc32c.crc32c(payload, _crc32c.crc32c(tail))
    head = _HEADER_HEAD.pack(original.base_offset, len(tail) + len(payload) + 9,
                             original.partition_leader_epoch, MAGIC, crc)
    return b"".join((head, tail, payload))


def parse_batches(buf: bytes | bytearray | memoryview) -> list[RecordBatch]:
    """Every whole batch in a records field (e.g. a fetch response); a partial last one is left out.

    A batch whose own length field is impossible (shorter than a header) is
    corrupt, not partial, and raises CorruptBatchError.
    """
    batches = []
    end = len(buf)
    for pos, size in batch_spans(buf):
        if size < HEADER_SIZE:
            raise CorruptBatchError(
                f"batchLength {size - LOG_OVERHEAD} is shorter than a batch header",
                offset=pos + 8,
                expected=f"batchLength >= {HEADER_SIZE - LOG_OVERHEAD}",
            )
        if pos + size > end:
            break
        batches.append(parse_batch(buf, pos))
    return batches


# ---------------------------------------------------------------- control records
#
# A transaction ends with a control batch that the partition leader writes
# (never a client): attributes have the control (0x20) and transactional (0x10)
# bits, producerId and producerEpoch are the transaction's, baseSequence is -1,
# and it holds one record whose key and value are Kafka's control formats:
#
#     key    int16 version (0)   int16 type (0 ABORT, 1 COMMIT)
#     value  int16 version (0)   int32 coordinatorEpoch      (EndTransactionMarker)

CONTROL_TYPE_ABORT = 0
CONTROL_TYPE_COMMIT = 1
_CONTROL_KEY = struct.Struct(">hh")
_END_TXN_VALUE = struct.Struct(">hi")


class ControlMarker(NamedTuple):
    """What an end-of-transaction control record says."""

    commit: bool
    coordinator_epoch: int
    version: int = 0


def build_end_txn_marker(producer_id: int, producer_epoch: int, commit: bool,
                         coordinator_epoch: int, timestamp: int | None = None,
                         base_offset: int = 0, partition_leader_epoch: int = -1) -> bytes:
    """The control batch that commits or aborts ``producer_id``'s transaction on a partition."""
    key = _CONTROL_KEY.pack(0, CONTROL_TYPE_COMMIT if commit else CONTROL_TYPE_ABORT)
    value = _END_TXN_VALUE.pack(0, coordinator_epoch)
    return build_batch([Record(timestamp=timestamp, key=key, value=value)],
                       base_offset=base_offset, producer_id=producer_id,
                       producer_epoch=producer_epoch, base_sequence=-1,
                       partition_leader_epoch=partition_leader_epoch,
                       is_transactional=True, is_control=True)


def parse_control_marker(record: Record) -> ControlMarker | None:
    """The marker in a control batch's record; None for a control type that is not one
    (Kafka reserves other types, and readers skip what they do not know)."""
    key = record.key
    if key is None or len(key) < _CONTROL_KEY.size:
        raise CorruptBatchError("control record key shorter than 4 bytes",
                                ErrorCode.CORRUPT_MESSAGE, expected="int16 version, int16 type")
    _version, kind = _CONTROL_KEY.unpack_from(key)
    if kind not in (CONTROL_TYPE_ABORT, CONTROL_TYPE_COMMIT):
        return None
    value = record.value
    if value is None or len(value) < _END_TXN_VALUE.size:
        raise CorruptBatchError("end transaction marker value shorter than 6 bytes",
                                ErrorCode.CORRUPT_MESSAGE,
                                expected="int16 version, int32 coordinator epoch")
    version, coordinator_epoch = _END_TXN_VALUE.unpack_from(value)
    return ControlMarker(kind == CONTROL_TYPE_COMMIT, coordinator_epoch, version)
