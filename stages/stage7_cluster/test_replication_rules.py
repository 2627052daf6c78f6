"""The replication rules, one by one, on real logs and with no sockets.

A Partition is built on a real storage Log in a temporary directory; the
ZooKeeper write of an ISR change is a Deferred the test fires (or fails) by
hand, so what happens *before* ZooKeeper has answered can be checked. Each test
sits under the replication rule it guards (numbered as in the "Replication
rules" section of docs/design-notes.md); each fails if its rule is dropped.
"""

from __future__ import annotations

import pytest
from twisted.internet import defer

from simplekafka.broker.apis.inter_broker import partition_errors_response
from simplekafka.broker.isr import high_watermark, may_join_isr, out_of_sync_replicas
from simplekafka.broker.partition import Partition
from simplekafka.broker.replica_fetcher import truncate_by_epoch
from simplekafka.broker.replica_manager import ReplicaManager
from simplekafka.protocol.batch_header import iter_batch_positions, read_header
from simplekafka.protocol.errors import ErrorCode, KafkaError
from simplekafka.protocol.records import Record, build_batch
from simplekafka.storage import Log, LogConfig

LEADER, F1, F2 = 1, 2, 3
REPLICAS = [LEADER, F1, F2]
BIG = 1 << 20


def batch(*values: bytes) -> bytes:
    return build_batch([Record(timestamp=1_700_000_000_000, key=None, value=v) for v in values])


def new_partition(tmp_path, broker_id: int = LEADER, name: str = "p") -> Partition:
    log = Log.open(tmp_path / f"{name}-{broker_id}", LogConfig())
    return Partition("t", 0, broker_id, log)


def leader(tmp_path, isr=REPLICAS, epoch: int = 0) -> Partition:
    partition = new_partition(tmp_path)
    assert partition.make_leader(epoch, list(isr), REPLICAS, partition_epoch=0,
                                 controller_epoch=1)
    return partition


def produce(partition: Partition, acks: int = -1, min_insync: int = 1, n: int = 1):
    return partition.append_as_leader(batch(*[b"v"] * n), acks, min_insync, BIG, 8)


def acked(waiter: defer.Deferred) -> ErrorCode | None:
    """The code an acks=all wait fired with, or None while it still waits."""
    return waiter.result if waiter.called else None


# -- replication rule 1: acks=all waits for the HW; HW = min LEO over the ISR incl. the leader -----


def test_hw_is_the_lowest_log_end_over_the_isr_and_acks_all_waits_for_it(tmp_path):
    partition = leader(tmp_path)
    result = produce(partition, n=3)  # offsets 0..2
    waiter = partition.wait_for_high_watermark(result.last_offset + 1, min_insync=2)
    assert partition.high_watermark == 0 and acked(waiter) is None
    partition.record_follower_fetch(F1, 3)
    assert partition.high_watermark == 0 and acked(waiter) is None  # F2 still at 0
    partition.record_follower_fetch(F2, 2)
    assert partition.high_watermark == 2 and acked(waiter) is None
    partition.record_follower_fetch(F2, 3)
    assert partition.high_watermark == 3
    assert acked(waiter) == ErrorCode.NONE


def test_consumers_read_only_below_the_hw_followers_to_the_log_end(tmp_path):
    partition = leader(tmp_path)
    produce(partition, n=2)
    assert partition.read(0, BIG) == b""  # nothing committed yet
    assert partition.read(0, BIG, replica_id=F1)  # a follower copies uncommitted data
    partition.record_follower_fetch(F2, 2)
    partition.record_follower_fetch(F1, 2)
    assert partition.read(0, BIG)


def test_acks_all_is_refused_before_the_append_when_the_isr_is_too_small(tmp_path):
    partition = leader(tmp_path, isr=[LEADER])
    with pytest.raises(KafkaError) as refused:
        produce(partition, acks=-1, min_insync=2)
    assert refused.value.error_code == ErrorCode.NOT_ENOUGH_REPLICAS
    assert partition.log_end_offset == 0  # nothing appended
    produce(partition, acks=1, min_insync=2)  # acks=1 does not care
    assert partition.log_end_offset == 1


def test_an_isr_that_shrank_below_min_insync_meanwhile_answers_after_append(tmp_path):
    partition = leader(tmp_path, isr=[LEADER, F1])
    result = produce(partition, min_insync=2)
    waiter = partition.wait_for_high_watermark(result.last_offset + 1, min_insync=2)
    partition.apply_isr([LEADER], partition_epoch=1)  # F1 dropped out (written to ZooKeeper)
    assert acked(waiter) == ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND


