"""The producer's shortcuts behave like the long way round (no sockets).

``RecordAccumulator.append`` keeps each partition's open batch in a dict
rather than looking at the end of its queue, so every way a batch leaves the
queue (sent, expired, drained on close) must also stop appends to it. And
``Producer.send`` reads the default partitioner's sticky partition without
calling it; a subclass, a custom partitioner or a keyed record still goes
through the call.
"""

from __future__ import annotations

import time

from simplekafka.producer.accumulator import RecordAccumulator
from simplekafka.producer.partitioner import DefaultPartitioner
from simplekafka.producer.producer import Producer
from simplekafka.protocol.records import Record
from simplekafka.protocol.structs import TopicPartition

TP = TopicPartition("t", 0)


def record() -> Record:
    return Record(0, 1, None, b"x" * 100, [])


def test_an_append_after_the_open_batch_was_sent_starts_a_new_batch():
    acc = RecordAccumulator(batch_size=10_000, linger_ms=10_000)
    first = acc.append(TP, record(), 121, 1.0)
    with acc.condition:
        sent = acc.pop(TP)
    second = acc.append(TP, record(), 121, 1.0)
    assert first._batch is sent and second._batch is not sent
    assert len(sent.records) == 1


def test_an_append_after_the_open_batch_expired_starts_a_new_batch():
    acc = RecordAccumulator(batch_size=10_000, linger_ms=10_000, delivery_timeout_ms=1)
    first = acc.append(TP, record(), 121, 1.0)
    time.sleep(0.01)
    with acc.condition:
        assert acc.expired(time.monotonic()) == [first._batch]
    second = acc.append(TP, record(), 121, 1.0)
    assert second._batch is not first._batch
    assert len(first._batch.records) == 1


def test_an_append_after_drain_all_starts_a_new_batch():
    acc = RecordAccumulator(batch_size=10_000, linger_ms=10_000)
    first = acc.append(TP, record(), 121, 1.0)
    with acc.condition:
        assert acc.drain_all() == [first._batch]
    second = acc.append(TP, record(), 121, 1.0)
    assert second._batch is not first._batch
    with acc.condition:
        assert acc.head(TP) is second._batch


class _Metadata:
    snapshot = object()


class _Client:
    """Just enough of KafkaClient for send() to find one topic's partitions."""

    metadata = _Metadata()


class _CountingPartitioner(DefaultPartitioner):
    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def __call__(self, topic, key, partitions):
        self.calls += 1
        return super().__call__(topic, key, partitions)


def _producer(partitioner=None) -> Producer:
    producer = Producer.__new__(Producer)
    producer.key_serializer = producer.value_serializer = None
    producer.partitioner = partitioner or DefaultPartitioner()
    producer.max_block = 1.0
    producer.client = _Client()
    producer.accumulator = RecordAccumulator(batch_size=1 << 20, linger_ms=10_000)
    producer._append = producer.accumulator.append
    producer._metadata = producer.client.metadata
    producer._partitions = {"t": [0, 1, 2, 3]}
    producer._snapshot = producer._metadata.snapshot
    producer._tps = {}
    producer._size_limit = 1 << 20
    producer._closed = False
    return producer


def test_send_uses_the_default_partitioners_sticky_partition():
    producer = _producer()
    partitions = {producer.send("t", b"v").partition for _ in range(50)}
    assert partitions == {producer.partitioner._sticky["t"]}
    producer.partitioner.on_new_batch("t", partitions.pop(), [0, 1, 2, 3])
    moved = producer.send("t", b"v").partition
    assert moved == producer.partitioner._sticky["t"]


def test_a_partitioner_subclass_and_keyed_records_are_called():
    counting = _CountingPartitioner()
    producer = _producer(counting)
    for _ in range(5):
        producer.send("t", b"v")
    assert counting.calls == 5
    plain = _producer()
    futures = [plain.send("t", b"v", key=b"key-%d" % i) for i in range(20)]
    assert [f.partition for f in futures] == [
        plain.partitioner("t", b"key-%d" % i, [0, 1, 2, 3]) for i in range(20)
    ]


def test_send_stamps_the_time_in_milliseconds():
    producer = _producer()
    before = int(time.time() * 1000)
    future = producer.send("t", b"v")
    after = int(time.time() * 1000)
    assert before <= future._batch.records[0].timestamp <= after
