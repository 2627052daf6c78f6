"""Log compaction: keep the last record of every key (Kafka's LogCleaner, in three parts).

A topic with ``cleanup.policy=compact`` keeps, for each key, at least its
latest record; older records of a key may go. The work follows Kafka's design:

* **Which log** (:class:`CleanerManager`, Kafka's LogCleanerManager). Per log,
  ``cleaner-offset-checkpoint`` holds the *first dirty offset*: below it the
  log was cleaned before. The dirty part runs from there up to the *first
  uncleanable offset*: the active segment's base, lowered to the base of the
  segment holding the high watermark and of the first segment with a record
  younger than ``min.compaction.lag.ms``. A log is cleaned when its dirty bytes
  are at least ``min.cleanable.dirty.ratio`` of its cleanable bytes, or when a
  tombstone's delete horizon has passed; the filthiest goes first.
* **The offset map** (:class:`OffsetMap`, Kafka's SkimpyOffsetMap): the MD5 of
  each key in the dirty part -> its last offset there. Its size is bounded
  (``log.cleaner.dedupe.buffer.size``, 24 bytes an entry as in Kafka); when it
  fills up, this round cleans up to where it stopped and the next round goes on.
* **Cleaning** (:class:`Cleaner`): every segment from the log start to the end
  of the mapped part is rewritten, in groups that together fit one segment,
  into ``<base>.log.cleaned`` (with its indexes). A record stays unless the map
  holds a later offset for its key, or it is a tombstone whose delete horizon
  has passed, or it has no key. Batches keep their base and last offsets, so
  offsets never change and gaps appear (as in Kafka); a batch left whole is
  copied byte for byte, a thinned one is re-encoded (same codec, new CRC).
  A batch whose tombstones are seen for the first time gets a *delete
  horizon*, now + ``delete.retention.ms``, in its base timestamp with
  attribute bit 0x40 (KIP-534); a later round drops those tombstones once the
  horizon has passed. Transactional and control batches are kept whole and
  stay out of the map (aborted data is not removed).

The cleaning runs on a thread of its own (it reads files through its own
descriptors and writes new ones); choosing a log and swapping the segments in
happen on the broker's reactor thread, in :meth:`Log.replace_segments`,
which also holds the crash-safe order of renames (``.cleaned`` -> ``.swap``
-> final names) that ``Log.open`` completes or undoes after a crash.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from simplekafka.protocol.batch_header import (
    ATTR_DELETE_HORIZON,
    HEADER_SIZE,
    BatchHeader,
    read_header,
)
from simplekafka.protocol.compression import DEFAULT_MAX_DECOMPRESSED_BYTES
from simplekafka.protocol.errors import CorruptBatchError
from simplekafka.protocol.records import Record, parse_batch, rebuild_batch
from simplekafka.storage.checkpoints import (
    TopicPartition,
    read_offset_checkpoint,
    write_offset_checkpoint,
)
from simplekafka.storage.errors import CheckpointError, StorageError
from simplekafka.storage.log import CLEANED_SUFFIX, Log, discard_cleaned, group_file
from simplekafka.storage.segment import LogSegment

logger = logging.getLogger(__name__)

CLEANER_CHECKPOINT = "cleaner-offset-checkpoint"
OFFSET_MAP_ENTRY_BYTES = 24  # MD5 (16) + offset (8), as Kafka sizes its map
DEFAULT_DEDUPE_BUFFER_BYTES = 128 * 1024 * 1024
_LOAD_FACTOR = 0.9
_INT32_MAX = (1 << 31) - 1
_WRITE_CHUNK = 1 << 20  # bytes gathered before one pwritev into the cleaned segment
_WRITE_BATCHES = 512  # ...or batches (one iovec each; pwritev takes at most IOV_MAX, 1024)


class CleanerAborted(StorageError):
    """The log changed under the cleaner (truncated, deleted, closed): this round is dropped."""


class OffsetMap:
    """Key digest -> last offset, bounded to ``capacity`` keys (Kafka's SkimpyOffsetMap)."""

    def __init__(self, memory_bytes: int = DEFAULT_DEDUPE_BUFFER_BYTES):
        self.capacity = max(int(memory_bytes * _LOAD_FACTOR) // OFFSET_MAP_ENTRY_BYTES, 1)
        self._offsets: dict[bytes, int] = {}
        self.latest_offset = -1

    def __len__(self) -> int:
        return len(self._offsets)

    @staticmethod
    def digest(key: bytes) -> bytes:
        return hashlib.md5(key, usedforsecurity=False).digest()

    def put(self, key: bytes, offset: int) -> bool:
        """Remember ``offset`` as the key's latest; False (nothing stored) when full."""
        digest = self.digest(key)
        if digest not in self._offsets and len(self._offsets) >= self.capacity:
            return False
        self._offsets[digest] = offset
        self.latest_offset = offset
        return True

    def get(self, key: bytes) -> int | None:
        return self._offsets.get(self.digest(key))


@dataclass
class CleanerStats:
    """What one round did (Kafka's CleanerStats, the part the log line shows)."""

    bytes_read: int = 0  # by the rewrite (the log's bytes, read once)
    map_bytes_read: int = 0  # by the offset map's pass over the dirty part
    bytes_written: int = 0
    records_read: int = 0
    records_kept: int = 0
    tombstones_removed: int = 0
    map_records: int = 0
    seconds: float = 0.0

    def summary(self) -> str:
        rate = self.bytes_read / 1e6 / self.seconds if self.seconds > 0 else 0.0
        return (f"{self.bytes_read / 1e6:.1f} MB read, {self.bytes_written / 1e6:.1f} MB "
                f"written, {self.records_read} records -> {self.records_kept}, "
                f"{self.tombstones_removed} tombstones removed, {self.seconds:.2f} s "
                f"({rate:.1f} MB/s)")


@dataclass
class CleanPlan:
    """One round for one log, chosen on the reactor (Kafka's LogToClean).

    ``sources`` are the segments below ``first_uncleanable`` with a descriptor
    of the cleaner's own for each, opened when the plan was made: the log may
    delete a file meanwhile and the cleaner still reads what was there.
    """

    topic_partition: TopicPartition
    log: Log
    first_dirty: int
    first_uncleanable: int
    now_ms: int
    sources: list[tuple[LogSegment, int]]
    generation: int
    dirty_ratio: float = 0.0
    aborted: bool = False

    def close(self) -> None:
        for _, fd in self.sources:
            try:
                os.close(fd)
            except OSError:
                pass
        self.sources = []


@dataclass
class CleanedGroup:
    """One ``.cleaned`` segment and the old segments it replaces."""

    old: list[LogSegment]
    base_offset: int


@dataclass
class CleanResult:
    plan: CleanPlan
    groups: list[CleanedGroup]
    end_offset: int  # the offsets below this are clean now (the next first dirty offset)
    stats: CleanerStats
    earliest_horizon: int | None = None  # the soonest a kept tombstone may go (ms)


class CleanerManager:
    """Chooses the next log to clean and keeps ``cleaner-offset-checkpoint`` per log dir."""

    def __init__(self, log_dirs: Iterable[Path]):
        self.log_dirs = [Path(d) for d in log_dirs]
        self.first_dirty: dict[TopicPartition, int] = {}
        self.horizons: dict[TopicPartition, int] = {}
        self.in_progress: CleanPlan | None = None
        for directory in self.log_dirs:
            try:
                self.first_dirty.update(read_offset_checkpoint(directory / CLEANER_CHECKPOINT))
            except CheckpointError as exc:
                logger.warning("ignoring %s (every compacted log is dirty again)", exc)

    def cleanable(self, log: Log, first_dirty: int, now_ms: int,
                  high_watermark: int | None) -> tuple[int, int, int]:
        """(first uncleanable offset, clean bytes, dirty bytes) of ``log``."""
        config = log.config
        segments = log.segments
        limit = segments[-1].base_offset  # never the active segment
        if high_watermark is not None:
            limit = min(limit, high_watermark)
        if config.min_compaction_lag_ms > 0:
            for segment in segments[:-1]:
                if segment.max_timestamp > now_ms - config.min_compaction_lag_ms:
                    limit = min(limit, segment.base_offset)
                    break
        first_uncleanable = segments[0].base_offset
        clean = dirty = 0
        for segment in segments[:-1]:
            if segment.next_offset > limit:
                break  # holds the limit: this segment and all after it stay as they are
            first_uncleanable = segment.next_offset
            if segment.next_offset <= first_dirty:
                clean += segment.size
            else:
                dirty += segment.size
        return first_uncleanable, clean, dirty

    def grab_filthiest(self, logs: Mapping[TopicPartition, Log], now_ms: int,
                       high_watermarks: Mapping[TopicPartition, int] | None = None
                       ) -> CleanPlan | None:
        """The compacted log most in need of cleaning, as a plan (None: nothing to do)."""
        if self.in_progress is not None:
            return None
        marks = high_watermarks or {}
        best: tuple[float, TopicPartition, Log, int, int] | None = None
        for key, log in logs.items():
            if not log.config.compact or log.closed:
                continue
            first_dirty = self.first_dirty.get(key, log.log_start_offset)
            if log.lowest_truncation is not None:  # what was cut may have come back anew
                first_dirty = min(first_dirty, log.lowest_truncation)
                self.first_dirty[key] = first_dirty
                log.lowest_truncation = None
            if first_dirty < log.log_start_offset or first_dirty > log.log_end_offset:
                first_dirty = log.log_start_offset  # deleted records, or a truncated log
            first_uncleanable, clean, dirty = self.cleanable(log, first_dirty, now_ms,
                                                             marks.get(key))
            horizon = self.horizons.get(key)
            horizon_due = horizon is not None and horizon <= now_ms and clean > 0
            total = clean + dirty
            ratio = dirty / total if total else 0.0
            if not horizon_due and (dirty == 0 or ratio < log.config.min_cleanable_dirty_ratio):
                continue
            if best is None or ratio > best[0]:
                best = (ratio, key, log, first_dirty, first_uncleanable)
        if best is None:
            return None
        ratio, key, log, first_dirty, first_uncleanable = best
        sources = []
        try:
            for segment in log.segments[:-1]:
                if segment.base_offset >= first_uncleanable:
                    break
                sources.append((segment, os.open(segment.log_path, os.O_RDONLY)))
        except OSError as exc:
            for _, fd in sources:
                os.close(fd)
            logger.warning("cannot clean %s-%d: %s", key[0], key[1], exc)
            return None
        plan = CleanPlan(key, log, first_dirty, first_uncleanable, now_ms, sources,
                         log.generation, ratio)
        self.in_progress = plan
        return plan

    def done(self, result: CleanResult | None, plan: CleanPlan) -> None:
        """Record a finished (result) or dropped (None) round."""
        plan.close()
        self.in_progress = None
        if result is None:
            return
        self.first_dirty[plan.topic_partition] = result.end_offset
        if result.earliest_horizon is None:
            self.horizons.pop(plan.topic_partition, None)
        else:
            self.horizons[plan.topic_partition] = result.earliest_horizon

    def forget(self, topic_partition: TopicPartition) -> None:
        """A deleted log: drop its checkpoint entry; abort a round running on it."""
        self.first_dirty.pop(topic_partition, None)
        self.horizons.pop(topic_partition, None)
        if self.in_progress is not None and self.in_progress.topic_partition == topic_partition:
            self.in_progress.aborted = True

    def checkpoint_entries(self, logs: Mapping[TopicPartition, Log]
                           ) -> dict[Path, dict[TopicPartition, int]]:
        """What each log dir's cleaner-offset-checkpoint should hold now."""
        grouped: dict[Path, dict[TopicPartition, int]] = {d: {} for d in self.log_dirs}
        for key, offset in self.first_dirty.items():
            log = logs.get(key)
            if log is not None:
                grouped.setdefault(log.directory.parent, {})[key] = offset
        return grouped

    @staticmethod
    def write_checkpoints(entries: Mapping[Path, Mapping[TopicPartition, int]]) -> None:
        """Write them (atomically, fsynced): safe on a worker thread."""
        for directory, offsets in entries.items():
            write_offset_checkpoint(directory / CLEANER_CHECKPOINT, offsets)


class Cleaner:
    """Does one round of a plan: builds the offset map, writes the cleaned segments.

    Touches no Log object: it reads through the plan's descriptors and writes
    new files only, so it can run on a thread while the reactor goes on
    appending to the same logs. ``pause`` is called between batches (a test
    hook and a throttle); ``should_stop`` aborts.
    """

    def __init__(self, dedupe_buffer_bytes: int = DEFAULT_DEDUPE_BUFFER_BYTES,
                 max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
                 pause: Callable[[], None] | None = None):
        self.dedupe_buffer_bytes = dedupe_buffer_bytes
        self.max_decompressed_bytes = max_decompressed_bytes
        self.pause = pause

    def clean(self, plan: CleanPlan) -> CleanResult:
        started = time.monotonic()
        stats = CleanerStats()
        config = plan.log.config
        offset_map = OffsetMap(self.dedupe_buffer_bytes)
        end = self._build_offset_map(plan, offset_map, stats)
        groups: list[CleanedGroup] = []
        horizon_new = plan.now_ms + config.delete_retention_ms
        earliest: list[int] = []
        try:
            for group in self._groups(plan, end):
                self._check(plan)
                groups.append(self._clean_group(plan, group, offset_map, horizon_new,
                                                earliest, stats))
        except BaseException:
            for done in groups:
                discard_cleaned(plan.log.directory, done.base_offset)
            raise
        stats.seconds = time.monotonic() - started
        return CleanResult(plan, groups, end, stats, min(earliest) if earliest else None)

    # -- the offset map ----------------------------------------------------------------
    def _build_offset_map(self, plan: CleanPlan, offset_map: OffsetMap,
                          stats: CleanerStats) -> int:
        """Map the dirty part; returns the offset the map covers up to (exclusive)."""
        for segment, fd in plan.sources:
            if segment.next_offset <= plan.first_dirty:
                continue
            for header, data in self._batches(plan, segment, fd):
                stats.map_bytes_read += header.size
                if header.last_offset < plan.first_dirty or header.is_control or \
                        header.is_transactional:
                    continue
                for record in self._records(header, data, plan):
                    if record.offset < plan.first_dirty or record.key is None:
                        continue
                    if not offset_map.put(record.key, record.offset):
                        logger.info("%s: offset map full at offset %d; cleaning up to there",
                                    plan.log.directory.name, record.offset)
                        return record.offset
                    stats.map_records += 1
        return plan.first_uncleanable

    # -- rewriting ---------------------------------------------------------------------
    def _groups(self, plan: CleanPlan, end: int) -> list[list[tuple[LogSegment, int]]]:
        """Consecutive sources below ``end`` that fit one segment together (Kafka's
        groupSegmentsBySize: segment.bytes, and 4-byte relative offsets)."""
        limit = plan.log.config.segment_bytes
        groups: list[list[tuple[LogSegment, int]]] = []
        size = 0
        for source in plan.sources:
            segment = source[0]
            if segment.base_offset >= end:
                break
            if groups and size + segment.size <= limit and \
                    segment.next_offset - 1 - groups[-1][0][0].base_offset <= _INT32_MAX:
                groups[-1].append(source)
                size += segment.size
            else:
                groups.append([source])
                size = segment.size
        return groups

    def _clean_group(self, plan: CleanPlan, group: list[tuple[LogSegment, int]],
                     offset_map: OffsetMap, horizon_new: int, earliest: list[int],
                     stats: CleanerStats) -> CleanedGroup:
        directory = plan.log.directory
        base = group[0][0].base_offset
        discard_cleaned(directory, base)  # a leftover of an earlier, dropped round
        cleaned = LogSegment(directory, base, plan.log.config, active=True,
                             created_ms=plan.now_ms, file_suffix=CLEANED_SUFFIX)
        pending: list[bytes] = []
        pending_batches: list[tuple[int, int, int]] = []
        pending_bytes = 0
        try:
            for segment, fd in group:
                for header, data in self._batches(plan, segment, fd):
                    stats.bytes_read += header.size
                    kept = self._filter(plan, header, data, offset_map, horizon_new,
                                        earliest, stats)
                    if kept is None:
                        continue
                    kept_header = read_header(kept)
                    pending.append(kept)
                    pending_batches.append((len(kept), kept_header.last_offset,
                                            kept_header.max_timestamp))
                    pending_bytes += len(kept)
                    if pending_bytes >= _WRITE_CHUNK or len(pending) >= _WRITE_BATCHES:
                        cleaned.append(pending, pending_bytes, pending_batches)
                        stats.bytes_written += pending_bytes
                        pending, pending_batches, pending_bytes = [], [], 0
            if pending:
                cleaned.append(pending, pending_bytes, pending_batches)
                stats.bytes_written += pending_bytes
            for segment, _ in group:  # aborted transactions stay known: their batches stay
                for entry in segment.txn_index.entries:
                    cleaned.txn_index.append(entry)
            cleaned.make_inactive()  # final time index entry, fsync, trimmed indexes
        finally:
            cleaned.close(clean=False)
        old = [segment for segment, _ in group]
        group_file(directory, base, CLEANED_SUFFIX).write_text(
            "".join(f"{segment.base_offset}\n" for segment in old))
        return CleanedGroup(old, base)

    def _filter(self, plan: CleanPlan, header: BatchHeader, data: bytes,
                offset_map: OffsetMap, horizon_new: int, earliest: list[int],
                stats: CleanerStats) -> bytes | None:
        """The batch as it stays: ``data`` itself, a re-encoded subset, or None."""
        if header.is_control or header.is_transactional:
            return data
        records = self._records(header, data, plan)
        stats.records_read += len(records)
        has_horizon = bool(header.attributes & ATTR_DELETE_HORIZON)
        kept: list[Record] = []
        tombstones = False
        for record in records:
            if record.key is None:
                continue  # a compacted topic has no use for it (Kafka drops it too)
            latest = offset_map.get(record.key)
            if latest is not None and record.offset < latest:
                continue
            if record.value is None:
                if has_horizon and header.base_timestamp <= plan.now_ms:
                    stats.tombstones_removed += 1
                    continue
                tombstones = True
            kept.append(record)
        stats.records_kept += len(kept)
        if not kept:
            return None
        if tombstones:
            earliest.append(header.base_timestamp if has_horizon else horizon_new)
        if len(kept) == len(records) and (has_horizon or not tombstones):
            return data
        if tombstones and not has_horizon:
            return rebuild_batch(header, kept, base_timestamp=horizon_new,
                                 attributes=header.attributes | ATTR_DELETE_HORIZON)
        # LogAppendTime keeps its timestamps in maxTimestamp; CreateTime deltas from the
        # old base stay valid only with that base (the horizon, if one is set).
        return rebuild_batch(header, kept,
                             base_timestamp=header.base_timestamp if has_horizon else None)

    # -- reading -----------------------------------------------------------------------
    def _batches(self, plan: CleanPlan, segment: LogSegment, fd: int
                 ) -> Iterable[tuple[BatchHeader, bytes]]:
        """Every whole batch of a source segment's file, read through the cleaner's own fd."""
        position = 0
        end = os.fstat(fd).st_size
        while position + HEADER_SIZE <= end:
            if self.pause is not None:
                self.pause()
            self._check(plan)
            head = os.pread(fd, HEADER_SIZE, position)
            header = read_header(head)
            if header.size < HEADER_SIZE or position + header.size > end:
                break
            data = os.pread(fd, header.size, position)
            yield header, data
            position += header.size

    def _records(self, header: BatchHeader, data: bytes, plan: CleanPlan) -> list[Record]:
        try:
            return parse_batch(data, check_crc=False,
                               max_decompressed_bytes=self.max_decompressed_bytes).records
        except CorruptBatchError as exc:
            raise StorageError(f"{plan.log.directory.name}: cannot clean the batch at offset "
                               f"{header.base_offset}: {exc}") from None

    @staticmethod
    def _check(plan: CleanPlan) -> None:
        if plan.aborted:
            raise CleanerAborted(f"cleaning {plan.log.directory.name} was aborted")


def clean_once(logs: Mapping[TopicPartition, Log], manager: CleanerManager, cleaner: Cleaner,
               now_ms: int, high_watermarks: Mapping[TopicPartition, int] | None = None
               ) -> CleanResult | None:
    """One whole round on the calling thread (tests, the stage demo, the benchmark)."""
    plan = manager.grab_filthiest(logs, now_ms, high_watermarks)
    if plan is None:
        return None
    try:
        result = cleaner.clean(plan)
        plan.log.replace_segments(result.groups, plan.generation)
    except BaseException:
        manager.done(None, plan)
        raise
    manager.done(result, plan)
    return result


__all__ = [
    "CLEANER_CHECKPOINT",
    "CleanPlan",
    "CleanResult",
    "Cleaner",
    "CleanerAborted",
    "CleanerManager",
    "CleanerStats",
    "OffsetMap",
    "clean_once",
]
