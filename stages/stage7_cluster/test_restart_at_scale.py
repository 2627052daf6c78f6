"""A broker restart at thousands of partitions: the work per replica that made it slow.

Unit tests with fakes count what a restart costs per partition (ZooKeeper
writes, here); the system test restarts a killed broker of a real cluster and
waits until every broker's metadata shows it back in every ISR, which runs the
same code against the real ZooKeeper and controller.
"""

from __future__ import annotations

import time

import pytest
from twisted.internet import defer

from simplekafka.admin import Admin
from simplekafka.broker.isr import IsrChangeNotifier
from stages.stage7_cluster.system import create_topic, running_cluster

PARTITIONS = 60


class _Writes:
    """A stand-in for the worker thread: each write is a Deferred the test fires."""

    def __init__(self) -> None:
        self.batches: list[list[tuple[str, int]]] = []
        self.waiting: list[defer.Deferred] = []

    def __call__(self, partitions: list[tuple[str, int]]) -> defer.Deferred:
        self.batches.append(partitions)
        self.waiting.append(defer.Deferred())
        return self.waiting[-1]


def test_isr_changes_during_a_notification_write_share_the_next_one():
    # A restarted broker rejoins every ISR at once: its leaders used to write one
    # notification per partition, and the controller read and deleted each one.
    writes = _Writes()
    notifier = IsrChangeNotifier(writes)
    notifier.changed("t", 0)
    assert writes.batches == [[("t", 0)]]  # a lone change is announced at once
    for index in range(1, 1000):
        notifier.changed("t", index)
        notifier.changed("t", index)  # twice: named once
    assert len(writes.batches) == 1
    writes.waiting[0].callback(None)
    assert writes.batches[1] == [("t", index) for index in range(1, 1000)]
    writes.waiting[1].callback(None)
    assert notifier.notifications == 2 and len(writes.batches) == 2


def test_a_failed_notification_does_not_stop_the_next():
    writes = _Writes()
    notifier = IsrChangeNotifier(writes)
    notifier.changed("t", 0)
    notifier.changed("t", 1)
    writes.waiting[0].errback(ConnectionError("ZooKeeper gone"))
    assert writes.batches == [[("t", 0)], [("t", 1)]]
    writes.waiting[1].callback(None)
    notifier.changed("t", 2)
    assert writes.batches[-1] == [("t", 2)]


def _isr_members(bootstrap: str, topic: str) -> list[tuple[int, ...]]:
    with Admin(bootstrap, request_timeout_ms=10_000) as admin:
        return [tuple(p.isr) for p in admin.describe_topics([topic])[topic].partitions]


@pytest.mark.integration
def test_a_killed_broker_restarts_and_every_broker_sees_it_back_in_every_isr(tmp_path):
    # The restart after a SIGKILL: logs recovered (preallocated index files left behind),
    # LeaderAndIsr for every partition, fetchers truncating and catching up, the leaders
    # writing ISRs and batched notifications, the controller's UpdateMetadata to all.
    with running_cluster(tmp_path) as (cluster, _faults):
        topic = "restart-scale"
        create_topic(cluster, topic, PARTITIONS, 3)
        victim = next(b for b in cluster.brokers if b != cluster.controller_id())
        cluster.kill(victim)
        cluster.wait_for_znode_gone(victim)
        cluster.restart(victim)
        assert "logs recovered" in cluster.brokers[victim].log_file.read_text()
        for broker in cluster.brokers.values():
            deadline = time.monotonic() + 90
            while not all(victim in isr for isr in _isr_members(broker.address, topic)):
                assert time.monotonic() < deadline, f"broker {broker.broker_id}'s metadata"
                time.sleep(0.2)
