"""A partition's log: an ordered list of segments, appended at the end, read anywhere.

``Log.open`` loads (and if needed recovers) a partition directory; ``append``
gives a producer's batch its offsets by patching the header and writes it;
``read`` returns whole batches from the one holding an offset. Rolling,
retention, truncation, flushing and the leader epoch cache live here too, so
that the broker only has to call one object per partition.

Not thread-safe: the broker calls it from its one reactor thread.
"""

from __future__ import annotations

import bisect
import logging
import os
import re
import shutil
import struct
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, overload

from simplekafka.protocol.batch_header import (
    ATTR_TIMESTAMP_TYPE,
    HEADER_SIZE,
    LOG_OVERHEAD,
    BatchHeader,
    log_append_time_header,
    validate_batch,
    validated_spans,
    whole_batches_length,
)
from simplekafka.protocol.errors import ProtocolError
from simplekafka.protocol.records import parse_batch
from simplekafka.protocol.topic_ids import topic_id_text
from simplekafka.storage.checkpoints import (
    PARTITION_METADATA,
    fsync_directory,
    read_partition_metadata,
    write_partition_metadata,
)
from simplekafka.storage.config import LogConfig
from simplekafka.storage.epochs import CHECKPOINT_NAME, LeaderEpochCache
from simplekafka.storage.errors import (
    InconsistentTopicIdError,
    OffsetOutOfRangeError,
    RecordTooLargeError,
    StorageError,
    UnexpectedAppendOffsetError,
)
from simplekafka.storage.producer_snapshot import snapshot_offsets_in
from simplekafka.storage.region import FileRegion
from simplekafka.storage.segment import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    Buffer,
    LogSegment,
)
from simplekafka.storage.txn_index import TXN_INDEX_SUFFIX, AbortedTxn

if TYPE_CHECKING:  # the cleaner imports this module
    from simplekafka.storage.cleaner import CleanedGroup

logger = logging.getLogger(__name__)

EARLIEST_TIMESTAMP = -2  # ListOffsets' "earliest"
LATEST_TIMESTAMP = -1  # ListOffsets' "latest"
MAX_TIMESTAMP = -3  # ListOffsets' "the record with the largest timestamp" (KIP-734)
_SEGMENT_NAME = re.compile(r"^(\d{20})\.log$")
CLEANED_SUFFIX = ".cleaned"  # files the log cleaner is still writing (cleaner.py)
SWAP_SUFFIX = ".swap"  # a cleaned group that replaces its old segments (see replace_segments)
GROUP_SUFFIX = ".group"  # <base>.group.swap: the base offsets of the segments it replaces
_PARTITION_DIR = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)$")
_MAX_IOVECS = 1000  # stay under IOV_MAX (1024) in one pwritev
_OFFSET_LENGTH_EPOCH = struct.Struct(">qii")  # bytes 0-15 of a batch: what the leader rewrites


def wall_clock_ms() -> int:
    return int(time.time() * 1000)


def parse_partition_dir(name: str) -> tuple[str, int] | None:
    """``"orders-3"`` -> ``("orders", 3)``; None for a name that is not ``<topic>-<partition>``."""
    match = _PARTITION_DIR.match(name)
    return (match["topic"], int(match["partition"])) if match else None


class AppendInfo(NamedTuple):
    """What an append did: the offsets it assigned and what the broker's answer needs."""

    base_offset: int
    last_offset: int
    max_timestamp: int
    record_count: int
    batch_count: int
    size: int
    log_append_time: int = -1  # the stamped time under LogAppendTime, else -1 (as Kafka)


class TimestampOffset(NamedTuple):
    """The answer to "first offset with a timestamp >= t" (ListOffsets)."""

    timestamp: int
    offset: int


