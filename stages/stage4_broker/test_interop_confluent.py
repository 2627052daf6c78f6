"""confluent-kafka (librdkafka 2.16) against a real broker process.

Produce with acks 0, 1 and all; consume by assignment from the earliest
offset, the latest and a given one. Every record must arrive once, in order
per partition, byte-identical (random bytes, not text), keys and headers intact.
"""

from __future__ import annotations

import os
import time

import pytest
from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, Consumer, Producer, TopicPartition

from ._interop import create_topic, unique_topic

pytestmark = pytest.mark.integration

PARTITIONS = 3


def make_records(count: int, partitions: int = PARTITIONS) -> list[tuple[int, bytes, bytes]]:
    """(partition, key, value) with random binary values, round-robin over partitions."""
    return [
        (i % partitions, b"key-%d" % i, os.urandom(1 + (i * 37) % 300) + b"#%d" % i)
        for i in range(count)
    ]


def produce(bootstrap: str, topic: str, records, acks: str, **config) -> list:
    """Produce every record; returns the delivery reports (error, partition, offset, value)."""
    reports = []

    def on_delivery(error, message):
        reports.append((error, message.partition(), message.offset(), message.value()))

    producer = Producer({"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 5, **config})
    for partition, key, value in records:
        producer.produce(topic, value=value, key=key, partition=partition,
                         headers=[("h", key), ("empty", b"")], on_delivery=on_delivery)
        producer.poll(0)
    assert producer.flush(30) == 0, "producer did not deliver everything within 30 s"
    return reports


def consume(bootstrap: str, assignments: list[TopicPartition], expected: int,
            timeout: float = 30.0) -> list:
    """Consume by assignment (no group) until ``expected`` records arrived; returns messages."""
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": "unused-assign-only",
        "enable.auto.commit": False, "enable.partition.eof": False,
    })
    try:
        consumer.assign(assignments)
        messages = []
        deadline = time.monotonic() + timeout
        while len(messages) < expected and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            assert message.error() is None, message.error()
            messages.append(message)
        # A short extra wait would reveal duplicates or strays.
        extra = consumer.poll(0.5)
        assert extra is None or extra.error() is not None, f"unexpected extra {extra.offset()}"
        return messages
    finally:
        consumer.close()


def check_round_trip(records, messages) -> None:
    """Every record once, in order per partition, byte-identical, with its headers."""
    assert len(messages) == len(records)
    for partition in range(PARTITIONS):
        sent = [(k, v) for p, k, v in records if p == partition]
        got = [m for m in messages if m.partition() == partition]
        assert [(m.key(), m.value()) for m in got] == sent
        assert [m.offset() for m in got] == list(range(len(sent)))
        assert all(m.headers() == [("h", m.key()), ("empty", b"")] for m in got)


@pytest.mark.parametrize("acks", ["0", "1", "all"])
def test_round_trip_with_acks(cluster, acks):
    topic = unique_topic(f"confluent-acks{acks}")
    create_topic(cluster.bootstrap_servers, topic, PARTITIONS)
    records = make_records(3000)
    reports = produce(cluster.bootstrap_servers, topic, records, acks)
    assert [r for r in reports if r[0] is not None] == []
    if acks != "0":  # with acks=0 there is no answer, so no offsets to compare
        per_partition = {p: [o for _, rp, o, _ in reports if rp == p] for p in range(PARTITIONS)}
        for partition, offsets in per_partition.items():
            assert sorted(offsets) == list(range(len(offsets))), partition
    assignments = [TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)]
    check_round_trip(records, consume(cluster.bootstrap_servers, assignments, len(records)))


def test_consume_from_a_given_offset(cluster):
    topic = unique_topic("confluent-offset")
    create_topic(cluster.bootstrap_servers, topic, 1)
    records = make_records(1000, partitions=1)
    produce(cluster.bootstrap_servers, topic, records, "all")
    messages = consume(cluster.bootstrap_servers, [TopicPartition(topic, 0, 700)], 300)
    assert [m.offset() for m in messages] == list(range(700, 1000))
    assert [m.value() for m in messages] == [v for _, _, v in records[700:]]


def test_consume_from_latest_sees_only_new_records(cluster):
    topic = unique_topic("confluent-latest")
    create_topic(cluster.bootstrap_servers, topic, 1)
    produce(cluster.bootstrap_servers, topic, make_records(200, partitions=1), "1")
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "unused",
                         "enable.auto.commit": False})
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 0})
    try:
        consumer.assign([TopicPartition(topic, 0, OFFSET_END)])
        # The consumer resolves "latest" in the background: keep producing one new record
        # at a time until it sees one. It must never see the 200 old records.
        sent, received = 0, []
        deadline = time.monotonic() + 30
        while not received and time.monotonic() < deadline:
            producer.produce(topic, value=b"new-%d" % sent, partition=0)
            producer.flush(10)
            sent += 1
            message = consumer.poll(0.2)
            if message is not None:
                assert message.error() is None, message.error()
                received.append(message)
        assert received, "the consumer from latest never saw a new record"
        for _ in range(20):
            producer.produce(topic, value=b"new-%d" % sent, partition=0)
            sent += 1
        producer.flush(10)
        first = received[0].offset()
        assert first >= 200, f"consumer from latest got old offset {first}"
        while received[-1].offset() < 200 + sent - 1 and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None:
                assert message.error() is None, message.error()
                received.append(message)
        offsets = [m.offset() for m in received]
        assert offsets == list(range(first, 200 + sent))
        assert [m.value() for m in received] == [b"new-%d" % (o - 200) for o in offsets]
    finally:
        consumer.close()


def test_fetch_long_poll_wakes_on_append(cluster):
    """A consumer parked on an empty partition gets a record soon after it is appended.

    fetch.wait.max.ms is 5 s, so a broker that answered only at max_wait would
    deliver after up to 5 s; we only require well under 1 s (no tight timing).
    """
    topic = unique_topic("confluent-longpoll")
    create_topic(cluster.bootstrap_servers, topic, 1)
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "unused",
                         "enable.auto.commit": False, "fetch.wait.max.ms": 5000})
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 0,
                         "acks": "1"})
    try:
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        assert consumer.poll(1.5) is None  # now its fetch is parked at the broker
        delays = []
        for i in range(3):
            started = time.monotonic()
            producer.produce(topic, value=b"wake-%d" % i, partition=0)
            producer.flush(10)
            message = None
            while message is None and time.monotonic() - started < 10:
                message = consumer.poll(0.05)
            assert message is not None and message.value() == b"wake-%d" % i
            delays.append(time.monotonic() - started)
            time.sleep(1.0)  # let the next fetch park again
        assert max(delays) < 1.0, f"records arrived after {delays} s: the long poll was not woken"
    finally:
        consumer.close()
