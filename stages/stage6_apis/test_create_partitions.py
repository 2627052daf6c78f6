"""CreatePartitions against a real broker: confluent-kafka, kafka-python, our Admin and CLI,
and consumers subscribed to the topic that pick up the new partitions."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid

import pytest

from simplekafka.admin import Admin
from simplekafka.client.errors import InvalidPartitionsError
from simplekafka.consumer import Consumer
from simplekafka.producer import Producer

pytestmark = pytest.mark.integration


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def admin(cluster):
    with Admin(cluster.bootstrap_servers, request_timeout_ms=30_000) as a:
        yield a


def partition_count(bootstrap: str, topic: str) -> int:
    """As a brand-new client sees it."""
    with Admin(bootstrap) as fresh:
        return len(fresh.describe_topics([topic])[topic].partitions)


def test_confluent_create_partitions(cluster, admin):
    from confluent_kafka import KafkaError
    from confluent_kafka.admin import AdminClient, NewPartitions

    topic = unique("cp-confluent")
    admin.create_topic(topic, num_partitions=2)
    client = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    client.create_partitions([NewPartitions(topic, 5)], request_timeout=30)[topic].result(60)
    assert partition_count(cluster.bootstrap_servers, topic) == 5
    described = admin.describe_topics([topic])[topic].partitions
    assert all(p.leader == 1 for p in described)
    smaller = client.create_partitions([NewPartitions(topic, 3)])[topic].exception(60)
    assert smaller.args[0].code() == KafkaError.INVALID_PARTITIONS
    missing = client.create_partitions([NewPartitions(unique("none"), 3)])
    error = next(iter(missing.values())).exception(60)
    assert error.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    # The new partitions take records.
    with Producer(cluster.bootstrap_servers, acks="all") as producer:
        sent = producer.send(topic, b"on partition 4", partition=4).result(30)
    assert sent.partition == 4 and sent.offset == 0


def test_kafka_python_create_partitions(cluster, admin):
    from kafka.admin import KafkaAdminClient, NewPartitions
    from kafka.errors import InvalidPartitionsError as KpInvalidPartitions

    topic = unique("cp-kp")
    admin.create_topic(topic, num_partitions=1)
    client = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        client.create_partitions({topic: NewPartitions(4)}, timeout_ms=30_000)
        assert partition_count(cluster.bootstrap_servers, topic) == 4
        with pytest.raises(KpInvalidPartitions):
            client.create_partitions({topic: NewPartitions(2)}, timeout_ms=30_000)
    finally:
        client.close()


def test_our_admin_and_cli(cluster, admin):
    topic = unique("cp-ours")
    admin.create_topic(topic, num_partitions=1)
    admin.create_partitions({topic: 3})
    assert partition_count(cluster.bootstrap_servers, topic) == 3
    with pytest.raises(InvalidPartitionsError):
        admin.create_partitions({topic: 3})
    cli = [sys.executable, "-m", "simplekafka", "topics", "alter", topic,
           "--bootstrap-server", cluster.bootstrap_servers]
    done = subprocess.run([*cli, "--partitions", "6"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert "now has 6 partitions" in done.stdout
    assert partition_count(cluster.bootstrap_servers, topic) == 6
    refused = subprocess.run([*cli, "--partitions", "2"], capture_output=True, text=True,
                             timeout=120)
    assert refused.returncode != 0
    assert "Traceback" not in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert "partitions" in refused.stderr.lower()


def produce_to_every_partition(bootstrap: str, topic: str, partitions: range, tag: bytes):
    with Producer(bootstrap, acks="all") as producer:
        for p in partitions:
            producer.send(topic, tag + b"-%d" % p, partition=p).result(30)


def test_a_subscribed_confluent_consumer_gets_the_new_partitions(cluster, admin):
    from confluent_kafka import Consumer as ConfluentConsumer

    topic = unique("cp-follow-confluent")
    admin.create_topic(topic, num_partitions=1)
    consumer = ConfluentConsumer({
        "bootstrap.servers": cluster.bootstrap_servers, "group.id": unique("g"),
        "auto.offset.reset": "earliest", "topic.metadata.refresh.interval.ms": 1000})
    try:
        consumer.subscribe([topic])
        produce_to_every_partition(cluster.bootstrap_servers, topic, range(1), b"before")
        seen = set()
        deadline = time.monotonic() + 60
        while not seen and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                seen.add((message.partition(), message.value()))
        admin.create_partitions({topic: 3})
        produce_to_every_partition(cluster.bootstrap_servers, topic, range(3), b"after")
        deadline = time.monotonic() + 90
        while len(seen) < 4 and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                seen.add((message.partition(), message.value()))
        assert {(p, b"after-%d" % p) for p in range(3)} <= seen, seen
        assert {tp.partition for tp in consumer.assignment()} == {0, 1, 2}
    finally:
        consumer.close()


def test_our_subscribed_consumer_gets_the_new_partitions(cluster, admin):
    topic = unique("cp-follow-ours")
    admin.create_topic(topic, num_partitions=1)
    produce_to_every_partition(cluster.bootstrap_servers, topic, range(1), b"before")
    with Consumer(topic, bootstrap_servers=cluster.bootstrap_servers, group_id=unique("g"),
                  auto_offset_reset="earliest", metadata_max_age_ms=1000) as consumer:
        seen = set()
        deadline = time.monotonic() + 60
        while not seen and time.monotonic() < deadline:
            seen |= {(r.partition, r.value) for r in consumer.poll(500)}
        admin.create_partitions({topic: 3})
        produce_to_every_partition(cluster.bootstrap_servers, topic, range(3), b"after")
        deadline = time.monotonic() + 90
        while len(seen) < 4 and time.monotonic() < deadline:
            seen |= {(r.partition, r.value) for r in consumer.poll(500)}
        assert {(p, b"after-%d" % p) for p in range(3)} <= seen, seen
        assert {tp.partition for tp in consumer.assignment()} == {0, 1, 2}
