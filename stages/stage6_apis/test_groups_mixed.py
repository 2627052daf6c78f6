"""A mixed consumer group: confluent-kafka, kafka-python and ours, sharing six partitions.

All three clients speak the ``roundrobin`` assignor and the same subscription
bytes, so whichever is elected leader computes an assignment the others
accept. The tests check that the group covers every partition exactly once,
that when a member leaves (cleanly, or SIGKILLed so its heartbeats just stop)
the others take over its partitions within the session timeout, and that no
record a member committed is ever processed again by another member.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from simplekafka.admin import Admin
from simplekafka.cluster import LocalCluster
from simplekafka.consumer import Consumer
from simplekafka.coordination.processes import wait_until as _poll
from simplekafka.producer import Producer

pytestmark = pytest.mark.integration

PARTITIONS = 6
SESSION_MS = 6000
HEARTBEAT_MS = 1000
ALL = set(range(PARTITIONS))
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def mixed_cluster(tmp_path_factory):
    with LocalCluster(brokers=1, base_dir=tmp_path_factory.mktemp("mixed"),
                      broker_config={"group.initial.rebalance.delay.ms": 500}) as cluster:
        yield cluster


class Member(threading.Thread):
    """One group member in a thread: poll, process, commit after every batch."""

    def __init__(self, name: str) -> None:
        super().__init__(name=name, daemon=True)
        self.stop = threading.Event()
        self.assignment: set[int] = set()
        self.processed: list[tuple[int, int]] = []
        self.committed: set[tuple[int, int]] = set()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.consume()
        except BaseException as exc:  # reported by the test
            self.error = exc


class CkMember(Member):
    def __init__(self, bootstrap: str, topic: str, group: str) -> None:
        super().__init__("confluent-kafka")
        self.args = (bootstrap, topic, group)

    def consume(self) -> None:
        from confluent_kafka import Consumer as CkConsumer
        from confluent_kafka import KafkaException

        bootstrap, topic, group = self.args
        consumer = CkConsumer({
            "bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
            "enable.auto.commit": False, "session.timeout.ms": SESSION_MS,
            "heartbeat.interval.ms": HEARTBEAT_MS, "partition.assignment.strategy": "roundrobin"})
        consumer.subscribe([topic])
        try:
            while not self.stop.is_set():
                message = consumer.poll(0.2)
                self.assignment = {tp.partition for tp in consumer.assignment()}
                if message is None or message.error():
                    continue
                record = (message.partition(), message.offset())
                self.processed.append(record)
                try:
                    consumer.commit(message=message, asynchronous=False)
                    self.committed.add(record)
                except KafkaException:
                    pass  # rebalanced meanwhile: the next owner may process it again
        finally:
            consumer.close()


class KpMember(Member):
    def __init__(self, bootstrap: str, topic: str, group: str) -> None:
        super().__init__("kafka-python")
        self.args = (bootstrap, topic, group)

    def consume(self) -> None:
        from kafka import KafkaConsumer
        from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
        from kafka.errors import KafkaError as KpError

        bootstrap, topic, group = self.args
        consumer = KafkaConsumer(
            topic, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
            enable_auto_commit=False, session_timeout_ms=SESSION_MS,
            heartbeat_interval_ms=HEARTBEAT_MS,
            partition_assignment_strategy=[RoundRobinPartitionAssignor])
        try:
            while not self.stop.is_set():
                batches = consumer.poll(timeout_ms=200)
                self.assignment = {tp.partition for tp in consumer.assignment()}
                records = [(m.partition, m.offset) for ms in batches.values() for m in ms]
                if not records:
                    continue
                self.processed += records
                try:
                    consumer.commit()
                    self.committed.update(records)
                except KpError:
                    pass
        finally:
            consumer.close()


class OurMember(Member):
    def __init__(self, bootstrap: str, topic: str, group: str) -> None:
        super().__init__("simplekafka")
        self.args = (bootstrap, topic, group)

    def consume(self) -> None:
        from simplekafka.client.errors import KafkaError

        bootstrap, topic, group = self.args
        consumer = Consumer(bootstrap_servers=bootstrap, group_id=group,
                            auto_offset_reset="earliest", enable_auto_commit=False,
                            session_timeout_ms=SESSION_MS, heartbeat_interval_ms=HEARTBEAT_MS,
                            partition_assignment_strategy=["roundrobin"])
        consumer.subscribe([topic])
        try:
            while not self.stop.is_set():
                records = [(r.partition, r.offset) for r in consumer.poll(200)]
                self.assignment = {tp.partition for tp in consumer.assignment()}
                if not records:
                    continue
                self.processed += records
                try:
                    consumer.commit()
                    self.committed.update(records)
                except KafkaError:
                    pass
        finally:
            consumer.close()


# A member in its own process, so that it can be SIGKILLed: prints its assignment.
KILLABLE = f"""
import sys, time
from simplekafka.consumer import Consumer
consumer = Consumer(bootstrap_servers=sys.argv[1], group_id=sys.argv[3],
                    auto_offset_reset="earliest", enable_auto_commit=False,
                    session_timeout_ms={SESSION_MS}, heartbeat_interval_ms={HEARTBEAT_MS},
                    partition_assignment_strategy=["roundrobin"])
