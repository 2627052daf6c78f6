"""``simplekafka dump-log``: what is in a partition directory, batch by batch and entry by entry.

The SimpleKafka counterpart of Kafka's ``kafka-dump-log.sh``: give it segment
files (``.log``, ``.index``, ``.timeindex``, ``.txnindex``), checkpoint files or whole
partition directories. Every batch is checked (length, magic, CRC, offsets
following each other) and every index entry is checked against the log it
points into. Files are only read, never repaired. Exit status 0 when all is
well, 1 when something is damaged, 2 for a mistake on the command line.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

from simplekafka.cli import CliError
from simplekafka.protocol.batch_header import HEADER_SIZE, batch_spans, validate_batch
from simplekafka.protocol.errors import ProtocolError
from simplekafka.protocol.records import parse_batch, parse_control_marker
from simplekafka.storage.index import read_index_entries
from simplekafka.storage.txn_index import TransactionIndex

_SEGMENT_FILE = re.compile(r"^(\d{20})\.(log|index|timeindex|txnindex)$")
_KINDS = ("log", "index", "timeindex", "txnindex")
_CHECKPOINTS = (
    "leader-epoch-checkpoint",
    "replication-offset-checkpoint",
    "recovery-point-offset-checkpoint",
    "log-start-offset-checkpoint",
)
_CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "dump-log",
        help="list the batches, index entries and checkpoints of log files (read-only)",
        description=__doc__.splitlines()[0],
    )
    parser.add_argument("paths", nargs="+", metavar="PATH",
                        help="segment or checkpoint files, or partition / log directories")
    parser.add_argument("--records", action="store_true",
                        help="also decode and print every record (key, value, timestamp)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    files: list[Path] = []
    for name in args.paths:
        path = Path(name)
        if path.is_dir():
            files.extend(sorted((p for p in path.rglob("*") if p.is_file() and _dumpable(p)),
                                key=_reading_order))
        elif path.is_file():
            if not _dumpable(path):
                raise CliError(f"{path}: not a segment (.log/.index/.timeindex/.txnindex) "
                               "or checkpoint file")
            files.append(path)
        else:
            raise CliError(f"{path}: no such file or directory")
    if not files:
        raise CliError("no segment or checkpoint files found in " + ", ".join(args.paths))
    healthy = True
    for path in files:
        try:
            healthy &= _dump(path, args.records)
        except BrokenPipeError:  # the reader (``| head``) has seen enough
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 0
        except OSError as exc:
            raise CliError(f"cannot read {path}: {exc}") from exc
    return 0 if healthy else 1


def _reading_order(path: Path) -> tuple:
    """Per directory: each segment's .log, .index, .timeindex in offset order, then checkpoints."""
    match = _SEGMENT_FILE.match(path.name)
    if match is None:
        return (str(path.parent), 1, 0, 0, path.name)
    return (str(path.parent), 0, int(match[1]), _KINDS.index(match[2]), "")


def _dumpable(path: Path) -> bool:
    return bool(_SEGMENT_FILE.match(path.name)) or path.name in _CHECKPOINTS


def _dump(path: Path, records: bool) -> bool:
    match = _SEGMENT_FILE.match(path.name)
    if match is None:
        print(f"Dumping {path}")
        for line in path.read_text("utf-8", errors="replace").splitlines():
            print(f"  {line}")
        return True
    base_offset, kind = int(match[1]), match[2]
    if kind == "log":
        return _dump_log(path, base_offset, records)
    if kind == "txnindex":
        return _dump_txn_index(path)
    return _dump_index(path, base_offset, time_index=kind == "timeindex")


