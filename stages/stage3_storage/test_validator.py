"""Per-record checks before an append (Kafka's LogValidator, KIP-467 record errors)."""

from __future__ import annotations

import pytest

from simplekafka.protocol.compression import DecompressedTooLargeError
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.records import TIMESTAMP_LOG_APPEND_TIME, build_batch
from simplekafka.storage import LogConfig
from simplekafka.storage.errors import RecordValidationError
from simplekafka.storage.validator import needs_record_checks, validate_records

NOW = 1_700_000_000_000
COMPACT = LogConfig(cleanup_policy="compact")
HOUR = 3_600_000


def test_plain_topics_are_not_decoded_at_all():
    assert not needs_record_checks(LogConfig())
    validate_records(b"not even a batch", LogConfig(), NOW, "t-0")  # nothing looked at


def test_a_null_key_in_a_compacted_topic_names_the_record():
    batch = build_batch([(b"a", b"1"), (None, b"2"), (b"c", b"3"), (None, None)])
    with pytest.raises(RecordValidationError) as refused:
        validate_records(batch, COMPACT, NOW, "t-0")
    assert refused.value.error_code == ErrorCode.INVALID_RECORD
    message = "Compacted topic cannot accept message without key in topic partition t-0."
    assert refused.value.record_errors == [(1, message), (3, message)]
    assert "2 record errors" in str(refused.value)
    validate_records(build_batch([(b"a", None)]), COMPACT, NOW, "t-0")  # a tombstone is fine


def test_timestamps_out_of_range_are_invalid_timestamp():
    config = LogConfig(message_timestamp_difference_max_ms=HOUR)
    batch = build_batch([{"value": b"ok", "timestamp": NOW - HOUR},
                         {"value": b"late", "timestamp": NOW + HOUR + 1}])
    with pytest.raises(RecordValidationError) as refused:
        validate_records(batch, config, NOW, "t-0")
    assert refused.value.error_code == ErrorCode.INVALID_TIMESTAMP
    assert refused.value.record_errors == [(1, (
        f"Timestamp {NOW + HOUR + 1} of message with offset 1 is out of range. The timestamp "
        f"should be within [{NOW - HOUR}, {NOW + HOUR}]"))]
    stamped = build_batch([{"value": b"x", "timestamp": 1}],
                          timestamp_type=TIMESTAMP_LOG_APPEND_TIME)
    validate_records(stamped, config, NOW, "t-0")  # the broker's own time: not checked


def test_a_bomb_is_refused_without_being_decompressed():
    batch = build_batch([(b"k", b"\x00" * (8 << 20))], compression="zstd")
    with pytest.raises(DecompressedTooLargeError):
        validate_records(batch, COMPACT, NOW, "t-0", max_decompressed_bytes=1 << 20)
