"""Interop both ways with independent clients: confluent-kafka (librdkafka) and kcat.

What our Producer writes, they read identically (every codec, keys, null keys,
headers); what they write, our Consumer reads. And the same key lands in the
same partition whichever of them produced it (murmur2, like the Java client).
"""

from __future__ import annotations

import shutil
import subprocess
import time
import uuid

import pytest
from confluent_kafka import Consumer as CkConsumer
from confluent_kafka import Producer as CkProducer
from confluent_kafka import TopicPartition as CkTopicPartition

from simplekafka.admin import Admin
from simplekafka.client import TopicPartition
from simplekafka.consumer import Consumer
from simplekafka.producer import Producer

pytestmark = pytest.mark.integration

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
KCAT = shutil.which("kcat") or "/usr/bin/kcat"
PARTITIONS = 3


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def records(n: int = 120):
    """Compressible values, keyed and null-keyed, some with headers (one with a null value)."""
    out = []
    for i in range(n):
        key = None if i % 4 == 0 else f"user-{i % 9}".encode()
        value = (f"record {i} " * 10).encode()
        headers = [("seq", str(i).encode()), ("kind", b"test")] if i % 3 == 0 else []
        out.append((key, value, headers))
    return out


@pytest.fixture
def topic(cluster):
    name = unique("interop")
    with Admin(cluster.bootstrap_servers) as admin:
        admin.create_topic(name, num_partitions=PARTITIONS)
    return name


def ck_consume(bootstrap: str, topic: str, count: int, timeout: float = 60.0):
    consumer = CkConsumer({
        "bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False,
        "check.crcs": True,
    })
    consumer.assign([CkTopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    got = []
    deadline = time.monotonic() + timeout
    try:
        while len(got) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            assert message.error() is None, message.error()
            got.append(message)
    finally:
        consumer.close()
    return got


def ours_consume(bootstrap: str, topic: str, count: int, timeout: float = 60.0):
    with Consumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
        got = []
        deadline = time.monotonic() + timeout
        while len(got) < count and time.monotonic() < deadline:
            got += consumer.poll(500)
    return got


@pytest.mark.parametrize("codec", CODECS)
def test_ours_to_confluent_kafka(cluster, topic, codec):
    sent = records()
    with Producer(cluster.bootstrap_servers, compression_type=codec, acks="all") as producer:
        futures = [producer.send(topic, v, key=k, headers=h) for k, v, h in sent]
        producer.flush(30)
        placed = {(f.result(0).partition, f.result(0).offset): r for f, r in zip(futures, sent)}
    got = ck_consume(cluster.bootstrap_servers, topic, len(sent))
    assert len(got) == len(sent)
    for message in got:
        key, value, headers = placed[(message.partition(), message.offset())]
        assert message.key() == key and message.value() == value
        assert (message.headers() or []) == headers


@pytest.mark.parametrize("codec", CODECS)
def test_confluent_kafka_to_ours(cluster, topic, codec):
    sent = records()
    producer = CkProducer({
        "bootstrap.servers": cluster.bootstrap_servers, "compression.type": codec,
        "linger.ms": 5, "partitioner": "murmur2_random",
    })
    reports = []
    for key, value, headers in sent:
        producer.produce(topic, value, key, headers=headers or None,
                         on_delivery=lambda err, msg: reports.append((err, msg)))
    assert producer.flush(30) == 0
    assert all(err is None for err, _ in reports)
    where = {(m.partition(), m.offset()): m.value() for _, m in reports}
    by_value = {value: (key, headers) for key, value, headers in sent}
    got = ours_consume(cluster.bootstrap_servers, topic, len(sent))
    assert len(got) == len(sent)
    for record in got:
        assert where[(record.partition, record.offset)] == record.value
        assert (record.key, record.headers) == by_value[record.value]


def test_the_same_key_lands_in_the_same_partition_as_with_librdkafka(cluster, topic):
    keys = [f"key-{i}".encode() for i in range(60)]
    producer = CkProducer({"bootstrap.servers": cluster.bootstrap_servers,
                           "partitioner": "murmur2_random"})
    theirs = {}

    def delivered(err, msg):
        theirs[msg.key()] = msg.partition()

    for key in keys:
        producer.produce(topic, b"v", key, on_delivery=delivered)
    producer.flush(30)
    with Producer(cluster.bootstrap_servers) as ours:
        mine = {key: ours.send(topic, b"v", key=key).get(30).partition for key in keys}
    assert mine == theirs


def kcat(bootstrap: str, *args: str, stdin: bytes | None = None) -> bytes:
    result = subprocess.run([KCAT, "-b", bootstrap, *args], input=stdin, capture_output=True,
                            timeout=90, check=False)
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    return result.stdout


@pytest.mark.parametrize("codec", CODECS)
def test_ours_to_kcat(cluster, topic, codec):
    sent = records(60)
    with Producer(cluster.bootstrap_servers, compression_type=codec) as producer:
        for key, value, headers in sent:
            producer.send(topic, value, key=key, headers=headers)
        producer.flush(30)
    out = kcat(cluster.bootstrap_servers, "-C", "-t", topic, "-o", "beginning", "-e",
               "-c", str(len(sent)), "-f", "%k|%s|%h\n")
    lines = out.decode().splitlines()
    assert len(lines) == len(sent)
    expected = set()
    for key, value, headers in sent:
        header_text = ",".join(f"{k}={v.decode()}" for k, v in headers) if headers else ""
        expected.add(f"{(key or b'').decode()}|{value.decode()}|{header_text}")
    assert set(lines) == expected


@pytest.mark.parametrize("codec", CODECS)
def test_kcat_to_ours(cluster, topic, codec):
    lines = [f"k{i % 5}:" + f"line {i} " * 10 for i in range(80)]
    kcat(cluster.bootstrap_servers, "-P", "-t", topic, "-K", ":", "-z", codec,
         "-X", "partitioner=murmur2_random",
         stdin="\n".join(lines).encode() + b"\n")
    got = ours_consume(cluster.bootstrap_servers, topic, len(lines))
    assert sorted(f"{r.key.decode()}:{r.value.decode()}" for r in got) == sorted(lines)
    assert all(r.partition == ours_partition(r.key) for r in got)


def ours_partition(key: bytes) -> int:
    from simplekafka.producer import partition_for_key

    return partition_for_key(key, PARTITIONS)


@pytest.mark.parametrize("codec", ["none", "zstd"])
def test_ours_idempotent_to_kafka_python(cluster, topic, codec):
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KpTopicPartition

    sent = records(90)
    with Producer(cluster.bootstrap_servers, compression_type=codec, acks="all",
                  enable_idempotence=True) as producer:
        for key, value, headers in sent:
            producer.send(topic, value, key=key, headers=headers)
        producer.flush(30)
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, check_crcs=True,
                             enable_auto_commit=False, consumer_timeout_ms=10_000)
    consumer.assign([KpTopicPartition(topic, p) for p in range(PARTITIONS)])
    consumer.seek_to_beginning()
    got = []
    for message in consumer:
        got.append((message.key, message.value, list(message.headers)))
        if len(got) == len(sent):
            break
    consumer.close()
    assert sorted(got, key=repr) == sorted(((k, v, list(h)) for k, v, h in sent), key=repr)