consumer.subscribe([sys.argv[2]])
while True:
    consumer.poll(200)
    print("ASSIGNED", sorted(tp.partition for tp in consumer.assignment()), flush=True)
"""


class Traffic(threading.Thread):
    """Keeps producing to every partition until stopped; counts what it sent."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(daemon=True)
        self.producer = Producer(bootstrap_servers=bootstrap, linger_ms=5)
        self.topic = topic
        self.stop = threading.Event()
        self.sent = 0

    def run(self) -> None:
        while not self.stop.is_set():
            for p in range(PARTITIONS):
                self.producer.send(self.topic, f"{self.sent}".encode(), partition=p)
                self.sent += 1
            time.sleep(0.05)
        self.producer.flush()
        self.producer.close()


def wait_until(condition, timeout: float, what: str) -> float:
    """The seconds ``condition`` took to hold."""
    start = time.monotonic()
    _poll(condition, what, timeout=timeout, interval=0.1, error=AssertionError)
    return time.monotonic() - start


def covers_exactly_once(members) -> bool:
    seen = [p for m in members for p in m.assignment]
    return len(seen) == len(set(seen)) and set(seen) == ALL


def setup_topic(bootstrap: str) -> tuple[str, str]:
    topic, group = f"mixed-{uuid.uuid4().hex[:8]}", f"mixed-{uuid.uuid4().hex[:8]}"
    with Admin(bootstrap) as admin:
        admin.create_topic(topic, num_partitions=PARTITIONS)
    return topic, group


def check_no_committed_record_processed_again(members) -> None:
    for member in members:
        assert member.error is None, f"{member.name} failed: {member.error!r}"
    for a in members:
        for b in members:
            if a is not b:
                again = a.committed & set(b.processed)
                assert not again, \
                    f"{b.name} processed records {a.name} committed: {sorted(again)[:5]}"


def test_mixed_group_shares_partitions_and_survives_a_clean_leave(mixed_cluster):
    bootstrap = mixed_cluster.bootstrap_servers
    topic, group = setup_topic(bootstrap)
    traffic = Traffic(bootstrap, topic)
    traffic.start()
    members = [CkMember(bootstrap, topic, group), KpMember(bootstrap, topic, group),
               OurMember(bootstrap, topic, group)]
    for member in members:
        member.start()
    try:
        wait_until(lambda: covers_exactly_once(members) and all(
            len(m.assignment) == 2 for m in members), 60, "three members with two partitions each")
        leaving = members[2]
        leaving.stop.set()
        leaving.join(20)
        took = wait_until(lambda: covers_exactly_once(members[:2]), SESSION_MS / 1000,
                          "the two others covering every partition after a clean leave")
        print(f"takeover after a clean leave: {took:.2f} s")
        traffic.stop.set()
        traffic.join(20)
        total = traffic.sent
        wait_until(lambda: len({r for m in members for r in m.processed}) >= total, 60,
                   f"all {total} records processed")
    finally:
        traffic.stop.set()
        for member in members:
            member.stop.set()
        for member in members:
            member.join(20)
    check_no_committed_record_processed_again(members)


def test_mixed_group_takes_over_from_a_killed_member(mixed_cluster):
    bootstrap = mixed_cluster.bootstrap_servers
    topic, group = setup_topic(bootstrap)
    members = [CkMember(bootstrap, topic, group), KpMember(bootstrap, topic, group)]
    env = dict(os.environ, PYTHONPATH=str(REPO))
    killable = subprocess.Popen([sys.executable, "-c", KILLABLE, bootstrap, topic, group],
                                stdout=subprocess.PIPE, text=True, env=env)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(killable.stdout), daemon=True)
    reader.start()
    for member in members:
        member.start()
    try:
        def three_way() -> bool:
            if not lines or not lines[-1].startswith("ASSIGNED"):
                return False
            theirs = set(eval(lines[-1].split(" ", 1)[1]))  # a printed list of ints
            seen = [p for m in members for p in m.assignment] + sorted(theirs)
            return len(seen) == len(set(seen)) == PARTITIONS and len(theirs) == 2

        wait_until(three_way, 60, "three members (one in a subprocess) sharing the partitions")
        killable.send_signal(signal.SIGKILL)
        killable.wait(10)
        took = wait_until(lambda: covers_exactly_once(members), SESSION_MS / 1000 + 5,
                          "the two others covering every partition after a SIGKILL")
        print(f"takeover after SIGKILL: {took:.2f} s (session timeout {SESSION_MS / 1000} s)")
    finally:
        if killable.poll() is None:
            killable.kill()
            killable.wait(10)
        for member in members:
            member.stop.set()
        for member in members:
            member.join(20)
    for member in members:
        assert member.error is None, f"{member.name} failed: {member.error!r}"
