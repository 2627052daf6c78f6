"""kafka-python (with its defaults: idempotent producer, acks=all, CRC checks) and aiokafka.

Both are pure-Python clients written independently of librdkafka, so they are
a second and third opinion on the broker's bytes. The last test mixes all three
Python clients: each produces to its own partition, each consumes everything,
and all of them must see the same records.
"""

from __future__ import annotations

import asyncio
import os
import time

import pytest

from ._interop import all_batches, create_topic, unique_topic

pytestmark = pytest.mark.integration

COUNT = 2000


def make_records(count: int = COUNT) -> list[tuple[bytes, bytes, list[tuple[str, bytes]]]]:
    """(key, value, headers) with binary values of varied sizes."""
    return [
        (b"k%d" % i, os.urandom((i * 53) % 400) + b"|%d" % i, [("seq", b"%d" % i)])
        for i in range(count)
    ]


def kafka_python_produce(bootstrap: str, topic: str, partition: int, records) -> list[int]:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap)  # defaults: idempotent, acks=all
    try:
        futures = [producer.send(topic, value=v, key=k, headers=h, partition=partition)
                   for k, v, h in records]
        producer.flush(30)
        return [future.get(timeout=30).offset for future in futures]
    finally:
        producer.close(timeout=10)


def kafka_python_consume(bootstrap: str, topic: str, partitions: list[int], expected: int):
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None,
                             enable_auto_commit=False, auto_offset_reset="earliest")
    try:
        consumer.assign([TopicPartition(topic, p) for p in partitions])
        consumer.seek_to_beginning()
        got = []
        deadline = time.monotonic() + 30
        while len(got) < expected and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=500).values():
                got += [(r.partition, r.offset, r.key, r.value, list(r.headers)) for r in batch]
        return got
    finally:
        consumer.close()


async def _aiokafka_produce(bootstrap: str, topic: str, partition: int, records) -> list[int]:
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        futures = [await producer.send(topic, value=v, key=k, headers=h, partition=partition)
                   for k, v, h in records]
        return [(await future).offset for future in futures]
    finally:
        await producer.stop()


async def _aiokafka_consume(bootstrap: str, topic: str, partitions: list[int], expected: int):
    from aiokafka import AIOKafkaConsumer, TopicPartition

    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None,
                                enable_auto_commit=False, auto_offset_reset="earliest")
    await consumer.start()
    try:
        consumer.assign([TopicPartition(topic, p) for p in partitions])
        await consumer.seek_to_beginning()
        got = []
        deadline = time.monotonic() + 30
        while len(got) < expected and time.monotonic() < deadline:
            batches = await consumer.getmany(timeout_ms=500)
            for batch in batches.values():
                got += [(r.partition, r.offset, r.key, r.value, list(r.headers)) for r in batch]
        return got
    finally:
        await consumer.stop()


def aiokafka_produce(*args) -> list[int]:
    return asyncio.run(_aiokafka_produce(*args))


def aiokafka_consume(*args):
    return asyncio.run(_aiokafka_consume(*args))


def confluent_produce(bootstrap: str, topic: str, partition: int, records) -> list[int]:
    from confluent_kafka import Producer

    offsets = {}
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for index, (k, v, h) in enumerate(records):
        producer.produce(topic, value=v, key=k, headers=h, partition=partition,
                         on_delivery=lambda err, msg, i=index: offsets.__setitem__(
                             i, msg.offset() if err is None else err))
        producer.poll(0)
    assert producer.flush(30) == 0
    return [offsets[i] for i in range(len(records))]


def confluent_consume(bootstrap: str, topic: str, partitions: list[int], expected: int):
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused",
                         "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        got = []
        deadline = time.monotonic() + 30
        while len(got) < expected and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None:
                assert message.error() is None, message.error()
                got.append((message.partition(), message.offset(), message.key(),
                            message.value(), list(message.headers() or [])))
        return got
    finally:
        consumer.close()


