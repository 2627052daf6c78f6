"""Moving a replica to another of the broker's log directories (AlterReplicaLogDirs).

Kafka's ``ReplicaAlterLogDirsThread`` in miniature: a replica being moved has a
*future* log in the target directory (``LogManager.create_future``) that copies
the current log's batches, a chunk per step on the reactor, between the
partition's appends, exactly as a follower copies its leader (offsets and leader
epochs kept, ``append_as_follower``). Produce and fetch keep using the current
log all along. When the future log's end reaches the current one's, the two are
swapped in that same step (``LogManager.replace_current_with_future``), so no
append can fall between the last copy and the swap: nothing is lost or doubled.

What the current log does meanwhile is followed as a follower follows its
leader: a truncation (this broker a follower whose leader changed) is seen by
the log's ``generation`` and undone in the future log by leader epoch (the
future keeps what it shares with the current log); a log start moved up by
retention or DeleteRecords moves the future's too. A swap waits while the log
cleaner's thread is working on the current log.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

from simplekafka.storage.errors import StorageError, UnexpectedAppendOffsetError

if TYPE_CHECKING:
    from simplekafka.broker.collaborators import DelayedCall, Reactor
    from simplekafka.broker.partition import Partition
    from simplekafka.storage import Log, LogManager

log = logging.getLogger(__name__)

CHUNK_BYTES = 1 << 20  # copied per replica per step
IDLE_S = 0.05  # between steps once every moving replica has caught up with its appends


class LogDirMover:
    """Copies future logs up to their current logs and swaps them in (see the module)."""

    def __init__(self, log_manager: LogManager, partitions: Mapping[tuple[str, int], Partition],
                 reactor: Reactor, chunk_bytes: int = CHUNK_BYTES):
        self.log_manager = log_manager
        self.partitions = partitions
        self.reactor = reactor
        self.chunk_bytes = chunk_bytes
        self.moves_done = 0
        self._generations: dict[tuple[str, int], int] = {}
        self._call: DelayedCall | None = None
        self._stopped = False

    def moving(self) -> list[tuple[str, int]]:
        """The replicas with a future log (being moved, or waiting for their partition)."""
        return sorted(self.log_manager.futures)

    def wake(self) -> None:
        """Run a step soon (a future log was made, or a partition came up)."""
        if self._stopped or not self.log_manager.futures:
            return
        if self._call is not None and self._call.active():
            if self._call.getTime() <= self.reactor.seconds():
                return
            self._call.cancel()
        self._call = self.reactor.callLater(0, self.step)

    def stop(self) -> None:
        self._stopped = True
        if self._call is not None and self._call.active():
            self._call.cancel()
        self._call = None

    def step(self) -> None:
        """One round: a chunk per moving replica, swaps for those caught up (the reactor
        calls it until nothing is moving; a test may call it itself)."""
        self._call = None
        more = False
        for key in self.moving():
            partition = self.partitions.get(key)
            if partition is None:
                continue  # a future log found at start-up: its partition is not up yet
            try:
                more |= self._advance(key, partition)
            except (StorageError, OSError) as exc:
                log.error("%s-%d: moving between log directories failed, move dropped: %s",
                          *key, exc)
                self.log_manager.remove_future(*key)
                self._generations.pop(key, None)
        if not self._stopped and self.log_manager.futures:
            self._call = self.reactor.callLater(0 if more else IDLE_S, self.step)

    def _advance(self, key: tuple[str, int], partition: Partition) -> bool:
        """One chunk copied (True: more is waiting), or the swap if caught up."""
        future = self.log_manager.futures[key]
        current = partition.log
        if self._generations.get(key) != current.generation:
            _reconcile(future, current)
            self._generations[key] = current.generation
        if future.log_end_offset > current.log_end_offset:
            _reconcile(future, current)
        if current.log_start_offset > future.log_end_offset:
            future.truncate_fully_and_start_at(current.log_start_offset)
        elif current.log_start_offset > future.log_start_offset:
            future.delete_records_before(current.log_start_offset)
        if future.log_end_offset < current.log_end_offset:
            data = current.read(future.log_end_offset, self.chunk_bytes)
            try:
                future.append_as_follower(data)
            except UnexpectedAppendOffsetError:  # batch bounds no longer meet: copy afresh
                future.truncate_fully_and_start_at(current.log_start_offset)
                return True
            if future.log_end_offset < current.log_end_offset:
                return True
        cleaning = self.log_manager.cleaner_manager.in_progress
        if cleaning is not None and cleaning.topic_partition == key and not cleaning.aborted:
            return False  # the cleaner's thread reads these files: swap after its round
        self._swap(key, partition, future, current)
        return False

    def _swap(self, key: tuple[str, int], partition: Partition, future: Log,
              current: Log) -> None:
        last = future.leader_epochs.latest_epoch
        for entry in current.leader_epochs.entries:  # a leader's epoch with no record yet
            if entry.epoch > last:
                future.leader_epochs.assign(entry.epoch, entry.start_offset)
        moved = self.log_manager.replace_current_with_future(*key)
        partition.log = moved
        partition.maybe_snapshot_producers(force=True)
        self._generations.pop(key, None)
        self.moves_done += 1
        log.info("%s-%d: moved to log directory %s", *key, moved.directory.parent)


def _reconcile(future: Log, current: Log) -> None:
    """Cut the future log back to what it shares with the current one (by leader epoch, as a
    follower with its leader); without epochs to compare, it starts over."""
    latest = future.leader_epochs.latest_entry
    if latest is None:
        if future.log_end_offset > future.log_start_offset:
            future.truncate_fully_and_start_at(current.log_start_offset)
        return
    epoch, end = current.leader_epochs.end_offset_for(latest.epoch)
    if epoch < 0:
        future.truncate_fully_and_start_at(current.log_start_offset)
        return
    future.truncate_to(min(end, future.log_end_offset, current.log_end_offset))
