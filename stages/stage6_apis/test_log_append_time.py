"""message.timestamp.type=LogAppendTime: the leader stamps its append time into each batch.

Real broker processes, real clients: confluent-kafka's delivery report (from
ProduceResponse's log_append_time), its consumer and kcat all see the
broker's time instead of the producer's, and the stored batch has the
timestamp-type bit, maxTimestamp = append time and a CRC our parser accepts.
"""

from __future__ import annotations

import time

import pytest

from simplekafka.admin import Admin
from simplekafka.cluster import LocalCluster
from stages.stage4_broker._interop import all_batches, kcat

pytestmark = pytest.mark.integration

CREATE_TIME = 1_000_000  # what the producer claims: long before the test runs
LOG_APPEND_TIME = 2  # confluent_kafka.TIMESTAMP_LOG_APPEND_TIME


def _produce(bootstrap: str, topic: str, count: int, compression: str = "none") -> list:
    """Produce ``count`` records with an old CreateTime; the delivery reports, in order."""
    from confluent_kafka import Producer

    reports: list = []
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5,
                         "compression.type": compression})
    for i in range(count):
        producer.produce(topic, value=b"v%d" % i, key=b"k%d" % i, timestamp=CREATE_TIME,
                         on_delivery=lambda err, msg: reports.append((err, msg)))
    assert producer.flush(60) == 0
    assert all(err is None for err, _ in reports), reports
    return [msg for _, msg in reports]


def _consume(bootstrap: str, topic: str, count: int) -> list:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{topic}",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        messages: list = []
        deadline = time.monotonic() + 60
        while len(messages) < count and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is not None and message.error() is None:
                messages.append(message)
        return messages
    finally:
        consumer.close()


def _check_log_append_time(cluster: LocalCluster, topic: str, compression: str) -> None:
    before = int(time.time() * 1000)
    delivered = _produce(cluster.bootstrap_servers, topic, 20, compression)
    after = int(time.time() * 1000)
    # ProduceResponse's log_append_time: librdkafka reports it as the message's timestamp
    for message in delivered:
        kind, stamp = message.timestamp()
        assert kind == LOG_APPEND_TIME and before <= stamp <= after, message.timestamp()
    consumed = _consume(cluster.bootstrap_servers, topic, 20)
    assert [m.value() for m in consumed] == [b"v%d" % i for i in range(20)]
    for message in consumed:
        kind, stamp = message.timestamp()
        assert kind == LOG_APPEND_TIME and before <= stamp <= after, message.timestamp()
    kcat_times = kcat(cluster.bootstrap_servers, "-C", "-t", topic, "-p", "0", "-o",
                      "beginning", "-e", "-q", "-f", "%T\n").decode().split()
    assert len(kcat_times) == 20
    assert all(before <= int(stamp) <= after for stamp in kcat_times), kcat_times
    batches = all_batches(cluster.broker_ports[1], topic, 0)  # parse_batches checks each CRC
    for batch in batches:
        assert batch.timestamp_type == 1
        assert before <= batch.header.max_timestamp <= after
        assert batch.header.base_timestamp == CREATE_TIME  # as Kafka: only maxTimestamp moves
        assert all(record.timestamp == batch.header.max_timestamp for record in batch.records)


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_topic_config_log_append_time(tmp_path, compression):
    with LocalCluster(brokers=1, base_dir=tmp_path) as cluster:
        with Admin(cluster.bootstrap_servers) as admin:
            admin.create_topic("stamped", config={"message.timestamp.type": "LogAppendTime"})
            admin.create_topic("created")
        _check_log_append_time(cluster, "stamped", compression)
        # The broker default stays CreateTime: the producer's time, type 1 (CreateTime)
        delivered = _produce(cluster.bootstrap_servers, "created", 3)
        assert all(m.timestamp() == (1, -1) or m.timestamp() == (1, CREATE_TIME)
                   for m in delivered), [m.timestamp() for m in delivered]
        consumed = _consume(cluster.bootstrap_servers, "created", 3)
        assert [m.timestamp() for m in consumed] == [(1, CREATE_TIME)] * 3


def test_broker_config_log_message_timestamp_type(tmp_path):
    with LocalCluster(brokers=1, base_dir=tmp_path,
                      broker_config={"log.message.timestamp.type": "LogAppendTime"}) as cluster:
        with Admin(cluster.bootstrap_servers) as admin:
            admin.create_topic("stamped")
            admin.create_topic("kept", config={"message.timestamp.type": "CreateTime"})
        _check_log_append_time(cluster, "stamped", "none")
        _produce(cluster.bootstrap_servers, "kept", 2)
        assert [m.timestamp() for m in _consume(cluster.bootstrap_servers, "kept", 2)] == [
            (1, CREATE_TIME)] * 2


def test_timestamp_type_changes_take_effect_without_a_restart(tmp_path):
    """Through /config/topics and /config/brokers/<default>: the next batch is stamped."""

    def next_kind(topic: str, offset: int) -> int:
        _produce(cluster.bootstrap_servers, topic, 1)
        return _consume(cluster.bootstrap_servers, topic, offset + 1)[offset].timestamp()[0]

    def wait_for_kind(topic: str, kind: int) -> None:
        deadline = time.monotonic() + 30
        offset = 0
        while time.monotonic() < deadline:
            if next_kind(topic, offset) == kind:
                return
            offset += 1
        raise AssertionError(f"{topic}: timestamp type never became {kind}")

    with LocalCluster(brokers=1, base_dir=tmp_path) as cluster:
        with Admin(cluster.bootstrap_servers) as admin:
            admin.create_topic("by-topic")
            admin.create_topic("by-broker")
            assert next_kind("by-topic", 0) == 1
            admin.alter_configs("topic", "by-topic", {"message.timestamp.type": "LogAppendTime"})
            wait_for_kind("by-topic", LOG_APPEND_TIME)
            admin.alter_configs("broker", "", {"log.message.timestamp.type": "LogAppendTime"})
            wait_for_kind("by-broker", LOG_APPEND_TIME)
