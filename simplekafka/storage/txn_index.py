"""The aborted-transactions index: one ``.txnindex`` file next to a segment's ``.log``.

A read_committed consumer must know which transactions in the range it
fetched were aborted, so that it can drop their records. The leader answers
that from this index rather than from the log: each aborted transaction is one
34-byte entry, in Kafka's format (``TransactionIndex``/``AbortedTxn``)::

    int16 version (0)   int64 producerId   int64 firstOffset   int64 lastOffset
    int64 lastStableOffset

``lastOffset`` is the offset of the abort marker, and the entry lives in the
index of the segment that holds the marker. ``lastStableOffset`` is the LSO
just after the abort (the first offset of the oldest other open transaction,
else the marker's offset + 1): a search that reaches an entry whose LSO is at
or past its upper bound can stop, since no later entry can start below it.
As in Kafka the file is created on the first entry: most segments have none.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import NamedTuple

TXN_INDEX_SUFFIX = ".txnindex"
_ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = _ENTRY.size  # 34
VERSION = 0


class AbortedTxn(NamedTuple):
    """One aborted transaction of one producer on one partition."""

    producer_id: int
    first_offset: int
    last_offset: int  # the abort marker's offset
    last_stable_offset: int

    def to_bytes(self) -> bytes:
        return _ENTRY.pack(VERSION, *self)


class TransactionIndex:
    """The aborted transactions whose markers are in one segment, oldest first."""

    def __init__(self, path: Path):
        self.path = path
        self._entries: list[AbortedTxn] = []
        if path.exists():
            self._entries = _read_entries(path)
            if len(self._entries) * ENTRY_SIZE != path.stat().st_size:
                with open(path, "r+b") as file:  # a torn or foreign tail is cut off
                    file.truncate(len(self._entries) * ENTRY_SIZE)

    @staticmethod
    def read_only(path: Path) -> list[AbortedTxn]:
        """The whole entries of a file, changing nothing (``dump-log``)."""
        return _read_entries(path)

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def entries(self) -> tuple[AbortedTxn, ...]:
        return tuple(self._entries)

    def append(self, entry: AbortedTxn) -> None:
        """Add an entry, unless its marker is already indexed (a replay after a restart
        meets the markers again); one older than the last is put in order."""
        if any(e.producer_id == entry.producer_id and e.last_offset == entry.last_offset
               for e in self._entries):
            return
        if self._entries and entry.last_offset < self._entries[-1].last_offset:
            self._entries = sorted([*self._entries, entry], key=lambda e: e.last_offset)
            self.path.write_bytes(b"".join(e.to_bytes() for e in self._entries))
            return
        with open(self.path, "ab") as file:
            file.write(entry.to_bytes())
        self._entries.append(entry)

    def collect(self, fetch_offset: int, upper_bound: int) -> tuple[list[AbortedTxn], bool]:
        """Entries overlapping [fetch_offset, upper_bound), and whether the search may stop."""
        found = []
        for entry in self._entries:
            if entry.last_offset >= fetch_offset and entry.first_offset < upper_bound:
                found.append(entry)
            if entry.last_stable_offset >= upper_bound:
                return found, True
        return found, False

    def truncate_to(self, offset: int) -> None:
        """Forget the aborts whose markers are at or after ``offset`` (a truncated log tail)."""
        keep = [entry for entry in self._entries if entry.last_offset < offset]
        if len(keep) == len(self._entries):
            return
        self._entries = keep
        if not keep:
            self.path.unlink(missing_ok=True)
            return
        with open(self.path, "r+b") as file:
            file.truncate(len(keep) * ENTRY_SIZE)

    def flush(self) -> None:
        if self.path.exists():
            fd = os.open(self.path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def delete(self) -> None:
        self._entries = []
        self.path.unlink(missing_ok=True)


def _read_entries(path: Path) -> list[AbortedTxn]:
    """The whole entries of a known version, up to the first that is not one."""
    data = path.read_bytes()
    entries = []
    for pos in range(0, len(data) - ENTRY_SIZE + 1, ENTRY_SIZE):
        version, *fields = _ENTRY.unpack_from(data, pos)
        if version != VERSION:
            break
        entries.append(AbortedTxn(*fields))
    return entries
