"""What old clients cost the broker: CPU per MB converting message formats v0/v1.

A v2 client costs the broker a header check per batch (CRC-32C over the
batch, in C) on produce and nothing per record on fetch: the log's bytes go
out as stored, by sendfile when the connection allows. An old client
(Produce v0-2, Fetch v0-3) makes the broker decode every record and encode it
again (broker/message_format.py), in Python here, in Java in Kafka: that cost
is why Kafka added ``message.downconversion.enable`` (KIP-283) and then
dropped the old formats in 4.0.

Prints CPU milliseconds per MB of records (process time, best of three, so a
loaded machine's waiting is not counted) and the load average. Never passes
or fails.

    .venv/bin/python benchmarks/bench_old_formats.py [--mb 8] [--tiny]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from simplekafka.broker.message_format import down_convert, up_convert
from simplekafka.protocol.batch_header import validate_batch
from simplekafka.protocol.legacy_records import build_message_set
from simplekafka.protocol.records import Record, build_batch

RECORDS_PER_BATCH = 100
VALUE_BYTES = 1000


WORDS = [b"order", b"customer", b"id", b"price", b"quantity", b"status", b"shipped",
         b"pending", b"eur", b"usd", b"warehouse", b"berlin", b"lisbon", b"true", b"false"]


def _values(batch: int) -> list[Record]:
    """JSON-like values from a seeded generator: they compress about 4:1, as real ones do
    (a value repeating one phrase would compress 100:1 and measure something else)."""
    rng = random.Random(batch)
    return [Record(timestamp=1_700_000_000_000 + i, key=b"key-%d" % i,
                   value=b" ".join(rng.choice(WORDS) + b"%d" % rng.randrange(10_000)
                                   for _ in range(VALUE_BYTES // 8))[:VALUE_BYTES])
            for i in range(RECORDS_PER_BATCH)]


def _cpu_ms_per_mb(work: Callable[[], object], megabytes: float) -> float:
    best = float("inf")
    for _ in range(3):
        start = time.process_time()
        work()
        best = min(best, time.process_time() - start)
    return best * 1000 / megabytes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=float, default=8.0, help="MB of records per figure")
    parser.add_argument("--tiny", action="store_true", help="a quick run that only shows it works")
    args = parser.parse_args()
    megabytes_wanted = 0.2 if args.tiny else args.mb
    load = os.getloadavg()
    batches = max(1, int(megabytes_wanted * 1e6 / (RECORDS_PER_BATCH * VALUE_BYTES)))
    payload_mb = batches * RECORDS_PER_BATCH * VALUE_BYTES / 1e6
    stored = {codec: [build_batch(_values(b), compression=codec,
                                  base_offset=b * RECORDS_PER_BATCH) for b in range(batches)]
              for codec in ("none", "gzip", "lz4")}
    sets = {codec: [build_message_set([(i, r.timestamp, r.key, r.value)
                                       for i, r in enumerate(_values(b))], 1, codec)
                    for b in range(batches)] for codec in ("none", "gzip")}
    logs = {codec: b"".join(found) for codec, found in stored.items()}

    figures = [
        ("produce v3+: a v2 batch's header and CRC-32C",
         lambda: [validate_batch(b) for b in stored["none"]]),
        ("produce v2: message set (v1) -> v2 batch",
         lambda: [up_convert(s) for s in sets["none"]]),
        ("produce v2: gzip message set -> gzip v2 batch",
         lambda: [up_convert(s) for s in sets["gzip"]]),
        ("fetch v4+: stored v2 batches as they are", lambda: None),
        ("fetch v2-3: v2 batches -> message set v1", lambda: down_convert(logs["none"], 1)),
        ("fetch v0-1: v2 batches -> message set v0", lambda: down_convert(logs["none"], 0)),
        ("fetch v2-3: gzip batches -> gzip message set v1",
         lambda: down_convert(logs["gzip"], 1)),
        ("fetch v2-3: lz4 batches -> lz4 message set v1", lambda: down_convert(logs["lz4"], 1)),
    ]
    print(f"{payload_mb:.1f} MB of records per figure ({batches} batches of "
          f"{RECORDS_PER_BATCH} x {VALUE_BYTES}-byte values), broker CPU per MB:")
    for name, work in figures:
        ms = _cpu_ms_per_mb(work, payload_mb)
        rate = f"{1000 / ms:8.1f} MB/s per core" if ms > 0.001 else "     no per-record work"
        print(f"  {name:48s} {ms:8.2f} ms/MB  {rate}")
    print(f"load average before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; "
          f"after: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores"
          + ("  (tiny run: not representative)" if args.tiny else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
