"""Stage 3 exercises: one log segment on disk, its sparse offset index, and recovery.

Read stages/stage3_storage/README.md first. A segment is two files named after
its base offset: ``00000000000000000100.log`` holds record batches back to
back, exactly as they came (offsets already assigned);
``00000000000000000100.index`` holds 8-byte entries: int32 offset relative to
the base offset, int32 byte position in the .log, both big-endian. The index is
sparse: Kafka adds an entry only once more than ``index_interval_bytes`` were
written since the last one, so a lookup is a binary search in the index, then
a short scan of batch headers. ``simplekafka learn check 3`` drives this class
step by step and prints the steps when an answer is wrong.
"""

from __future__ import annotations

import bisect
import os
import struct
from pathlib import Path

from simplekafka.protocol.batch_header import (  # the 61-byte header, given
    CRC_START,
    HEADER_SIZE,
    LOG_OVERHEAD,
    crc32c,
    read_header,
)

INDEX_ENTRY = struct.Struct(">ii")


class Segment:
    """A .log file of whole batches and its sparse .index, in ``directory``."""

    def __init__(self, directory: Path, base_offset: int, index_interval_bytes: int = 4096):
        self.directory = Path(directory)
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        name = f"{base_offset:020d}"
        self.log_path = self.directory / f"{name}.log"
        self.index_path = self.directory / f"{name}.index"
        self.log_path.touch()
        self.index_path.touch()
        self.entries = self.index_entries()
        last_entry_position = self.entries[-1][1] if self.entries else 0
        self.bytes_since_index_entry = self.log_path.stat().st_size - last_entry_position

    # -- exercise 1: append and look up -----------------------------------------------

    def append(self, batch: bytes) -> int:
        """Write one batch at the end of the .log; return the position it starts at.

        Before writing, if more than ``index_interval_bytes`` were written since
        the last index entry, add the entry (this batch's last offset relative
        to the base offset, this batch's position) and start counting again;
        then count this batch's bytes. (So the first batch gets no entry.)
        """
        position = self.log_path.stat().st_size
        header = read_header(batch, 0)
        if self.bytes_since_index_entry > self.index_interval_bytes:
            entry = (header.base_offset + header.last_offset_delta - self.base_offset, position)
            with open(self.index_path, "ab") as index:
                index.write(INDEX_ENTRY.pack(*entry))
            self.entries.append(entry)
            self.bytes_since_index_entry = 0
        with open(self.log_path, "ab") as log:
            log.write(batch)
        self.bytes_since_index_entry += len(batch)
        return position

    def index_entries(self) -> list[tuple[int, int]]:
        """The .index file's entries, as (relative offset, position) pairs."""
        data = self.index_path.read_bytes()
        return [INDEX_ENTRY.unpack_from(data, at) for at in range(0, len(data), INDEX_ENTRY.size)]

    def lookup(self, offset: int) -> int | None:
        """Position of the batch holding ``offset``, or None when the segment ends before it.

        Binary search the index for the last entry whose offset is at most
        ``offset`` (start at position 0 when there is none), then walk batch
        headers from there: a batch holds offsets base_offset to
        base_offset + last_offset_delta; the next starts batch_length + 12
        bytes further on.
        """
        relative = offset - self.base_offset
        keys = [entry[0] for entry in self.entries]
        at = bisect.bisect_right(keys, relative) - 1
        position = self.entries[at][1] if at >= 0 else 0
        with open(self.log_path, "rb") as log:
            size = os.fstat(log.fileno()).st_size
            while position + HEADER_SIZE <= size:
                log.seek(position)
                header = read_header(log.read(HEADER_SIZE), 0)
                if header.base_offset + header.last_offset_delta >= offset:
                    return position
                position += header.batch_length + LOG_OVERHEAD
        return None

    def read(self, offset: int, max_bytes: int) -> bytes:
        """Whole batches from the one holding ``offset``: up to ``max_bytes``, but at least one."""
        position = self.lookup(offset)
        if position is None:
            return b""
        data = self.log_path.read_bytes()
        end = position
        while end + HEADER_SIZE <= len(data):
            size = read_header(data, end).batch_length + LOG_OVERHEAD
            if end + size - position > max_bytes and end > position:
                break
            end += size
        return data[position:end]

    # -- exercise 2: recovery of a torn tail ------------------------------------------

    def recover(self) -> int:
        """After a crash: keep the valid batches, cut the rest off, rebuild the index.

        A batch is valid when its whole header and body are in the file and
        the CRC-32C of bytes 21 (attributes) to its end equals the header's
        crc. Truncate the .log at the first batch that is not; rewrite the
        .index by the rule of :meth:`append`. Return how many bytes were cut.
        """
        data = self.log_path.read_bytes()
        position = 0
        entries = []
        since_entry = 0
        while position + HEADER_SIZE <= len(data):
            header = read_header(data, position)
            end = position + header.batch_length + LOG_OVERHEAD
            if (end < position + HEADER_SIZE or end > len(data)
                    or crc32c(data[position + CRC_START : end]) != header.crc):
                break
            if since_entry > self.index_interval_bytes:
                entries.append((header.base_offset + header.last_offset_delta - self.base_offset,
                                position))
                since_entry = 0
            since_entry += end - position
            position = end
        with open(self.log_path, "r+b") as log:
            log.truncate(position)
        self.index_path.write_bytes(b"".join(INDEX_ENTRY.pack(*entry) for entry in entries))
        self.entries = entries
        self.bytes_since_index_entry = since_entry
        return len(data) - position
