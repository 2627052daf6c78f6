"""Replication cost and failover time, on real processes. Prints figures, never passes or fails.

1. Throughput: confluent-kafka produces 100-byte values to one partition,
   once against a single broker with acks=1, once against three brokers with
   replication factor 3 and acks=all (min.insync.replicas 2), in the same run.
   Issue 7 aims at >= 40% for the second as a share of the first (Kafka's own
   2014 figure was 51%).
2. Failover: with a producer writing acks=all once every few milliseconds, the
   leader of the partition is SIGKILLed; the time to the first acks=all write
   acknowledged by the new leader is printed next to the ZooKeeper session
   timeout (the controller cannot know before the dead broker's session
   expires). Issue 7 aims at <= 2 s beyond that timeout.

    .venv/bin/python benchmarks/bench_replication.py [--messages 200000] [--failovers 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from simplekafka.admin import Admin
from simplekafka.cluster import LocalCluster

SESSION_TIMEOUT_MS = 6000
BROKER_CONFIG = {"zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS),
                 "replica.lag.time.max.ms": "10000"}


def produce_rate(bootstrap: str, topic: str, messages: int, size: int, acks: str) -> float:
    """Messages per second for ``messages`` values of ``size`` bytes, after a warm-up."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 5,
                         "batch.size": 65536, "queue.buffering.max.messages": 2_000_000,
                         "queue.buffering.max.kbytes": 1_048_576})
    value = b"x" * size
    for _ in range(1000):
        producer.produce(topic, value, partition=0)
    producer.flush(60)
    failures = []
    started = time.perf_counter()
    for _ in range(messages):
        while True:
            try:
                producer.produce(topic, value, partition=0,
                                 on_delivery=lambda e, _m: e and failures.append(e))
                break
            except BufferError:
                producer.poll(0.01)
    producer.flush(600)
    elapsed = time.perf_counter() - started
    if failures:
        print(f"  ({len(failures)} deliveries failed, e.g. {failures[0]})")
    return messages / elapsed


def throughput(base: Path, messages: int, size: int) -> None:
    print(f"== throughput: {messages} x {size}-byte values, confluent-kafka, one partition")
    with LocalCluster(brokers=1, base_dir=base / "single", broker_config=BROKER_CONFIG) as one:
        with Admin(one.bootstrap_servers) as admin:
            admin.create_topic("single", 1, 1)
        single = produce_rate(one.bootstrap_servers, "single", messages, size, "1")
    print(f"  1 broker, acks=1:                {single:>10,.0f} msg/s")
    with LocalCluster(brokers=3, base_dir=base / "three", broker_config=BROKER_CONFIG) as three:
        with Admin(three.bootstrap_servers) as admin:
            admin.create_topic("replicated", 1, 3, {"min.insync.replicas": "2"})
        three.wait_for_isr("replicated", 0, [1, 2, 3])
        replicated = produce_rate(three.bootstrap_servers, "replicated", messages, size, "all")
    print(f"  3 brokers, RF 3, acks=all:       {replicated:>10,.0f} msg/s")
    print(f"  RF 3 acks=all / 1 broker acks=1: {replicated / single:>10.0%}  (aim >= 40%)")


def failover_times(base: Path, runs: int) -> None:
    from confluent_kafka import Producer

    print(f"\n== failover: SIGKILL of the leader -> first acks=all write on the new leader "
          f"(zookeeper.session.timeout.ms = {SESSION_TIMEOUT_MS})")
    with LocalCluster(brokers=3, base_dir=base / "failover",
                      broker_config=BROKER_CONFIG) as cluster:
        with Admin(cluster.bootstrap_servers) as admin:
            admin.create_topic("failover", 1, 3, {"min.insync.replicas": "2"})
        times = []
        for run in range(1, runs + 1):
            cluster.wait_for_isr("failover", 0, [1, 2, 3], timeout=120)
            leader = cluster.leader_of("failover", 0)
            acked_at: list[float] = []
            producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all",
                                 "linger.ms": 0, "message.timeout.ms": 60_000, "log_level": 2})

            def delivered(error, _message, acked_at=acked_at):
                if error is None:
                    acked_at.append(time.monotonic())

            started = time.monotonic()
            killed_at = None
            while time.monotonic() < started + 120:
                producer.produce("failover", b"x" * 100, partition=0, on_delivery=delivered)
                producer.poll(0.005)
                if killed_at is None and time.monotonic() > started + 2:
                    cluster.kill(leader)  # answers already in flight arrive within ms
                    killed_at = time.monotonic()
                if killed_at is not None and acked_at and acked_at[-1] > killed_at + 0.1:
                    break
            producer.flush(60)
            after_kill = [t for t in acked_at if killed_at is not None and t > killed_at + 0.1]
            if not after_kill:
                print(f"  run {run}: no write acknowledged by a new leader within 120 s")
            else:
                seconds = after_kill[0] - killed_at
                times.append(seconds)
                new_leader = cluster.leader_of("failover", 0)
                print(f"  run {run}: broker {leader} killed; first acks=all write on broker "
                      f"{new_leader} after {seconds:.2f} s "
                      f"({seconds - SESSION_TIMEOUT_MS / 1000:+.2f} s beyond the session timeout)")
            cluster.restart(leader)
        if times:
            timeout_s = SESSION_TIMEOUT_MS / 1000
            print(f"  median {statistics.median(times):.2f} s; session timeout "
                  f"{timeout_s:.1f} s; aim: <= {timeout_s + 2:.1f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--failovers", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-replication-") as base:
        throughput(Path(base), args.messages, args.size)
        failover_times(Path(base), args.failovers)


if __name__ == "__main__":
    main()