def _dump_log(path: Path, base_offset: int, records: bool) -> bool:
    data = path.read_bytes()
    print(f"Dumping {path} ({len(data)} bytes, base offset {base_offset})")
    position, expected, batches = 0, base_offset, 0
    for position, size in batch_spans(data):
        try:
            if size < HEADER_SIZE:
                raise ProtocolError(f"{len(data) - position} bytes that are not a batch")
            header = validate_batch(data, position)
        except ProtocolError as exc:
            return _damaged(data, position, exc)
        gap = "" if header.base_offset == expected else f"  (EXPECTED offset {expected})"
        print(f"  position {position}: offsets {header.base_offset}..{header.last_offset} "
              f"({header.records_count} records), {header.size} bytes, "
              f"epoch {header.partition_leader_epoch}, crc 0x{header.crc:08x} ok, "
              f"max timestamp {header.max_timestamp}, "
              f"codec {_CODECS.get(header.compression, header.compression)}"
              f"{_transaction_note(data, position, header)}{gap}")
        if gap:
            return False
        if records:
            _print_records(data, position)
        expected = header.next_offset
        position += header.size
        batches += 1
    if position < len(data):
        return _damaged(data, position,
                        ProtocolError(f"{len(data) - position} bytes that are not a batch"))
    print(f"  {batches} batches, offsets {base_offset}..{expected - 1}, all valid")
    return True


def _transaction_note(data: bytes, position: int, header) -> str:
    """What a batch is in a transaction: ``transactional`` data, or the marker it carries."""
    if header.is_control:
        try:
            marker = parse_control_marker(parse_batch(data, position).records[0])
        except (ProtocolError, IndexError) as exc:
            return f", control batch that does not decode ({exc})"
        what = "unknown control record" if marker is None else (
            f"{'COMMIT' if marker.commit else 'ABORT'} marker, coordinator epoch "
            f"{marker.coordinator_epoch}")
        return f", producer {header.producer_id} epoch {header.producer_epoch}: {what}"
    if header.is_transactional:
        return f", producer {header.producer_id} epoch {header.producer_epoch}, transactional"
    return ""


def _dump_txn_index(path: Path) -> bool:
    """The aborted transactions of a segment, as Kafka's DumpLogSegments lists them."""
    size = path.stat().st_size
    entries = TransactionIndex.read_only(path)
    print(f"Dumping {path} ({size} bytes, {len(entries)} aborted transactions)")
    for entry in entries:
        print(f"  producer {entry.producer_id}: offsets {entry.first_offset}..{entry.last_offset} "
              f"aborted, last stable offset {entry.last_stable_offset}")
    return True


def _damaged(data: bytes, position: int, exc: ProtocolError) -> bool:
    print(f"  position {position}: DAMAGED: {exc}; recovery would cut "
          f"{len(data) - position} bytes here")
    return False


def _print_records(data: bytes, position: int) -> None:
    try:
        batch = parse_batch(data, position)
    except ProtocolError as exc:
        print(f"    records do not decode: {exc}")
        return
    for record in batch.records:
        print(f"    offset {record.offset} timestamp {record.timestamp} "
              f"key {_show(record.key)} value {_show(record.value)}"
              + (f" headers {list(record.headers)}" if record.headers else ""))


def _show(value: bytes | None, limit: int = 60) -> str:
    if value is None:
        return "null"
    text = repr(value[:limit])
    return text + (f"... ({len(value)} bytes)" if len(value) > limit else "")


def _dump_index(path: Path, base_offset: int, time_index: bool) -> bool:
    entries = read_index_entries(path, base_offset, time_index)
    size = path.stat().st_size
    note = " (preallocated: an active segment, or a crash)" if size > 0 and len(entries) * (
        12 if time_index else 8) < size else ""
    print(f"Dumping {path} ({size} bytes, {len(entries)} entries{note})")
    log_path = path.with_name(f"{base_offset:020d}.log")
    log = log_path.read_bytes() if log_path.exists() else None
    healthy = True
    for first, second in entries:
        if time_index:
            print(f"  timestamp {first} -> offset {second}")
            continue
        verdict = _check_offset_entry(log, first, second)
        healthy &= verdict == "ok"
        print(f"  offset {first} -> position {second}  {verdict}")
    return healthy


def _check_offset_entry(log: bytes | None, offset: int, position: int) -> str:
    """Does a batch whose last offset is ``offset`` start at ``position``?"""
    if log is None:
        return "(no .log file to check against)"
    if position + HEADER_SIZE > len(log):
        return f"MISMATCH: position is past the end of the log ({len(log)} bytes)"
    last = int.from_bytes(log[position : position + 8], "big", signed=True) + int.from_bytes(
        log[position + 23 : position + 27], "big", signed=True)
    return "ok" if last == offset else f"MISMATCH: the batch there ends at offset {last}"


