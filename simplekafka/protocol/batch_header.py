"""The broker's hot path: read, check and patch a RecordBatch v2 header in place.

The broker never decodes records. It checks the 61-byte header, verifies the
CRC-32C over bytes 21..end, and writes baseOffset (bytes 0-7) and
partitionLeaderEpoch (bytes 12-15), which the CRC does not cover. Everything
here works on ``bytes``, ``bytearray`` or ``memoryview`` without copying the
records.

Layout (offset, field): 0 baseOffset int64, 8 batchLength int32, 12
partitionLeaderEpoch int32, 16 magic int8, 17 crc uint32, 21 attributes int16,
23 lastOffsetDelta int32, 27 baseTimestamp int64, 35 maxTimestamp int64, 43
producerId int64, 51 producerEpoch int16, 53 baseSequence int32, 57
recordsCount int32, 61 records.
"""

from __future__ import annotations

import struct
from itertools import accumulate
from typing import NamedTuple

import crc32c as _crc32c

from simplekafka.protocol.errors import CorruptBatchError, ErrorCode

HEADER_SIZE = 61
LOG_OVERHEAD = 12  # baseOffset + batchLength: bytes not counted in batchLength
CRC_START = 21
MAGIC_V2 = 2

_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_INT16 = struct.Struct(">h")
_UINT32 = struct.Struct(">I")
_HEADER = struct.Struct(">qiibIhiqqqhii")

ATTR_COMPRESSION_MASK = 0x07
ATTR_TIMESTAMP_TYPE = 0x08
ATTR_TRANSACTIONAL = 0x10
ATTR_CONTROL = 0x20
ATTR_DELETE_HORIZON = 0x40


def crc32c(data: bytes | bytearray | memoryview) -> int:
    """CRC-32C (Castagnoli), the checksum of RecordBatch v2."""
    return _crc32c.crc32c(data)


