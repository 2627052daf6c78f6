"""One segment: a ``.log`` file of record batches plus its ``.index`` and ``.timeindex``.

A segment is named by its base offset, the offset of its first record, written
as 20 digits so that file names sort like offsets::

    00000000000000000000.log        batches, exactly as the leader stored them
    00000000000000000000.index      last offset of a batch -> its position in .log
    00000000000000000000.timeindex  max timestamp so far -> offset
    00000000000000000000.txnindex   aborted transactions whose markers are here (if any)

Only the last segment of a log (the active one) is appended to. The segment
never looks inside a batch beyond its 61-byte header.
"""

from __future__ import annotations

import bisect
import os
import struct
from array import array
from collections.abc import Iterator, Sequence
from pathlib import Path

from simplekafka.protocol.batch_header import (
    HEADER_SIZE,
    LOG_OVERHEAD,
    BatchHeader,
    batch_size_at,
    read_header,
    validate_batch,
)
from simplekafka.protocol.errors import CorruptBatchError
from simplekafka.storage.config import LogConfig
from simplekafka.storage.errors import StorageError
from simplekafka.storage.index import OffsetIndex, TimeIndex
from simplekafka.storage.region import FileRegion
from simplekafka.storage.txn_index import TXN_INDEX_SUFFIX, TransactionIndex

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
_SCAN_CHUNK = 64 * 1024
# Bounding a zero-copy region reads this much at a time (mostly one header per read).
_STEP_CHUNK = 4096
# baseOffset, batchLength (bytes 0-11) and lastOffsetDelta (bytes 23-26) of a batch header:
# all that stepping over a batch needs.
_OFFSET_AND_LENGTH = struct.Struct(">qi")
_LAST_OFFSET_DELTA = struct.Struct(">i")
_LAST_OFFSET_DELTA_AT = 23
_RECOVERY_CHUNK = 4 * 1024 * 1024
# How many of the latest appended batches a segment keeps the positions of (``batch_position``).
RECENT_BATCHES = 64
_INT32_MAX = (1 << 31) - 1

Buffer = bytes | bytearray | memoryview


def segment_file(directory: Path, base_offset: int, suffix: str) -> Path:
    """``<directory>/<20-digit base offset><suffix>``, Kafka's naming."""
    return directory / f"{base_offset:020d}{suffix}"


class _RecentBatches:
    """Last offset, position and size of a segment's latest appended batches, in order
    (between ``RECENT_BATCHES`` and twice that many; 24 bytes a batch in arrays)."""

    __slots__ = ("first", "lasts", "positions", "sizes")

    def __init__(self, first: int):
        self.first = first  # the lowest offset answered: the offset after the batch before
        self.lasts = array("q")
        self.positions = array("q")
        self.sizes = array("q")

    def trim(self) -> None:
        """Drop the older half, now and then: held below twice ``RECENT_BATCHES`` (a bulk
        append adds its batches first, then trims once)."""
        lasts = self.lasts
        while len(lasts) >= 2 * RECENT_BATCHES:
            self.first = lasts[RECENT_BATCHES - 1] + 1
            del lasts[:RECENT_BATCHES]
            del self.positions[:RECENT_BATCHES]
            del self.sizes[:RECENT_BATCHES]

    def find(self, offset: int) -> tuple[int, int] | None:
        """(position, size) of the first batch whose last offset is >= ``offset``, if held."""
        lasts = self.lasts
        if not lasts or not self.first <= offset <= lasts[-1]:
            return None
        at = bisect.bisect_left(lasts, offset)
        return self.positions[at], self.sizes[at]


