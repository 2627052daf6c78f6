"""Smoke test of the real thing: ``simplekafka broker`` as a process, real ZooKeeper, clients.

The broker is started exactly as LocalCluster and users start it; kafka-python
(idempotent producer, its default) and confluent-kafka (acks=all) produce, both
consume; SIGTERM shuts it down cleanly (exit 0, deregistered, clean-shutdown
marker written), and a restart on the same data directory still serves every
record.
"""

from __future__ import annotations

import contextlib
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from simplekafka.coordination.processes import free_port

pytestmark = pytest.mark.integration

START_TIMEOUT = 60.0


class BrokerProcess:
    """One ``simplekafka broker`` subprocess; ``start()`` waits for its ready line."""

    def __init__(self, broker_id: int, port: int, data_dir: Path, zk_connect: str):
        self.command = [sys.executable, "-m", "simplekafka", "broker",
                        "--broker-id", str(broker_id), "--port", str(port),
                        "--data-dir", str(data_dir), "--zookeeper", zk_connect,
                        "--set", "zookeeper.session.timeout.ms=6000"]
        self.port = port
        self.data_dir = data_dir
        self.process: subprocess.Popen | None = None
        self.stderr_lines: list[str] = []

    def start(self) -> BrokerProcess:
        self.process = subprocess.Popen(self.command, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True)
        lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=lambda: [lines.put(line) for line in self.process.stdout],
                         daemon=True).start()
        threading.Thread(target=lambda: self.stderr_lines.extend(self.process.stderr),
                         daemon=True).start()
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            try:
                line = lines.get(timeout=0.5)
            except queue.Empty:
                if self.process.poll() is not None:
                    break
                continue
            if "listening on" in line:
                return self
        self.kill()
        raise AssertionError("broker did not start:\n" + "".join(self.stderr_lines[-30:]))

    def terminate(self, timeout: float = 30.0) -> int:
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout)

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"


@pytest.fixture
def broker_factory(zk_connect, tmp_path):
    started: list[BrokerProcess] = []

    def make(broker_id: int = 1, port: int | None = None,
             data_dir: Path | None = None) -> BrokerProcess:
        broker = BrokerProcess(broker_id, port or free_port(),
                               data_dir or tmp_path / f"broker-{broker_id}", zk_connect)
        started.append(broker)
        return broker.start()

    yield make
    for broker in started:
        broker.kill()


def consume_all(bootstrap: str, topic: str, partitions: int, expected: int) -> list:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                             enable_auto_commit=False, consumer_timeout_ms=5000)
    try:
        consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
        got = []
        deadline = time.monotonic() + 30
        while len(got) < expected and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=500).values():
                got.extend(batch)
        return got
    finally:
        consumer.close()


def test_real_clients_produce_and_consume_and_the_broker_restarts_cleanly(broker_factory, zk):
    from confluent_kafka import Producer
    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    broker = broker_factory()
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    with contextlib.closing(admin):
        admin.create_topics([NewTopic("smoke", num_partitions=2, replication_factor=1)])

    idempotent = KafkaProducer(bootstrap_servers=broker.bootstrap)  # acks=all, idempotent
    futures = [idempotent.send("smoke", key=b"kp-%d" % i, value=b"kafka-python %d" % i,
                               headers=[("n", str(i).encode())]) for i in range(100)]
    idempotent.flush(30)
    assert all(f.get(timeout=10).offset >= 0 for f in futures)
    idempotent.close()

    errors = []
    confluent = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all",
                          "compression.type": "zstd"})
    for i in range(100):
        confluent.produce("smoke", key=b"ck-%d" % i, value=b"confluent %d " % i * 10,
                          on_delivery=lambda err, _msg: err and errors.append(err))
    assert confluent.flush(30) == 0
    assert errors == []

    records = consume_all(broker.bootstrap, "smoke", 2, 200)
    assert len(records) == 200
    by_key = {r.key: r for r in records}
    assert by_key[b"kp-7"].value == b"kafka-python 7"
    assert by_key[b"kp-7"].headers == [("n", b"7")]
    assert by_key[b"ck-3"].value == b"confluent 3 " * 10
    for partition in (0, 1):
        offsets = [r.offset for r in records if r.partition == partition]
        assert offsets == sorted(offsets) == list(range(len(offsets)))

    assert broker.terminate() == 0
    assert (broker.data_dir / ".kafka_cleanshutdown").exists()
    assert zk.exists("/brokers/ids/1") is None

    again = broker_factory(port=broker.port, data_dir=broker.data_dir)
    assert len(consume_all(again.bootstrap, "smoke", 2, 200)) == 200
    assert again.terminate() == 0
