"""Protocol codec throughput: build and parse RecordBatch v2, validate headers with CRC-32C.

Prints figures, never passes or fails. The targets from issue 2 are >= 300,000
records/s each way for a batch of 1,000 records of 100 bytes, and >= 1 GB/s
for header validation with CRC. kafka-python's builder and reader run on the
same records for comparison.

    .venv/bin/python benchmarks/bench_protocol.py [--records 1000] [--size 100] [--seconds 1]
"""

from __future__ import annotations

import argparse
import platform
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from simplekafka.protocol import batch_header
from simplekafka.protocol.compression import Compression
from simplekafka.protocol.records import Record, build_batch, parse_batch


def best_rate(fn: Callable[[], object], units: float, seconds: float) -> float:
    """Units per CPU-second of the fastest of many short rounds.

    CPU time of this process (not wall time) and the best short round, so that
    neighbours on a shared machine distort the figure as little as possible.
    """
    clock = time.process_time
    fn()  # warm up
    start = clock()
    fn()
    once = max(clock() - start, 1e-6)
    per_round = max(1, int(0.02 / once))
    best = 0.0
    deadline = time.perf_counter() + seconds
    while True:
        start = clock()
        for _ in range(per_round):
            fn()
        elapsed = max(clock() - start, 1e-9)
        best = max(best, units * per_round / elapsed)
        if time.perf_counter() >= deadline:
            return best


def make_records(count: int, size: int, seed: int = 7) -> list[Record]:
    """Records with a short key and a ``size``-byte value, mildly compressible like real events."""
    rng = random.Random(seed)
    words = [b"user", b"click", b"page", b"view", b"cart", b"order", b"id", b"ts", b"ok"]
    records = []
    base_ts = 1_700_000_000_000
    for i in range(count):
        value = bytearray()
        while len(value) < size:
            value += rng.choice(words) + b"=%d," % rng.randrange(10_000)
        records.append(
            Record(timestamp=base_ts + i, key=b"key-%d" % (i % 100), value=bytes(value[:size]))
        )
    return records


def make_uniform_records(count: int, size: int, seed: int = 9) -> list[Record]:
    """Null keys and ``size``-byte values, a few records per millisecond: a producer's batch."""
    rng = random.Random(seed)
    base_ts = 1_700_000_000_000
    return [
        Record(timestamp=base_ts + i // 20, value=rng.randbytes(size)) for i in range(count)
    ]


def kafka_python_figures(records: list[Record], seconds: float) -> tuple[float, float] | None:
    try:
        from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
    except ImportError:
        return None

    def build() -> bytes:
        builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 24)
        for i, r in enumerate(records):
            builder.append(i, r.timestamp, r.key, r.value, [])
        return bytes(builder.build())

    built = build()

    def parse() -> None:
        for _ in DefaultRecordBatch(bytearray(built)):
            pass

    n = len(records)
    return best_rate(build, n, seconds), best_rate(parse, n, seconds)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1000, help="records per batch")
    parser.add_argument("--size", type=int, default=100, help="value bytes per record")
    parser.add_argument("--seconds", type=float, default=1.0, help="time per measurement")
    args = parser.parse_args(argv)

    records = make_records(args.records, args.size)
    n = len(records)
    print(
        f"python {platform.python_version()} on {platform.machine()}, "
        f"{n} records x {args.size}-byte values per batch, "
        f"best CPU-time round of ~{args.seconds:.1f}s each"
    )
    print()
    print(f"{'codec':<8} {'batch bytes':>11} {'build rec/s':>13} {'parse rec/s':>13}")
    for codec in Compression:
        batch = build_batch(records, compression=codec)
        build = best_rate(lambda c=codec: build_batch(records, compression=c), n, args.seconds)
        parse = best_rate(lambda b=batch: parse_batch(b), n, args.seconds)
        print(f"{codec.name.lower():<8} {len(batch):>11,} {build:>13,.0f} {parse:>13,.0f}")

    theirs = kafka_python_figures(records, args.seconds)
    if theirs:
        print(f"{'(kafka-python 3, none)':<22} {theirs[0]:>13,.0f} {theirs[1]:>13,.0f}")

    # What our Producer and librdkafka write for fixed-size values: null keys, one length.
    uniform = make_uniform_records(args.records, args.size)
    batch = build_batch(uniform)
    build = best_rate(lambda: build_batch(uniform), n, args.seconds)
    parse = best_rate(lambda: parse_batch(batch), n, args.seconds)
    print(f"{'(null keys, one size)':<22} {build:>13,.0f} {parse:>13,.0f}")
    theirs = kafka_python_figures(uniform, args.seconds)
    if theirs:
        print(f"{'(kafka-python, same)':<22} {theirs[0]:>13,.0f} {theirs[1]:>13,.0f}")

    print()
    print("header validation (length, magic, CRC-32C over the whole batch):")
    small = build_batch(records)
    big = build_batch(make_records(10_000, 1000, seed=8))
    for label, batch in (("1,000-record batch", small), ("10 MB batch", big)):
        rate = best_rate(lambda b=batch: batch_header.validate_batch(b), len(batch), args.seconds)
        print(f"  {label:<20} {len(batch):>11,} bytes {rate / 1e9:>8.2f} GB/s")
    many = b"".join(build_batch(records[i : i + 10], base_offset=i) for i in range(0, n, 10))
    rate = best_rate(lambda: batch_header.validate_batches(many), len(many), args.seconds)
    print(
        f"  {'100 batches of 10':<20} {len(many):>11,} bytes {rate / 1e9:>8.2f} GB/s "
        f"({rate / len(many) * 100:,.0f} batches/s)"
    )


if __name__ == "__main__":
    main()
