"""What a broker pays per replica at thousands of partitions, counted rather than timed.

Issue 19's scale aims (10,000 replicas per broker: memory at most 300 MB, idle
fetchers at most 5 % of a core) are met in ``benchmarks/``; these tests pin the
mechanisms that got there, in one process, with counts that hold on a busy
machine: bytes per replica (tracemalloc), work per periodic task.
"""

from __future__ import annotations

import gc
import tracemalloc

from simplekafka.broker.metadata_cache import MetadataCache
from simplekafka.broker.partition import Partition
from simplekafka.broker.replica_manager import ReplicaManager
from simplekafka.storage import LogManager

ME = 1


def replicas(tmp_path, count: int, topic: str = "t",
             manager: ReplicaManager | None = None) -> ReplicaManager:
    """A ReplicaManager hosting ``count`` replicas of RF 3, a third led here."""
    manager = manager or ReplicaManager(ME, LogManager([tmp_path]), MetadataCache())
    states = [dict(topic_name=topic, partition_index=i, leader=i % 3 + 1,
                              leader_epoch=0, isr=[1, 2, 3], replicas=[1, 2, 3], zk_version=0,
                              controller_epoch=1)
              for i in range(count)]
    manager.become_leader_or_follower(dict(
        controller_epoch=1, controller_id=1, topic_states=[],
        ungrouped_partition_states=states))
    return manager


def test_the_periodic_producer_snapshot_looks_only_at_partitions_with_producers(
        tmp_path, monkeypatch):
    """Every replica.high.watermark.checkpoint.interval.ms (5 s) the broker snapshots the
    producer state of partitions with open transactions: at 10,000 partitions asking
    each one was most of an idle broker's checkpoint."""
    manager = replicas(tmp_path, 30)
    asked: list[Partition] = []
    real = Partition.maybe_snapshot_producers
    monkeypatch.setattr(Partition, "maybe_snapshot_producers",
                        lambda self, force=False: (asked.append(self), real(self, force))[1])
    assert manager.snapshot_producers() == 0
    assert asked == []
    manager.shutdown()


def bytes_per_replica(tmp_path, count: int = 300) -> tuple[float, dict[str, float]]:
    """Bytes held per replica made by LeaderAndIsr (tracemalloc), in all and by file."""
    manager = replicas(tmp_path, 10, topic="warm")  # first-use caches are not per replica
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        replicas(tmp_path, count, manager=manager)
        gc.collect()
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    by_file: dict[str, float] = {}
    for stat in after.compare_to(before, "filename"):
        name = stat.traceback[0].filename.rsplit("simplekafka/", 1)[-1]
        by_file[name] = by_file.get(name, 0) + stat.size_diff / count
    manager.shutdown()
    return sum(by_file.values()), by_file


def test_a_replica_costs_a_few_kilobytes(tmp_path):
    """10,000 replicas per broker must fit in 300 MB with the broker's ~70 MB base: the
    Partition, its log, segment, indexes, epoch cache and producer state came to 6.1 KB
    of Python objects per replica, 5.3 KB after that work, 5.8 KB since each partition
    holds its zero-copy threshold, its ISR hook and its ReplicaManager's queues
    (about 10 KB of RSS in a real broker)."""
    total, by_file = bytes_per_replica(tmp_path)
    assert total < 6_000, sorted(by_file.items(), key=lambda item: -item[1])[:8]
    # A partition that never saw an acks=all produce holds no waiter queue (760 B each).
    assert by_file.get("broker/delayed_produce.py", 0) < 50


def test_an_unchanged_checkpoint_is_not_written_again(tmp_path, monkeypatch):
    """Every 5 s the broker checkpoints high watermarks, recovery points and log starts:
    at 10,000 partitions three files of 10,000 lines with two fsyncs each, most of an
    idle broker's CPU. A file whose entries did not change is left as it is."""
    from simplekafka.storage import manager as log_manager_module

    manager = LogManager([tmp_path])
    for index in range(3):
        manager.get_or_create("t", index)
    written: list[str] = []
    real = log_manager_module.write_offset_checkpoint
    monkeypatch.setattr(log_manager_module, "write_offset_checkpoint",
                        lambda path, entries: (written.append(path.name), real(path, entries)))
    marks = {("t", index): 0 for index in range(3)}
    manager.checkpoint_high_watermarks(marks)
    assert len(written) == 3  # high watermarks, recovery points, log starts
    written.clear()
    import pathlib

    parents = []
    real_parent = pathlib.PurePath.parent
    monkeypatch.setattr(pathlib.PurePath, "parent",
                        property(lambda path: (parents.append(path), real_parent.fget(path))[1]))
    for _ in range(3):
        manager.checkpoint_high_watermarks(dict(marks))
    assert written == []
    assert parents == []  # with one log dir, no Path is made per log (100 ms at 10,000)
    monkeypatch.undo()
    monkeypatch.setattr(log_manager_module, "write_offset_checkpoint",
                        lambda path, entries: (written.append(path.name), real(path, entries)))
    manager.checkpoint_high_watermarks({**marks, ("t", 1): 5})
    assert written == ["replication-offset-checkpoint"]
    assert manager.read_high_watermarks()[("t", 1)] == 5
    manager.close()