class LogSegment:
    """The files of one segment and what we know about them in memory.

    ``next_offset`` is the offset after the last batch (the base offset when
    empty); ``max_timestamp`` the largest batch maxTimestamp seen (-1 if none).
    """

    def __init__(self, directory: Path, base_offset: int, config: LogConfig, active: bool,
                 created_ms: int, file_suffix: str = "", recovering: bool = False):
        self.directory = directory
        self.base_offset = base_offset
        self.config = config
        self.created_ms = created_ms
        # file_suffix: ".cleaned" for a segment the log cleaner is writing (cleaner.py)
        self.log_path = segment_file(directory, base_offset, LOG_SUFFIX + file_suffix)
        index_path = segment_file(directory, base_offset, INDEX_SUFFIX + file_suffix)
        time_index_path = segment_file(directory, base_offset, TIME_INDEX_SUFFIX + file_suffix)
        self.indexes_were_missing = not (index_path.exists() and time_index_path.exists())
        self._fd = os.open(self.log_path, os.O_RDWR | os.O_CREAT, 0o644)
        self.size = os.fstat(self._fd).st_size
        # ``recovering``: recover() follows and rebuilds the indexes, so an active segment's
        # old entries are not read here (after a crash its index files are preallocated,
        # and reading them cost two 10 MB reads per replica at start).
        writable = active and not recovering
        self.offset_index = OffsetIndex(index_path, base_offset, config.max_index_size, writable)
        self.time_index = TimeIndex(time_index_path, base_offset, config.max_index_size, writable)
        self.txn_index = TransactionIndex(
            segment_file(directory, base_offset, TXN_INDEX_SUFFIX + file_suffix))
        self.active = active
        self.next_offset = base_offset
        self.max_timestamp = -1
        self._bytes_since_index_entry = 0
        self.needs_sync = False  # rolled, its fsync left to a worker that has not run yet
        # The last batch of the file: (first offset it answers for, i.e. the previous
        # batch's last offset + 1; its last offset; its position; its header once read).
        # A consumer's fetch at the log end asks for exactly this batch when it is woken.
        self._last_batch: tuple[int, int, int, BatchHeader | None] | None = None
        # Its first HEADER_SIZE bytes as written, when the append had them in hand: the
        # woken fetch's header is then parsed from memory, not read back with a pread.
        self._last_head: bytes | None = None
        # The latest batches this process appended, made at the first append (a replica
        # never written carries none): see ``batch_position``.
        self._recent: _RecentBatches | None = None

    # -- loading -----------------------------------------------------------------
    def load(self) -> None:
        """Trust the files (clean shutdown or an already flushed segment); rebuild bad indexes.

        The index is checked the cheap way (whole entries, increasing, the last
        entry pointing at a batch with that last offset); the log tail after
        the last index entry is scanned for the next offset.
        """
        if self.indexes_were_missing and self.size > 0:
            self.recover()
            return
        if not (self.offset_index.looks_sane() and self.time_index.looks_sane()):
            self.recover()
            return
        last_entry = self.offset_index.last_offset
        if last_entry is not None:
            position = self.offset_index.entry(len(self.offset_index) - 1)[1]
            header = self._header_at(position)
            if header is None or header.last_offset != last_entry:
                self.recover()
                return
        self._load_tail_state()

    def _load_tail_state(self) -> None:
        """Set next offset, max timestamp and index bookkeeping from the index and the log tail."""
        start = 0
        if len(self.offset_index):
            start = self.offset_index.entry(len(self.offset_index) - 1)[1]
        last_time = self.time_index.last_entry
        self.max_timestamp = last_time[0] if last_time else -1
        self.next_offset = self.base_offset
        self._last_batch = None
        self._last_head = None
        self._recent = None
        known = start == 0  # from an index entry, the first batch's predecessor is unknown
        for position, header in self.iter_headers(start):
            if known:
                self._last_batch = (self.next_offset, header.last_offset, position, header)
            known = True
            self.next_offset = header.next_offset
            self.max_timestamp = max(self.max_timestamp, header.max_timestamp)
        self._bytes_since_index_entry = self.size - start

    def recover(self) -> int:
        """Re-validate every batch (bounds, magic, CRC, increasing offsets) and rebuild the indexes.

        Truncates the file at the first bad byte and returns how many bytes
        were cut. A batch whose base offset is below the previous batch's next
        offset counts as bad: stale or foreign bytes cannot sneak in. A gap is
        fine: the log cleaner leaves them where it removed whole batches.
        """
        was_active = self.active
        self.offset_index.make_writable(keep_entries=False)
        self.time_index.make_writable(keep_entries=False)
        self.offset_index.reset()
        self.time_index.reset()
        self.next_offset = self.base_offset
        self.max_timestamp = -1
        self._bytes_since_index_entry = 0
        self._last_batch = None
        self._recent = None
        position = 0
        buffer = b""
        buffer_start = 0
        while position < self.size:
            rel = position - buffer_start
            size = batch_size_at(buffer, rel)
            if size is None or rel + max(size, HEADER_SIZE) > len(buffer):
                remaining = self.size - position
                buffer = os.pread(self._fd, min(_RECOVERY_CHUNK, remaining), position)
                buffer_start, rel = position, 0
                size = batch_size_at(buffer, 0)
                if size is None or size < HEADER_SIZE or size > remaining:
                    break  # fewer than 12 bytes, a nonsense length, or torn at the end
                if size > len(buffer):
                    buffer = os.pread(self._fd, size, position)
            try:
                header = validate_batch(buffer, rel, check_crc=True)
            except CorruptBatchError:
                break
            if header.base_offset < self.next_offset or not self._fits_relative(header):
                break
            self._index_batches(position, [(header.size, header.last_offset,
                                            header.max_timestamp)])
            position += header.size
        truncated = self.size - position
        if truncated:
            os.ftruncate(self._fd, position)
            self.size = position
        self.txn_index.truncate_to(self.next_offset)
        if not was_active:
            self.offset_index.trim()
            self.time_index.trim()
        return truncated

    def _fits_relative(self, header: BatchHeader) -> bool:
        return header.last_offset - self.base_offset <= _INT32_MAX

    # -- appending ---------------------------------------------------------------
    def can_hold(self, batch_bytes: int, last_offset: int, pending: int = 0) -> bool:
        """Whether a batch fits segment.bytes, the indexes and 4-byte relative offsets.

        ``pending`` bytes go in before it in the same write. An empty segment
        takes its first batch whatever its size (batches over segment.bytes
        are refused before they get here).
        """
        size = self.size + pending
        if size == 0:
            return True  # rolling an empty segment would not help
        if size + batch_bytes > self.config.segment_bytes:
            return False
        if self.offset_index.is_full or self.time_index.is_full:
            return False
        return last_offset - self.base_offset <= _INT32_MAX and size + batch_bytes <= _INT32_MAX

    def append_batch(self, head: bytes, rest: Buffer, size: int, last_offset: int,
                     max_timestamp: int) -> None:
        """The one-batch case of :meth:`append`: a patched 16-byte head, then the rest as is."""
        position = self.size
        try:
            written = os.pwritev(self._fd, (head, rest), position)
        except OSError as exc:
            os.ftruncate(self._fd, position)
            raise StorageError(f"write to {self.log_path} failed: {exc}") from exc
        if written != size:
            os.ftruncate(self._fd, position)
            raise StorageError(f"short write to {self.log_path}: {written} of {size} bytes")
        self._index_batches(position, [(size, last_offset, max_timestamp)])
        self._last_head = head + rest[:HEADER_SIZE - len(head)] if len(head) < HEADER_SIZE \
            else head[:HEADER_SIZE]
        self.size = position + size

    def append(self, parts: Sequence[Buffer], total: int,
               batches: Sequence[tuple[int, int, int]]) -> None:
        """Write ``parts`` (``total`` bytes of batches whose offsets are final) and index them.

        ``batches`` gives (size, last offset, max timestamp) of each batch in
        order. All or nothing: on a short or failed write the file is cut back.
        """
        position = self.size
        try:
            written = os.pwritev(self._fd, parts, position)
        except OSError as exc:
            os.ftruncate(self._fd, position)
            raise StorageError(f"write to {self.log_path} failed: {exc}") from exc
        if written != total:
            os.ftruncate(self._fd, position)
            raise StorageError(f"short write to {self.log_path}: {written} of {total} bytes")
        self.size = self._index_batches(position, batches)

    def _index_batches(self, position: int, batches: Sequence[tuple[int, int, int]]) -> int:
        """Account for ``batches`` (size, last offset, max timestamp), back to back from
        ``position``: index entries every index.interval.bytes, the newest timestamp, the
        remembered positions; returns where the last one ends. One loop for them all: a
        follower appends a fetch answer's batches (15-20 at 10,000 records/s) in one call."""
        if not batches:
            return position
        recent = self._recent
        if recent is None:
            recent = self._recent = _RecentBatches(self.next_offset)
        lasts, positions, sizes = recent.lasts, recent.positions, recent.sizes
        interval = self.config.index_interval_bytes
        since = self._bytes_since_index_entry
        newest = self.max_timestamp
        base = self.next_offset  # of the batch in hand: the offset after the one before
        last_base = last_position = 0  # the last batch's, set by the loop
        for size, last_offset, max_timestamp in batches:
            if max_timestamp > newest:
                newest = max_timestamp
            if since > interval:
                if not self.offset_index.is_full:
                    self.offset_index.append(last_offset, position)
                    self.time_index.maybe_append(newest, last_offset)
                since = 0
            since += size
            lasts.append(last_offset)
            positions.append(position)
            sizes.append(size)
            last_base, last_position = base, position
            base = last_offset + 1
            position += size
        if len(lasts) >= 2 * RECENT_BATCHES:
            recent.trim()
        self._last_batch = (last_base, base - 1, last_position, None)
        self._last_head = None
        self.max_timestamp = newest
        self._bytes_since_index_entry = since
        self.next_offset = base
        return position

    # -- reading -----------------------------------------------------------------
    def _header_at(self, position: int) -> BatchHeader | None:
        data = os.pread(self._fd, HEADER_SIZE, position)
        return read_header(data) if len(data) == HEADER_SIZE else None

    def iter_headers(
        self, start: int = 0, end: int | None = None, chunk: int = _SCAN_CHUNK
    ) -> Iterator[tuple[int, BatchHeader]]:
        """(position, header) of each batch from ``start`` up to ``end``, reading in chunks."""
        end = self.size if end is None else end
        position = start
        buffer = b""
        buffer_start = start
        while position + HEADER_SIZE <= end:
            rel = position - buffer_start
            if rel + HEADER_SIZE > len(buffer):
                buffer = os.pread(self._fd, min(chunk, end - position), position)
                buffer_start, rel = position, 0
                if len(buffer) < HEADER_SIZE:
                    return
            header = read_header(buffer, rel)
            if header.batch_length < HEADER_SIZE - LOG_OVERHEAD:
                return
            yield position, header
            position += header.size

    def translate_offset(self, offset: int) -> tuple[int, BatchHeader] | None:
        """Position and header of the first batch whose last offset is >= ``offset``, or None.

        A consumer at the log end, woken by an append, asks for the batch just
        appended: that one is answered from memory (``_last_batch``), with no
        index search, no scan, and no read of its header from the file when this
        segment appended it. Otherwise a binary search in the index gives
        a nearby earlier batch and a short scan of headers (about
        index.interval.bytes) finds the one; the scan steps over batches
        reading three fields each and builds the header of the found batch only.
        """
        last = self._last_batch
        if last is not None and last[0] <= offset <= last[1]:
            header = last[3]
            if header is None:
                head = self._last_head
                header = read_header(head) if head is not None else self._header_at(last[2])
                if header is None:
                    return None
                self._last_batch = (last[0], last[1], last[2], header)
            return last[2], header
        _, position = self.offset_index.lookup(offset)
        # The batch is usually within index.interval.bytes of the entry: read about that much.
        chunk = max(min(_SCAN_CHUNK, 2 * self.config.index_interval_bytes + 2 * HEADER_SIZE),
                    1024)
        end = self.size
        step = _OFFSET_AND_LENGTH.unpack_from
        delta_of = _LAST_OFFSET_DELTA.unpack_from
        buffer = b""
        rel = 0
        while position + HEADER_SIZE <= end:
            if rel + HEADER_SIZE > len(buffer):
                buffer = os.pread(self._fd, min(chunk, end - position), position)
                rel = 0
                if len(buffer) < HEADER_SIZE:
                    return None
            base_offset, batch_length = step(buffer, rel)
            if batch_length < HEADER_SIZE - LOG_OVERHEAD:
                return None
            if base_offset + delta_of(buffer, rel + _LAST_OFFSET_DELTA_AT)[0] >= offset:
                return position, read_header(buffer, rel)
            rel += batch_length + LOG_OVERHEAD
            position += batch_length + LOG_OVERHEAD
        return None

    def batch_position(self, offset: int) -> tuple[int, int] | None:
        """Position and size of the first batch whose last offset is >= ``offset`` (what
        ``translate_offset`` finds), or None; for the log's reads.

        With acks=all the high watermark trails the log end by the batches appended
        while the followers fetch, so a consumer's read starts at one of the latest
        batches but not the last, and ends at another (the HW): two index searches, two
        preads and two header scans per woken fetch, on the leader's reactor between
        the HW advance and the consumer's answer. The latest ``RECENT_BATCHES`` batches
        are answered from memory instead; older offsets are searched as before.
        """
        recent = self._recent
        if recent is not None:
            found_recent = recent.find(offset)
            if found_recent is not None:
                return found_recent
        found = self.translate_offset(offset)
        return None if found is None else (found[0], found[1].size)

    def read(self, position: int, length: int) -> bytes:
        return os.pread(self._fd, length, position)

    def region(self, position: int, length: int, next_offset: int) -> FileRegion | None:
        """``length`` bytes from ``position`` as a :class:`FileRegion` on a descriptor of
        its own (None when no descriptor is to be had: the caller reads the bytes)."""
        try:
            fd = os.dup(self._fd)
        except OSError:
            return None
        return FileRegion(fd, position, length, next_offset)

    def whole_batches_end(self, start: int, end: int) -> int:
        """Where the last whole batch in ``[start, end)`` ends (``start``: none is whole).

        Steps from batch to batch reading only each one's offset and length
        (small reads), so a region can be bounded without reading its bytes."""
        position = start
        buffer = b""
        buffer_start = start
        while position + LOG_OVERHEAD <= end:
            rel = position - buffer_start
            if rel + LOG_OVERHEAD > len(buffer):
                buffer = os.pread(self._fd, min(_STEP_CHUNK, end - position), position)
                buffer_start, rel = position, 0
                if len(buffer) < LOG_OVERHEAD:
                    break
            size = _OFFSET_AND_LENGTH.unpack_from(buffer, rel)[1] + LOG_OVERHEAD
            if size < HEADER_SIZE or position + size > end:
                break
            position += size
        return position

    def base_offset_at(self, position: int) -> int:
        """The base offset of the batch at ``position``."""
        return _OFFSET_AND_LENGTH.unpack(os.pread(self._fd, LOG_OVERHEAD, position))[0]

    def find_by_timestamp(
        self, timestamp: int, start_offset: int
    ) -> tuple[int, BatchHeader] | None:
        """Position and header of the first batch at or after ``start_offset`` whose
        maxTimestamp is >= ``timestamp`` (the time index narrows the scan)."""
        if self.max_timestamp < timestamp:
            return None
        entry = self.time_index.last_before(timestamp)
        begin = max(start_offset, entry[1] + 1 if entry else self.base_offset)
        found = self.translate_offset(begin)
        if found is None:
            return None
        for position, header in self.iter_headers(found[0]):
            if header.max_timestamp >= timestamp:
                return position, header
        return None

    # -- changing ----------------------------------------------------------------
    def truncate_to(self, offset: int) -> int:
        """Cut the batch holding ``offset`` and everything after it; returns bytes removed."""
        found = self.translate_offset(offset)
        if found is None:
            return 0
        position, header = found
        removed = self.size - position
        os.ftruncate(self._fd, position)
        self.size = position
        self.offset_index.truncate_to(header.base_offset)
        self.time_index.truncate_to(header.base_offset)
        self.txn_index.truncate_to(header.base_offset)
        self._load_tail_state()
        return removed

    def make_active(self) -> None:
        """Reopen the indexes for appends (after a truncation made this the last segment)."""
        if not self.active:
            self.offset_index.make_writable()
            self.time_index.make_writable()
            self.active = True

    def make_inactive(self, sync: bool = True) -> None:
        """The segment is full: record its final max timestamp, trim the indexes, fsync
        (``sync=False``: the caller fsyncs later with ``sync_files``)."""
        if self.size:
            self.time_index.maybe_append(self.max_timestamp, self.next_offset - 1, final=True)
        if sync:
            self.flush()
        self.offset_index.trim(sync)
        self.time_index.trim(sync)
        self.active = False
        self.needs_sync = not sync

    def sync_files(self) -> None:
        """fsync the log and both index files of an inactive segment (may run on a worker
        thread: nothing writes to them any more)."""
        if self._fd < 0 or not self.needs_sync:
            return  # synced, or closed (deleted) meanwhile: nothing left to do
        self.needs_sync = False
        os.fsync(self._fd)
        self.offset_index.sync()
        self.time_index.sync()

    def flush(self) -> None:
        """fsync the log file and msync the indexes."""
        os.fsync(self._fd)
        self.offset_index.flush()
        self.time_index.flush()
        self.txn_index.flush()

    def close(self, clean: bool = True, sync: bool = True) -> None:
        """Close the files; a clean close of the active segment finishes and trims its indexes.

        ``sync=False``: the log file was fsynced since its last change (the log is flushed),
        so the active segment's close writes and trims its indexes without any fsync.
        """
        if self._fd < 0:
            return
        trim = clean and self.active
        if clean and self.needs_sync:
            self.sync_files()  # a rolled segment whose background fsync has not run yet
        if trim:
            if self.size:
                self.time_index.maybe_append(self.max_timestamp, self.next_offset - 1, final=True)
            if sync:
                self.flush()
        self.offset_index.close(trim=trim, sync=sync)
        self.time_index.close(trim=trim, sync=sync)
        os.close(self._fd)
        self._fd = -1

    def delete(self) -> None:
        """Close and remove the segment's files."""
        self.close(clean=False)
        for path in self.paths:
            path.unlink(missing_ok=True)
        self.txn_index.delete()

    @property
    def paths(self) -> tuple[Path, Path, Path]:
        """The .log, .index and .timeindex files."""
        return self.log_path, self.offset_index.path, self.time_index.path

    def __repr__(self) -> str:
        return (f"LogSegment(base_offset={self.base_offset}, next_offset={self.next_offset}, "
                f"size={self.size}, active={self.active})")
