"""A topic deleted and re-created under a running confluent-kafka producer and group.

What Kafka answers in the window, and what we answer: Produce, Fetch and
OffsetCommit get UNKNOWN_TOPIC_OR_PARTITION; librdkafka keeps the producer's
records (for up to ``topic.metadata.propagation.max.ms``) and delivers them once
the topic is back. Deleting the topic also deletes every group's offsets on it
(Kafka's ``handleDeletedPartitions``), so the group starts the new topic at
``auto.offset.reset`` rather than at the old topic's offsets, which would skip
the new topic's first records. The re-created topic has a new topic id
(KIP-516), answered in Metadata v10+.
"""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from simplekafka.admin import Admin
from simplekafka.cluster import LocalCluster
from simplekafka.coordination.processes import wait_until as _poll

pytestmark = pytest.mark.integration

PARTITIONS = 3


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    # Without auto-creation: otherwise the producer's own Metadata requests re-create the
    # topic (with num.partitions) the moment it is gone, in Kafka as here.
    with LocalCluster(brokers=1, base_dir=tmp_path_factory.mktemp("recreated"),
                      broker_config={"group.initial.rebalance.delay.ms": 200,
                                     "auto.create.topics.enable": "false"}) as running:
        yield running


def wait_until(condition, timeout: float, what: str) -> None:
    _poll(condition, what, timeout=timeout, interval=0.05, error=AssertionError)


class Producing(threading.Thread):
    """A confluent-kafka producer sending numbered records, with delivery reports."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        from confluent_kafka import Producer

        super().__init__(daemon=True)
        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        self.topic = topic
        self.stop = threading.Event()
        self.sent: list[tuple[float, int]] = []  # (time, number)
        self.delivered: set[int] = set()
        self.failed: list[str] = []
        self.left = -1

    def report(self, error, message) -> None:
        if error is None:
            self.delivered.add(int(message.value()))
        else:
            self.failed.append(str(error))

    def run(self) -> None:
        number = 0
        while not self.stop.is_set():
            self.producer.produce(self.topic, str(number).encode(), key=str(number).encode(),
                                  on_delivery=self.report)
            self.sent.append((time.monotonic(), number))
            number += 1
            self.producer.poll(0)
            time.sleep(0.005)
        self.left = self.producer.flush(30)


class Consuming(threading.Thread):
    """A confluent-kafka group member committing every record it receives."""

    def __init__(self, bootstrap: str, topic: str, group: str) -> None:
        super().__init__(daemon=True)
        self.config = {"bootstrap.servers": bootstrap, "group.id": group,
                       "auto.offset.reset": "earliest", "enable.auto.commit": False,
                       "topic.metadata.refresh.interval.ms": 1000}
        self.topic = topic
        self.stop = threading.Event()
        self.received: set[int] = set()
        self.commits: list[tuple[float, str | None]] = []  # (time, error or None)

    def run(self) -> None:
        from confluent_kafka import Consumer, KafkaException

        consumer = Consumer(self.config)
        consumer.subscribe([self.topic])
        try:
            while not self.stop.is_set():
                message = consumer.poll(0.1)
                if message is None or message.error():
                    continue
                self.received.add(int(message.value()))
                try:
                    consumer.commit(message=message, asynchronous=False)
                    self.commits.append((time.monotonic(), None))
                except KafkaException as exc:
                    self.commits.append((time.monotonic(), exc.args[0].name()))
        finally:
            consumer.close()


def test_producer_and_group_carry_on_into_the_recreated_topic(cluster):
    bootstrap = cluster.bootstrap_servers
    topic = f"recreated-{uuid.uuid4().hex[:8]}"
    with Admin(bootstrap) as admin:
        admin.create_topic(topic, num_partitions=PARTITIONS)
    producing = Producing(bootstrap, topic)
    consuming = Consuming(bootstrap, topic, f"group-{uuid.uuid4().hex[:8]}")
    producing.start()
    consuming.start()
    try:
        wait_until(lambda: len(consuming.received) > 100, 60, "the group consuming")
        with Admin(bootstrap) as admin:
            admin.delete_topic(topic)  # returns once the topic is gone
        deleted = time.monotonic()
        time.sleep(4)  # the window: records queue in the producer, the group loses its topic
        with Admin(bootstrap) as admin:
            admin.create_topic(topic, num_partitions=PARTITIONS)
        recreated = time.monotonic()
        wait_until(lambda: any(t > recreated and error is None
                               for t, error in consuming.commits), 60,
                   "a commit on the re-created topic")
        time.sleep(1)
    finally:
        producing.stop.set()
        producing.join(60)
    try:
        assert producing.left == 0 and not producing.failed, producing.failed[:3]
        after = {number for t, number in producing.sent if t > deleted}
        assert after <= producing.delivered  # the window's records too
        wait_until(lambda: after <= consuming.received, 60, "every record since the deletion")
    finally:
        consuming.stop.set()
        consuming.join(30)
