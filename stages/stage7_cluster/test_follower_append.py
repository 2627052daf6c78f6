"""A follower's append of a fetched answer does its per-batch work once per batch.

Under an acks=all load a follower's fetch answer holds one small batch per produce
request that arrived while the fetch was out (15-20 at 10,000 records/s), so the
follower's CPU per fetch cycle is mostly per-batch work. These tests count that work
(header reads, segment fit checks, epoch cache updates), not wall time.
"""

from __future__ import annotations

import struct

from simplekafka.broker.partition import Partition
from simplekafka.protocol import batch_header
from simplekafka.protocol.records import Record, build_batch
from simplekafka.storage import Log, LogConfig
from simplekafka.storage.epochs import LeaderEpochCache
from simplekafka.storage.segment import LogSegment

LEADER, FOLLOWER = 1, 2


def fetched(base: int, count: int, epoch: int = 0, value: bytes = b"v" * 100) -> bytes:
    """``count`` one-record batches from ``base``, as a leader's fetch answer holds them."""
    return b"".join(build_batch([Record(timestamp=1_700_000_000_000, value=value)],
                                base_offset=base + i, partition_leader_epoch=epoch)
                    for i in range(count))


def follower(tmp_path, config: LogConfig | None = None) -> Partition:
    partition = Partition("t", 0, FOLLOWER, Log.open(tmp_path / "t-0", config or LogConfig()))
    partition.make_follower(LEADER, 0, [LEADER, FOLLOWER], [LEADER, FOLLOWER], 0, 1)
    return partition


class CountingStruct:
    """Stands in for the batch header's struct and counts how often a header is unpacked."""

    def __init__(self, real: struct.Struct):
        self.real = real
        self.size = real.size
        self.unpacks = 0

    def unpack_from(self, buffer, offset=0):
        self.unpacks += 1
        return self.real.unpack_from(buffer, offset)


def test_each_fetched_batch_header_is_read_once(tmp_path, monkeypatch):
    partition = follower(tmp_path)
    partition.append_as_follower(fetched(0, 1), 1)  # the segment is no longer empty
    counting = CountingStruct(batch_header._HEADER)
    monkeypatch.setattr(batch_header, "_HEADER", counting)
    partition.append_as_follower(fetched(1, 17), 18)
    assert counting.unpacks == 17  # validated (with its CRC) once, used by log and partition
    assert partition.log_end_offset == 18 and partition.high_watermark == 18


def test_a_fetched_answer_that_fits_the_segment_is_checked_once(tmp_path, monkeypatch):
    partition = follower(tmp_path)
    partition.append_as_follower(fetched(0, 1), 1)
    checks = []
    real = LogSegment.can_hold
    monkeypatch.setattr(LogSegment, "can_hold",
                        lambda self, *args, **kw: checks.append(args) or real(self, *args, **kw))
    partition.append_as_follower(fetched(1, 17), 18)
    assert len(checks) == 1
    assert len(partition.log.segments) == 1


def test_batches_that_do_not_all_fit_still_roll_where_the_segment_is_full(tmp_path):
    one = len(fetched(0, 1))
    partition = follower(tmp_path, LogConfig(segment_bytes=3 * one))
    partition.append_as_follower(fetched(0, 1), 1)  # not empty: the group check applies
    partition.append_as_follower(fetched(1, 4), 5)  # 5 batches, 3 per segment
    assert [segment.base_offset for segment in partition.log.segments] == [0, 3]
    assert partition.log.read(0, 1 << 20) == fetched(0, 5)
    # An empty segment takes its first batch whatever its size, one by one.
    big = follower(tmp_path / "big", LogConfig(segment_bytes=one + 1))
    big.append_as_follower(fetched(0, 3), 3)
    assert [segment.base_offset for segment in big.log.segments] == [0, 1, 2]


def test_the_epoch_cache_is_updated_where_the_epoch_changes_only(tmp_path, monkeypatch):
    partition = follower(tmp_path)
    calls = []
    real = LeaderEpochCache.assign
    monkeypatch.setattr(LeaderEpochCache, "assign",
                        lambda self, epoch, start: calls.append((epoch, start))
                        or real(self, epoch, start))
    partition.append_as_follower(fetched(0, 5, epoch=0) + fetched(5, 5, epoch=1), 10)
    assert calls == [(0, 0), (1, 5)]
    assert partition.log.leader_epochs.end_offset_for(0) == (0, 5)
    partition.append_as_follower(fetched(10, 3, epoch=1), 13)
    assert calls[2:] == [(1, 10)]  # once per answer: a no-op for the cache, as before
