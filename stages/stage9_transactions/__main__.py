"""Stage 9 demo: exactly-once read-process-write on a local cluster, crash included.

    python -m stages.stage9_transactions

Starts a one-broker LocalCluster, writes 40 input records, and runs the
read-process-write loop of ``loop.py`` (confluent-kafka: read_committed
consumer, transactional producer, input offsets committed inside each
transaction) as a separate process. The loop is SIGKILLed after its first
transactions and started again: the new instance fences the old transactional
id and aborts its open transaction, waits for the group to give it the
partitions (the killed member must time out first), and resumes from the
committed offsets.
At the end the output, read with read_committed, holds each input's result
exactly once, while read_uncommitted also shows what the aborted transaction
had written. Files go to $SIMPLEKAFKA_DEMO_DIR if set, else a temporary
directory. About half a minute.
"""

from __future__ import annotations

import collections
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from simplekafka.admin import Admin
from simplekafka.cluster import LocalCluster

INPUTS = 40
SOURCE, SINK, GROUP, TXN_ID = "demo-in", "demo-out", "demo-group", "demo-loop"


def read(bootstrap: str, isolation: str) -> collections.Counter:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "demo-reader",
                         "enable.auto.commit": False, "isolation.level": isolation})
    consumer.assign([TopicPartition(SINK, 0, OFFSET_BEGINNING)])
    seen: collections.Counter = collections.Counter()
    quiet_since = time.monotonic()
    while time.monotonic() - quiet_since < 2:
        message = consumer.poll(0.2)
        if message is not None and not message.error():
            seen[message.value()] += 1
            quiet_since = time.monotonic()
    consumer.close()
    return seen


def loop(bootstrap: str, pause_s: float = 0.0) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "stages.stage9_transactions.loop",
                             bootstrap, SOURCE, SINK, GROUP, TXN_ID, str(pause_s)])


def main(base_dir: Path) -> int:
    from confluent_kafka import Producer

    cluster = LocalCluster(brokers=1, base_dir=base_dir / "cluster", broker_config={
        "transaction.state.log.num.partitions": 1, "group.initial.rebalance.delay.ms": 0})
    cluster.start()
    try:
        bootstrap = cluster.bootstrap_servers
        with Admin(bootstrap) as admin:
            admin.create_topic(SOURCE)
            admin.create_topic(SINK)
        producer = Producer({"bootstrap.servers": bootstrap})
        for i in range(INPUTS):
            producer.produce(SOURCE, b"%02d" % i)
        producer.flush(30)
        print(f"{INPUTS} inputs written to {SOURCE}; starting the loop")
        first = loop(bootstrap, pause_s=2.0)  # slow: it is killed inside a transaction
        deadline = time.monotonic() + 60
        while sum(read(bootstrap, "read_uncommitted").values()) < 10:
            if time.monotonic() > deadline:
                raise SystemExit("the loop wrote nothing within a minute")
        first.kill()
        first.wait()
        print("loop SIGKILLed inside a transaction (its records written, not committed); "
              "starting it again")
        if loop(bootstrap).wait(timeout=300) != 0:
            raise SystemExit("the restarted loop failed")
        committed = read(bootstrap, "read_committed")
        everything = read(bootstrap, "read_uncommitted")
        once = all(committed[b"out-%02d" % i] == 1 for i in range(INPUTS))
        print(f"read_committed: {sum(committed.values())} records, each input's result "
              f"exactly once: {once and len(committed) == INPUTS}")
        print(f"read_uncommitted: {sum(everything.values())} records (aborted writes "
              f"included: {sum(everything.values()) - sum(committed.values())})")
        return 0 if once and len(committed) == INPUTS else 1
    finally:
        cluster.stop()


if __name__ == "__main__":
    root = os.environ.get("SIMPLEKAFKA_DEMO_DIR")
    if root:
        sys.exit(main(Path(root)))
    with tempfile.TemporaryDirectory(prefix="stage9-") as tmp:
        sys.exit(main(Path(tmp)))
