"""A zombie leader: frozen (SIGSTOP) long enough to be replaced, then woken (SIGCONT).

It still believes it leads. It must not acknowledge an acks=all write (its
followers now fetch from the new leader, so its high watermark cannot move),
and whatever it appended while a zombie is truncated when it rejoins as a
follower of the new leader.
"""

from __future__ import annotations

import time

import pytest

from simplekafka.cluster.checker import DeliveryLog, read_partition_dir
from stages.stage7_cluster.system import (
    create_topic,
    drain,
    running_cluster,
    send_and_wait,
    wait_for_identical_logs,
)

pytestmark = pytest.mark.integration  # starts real processes

TOPIC = "zombie"


def test_zombie_leader_cannot_acknowledge_and_its_stale_data_is_truncated(tmp_path):
    from simplekafka.producer import Producer

    with running_cluster(tmp_path) as (cluster, faults):
        create_topic(cluster, TOPIC, 1, 3, {"min.insync.replicas": "2"})
        log = DeliveryLog()
        before = [f"before-{i}".encode() for i in range(10)]
        assert send_and_wait(cluster.bootstrap_servers, TOPIC, before, "all", log) == [None] * 10
        zombie = cluster.leader_of(TOPIC, 0)
        # A producer that knows only the zombie, with its metadata fetched while it still led.
        stale = Producer(cluster.brokers[zombie].address, acks="all", linger_ms=0, retries=0,
                         request_timeout_ms=15_000, delivery_timeout_ms=30_000)
        try:
            # Warm up: its connection to the zombie is open before the zombie freezes.
            warm = stale.send(TOPIC, value=b"warm-up", partition=0)
            log.track(warm, value=b"warm-up")
            warm.result(30)
            faults.pause(zombie)
            new_leader = cluster.wait_for_leader(TOPIC, 0, not_=zombie)
            # The write waits in the zombie's socket while it sleeps, and is read as it wakes.
            future = stale.send(TOPIC, value=b"zombie-write", partition=0)
            time.sleep(0.5)
            faults.resume(zombie)
            zombie_dir = cluster.partition_dir(zombie, TOPIC, 0)
            # Read from the socket as it wakes, the write is appended: stale data in its log.
            cluster.wait_for(
                lambda: b"zombie-write" in [r.value for r in read_partition_dir(zombie_dir)],
                "the zombie to append the write it found on waking", timeout=20)
            error = future.exception(40)
            assert error is not None, f"the zombie acknowledged {future.result()}"
            print(f"the zombie answered: {type(error).__name__}: {error}")
        finally:
            stale.close(5)
        after = [f"after-{i}".encode() for i in range(10)]
        assert send_and_wait(cluster.bootstrap_servers, TOPIC, after, "all", log) == [None] * 10
        assert cluster.leader_of(TOPIC, 0) == new_leader
        cluster.wait_for_isr(TOPIC, 0, [zombie])
        wait_for_identical_logs(cluster, TOPIC, 0)
        zombie_values = [r.value for r in read_partition_dir(
            cluster.partition_dir(zombie, TOPIC, 0))]
        assert b"zombie-write" not in zombie_values
        assert zombie_values == [*before, b"warm-up", *after]
        drain(cluster, TOPIC, 1, log)
        report = log.check()
        assert report.ok, report.summary()
