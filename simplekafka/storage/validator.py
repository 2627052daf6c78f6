"""Per-record checks of a produced batch before it is appended (Kafka's LogValidator).

The log takes a batch as it is, without looking at its records, unless the
topic's settings ask for a look at each one:

* a compacted topic (``cleanup.policy`` with ``compact``) needs a key on every
  record, or the cleaner could not tell which records replace which;
* ``message.timestamp.difference.max.ms`` bounds how far a CreateTime record's
  timestamp may be from the broker's clock.

A record that fails is reported with its index in the batch and a message, as
Kafka 2.4+ does (KIP-467, Produce v8 ``record_errors``), and the whole batch
is refused: INVALID_RECORD for a missing key, INVALID_TIMESTAMP for a time out
of range. Decoding is bounded: a batch that decompresses to more than the
broker allows is refused as INVALID_RECORD, not decompressed to the end.
"""

from __future__ import annotations

from simplekafka.protocol.batch_header import ATTR_TIMESTAMP_TYPE, read_header
from simplekafka.protocol.compression import DEFAULT_MAX_DECOMPRESSED_BYTES
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.records import parse_batch
from simplekafka.storage.config import LogConfig
from simplekafka.storage.errors import RecordValidationError

_NO_LIMIT = (1 << 63) - 1
_SHOWN = 3  # record errors quoted in the error message (Kafka shows three)


def needs_record_checks(config: LogConfig) -> bool:
    """Whether :func:`validate_records` has anything to check for this log."""
    return config.compact or config.message_timestamp_difference_max_ms < _NO_LIMIT


def validate_records(batch: bytes | bytearray | memoryview, config: LogConfig, now_ms: int,
                     topic_partition: str,
                     max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES) -> None:
    """Raise RecordValidationError naming each bad record; CorruptBatchError if it does
    not decode (DecompressedTooLargeError for a bomb)."""
    if not needs_record_checks(config):
        return
    header = read_header(batch)
    parsed = parse_batch(batch, check_crc=True, max_decompressed_bytes=max_decompressed_bytes)
    errors: list[tuple[int, str]] = []
    keyless = 0
    max_diff = config.message_timestamp_difference_max_ms
    check_time = max_diff < _NO_LIMIT and not header.attributes & ATTR_TIMESTAMP_TYPE
    for index, record in enumerate(parsed.records):
        if config.compact and record.key is None:
            keyless += 1
            errors.append((index, "Compacted topic cannot accept message without key in "
                                  f"topic partition {topic_partition}."))
        elif check_time and record.timestamp is not None and \
                abs(record.timestamp - now_ms) > max_diff:
            errors.append((index, f"Timestamp {record.timestamp} of message with offset "
                                  f"{index} is out of range. The timestamp should be within "
                                  f"[{now_ms - max_diff}, {now_ms + max_diff}]"))
    if errors:
        code = ErrorCode.INVALID_RECORD if keyless else ErrorCode.INVALID_TIMESTAMP
        shown = ", ".join(f"RecordError(batchIndex={i}, message='{m}')"
                          for i, m in errors[:_SHOWN])
        raise RecordValidationError(
            f"One or more records have been rejected due to {len(errors)} record errors in "
            f"total, and only showing the first three errors at most: [{shown}]",
            code, errors)

