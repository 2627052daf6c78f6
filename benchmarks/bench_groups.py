"""Consumer groups: rebalance time when an 11th member joins 10 on 30 partitions; commits/s.

Run: ``python benchmarks/bench_groups.py [--members 10] [--partitions 30] [--seconds 5]``.
Starts its own one-broker LocalCluster; prints figures, asserts nothing.

* rebalance: ten of our Consumers (threads, one process) share a 30-partition
  topic; an eleventh subscribes; the time from its subscribe until every member
  has its new partitions (the initial rebalance delay applies only to an empty
  group, so it is not part of this figure).
* commits: one consumer commits one partition's offset in a loop, synchronously
  (one round trip and one acks=all append each) and asynchronously (pipelined).
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from pathlib import Path

from simplekafka.admin import Admin
from simplekafka.cluster import LocalCluster
from simplekafka.consumer import Consumer


class Member(threading.Thread):
    def __init__(self, bootstrap: str, topic: str, name: str) -> None:
        super().__init__(daemon=True)
        self.consumer = Consumer(bootstrap_servers=bootstrap, group_id="bench", client_id=name,
                                 enable_auto_commit=False, session_timeout_ms=10_000,
                                 heartbeat_interval_ms=300, max_poll_interval_ms=30_000,
                                 partition_assignment_strategy=["roundrobin"])
        self.assigned_at: float | None = None
        self.generation = -1
        self.stop = threading.Event()
        self.consumer.subscribe([topic], on_assign=self.on_assign)

    def on_assign(self, partitions) -> None:
        self.assigned_at = time.perf_counter()
        self.generation = self.consumer._group.generation

    def run(self) -> None:
        while not self.stop.is_set():
            self.consumer.poll(100)
        self.consumer.close(autocommit=False)


def rebalance(bootstrap: str, members: int, partitions: int) -> float:
    topic = "bench-rebalance"
    with Admin(bootstrap) as admin:
        admin.create_topic(topic, num_partitions=partitions)
    group = [Member(bootstrap, topic, f"m{i}") for i in range(members)]
    for member in group:
        member.start()
    deadline = time.monotonic() + 120
    while not all(m.generation > 0 and m.generation == group[0].generation for m in group):
        if time.monotonic() > deadline:
            raise SystemExit("the first rebalance did not complete")
        time.sleep(0.05)
    time.sleep(1.0)
    before = group[0].generation
    started = time.perf_counter()
    newcomer = Member(bootstrap, topic, "new")
    newcomer.start()
    group.append(newcomer)
    while not all(m.generation > before for m in group):
        if time.monotonic() > deadline + 60:
            raise SystemExit("the rebalance after a join did not complete")
        time.sleep(0.005)
    took = max(m.assigned_at for m in group) - started
    for member in group:
        member.stop.set()
    for member in group:
        member.join(30)
    return took


def commits(bootstrap: str, seconds: float) -> tuple[float, float]:
    topic = "bench-commits"
    with Admin(bootstrap) as admin:
        admin.create_topic(topic, num_partitions=1)
    consumer = Consumer(bootstrap_servers=bootstrap, group_id="bench-commits",
                        enable_auto_commit=False)
    consumer.commit({(topic, 0): 0})
    n, end = 0, time.perf_counter() + seconds
    start = time.perf_counter()
    while time.perf_counter() < end:
        n += 1
        consumer.commit({(topic, 0): n})
    sync_rate = n / (time.perf_counter() - start)
    futures, n = [], 0
    start = time.perf_counter()
    end = start + seconds
    while time.perf_counter() < end:
        n += 1
        futures.append(consumer.commit({(topic, 0): n}, asynchronous=True))
        if len(futures) >= 64:
            futures.pop(0).result(30)
    for future in futures:
        future.result(30)
    async_rate = n / (time.perf_counter() - start)
    consumer.close()
    return sync_rate, async_rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, default=10)
    parser.add_argument("--partitions", type=int, default=30)
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="bench-groups-"))
    with LocalCluster(brokers=1, base_dir=base,
                      broker_config={"group.initial.rebalance.delay.ms": 500}) as cluster:
        took = rebalance(cluster.bootstrap_servers, args.members, args.partitions)
        print(f"rebalance: {args.members} members on {args.partitions} partitions, one joins: "
              f"{took * 1000:.0f} ms until all {args.members + 1} have their partitions")
        sync_rate, async_rate = commits(cluster.bootstrap_servers, args.seconds)
        print(f"commits from one consumer: {sync_rate:,.0f}/s synchronous, "
              f"{async_rate:,.0f}/s asynchronous (64 in flight)")


if __name__ == "__main__":
    main()
