"""The log a learner's stage 4 broker keeps: one partition in one stage 3 ``Segment``.

Stage 4's ``Broker`` stores each partition here. The bytes on disk are kept by
stage 3's ``Segment`` (append, lookup, read, recover); this class adds what a
partition needs on top: it assigns offsets (baseOffset and
partitionLeaderEpoch sit outside the CRC, so they are written in place), knows
its end, refuses a read past it, and checks each produced batch as Kafka's
broker does before it is appended: the CRC, and for an uncompressed batch that
its records, walked by their varint lengths, fill it exactly.

Two module attributes are where the learner's earlier stages run once they
pass (``plug.install``, called by ``simplekafka.learn.serve``): ``Segment``'s
methods (stage 3) and ``decode_varint`` (stage 1's, reading the records'
varints). Until then they are SimpleKafka's: the reference ``Segment`` and
the codec's own zigzag varint reader.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import NamedTuple

from simplekafka.learn.solutions.stage3_storage import Segment
from simplekafka.protocol.batch_header import (
    ATTR_COMPRESSION_MASK,
    CRC_START,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_V2,
    crc32c,
    read_header,
)
from simplekafka.protocol.errors import CorruptBatchError
from simplekafka.protocol.primitives import read_varlong
from simplekafka.storage.errors import OffsetOutOfRangeError

__all__ = ["AppendInfo", "OffsetOutOfRangeError", "Segment", "SegmentLog", "decode_varint"]

# A signed (zigzag) varint at data[pos]: (value, position after it). Stage 1's plug target.
decode_varint = read_varlong

INDEX_INTERVAL_BYTES = 4096
_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")


class AppendInfo(NamedTuple):
    base_offset: int  # the first offset the append assigned
    last_offset: int


def check_batch(batch: bytes) -> int:
    """The batch's size if it is one whole, valid RecordBatch v2; CorruptBatchError if not.

    An uncompressed batch's records are walked by their varint lengths: there
    must be recordsCount of them, ending exactly where the batch ends.
    """
    if len(batch) < HEADER_SIZE:
        raise CorruptBatchError(f"{len(batch)} bytes cannot hold a batch header")
    header = read_header(batch, 0)
    size = header.batch_length + LOG_OVERHEAD
    if header.magic != MAGIC_V2 or size < HEADER_SIZE or size > len(batch):
        raise CorruptBatchError(f"not a whole RecordBatch v2 (magic {header.magic}, "
                                f"batchLength {header.batch_length}, {len(batch)} bytes)")
    if crc32c(batch[CRC_START:size]) != header.crc:
        raise CorruptBatchError("the batch's CRC-32C does not match its bytes")
    if header.attributes & ATTR_COMPRESSION_MASK:
        return size  # compressed records: their varints are inside the compressed bytes
    position, count = HEADER_SIZE, 0
    while position < size:
        try:
            length, position = decode_varint(batch, position)
        except IndexError:
            raise CorruptBatchError(f"record {count}'s length is cut off") from None
        position += length
        count += 1
        if length <= 0 or position > size:
            raise CorruptBatchError(f"record {count - 1} does not fit the batch")
    if count != header.records_count:
        raise CorruptBatchError(f"recordsCount says {header.records_count}, "
                                f"the batch holds {count} records")
    return size


class SegmentLog:
    """One partition: one ``Segment`` with base offset 0 in ``directory``."""

    def __init__(self, directory: Path):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.segment = Segment(self.directory, 0, index_interval_bytes=INDEX_INTERVAL_BYTES)
        self.segment.recover()  # a crash may have left a torn batch at the end
        self.log_start_offset = 0
        self.log_end_offset = self._end_offset()

    @classmethod
    def open(cls, directory: Path) -> SegmentLog:
        return cls(directory)

    def _end_offset(self) -> int:
        data = self.segment.log_path.read_bytes()
        position, end = 0, 0
        while position + HEADER_SIZE <= len(data):
            header = read_header(data, position)
            end = header.base_offset + header.last_offset_delta + 1
            position += header.batch_length + LOG_OVERHEAD
        return end

    def append(self, records: bytes, leader_epoch: int = 0) -> AppendInfo:
        """Give the batches in ``records`` the next offsets and append them to the segment."""
        data = bytes(records)
        batches, position = [], 0
        while position < len(data):
            size = check_batch(data[position:])
            batches.append(bytearray(data[position : position + size]))
            position += size
        if not batches:
            raise CorruptBatchError("a produce request without a batch")
        first = self.log_end_offset
        for batch in batches:
            last_offset_delta = read_header(batch, 0).last_offset_delta
            _INT64.pack_into(batch, 0, self.log_end_offset)
            _INT32.pack_into(batch, 12, leader_epoch)
            self.segment.append(bytes(batch))
            self.log_end_offset += last_offset_delta + 1
        return AppendInfo(first, self.log_end_offset - 1)

    def read(self, offset: int, max_bytes: int) -> bytes:
        """Whole batches from the one holding ``offset``; b"" at the end; an error past it."""
        if not self.log_start_offset <= offset <= self.log_end_offset:
            raise OffsetOutOfRangeError(offset, self.log_start_offset, self.log_end_offset)
        if offset == self.log_end_offset:
            return b""
        return self.segment.read(offset, max_bytes)

    def close(self) -> None:
        """Nothing is held open: the segment opens its files for each call."""
