"""The record accumulator on its own (no sockets): batching, linger, memory and back-pressure."""

from __future__ import annotations

import threading
import time

import pytest

from simplekafka.client.errors import BufferExhaustedError
from simplekafka.producer.accumulator import RecordAccumulator
from simplekafka.protocol.records import Record
from simplekafka.protocol.structs import TopicPartition

TP = TopicPartition("t", 0)


def record(size: int = 100) -> Record:
    return Record(0, 1, None, b"x" * size, [])


def test_records_fill_one_batch_until_batch_size():
    acc = RecordAccumulator(batch_size=1000, linger_ms=10_000)
    for _ in range(7):  # 61 + 7 * 121 = 908 bytes
        acc.append(TP, record(), 121, 1.0)
    with acc.condition:
        ready, _ = acc.ready_partitions(time.monotonic())
        assert ready == []  # neither full nor lingered long enough
        assert len(acc.head(TP).records) == 7
    acc.append(TP, record(), 121, 1.0)  # would make 1029 > 1000: a new batch, the old one goes
    with acc.condition:
        ready, _ = acc.ready_partitions(time.monotonic())
        assert ready == [TP]


def test_a_batch_is_ready_after_linger_ms():
    acc = RecordAccumulator(batch_size=10_000, linger_ms=20)
    acc.append(TP, record(), 121, 1.0)
    with acc.condition:
        ready, wait = acc.ready_partitions(time.monotonic())
        assert ready == [] and 0 < wait <= 0.02
        ready, _ = acc.ready_partitions(time.monotonic() + 0.05)
        assert ready == [TP]


def test_flush_makes_everything_ready():
    acc = RecordAccumulator(batch_size=10_000, linger_ms=60_000)
    acc.append(TP, record(), 121, 1.0)
    acc.begin_flush()
    with acc.condition:
        assert acc.ready_partitions(time.monotonic())[0] == [TP]
    acc.end_flush()


def test_a_full_buffer_blocks_then_fails_with_a_named_error():
    acc = RecordAccumulator(batch_size=1000, linger_ms=0, buffer_memory=500)
    for _ in range(4):
        acc.append(TP, record(), 121, 1.0)
    started = time.monotonic()
    with pytest.raises(BufferExhaustedError, match="stayed full"):
        acc.append(TP, record(), 121, 0.2)
    assert 0.15 < time.monotonic() - started < 2


def test_a_blocked_append_goes_on_when_memory_is_freed():
    acc = RecordAccumulator(batch_size=1000, linger_ms=0, buffer_memory=500)
    for _ in range(4):
        acc.append(TP, record(), 121, 1.0)
    done = []

    def blocked() -> None:
        acc.append(TP, record(), 121, 5.0)
        done.append(True)

    thread = threading.Thread(target=blocked)
    thread.start()
    time.sleep(0.1)
    assert not done
    with acc.condition:
        batch = acc.pop(TP)
        acc.complete(batch)  # acknowledged: its memory comes back
    thread.join(5)
    assert done and acc.used_bytes == 121


def test_record_futures_resolve_with_their_batch():
    acc = RecordAccumulator(batch_size=10_000, linger_ms=0)
    futures = [acc.append(TP, record(), 121, 1.0) for _ in range(3)]
    with acc.condition:
        batch = acc.pop(TP)
    seen = []
    futures[1].add_done_callback(lambda f: seen.append(f.result().offset))
    batch.result.complete(40)
    assert [f.result(0).offset for f in futures] == [40, 41, 42]
    assert seen == [41]
    assert futures[0].result(0).serialized_value_size == 100