def test_the_hw_never_goes_back(tmp_path):
    partition = leader(tmp_path, isr=[LEADER, F1])
    produce(partition, n=4)
    partition.record_follower_fetch(F1, 4)
    assert partition.high_watermark == 4
    partition.apply_isr([LEADER, F1, F2], partition_epoch=1)  # F2 (LEO 0) joins
    assert partition.high_watermark == 4


# -- replication rule 2: a shrink is written to ZooKeeper before the smaller ISR moves the HW ------


class FakeIsrWriter:
    """Records ISR writes; the test fires or fails each one by hand."""

    def __init__(self) -> None:
        self.writes: list[tuple[list[int], defer.Deferred]] = []

    def __call__(self, partition: Partition, isr: list[int]) -> defer.Deferred:
        pending: defer.Deferred = defer.Deferred()
        self.writes.append((list(isr), pending))
        return pending


def lagging_leader(tmp_path, writer: FakeIsrWriter) -> tuple[ReplicaManager, Partition]:
    manager = ReplicaManager(LEADER, log_manager=_NoLogs(), metadata_cache=None,
                             isr_writer=writer)
    partition = leader(tmp_path)
    manager.partitions[("t", 0)] = partition
    produce(partition, n=5)
    partition.record_follower_fetch(F1, 5, now=0.0)
    partition.follower_caught_up_ms[F2] = 0.0  # F2 never fetched: lagging for ever
    partition.follower_caught_up_ms[F1] = 10**12  # F1 is fresh
    return manager, partition


class _NoLogs:
    def read_high_watermarks(self) -> dict:
        return {}


def test_a_shrink_is_used_only_after_zookeeper_accepted_it(tmp_path):
    writer = FakeIsrWriter()
    manager, partition = lagging_leader(tmp_path, writer)
    waiter = partition.wait_for_high_watermark(5, min_insync=2)
    manager.maybe_shrink_isrs(lag_max_ms=1000)
    assert [isr for isr, _ in writer.writes] == [[LEADER, F1]]
    # Not yet written: the ISR, the HW and the waiting produce are unchanged.
    assert partition.isr == REPLICAS and partition.high_watermark == 0
    assert acked(waiter) is None
    manager.maybe_shrink_isrs(lag_max_ms=1000)
    assert len(writer.writes) == 1  # one change in flight at a time
    writer.writes[0][1].callback(7)  # ZooKeeper: written, znode version 7
    assert partition.isr == [LEADER, F1] and partition.partition_epoch == 7
    assert partition.high_watermark == 5
    assert acked(waiter) == ErrorCode.NONE


def test_a_refused_shrink_keeps_the_old_isr_and_hw(tmp_path):
    writer = FakeIsrWriter()
    manager, partition = lagging_leader(tmp_path, writer)
    manager.maybe_shrink_isrs(lag_max_ms=1000)
    writer.writes[0][1].errback(RuntimeError("BadVersion: the controller moved on"))
    assert partition.isr == REPLICAS and partition.high_watermark == 0
    assert not partition.isr_change_pending  # it may try again later


def test_out_of_sync_means_behind_the_log_end_for_longer_than_the_lag_time():
    caught_up = {F1: 9_000.0, F2: 1_000.0}
    assert out_of_sync_replicas(REPLICAS, LEADER, 10, {F1: 5, F2: 5}, caught_up,
                                now=10_000.0, lag_max_ms=2_000) == [F2]
    # At the log end a replica is in sync, however long ago it last "caught up".
    assert out_of_sync_replicas(REPLICAS, LEADER, 10, {F1: 5, F2: 10}, caught_up,
                                now=10_000.0, lag_max_ms=2_000) == []


def test_a_follower_catches_up_when_it_asks_for_the_leaders_log_end(tmp_path):
    partition = leader(tmp_path)
    produce(partition, n=2)
    partition.record_follower_fetch(F1, 0, now=100.0)
    assert partition.follower_caught_up_ms[F1] != 100.0  # behind: not caught up now
    partition.record_follower_fetch(F1, 2, now=200.0)
    assert partition.follower_caught_up_ms[F1] == 200.0


# -- replication rule 4: leader epochs, and truncation by epoch (never to the local HW) ------------


