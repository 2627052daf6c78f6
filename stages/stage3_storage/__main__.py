"""Stage 3 demo: a partition log on disk, its indexes, a torn write and the recovery.

    python -m stages.stage3_storage

Writes under $SIMPLEKAFKA_DEMO_DIR if set, else a temporary directory.
"""

from __future__ import annotations

import logging
import os
import sys
import tempfile
from pathlib import Path

from simplekafka.protocol.batch_header import read_header, validate_batches
from simplekafka.storage import Log, LogConfig, OffsetOutOfRangeError
from stages.stage3_storage.batches import make_batch

T0 = 1_700_000_000_000
CONFIG = LogConfig(segment_bytes=1500, index_interval_bytes=200, retention_bytes=3000,
                   retention_ms=-1)


def show_files(directory: Path) -> None:
    for path in sorted(directory.iterdir()):
        print(f"    {path.name:<34} {path.stat().st_size:>7} bytes")


def title(text: str) -> None:
    print(f"\n== {text} " + "=" * max(0, 70 - len(text)))


def main() -> None:
    logging.basicConfig(stream=sys.stdout, format="  [storage log] %(message)s")
    root = Path(os.environ.get("SIMPLEKAFKA_DEMO_DIR") or tempfile.mkdtemp(prefix="stage3-"))
    directory = root / "stage3-demo" / "orders-0"
    if directory.exists():
        for path in directory.iterdir():
            path.unlink()

    title("Appending batches: the leader assigns offsets by patching each header")
    log = Log.open(directory, CONFIG)
    for number in range(24):
        values = [b"order %d item %d" % (number, i) + b"." * 40 for i in range(3)]
        epoch = 0 if number < 12 else 1  # a new leader from batch 12 on
        info = log.append(make_batch(values, timestamp=T0 + 1000 * number), epoch)
        if number in (0, 1, 23):
            print(f"  batch {number:>2}: offsets {info.base_offset}..{info.last_offset}, "
                  f"{info.size} bytes, epoch {epoch}")
    print(f"  log start {log.log_start_offset}, log end {log.log_end_offset}, "
          f"{len(log.segments)} segments")

    title("Files on disk (the active segment's indexes are preallocated)")
    show_files(directory)

    title("The sparse offset index of the first segment: last offset of a batch -> position")
    first = log.segments[0]
    for offset, position in first.offset_index.entries():
        header = read_header(first.read(position, 61))
        print(f"  offset {offset:>3} -> byte {position:>5}   "
              f"(batch {header.base_offset}..{header.last_offset} starts there)")
    print("  time index:", first.time_index.entries())

    title("Reading: whole batches from the one holding the offset")
    data = log.read(10, 600)
    print(f"  read(10, max_bytes=600) -> {len(data)} bytes, batches at offsets",
          [h.base_offset for h in validate_batches(data)])
    print(f"  read(10, max_bytes=1) -> {len(log.read(10, 1))} bytes (the first batch comes whole)")
    try:
        log.read(1000, 100)
    except OffsetOutOfRangeError as exc:
        print(f"  read(1000) -> {type(exc).__name__}: {exc}")
    print(f"  first offset with timestamp >= T0+15500: {log.offset_for_timestamp(T0 + 15_500)}")
    print(f"  leader epochs: {log.leader_epochs.entries}")

    title("A clean close trims the indexes")
    log.close()
    show_files(directory)

    title("A crash in the middle of a write")
    log = Log.open(directory, CONFIG, clean_shutdown=True)
    log.append(make_batch([b"will survive"]), 1)
    torn = log.append(make_batch([b"will be torn" * 20]), 1)
    log.abandon()  # the process dies: nothing trimmed, nothing fsynced
    active = directory / f"{log.segments[-1].base_offset:020d}.log"
    size = active.stat().st_size
    with open(active, "r+b") as handle:
        handle.truncate(size - torn.size + 100)  # only 100 bytes of the last batch made it
        handle.seek(0, os.SEEK_END)
        handle.write(b"\x00" * 64)  # and the file system left zeros after them
    print(f"  {active.name}: {size} bytes before, {active.stat().st_size} after the 'crash'")
    log = Log.open(directory, CONFIG)  # no clean-shutdown flag: recover the active segment
    print(f"  recovery cut {log.truncated_on_recovery} bytes; log end is now "
          f"{log.log_end_offset} (the torn batch began at {torn.base_offset})")
    print("  the batch before it is intact:",
          validate_batches(log.read(torn.base_offset - 1, 1))[0].base_offset)

    title("Retention by size deletes whole old segments and moves the log start")
    deleted = log.enforce_retention()
    print(f"  deleted {deleted} segments; log start is now {log.log_start_offset}")
    show_files(directory)
    log.close()


if __name__ == "__main__":
    main()
