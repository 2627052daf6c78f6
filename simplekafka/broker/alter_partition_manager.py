"""A leader's ISR changes, written to ZooKeeper (Kafka's ``AlterPartitionManager``, ZooKeeper mode).

Kafka's ZooKeeper-mode broker writes a leader's new ISR to the partition's
state znode itself (conditional on the znode version it knows) and then
announces the change under ``/isr_change_notification`` for the controller.
The rules and the writes are in ``isr.py``; this service runs them off the
reactor and batches the announcements (``IsrChangeNotifier``). It accepts
writes while it runs: from the broker's join to the start of its shutdown
(it is the last child of the tree, so the first stopped); before and after,
a write fails at once, and the leader keeps its old ISR.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from twisted.application import service
from twisted.internet import defer

from simplekafka.broker.collaborators import Reactor, ZooKeeperHandle, in_worker_thread
from simplekafka.broker.isr import IsrChangeNotifier, write_isr, write_isr_change_notification

if TYPE_CHECKING:
    from simplekafka.broker.partition import Partition


class AlterPartitionManager(service.Service):
    """``write_isr(partition, isr)`` for the ReplicaManager; fires with the znode's version."""

    def __init__(self, broker_id: int, reactor: Reactor, zookeeper: ZooKeeperHandle) -> None:
        self.setName("alter-partition-manager")
        self.broker_id = broker_id
        self.reactor = reactor
        self.zookeeper = zookeeper
        self.notifier = IsrChangeNotifier(self._write_notification)

    def write_isr(self, partition: Partition, isr: list[int]) -> defer.Deferred:
        """Write a leader's ISR change to ZooKeeper on a worker thread, then have it
        announced to the controller (batched with others, see isr.py)."""
        zk = self.zookeeper()
        if zk is None or not self.running:
            return defer.fail(ConnectionError("not connected to ZooKeeper"))
        written = in_worker_thread(
            self.reactor, write_isr, zk, partition.topic, partition.index, self.broker_id,
            partition.leader_epoch, isr, partition.controller_epoch, partition.partition_epoch)

        def announce(version: int) -> int:
            self.notifier.changed(partition.topic, partition.index)
            return version

        return written.addCallback(announce)

    def _write_notification(self, partitions: list[tuple[str, int]]) -> defer.Deferred:
        zk = self.zookeeper()
        if zk is None or not self.running:
            return defer.fail(ConnectionError("not connected to ZooKeeper"))
        return in_worker_thread(self.reactor, write_isr_change_notification, zk, partitions)
