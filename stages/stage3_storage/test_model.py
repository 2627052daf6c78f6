"""A stateful property test: the log against a model that is just a list of batches.

Hypothesis drives any sequence of appends, reads, rolls, truncations, retention
passes, DeleteRecords, clean reopenings, crashes and torn writes; after every
step the log's offsets must match the model, and every read must return exactly
the bytes the model predicts.
"""

from __future__ import annotations

import shutil
import struct
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from simplekafka.storage import Log, LogConfig, OffsetOutOfRangeError
from stages.stage3_storage.batches import make_batch

T0 = 1_700_000_000_000
CONFIG = LogConfig(
    segment_bytes=900,
    index_interval_bytes=90,
    max_index_size=4096,
    retention_ms=5_000,
    retention_bytes=2_000,
    segment_ms=10**12,
)


@dataclass
class ModelBatch:
    base: int
    last: int
    data: bytes
    max_timestamp: int

    @property
    def size(self) -> int:
        return len(self.data)


@dataclass
class ModelSegment:
    base: int
    batches: list[ModelBatch] = field(default_factory=list)

    @property
    def size(self) -> int:
        return sum(batch.size for batch in self.batches)

    @property
    def next_offset(self) -> int:
        return self.batches[-1].last + 1 if self.batches else self.base


def stored_bytes(batch: bytes, base: int, epoch: int) -> bytes:
    """What the log must store: the producer's batch with base offset and epoch filled in."""
    data = bytearray(batch)
    struct.pack_into(">q", data, 0, base)
    struct.pack_into(">i", data, 12, epoch)
    return bytes(data)


class LogMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="sk-model-"))
        self.directory = self.root / "model-0"
        self.log = Log.open(self.directory, CONFIG)
        self.segments = [ModelSegment(0)]
        self.log_start = 0
        self.epoch = 0

    def teardown(self) -> None:
        self.log.abandon()
        shutil.rmtree(self.root, ignore_errors=True)

    # -- model helpers -------------------------------------------------------------
    @property
    def end(self) -> int:
        return self.segments[-1].next_offset

    def batches(self) -> list[ModelBatch]:
        return [batch for segment in self.segments for batch in segment.batches]

    def model_roll(self) -> None:
        if self.segments[-1].batches:
            self.segments.append(ModelSegment(self.end))

    def delete_oldest(self, count: int) -> None:
        if count:
            del self.segments[:count]
            self.log_start = max(self.log_start, self.segments[0].base)

    def truncate_fully(self, offset: int) -> None:
        self.segments = [ModelSegment(offset)]
        self.log_start = offset

    # -- rules ---------------------------------------------------------------------
    @rule(
        records=st.integers(1, 5),
        value_size=st.integers(0, 120),
        timestamp=st.integers(0, 20_000),
    )
    def append(self, records: int, value_size: int, timestamp: int) -> None:
        batch = make_batch([b"v" * value_size] * records, timestamp=T0 + timestamp)
        info = self.log.append(batch, self.epoch)
        active = self.segments[-1]
        if active.batches and active.size + len(batch) > CONFIG.segment_bytes:
            self.model_roll()
        base = self.end
        assert info.base_offset == base
        assert info.last_offset == base + records - 1
        self.segments[-1].batches.append(
            ModelBatch(base, base + records - 1, stored_bytes(batch, base, self.epoch),
                       T0 + timestamp + records - 1)
        )

    @rule(
        sizes=st.lists(st.integers(0, 300), min_size=2, max_size=4),
        timestamp=st.integers(0, 20_000),
        as_follower=st.booleans(),
    )
    def append_several(self, sizes: list[int], timestamp: int, as_follower: bool) -> None:
        """Several batches in one call: as a leader (offsets assigned) or a follower (kept)."""
        batches = [make_batch([b"w" * size], timestamp=T0 + timestamp) for size in sizes]
        base = self.end
        stored = []
        for batch in batches:
            stored.append(ModelBatch(base, base, stored_bytes(batch, base, self.epoch),
                                     T0 + timestamp))
            base += 1
        if as_follower:
            info = self.log.append_as_follower(b"".join(batch.data for batch in stored))
        else:
            info = self.log.append(b"".join(batches), self.epoch)
        assert (info.base_offset, info.last_offset) == (stored[0].base, stored[-1].last)
        for batch in stored:
            active = self.segments[-1]
            if active.batches and active.size + batch.size > CONFIG.segment_bytes:
                self.model_roll()
            self.segments[-1].batches.append(batch)

    @rule()
    def new_leader_epoch(self) -> None:
        self.epoch += 1

    @rule(data=st.data(), max_bytes=st.integers(1, 2_500), bounded=st.booleans())
    def read(self, data: st.DataObject, max_bytes: int, bounded: bool) -> None:
        offset = data.draw(st.integers(max(self.log_start - 2, 0), self.end + 2), label="offset")
        max_offset = (
            data.draw(st.integers(self.log_start, self.end + 1), label="max_offset")
            if bounded else None
        )
        if offset < self.log_start or offset > self.end:
            try:
                self.log.read(offset, max_bytes, max_offset)
            except OffsetOutOfRangeError:
                return
            raise AssertionError(f"read at {offset} outside [{self.log_start}, {self.end}] worked")
        assert self.log.read(offset, max_bytes, max_offset) == self.expected_read(
            offset, max_bytes, max_offset)

    def expected_read(self, offset: int, max_bytes: int, max_offset: int | None) -> bytes:
        limit = self.end if max_offset is None else min(max_offset, self.end)
        out: list[bytes] = []
        used = 0
        for batch in self.batches():
            if batch.last < offset:
                continue
            if batch.last >= limit:
                break
            if out and used + batch.size > max_bytes:
                break
            out.append(batch.data)
            used += batch.size
        return b"".join(out)

    @rule()
    def roll(self) -> None:
        self.log.roll()
        self.model_roll()

    @rule(data=st.data())
    def truncate(self, data: st.DataObject) -> None:
        target = data.draw(st.integers(0, self.end + 1), label="truncate_to")
        self.log.truncate_to(target)
        if target >= self.end:
            return
        if target <= self.log_start:
            self.truncate_fully(target)
            return
        keep = max(i for i, segment in enumerate(self.segments) if segment.base <= target)
        del self.segments[keep + 1 :]
        last = self.segments[-1]
        last.batches = [batch for batch in last.batches if batch.last < target]
        if self.end < self.log_start:
            self.truncate_fully(self.log_start)

    @rule(now=st.integers(0, 30_000))
    def retention(self, now: int) -> None:
        self.log.enforce_retention(now_ms=T0 + now)
        closed = self.segments[:-1]
        by_time = 0
        for segment in closed:
            if T0 + now - max(b.max_timestamp for b in segment.batches) <= CONFIG.retention_ms:
                break
            by_time += 1
        by_size = 0
        excess = sum(segment.size for segment in self.segments) - CONFIG.retention_bytes
        for segment in closed:
            if excess - segment.size < 0:
                break
            excess -= segment.size
            by_size += 1
        self.delete_oldest(max(by_time, by_size))

    @rule(data=st.data())
    def delete_records(self, data: st.DataObject) -> None:
        target = data.draw(st.integers(self.log_start, self.end), label="delete_before")
        self.log.delete_records_before(target)
        if target > self.log_start:
            self.log_start = target
            count = 0
            for segment in self.segments[:-1]:
                if segment.next_offset > target:
                    break
                count += 1
            self.delete_oldest(count)

    @rule()
    def reopen_cleanly(self) -> None:
        self.log.close()
        self.log = Log.open(self.directory, CONFIG, clean_shutdown=True,
                            log_start_offset=self.log_start)

    @rule()
    def crash(self) -> None:
        self.log.abandon()
        self.log = Log.open(self.directory, CONFIG, log_start_offset=self.log_start)

    @precondition(lambda self: bool(self.segments[-1].batches))
    @rule(data=st.data())
    def crash_with_torn_write(self, data: st.DataObject) -> None:
        """The last write only partly reached the disk: recovery must drop that batch only."""
        last = self.segments[-1].batches[-1]
        kept = data.draw(st.integers(0, last.size - 1), label="bytes_of_last_batch_kept")
        self.log.abandon()
        log_file = self.directory / f"{self.segments[-1].base:020d}.log"
        with open(log_file, "r+b") as handle:
            handle.truncate(self.segments[-1].size - last.size + kept)
        self.segments[-1].batches.pop()
        self.log = Log.open(self.directory, CONFIG, log_start_offset=self.log_start)
        if self.end < self.log_start:
            # The torn batch held the log start: the log restarts empty at the log start.
            self.truncate_fully(self.log_start)

    # -- invariants ------------------------------------------------------------------
    @invariant()
    def offsets_match(self) -> None:
        assert self.log.log_start_offset == self.log_start
        assert self.log.log_end_offset == self.end

    @invariant()
    def segments_match(self) -> None:
        assert [s.base_offset for s in self.log.segments] == [s.base for s in self.segments]
        assert [s.size for s in self.log.segments] == [s.size for s in self.segments]


LogMachine.TestCase.settings = settings(
    max_examples=120, stateful_step_count=30, deadline=None
)
TestLogAgainstModel = LogMachine.TestCase
