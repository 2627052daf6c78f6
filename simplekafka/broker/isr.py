"""The in-sync replica set: who may leave it, who may join it, and how a change is written.

A leader keeps the ISR honest on its own, as ZooKeeper-mode Kafka did from
0.10 to 2.6:

* a follower that has not caught up to the leader's log end for
  ``replica.lag.time.max.ms`` leaves the ISR (it holds back the high watermark,
  and so every acks=all produce);
* a follower joins when its log end offset is at least the high watermark and
  at least the offset where the leader's current epoch began (replication rule 5: before
  that it may still hold records of an older leader that this leader truncated);
* either change is written to the partition's state znode first, conditional on
  the znode version the leader knows (its partition epoch), and only used once
  ZooKeeper accepted it (replication rule 2). A refused write means the controller changed
  the partition meanwhile: the leader keeps its old ISR and waits for the
  controller's LeaderAndIsr. A notification under ``/isr_change_notification``
  tells the controller to send UpdateMetadata; one notification names every
  partition changed while the previous one was being written
  (``IsrChangeNotifier``), as Kafka's ``maybePropagateIsrChanges`` batches them.

The rules are plain functions so that tests can check them without a cluster.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from kazoo.exceptions import BadVersionError, NoNodeError
from twisted.python.failure import Failure

from simplekafka.coordination.znodes import PartitionRef, PartitionRefs, PartitionState, ZkPaths

if TYPE_CHECKING:
    from kazoo.client import KazooClient
    from twisted.internet import defer

log = logging.getLogger(__name__)


def now_ms() -> float:
    """Monotonic milliseconds: lag is measured on a clock that never jumps."""
    return time.monotonic() * 1000.0


def out_of_sync_replicas(isr: Iterable[int], leader_id: int, leader_end_offset: int,
                         follower_end_offsets: Mapping[int, int],
                         caught_up_ms: Mapping[int, float], now: float,
                         lag_max_ms: float) -> list[int]:
    """ISR followers to drop: not at the leader's LEO and not caught up for ``lag_max_ms``."""
    lagging = []
    for replica in isr:
        if replica == leader_id:
            continue
        at_end = follower_end_offsets.get(replica, -1) >= leader_end_offset
        if not at_end and now - caught_up_ms.get(replica, 0.0) > lag_max_ms:
            lagging.append(replica)
    return lagging


def high_watermark(isr: Iterable[int], leader_id: int, leader_end_offset: int,
                   follower_end_offsets: Mapping[int, int]) -> int:
    """The lowest log end offset over the ISR, leader included: what every in-sync replica has.

    A follower the leader has not heard from counts as 0, so it holds the high
    watermark back until its first fetch says where it is.
    """
    lowest = leader_end_offset
    for replica in isr:
        if replica != leader_id:
            end = follower_end_offsets.get(replica, 0)
            if end < lowest:
                lowest = end
    return lowest


def may_join_isr(follower_end_offset: int, high_watermark: int,
                 leader_epoch_start_offset: int) -> bool:
    """Replication rule 5: LEO >= HW and >= the start offset of the leader's current epoch."""
    return (follower_end_offset >= high_watermark
            and follower_end_offset >= leader_epoch_start_offset)


class IsrWriteRefused(RuntimeError):
    """The state znode changed since the leader last heard from the controller."""


def write_isr(zk: KazooClient, topic: str, partition: int, leader: int, leader_epoch: int,
              isr: list[int], controller_epoch: int, partition_epoch: int) -> int:
    """Write a leader's new ISR to ZooKeeper conditionally; returns the new znode version.

    Runs on a worker thread (kazoo blocks). Raises IsrWriteRefused when the
    znode's version is no longer ``partition_epoch`` (the controller moved on).
    """
    state = PartitionState(leader=leader, leader_epoch=leader_epoch, isr=tuple(isr),
                           controller_epoch=controller_epoch)
    path = ZkPaths.partition_state(topic, partition)
    try:
        stat = zk.set(path, state.to_json(), version=partition_epoch)
    except (BadVersionError, NoNodeError) as exc:
        raise IsrWriteRefused(f"{path} is no longer at version {partition_epoch}") from exc
    return stat.version


def write_isr_change_notification(zk: KazooClient, partitions: list[tuple[str, int]]) -> None:
    """One ``/isr_change_notification/isr_change_<seq>`` naming ``partitions`` (worker thread)."""
    notice = PartitionRefs(tuple(PartitionRef(topic, index) for topic, index in partitions))
    zk.create(ZkPaths.ISR_CHANGE_PREFIX, notice.to_json(), sequence=True, makepath=True)


class IsrChangeNotifier:
    """Tells the controller which ISRs changed, in as few notifications as the load allows.

    At most one notification is being written at a time; partitions whose ISR
    changes meanwhile go into the next one. A lone change is announced at once,
    and a restarted broker rejoining thousands of ISRs costs the leader a few
    notifications and the controller a few reads, not one each per partition
    (each took the controller two ZooKeeper round trips, one after the other).
    ``write`` runs the blocking write off the reactor and returns a Deferred.
    """

    def __init__(self, write: Callable[[list[tuple[str, int]]], defer.Deferred]) -> None:
        self._write = write
        self._pending: dict[tuple[str, int], None] = {}  # in order of change, no repeats
        self._writing = False
        self.notifications = 0  # written or attempted (for tests and logs)

    def changed(self, topic: str, partition: int) -> None:
        """Called on the reactor once the partition's new ISR is in ZooKeeper."""
        self._pending[(topic, partition)] = None
        if not self._writing:
            self._write_pending()

    def _write_pending(self) -> None:
        batch, self._pending = list(self._pending), {}
        self._writing = True
        self.notifications += 1
        written = self._write(batch)

        def failed(failure: Failure) -> None:  # the ISRs are written; the controller learns later
            log.warning("ISR change notification for %d partition(s) not written: %s",
                        len(batch), failure.getErrorMessage())

        def next_batch(_: object) -> None:
            self._writing = False
            if self._pending:
                self._write_pending()

        written.addErrback(failed).addCallback(next_batch)