def expected_rows(partition: int, records) -> list:
    return [(partition, offset, k, v, h) for offset, (k, v, h) in enumerate(records)]


def test_kafka_python_round_trip_with_its_defaults(cluster):
    topic = unique_topic("kafka-python")
    create_topic(cluster.bootstrap_servers, topic)
    records = make_records()
    offsets = kafka_python_produce(cluster.bootstrap_servers, topic, 0, records)
    assert offsets == list(range(COUNT))
    got = kafka_python_consume(cluster.bootstrap_servers, topic, [0], COUNT)
    assert got == expected_rows(0, records)
    # Its default producer is idempotent: every stored batch carries a producer id.
    batches = all_batches(cluster.broker_ports[1], topic, 0)
    assert all(batch.header.producer_id >= 0 for batch in batches)
    assert len({batch.header.producer_id for batch in batches}) == 1


def test_aiokafka_round_trip(cluster):
    topic = unique_topic("aiokafka")
    create_topic(cluster.bootstrap_servers, topic)
    records = make_records()
    offsets = aiokafka_produce(cluster.bootstrap_servers, topic, 0, records)
    assert offsets == list(range(COUNT))
    assert aiokafka_consume(cluster.bootstrap_servers, topic, [0], COUNT) == expected_rows(
        0, records)


def test_three_clients_agree_on_every_byte(cluster):
    topic = unique_topic("mixed")
    create_topic(cluster.bootstrap_servers, topic, partitions=3)
    producers = [confluent_produce, kafka_python_produce, aiokafka_produce]
    per_partition = {p: make_records(500) for p in range(3)}
    for partition, produce in enumerate(producers):
        assert produce(cluster.bootstrap_servers, topic, partition, per_partition[partition]) == (
            list(range(500)))
    expected = sorted(row for p, records in per_partition.items()
                      for row in expected_rows(p, records))
    for consume in (confluent_consume, kafka_python_consume, aiokafka_consume):
        got = consume(cluster.bootstrap_servers, topic, [0, 1, 2], len(expected))
        assert sorted(got) == expected, consume.__name__


def test_kafka_python_reads_through_an_incremental_fetch_session(cluster):
    """kafka-python 2.1+ opens a fetch session (KIP-227) when the broker offers one, then
    names only changed partitions; every record still arrives once, in order."""
    from kafka import KafkaConsumer, TopicPartition

    topic = unique_topic("fetch-session")
    create_topic(cluster.bootstrap_servers, topic, partitions=3)
    first = [(b"k", b"first-%d" % i, []) for i in range(50)]
    for partition in range(3):
        kafka_python_produce(cluster.bootstrap_servers, topic, partition, first)
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, group_id=None,
                             enable_auto_commit=False, auto_offset_reset="earliest",
                             fetch_max_wait_ms=100)
    try:
        consumer.assign([TopicPartition(topic, p) for p in range(3)])

        def read(expected: int) -> list[tuple[int, int, bytes]]:
            got: list[tuple[int, int, bytes]] = []
            deadline = time.monotonic() + 30
            while len(got) < expected and time.monotonic() < deadline:
                for batch in consumer.poll(timeout_ms=200).values():
                    got += [(r.partition, r.offset, r.value) for r in batch]
            return got

        got = read(150)
        sessions = [handler.next_metadata.session_id
                    for handler in consumer._fetcher._session_handlers.values()]
        assert sessions and all(session != 0 for session in sessions)  # the broker gave one
        kafka_python_produce(cluster.bootstrap_servers, topic, 1,
                             [(b"k", b"later-%d" % i, []) for i in range(20)])
        got += read(20)
        assert sorted(got) == sorted(set(got))  # nothing twice
        for partition in range(3):
            values = [v for p, _o, v in sorted(got) if p == partition]
            tail = [b"later-%d" % i for i in range(20)] if partition == 1 else []
            assert values == [b"first-%d" % i for i in range(50)] + tail
    finally:
        consumer.close()
