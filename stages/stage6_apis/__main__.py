"""Stage 6 demo: Admin, Producer and Consumer (and the CLI) against a LocalCluster.

Run it with ``python -m stages.stage6_apis``. It starts ZooKeeper and one
broker, creates a topic with Admin, produces keyed records with lz4 and shows
where murmur2 put them, consumes them back from the beginning, seeks, shows the
named errors for bad input, shows a consumer group (three members sharing six
partitions, one leaving, the rebalance) and runs the CLI once. Files go to
$SIMPLEKAFKA_DEMO_DIR if set, else a temporary directory. About 40 s.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from simplekafka.admin import Admin
from simplekafka.client import TopicPartition
from simplekafka.client.errors import KafkaError
from simplekafka.cluster import LocalCluster
from simplekafka.consumer import Consumer
from simplekafka.producer import Producer

TOPIC = "fruit"
FRUIT = ["apple", "banana", "cherry", "damson", "elder", "fig", "grape", "honeydew"]


def section(title: str) -> None:
    print(f"\n== {title} ==", flush=True)


def main() -> None:
    base = Path(os.environ.get("SIMPLEKAFKA_DEMO_DIR") or tempfile.mkdtemp(prefix="stage6-"))
    with LocalCluster(brokers=1, base_dir=base / "cluster",
                      broker_config={"group.initial.rebalance.delay.ms": 1000}) as cluster:
        bootstrap = cluster.bootstrap_servers
        with Admin(bootstrap) as admin:
            section("Admin")
            admin.create_topic(TOPIC, num_partitions=3)
            print(f"  topics: {admin.list_topics()}")
            print(f"  cluster: {admin.describe_cluster()}")

            section("Producer: keys decide partitions (murmur2, as the Java client)")
            with Producer(bootstrap, acks="all", compression_type="lz4",
                          key_serializer=str.encode, value_serializer=str.encode) as producer:
                futures = [producer.send(TOPIC, f"{name} #{n}", key=name)
                           for n in range(2) for name in FRUIT]
                producer.flush(30)
                for future in futures[: len(FRUIT)]:
                    md = future.result()
                    print(f"  {TOPIC}/{md.partition} offset {md.offset}")

            section("Consumer: from the beginning of every partition")
            with Consumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                          key_deserializer=bytes.decode, value_deserializer=bytes.decode,
                          consumer_timeout_ms=1500) as consumer:
                partitions = [TopicPartition(TOPIC, p) for p in range(3)]
                consumer.assign(partitions)
                for record in consumer:
                    print(f"  {record.partition}:{record.offset} {record.key:9} {record.value}")
                section("seek: partition 0 again from offset 1")
                consumer.seek(partitions[0], 1)
                for record in consumer.poll(3000):
                    print(f"  {record.partition}:{record.offset} {record.value}")

            section("Bad input gets a named error, promptly")
            with Producer(bootstrap, max_block_ms=1000) as plain:
                for label, call in [
                    ("a str value, no serializer", lambda: plain.send(TOPIC, "text")),
                    ("an unknown topic", lambda: plain.send("no-such-topic", b"v")),
                    ("a 2 MB record", lambda: plain.send(TOPIC, b"x" * 2_000_000)),
                ]:
                    started = time.monotonic()
                    try:
                        call()
                    except KafkaError as exc:
                        print(f"  {label}: {type(exc).__name__} "
                              f"({time.monotonic() - started:.1f} s)")

        consumer_group(bootstrap)

        section("The CLI: simplekafka consume")
        result = subprocess.run(
            [sys.executable, "-m", "simplekafka", "consume", TOPIC, "--from-beginning",
             "--partition", "0", "--max-messages", "10", "--idle-timeout-ms", "3000",
             "--print-key", "--print-offset", "-b", bootstrap],
            capture_output=True, text=True, timeout=60, check=False,
        )
        print("  " + (result.stdout or result.stderr).strip().replace("\n", "\n  "))
    print("\ndone")


GROUP_TOPIC = "deliveries"
PRINT_LOCK = threading.Lock()


def say(text: str) -> None:
    with PRINT_LOCK:  # members print from their own threads
        print(text, flush=True)


class GroupMember(threading.Thread):
    """One member of group 'couriers' polling in its own thread, printing its partitions."""

    def __init__(self, name: str, bootstrap: str, counts: dict) -> None:
        super().__init__(name=name, daemon=True)
        self.bootstrap = bootstrap
        self.counts = counts
        self.stop = threading.Event()

    def run(self) -> None:
        consumer = Consumer(bootstrap_servers=self.bootstrap, group_id="couriers",
                            client_id=self.name, auto_offset_reset="earliest",
                            session_timeout_ms=6000, heartbeat_interval_ms=500,
                            auto_commit_interval_ms=500, max_poll_interval_ms=15_000,
                            partition_assignment_strategy=["roundrobin"])
        consumer.subscribe([GROUP_TOPIC], on_assign=lambda tps: say(
            f"  {self.name:6} now owns partitions {sorted(tp.partition for tp in tps)}"))
        while not self.stop.is_set():
            for record in consumer.poll(200):
                self.counts[self.name] = self.counts.get(self.name, 0) + 1
                del record
        consumer.close()  # commits (auto-commit is on) and leaves: the others rebalance now


def consumer_group(bootstrap: str) -> None:
    section("Consumer group: three members share six partitions")
    with Admin(bootstrap) as admin:
        admin.create_topic(GROUP_TOPIC, num_partitions=6)
        with Producer(bootstrap) as producer:
            for n in range(600):
                producer.send(GROUP_TOPIC, f"parcel {n}".encode(), partition=n % 6)
        counts: dict[str, int] = {}
        members = [GroupMember(name, bootstrap, counts) for name in ("ana", "ben", "chloe")]
        for member in members:
            member.start()
        deadline = time.monotonic() + 60
        while sum(counts.values()) < 600 and time.monotonic() < deadline:
            time.sleep(0.2)
        print(f"  records read per member: {dict(sorted(counts.items()))}")
        show_group(admin)
        section("chloe leaves: the group rebalances")
        members[2].stop.set()
        members[2].join(30)
        deadline = time.monotonic() + 30  # until the two left have rejoined (no fixed pause)
        while time.monotonic() < deadline:
            group = admin.describe_group("couriers")
            if group.state == "Stable" and len(group.members) == 2:
                break
            time.sleep(0.2)
        show_group(admin)
        for member in members[:2]:
            member.stop.set()
        for member in members[:2]:
            member.join(30)


def show_group(admin: Admin) -> None:
    group = admin.describe_group("couriers")
    say(f"  group couriers: {group.state}, {len(group.members)} members, "
        f"assignor {group.protocol or '-'}")
    for member in group.members:
        say(f"    {member.client_id:6} {sorted(tp.partition for tp in member.assignment)}")


if __name__ == "__main__":
    main()
