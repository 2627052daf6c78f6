"""SIGKILL the broker while a producer with acks=all is busy, restart it, lose nothing.

A record is "acknowledged" when the producer's delivery report says so, with an
offset. After two rounds of kill -9 and restart, every acknowledged record must
be in the log at exactly its acknowledged offset with exactly its bytes, the log
must have no holes, and the broker must serve new produce and fetch requests.
Records that were in flight at the kill may or may not be there (they were
never acknowledged), and may appear twice (the producer retried them).
"""

from __future__ import annotations

import threading
import time

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition

from simplekafka.cluster import LocalCluster

from ._interop import create_topic, latest_offset, unique_topic

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PARTITIONS = 2
ROUNDS = 2


class SteadyProducer(threading.Thread):
    """Produces numbered records as fast as the broker takes them, recording every ack."""

    def __init__(self, bootstrap: str, topic: str, round_number: int, **config):
        super().__init__(daemon=True)
        self.topic, self.round_number = topic, round_number
        self.producer = Producer({
            "bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 2,
            "message.timeout.ms": 120_000,  # wait for the restart rather than give up
            "reconnect.backoff.max.ms": 500, **config,
        })
        self.acked: dict[tuple[int, int], bytes] = {}
        self.acked_twice: list[tuple[int, int]] = []
        self.failed = 0
        self.stop_requested = threading.Event()
        self.lock = threading.Lock()

    def on_delivery(self, error, message) -> None:
        with self.lock:
            if error is None:
                key = (message.partition(), message.offset())
                if key in self.acked:  # checked by the test: a callback must not raise
                    self.acked_twice.append(key)
                self.acked[key] = message.value()
            else:
                self.failed += 1

    def run(self) -> None:
        sequence = 0
        while not self.stop_requested.is_set():
            value = b"round-%d-record-%09d-" % (self.round_number, sequence) + b"x" * 80
            try:
                self.producer.produce(self.topic, value=value, partition=sequence % PARTITIONS,
                                      on_delivery=self.on_delivery)
                sequence += 1
            except BufferError:
                self.producer.poll(0.05)
            self.producer.poll(0)

    def acked_count(self) -> int:
        with self.lock:
            return len(self.acked)

    def finish(self, timeout: float = 90.0) -> None:
        self.stop_requested.set()
        self.join(10)
        remaining = self.producer.flush(timeout)
        assert remaining == 0, f"{remaining} records still unanswered {timeout} s after restart"


def wait_for_acks(producer: SteadyProducer, at_least: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while producer.acked_count() < at_least:
        assert time.monotonic() < deadline, f"only {producer.acked_count()} acks in {timeout} s"
        time.sleep(0.05)


def read_everything(cluster: LocalCluster, topic: str) -> dict[tuple[int, int], bytes]:
    """Every record of the topic, keyed by (partition, offset), read up to the high watermark."""
    ends = {p: latest_offset(cluster.broker_ports[1], topic, p) for p in range(PARTITIONS)}
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "unused",
                         "enable.auto.commit": False, "enable.partition.eof": True})
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
        records: dict[tuple[int, int], bytes] = {}
        finished: set[int] = {p for p, end in ends.items() if end == 0}
        deadline = time.monotonic() + 60
        while len(finished) < PARTITIONS and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error() is not None:
                if message.error().code() == -191:  # _PARTITION_EOF
                    if message.offset() >= ends[message.partition()]:
                        finished.add(message.partition())
                    continue
                raise KafkaException(message.error())
            records[(message.partition(), message.offset())] = message.value()
        assert len(finished) == PARTITIONS, f"did not reach the ends {ends} in 60 s"
        return records
    finally:
        consumer.close()


def test_sigkill_during_acks_all_production_loses_no_acknowledged_record(tmp_path):
    config = {"zookeeper.session.timeout.ms": "6000"}  # the dead broker's znode goes sooner
    with LocalCluster(brokers=1, base_dir=tmp_path, broker_config=config) as cluster:
        topic = unique_topic("crash")
        create_topic(cluster.bootstrap_servers, topic, PARTITIONS)
        acked: dict[tuple[int, int], bytes] = {}
        for round_number in range(ROUNDS):
            producer = SteadyProducer(cluster.bootstrap_servers, topic, round_number)
            producer.start()
            wait_for_acks(producer, 2000)
            time.sleep(0.5)  # steady state: batches in flight when the kill lands
            cluster.kill(1)
            time.sleep(0.5)
            cluster.restart(1)
            producer.finish()
            assert producer.failed == 0, f"{producer.failed} records failed for good"
            assert not producer.acked_twice, f"offsets acked twice: {producer.acked_twice[:5]}"
            overlap = acked.keys() & producer.acked.keys()
            assert not overlap, f"offsets acknowledged twice across rounds: {sorted(overlap)[:5]}"
            acked.update(producer.acked)

        stored = read_everything(cluster, topic)
        missing = [key for key in acked if key not in stored]
        assert not missing, f"{len(missing)} acknowledged records lost, e.g. {sorted(missing)[:5]}"
        changed = [key for key, value in acked.items() if stored[key] != value]
        assert not changed, f"{len(changed)} records changed, e.g. {sorted(changed)[:5]}"
        for partition in range(PARTITIONS):
            offsets = sorted(o for p, o in stored if p == partition)
            assert offsets == list(range(len(offsets))), f"holes in partition {partition}"

        # And the restarted broker serves as before.
        after = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
        after.produce(topic, value=b"after the crashes", partition=0)
        assert after.flush(30) == 0
        final = read_everything(cluster, topic)
        assert max((o, v) for (p, o), v in final.items() if p == 0)[1] == b"after the crashes"


def test_sigkill_with_an_idempotent_producer_keeps_every_record_exactly_once(tmp_path):
    """The broker rebuilds its producer state (last sequences) from the log after a crash,
    so the producer's retries of in-flight batches are recognised as duplicates."""
    config = {"zookeeper.session.timeout.ms": "6000"}
    with LocalCluster(brokers=1, base_dir=tmp_path, broker_config=config) as cluster:
        topic = unique_topic("crash-idempotent")
        create_topic(cluster.bootstrap_servers, topic, PARTITIONS)
        producer = SteadyProducer(cluster.bootstrap_servers, topic, 0, **{
            "enable.idempotence": True})
        producer.start()
        wait_for_acks(producer, 2000)
        time.sleep(0.5)
        cluster.kill(1)
        time.sleep(0.5)
        cluster.restart(1)
        wait_for_acks(producer, producer.acked_count() + 1000)
        producer.finish()
        assert producer.failed == 0, f"{producer.failed} records failed for good"

        stored = read_everything(cluster, topic)
        values = list(stored.values())
        duplicates = len(values) - len(set(values))
        assert duplicates == 0, f"{duplicates} records stored twice despite idempotence"
        missing = [key for key in producer.acked if stored.get(key) != producer.acked[key]]
        assert not missing, f"{len(missing)} acknowledged records not at their offsets"
        for partition in range(PARTITIONS):
            sequence = [stored[(p, o)] for p, o in sorted(stored) if p == partition]
            assert sequence == sorted(sequence), f"partition {partition} out of order"
