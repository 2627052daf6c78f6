"""Storage throughput and lookup cost: append vs plain os.write, offset lookup, sequential read.

Prints figures, never passes or fails. Targets from issue 4: append at >= 0.7x
the speed of os.write of the same bytes in the same run (16 KB, 256 KB, 1 MB
batches); offset lookup time growing logarithmically with the log (10^4 to
10^7 records); sequential read MB/s.

    .venv/bin/python benchmarks/bench_storage.py [--megabytes 256] [--max-records 10000000]

Files go to a temporary directory (``--dir`` to choose; the page cache, not the
disk, is what both append and os.write hit: neither fsyncs, like Kafka's default).
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import random
import shutil
import struct
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from simplekafka.protocol.batch_header import crc32c
from simplekafka.protocol.records import Record, build_batch
from simplekafka.storage import Log, LogConfig, LogSegment

KB = 1024
MB = 1024 * 1024


def real_batch(size: int) -> bytes:
    """A genuine batch of about ``size`` bytes: records of 1 KB values."""
    count = max(1, size // 1030)
    value = os.urandom(1000)
    return build_batch([Record(timestamp=1_700_000_000_000 + i, value=value) for i in range(count)])


def synthetic_batch(records: int, body: bytes = b"\x00" * 16) -> bytes:
    """A valid header + CRC claiming ``records`` records over a tiny body.

    The log never decodes records, so this builds a big log cheaply for the
    lookup benchmark (a real client could not decode it).
    """
    after_crc = struct.pack(">hiqqqhii", 0, records - 1, 1_700_000_000_000,
                            1_700_000_000_000, -1, -1, -1, records) + body
    head = struct.pack(">qiib", 0, 9 + len(after_crc), -1, 2)
    return head + struct.pack(">I", crc32c(after_crc)) + after_crc


def append_vs_write(directory: Path, batch: bytes, total: int, rounds: int) -> tuple[float, float]:
    """Best MB/s of Log.append and of os.write over the same bytes, alternating rounds.

    Timed in CPU seconds of this process (user + system: copying into the page
    cache is system time), so that neighbours on a shared machine distort the
    ratio as little as possible. Dirty pages are written back (os.sync,
    untimed) before each round so neither side pays for the other's writeback.
    """
    count = max(1, total // len(batch))
    clock = time.process_time
    best_log = best_write = 0.0
    for number in range(rounds):
        plain = directory / f"plain-{number}"
        fd = os.open(plain, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.sync()
        start = clock()
        for _ in range(count):
            os.write(fd, batch)
        best_write = max(best_write, count * len(batch) / max(clock() - start, 1e-9) / MB)
        os.close(fd)
        plain.unlink()
        log = Log.open(directory / f"bench-{number}", LogConfig())
        log.append(batch, 0)  # the first append writes the leader epoch checkpoint
        os.sync()
        start = clock()
        for _ in range(count):
            log.append(batch, 0)
        best_log = max(best_log, count * len(batch) / max(clock() - start, 1e-9) / MB)
        log.delete()
    return best_log, best_write


def _lookups(segment: LogSegment, offsets: list[int]) -> None:
    for offset in offsets:
        segment.translate_offset(offset)


def _reads(log: Log, offsets: list[int]) -> None:
    for offset in offsets:
        log.read(offset, 1)


def best_cpu_us(work: Callable[[], object], rounds: int = 3) -> float:
    """CPU microseconds of the fastest of a few runs of ``work``."""
    best = float("inf")
    for _ in range(rounds):
        start = time.process_time()
        work()
        best = min(best, time.process_time() - start)
    return best * 1e6


def lookup_table(directory: Path, max_records: int, records_per_batch: int) -> None:
    print(f"\nOffset lookup ({records_per_batch} records per batch, an index entry per batch,"
          " random offsets, CPU us; steps = binary search depth;\n"
          "lookup = index search + scan of headers, read = lookup + pread of the batch)")
    print(f"{'records':>10} {'batches':>9} {'index entries':>14} {'steps':>6} {'us/lookup':>10} "
          f"{'us/read':>9}")
    batch = synthetic_batch(records_per_batch)
    group = batch * 500
    size = 10**4
    config = LogConfig(index_interval_bytes=0, max_index_size=64 * MB, segment_bytes=1 << 30)
    while size <= max_records:
        log = Log.open(directory / f"lookup-{size}", config)
        while log.log_end_offset < size:
            log.append(group, 0)
        segment = log.segments[-1]
        rng = random.Random(size)
        offsets = [rng.randrange(log.log_end_offset) for _ in range(5_000)]
        lookup = best_cpu_us(partial(_lookups, segment, offsets)) / len(offsets)
        read = best_cpu_us(partial(_reads, log, offsets)) / len(offsets)
        entries = len(segment.offset_index)
        print(f"{log.log_end_offset:>10} {log.log_end_offset // records_per_batch:>9} "
              f"{entries:>14} {math.ceil(math.log2(entries + 1)):>6} {lookup:>10.2f} {read:>9.2f}")
        log.delete()
        size *= 10


def sequential_read(directory: Path, batch: bytes, total: int, fetch_bytes: int) -> float:
    log = Log.open(directory / "read-0", LogConfig(segment_bytes=256 * MB))
    for _ in range(max(1, total // len(batch))):
        log.append(batch, 0)
    best = 0.0
    for _ in range(3):
        offset, read_bytes = 0, 0
        start = time.process_time()
        while offset < log.log_end_offset:
            data = log.read(offset, fetch_bytes)
            read_bytes += len(data)
            offset = _next_offset(data)
        best = max(best, read_bytes / max(time.process_time() - start, 1e-9) / MB)
    log.delete()
    return best


def _next_offset(data: bytes) -> int:
    """The offset after the last batch in ``data`` (walks the length fields)."""
    position, next_offset = 0, 0
    while position < len(data):
        base, length = struct.unpack_from(">qi", data, position)
        delta = struct.unpack_from(">i", data, position + 23)[0]
        next_offset = base + delta + 1
        position += length + 12
    return next_offset


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=int, default=256, help="bytes appended per size")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-records", type=int, default=10**7)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    directory = Path(tempfile.mkdtemp(prefix="sk-bench-", dir=args.dir))
    try:
        print(f"python {platform.python_version()} on {platform.machine()}, "
              f"{os.cpu_count()} cpus, files in {directory}")
        print(f"\nAppend vs os.write ({args.megabytes} MB per size, best of {args.rounds}, "
              "MB per CPU second)")
        print(f"{'batch':>8} {'append MB/s':>12} {'os.write MB/s':>14} {'ratio':>6}")
        for size in (16 * KB, 256 * KB, MB):
            batch = real_batch(size)
            log_rate, write_rate = append_vs_write(directory, batch, args.megabytes * MB,
                                                   args.rounds)
            print(f"{size // KB:>6}KB {log_rate:>12.0f} {write_rate:>14.0f} "
                  f"{log_rate / write_rate:>6.2f}")
        lookup_table(directory, args.max_records, records_per_batch=10)
        print("\nSequential read (page cache warm, 1 MB fetches, MB per CPU second)")
        for size in (16 * KB, MB):
            rate = sequential_read(directory, real_batch(size), args.megabytes * MB, MB)
            print(f"{size // KB:>6}KB batches: {rate:>8.0f} MB/s")
    finally:
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
