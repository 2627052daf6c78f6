"""Log cleaner throughput: MB/s and records/s of one cleaning round, with the load average.

Prints figures, never passes or fails. A compacted log of ``--records`` records
over ``--keys`` keys (values of ``--value-bytes``, batches of ``--per-batch``,
codec ``--compression``) is written, rolled, and cleaned in one round on this
thread, as the broker's cleaner thread does it; the figures are the bytes and
records the round read per second of its own time (building the offset map,
rewriting, swapping), and how much of the log was left.

    .venv/bin/python benchmarks/bench_compaction.py [--records 1000000] [--keys 10000]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from simplekafka.protocol.records import build_batch
from simplekafka.storage import LogConfig, LogManager
from simplekafka.storage.cleaner import Cleaner


def fill(manager: LogManager, config: LogConfig, records: int, keys: int, value_bytes: int,
         per_batch: int, compression: str) -> int:
    log = manager.get_or_create("bench", 0, config)
    value = b"v" * value_bytes
    now = int(time.time() * 1000)
    for start in range(0, records, per_batch):
        batch = [{"key": b"key-%d" % ((start + n) % keys), "value": value, "timestamp": now}
                 for n in range(min(per_batch, records - start))]
        log.append(build_batch(batch, compression=compression), 0)
    log.roll()
    return log.size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--per-batch", type=int, default=200)
    parser.add_argument("--compression", default="none")
    parser.add_argument("--segment-bytes", type=int, default=64 * 1024 * 1024)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()

    directory = Path(tempfile.mkdtemp(prefix="bench-compaction-", dir=args.dir))
    try:
        config = LogConfig(cleanup_policy="compact", segment_bytes=args.segment_bytes)
        manager = LogManager([directory], config)
        load_before = os.getloadavg()
        size = fill(manager, config, args.records, args.keys, args.value_bytes,
                    args.per_batch, args.compression)
        started = time.perf_counter()
        result = manager.clean_once(Cleaner())
        elapsed = time.perf_counter() - started
        load_after = os.getloadavg()
        assert result is not None, "nothing was cleaned"
        stats = result.stats
        after = manager.get("bench", 0).size
        print(f"log cleaner, one round: {args.records:,} records on {args.keys:,} keys, "
              f"{args.value_bytes} B values, {args.per_batch} a batch, "
              f"compression {args.compression}")
        print(f"  log before {size / 1e6:.1f} MB, after {after / 1e6:.2f} MB; "
              f"{stats.records_kept:,} records kept")
        print(f"  round {elapsed:.2f} s: {stats.bytes_read / 1e6 / elapsed:.1f} MB/s read, "
              f"{stats.records_read / elapsed:,.0f} records/s "
              f"(each byte read twice: {stats.map_bytes_read / 1e6:.1f} MB by the offset map, "
              f"{stats.bytes_read / 1e6:.1f} MB by the rewrite)")
        print(f"  load average before {load_before[0]:.2f} {load_before[1]:.2f} "
              f"{load_before[2]:.2f}, after {load_after[0]:.2f} {load_after[1]:.2f} "
              f"{load_after[2]:.2f} on {os.cpu_count()} cores")
        manager.close()
    finally:
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
