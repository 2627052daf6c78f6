"""``__transaction_state``: which partition holds a transactional id, and its records' bytes.

A transactional id lives in partition ``abs(java_string_hash(id)) % N`` of the
internal, compacted topic ``__transaction_state`` (N is
``transaction.state.log.num.partitions``, 50 as in Kafka); the leader of that
partition is the id's transaction coordinator. Each state change is one
record whose key is the id, so compaction keeps the latest. The formats are
Kafka's (``TransactionLog``):

* key ``int16 version=0, string transactional_id``;
* value ``int16 version=0, int64 producer_id, int16 producer_epoch, int32
  transaction_timeout_ms, int8 state, nullable [string topic, [int32]
  partitions], int64 last_update_timestamp_ms, int64 start_timestamp_ms``.
"""

from __future__ import annotations

import struct

from simplekafka.broker.group.records import RecordFormatError, partition_for
from simplekafka.broker.transaction.state import TransactionState, TxnTransition

TRANSACTION_STATE_TOPIC = "__transaction_state"
KEY_VERSION = 0
VALUE_VERSION = 0

_HEAD = struct.Struct(">hqhib")
_TIMES = struct.Struct(">qq")

__all__ = ["TRANSACTION_STATE_TOPIC", "RecordFormatError", "decode_key", "decode_value",
           "encode_key", "encode_value", "partition_for"]


def _string(text: str) -> bytes:
    data = text.encode("utf-8")
    return struct.pack(">h", len(data)) + data


def encode_key(transactional_id: str) -> bytes:
    return struct.pack(">h", KEY_VERSION) + _string(transactional_id)


def encode_value(t: TxnTransition) -> bytes:
    by_topic: dict[str, list[int]] = {}
    for topic, index in sorted(t.partitions):
        by_topic.setdefault(topic, []).append(index)
    out = [_HEAD.pack(VALUE_VERSION, t.producer_id, t.producer_epoch, t.timeout_ms,
                      int(t.state)),
           struct.pack(">i", len(by_topic))]
    for topic, indexes in by_topic.items():
        out.append(_string(topic))
        out.append(struct.pack(f">i{len(indexes)}i", len(indexes), *indexes))
    out.append(_TIMES.pack(t.update_ms, t.start_ms))
    return b"".join(out)


def decode_key(data: bytes) -> str:
    try:
        version, length = struct.unpack_from(">hh", data, 0)
        if version != KEY_VERSION:
            raise RecordFormatError(f"unknown {TRANSACTION_STATE_TOPIC} key version {version}")
        return data[4:4 + length].decode("utf-8")
    except (struct.error, UnicodeDecodeError) as exc:
        raise RecordFormatError(f"bad {TRANSACTION_STATE_TOPIC} key: {exc}") from None


def decode_value(data: bytes) -> TxnTransition:
    try:
        version, pid, epoch, timeout, state = _HEAD.unpack_from(data, 0)
        if version != VALUE_VERSION:
            raise RecordFormatError(f"unknown {TRANSACTION_STATE_TOPIC} value version {version}")
        pos = _HEAD.size
        (topics,) = struct.unpack_from(">i", data, pos)
        pos += 4
        partitions: set[tuple[str, int]] = set()
        for _ in range(max(topics, 0)):
            (length,) = struct.unpack_from(">h", data, pos)
            topic = data[pos + 2:pos + 2 + length].decode("utf-8")
            pos += 2 + length
            (count,) = struct.unpack_from(">i", data, pos)
            indexes = struct.unpack_from(f">{count}i", data, pos + 4)
            pos += 4 + 4 * count
            partitions.update((topic, i) for i in indexes)
        update_ms, start_ms = _TIMES.unpack_from(data, pos)
        return TxnTransition(pid, epoch, timeout, TransactionState(state),
                             frozenset(partitions), start_ms, update_ms)
    except (struct.error, UnicodeDecodeError, ValueError) as exc:
        raise RecordFormatError(f"bad {TRANSACTION_STATE_TOPIC} value: {exc}") from None
