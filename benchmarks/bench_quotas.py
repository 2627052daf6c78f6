"""Client quotas on a real broker: a producer held to its byte rate, another not slowed.

One broker; ``producer_byte_rate`` set for client id ``throttled`` (through
AlterClientQuotas). That client produces as fast as the broker lets it
(confluent-kafka, 1,000-byte values, 16 kB batches; when its queue is full it
waits in ``poll``, sleeping, so the loop does not eat a core). Printed:

1. the throttled client's delivered rate over 20 s, after one quota window of
   warm-up (quota.window.num x quota.window.size.seconds = 11 s: Kafka lets a new
   client send that window's worth at once), against the quota, and over the
   whole run; with the throttle times its ``throttle_cb`` reported;
2. the rate of client id ``free`` (no quota) alone, then beside the throttled one.

The quota counts request bytes; delivered values are ~2 % fewer bytes (record
and batch headers), so a rate a little under the quota is the quota held.

    .venv/bin/python benchmarks/bench_quotas.py [--tiny] [--quota BYTES_PER_S]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from simplekafka.admin import Admin
from simplekafka.cluster import LocalCluster

TOPIC = "quota-bench"
VALUE = b"v" * 1000


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


class Run:
    """One producer's delivery times (seconds from its start) and reported throttles."""

    def __init__(self, bootstrap: str, client_id: str):
        from confluent_kafka import Producer

        self.delivered: list[float] = []
        self.throttles: list[float] = []
        self.start = 0.0
        self.producer = Producer({
            "bootstrap.servers": bootstrap, "client.id": client_id, "acks": 1,
            "batch.size": 16384, "linger.ms": 5, "queue.buffering.max.kbytes": 1024,
            "throttle_cb": lambda event: self.throttles.append(event.throttle_time)})

    def _delivered(self, err, msg) -> None:
        if err is None:
            self.delivered.append(time.monotonic() - self.start)

    def produce_for(self, seconds: float) -> Run:
        self.start = time.monotonic()
        while time.monotonic() - self.start < seconds:
            try:
                self.producer.produce(TOPIC, VALUE, on_delivery=self._delivered)
            except BufferError:
                self.producer.poll(0.02)  # queue full: sleep until deliveries free it
            self.producer.poll(0)
        self.producer.purge()
        self.producer.flush(5)
        return self

    def rate(self, start: float, end: float) -> float:
        """Delivered value bytes per second between two times of the run."""
        count = sum(1 for t in self.delivered if start <= t < end)
        return count * len(VALUE) / (end - start)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true",
                        help="a few seconds, for the suite (figures not meaningful)")
    parser.add_argument("--quota", type=int, default=500_000, help="producer_byte_rate")
    args = parser.parse_args(argv)
    warmup, measured, free_seconds = (0.0, 3.0, 1.0) if args.tiny else (11.0, 20.0, 5.0)
    quota = 200_000 if args.tiny else args.quota
    print(f"bench_quotas{' (tiny)' if args.tiny else ''}: {load()}")
    with tempfile.TemporaryDirectory() as tmp, \
            LocalCluster(brokers=1, base_dir=Path(tmp)) as cluster:
        with Admin(cluster.bootstrap_servers) as admin:
            admin.create_topic(TOPIC, num_partitions=1, replication_factor=1)
            admin.alter_client_quotas({"client-id": "throttled"},
                                      {"producer_byte_rate": quota})
        time.sleep(1)  # every broker follows /config/changes
        alone = Run(cluster.bootstrap_servers, "free").produce_for(free_seconds)
        throttled = Run(cluster.bootstrap_servers, "throttled")
        thread = threading.Thread(target=throttled.produce_for, args=(warmup + measured,))
        thread.start()
        time.sleep(warmup + measured / 2 - free_seconds / 2)
        beside = Run(cluster.bootstrap_servers, "free").produce_for(free_seconds)
        thread.join(warmup + measured + 30)
        held = throttled.rate(warmup, warmup + measured)
        whole = throttled.rate(0, warmup + measured)
        waits = throttled.throttles or [0.0]
        print(f"throttled client, {measured:.0f} s after {warmup:.0f} s warm-up: "
              f"{held / 1000:.1f} kB/s against a quota of {quota / 1000:.1f} kB/s "
              f"({(held / quota - 1) * 100:+.1f} %); whole run {whole / 1000:.1f} kB/s "
              f"({(whole / quota - 1) * 100:+.1f} %); throttle_time_ms reported "
              f"{len(throttled.throttles)} times, median {statistics.median(waits) * 1000:.0f} "
              f"ms; {load()}")
        print(f"free client: {alone.rate(0, free_seconds) / 1e6:.2f} MB/s alone, "
              f"{beside.rate(0, free_seconds) / 1e6:.2f} MB/s beside the throttled one, "
              f"throttled {len(beside.throttles)} times; {load()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
