"""Stage 4 demo: ZooKeeper and one broker, a topic, confluent-kafka and kcat, files and znodes.

Run it with ``python -m stages.stage4_broker``. It starts the embedded
ZooKeeper and one broker process with LocalCluster, creates a topic, produces
and consumes with confluent-kafka and then with kcat (gzip), and prints what
the broker left on disk and in ZooKeeper. Files go to $SIMPLEKAFKA_DEMO_DIR if
set, else a temporary directory. Every wait is bounded; it takes about 15 s.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from simplekafka.cluster import LocalCluster

TOPIC = "greetings"
PARTITIONS = 3
GREETINGS = [("en", "hello"), ("fr", "bonjour"), ("de", "hallo"), ("es", "hola"),
             ("it", "ciao"), ("nl", "hoi")]


def section(title: str) -> None:
    print(f"\n== {title} ==", flush=True)


def create_topic(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, num_partitions=PARTITIONS, replication_factor=1)])[
        TOPIC].result(30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        topic = admin.list_topics(TOPIC, timeout=5).topics[TOPIC]
        if all(p.leader >= 0 for p in topic.partitions.values()):
            for partition in sorted(topic.partitions.values(), key=lambda p: p.id):
                print(f"  {TOPIC}/{partition.id}: leader {partition.leader}, "
                      f"replicas {partition.replicas}, isr {partition.isrs}")
            return
        time.sleep(0.1)
    raise SystemExit(f"topic {TOPIC} got no leaders within 30 s")


def produce_and_consume(bootstrap: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})

    def report(error, message):
        where = f"{message.topic()}/{message.partition()} offset {message.offset()}"
        print(f"  produced {message.value().decode():8} key={message.key().decode()} -> "
              f"{where}" if error is None else f"  failed: {error}")

    for lang, word in GREETINGS:
        producer.produce(TOPIC, key=lang.encode(), value=word.encode(),
                         headers=[("source", b"confluent-kafka")], on_delivery=report)
    if producer.flush(30):
        raise SystemExit("confluent-kafka could not deliver within 30 s")

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "stage4-demo",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    received = 0
    deadline = time.monotonic() + 30
    while received < len(GREETINGS) and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is None or message.error() is not None:
            continue
        received += 1
        print(f"  consumed {TOPIC}/{message.partition()} offset {message.offset()}: "
              f"{message.key().decode()}={message.value().decode()} {message.headers()}")
    consumer.close()
    if received < len(GREETINGS):
        raise SystemExit(f"consumed only {received} of {len(GREETINGS)} records")


def kcat(bootstrap: str, *args: str, stdin: bytes | None = None) -> str:
    result = subprocess.run(["kcat", "-b", bootstrap, *args], input=stdin, capture_output=True,
                            timeout=60, check=False)
    if result.returncode != 0:
        raise SystemExit(f"kcat {' '.join(args)} failed: {result.stderr.decode()}")
    return result.stdout.decode()


def with_kcat(bootstrap: str) -> None:
    if shutil.which("kcat") is None:
        raise SystemExit("kcat is not installed (tools/bootstrap.sh installs it)")
    lines = b"".join(b"kcat-%d:a gzip-compressed greeting number %d\n" % (i, i) for i in range(5))
    print("  $ kcat -P -t greetings -p 0 -K: -z gzip -H source=kcat")
    kcat(bootstrap, "-P", "-t", TOPIC, "-p", "0", "-K:", "-z", "gzip", "-H", "source=kcat",
         stdin=lines)
    print("  $ kcat -C -t greetings -p 0 -o beginning -e")
    out = kcat(bootstrap, "-C", "-t", TOPIC, "-p", "0", "-o", "beginning", "-e", "-q",
               "-f", "  offset %o: key %k value %s headers %h\n")
    print(out, end="")
    print("  $ kcat -L")
    print("\n".join("  " + line for line in kcat(bootstrap, "-L").splitlines()))


def show_files(data_dir: Path) -> None:
    for path in sorted(data_dir.rglob("*")):
        if path.is_file():
            print(f"  {path.relative_to(data_dir)}  ({path.stat().st_size} bytes)")


def show_znodes(connect: str) -> None:
    zk = KazooClient(hosts=connect)
    zk.start(timeout=15)
    try:
        def walk(path: str, depth: int) -> None:
            data, stat = zk.get(path)
            text = data.decode(errors="replace") if data else ""
            kind = "ephemeral" if stat.ephemeralOwner else "persistent"
            label = path.rsplit("/", 1)[-1] or "/"
            print(f"  {'  ' * depth}{label} ({kind}) {text[:110]}")
            for child in sorted(zk.get_children(path)):
                if path == "/" and child == "zookeeper":
                    continue
                walk(f"{path.rstrip('/')}/{child}", depth + 1)

        walk("/", 0)
    finally:
        zk.stop()
        zk.close()


def main() -> int:
    demo_dir = os.environ.get("SIMPLEKAFKA_DEMO_DIR")
    base = Path(demo_dir) if demo_dir else Path(tempfile.mkdtemp(prefix="stage4-demo-"))
    base.mkdir(parents=True, exist_ok=True)
    cluster = LocalCluster(brokers=1, base_dir=base / "cluster")

    section("starting ZooKeeper and broker 1")
    started = time.monotonic()
    with cluster:
        print(f"  serving after {time.monotonic() - started:.1f} s: bootstrap servers "
              f"{cluster.bootstrap_servers}, ZooKeeper {cluster.zookeeper_connect}")
        print(f"  broker command: {' '.join(cluster.broker_command(cluster.brokers[1]))}")
        section(f"creating topic {TOPIC} with {PARTITIONS} partitions (through the controller)")
        create_topic(cluster.bootstrap_servers)
        section("confluent-kafka: produce with acks=all, consume by assignment")
        produce_and_consume(cluster.bootstrap_servers)
        section("kcat: produce gzip, consume, list metadata")
        with_kcat(cluster.bootstrap_servers)
        section(f"files on disk under {cluster.brokers[1].data_dir}")
        show_files(cluster.brokers[1].data_dir)
        section(f"znodes in ZooKeeper at {cluster.zookeeper_connect}")
        show_znodes(cluster.zookeeper_connect)
        section("stopping (SIGTERM: deregister, flush, clean-shutdown marker)")
    if demo_dir:
        print(f"  stopped; the broker's log is kept in {cluster.brokers[1].log_file}")
    else:
        shutil.rmtree(base, ignore_errors=True)
        print("  stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