class BatchHeader(NamedTuple):
    """The fixed 61-byte header of a RecordBatch v2."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def size(self) -> int:
        """Bytes the whole batch occupies, header included."""
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def compression(self) -> int:
        return self.attributes & ATTR_COMPRESSION_MASK

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & ATTR_TRANSACTIONAL)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & ATTR_CONTROL)

    @property
    def last_sequence(self) -> int:
        """Sequence of the last record (wrapping at 2**31 like the Java client)."""
        if self.base_sequence < 0:
            return -1
        return (self.base_sequence + self.last_offset_delta) % (1 << 31)


def read_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    """Unpack the header at ``pos`` (no checks beyond having 61 bytes)."""
    if len(buf) - pos < HEADER_SIZE:
        raise CorruptBatchError(
            f"record batch header needs {HEADER_SIZE} bytes, only {len(buf) - pos} available",
            offset=len(buf),
            expected=f"{HEADER_SIZE}-byte batch header",
        )
    return BatchHeader._make(_HEADER.unpack_from(buf, pos))


def batch_size_at(buf: bytes | bytearray | memoryview, pos: int = 0) -> int | None:
    """Total size of the batch starting at ``pos``, or None if fewer than 12 bytes remain."""
    if len(buf) - pos < LOG_OVERHEAD:
        return None
    return _INT32.unpack_from(buf, pos + 8)[0] + LOG_OVERHEAD


def validate_batch(
    buf: bytes | bytearray | memoryview, pos: int = 0, check_crc: bool = True
) -> BatchHeader:
    """Check one batch at ``pos`` (length, magic, CRC) and return its header.

    Raises CorruptBatchError naming what is wrong; ``error_code`` is what a
    broker should answer (CORRUPT_MESSAGE, or INVALID_RECORD for a batch whose
    fields contradict each other).
    """
    available = len(buf) - pos
    if available < HEADER_SIZE:
        raise CorruptBatchError(
            f"truncated batch: {available} bytes, a header alone is {HEADER_SIZE}",
            offset=pos + max(available, 0),
            expected="a complete 61-byte header",
        )
    fields = _HEADER.unpack_from(buf, pos)
    length = fields[1]
    size = length + LOG_OVERHEAD
    # one combined test on the hot path; _reject says which rule failed
    if (
        fields[3] != MAGIC_V2
        or length < _MIN_LENGTH
        or size > available
        or (fields[12] < 0 or fields[6] < 0)
    ):
        _reject(_new_header(BatchHeader, fields), pos, available)
    if check_crc:
        actual = _crc32c.crc32c(memoryview(buf)[pos + CRC_START : pos + size])
        if actual != fields[4]:
            raise CorruptBatchError(
                f"CRC mismatch: header says 0x{fields[4]:08x}, bytes give 0x{actual:08x}",
                offset=pos + 17,
                expected=f"crc 0x{actual:08x}",
            )
    return _new_header(BatchHeader, fields)


_MIN_LENGTH = HEADER_SIZE - LOG_OVERHEAD
_new_header = tuple.__new__


def _reject(header: BatchHeader, pos: int, available: int) -> None:
    """Raise the error for the first rule ``header`` breaks, in a fixed order."""
    if header.magic != MAGIC_V2:
        raise CorruptBatchError(
            f"unsupported magic {header.magic}, only 2 (RecordBatch v2) is supported",
            offset=pos + 16,
            expected="magic 2",
        )
    if header.batch_length < _MIN_LENGTH:
        raise CorruptBatchError(
            f"batchLength {header.batch_length} is shorter than the header",
            offset=pos + 8,
            expected=f"batchLength >= {_MIN_LENGTH}",
        )
    if header.size > available:
        raise CorruptBatchError(
            f"batchLength {header.batch_length} runs past the end "
            f"({available - LOG_OVERHEAD} bytes follow the length field)",
            offset=pos + 8,
            expected=f"batchLength <= {available - LOG_OVERHEAD}",
        )
    raise CorruptBatchError(
        "negative recordsCount or lastOffsetDelta",
        ErrorCode.INVALID_RECORD,
        offset=pos + 23,
        expected="non-negative counts",
    )


def batch_spans(buf: bytes | bytearray | memoryview, pos: int = 0) -> list[tuple[int, int]]:
    """(position, size) of each batch back to back from ``pos``, by batchLength alone.

    The one walk over whole batches: every other (validation, parsing, the
    dissector, the log, fetch trimming) is built on it. The last span may run
    past the end of ``buf`` (a partial batch) or be shorter than a header
    (damage): the walk stops there and the caller decides what that means.
    Fewer than 12 trailing bytes give no span.
    """
    spans: list[tuple[int, int]] = []
    append = spans.append
    end = len(buf)
    unpack = _INT32.unpack_from
    while end - pos >= LOG_OVERHEAD:
        size = unpack(buf, pos + 8)[0] + LOG_OVERHEAD
        append((pos, size))
        if size < HEADER_SIZE or pos + size > end:
            break
        pos += size
    return spans


def iter_batch_positions(buf: bytes | bytearray | memoryview) -> list[tuple[int, int]]:
    """(position, size) of each complete batch in ``buf``; a partial trailing batch is left out."""
    end = len(buf)
    return [(pos, size) for pos, size in batch_spans(buf)
            if size >= HEADER_SIZE and pos + size <= end]


def has_transactional_batch(buf: bytes | bytearray | memoryview | None) -> bool:
    """Whether a magic-v2 batch in ``buf`` carries the transactional attribute (Kafka's
    ``RequestUtils.hasTransactionalRecords``): headers only, no CRC check, so a damaged
    batch is left for the append's validation to refuse."""
    if not buf:
        return False
    for pos, size in batch_spans(buf):
        if size >= HEADER_SIZE and pos + HEADER_SIZE <= len(buf) and buf[pos + 16] == MAGIC_V2 \
                and _INT16.unpack_from(buf, pos + 21)[0] & ATTR_TRANSACTIONAL:
            return True
    return False


def whole_batches_length(buf: bytes | bytearray | memoryview) -> int:
    """How many leading bytes of ``buf`` are whole batches (a fetch may end mid-batch)."""
    spans = iter_batch_positions(buf)
    return spans[-1][0] + spans[-1][1] if spans else 0


def validate_batches(
    buf: bytes | bytearray | memoryview, check_crc: bool = True, check_client_rules: bool = False
) -> list[BatchHeader]:
    """Validate a records field holding one or more whole batches, back to back.

    With ``check_client_rules`` each batch must also pass check_client_batch.
    A partial batch or trailing bytes are an error here, never skipped. This
    walk steps by the header it has just validated (the batchLength that
    :func:`batch_spans` reads), so validation reads each header once.
    """
    headers: list[BatchHeader] = []
    append = headers.append
    pos = 0
    end = len(buf)
    while pos < end:
        header = validate_batch(buf, pos, check_crc)
        if check_client_rules:
            check_client_batch(header, pos)
        append(header)
        pos += header[1] + LOG_OVERHEAD
    return headers


def validated_spans(
    buf: bytes | bytearray | memoryview, check_crc: bool = True
) -> list[tuple[int, BatchHeader]]:
    """(position, header) of each batch, all validated as by validate_batches."""
    headers = validate_batches(buf, check_crc)
    positions = accumulate((header[1] + LOG_OVERHEAD for header in headers), initial=0)
    return list(zip(positions, headers))


