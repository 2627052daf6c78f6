"""Build real RecordBatch v2 bytes for the stage 3 tests, chapter and demo.

The storage layer never decodes records, but the batches it stores should be
ones a Kafka client could read, so this builds genuine uncompressed batches
(varint-encoded records, CRC-32C) with nothing but the stage 1 header helpers.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

from simplekafka.protocol.batch_header import crc32c

_AFTER_CRC = struct.Struct(">hiqqqhii")  # attributes .. recordsCount


def _varint(value: int) -> bytes:
    """Zigzag varint, as Kafka's records use."""
    value = (value << 1) ^ (value >> 63)
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _record(offset_delta: int, timestamp_delta: int, key: bytes | None,
            value: bytes | None) -> bytes:
    body = bytearray(b"\x00")  # attributes
    body += _varint(timestamp_delta) + _varint(offset_delta)
    for field in (key, value):
        body += _varint(-1) if field is None else _varint(len(field)) + field
    body += _varint(0)  # no headers
    return _varint(len(body)) + bytes(body)


def make_batch(
    values: Sequence[bytes | None],
    timestamp: int = 1_700_000_000_000,
    keys: Sequence[bytes | None] | None = None,
    timestamp_step: int = 1,
) -> bytes:
    """An uncompressed batch of ``values`` (record i has timestamp + i * timestamp_step).

    The base offset is 0 and the leader epoch -1: a producer leaves those for
    the broker to fill in.
    """
    if not values:
        raise ValueError("a batch needs at least one record")
    keys = keys if keys is not None else [None] * len(values)
    records = b"".join(
        _record(i, i * timestamp_step, key, value)
        for i, (key, value) in enumerate(zip(keys, values))
    )
    last_delta = len(values) - 1
    max_timestamp = timestamp + last_delta * timestamp_step
    after_crc = _AFTER_CRC.pack(0, last_delta, timestamp, max_timestamp, -1, -1, -1, len(values))
    after_crc += records
    batch_length = 4 + 1 + 4 + len(after_crc)  # leader epoch, magic, crc, rest
    head = struct.pack(">qiib", 0, batch_length, -1, 2)
    return head + struct.pack(">I", crc32c(after_crc)) + after_crc
