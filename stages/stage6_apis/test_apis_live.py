"""Producer, Consumer and Admin against a real broker process (the shared ``cluster`` fixture)."""

from __future__ import annotations

import time
import uuid

import pytest

from simplekafka.admin import Admin
from simplekafka.client import KafkaClient, TopicPartition
from simplekafka.client.errors import (
    InvalidTopicError,
    MessageTooLargeError,
    NoBrokersAvailableError,
    OffsetOutOfRangeError,
    SerializationError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)
from simplekafka.consumer import Consumer
from simplekafka.producer import Producer, partition_for_key

pytestmark = pytest.mark.integration

CODECS = [None, "gzip", "snappy", "lz4", "zstd"]


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def admin(cluster):
    with Admin(cluster.bootstrap_servers, request_timeout_ms=20_000) as a:
        yield a


def consume_all(bootstrap: str, topic: str, partitions: int, count: int, timeout: float = 30.0,
                **config):
    with Consumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", **config) as c:
        c.assign([TopicPartition(topic, p) for p in range(partitions)])
        got = []
        deadline = time.monotonic() + timeout
        while len(got) < count and time.monotonic() < deadline:
            got += c.poll(500)
        return got


@pytest.mark.parametrize("codec", CODECS)
def test_round_trip_with_keys_null_keys_and_headers(cluster, admin, codec):
    topic = unique(f"rt-{codec}")
    admin.create_topic(topic, num_partitions=3)
    sent = []
    with Producer(cluster.bootstrap_servers, compression_type=codec, acks="all") as producer:
        futures = []
        for i in range(300):
            key = None if i % 5 == 0 else f"key-{i % 11}".encode()
            value = (f"value {i} " * 8).encode()  # compressible
            headers = [("n", str(i).encode()), ("empty", None)] if i % 2 else None
            futures.append(producer.send(topic, value, key=key, headers=headers))
            sent.append((key, value, headers or []))
        producer.flush(30)
        metadata = [f.result(0) for f in futures]
    for (key, _, _), md in zip(sent, metadata):
        if key is not None:
            assert md.partition == partition_for_key(key, 3)
        assert md.offset >= 0
    got = consume_all(cluster.bootstrap_servers, topic, 3, len(sent))
    assert len(got) == len(sent)
    by_position = {(r.partition, r.offset): r for r in got}
    for (key, value, headers), md in zip(sent, metadata):
        record = by_position[(md.partition, md.offset)]
        assert (record.key, record.value, record.headers) == (key, value, list(headers))


@pytest.mark.parametrize("acks", [0, 1, "all"])
def test_every_acks_setting_delivers(cluster, admin, acks):
    topic = unique("acks")
    admin.create_topic(topic)
    with Producer(cluster.bootstrap_servers, acks=acks, linger_ms=0) as producer:
        futures = [producer.send(topic, b"v%d" % i) for i in range(50)]
        producer.flush(30)
        offsets = [f.result(0).offset for f in futures]
    if acks == 0:
        assert offsets == [-1] * 50
    else:
        assert offsets == list(range(50))
    assert [r.value for r in consume_all(cluster.bootstrap_servers, topic, 1, 50)] == [
        b"v%d" % i for i in range(50)
    ]


def test_idempotent_producer_gets_an_id_and_writes_in_order(cluster, admin):
    topic = unique("idem")
    admin.create_topic(topic)
    with Producer(cluster.bootstrap_servers, acks="all", enable_idempotence=True) as producer:
        futures = [producer.send(topic, b"%d" % i) for i in range(500)]
        producer.flush(30)
        assert producer.producer_id >= 0
        assert [f.result(0).offset for f in futures] == list(range(500))


def test_serializers_are_plain_callables(cluster, admin):
    topic = unique("serde")
    admin.create_topic(topic)
    with Producer(
        cluster.bootstrap_servers, key_serializer=str.encode,
        value_serializer=lambda v: repr(v).encode(),
    ) as producer:
        producer.send(topic, {"a": 1}, key="k").get(30)
    with Consumer(
        bootstrap_servers=cluster.bootstrap_servers, auto_offset_reset="earliest",
        key_deserializer=bytes.decode, value_deserializer=lambda b: eval(b.decode()),
    ) as consumer:
        consumer.assign([(topic, 0)])
        records = []
        deadline = time.monotonic() + 20
        while not records and time.monotonic() < deadline:
            records = consumer.poll(500)
    assert (records[0].key, records[0].value) == ("k", {"a": 1})


def test_seek_position_and_ends(cluster, admin):
    topic = unique("seek")
    admin.create_topic(topic)
    tp = TopicPartition(topic, 0)
    with Producer(cluster.bootstrap_servers) as producer:
        for i in range(100):
            producer.send(topic, b"%d" % i)
        producer.flush(30)
    with Consumer(bootstrap_servers=cluster.bootstrap_servers, consumer_timeout_ms=1500) as c:
        c.assign([tp])
        assert c.beginning_offsets([tp]) == {tp: 0}
        assert c.end_offsets([tp]) == {tp: 100}
        assert c.position(tp) == 100  # auto_offset_reset latest
        c.seek(tp, 40)
        assert c.position(tp) == 40
        first = c.poll(5000, max_records=10)
        assert [r.offset for r in first] == list(range(40, 50))
        assert c.position(tp) == 50
        c.seek_to_beginning()
        assert c.position(tp) == 0
        assert [r.offset for r in c] == list(range(100))  # iteration stops when idle
        c.seek_to_end(tp)
        assert c.poll(300) == []


