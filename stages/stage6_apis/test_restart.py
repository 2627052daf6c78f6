"""A broker restarted under a running idempotent producer: everything acknowledged, once."""

from __future__ import annotations

import threading
import time

import pytest

from simplekafka.admin import Admin
from simplekafka.client import TopicPartition
from simplekafka.cluster import LocalCluster
from simplekafka.consumer import Consumer
from simplekafka.producer import Producer

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.mark.parametrize("how", ["sigterm", "sigkill"])
def test_sends_in_flight_across_a_broker_restart_are_retried_without_duplicates(tmp_path, how):
    with LocalCluster(brokers=1, base_dir=tmp_path) as cluster:
        with Admin(cluster.bootstrap_servers) as admin:
            admin.create_topic("restart", num_partitions=1)
        producer = Producer(
            cluster.bootstrap_servers, acks="all", enable_idempotence=True, linger_ms=2,
            request_timeout_ms=5_000, delivery_timeout_ms=90_000, retry_backoff_ms=100,
        )
        futures = []
        stop = threading.Event()

        def keep_sending() -> None:
            n = 0
            while not stop.is_set():
                futures.append(producer.send("restart", b"%08d" % n))
                n += 1
                time.sleep(0.0005)

        sender = threading.Thread(target=keep_sending)
        sender.start()
        time.sleep(1.0)
        if how == "sigkill":
            cluster.kill(1)  # a crash: connections reset, answers lost
            time.sleep(0.5)
        cluster.restart(1)  # (SIGTERM if running) the same broker back on its port and data
        time.sleep(1.0)
        stop.set()
        sender.join(10)
        producer.flush(90)
        results = [f.result(0) for f in futures]  # raises if any send failed
        producer.close()
        assert len(results) > 100

        with Consumer(bootstrap_servers=cluster.bootstrap_servers,
                      auto_offset_reset="earliest") as consumer:
            consumer.assign([TopicPartition("restart", 0)])
            values = []
            deadline = time.monotonic() + 60
            while len(values) < len(futures) and time.monotonic() < deadline:
                values += [r.value for r in consumer.poll(500)]
            values += [r.value for r in consumer.poll(1000)]  # anything extra would be a duplicate
        assert values == [b"%08d" % n for n in range(len(futures))]
