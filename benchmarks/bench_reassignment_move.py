"""Moving replicas to a new broker, with and without the replication throttle, on real processes.

Broker 1 holds two topics of ``--size`` bytes each (``--partitions`` partitions,
one replica, incompressible values); then broker 2 joins, empty. Each topic is
moved to broker 2 with ``simplekafka reassign --execute`` (run in-process):
the first without a throttle, the second with ``--throttle``. Meanwhile a
confluent-kafka producer writes 1 kB values with acks=all to a third topic
replicated on both brokers (so its replication shares broker 2's fetcher
with the move), and its throughput during each move is printed next to the
same producer's with no move at all. After the throttled move, ``reassign
--verify`` clears the throttle. Figures are printed with the load average; nothing is asserted.

    .venv/bin/python benchmarks/bench_reassignment_move.py [--size 1073741824]
        [--throttle 20000000] [--partitions 4]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from simplekafka.admin import Admin, NewTopic
from simplekafka.cluster import LocalCluster

VALUE_SIZE = 10_000
LIVE_VALUE = b"v" * 1000


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


def fill(bootstrap: str, topic: str, partitions: int, size: int) -> None:
    """``size`` bytes of incompressible values, spread over the partitions."""
    from confluent_kafka import Producer

    block = os.urandom(1 << 20)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 20,
                         "batch.size": 1 << 20, "queue.buffering.max.kbytes": 262144})
    for i in range(max(1, size // VALUE_SIZE)):
        start = (i * 7919) % (len(block) - VALUE_SIZE)
        while True:
            try:
                producer.produce(topic, block[start:start + VALUE_SIZE], partition=i % partitions)
                break
            except BufferError:
                producer.poll(0.05)
    if producer.flush(600):
        raise SystemExit(f"filling {topic}: records left undelivered")


class SteadyProducer(threading.Thread):
    """acks=all writes as fast as they are acknowledged; counts acks inside a window."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(daemon=True)
        self.bootstrap, self.topic = bootstrap, topic
        self.stopping = threading.Event()
        self.acked = 0
        self.failed = 0

    def _delivered(self, error, _message) -> None:
        if error is None:
            self.acked += 1
        else:
            self.failed += 1

    def run(self) -> None:
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": self.bootstrap, "acks": "all",
                             "linger.ms": 5, "queue.buffering.max.messages": 20000})
        while not self.stopping.is_set():
            try:
                producer.produce(self.topic, LIVE_VALUE, on_delivery=self._delivered)
            except BufferError:
                producer.poll(0.01)
            producer.poll(0)
        producer.flush(60)

    def rate_over(self, seconds: float) -> float:
        """Acknowledged records per second over the next ``seconds``."""
        before, started = self.acked, time.monotonic()
        time.sleep(seconds)
        return (self.acked - before) / (time.monotonic() - started)


def create_live_topic(cluster: LocalCluster) -> None:
    """Led by broker 1 and followed by broker 2, as the moves go: one fetcher carries both."""
    from simplekafka.coordination.topics import create_topic

    create_topic(cluster.zk, "live", 0, 0, replica_assignment={0: [1, 2]})


def reassign(bootstrap: str, *args: str) -> tuple[int, str]:
    """``simplekafka reassign`` run in this process (the same code as the command):
    (exit code, what it printed)."""
    from simplekafka.cli import main as cli

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
        code = cli(["reassign", "--bootstrap-server", bootstrap, *args])
    return code, printed.getvalue()


def move(cluster: LocalCluster, topic: str, partitions: int, plan_file: Path,
         producer: SteadyProducer, throttle: int | None) -> tuple[float, float]:
    """Move ``topic`` onto broker 2: (seconds until done, producer records/s meanwhile)."""
    plan_file.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": p, "replicas": [2]} for p in range(partitions)]}))
    extra = ["--throttle", str(throttle)] if throttle else []
    acked_before, started = producer.acked, time.monotonic()
    code, printed = reassign(cluster.bootstrap_servers, "--execute", "--reassignment-json-file",
                             str(plan_file), *extra)
    if code != 0:
        raise SystemExit(f"reassign --execute failed:\n{printed}")
    cluster.wait_for(lambda: all(cluster.replicas_of(topic, p) == (2,)
                                 for p in range(partitions)), f"{topic} moved", timeout=7200,
                     interval=0.1)
    elapsed = time.monotonic() - started
    rate = (producer.acked - acked_before) / elapsed
    if not throttle:
        return elapsed, rate
    # --verify until it says done (the brokers' metadata follows ZooKeeper a moment later);
    # then it clears the throttle.
    verified: list[tuple[int, str]] = []
    cluster.wait_for(lambda: verified.append(reassign(
        cluster.bootstrap_servers, "--verify", "--reassignment-json-file", str(plan_file)))
        or verified[-1][0] != 1, "reassign --verify to say done", timeout=120, interval=0.5)
    if verified[-1][0] != 0:
        raise SystemExit(f"reassign --verify: {verified[-1][1]}")
    return elapsed, rate


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1 << 30, help="bytes per moved topic")
    parser.add_argument("--throttle", type=int, default=20_000_000,
                        help="bytes/s for the throttled move")
    parser.add_argument("--partitions", type=int, default=4)
    args = parser.parse_args()
    if args.size < VALUE_SIZE or args.throttle < 1 or args.partitions < 1:
        parser.error("--size must be at least 10000, --throttle and --partitions positive")
    with tempfile.TemporaryDirectory(prefix="bench-move-") as base, \
            LocalCluster(brokers=2, base_dir=Path(base)) as cluster:
        cluster.terminate(2)  # the new broker joins once the data is written
        cluster.wait_for_znode_gone(2, timeout=60)
        with Admin(cluster.bootstrap_servers) as admin:
            admin.create_topics([NewTopic(t, args.partitions, 1)
                                 for t in ("bulk-plain", "bulk-throttled")])
        started = time.monotonic()
        for topic in ("bulk-plain", "bulk-throttled"):
            fill(cluster.bootstrap_servers, topic, args.partitions, args.size)
        print(f"wrote 2 x {args.size / 1e6:.1f} MB in {time.monotonic() - started:.1f} s")
        cluster.restart(2)
        create_live_topic(cluster)
        cluster.wait_for_isr("live", 0, [1, 2])
        producer = SteadyProducer(cluster.bootstrap_servers, "live")
        producer.start()
        try:
            cluster.wait_for(lambda: producer.acked > 100, "the producer to get going")
            quiet = producer.rate_over(max(1.0, min(10.0, args.size / 100e6)))
            plain_s, plain_rate = move(cluster, "bulk-plain", args.partitions,
                                       Path(base) / "plain.json", producer, None)
            throttled_s, throttled_rate = move(cluster, "bulk-throttled", args.partitions,
                                               Path(base) / "throttled.json", producer,
                                               args.throttle)
        finally:
            producer.stopping.set()
            producer.join(120)
        mb = args.size / 1e6
        print(f"move {mb:.1f} MB to a new broker: unthrottled {plain_s:.1f} s "
              f"({mb / plain_s:.1f} MB/s); throttled at {args.throttle / 1e6:.1f} MB/s "
              f"{throttled_s:.1f} s ({mb / throttled_s:.1f} MB/s); {load()}")
        print(f"acks=all producer (1 kB records): {quiet:.0f}/s with no move, "
              f"{plain_rate:.0f}/s during the unthrottled move, {throttled_rate:.0f}/s during "
              f"the throttled one ({producer.failed} failed); {load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
