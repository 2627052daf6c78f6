"""DeleteRecords (KIP-107) on a replicated topic, with real brokers and real clients.

The leader moves the log start offset and deletes the segments wholly below
it; the follower learns the new start from its fetch answers and does the
same; both write it to log-start-offset-checkpoint, and consumers from
"earliest" start there.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from simplekafka.admin import Admin
from simplekafka.cluster import LocalCluster
from simplekafka.storage.checkpoints import read_offset_checkpoint

pytestmark = pytest.mark.integration

TOPIC = "trimmed"


def _produce(bootstrap: str, count: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0,
                         "batch.num.messages": 1})
    for i in range(count):
        producer.produce(TOPIC, value=b"value-%03d-" % i + b"x" * 200, partition=0)
        producer.poll(0)
    assert producer.flush(60) == 0


def _segment_bases(directory: Path) -> list[int]:
    return sorted(int(path.stem) for path in directory.glob("*.log"))


def _wait_for(predicate, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"not within {timeout} s: {what}")


def _first_offset_from_earliest(bootstrap: str, group: str) -> int:
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        consumer.subscribe([TOPIC])
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is not None and message.error() is None:
                return message.offset()
        raise AssertionError("the consumer got nothing")
    finally:
        consumer.close()


def test_delete_records_moves_the_log_start_on_leader_and_follower(tmp_path):
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient

    with LocalCluster(brokers=2, base_dir=tmp_path) as cluster:
        with Admin(cluster.bootstrap_servers) as admin:
            admin.create_topic(TOPIC, replication_factor=2,
                               config={"segment.bytes": "2000"})  # ~7 batches a segment
        _produce(cluster.bootstrap_servers, 100)
        directories = [cluster.partition_dir(b, TOPIC, 0) for b in (1, 2)]
        for directory in directories:
            assert _segment_bases(directory)[0] == 0 and len(_segment_bases(directory)) > 5
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        futures = admin.delete_records([TopicPartition(TOPIC, 0, 60)], request_timeout=30)
        deleted = futures[TopicPartition(TOPIC, 0, 60)].result(30)
        assert deleted.low_watermark == 60  # answered once leader and follower start at 60
        for directory in directories:  # so no waiting here: both deleted their old segments
            assert 0 < _segment_bases(directory)[0] <= 60, _segment_bases(directory)
        assert _first_offset_from_earliest(cluster.bootstrap_servers, "after-delete") == 60
        for broker_id, directory in zip((1, 2), directories):
            # every segment wholly below 60 is gone, the one holding 60 stays
            _wait_for(lambda d=directory: _segment_bases(d)[0] > 0
                      and _segment_bases(d)[0] <= 60
                      and (len(_segment_bases(d)) == 1 or _segment_bases(d)[1] > 60),
                      f"broker {broker_id}'s segments below 60 deleted")
            checkpoint = directory.parent / "log-start-offset-checkpoint"
            _wait_for(lambda c=checkpoint: read_offset_checkpoint(c).get((TOPIC, 0)) == 60,
                      f"broker {broker_id}'s log-start-offset-checkpoint at 60")
        # -1 deletes everything below the high watermark
        futures = admin.delete_records([TopicPartition(TOPIC, 0, -1)], request_timeout=30)
        assert next(iter(futures.values())).result(30).low_watermark == 100
        # above the high watermark: OFFSET_OUT_OF_RANGE
        futures = admin.delete_records([TopicPartition(TOPIC, 0, 500)], request_timeout=30)
        with pytest.raises(Exception, match=r"OFFSET_OUT_OF_RANGE|out of range"):
            next(iter(futures.values())).result(30)
        # a follower that does not fetch (SIGSTOPped, still in the ISR): REQUEST_TIMED_OUT
        import os
        import signal

        leader = admin.list_topics(TOPIC, timeout=10).topics[TOPIC].partitions[0].leader
        follower = 2 if leader == 1 else 1
        _produce(cluster.bootstrap_servers, 10)
        os.kill(cluster.broker_pids[follower], signal.SIGSTOP)
        try:
            futures = admin.delete_records([TopicPartition(TOPIC, 0, 105)],
                                           request_timeout=30, operation_timeout=2)
            with pytest.raises(Exception, match=r"REQUEST_TIMED_OUT|timed out"):
                next(iter(futures.values())).result(30)
        finally:
            os.kill(cluster.broker_pids[follower], signal.SIGCONT)


def test_kafka_python_delete_records(tmp_path):
    from kafka import KafkaAdminClient, KafkaConsumer
    from kafka import TopicPartition as KafkaTopicPartition

    with LocalCluster(brokers=1, base_dir=tmp_path) as cluster:
        with Admin(cluster.bootstrap_servers) as admin:
            admin.create_topic(TOPIC)
        _produce(cluster.bootstrap_servers, 20)
        client = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
        try:
            answer = client.delete_records({KafkaTopicPartition(TOPIC, 0): 15}, timeout_ms=30_000)
        finally:
            client.close()
        assert answer[KafkaTopicPartition(TOPIC, 0)]["low_watermark"] == 15
        consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers,
                                 auto_offset_reset="earliest", consumer_timeout_ms=10_000)
        try:
            consumer.assign([KafkaTopicPartition(TOPIC, 0)])
            consumer.seek_to_beginning()
            assert consumer.position(KafkaTopicPartition(TOPIC, 0)) == 15
        finally:
            consumer.close()