def test_offset_out_of_range_resets_or_raises(cluster, admin):
    topic = unique("oor")
    admin.create_topic(topic)
    tp = TopicPartition(topic, 0)
    with Producer(cluster.bootstrap_servers) as producer:
        for i in range(10):
            producer.send(topic, b"%d" % i)
    with Consumer(bootstrap_servers=cluster.bootstrap_servers,
                  auto_offset_reset="earliest") as c:
        c.assign([tp])
        c.seek(tp, 5000)
        records = []
        deadline = time.monotonic() + 20
        while not records and time.monotonic() < deadline:
            records = c.poll(500)
        assert records[0].offset == 0
    with Consumer(bootstrap_servers=cluster.bootstrap_servers, auto_offset_reset="none") as c:
        c.assign([tp])
        c.seek(tp, 5000)
        with pytest.raises(OffsetOutOfRangeError):
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                c.poll(500)


def test_admin_topics_and_cluster(cluster, admin):
    topic = unique("admin")
    admin.create_topic(topic, num_partitions=4)
    assert topic in admin.list_topics()
    description = admin.describe_topics([topic])[topic]
    assert [p.partition for p in description.partitions] == [0, 1, 2, 3]
    assert all(p.leader == 1 and p.replicas == (1,) and p.isr == (1,)
               for p in description.partitions)
    with pytest.raises(TopicAlreadyExistsError):
        admin.create_topic(topic)
    info = admin.describe_cluster()
    assert [b.node_id for b in info.brokers] == [1] and info.controller_id == 1
    admin.delete_topic(topic)
    assert topic not in admin.list_topics()
    with pytest.raises(UnknownTopicOrPartitionError):
        admin.describe_topics([topic])


def test_stale_metadata_after_delete_and_recreate_with_more_partitions(cluster, admin):
    topic = unique("stale")
    admin.create_topic(topic, num_partitions=1)
    with Producer(cluster.bootstrap_servers, linger_ms=0, acks="all",
                  max_block_ms=20_000) as producer:
        producer.send(topic, b"before").get(30)
        admin.delete_topic(topic)
        admin.create_topic(topic, num_partitions=3)
        # The producer's cache still says one partition: sending to partition 2
        # must refresh it and then succeed.
        md = producer.send(topic, b"after", partition=2).get(30)
        assert md.partition == 2
        keyed = [producer.send(topic, b"x", key=b"k%d" % i) for i in range(30)]
        producer.flush(30)
        assert {f.result(0).partition for f in keyed} == {0, 1, 2}


# ---- bad input: named errors, promptly -------------------------------------------------


def test_unreachable_bootstrap_server_is_a_prompt_named_error():
    from simplekafka.cluster.local import free_port

    started = time.monotonic()
    with pytest.raises(NoBrokersAvailableError, match=r"127\.0\.0\.1"):
        with KafkaClient(f"127.0.0.1:{free_port()}", request_timeout_ms=1500) as client:
            client.refresh_metadata()
    assert time.monotonic() - started < 10
    started = time.monotonic()
    with Producer(f"127.0.0.1:{free_port()}", max_block_ms=1500,
                  request_timeout_ms=1500) as producer:
        with pytest.raises(NoBrokersAvailableError):
            producer.send("t", b"v")
    assert time.monotonic() - started < 10


def test_unknown_topic_is_a_prompt_named_error(cluster):
    started = time.monotonic()
    with Producer(cluster.bootstrap_servers, max_block_ms=1500) as producer:
        with pytest.raises(UnknownTopicOrPartitionError, match="no-such-topic"):
            producer.send("no-such-topic", b"v")
    with Consumer(bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=1500) as c:
        with pytest.raises(UnknownTopicOrPartitionError):
            c.assign([("no-such-topic", 0)])
    assert time.monotonic() - started < 15


def test_a_value_that_is_not_bytes_needs_a_serializer(cluster, admin):
    topic = unique("nobytes")
    admin.create_topic(topic)
    with Producer(cluster.bootstrap_servers) as producer:
        with pytest.raises(SerializationError, match="value_serializer"):
            producer.send(topic, "a str")
        with pytest.raises(SerializationError, match="key"):
            producer.send(topic, b"v", key=42)
        with pytest.raises(InvalidTopicError):
            producer.send("not a topic!", b"v")
        with pytest.raises(ValueError, match="timestamp"):
            producer.send(topic, b"v", timestamp=1.5)
        with pytest.raises(ValueError, match="partition"):
            producer.send(topic, b"v", partition=-1)


def test_a_record_over_the_producers_limit_fails_at_send(cluster):
    with Producer(cluster.bootstrap_servers, max_request_size=1000) as producer:
        with pytest.raises(MessageTooLargeError):
            producer.send("whatever", b"x" * 2000)