def test_every_batch_carries_the_leader_epoch_and_a_new_leader_records_its_start(tmp_path):
    partition = leader(tmp_path, epoch=3)
    produce(partition, n=2)
    data = partition.read(0, BIG, replica_id=F1)
    assert [read_header(data, pos).partition_leader_epoch
            for pos, _ in iter_batch_positions(data)] == [3]
    partition.make_leader(4, REPLICAS, REPLICAS, 1, 1)  # re-elected at a new epoch
    entry = partition.log.leader_epochs.latest_entry
    assert (entry.epoch, entry.start_offset) == (4, 2)  # (epoch, LEO) recorded at once


def copy_to(follower: Partition, leader_: Partition) -> None:
    follower.append_as_follower(leader_.read(follower.log_end_offset, BIG, replica_id=F1),
                                leader_.high_watermark)


def test_kip101_case1_a_restarted_follower_keeps_acked_records_beyond_its_stale_hw(tmp_path):
    # A leads at epoch 0; B copies m1, m2 but only learned HW = 1 (m2 acked after).
    a = leader(tmp_path, isr=[LEADER, F1])
    b = new_partition(tmp_path, F1, "b")
    b.make_follower(LEADER, 0, [LEADER, F1], REPLICAS, 0, 1)
    produce(a)
    copy_to(b, a)
    produce(a)
    copy_to(b, a)
    assert b.log_end_offset == 2 and b.high_watermark == 1
    # B restarts and follows again: it asks A where epoch 0 ends (2) and keeps m2.
    epoch, end = a.log.leader_epochs.end_offset_for(0)
    truncate_by_epoch(b, 0, epoch, end)
    assert b.log_end_offset == 2  # truncating to the local HW (1) would have lost m2


def test_kip101_case2_a_returning_replica_drops_what_the_new_leader_overwrote(tmp_path):
    # A (epoch 0) has m1, m2; B has m1 only. B leads at epoch 1 and writes m3 at offset 1.
    a = leader(tmp_path, isr=[LEADER])
    produce(a)
    produce(a)
    b = new_partition(tmp_path, F1, "b")
    b.make_follower(LEADER, 0, [LEADER], REPLICAS, 0, 1)
    b.append_as_follower(a.read(0, BIG, replica_id=F1)[:_first_batch_size(a)], 1)
    assert b.make_leader(1, [F1], REPLICAS, 1, 1)
    b.append_as_leader(batch(b"m3"), 1, 1, BIG, 8)
    # A returns as B's follower: its epoch 0 ended at offset 1 in B's log.
    epoch, end = b.log.leader_epochs.end_offset_for(0)
    assert (epoch, end) == (0, 1)
    a.make_follower(F1, 1, [F1], REPLICAS, 2, 1)
    truncate_by_epoch(a, 0, epoch, end)
    assert a.log_end_offset == 1  # m2 gone: the logs no longer diverge
    copy_to(a, b)
    assert bytes(a.log.read(0, BIG)) == bytes(b.log.read(0, BIG))


def _first_batch_size(partition: Partition) -> int:
    data = partition.read(0, BIG, replica_id=F1)
    return iter_batch_positions(data)[0][1]


def test_a_leader_answering_an_earlier_epoch_cuts_to_our_own_end_of_that_epoch(tmp_path):
    follower = new_partition(tmp_path, F1, "f")
    # Our log: epoch 0 at 0..1, epoch 2 at 2..3 (a leader the new leader never heard of).
    follower.log.append(batch(b"a"), 0)
    follower.log.append(batch(b"b"), 0)
    follower.log.append(batch(b"c"), 2)
    follower.log.append(batch(b"d"), 2)
    # The leader knows epochs 0 and 1 only: for our epoch 2 it answers (0, end 5).
    truncate_by_epoch(follower, 2, 0, 5)
    assert follower.log_end_offset == 2  # min(5, our end of epoch 0 = 2)
    assert follower.log.leader_epochs.latest_epoch == 0


def test_fencing_of_older_and_newer_leader_epochs(tmp_path):
    partition = leader(tmp_path, epoch=5)
    partition.check_leader_epoch(5)
    with pytest.raises(KafkaError) as older:
        partition.check_leader_epoch(4)
    assert older.value.error_code == ErrorCode.FENCED_LEADER_EPOCH
    with pytest.raises(KafkaError) as newer:
        partition.check_leader_epoch(6)
    assert newer.value.error_code == ErrorCode.UNKNOWN_LEADER_EPOCH
    assert not partition.make_follower(2, 4, [2], REPLICAS, 3, 1)  # an older epoch is ignored
    assert partition.is_leader


