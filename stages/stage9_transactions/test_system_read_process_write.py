"""Exactly-once read-process-write through crashes: the whole run is checked at the end.

A loop process (``loop.py``: confluent-kafka, read_committed consumer,
transactional producer, input offsets sent in each transaction) turns every
input record into one output record on a three-broker cluster, while the
test SIGKILLs the loop process itself (restarted: the new instance fences the
old transactional id and aborts its open transaction), the leader of an output
partition, and the broker that is the loop's transaction coordinator (a new
coordinator loads ``__transaction_state`` and finishes or aborts what was
decided). Read with read_committed, the output holds each input's result
exactly once: none lost, none twice.
"""

from __future__ import annotations

import collections
import subprocess
import sys
import threading
import time

import pytest

from simplekafka.broker.transaction.records import TRANSACTION_STATE_TOPIC, partition_for
from stages.stage7_cluster.system import create_topic, running_cluster

pytestmark = pytest.mark.integration

INPUTS = 200
SOURCE, SINK, GROUP, TXN_ID = "rpw-in", "rpw-out", "rpw-group", "rpw-loop"
CONFIG = {
    "transaction.state.log.num.partitions": 3, "transaction.state.log.replication.factor": 3,
    "offsets.topic.num.partitions": 3, "offsets.topic.replication.factor": 3,
    "min.insync.replicas": 2, "group.initial.rebalance.delay.ms": 0,
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": 500,
}
DEADLINE_S = 150


def start_loop(bootstrap: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "stages.stage9_transactions.loop",
                             bootstrap, SOURCE, SINK, GROUP, TXN_ID])


def seed(bootstrap: str, done: threading.Event) -> None:
    """The inputs, over about ten seconds, so that the crashes fall in the middle."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for i in range(INPUTS):
        producer.produce(SOURCE, b"%04d" % i, partition=i % 2)
        if i % 10 == 9:
            producer.flush(30)
            time.sleep(0.2)
    assert producer.flush(60) == 0
    done.set()


def all_inputs_committed(bootstrap: str) -> bool:
    """Whether the group's committed offsets (written in the transactions) cover every input."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP})
    try:
        committed = consumer.committed([TopicPartition(SOURCE, p) for p in range(2)], 30)
    finally:
        consumer.close()
    return sum(max(tp.offset, 0) for tp in committed) == INPUTS


def committed_output(bootstrap: str, isolation: str = "read_committed") -> collections.Counter:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "checker",
                         "enable.auto.commit": False, "isolation.level": isolation})
    consumer.assign([TopicPartition(SINK, p, OFFSET_BEGINNING) for p in range(2)])
    seen: collections.Counter = collections.Counter()
    quiet_since = time.monotonic()
    try:
        while time.monotonic() - quiet_since < 2:
            message = consumer.poll(0.3)
            if message is not None and not message.error():
                seen[message.value()] += 1
                quiet_since = time.monotonic()
    finally:
        consumer.close()
    return seen


def test_each_input_is_in_the_output_exactly_once_through_sigkills(tmp_path):
    with running_cluster(tmp_path, 3, CONFIG) as (cluster, faults):
        bootstrap = cluster.bootstrap_servers
        create_topic(cluster, SOURCE, 2, 3)
        create_topic(cluster, SINK, 2, 3)
        seeded = threading.Event()
        threading.Thread(target=seed, args=(bootstrap, seeded), daemon=True).start()
        loop = start_loop(bootstrap)
        restarts = 0
        try:
            time.sleep(3)
            loop.kill()  # the loop, mid-transaction most likely
            loop.wait()
            loop = start_loop(bootstrap)
            faults.hard_bounce(cluster.leader_of(SINK, 0))
            coordinator = cluster.leader_of(
                TRANSACTION_STATE_TOPIC, partition_for(TXN_ID, CONFIG[
                    "transaction.state.log.num.partitions"]))
            faults.hard_bounce(coordinator)
            deadline = time.monotonic() + DEADLINE_S
            while True:
                assert time.monotonic() < deadline, "the loop did not finish"
                code = loop.wait(timeout=DEADLINE_S)
                if code == 0 and seeded.is_set() and all_inputs_committed(bootstrap):
                    break
                restarts += 1  # an error, or idle during a failover: start again
                loop = start_loop(bootstrap)
        finally:
            if loop.poll() is None:
                loop.kill()
                loop.wait()
        seen = committed_output(bootstrap)
        print(f"{faults.describe()}; loop restarted {restarts} more times after errors")
    expected = {b"out-%04d" % i for i in range(INPUTS)}
    missing = sorted(expected - set(seen))
    twice = sorted(v for v, n in seen.items() if n > 1)
    assert not missing and not twice and set(seen) == expected, (
        f"missing {missing[:10]} ({len(missing)}), twice {twice[:10]} ({len(twice)})")
