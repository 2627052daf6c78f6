"""A record over the broker's ``message.max.bytes``: a named error through the future, promptly."""

from __future__ import annotations

import time

import pytest

from simplekafka.admin import Admin
from simplekafka.client.errors import BufferExhaustedError, MessageTooLargeError
from simplekafka.cluster import LocalCluster
from simplekafka.producer import Producer

pytestmark = pytest.mark.integration


def test_a_record_over_message_max_bytes_fails_with_message_too_large(tmp_path):
    with LocalCluster(brokers=1, base_dir=tmp_path,
                      broker_config={"message.max.bytes": 10_000}) as cluster:
        with Admin(cluster.bootstrap_servers) as admin:
            admin.create_topic("limits")
        with Producer(cluster.bootstrap_servers, linger_ms=0, acks="all") as producer:
            small = producer.send("limits", b"x" * 100)
            assert small.get(30).offset == 0
            started = time.monotonic()
            big = producer.send("limits", b"y" * 50_000)  # under our 1 MB limit, over theirs
            with pytest.raises(MessageTooLargeError, match="MESSAGE_TOO_LARGE"):
                big.get(30)
            assert time.monotonic() - started < 10  # not retried: the error is final
            assert producer.send("limits", b"z").get(30).offset == 1


def test_a_stalled_broker_makes_send_block_then_fail_and_everything_flows_after(tmp_path):
    import os
    import signal

    with LocalCluster(brokers=1, base_dir=tmp_path) as cluster:
        with Admin(cluster.bootstrap_servers) as admin:
            admin.create_topic("slow")
        producer = Producer(cluster.bootstrap_servers, buffer_memory=50_000, max_block_ms=500,
                            request_timeout_ms=30_000, linger_ms=0)
        producer.send("slow", b"warm").get(30)
        pid = cluster.broker_pids[1]
        os.kill(pid, signal.SIGSTOP)  # the broker stops answering, its socket stays open
        try:
            accepted = []
            with pytest.raises(BufferExhaustedError):
                for i in range(10_000):
                    accepted.append(producer.send("slow", b"%05d" % i + b"." * 95))
            assert 100 < len(accepted) < 1000  # bounded by buffer_memory, not by the loop
        finally:
            os.kill(pid, signal.SIGCONT)
        producer.flush(60)
        assert [f.get(0).offset for f in accepted] == list(range(1, len(accepted) + 1))
        producer.close()


def test_poll_returns_on_time_while_the_broker_is_stalled(tmp_path):
    import os
    import signal

    from simplekafka.client import TopicPartition
    from simplekafka.consumer import Consumer

    with LocalCluster(brokers=1, base_dir=tmp_path) as cluster:
        with Admin(cluster.bootstrap_servers) as admin:
            admin.create_topic("stalled")
        with Producer(cluster.bootstrap_servers) as producer:
            producer.send("stalled", b"one").get(30)
        with Consumer(bootstrap_servers=cluster.bootstrap_servers, auto_offset_reset="earliest",
                      request_timeout_ms=3000) as consumer:
            consumer.assign([TopicPartition("stalled", 0)])
            assert [r.value for r in consumer.poll(10_000)] == [b"one"]
            pid = cluster.broker_pids[1]
            os.kill(pid, signal.SIGSTOP)
            try:
                for _ in range(3):  # including past the request timeout
                    started = time.monotonic()
                    assert consumer.poll(1500) == []
                    assert time.monotonic() - started < 3.0
            finally:
                os.kill(pid, signal.SIGCONT)
            with Producer(cluster.bootstrap_servers) as producer:
                producer.send("stalled", b"two").get(30)
            records = []
            deadline = time.monotonic() + 30
            while not records and time.monotonic() < deadline:
                records = consumer.poll(500)
            assert [r.value for r in records] == [b"two"]