class Log:
    """One partition on disk. Build it with :meth:`Log.open`."""

    def __init__(self, directory: Path, config: LogConfig, segments: list[LogSegment],
                 log_start_offset: int, clock_ms: Callable[[], int]):
        self.directory = directory
        self._segments = segments
        self.update_config(config)
        self._bases = [segment.base_offset for segment in segments]
        self._log_start_offset = log_start_offset
        self._clock_ms = clock_ms
        self._closed = False
        self.generation = 0  # bumped by truncations: a cleaning planned before is void
        self.lowest_truncation: int | None = None  # the cleaner's clean part ends below it
        self.recovery_point = self.log_end_offset
        self._unflushed_records = 0
        self._last_flush_ms = clock_ms()
        self.fsync_count = 0
        # A new log's directory entries are made durable by its first flush, not at
        # creation (an fsync of the parent per replica made LeaderAndIsr slow).
        self.directory_sync_needed = False
        # Runs a rolled segment's fsyncs off the caller's thread (the broker: a worker
        # thread); None: at once, in the append that rolls.
        self.background: Callable[[Callable[[], None]], None] | None = None
        self.truncated_on_recovery = 0  # bytes recovery cut off when this log was opened
        # The producer snapshots found when the directory was listed at open, handed once
        # to whoever rebuilds the producer state (``take_snapshot_listing``): a restart of
        # thousands of replicas then lists each directory once, not twice.
        self._snapshot_listing: list[int] | None = None
        self.leader_epochs = LeaderEpochCache(
            directory / CHECKPOINT_NAME, lambda: self.log_end_offset
        )
        self.leader_epochs.truncate_from_end(self.log_end_offset)
        self.leader_epochs.truncate_from_start(self._log_start_offset)
        parsed = parse_partition_dir(directory.name)
        self.topic: str | None = parsed[0] if parsed else None
        # The topic ID in partition.metadata (KIP-516); None: not known yet (a new log, or
        # one written before topic IDs), until ``assign_topic_id``.
        self.topic_id: bytes | None = None
        self.partition: int | None = parsed[1] if parsed else None

    # -- opening -------------------------------------------------------------------
    @classmethod
    def open(
        cls,
        directory: Path,
        config: LogConfig | None = None,
        *,
        clean_shutdown: bool = False,
        recovery_point: int | None = None,
        log_start_offset: int | None = None,
        clock_ms: Callable[[], int] = wall_clock_ms,
    ) -> Log:
        """Load a partition directory (creating it if needed), recovering what may be torn.

        After a clean shutdown the files are trusted (indexes still get a cheap
        sanity check and are rebuilt if missing or broken). Otherwise every
        segment from the one holding ``recovery_point`` on is re-validated
        batch by batch and cut at the first bad byte. Without a recovery point
        only the active segment is checked: older segments were fsynced when
        they were rolled.
        """
        config = config or LogConfig()
        if not isinstance(directory, Path):  # a Path made anew costs ~200 bytes per log
            directory = Path(directory)
        try:
            return cls._load(directory, config, clean_shutdown, recovery_point,
                             log_start_offset, clock_ms)
        except OSError as exc:
            raise StorageError(f"cannot open log {directory}: {exc}") from exc

    @classmethod
    def _load(cls, directory: Path, config: LogConfig, clean_shutdown: bool,
              recovery_point: int | None, log_start_offset: int | None,
              clock_ms: Callable[[], int]) -> Log:
        try:
            names = os.listdir(directory)
        except FileNotFoundError:  # a new log (listed first: no mkdir per replica at load)
            directory.mkdir(parents=True)
            names = []
        bases = _clean_directory(directory, names)
        now = clock_ms()
        recover_from: int | None = None
        if not clean_shutdown and bases:
            recover_from = bases[-1]
            if recovery_point is not None:
                recover_from = bases[max(bisect.bisect_right(bases, recovery_point) - 1, 0)]
        segments: list[LogSegment] = []
        truncated = 0
        for number, base in enumerate(bases):
            last = number == len(bases) - 1
            recovering = recover_from is not None and base >= recover_from
            segment = LogSegment(directory, base, config, active=last, created_ms=now,
                                 recovering=recovering)
            if segments and base < segments[-1].next_offset:
                # An overlap: the files after it do not belong to this log. (A gap is
                # fine: the log cleaner leaves one where it removed whole batches.)
                segment.delete()
                _delete_segments_from(directory, bases[number + 1 :])
                break
            segments.append(segment)
            if recovering:
                cut = segment.recover()
                truncated += cut
                if cut:
                    logger.warning("%s: recovery cut %d bytes of %s at offset %d",
                                   directory, cut, segment.log_path.name, segment.next_offset)
                if cut and not last:
                    _delete_segments_from(directory, bases[number + 1 :])
                    break
            else:
                segment.load()
        start = max(log_start_offset or 0, segments[0].base_offset if segments else 0)
        if not segments or start > segments[-1].next_offset:
            for segment in segments:
                segment.delete()
            segments = [LogSegment(directory, start, config, active=True, created_ms=now)]
        segments[-1].make_active()
        log = cls(directory, config, segments, start, clock_ms)
        log.truncated_on_recovery = truncated
        log._snapshot_listing = snapshot_offsets_in(names)
        if PARTITION_METADATA in names:  # read only if listed: no extra system call per log
            log.topic_id = read_partition_metadata(directory)
        return log

    def assign_topic_id(self, topic_id: bytes) -> None:
        """Record the topic ID this log belongs to in ``partition.metadata`` (once, as Kafka
        does when LeaderAndIsr first names the ID); a log that already belongs to another
        ID is refused with InconsistentTopicIdError: it holds an earlier topic of that name."""
        if self.topic_id == topic_id:
            return
        if self.topic_id is not None:
            raise InconsistentTopicIdError(
                f"log {self.directory} belongs to topic id {topic_id_text(self.topic_id)}, not "
                f"{topic_id_text(topic_id)}")
        write_partition_metadata(self.directory, topic_id)
        self.topic_id = topic_id

    def take_snapshot_listing(self) -> list[int] | None:
        """The producer snapshot offsets seen when the log was opened, the first time it is
        asked; None afterwards (list the directory then: snapshots have been written)."""
        listing, self._snapshot_listing = self._snapshot_listing, None
        return listing

    # -- state ---------------------------------------------------------------------
    @property
    def config(self) -> LogConfig:
        return self._config

    def update_config(self, config: LogConfig) -> None:
        """Apply new topic settings (new index sizes apply to segments created from now on)."""
        self._config = config
        self._max_batch_bytes = min(config.max_message_bytes, config.segment_bytes)
        self._flush_policy = config.flush_messages is not None or config.flush_ms is not None
        self._log_append_time = config.log_append_time
        for segment in self._segments:
            segment.config = config

    @property
    def log_start_offset(self) -> int:
        """The first offset a consumer may read."""
        return self._log_start_offset

    @property
    def log_end_offset(self) -> int:
        """The offset the next appended record will get."""
        return self._segments[-1].next_offset

    @property
    def size(self) -> int:
        """Bytes in all segment files."""
        return sum(segment.size for segment in self._segments)

    @property
    def segments(self) -> tuple[LogSegment, ...]:
        """The segments, oldest first (for inspection; change the log through its methods)."""
        return tuple(self._segments)

    @property
    def active_segment(self) -> LogSegment:
        return self._segments[-1]

    @property
    def closed(self) -> bool:
        return self._closed

    def _check_open(self) -> None:
        if self._closed:
            raise StorageError(f"log {self.directory} is closed")

    # -- appending -----------------------------------------------------------------
    def append(self, batch_bytes: Buffer, leader_epoch: int) -> AppendInfo:
        """Append one or more producer batches as leader: assign offsets, stamp the epoch, write.

        The batches are validated first (length, magic 2, CRC-32C); a bad one
        raises CorruptBatchError and nothing is written. Only the base offset
        and the partition leader epoch are changed, which the CRC does not
        cover, so the records are never copied: a 16-byte patched head and a
        view of the rest go to one ``pwritev``.
        """
        if self._closed:
            self._check_open()
        view = memoryview(batch_bytes)
        header = validate_batch(view, 0, check_crc=True)
        size = header.batch_length + LOG_OVERHEAD
        if size != len(view):
            return self._append_many(view, leader_epoch)
        # The hot path: one batch, as every produce request carries per partition.
        if size > self._max_batch_bytes:
            self._check_size(size)
        segment = self._segments[-1]
        base = segment.next_offset
        last = base + header.last_offset_delta
        if not segment.can_hold(size, last) or (
            segment.size and self._clock_ms() - segment.created_ms > self._config.segment_ms
        ):
            segment = self._roll(self._clock_ms())
        head = _OFFSET_LENGTH_EPOCH.pack(base, header.batch_length, leader_epoch)
        if self._log_append_time:  # attributes, maxTimestamp and CRC change: 61 bytes anew
            append_time = max_timestamp = self._clock_ms()
            head += log_append_time_header(view, append_time)
            rest = view[HEADER_SIZE:]
        else:
            append_time, max_timestamp, rest = -1, header.max_timestamp, view[16:]
        segment.append_batch(head, rest, size, last, max_timestamp)
        if leader_epoch >= 0 and leader_epoch != self.leader_epochs.latest_epoch:
            self.leader_epochs.assign(leader_epoch, base)
        self._unflushed_records += header.records_count
        if self._flush_policy:
            self._flush_if_policy_says()
        return AppendInfo(base, last, max_timestamp, header.records_count, 1, size, append_time)

    def _append_many(self, view: memoryview, leader_epoch: int) -> AppendInfo:
        headers = self._validate(view)
        next_offset = self.log_end_offset
        append_time = self._clock_ms() if self._log_append_time else -1
        final: list[tuple[int, BatchHeader]] = []
        for _, header in headers:
            header = header._replace(base_offset=next_offset, partition_leader_epoch=leader_epoch)
            if append_time >= 0:
                header = header._replace(max_timestamp=append_time,
                                         attributes=header.attributes | ATTR_TIMESTAMP_TYPE)
            final.append((header.size, header))
            next_offset += header.last_offset_delta + 1

        def patched_parts(first: int, last: int) -> list[Buffer]:
            parts: list[Buffer] = []
            for number in range(first, last):
                position, original = headers[number]
                parts.append(_OFFSET_LENGTH_EPOCH.pack(
                    final[number][1].base_offset, original.batch_length, leader_epoch))
                if append_time >= 0:
                    parts.append(log_append_time_header(view, append_time, position))
                    parts.append(view[position + HEADER_SIZE : position + original.size])
                else:
                    parts.append(view[position + 16 : position + original.size])
            return parts

        self._write(final, patched_parts)
        if leader_epoch >= 0:
            self.leader_epochs.assign(leader_epoch, final[0][1].base_offset)
        return self._after_append(final)._replace(log_append_time=append_time)

    def append_as_follower(self, batch_bytes: Buffer,
                           headers: list[tuple[int, BatchHeader]] | None = None) -> AppendInfo:
        """Append batches copied from the leader, keeping their offsets and epochs.

        They must start at or after our log end offset and follow each other
        in increasing order (UnexpectedAppendOffsetError otherwise; gaps are
        fine, a compacted leader log has them); empty input is a no-op. The
        leader epoch cache learns every epoch change it sees. ``headers`` is
        ``validated_spans(batch_bytes)`` when the caller has already made it
        (a follower partition reads producer state from the same headers), so
        that each header is read once.
        """
        self._check_open()
        view = memoryview(batch_bytes)
        if len(view) == 0:
            end = self.log_end_offset
            return AppendInfo(end, end - 1, -1, 0, 0, 0)
        if headers is None:
            headers = self._validate(view, follower=True)
        expected = self.log_end_offset
        final = []
        # One loop, with the header's size and next offset summed here: a follower appends a
        # fetch answer's batches (15-20 at 10,000 records/s), a property call each adds up.
        for _, header in headers:
            base = header.base_offset
            if base < expected:
                raise UnexpectedAppendOffsetError(
                    f"follower append at offset {base}, log end is {expected}")
            expected = base + header.last_offset_delta + 1  # header.next_offset
            final.append((header.batch_length + LOG_OVERHEAD, header))  # (header.size, header)

        def slices(first: int, last: int) -> list[Buffer]:
            start = headers[first][0]
            end = headers[last - 1][0] + headers[last - 1][1].size
            return [view[start:end]]

        self._write(final, slices)
        previous = None
        for _, header in headers:
            epoch = header.partition_leader_epoch
            if epoch >= 0 and epoch != previous:  # a batch after one of its epoch changes nothing
                self.leader_epochs.assign(epoch, header.base_offset)
            previous = epoch
        return self._after_append(final)

    def _check_size(self, size: int, follower: bool = False) -> None:
        """Refuse a batch over max.message.bytes or segment.bytes (a follower takes what the
        leader took, as Kafka's replication ignores the record size limits)."""
        if follower:
            return
        if size > self._config.max_message_bytes:
            raise RecordTooLargeError(
                f"batch of {size} bytes is over max.message.bytes "
                f"({self._config.max_message_bytes})")
        if size > self._config.segment_bytes:
            raise RecordTooLargeError(
                f"batch of {size} bytes is over segment.bytes ({self._config.segment_bytes})")

    def _validate(self, view: memoryview, follower: bool = False) -> list[tuple[int, BatchHeader]]:
        headers = validated_spans(view, check_crc=True)
        for _, header in headers:
            self._check_size(header.size, follower)
        return headers

    def _roll_is_due(self, segment: LogSegment) -> bool:
        """segment.ms: time to start a new segment even though this one is not full."""
        return segment.size > 0 and self._clock_ms() - segment.created_ms > self._config.segment_ms

    def _write(self, final: list[tuple[int, BatchHeader]],
               parts_for: Callable[[int, int], list[Buffer]]) -> None:
        """Write batches ``final`` in groups that fit the active segment, rolling between groups."""
        first = 0
        while first < len(final):
            segment = self._segments[-1]
            if self._roll_is_due(segment):
                segment = self._roll(self._clock_ms())
            last, used = first, 0
            group_end = min(len(final), first + _MAX_IOVECS // 2)
            group_bytes = sum(size for size, _ in final[first:group_end])
            # All fit: one check, not one per batch (an empty segment takes its first batch
            # whatever its size, so there the batches are looked at one by one).
            if segment.size and segment.can_hold(group_bytes, final[group_end - 1][1].last_offset):
                last, used = group_end, group_bytes
            while last < group_end:
                size, header = final[last]
                if not segment.can_hold(size, header.last_offset, pending=used):
                    break
                used += size
                last += 1
            if last == first:
                segment = self._roll(self._clock_ms())
                continue
            batches = [(size, h.base_offset + h.last_offset_delta, h.max_timestamp)
                       for size, h in final[first:last]]  # h.last_offset, without the call
            segment.append(parts_for(first, last), used, batches)
            first = last

    def _count_unflushed(self, records: int) -> None:
        self._unflushed_records += records
        if self._flush_policy:
            self._flush_if_policy_says()

    def _flush_if_policy_says(self) -> None:
        """Apply flush.messages and flush.ms after an append."""
        flush_messages, flush_ms = self._config.flush_messages, self._config.flush_ms
        if (flush_messages is not None and self._unflushed_records >= flush_messages) or (
            flush_ms is not None and self._clock_ms() - self._last_flush_ms >= flush_ms
        ):
            self.flush()

    def _after_append(self, final: list[tuple[int, BatchHeader]]) -> AppendInfo:
        records = total = 0
        newest = final[0][1].max_timestamp
        for size, header in final:  # one loop for the three sums
            records += header.records_count
            total += size
            if header.max_timestamp > newest:
                newest = header.max_timestamp
        self._count_unflushed(records)
        return AppendInfo(
            base_offset=final[0][1].base_offset,
            last_offset=final[-1][1].last_offset,
            max_timestamp=newest,
            record_count=records,
            batch_count=len(final),
            size=total,
        )

    # -- reading -------------------------------------------------------------------
    @overload
    def read(self, offset: int, max_bytes: int, max_offset: int | None = None,
             region_from: None = None) -> bytes: ...

    @overload
    def read(self, offset: int, max_bytes: int, max_offset: int | None,
             region_from: int) -> bytes | FileRegion: ...

    def read(self, offset: int, max_bytes: int, max_offset: int | None = None,
             region_from: int | None = None) -> bytes | FileRegion:
        """Whole batches starting with the one that holds ``offset``, across segments.

        At most ``max_bytes`` except that the first batch always comes whole
        (KIP-74), so a consumer can always make progress. Batches at or after
        ``max_offset`` (the high watermark, for consumers) are left out. An
        offset below the log start or above the log end raises
        OffsetOutOfRangeError; the log end itself gives ``b""``.

        ``region_from``: when the batches lie in one segment file and take at
        least this many bytes, they come unread, as a :class:`FileRegion`
        (zero-copy fetches: the broker sends them with ``sendfile``). Its
        length is fixed now, so appends made before it is sent are not in it.
        """
        if self._closed:
            self._check_open()
        end = self.log_end_offset
        if offset < self._log_start_offset or offset > end:
            raise OffsetOutOfRangeError(offset, self._log_start_offset, end)
        limit = end if max_offset is None else min(max_offset, end)
        if offset >= limit:
            return b""
        chunks: list[bytes] = []
        used = 0
        first_number = max(bisect.bisect_right(self._bases, offset) - 1, 0)
        for number, segment in enumerate(self._segments[first_number:], first_number):
            if segment.base_offset >= limit:
                break
            if chunks:
                start, first_size = 0, 0
            else:
                found = segment.batch_position(offset)
                if found is None:
                    continue
                start, first_size = found
            stop = segment.size
            if limit < segment.next_offset:  # the HW below the log end (acks=all)
                cut_at = segment.batch_position(limit)
                stop = cut_at[0] if cut_at else segment.size
            available = stop - start
            want = min(available, max(max_bytes - used, first_size))
            if want < HEADER_SIZE:
                break
            if region_from is not None and not chunks and want >= region_from:
                found_region = self._region(segment, number, start,
                                            want, available, stop, limit, max_bytes)
                if found_region is not None:
                    return found_region
            data = segment.read(start, want)
            # Up to ``stop`` (a batch boundary) the bytes are whole batches; a read cut
            # short by max_bytes may end inside one.
            whole = want if want == available and len(data) == want \
                else whole_batches_length(data)
            if whole == 0:
                break
            chunks.append(data if whole == len(data) else data[:whole])
            used += whole
            if whole < available or stop < segment.size:
                break
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    def _region(self, segment: LogSegment, number: int, start: int, want: int,
                available: int, stop: int, limit: int, max_bytes: int) -> FileRegion | None:
        """``read``'s answer as a region of ``segment`` when it ends in that segment
        (None: it would go on into the next one, or no descriptor: read the bytes)."""
        whole = want if want == available else segment.whole_batches_end(start, start + want) \
            - start
        if whole <= 0:
            return None
        following = self._segments[number + 1] if number + 1 < len(self._segments) else None
        if (whole == available and stop == segment.size and max_bytes - whole >= HEADER_SIZE
                and following is not None and following.base_offset < limit):
            return None  # the read goes on into the next segment: bytes, as before
        if whole < available:  # cut by max_bytes: the next record is the next batch's first
            next_offset = segment.base_offset_at(start + whole)
        elif stop < segment.size:  # cut at ``limit``: the batch there holds it
            next_offset = segment.base_offset_at(stop)
        else:
            next_offset = segment.next_offset
        return segment.region(start, whole, next_offset)

    # -- aborted transactions ------------------------------------------------------
    def append_aborted_txn(self, entry: AbortedTxn) -> None:
        """Record an aborted transaction in the index of the segment holding its marker."""
        self._check_open()
        number = max(bisect.bisect_right(self._bases, entry.last_offset) - 1, 0)
        self._segments[number].txn_index.append(entry)

    def collect_aborted_txns(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """Aborted transactions overlapping [fetch_offset, upper_bound), oldest marker first.

        Kafka's ``collectAbortedTransactions``: an abort whose marker is at or
        after ``fetch_offset`` is in the segment holding ``fetch_offset`` or a
        later one, so the search starts there.
        """
        self._check_open()
        found: list[AbortedTxn] = []
        first = max(bisect.bisect_right(self._bases, fetch_offset) - 1, 0)
        for segment in self._segments[first:]:
            entries, complete = segment.txn_index.collect(fetch_offset, upper_bound)
            found += entries
            if complete:
                break
        return found

    def find_offset_by_timestamp(self, timestamp: int) -> TimestampOffset | None:
        """The first record with a timestamp >= ``timestamp``: (its timestamp, its offset).

        This is ListOffsets by time. The time index and batch headers find the
        batch; only that one batch is decoded to find the record. -2 and -1
        ask for the earliest and the latest offset (timestamp -1 in the answer),
        -3 for the first record with the largest timestamp.
        """
        self._check_open()
        if timestamp == EARLIEST_TIMESTAMP:
            return TimestampOffset(-1, self._log_start_offset)
        if timestamp == LATEST_TIMESTAMP:
            return TimestampOffset(-1, self.log_end_offset)
        if timestamp == MAX_TIMESTAMP:  # the first record holding the newest timestamp
            newest = max((segment.max_timestamp for segment in self._segments
                          if segment.next_offset > self._log_start_offset), default=-1)
            return self.find_offset_by_timestamp(newest) if newest >= 0 else None
        for segment in self._segments:
            if segment.next_offset <= self._log_start_offset:
                continue
            found = segment.find_by_timestamp(timestamp, self._log_start_offset)
            if found is not None:
                return self._record_at_or_after(segment, *found, timestamp)
        return None

    def _record_at_or_after(self, segment: LogSegment, position: int, header: BatchHeader,
                            timestamp: int) -> TimestampOffset:
        """Decode the one batch the search landed on; batch precision if it does not decode."""
        try:
            batch = parse_batch(segment.read(position, header.size))
        except ProtocolError:
            return TimestampOffset(header.max_timestamp,
                                   max(header.base_offset, self._log_start_offset))
        for record in batch.records:
            record_time = record.timestamp if record.timestamp is not None else -1
            if record.offset >= self._log_start_offset and record_time >= timestamp:
                return TimestampOffset(record_time, record.offset)
        return TimestampOffset(header.max_timestamp, max(header.last_offset,
                                                         self._log_start_offset))

    def offset_for_timestamp(self, timestamp: int) -> int | None:
        """Offset part of :meth:`find_offset_by_timestamp` (None: no record that late)."""
        found = self.find_offset_by_timestamp(timestamp)
        return found.offset if found else None

    # -- rolling, flushing ---------------------------------------------------------
    def roll(self) -> int:
        """Close the active segment (fsync, trim indexes) and start a new one at the log end.

        A no-op on an empty active segment. Returns the active segment's base offset.
        """
        self._check_open()
        if self._segments[-1].size == 0:
            return self._segments[-1].base_offset
        return self._roll(self._clock_ms()).base_offset

    def _roll(self, now: int) -> LogSegment:
        old = self._segments[-1]
        background = self.background
        old.make_inactive(sync=background is None)
        segment = LogSegment(self.directory, old.next_offset, self._config, active=True,
                             created_ms=now)
        self._segments.append(segment)
        self._bases.append(segment.base_offset)
        if background is None:
            self.fsync_count += 1
            fsync_directory(self.directory)
            self.recovery_point = max(self.recovery_point, old.next_offset)
        else:
            # Kafka flushes a rolled segment on its scheduler, not in the append: a
            # gigabyte's fsync would stop every request behind this one.
            background(lambda: self._sync_rolled(old))
        return segment

    def _sync_rolled(self, old: LogSegment) -> None:
        """Make a rolled segment durable, then move the recovery point past it (worker)."""
        try:
            old.sync_files()
            fsync_directory(self.directory)
        except OSError as exc:  # closed or deleted meanwhile (shutdown, retention)
            logger.warning("%s: rolled segment %d not synced: %s", self.directory.name,
                           old.base_offset, exc)
            return
        self.fsync_count += 1
        self.recovery_point = max(self.recovery_point, old.next_offset)

    def flush(self) -> None:
        """fsync the active segment: everything below the log end survives a power cut."""
        self._check_open()
        for rolled in self._segments[:-1]:  # a roll whose background fsync is pending
            rolled.sync_files()
        self._segments[-1].flush()
        self.fsync_count += 1
        self.leader_epochs.sync()
        if self.directory_sync_needed:
            fsync_directory(self.directory)
            fsync_directory(self.directory.parent)
            self.directory_sync_needed = False
        self.recovery_point = self.log_end_offset
        self._unflushed_records = 0
        self._last_flush_ms = self._clock_ms()

    def flush_if_due(self, now_ms: int | None = None) -> bool:
        """Apply flush.ms from a periodic task; True if it flushed."""
        flush_ms = self._config.flush_ms
        now = self._clock_ms() if now_ms is None else now_ms
        if flush_ms is None or self.recovery_point == self.log_end_offset:
            return False
        if now - self._last_flush_ms < flush_ms:
            return False
        self.flush()
        return True

    # -- removing data -------------------------------------------------------------
    def truncate_to(self, offset: int) -> None:
        """Remove every batch holding an offset >= ``offset`` (a follower undoing a diverged tail).

        The batch holding ``offset`` goes whole, so the log end may end up
        below ``offset`` if it is not a batch boundary. Below the log start the
        whole log is emptied and restarts at ``offset``.
        """
        self._check_open()
        if offset >= self.log_end_offset:
            return
        self.generation += 1
        self._note_truncation(offset)
        if offset <= self._log_start_offset:
            self.truncate_fully_and_start_at(offset)
            return
        keep = max(bisect.bisect_right(self._bases, offset) - 1, 0)
        for segment in self._segments[keep + 1 :]:
            segment.delete()
        del self._segments[keep + 1 :]
        del self._bases[keep + 1 :]
        last = self._segments[-1]
        last.make_active()
        last.truncate_to(offset)
        if self.log_end_offset < self._log_start_offset:
            self.truncate_fully_and_start_at(self._log_start_offset)
            return
        self.leader_epochs.truncate_from_end(self.log_end_offset)
        self.recovery_point = min(self.recovery_point, self.log_end_offset)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Delete every segment and start an empty log at ``offset``."""
        self._check_open()
        self.generation += 1
        self._note_truncation(offset)
        for segment in self._segments:
            segment.delete()
        self._segments = [LogSegment(self.directory, offset, self._config, active=True,
                                     created_ms=self._clock_ms())]
        self._bases = [offset]
        self._log_start_offset = offset
        self.recovery_point = offset
        self.leader_epochs.clear()

    def enforce_retention(
        self, now_ms: int | None = None, high_watermark: int | None = None
    ) -> int:
        """Delete old closed segments by retention.ms and retention.bytes; returns how many.

        A segment goes when its newest timestamp is older than retention.ms, or
        while the log without it would still be at least retention.bytes big.
        Only whole closed segments, oldest first, and (if given) only those
        wholly below the high watermark.
        """
        self._check_open()
        now = self._clock_ms() if now_ms is None else now_ms
        closed = self._segments[:-1]
        if high_watermark is not None:
            closed = [segment for segment in closed if segment.next_offset <= high_watermark]
        by_time = 0
        if self._config.retention_ms >= 0:
            for segment in closed:
                if now - segment.max_timestamp <= self._config.retention_ms:
                    break
                by_time += 1
        by_size = 0
        if self._config.retention_bytes >= 0:
            excess = self.size - self._config.retention_bytes
            for segment in closed:
                if excess - segment.size < 0:
                    break
                excess -= segment.size
                by_size += 1
        count = max(by_time, by_size)
        self._delete_oldest(count)
        return count

    def delete_records_before(self, offset: int) -> int:
        """Move the log start up to ``offset`` (DeleteRecords) and drop segments wholly below it."""
        self._check_open()
        if offset > self.log_end_offset:
            raise OffsetOutOfRangeError(offset, self._log_start_offset, self.log_end_offset)
        if offset > self._log_start_offset:
            self._log_start_offset = offset
            count = 0
            for segment in self._segments[:-1]:
                if segment.next_offset > offset:
                    break
                count += 1
            self._delete_oldest(count)
            self.leader_epochs.truncate_from_start(self._log_start_offset)
        return self._log_start_offset

    def _delete_oldest(self, count: int) -> None:
        if count <= 0:
            return
        for segment in self._segments[:count]:
            segment.delete()
        del self._segments[:count]
        del self._bases[:count]
        self._log_start_offset = max(self._log_start_offset, self._segments[0].base_offset)
        self.leader_epochs.truncate_from_start(self._log_start_offset)

    # -- compaction ----------------------------------------------------------------
    swap_hook: Callable[[Path], None] | None = None  # tests: called at the .swap commit point

    def replace_segments(self, groups: list[CleanedGroup], generation: int) -> int:
        """Swap cleaned groups in for the segments they replace (Kafka's replaceSegments).

        Each group (``cleaner.CleanedGroup``: ``old`` segments, ``base_offset``)
        has ``<base>.log.cleaned`` and its indexes written and fsynced, plus
        ``<base>.group.cleaned`` naming the old segments. In an order that a
        crash at any point leaves recoverable (``Log.open`` finishes it):

        1. rename ``.cleaned`` -> ``.swap``, the ``.log`` last, and fsync the
           directory: from here the group is committed;
        2. close and delete the old segments' files;
        3. rename the ``.swap`` files to their final names (the ``.log`` last),
           fsync, and open the new segment in the old ones' place.

        A group whose old segments are no longer all in the log, or any group
        after a truncation since the plan (``generation``), is discarded.
        Returns how many groups were swapped in.
        """
        swapped = 0
        for group in groups:
            if not self._still_holds(group.old, generation):
                discard_cleaned(self.directory, group.base_offset)
                continue
            base = group.base_offset
            _rename_group(self.directory, base, CLEANED_SUFFIX, SWAP_SUFFIX)
            fsync_directory(self.directory)
            if Log.swap_hook is not None:
                Log.swap_hook(self.directory)
            if not self._still_holds(group.old, generation):
                _discard_suffix(self.directory, base, SWAP_SUFFIX)
                continue
            first = self._segments.index(group.old[0])
            for segment in group.old:
                segment.delete()
            _rename_group(self.directory, base, SWAP_SUFFIX, "")
            fsync_directory(self.directory)
            group_file(self.directory, base, SWAP_SUFFIX).unlink(missing_ok=True)
            segment = LogSegment(self.directory, base, self._config, active=False,
                                 created_ms=self._clock_ms())
            segment.load()
            self._segments[first : first + len(group.old)] = [segment]
            self._bases[first : first + len(group.old)] = [base]
            swapped += 1
        return swapped

    def _note_truncation(self, offset: int) -> None:
        if self.lowest_truncation is None or offset < self.lowest_truncation:
            self.lowest_truncation = offset

    def _still_holds(self, old: list[LogSegment], generation: int) -> bool:
        if self._closed or generation != self.generation or not old:
            return False
        try:
            first = self._segments.index(old[0])
        except ValueError:
            return False
        return self._segments[first : first + len(old)] == old and \
            first + len(old) < len(self._segments)  # never the active segment

    # -- closing -------------------------------------------------------------------
    def close(self) -> None:
        """Flush, write the final time index entry, trim the active indexes, close every file."""
        if self._closed:
            return
        self.generation += 1
        # A log with nothing appended since its last flush needs no fsync at all (Kafka's
        # flush stops at the recovery point too): its data is on disk, and only the index
        # trims are new, which the load's sanity check catches should a power cut lose
        # them. Three fsyncs per idle replica made a clean shutdown at 10,000 replicas
        # outlast the 30 s a supervisor waits.
        unflushed = self.recovery_point < self.log_end_offset
        for segment in self._segments:
            segment.close(clean=True, sync=unflushed)
        if unflushed:
            self.fsync_count += 1
        self.leader_epochs.sync()
        if self.directory_sync_needed:
            fsync_directory(self.directory)  # the log directory's parent: LogManager.close
        self._closed = True

    def abandon(self) -> None:
        """Drop every file handle with no shutdown work at all, as if the process were killed.

        Tests and the demo use it to simulate a crash: the active index files
        stay preallocated and nothing is fsynced.
        """
        if self._closed:
            return
        self.generation += 1
        for segment in self._segments:
            segment.close(clean=False)
        self._closed = True

    def delete(self) -> None:
        """Close the log and remove its directory."""
        self.abandon()
        shutil.rmtree(self.directory, ignore_errors=True)

    def __repr__(self) -> str:
        return (f"Log({str(self.directory)!r}, log_start_offset={self._log_start_offset}, "
                f"log_end_offset={self.log_end_offset}, segments={len(self._segments)})")


def group_file(directory: Path, base_offset: int, suffix: str) -> Path:
    """``<base>.group<suffix>``: the old segments a cleaned group replaces, one base a line."""
    return directory / f"{base_offset:020d}{GROUP_SUFFIX}{suffix}"


def discard_cleaned(directory: Path, base_offset: int) -> None:
    """Remove the ``.cleaned`` files of one group (a round that will not be swapped in)."""
    _discard_suffix(directory, base_offset, CLEANED_SUFFIX)


def _discard_suffix(directory: Path, base_offset: int, suffix: str) -> None:
    for path in directory.glob(f"{base_offset:020d}.*{suffix}"):
        path.unlink(missing_ok=True)


def _rename_group(directory: Path, base: int, old_suffix: str, new_suffix: str) -> None:
    """Rename a group's files from one suffix to another, the ``.log`` last (it marks the
    step done). The group file has no final name: it is only renamed to ``.swap``."""
    suffixes = [TXN_INDEX_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, LOG_SUFFIX]
    if new_suffix:
        suffixes.insert(0, GROUP_SUFFIX)
    for suffix in suffixes:
        source = directory / f"{base:020d}{suffix}{old_suffix}"
        if source.exists():
            os.replace(source, directory / f"{base:020d}{suffix}{new_suffix}")


def _complete_swaps(directory: Path) -> None:
    """Finish cleanings that a crash interrupted (Kafka's LogLoader does the same).

    ``.cleaned`` files never made it to the commit point: gone. A
    ``<base>.log.swap`` is a committed group: the old segments its
    ``.group.swap`` names are deleted, it takes its final name, and its
    indexes are rebuilt from it. Other ``.swap`` files without their ``.log``
    are leftovers of a commit that did not finish (or of one that did).
    """
    for path in directory.glob(f"*{CLEANED_SUFFIX}"):
        path.unlink(missing_ok=True)
    for log_swap in sorted(directory.glob(f"*{LOG_SUFFIX}{SWAP_SUFFIX}")):
        stem = log_swap.name.split(".")[0]
        if not stem.isdigit():
            continue
        base = int(stem)
        group = group_file(directory, base, SWAP_SUFFIX)
        try:
            old = [int(line) for line in group.read_text().split()]
        except (OSError, ValueError):
            old = [base]  # the group file is renamed before the .log: not expected
        txn_swap = directory / f"{base:020d}{TXN_INDEX_SUFFIX}{SWAP_SUFFIX}"
        for old_base in {*old, base}:
            for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
                if suffix == TXN_INDEX_SUFFIX and old_base == base and not txn_swap.exists():
                    continue  # already renamed: the old one was deleted before
                (directory / f"{old_base:020d}{suffix}").unlink(missing_ok=True)
        if txn_swap.exists():  # the offset and time indexes are rebuilt; this one cannot be
            os.replace(txn_swap, directory / f"{base:020d}{TXN_INDEX_SUFFIX}")
        os.replace(log_swap, directory / f"{base:020d}{LOG_SUFFIX}")
        logger.warning("%s: finished the interrupted swap of a cleaned segment at offset %d "
                       "(replacing %d segments)", directory, base, len(old))
    for path in directory.glob(f"*{SWAP_SUFFIX}"):
        path.unlink(missing_ok=True)
    fsync_directory(directory)


def _clean_directory(directory: Path, names: list[str]) -> list[int]:
    """Remove leftovers of interrupted writes; return the segments' base offsets, sorted.

    ``names``: the directory's listing. It is listed once (again only after finishing
    an interrupted swap): a restart opens thousands of these, each listing a system call.
    """
    if any(name.endswith((CLEANED_SUFFIX, SWAP_SUFFIX)) for name in names):
        _complete_swaps(directory)
        names = os.listdir(directory)
    bases = []
    indexes = []
    for name in names:
        if name.endswith((".tmp", ".deleted")):
            (directory / name).unlink(missing_ok=True)
            continue
        match = _SEGMENT_NAME.match(name)
        if match:
            bases.append(int(match[1]))
        elif name.endswith((INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)):
            indexes.append(name)
    logs = set(bases)
    for name in indexes:
        stem = name.split(".", 1)[0]
        if not (stem.isdigit() and int(stem) in logs):
            (directory / name).unlink(missing_ok=True)  # an index whose log is gone
    return sorted(bases)


def _delete_segments_from(directory: Path, bases: list[int]) -> None:
    for base in bases:
        for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
            (directory / f"{base:020d}{suffix}").unlink(missing_ok=True)


