"""The checker: lost, duplicated and reordered records per partition (no sockets)."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simplekafka.cluster.checker import (
    DeliveryLog,
    StoredRecord,
    check,
    compare_replicas,
    delivered,
    locate,
    read_partition_dir,
)
from simplekafka.protocol.records import Record, build_batch


def acks_and_reads(values_by_partition: dict[int, list[str]]):
    acks, reads = [], []
    for partition, values in values_by_partition.items():
        for offset, value in enumerate(values):
            acks.append(delivered("t", partition, offset, None, value))
            reads.append(delivered("t", partition, offset, None, value))
    return acks, reads


def test_everything_consumed_is_ok():
    acks, reads = acks_and_reads({0: ["a", "b"], 1: ["c"]})
    report = check(acks, reads)
    assert report.ok
    assert report.acknowledged == 3
    assert report.lost == report.duplicated == report.reordered == []
    assert "t-0: 2 acknowledged, 2 consumed, 0 lost" in report.summary()


def test_a_missing_ack_is_lost_in_its_partition():
    acks, reads = acks_and_reads({0: ["a", "b", "c"], 1: ["d"]})
    reads = [r for r in reads if r.value != b"b"]
    report = check(acks, reads)
    assert not report.ok
    assert [(r.partition, r.offset, r.value) for r in report.lost] == [(0, 1, b"b")]
    assert report.partitions[("t", 0)].lost and report.partitions[("t", 1)].ok
    assert "lost: t-0 offset 1" in report.summary()


def test_unacknowledged_records_may_be_consumed():
    acks, reads = acks_and_reads({0: ["a"]})
    reads.append(delivered("t", 0, 1, None, "not acked"))
    assert check(acks, reads).ok


def test_reading_an_offset_twice_is_not_a_duplicate_but_storing_twice_is():
    acks, reads = acks_and_reads({0: ["a", "b"]})
    report = check(acks, reads + reads)
    assert report.ok and report.duplicated == []
    retried = [*reads, delivered("t", 0, 2, None, "b")]
    report = check(acks, retried)
    assert report.ok  # duplicates are allowed without idempotence, but counted
    assert [(r.offset, r.value) for r in report.duplicated] == [(2, b"b")]


def test_a_retry_acknowledged_at_its_second_copy_is_not_reordered():
    # The first write was stored but its answer was lost; the retry was acknowledged.
    acks = [delivered("t", 0, 0, None, "a"), delivered("t", 0, 2, None, "b")]
    reads = [delivered("t", 0, 0, None, "a"), delivered("t", 0, 1, None, "b"),
             delivered("t", 0, 2, None, "b")]
    report = check(acks, reads)
    assert report.ok and report.reordered == []
    assert [(r.offset, r.value) for r in report.duplicated] == [(2, b"b")]


def test_a_record_read_at_another_offset_is_reordered():
    acks = [delivered("t", 0, 0, None, "a"), delivered("t", 0, 1, None, "b")]
    reads = [delivered("t", 0, 0, None, "b"), delivered("t", 0, 1, None, "a")]
    report = check(acks, reads)
    assert not report.ok
    assert {r.value for r in report.reordered} == {b"a", b"b"}


def test_same_value_in_two_partitions_is_two_records():
    acks = [delivered("t", 0, 0, "k", "v"), delivered("t", 1, 0, "k", "v")]
    report = check(acks, acks[:1])
    assert [r.partition for r in report.lost] == [1]


def test_bad_input_is_a_clear_error():
    with pytest.raises(ValueError, match="offset"):
        delivered("t", 0, -1, None, "v")
    with pytest.raises(TypeError, match="bytes, str or None"):
        delivered("t", 0, 0, None, 42)


def test_delivery_log_records_from_many_threads_and_confluent_callbacks():
    log = DeliveryLog()

    class Message:
        def __init__(self, offset):
            self._offset = offset

        def topic(self):
            return "t"

        def partition(self):
            return 0

        def offset(self):
            return self._offset

        def key(self):
            return None

        def value(self):
            return f"v{self._offset}".encode()

    def produce(start):
        for offset in range(start, start + 100):
            log.confluent_callback(None, Message(offset))
            log.consumed("t", 0, offset, None, f"v{offset}")

    threads = [threading.Thread(target=produce, args=(i * 100,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    log.confluent_callback(RuntimeError("timed out"), None)
    report = log.check()
    assert report.ok and report.acknowledged == 400 and log.failed_sends == 1


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=1, max_size=40), st.data())
def test_exactly_the_dropped_acks_are_lost(partitions, data):
    acks = []
    next_offset = {}
    for i, partition in enumerate(partitions):
        offset = next_offset.get(partition, 0)
        next_offset[partition] = offset + 1
        acks.append(delivered("t", partition, offset, None, f"v{i}"))
    dropped = set(data.draw(st.sets(st.sampled_from(range(len(acks))))))
    reads = [a for i, a in enumerate(acks) if i not in dropped]
    report = check(acks, reads)
    assert sorted(report.lost, key=lambda r: r.value) == sorted(
        (acks[i] for i in dropped), key=lambda r: r.value)
    assert report.reordered == [] and report.duplicated == []


def test_replicas_agree_when_a_follower_is_only_behind():
    leader = [StoredRecord(o, 0, None, b"v%d" % o) for o in range(5)]
    assert compare_replicas({1: leader, 2: leader[:3], 3: leader}).agree


def test_a_different_record_at_the_same_offset_is_divergence():
    a = [StoredRecord(0, 0, None, b"m1"), StoredRecord(1, 0, None, b"m2")]
    b = [StoredRecord(0, 0, None, b"m1"), StoredRecord(1, 1, None, b"m3")]
    comparison = compare_replicas({1: a, 2: b})
    assert not comparison.agree and comparison.first_divergence == 1
    assert "broker 1: epoch 0 value b'm2'" in comparison.detail


def test_read_partition_dir_reads_segments(tmp_path):
    batch = bytearray(build_batch([Record(value=b"x"), Record(value=b"y")], base_offset=7))
    (tmp_path / f"{7:020d}.log").write_bytes(bytes(batch) + bytes(batch[:20]))  # torn tail
    records = read_partition_dir(tmp_path)
    assert [(r.offset, r.value) for r in records] == [(7, b"x"), (8, b"y")]


def test_locate_tells_a_consumer_miss_from_a_loss():
    on_disk = delivered("t", 0, 0, None, "missed by the consumer")
    gone = delivered("t", 0, 1, None, "lost by the cluster")
    logs = {1: [StoredRecord(0, 0, None, b"missed by the consumer")],
            2: [StoredRecord(0, 0, None, b"missed by the consumer")]}
    assert locate([on_disk, gone], logs) == {on_disk: [(1, 0), (2, 0)], gone: []}


def test_acked_ends_say_how_far_a_reader_must_get():
    log = DeliveryLog()
    log.acknowledged("t", 0, 4, None, "a")
    log.acknowledged("t", 0, 2, None, "b")
    log.acknowledged("t", 1, 0, None, "c")
    assert log.acked_ends() == {("t", 0): 5, ("t", 1): 1}
