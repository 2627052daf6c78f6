"""Sparse, memory-mapped indexes of one segment: offset -> file position, timestamp -> offset.

Both index files are arrays of fixed-size big-endian entries, sorted, so a
lookup is a binary search over the memory map. Offsets are stored relative to
the segment's base offset in 4 bytes, like Kafka:

- ``.index``: relative offset (int32) + position in the .log file (int32)
- ``.timeindex``: timestamp (int64) + relative offset (int32)

The active segment's index files are preallocated to ``max_index_size`` (so
appends never grow the file) and trimmed to their real length when the segment
is closed or rolled; after a crash the tail of a preallocated file is zeros,
which is why the active segment's indexes are rebuilt from the log.

No descriptor is kept open for an index, as in Kafka (whose index files are
mapped and then closed), so a replica costs one descriptor: its active
segment's ``.log``. The active segment's entries live in memory (a
``bytearray`` of the entries in use) and are written to the file
when the segment is flushed, rolled or closed; after a crash that file is not
trusted anyway (its indexes are rebuilt from the log). An older segment's
index is read only when first looked up: mapped where Python can map without
keeping a duplicate descriptor (``trackfd=False``, 3.13+), else read into
memory (about 0.5 % of the segment's size). Thousands of partitions then need
thousands of descriptors, not three or five times as many.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import struct
import sys
from collections.abc import Iterator
from pathlib import Path

_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")
# Python 3.13+ can map a file without keeping a duplicate of its descriptor.
_NO_DESCRIPTOR_KEPT: dict[str, bool] = {"trackfd": False} if sys.version_info >= (3, 13) else {}


class _MappedIndex:
    """The shared machinery: a file of fixed-size entries, mapped into memory."""

    _entry: struct.Struct

    def __init__(self, path: Path, base_offset: int, max_bytes: int, writable: bool):
        self.path = path
        self.base_offset = base_offset
        self._entry_size = self._entry.size
        self._max_bytes = max(max_bytes - max_bytes % self._entry_size, self._entry_size)
        self._max_entries = self._max_bytes // self._entry_size
        # The entries: a bytearray while writable, the file's bytes (or map) once read.
        self._mm: bytearray | mmap.mmap | bytes | None = None
        self._writable = False
        self._closed = False
        self._flushed = 0  # entries of the in-memory array already written to the file
        if not writable:
            # One stat, not an open, an fstat and a close: loading 10,000 replicas at a
            # restart opens every segment's two indexes. A missing file is created.
            try:
                file_size = os.stat(self.path).st_size
            except FileNotFoundError:
                os.close(os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644))
                file_size = 0
            self._sized(file_size)
            return
        with self._file() as fd:
            self._sized(os.fstat(fd).st_size)
            self._map_writable(fd)

    def _sized(self, file_size: int) -> None:
        self.misaligned = file_size % self._entry_size != 0
        self._count = file_size // self._entry_size

    @contextlib.contextmanager
    def _file(self) -> Iterator[int]:
        """The index file, open only while it is resized or mapped."""
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            yield fd
        finally:
            os.close(fd)

    # -- sizing ----------------------------------------------------------------
    @property
    def max_entries(self) -> int:
        return self._max_entries

    def __len__(self) -> int:
        return self._count

    @property
    def is_full(self) -> bool:
        return self._count >= self._max_entries

    def make_writable(self, keep_entries: bool = True) -> None:
        """Preallocate the file to its maximum size; appends go to memory (the active segment).

        ``keep_entries=False`` starts empty without reading the file: recovery rebuilds the
        entries anyway, and after a crash the file is preallocated (10 MB of mostly zeros).
        """
        with self._file() as fd:
            self._map_writable(fd, keep_entries)

    def _map_writable(self, fd: int, keep_entries: bool = True) -> None:
        self._unmap()
        self._count = min(self._count, self.max_entries) if keep_entries else 0
        entries = os.pread(fd, self._count * self._entry_size, 0) if self._count else b""
        os.ftruncate(fd, self._max_bytes)
        self._mm = bytearray(entries)  # grows with appends: memory for entries in use only
        self._flushed = self._count
        self._writable = True

    def trim(self, sync: bool = True) -> None:
        """Write and cut the file to the entries in use; read-only from now (segment
        inactive). ``sync=False`` leaves the fsync to a later ``sync()``."""
        with self._file() as fd:
            if self._writable:
                self._write_entries(fd)
                if sync:
                    os.fsync(fd)
            os.ftruncate(fd, self._count * self._entry_size)
        self._unmap()
        self._writable = False

    def sync(self) -> None:
        """fsync the index file (an inactive segment's, after ``trim(sync=False)``)."""
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return  # deleted meanwhile
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def _write_entries(self, fd: int) -> None:
        """Write the in-memory entries the file does not have yet."""
        start = min(self._flushed, self._count) * self._entry_size
        end = self._count * self._entry_size
        if end > start and self._mm is not None:
            os.pwrite(fd, memoryview(self._mm)[start:end], start)
        self._flushed = self._count

    def _load_read_only(self) -> mmap.mmap | bytes:
        """An inactive index's entries, read at first use (see the module docstring)."""
        length = self._count * self._entry_size
        if not length:
            return b""
        with self._file() as fd:
            if _NO_DESCRIPTOR_KEPT:
                self._mm = mmap.mmap(fd, length, access=mmap.ACCESS_READ, **_NO_DESCRIPTOR_KEPT)
            else:
                self._mm = os.pread(fd, length, 0)
            return self._mm

    def _unmap(self) -> None:
        if isinstance(self._mm, mmap.mmap):
            self._mm.close()
        self._mm = None

    # -- entries ---------------------------------------------------------------
    def _entries_buffer(self) -> bytearray | mmap.mmap | bytes:
        return self._mm if self._mm is not None else self._load_read_only()

    def _raw(self, index: int) -> tuple[int, int]:
        return self._entry.unpack_from(self._entries_buffer(), index * self._entry_size)

    def _append_raw(self, first: int, second: int) -> None:
        mm = self._mm
        if not self._writable or not isinstance(mm, bytearray):
            raise ValueError(f"{self.path.name} is not open for appends")
        mm += self._entry.pack(first, second)
        self._count += 1

    def _largest_at_most(self, column: int, target: int) -> int:
        """Position of the last entry whose ``column`` is <= target, or -1 (binary search)."""
        if not self._count:
            return -1
        mm = self._entries_buffer()
        unpack, size = self._entry.unpack_from, self._entry_size
        lo, hi, found = 0, self._count - 1, -1
        while lo <= hi:
            mid = (lo + hi) // 2
            if unpack(mm, mid * size)[column] <= target:
                found, lo = mid, mid + 1
            else:
                hi = mid - 1
        return found

    def reset(self) -> None:
        """Forget every entry (before a rebuild)."""
        self._count = 0
        self._flushed = 0
        if self._writable and isinstance(self._mm, bytearray):
            del self._mm[:]

    def _truncate_entries(self, count: int) -> None:
        self._count = min(self._count, count)
        self._flushed = min(self._flushed, self._count)
        if self._writable and isinstance(self._mm, bytearray):
            del self._mm[self._count * self._entry_size:]
        else:
            self.trim()

    # -- lifetime --------------------------------------------------------------
    def flush(self) -> None:
        """Write the new entries of the active segment's index to its file."""
        if self._writable and self._flushed != self._count:
            with self._file() as fd:
                self._write_entries(fd)

    def close(self, trim: bool = True, sync: bool = True) -> None:
        """Close the map and file; ``trim=False`` leaves a preallocated file as a crash would
        (``sync=False``: the trimmed file is not fsynced)."""
        if self._closed:
            return
        if trim:
            self.trim(sync)
        elif self._writable:
            self.flush()  # written, the file left preallocated
        self._unmap()
        self._closed = True


class OffsetIndex(_MappedIndex):
    """``.index``: (relative offset, position) entries, offsets and positions increasing.

    The offset stored is the LAST offset of the batch that starts at the
    position, as in Kafka. A lookup for offset ``t`` returns the last entry
    with an offset <= t; the batch holding ``t`` starts at or after it.
    """

    _entry = _OFFSET_ENTRY

    def append(self, offset: int, position: int) -> None:
        self._append_raw(offset - self.base_offset, position)

    def entry(self, index: int) -> tuple[int, int]:
        """The ``index``-th entry as (absolute offset, position)."""
        relative, position = self._raw(index)
        return self.base_offset + relative, position

    def entries(self) -> list[tuple[int, int]]:
        return [self.entry(i) for i in range(self._count)]

    @property
    def last_offset(self) -> int | None:
        return self.entry(self._count - 1)[0] if self._count else None

    def lookup(self, offset: int) -> tuple[int, int]:
        """(offset, position) of the last entry at or below ``offset``; (base, 0) if none."""
        found = self._largest_at_most(0, offset - self.base_offset)
        return self.entry(found) if found >= 0 else (self.base_offset, 0)

    def truncate_to(self, offset: int) -> None:
        """Drop entries for offsets >= ``offset`` (their batches were cut from the log)."""
        self._truncate_entries(self._largest_at_most(0, offset - self.base_offset - 1) + 1)

    def looks_sane(self) -> bool:
        """Cheap checks like Kafka's: whole entries, offsets and positions increasing at the end."""
        if self.misaligned:
            return False
        if self._count and min(self._raw(0)) < 0:
            return False
        if self._count >= 2:
            (o1, p1), (o2, p2) = self._raw(self._count - 2), self._raw(self._count - 1)
            if o2 <= o1 or p2 <= p1:
                return False
        return True


class TimeIndex(_MappedIndex):
    """``.timeindex``: (max timestamp so far, relative offset) entries, both increasing.

    An entry ``(T, o)`` promises: every record at or before offset ``o`` in
    this segment has a timestamp <= T. One slot is kept free for the final
    entry written when the segment becomes inactive.
    """

    _entry = _TIME_ENTRY
    _cached_count = -1
    _cached_last: tuple[int, int] | None = None

    @property
    def is_full(self) -> bool:
        return self._count >= self._max_entries - 1

    def entry(self, index: int) -> tuple[int, int]:
        """The ``index``-th entry as (timestamp, absolute offset)."""
        timestamp, relative = self._raw(index)
        return timestamp, self.base_offset + relative

    def entries(self) -> list[tuple[int, int]]:
        return [self.entry(i) for i in range(self._count)]

    @property
    def last_entry(self) -> tuple[int, int] | None:
        return self.entry(self._count - 1) if self._count else None

    def maybe_append(self, timestamp: int, offset: int, final: bool = False) -> None:
        """Add an entry if it moves the timestamp forward (``final`` may use the reserved slot)."""
        if self._cached_count != self._count:  # the last entry, without touching the map
            self._cached_last = self.last_entry
            self._cached_count = self._count
        last = self._cached_last
        if last is not None and (timestamp <= last[0] or offset <= last[1]):
            return
        if self._count >= self.max_entries or (self.is_full and not final):
            return
        self._append_raw(timestamp, offset - self.base_offset)
        self._cached_last, self._cached_count = (timestamp, offset), self._count

    def last_before(self, timestamp: int) -> tuple[int, int] | None:
        """The last entry whose timestamp is < ``timestamp``, or None."""
        found = self._largest_at_most(0, timestamp - 1)
        return self.entry(found) if found >= 0 else None

    def truncate_to(self, offset: int) -> None:
        """Drop entries for offsets >= ``offset``."""
        self._truncate_entries(self._largest_at_most(1, offset - self.base_offset - 1) + 1)

    def looks_sane(self) -> bool:
        if self.misaligned:
            return False
        if self._count >= 2:
            (t1, o1), (t2, o2) = self._raw(self._count - 2), self._raw(self._count - 1)
            if t2 <= t1 or o2 <= o1:
                return False
        return True


def read_index_entries(
    path: Path, base_offset: int, time_index: bool = False
) -> list[tuple[int, int]]:
    """The entries of an index file, read without mapping or changing it (for dump tools).

    Offsets come back absolute: (offset, position) for ``.index``, (timestamp,
    offset) for ``.timeindex``. A partial trailing entry is ignored, and so is
    the zero-filled tail of a preallocated file (an active segment, or one left
    by a crash): an entry of all zeros after the first is no entry.
    """
    entry = _TIME_ENTRY if time_index else _OFFSET_ENTRY
    data = path.read_bytes()
    entries = []
    for number in range(len(data) // entry.size):
        first, second = entry.unpack_from(data, number * entry.size)
        if number and first == 0 and second == 0:
            break
        entries.append((first, base_offset + second) if time_index
                       else (base_offset + first, second))
    return entries