# -- replication rule 5: a follower joins only at >= HW and >= the start of the leader's epoch -----


def test_may_join_isr_needs_both_bounds():
    assert may_join_isr(10, 10, 8)
    assert not may_join_isr(9, 10, 8)  # behind the HW
    assert not may_join_isr(10, 5, 12)  # not yet into the current leader's epoch


def test_a_follower_below_the_current_epochs_start_is_not_added(tmp_path):
    writer = FakeIsrWriter()
    manager = ReplicaManager(LEADER, log_manager=_NoLogs(), metadata_cache=None,
                             isr_writer=writer)
    partition = leader(tmp_path, isr=[LEADER, F2])
    manager.partitions[("t", 0)] = partition
    produce(partition, n=3)  # offsets 0..2 at epoch 0
    partition.record_follower_fetch(F2, 2)
    assert partition.high_watermark == 2
    partition.make_leader(1, [LEADER, F2], REPLICAS, 1, 1)  # epoch 1 starts at offset 3
    assert partition.current_epoch_start_offset() == 3
    partition.record_follower_fetch(F1, 2)
    manager.maybe_expand_isr(partition, F1)
    assert writer.writes == []  # LEO 2 >= HW 2, but epoch 1 began at 3
    partition.record_follower_fetch(F1, 3)
    manager.maybe_expand_isr(partition, F1)
    assert [isr for isr, _ in writer.writes] == [[LEADER, F1, F2]]
    assert partition.isr == [LEADER, F2]  # not used before ZooKeeper accepted it
    writer.writes[0][1].callback(2)
    assert partition.isr == [LEADER, F1, F2]


# -- brokers obey only the newest controller and the newest leader epoch --------------------


class _TmpLogs:
    def __init__(self, directory) -> None:
        self.directory = directory
        self.futures: dict = {}  # no replica is moving between log dirs

    def read_high_watermarks(self) -> dict:
        return {}

    def get_or_create(self, topic: str, index: int, config=None) -> Log:
        return Log.open(self.directory / f"{topic}-{index}", LogConfig())


def leader_and_isr(controller_epoch: int, leader_: int, leader_epoch: int,
                   zk_version: int = 0):

    state = dict(partition_index=0, controller_epoch=controller_epoch,
                            leader=leader_, leader_epoch=leader_epoch, isr=REPLICAS,
                            zk_version=zk_version, replicas=REPLICAS)
    return dict(controller_id=1, controller_epoch=controller_epoch,
                topic_states=[dict(topic_name="t", partition_states=[state])])


def test_stale_controller_and_leader_epochs_are_refused(tmp_path):
    manager = ReplicaManager(F1, log_manager=_TmpLogs(tmp_path), metadata_cache=None)
    answer = partition_errors_response(
        manager.become_leader_or_follower(leader_and_isr(5, LEADER, 3)))
    assert answer["error_code"] == ErrorCode.NONE
    partition = manager.partitions[("t", 0)]
    assert (partition.leader_id, partition.leader_epoch) == (LEADER, 3)
    # A deposed controller (epoch 4) is refused as a whole.
    answer = partition_errors_response(manager.become_leader_or_follower(leader_and_isr(4, F1, 9)))
    assert answer["error_code"] == ErrorCode.STALE_CONTROLLER_EPOCH
    assert partition.leader_id == LEADER
    # The current controller repeating an older leader epoch changes nothing either.
    answer = partition_errors_response(manager.become_leader_or_follower(leader_and_isr(5, F1, 2)))
    assert answer["partition_errors"][0]["error_code"] != ErrorCode.NONE
    assert (partition.leader_id, partition.leader_epoch) == (LEADER, 3)
    # A newer epoch is applied: this broker leads.
    manager.become_leader_or_follower(leader_and_isr(6, F1, 4, zk_version=1))
    assert partition.is_leader and partition.leader_epoch == 4


def test_the_hw_is_the_lowest_log_end_over_the_isr_as_a_pure_function():
    assert high_watermark(REPLICAS, LEADER, 10, {F1: 7, F2: 9}) == 7
    assert high_watermark([LEADER, F2], LEADER, 10, {F1: 2, F2: 9}) == 9  # F1 left the ISR
    assert high_watermark([LEADER, F1], LEADER, 10, {}) == 0  # not heard from F1 yet
    assert high_watermark([LEADER], LEADER, 10, {F1: 2}) == 10
