"""Producer state snapshots: ``<offset>.snapshot`` files, so a restart need not replay everything.

A partition's producer state (each producer's epoch and last batch, and the
first offset of its open transaction) is rebuilt from the log at start-up. A
snapshot is that state as of an offset; replay then starts there instead of
at a fixed distance from the end, which would miss a transaction opened
before that distance. The format is Kafka's (``ProducerStateManager``,
version 1)::

    int16 version (1)   uint32 crc (CRC-32C of everything after it)
    int32 count, then per producer:
        int64 producerId  int16 epoch  int32 lastSequence  int64 lastOffset
        int32 offsetDelta  int64 timestamp  int32 coordinatorEpoch
        int64 currentTxnFirstOffset (-1: no open transaction)

Files are written whole to a ``.tmp`` name and renamed; one that does not
check out (torn, foreign) is ignored, and an older one or the bounded replay
is used instead.
"""

from __future__ import annotations

import logging
import os
import re
import struct
from pathlib import Path
from typing import NamedTuple

import crc32c as _crc32c

logger = logging.getLogger(__name__)

SNAPSHOT_SUFFIX = ".snapshot"
VERSION = 1
SNAPSHOTS_KEPT = 2
_NAME = re.compile(r"^(\d{20})\.snapshot$")
_HEAD = struct.Struct(">hI")
_COUNT = struct.Struct(">i")
_ENTRY = struct.Struct(">qhiqiqiq")


class SnapshotEntry(NamedTuple):
    """One producer in a snapshot (Kafka's field names)."""

    producer_id: int
    epoch: int
    last_sequence: int  # -1: no batch remembered
    last_offset: int
    offset_delta: int  # last offset - first offset of the last batch
    timestamp: int
    coordinator_epoch: int
    current_txn_first_offset: int  # -1: no open transaction


def snapshot_path(directory: Path, offset: int) -> Path:
    return directory / f"{offset:020d}{SNAPSHOT_SUFFIX}"


def snapshot_offsets(directory: Path) -> list[int]:
    """The offsets of the snapshot files in ``directory``, ascending."""
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    return snapshot_offsets_in(names)


def snapshot_offsets_in(names: list[str]) -> list[int]:
    """The offsets of the snapshot files among ``names`` (a directory's listing), ascending."""
    return sorted(int(match[1]) for match in map(_NAME.match, names) if match)


def encode_snapshot(entries: list[SnapshotEntry]) -> bytes:
    body = _COUNT.pack(len(entries)) + b"".join(_ENTRY.pack(*entry) for entry in entries)
    return _HEAD.pack(VERSION, _crc32c.crc32c(body)) + body


def decode_snapshot(data: bytes) -> list[SnapshotEntry]:
    """The entries of a snapshot; ValueError when it does not check out."""
    if len(data) < _HEAD.size + _COUNT.size:
        raise ValueError(f"snapshot of {len(data)} bytes is too short")
    version, crc = _HEAD.unpack_from(data)
    if version != VERSION:
        raise ValueError(f"snapshot version {version}, only {VERSION} is known")
    body = memoryview(data)[_HEAD.size:]
    if _crc32c.crc32c(body) != crc:
        raise ValueError("snapshot CRC mismatch")
    (count,) = _COUNT.unpack_from(body)
    if count < 0 or len(body) != _COUNT.size + count * _ENTRY.size:
        raise ValueError(f"snapshot claims {count} producers in {len(body)} bytes")
    return [SnapshotEntry(*_ENTRY.unpack_from(body, _COUNT.size + i * _ENTRY.size))
            for i in range(count)]


def write_snapshot(directory: Path, offset: int, entries: list[SnapshotEntry]) -> None:
    """Write the snapshot at ``offset`` (atomically) and keep only the newest few."""
    path = snapshot_path(directory, offset)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_bytes(encode_snapshot(entries))
    os.replace(temporary, path)
    for old in snapshot_offsets(directory)[:-SNAPSHOTS_KEPT]:
        snapshot_path(directory, old).unlink(missing_ok=True)


def latest_snapshot(directory: Path, at_most: int, at_least: int = 0,
                    offsets: list[int] | None = None
                    ) -> tuple[int, list[SnapshotEntry]] | None:
    """The newest readable snapshot with ``at_least <= offset <= at_most``, or None.

    ``offsets``: the directory's snapshot offsets if the caller has listed them already.
    """
    for offset in reversed(snapshot_offsets(directory) if offsets is None else offsets):
        if not at_least <= offset <= at_most:
            continue
        try:
            return offset, decode_snapshot(snapshot_path(directory, offset).read_bytes())
        except (OSError, ValueError) as exc:
            logger.warning("%s: snapshot at %d ignored (%s)", directory, offset, exc)
    return None


def delete_snapshots_above(directory: Path, offset: int,
                           offsets: list[int] | None = None) -> list[int]:
    """Drop snapshots of offsets the log no longer reaches (a truncated tail); returns the
    offsets kept. ``offsets``: the directory's snapshot offsets if already listed."""
    kept = []
    for found in snapshot_offsets(directory) if offsets is None else offsets:
        if found > offset:
            snapshot_path(directory, found).unlink(missing_ok=True)
        else:
            kept.append(found)
    return kept