def check_client_batch(header: BatchHeader, pos: int = 0) -> None:
    """The extra rules a leader applies to a batch that comes from a producer.

    A producer's batch is never compacted, so its offsets are dense: exactly
    ``lastOffsetDelta + 1`` records, at least one. Clients may not write
    control batches (those mark transaction ends and only brokers write them),
    and an idempotent batch (producerId >= 0) needs a sequence number. Each
    violation raises CorruptBatchError with INVALID_RECORD (87), the code Kafka
    answers; ``pos`` is where the batch starts, for the error's offset.
    """
    if header.records_count <= 0:
        raise CorruptBatchError(
            f"a produced batch must hold records, recordsCount is {header.records_count}",
            ErrorCode.INVALID_RECORD,
            offset=pos + 57,
            expected="recordsCount >= 1",
        )
    if header.last_offset_delta + 1 != header.records_count:
        raise CorruptBatchError(
            f"offset range of {header.last_offset_delta + 1} (lastOffsetDelta "
            f"{header.last_offset_delta}) disagrees with recordsCount {header.records_count}",
            ErrorCode.INVALID_RECORD,
            offset=pos + 23,
            expected=f"lastOffsetDelta {header.records_count - 1}",
        )
    if header.attributes & ATTR_CONTROL:
        raise CorruptBatchError(
            "clients may not write control batches",
            ErrorCode.INVALID_RECORD,
            offset=pos + 21,
            expected="attributes without the control bit (0x20)",
        )
    if header.producer_id >= 0 and header.base_sequence < 0:
        raise CorruptBatchError(
            f"idempotent batch (producerId {header.producer_id}) without a sequence number",
            ErrorCode.INVALID_RECORD,
            offset=pos + 53,
            expected="baseSequence >= 0",
        )


def validate_client_batches(
    buf: bytes | bytearray | memoryview, check_crc: bool = True
) -> list[BatchHeader]:
    """validate_batches plus check_client_batch on each: what a leader runs on a Produce."""
    return validate_batches(buf, check_crc, check_client_rules=True)


def patch_base_offset(buf: bytearray | memoryview, base_offset: int, pos: int = 0) -> None:
    """Write baseOffset in place (not covered by the CRC)."""
    _INT64.pack_into(buf, pos, base_offset)


def patch_leader_epoch(buf: bytearray | memoryview, leader_epoch: int, pos: int = 0) -> None:
    """Write partitionLeaderEpoch in place (not covered by the CRC)."""
    _INT32.pack_into(buf, pos + 12, leader_epoch)


def log_append_time_header(buf: bytes | bytearray | memoryview, timestamp: int,
                           pos: int = 0) -> bytes:
    """Bytes 16..61 of the batch at ``pos`` restamped for ``message.timestamp.type=LogAppendTime``.

    As Kafka's ``setMaxTimestamp``: the timestamp-type bit is set in the
    attributes, maxTimestamp becomes ``timestamp`` and the CRC is computed
    anew (both fields are under it); baseTimestamp and the records are left
    alone, since readers take every record's time from maxTimestamp when the
    bit is set. The CRC runs over the records without decoding them. The
    caller has validated the batch.
    """
    size = _INT32.unpack_from(buf, pos + 8)[0] + LOG_OVERHEAD
    middle = bytearray(memoryview(buf)[pos + 16 : pos + HEADER_SIZE])
    attributes = _INT16.unpack_from(middle, CRC_START - 16)[0] | ATTR_TIMESTAMP_TYPE
    _INT16.pack_into(middle, CRC_START - 16, attributes)
    _INT64.pack_into(middle, 35 - 16, timestamp)
    crc = _crc32c.crc32c(memoryview(middle)[CRC_START - 16 :])
    crc = _crc32c.crc32c(memoryview(buf)[pos + HEADER_SIZE : pos + size], crc)
    _UINT32.pack_into(middle, 17 - 16, crc)
    return bytes(middle)


def base_offset(buf: bytes | bytearray | memoryview, pos: int = 0) -> int:
    return _INT64.unpack_from(buf, pos)[0]


def last_offset_delta(buf: bytes | bytearray | memoryview, pos: int = 0) -> int:
    return _INT32.unpack_from(buf, pos + 23)[0]


def records_count(buf: bytes | bytearray | memoryview, pos: int = 0) -> int:
    return _INT32.unpack_from(buf, pos + 57)[0]


def max_timestamp(buf: bytes | bytearray | memoryview, pos: int = 0) -> int:
    return _INT64.unpack_from(buf, pos + 35)[0]


def producer_info(buf: bytes | bytearray | memoryview, pos: int = 0) -> tuple[int, int, int]:
    """(producerId, producerEpoch, baseSequence) of the batch at ``pos``."""
    header = read_header(buf, pos)
    return header.producer_id, header.producer_epoch, header.base_sequence
