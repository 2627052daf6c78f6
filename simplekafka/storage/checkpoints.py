"""Kafka's small text checkpoint files, written atomically.

Every checkpoint has the same shape: a version line (0), a count line, then one
entry per line with space-separated fields::

    0
    2
    orders 0 1500
    orders 1 1499

``partition.metadata`` (per partition, KIP-516) is the one of another shape:
``version: 0`` and ``topic_id: <id>`` lines, the ID as Kafka prints it.

``leader-epoch-checkpoint`` (per partition) holds ``epoch start_offset``
entries; ``replication-offset-checkpoint`` (high watermarks),
``recovery-point-offset-checkpoint`` and ``log-start-offset-checkpoint`` (per
log directory) hold ``topic partition offset`` entries. A checkpoint is written
to a temporary file, fsynced and renamed over the old one, so a crash leaves
either the old or the new file, never half of one.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from simplekafka.protocol.topic_ids import topic_id_from_text, topic_id_text
from simplekafka.storage.errors import CheckpointError

VERSION = 0
TopicPartition = tuple[str, int]


def write_lines_atomically(path: Path, lines: Iterable[str], durable: bool = True,
                           final_newline: bool = True) -> None:
    """Write ``path`` via a temporary file and a rename; ``durable``: fsync both first.

    Without ``durable`` a crash of the process still leaves the old or the new
    file whole (the rename is atomic); only a power cut may lose the change.
    """
    tmp = path.with_name(path.name + ".tmp")
    data = "\n".join(lines).encode("utf-8")
    if final_newline and data:
        data += b"\n"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
        if durable:
            os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    if durable:
        fsync_directory(path.parent)


def fsync_directory(directory: Path) -> None:
    """Make a rename or a new file in ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_checkpoint(path: Path, entries: list[str], durable: bool = True) -> None:
    write_lines_atomically(path, [str(VERSION), str(len(entries)), *entries], durable)


def _read_checkpoint(path: Path, fields: int) -> list[list[str]]:
    """The entries of a checkpoint, split into ``fields`` strings each; [] if there is no file."""
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError) as exc:
        raise CheckpointError(f"cannot read checkpoint {path}: {exc}") from exc
    lines = text.splitlines()
    if len(lines) < 2:
        raise CheckpointError(f"{path}: expected a version line and a count line")
    if lines[0].strip() != str(VERSION):
        raise CheckpointError(f"{path}: unsupported checkpoint version {lines[0]!r}")
    try:
        count = int(lines[1])
    except ValueError:
        raise CheckpointError(f"{path} line 2: count {lines[1]!r} is not a number") from None
    entries = lines[2:]
    if count != len(entries):
        raise CheckpointError(f"{path}: count says {count} entries, found {len(entries)}")
    parsed = []
    for number, line in enumerate(entries, start=3):
        parts = line.split()
        if len(parts) != fields:
            raise CheckpointError(f"{path} line {number}: expected {fields} fields in {line!r}")
        parsed.append(parts)
    return parsed


def _integer(path: Path, text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise CheckpointError(f"{path}: {text!r} is not a number") from None


def write_offset_checkpoint(path: Path, offsets: Mapping[TopicPartition, int]) -> None:
    """Write ``topic partition offset`` entries (sorted, so the file reads well)."""
    entries = [f"{topic} {part} {offset}" for (topic, part), offset in sorted(offsets.items())]
    _write_checkpoint(path, entries)


def read_offset_checkpoint(path: Path) -> dict[TopicPartition, int]:
    """The ``(topic, partition) -> offset`` entries of a per-log-dir checkpoint ({} if absent)."""
    return {
        (topic, _integer(path, partition)): _integer(path, offset)
        for topic, partition, offset in _read_checkpoint(path, 3)
    }


def write_epoch_checkpoint(path: Path, entries: Iterable[tuple[int, int]],
                           durable: bool = True) -> None:
    """Write ``epoch start_offset`` entries of a leader-epoch-checkpoint."""
    _write_checkpoint(path, [f"{epoch} {offset}" for epoch, offset in entries], durable)


def read_epoch_checkpoint(path: Path) -> list[tuple[int, int]]:
    """The ``(epoch, start_offset)`` entries of a leader-epoch-checkpoint ([] if absent)."""
    return [
        (_integer(path, epoch), _integer(path, offset))
        for epoch, offset in _read_checkpoint(path, 2)
    ]


PARTITION_METADATA = "partition.metadata"


def write_partition_metadata(directory: Path, topic_id: bytes) -> None:
    """Write ``partition.metadata`` as Kafka writes it (temporary file, fsync, rename)."""
    write_lines_atomically(directory / PARTITION_METADATA,
                           [f"version: {VERSION}", f"topic_id: {topic_id_text(topic_id)}"],
                           final_newline=False)  # Kafka's file ends without one


def read_partition_metadata(directory: Path) -> bytes | None:
    """The topic ID in ``partition.metadata`` (None if there is no file); CheckpointError
    if the file is not Kafka's format."""
    path = directory / PARTITION_METADATA
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        return None
    fields = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            fields[key.strip()] = value.strip()
    if fields.get("version") != str(VERSION) or "topic_id" not in fields:
        raise CheckpointError(f"{path}: expected 'version: 0' and 'topic_id: <id>', got "
                              f"{text!r:.80}")
    try:
        return topic_id_from_text(fields["topic_id"])
    except ValueError as exc:
        raise CheckpointError(f"{path}: {exc}") from None
