"""The three-broker failover demo that ``run_cluster.sh`` and the stage 7 chapter run.

ZooKeeper and three brokers start as real processes (LocalCluster); a topic
with three partitions, each on all three brokers, takes writes with
acks=all; the leader of partition 0 is killed with SIGKILL; the controller
elects a new leader from the in-sync replicas; the checker shows that every
acknowledged record can still be read; the killed broker comes back and
rejoins the ISR. Everything it starts, it stops (``--keep`` waits for Ctrl-C
first, so you can play with the cluster).

``--secure`` runs the same over SASL_SSL: the brokers get a throwaway CA and
certificates (``simplekafka certs``), replicate over a SASL_SSL inter-broker
listener (logging in as ``User:admin`` with PLAIN), and the producer and the
consumer (confluent-kafka) connect over SASL_SSL as the SCRAM-SHA-512 user
``demo``, created in ZooKeeper like ``simplekafka users add`` does. The
brokers run Kafka's ACL authorizer with ``super.users=User:admin``: the brokers'
own login (their requests to themselves carry it too) and nobody else. The
operator's tools log in as admin over SASL_SSL to create the topics and grant
``demo`` Write and Read on the demo topic and Read on its checker's group
(``simplekafka acls add``); ``demo`` is shown refused on a topic it has no ACL
for, and so is a client on the loopback PLAINTEXT listener (User:ANONYMOUS,
nobody in particular), which stays for LocalCluster's own probes. The Spark
step, whose source speaks PLAINTEXT only, is left out.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from simplekafka.cluster.checker import DeliveryLog
from simplekafka.cluster.faults import Faults
from simplekafka.cluster.local import LocalCluster

if TYPE_CHECKING:
    from simplekafka.admin import Admin

TOPIC = "payments"
PARTITIONS = 3
REPLICATION_FACTOR = 3
#: Short timeouts so that failover takes seconds, not Kafka's production minutes.
DEMO_BROKER_CONFIG = {
    "zookeeper.session.timeout.ms": "6000",
    "replica.lag.time.max.ms": "4000",
}
TOPIC_CONFIG = {"min.insync.replicas": "2"}


class Narrator:
    """Prints numbered steps; in interactive mode waits for Enter before each."""

    def __init__(self, interactive: bool = False, out=None) -> None:
        self.interactive = interactive
        self.out = out or sys.stdout
        self.step = 0

    def __call__(self, title: str) -> None:
        self.step += 1
        if self.interactive:
            input(f"\n[press Enter for step {self.step}: {title}] ")
        self.say(f"\n=== {self.step}. {title}")

    def say(self, text: str = "") -> None:
        print(text, file=self.out, flush=True)


def partition_table(cluster: LocalCluster, topic: str, partitions: int) -> str:
    """Leader, replicas and ISR of every partition, as ZooKeeper records them."""
    lines = [f"{'partition':>9}  {'leader':>6}  {'replicas':<10} {'isr':<10} epoch"]
    for partition in range(partitions):
        state = cluster.partition_state(topic, partition)
        replicas = ",".join(map(str, cluster.replicas_of(topic, partition)))
        if state is None:
            lines.append(f"{partition:>9}  {'?':>6}  {replicas:<10} {'?':<10} ?")
            continue
        isr = ",".join(map(str, state.isr))
        lines.append(f"{partition:>9}  {state.leader:>6}  {replicas:<10} {isr:<10} "
                     f"{state.leader_epoch}")
    return "\n".join(lines)


#: The secure demo's client login (a SCRAM-SHA-512 user in /config/users).
SECURE_USER = ("demo", "demo-secret")


def secure_setup(base_dir: Path) -> tuple[dict, dict]:
    """(broker settings, confluent-kafka client settings) for the SASL_SSL demo."""
    from simplekafka.broker.security.certs import make_certificates
    from simplekafka.cluster.security import client_config, secure_broker_config

    certs = make_certificates(base_dir / "certs", clients=[])
    # ACLs on, and the brokers' own login (admin) the only super user, not User:ANONYMOUS.
    brokers = secure_broker_config(certs, {}, ("SASL_SSL",), inter_broker_listener="SASL_SSL",
                                   authorizer=True)
    clients = client_config("SASL_SSL", certs, "SCRAM-SHA-512", *SECURE_USER)
    return brokers, clients


#: What the demo user may do (``simplekafka acls add`` arguments), and the topic it may not.
SECURE_ACLS = [("--operation", "Write", "--operation", "Read", "--topic", TOPIC),
               ("--operation", "Read", "--group", "demo-checker")]
FORBIDDEN_TOPIC = "audit"


@contextlib.contextmanager
def operator_admin(cluster: LocalCluster, clients: dict | None) -> Iterator[Admin]:
    """The operator's admin client: over PLAINTEXT, or in the secure demo (``clients``:
    the demo user's settings, for the CA) logged in as the brokers' user over SASL_SSL,
    since there a PLAINTEXT client is User:ANONYMOUS and may do nothing."""
    from simplekafka.admin import Admin

    if clients is None:
        with Admin(cluster.bootstrap_servers) as admin:
            yield admin
        return
    from simplekafka.client.client import KafkaClient
    from simplekafka.client.security import client_security
    from simplekafka.cluster.security import ADMIN

    login = client_security("SASL_SSL", "PLAIN", *ADMIN, ssl_cafile=clients["ssl.ca.location"])
    with KafkaClient(cluster.bootstrap("SASL_SSL"), security=login) as client, \
            Admin(client=client) as admin:
        yield admin


def grant_secure_acls(cluster: LocalCluster, say: Callable[[str], None],
                      clients: dict) -> None:
    """Give the demo user its ACLs, the operator logged in as admin over SASL_SSL."""
    from simplekafka.protocol.acls import (
        AccessControlEntry,
        AclBinding,
        AclOperation,
        AclPermissionType,
        ResourcePattern,
        ResourceType,
    )

    principal = f"User:{SECURE_USER[0]}"
    wanted = [(ResourceType.TOPIC, TOPIC, AclOperation.WRITE),
              (ResourceType.TOPIC, TOPIC, AclOperation.READ),
              (ResourceType.GROUP, "demo-checker", AclOperation.READ)]
    with operator_admin(cluster, clients) as admin:
        admin.create_acls([AclBinding(ResourcePattern(kind, name), AccessControlEntry(
            principal, "*", operation, AclPermissionType.ALLOW))
            for kind, name, operation in wanted])
        for arguments in SECURE_ACLS:
            say(f"  simplekafka acls add --allow-principal {principal} {' '.join(arguments)}")
        for binding in admin.describe_acls():
            say(f"  {binding.pattern}: {binding.entry}")


def show_refusal(cluster: LocalCluster, clients: dict | None,
                 topic: str = FORBIDDEN_TOPIC) -> str:
    """A write where no ACL allows it: the error the producer gets. ``clients``: the demo
    user's settings (SASL_SSL); None: a PLAINTEXT client, User:ANONYMOUS."""
    from confluent_kafka import Producer

    outcome = []
    where = ({"bootstrap.servers": cluster.bootstrap("SASL_SSL"), **clients}
             if clients is not None else {"bootstrap.servers": cluster.bootstrap_servers})
    producer = Producer({**where, "message.timeout.ms": 15000})
    producer.produce(topic, b"not allowed", on_delivery=lambda e, m: outcome.append(e))
    producer.flush(30)
    return outcome[0].name() if outcome and outcome[0] is not None else "delivered"


def add_secure_user(cluster: LocalCluster) -> None:
    """Create the demo's SCRAM user and wait until every broker can log it in."""
    from simplekafka.coordination.users import set_scram_credential
    from simplekafka.protocol.sasl import SCRAM_MECHANISMS, make_credential

    set_scram_credential(cluster.zk, SECURE_USER[0], "SCRAM-SHA-512",
                         make_credential(SCRAM_MECHANISMS["SCRAM-SHA-512"], SECURE_USER[1]))
    cluster.wait_for(lambda: all(
        f"SCRAM credentials of user {SECURE_USER[0]} updated" in b.log_file.read_text()
        for b in cluster.brokers.values()), "every broker to know the demo user", 30)


def produce(cluster: LocalCluster, deliveries: DeliveryLog, first: int, count: int,
            secure: dict | None = None) -> None:
    """Send ``count`` numbered records with acks=all and wait for every answer
    (over SASL_SSL with confluent-kafka when ``secure`` holds its client settings)."""
    if secure is not None:
        from confluent_kafka import Producer as SecureProducer

        secure_producer = SecureProducer({"bootstrap.servers": cluster.bootstrap("SASL_SSL"),
                                          **secure, "acks": "all", "linger.ms": 5,
                                          "message.timeout.ms": 60_000})
        for number in range(first, first + count):
            secure_producer.produce(TOPIC, key=str(number % 7).encode(),
                             value=f"payment-{number:05d}".encode(),
                             on_delivery=deliveries.confluent_callback)
            secure_producer.poll(0)
        secure_producer.flush(60)
        return
    from simplekafka.producer import Producer

    with Producer(cluster.bootstrap_servers, acks="all", linger_ms=5,
                  request_timeout_ms=10_000, delivery_timeout_ms=60_000) as producer:
        for number in range(first, first + count):
            value = f"payment-{number:05d}".encode()
            deliveries.track(producer.send(TOPIC, value=value, key=str(number % 7).encode()),
                             key=str(number % 7).encode(), value=value)
        producer.flush(60)


def consume_everything(cluster: LocalCluster, deliveries: DeliveryLog,
                       timeout: float = 30.0, secure: dict | None = None) -> int:
    """Read every partition from the start to its end (or its last ack); returns records read."""
    if secure is not None:
        return _consume_secure(cluster, deliveries, timeout, secure)
    from simplekafka.consumer import Consumer

    with Consumer(bootstrap_servers=cluster.bootstrap_servers,
                  auto_offset_reset="earliest") as consumer:
        partitions = [(TOPIC, p) for p in range(PARTITIONS)]
        consumer.assign(partitions)
        acked = deliveries.acked_ends()
        ends = {tp: max(end, acked.get((tp.topic, tp.partition), 0))
                for tp, end in consumer.end_offsets(consumer.assignment()).items()}
        read = 0
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all(consumer.position(tp) >= end for tp, end in ends.items()):
                break
            records = consumer.poll(500)
            deliveries.consumed_all(records)
            read += len(records)
        return read


def _consume_secure(cluster: LocalCluster, deliveries: DeliveryLog, timeout: float,
                    secure: dict) -> int:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": cluster.bootstrap("SASL_SSL"), **secure,
                         "group.id": "demo-checker", "enable.auto.commit": False})
    try:
        acked = deliveries.acked_ends()
        ends = {p: max(consumer.get_watermark_offsets(TopicPartition(TOPIC, p), 10)[1],
                       acked.get((TOPIC, p), 0)) for p in range(PARTITIONS)}
        consumer.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
        positions = dict.fromkeys(range(PARTITIONS), 0)
        read = 0
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and any(positions[p] < e for p, e in ends.items()):
            for message in consumer.consume(500, 0.5):
                topic, partition, offset = message.topic(), message.partition(), message.offset()
                if (message.error() is None and topic is not None and partition is not None
                        and offset is not None):
                    deliveries.consumed(topic, partition, offset, message.key(), message.value())
                    positions[partition] = offset + 1
                    read += 1
        return read
    finally:
        consumer.close()


#: A last step run on the live cluster after the failover: ``(cluster, step) -> ok``.
#: ``run_cluster.sh`` passes the Spark consumer (``simplekafka.spark.demo``) here;
#: this layer cannot import Spark itself.
ExtraStep = Callable[[LocalCluster, "Narrator"], bool]


def run_demo(base_dir: Path | None = None, interactive: bool = False, keep: bool = False,
             out=None, after_failover: ExtraStep | None = None, secure: bool = False) -> int:
    """The whole walk-through; returns 0 when nothing acknowledged was lost (and the
    ``after_failover`` step, if any, succeeded). ``secure``: over SASL_SSL."""
    import shutil
    import tempfile

    step = Narrator(interactive, out)
    say = step.say
    config, listeners, clients, made_dir = dict(DEMO_BROKER_CONFIG), [], None, None
    if secure:
        from simplekafka.cluster.security import ADMIN

        if base_dir is None:
            base_dir = made_dir = Path(tempfile.mkdtemp(prefix="simplekafka-demo-"))
        broker_security, clients = secure_setup(Path(base_dir))
        config.update(broker_security)
        listeners = ["SASL_SSL"]
        step("start ZooKeeper and three brokers serving SASL_SSL (TLS, then a SASL login), "
             "replicating over SASL_SSL too")
    else:
        step("start ZooKeeper and three brokers (each a real process)")
    cluster_dir = Path(base_dir) / "cluster" if secure and base_dir else base_dir
    cluster = LocalCluster(brokers=3, base_dir=cluster_dir,
                           broker_config=config, listeners=listeners, secure_zookeeper=secure)
    cluster.start()
    try:
        if clients is not None:  # the secure demo
            add_secure_user(cluster)
            say(f"SASL_SSL bootstrap servers: {cluster.bootstrap('SASL_SSL')}")
            say(f"client settings: security.protocol=SASL_SSL, sasl.mechanism=SCRAM-SHA-512, "
                f"sasl.username={SECURE_USER[0]}, ssl.ca.location={clients['ssl.ca.location']}")
            say("(the PLAINTEXT listener stays on 127.0.0.1 for the cluster's own probes; "
                "a client there is User:ANONYMOUS, no super user)")
            say(f"the operator's tools log in as User:{ADMIN[0]}, the brokers' own user "
                "and the only super user")
            say("ZooKeeper takes SASL logins and every znode carries Kafka's ACLs "
                "(zookeeper.set.acl=true): only the brokers' login may change them")
            if after_failover is not None:
                say("(the Spark step is left out: its source speaks PLAINTEXT only)")
                after_failover = None
        say(f"bootstrap servers: {cluster.bootstrap_servers}")
        say(f"ZooKeeper:         {cluster.zookeeper_connect}")
        say(f"controller:        broker {cluster.controller_id()}")

        step(f"create topic {TOPIC!r}: {PARTITIONS} partitions, replication factor "
             f"{REPLICATION_FACTOR}, min.insync.replicas 2")
        with operator_admin(cluster, clients) as admin:
            admin.create_topic(TOPIC, PARTITIONS, REPLICATION_FACTOR, TOPIC_CONFIG)
        for partition in range(PARTITIONS):
            cluster.wait_for_isr(TOPIC, partition, cluster.replicas_of(TOPIC, partition))
        say(partition_table(cluster, TOPIC, PARTITIONS))
        if clients is not None:  # the secure demo
            step(f"ACLs: User:{SECURE_USER[0]} may write and read {TOPIC!r}, nothing else")
            grant_secure_acls(cluster, say, clients)
            with operator_admin(cluster, clients) as admin:
                admin.create_topic(FORBIDDEN_TOPIC, 1, REPLICATION_FACTOR)
            say(f"User:{SECURE_USER[0]} producing to {FORBIDDEN_TOPIC!r}: "
                f"{show_refusal(cluster, clients)}")
            say(f"User:ANONYMOUS (PLAINTEXT) producing to {TOPIC!r}: "
                f"{show_refusal(cluster, None, TOPIC)}")

        step("produce 300 records with acks=all (acknowledged once every ISR member has them)")
        deliveries = DeliveryLog()
        produce(cluster, deliveries, 0, 300, clients)
        say(f"acknowledged: {len(deliveries.acks)}, failed: {deliveries.failed_sends}")

        faults = Faults(cluster, announce=False)
        victim = cluster.leader_of(TOPIC, 0)
        step(f"SIGKILL broker {victim}, the leader of partition 0, while producing 300 more")
        writer = threading.Thread(target=produce, args=(cluster, deliveries, 300, 300, clients))
        writer.start()
        time.sleep(0.2)
        killed_at = time.monotonic()
        faults.kill(victim)
        say(f"broker {victim} killed; its ZooKeeper session lives until it times out "
            f"({DEMO_BROKER_CONFIG['zookeeper.session.timeout.ms']} ms)")
        cluster.wait_for_znode_gone(victim)
        new_leader = cluster.wait_for_leader(TOPIC, 0, not_=victim)
        say(f"new leader of partition 0: broker {new_leader} "
            f"({time.monotonic() - killed_at:.1f} s after the kill)")
        writer.join(120)
        say(partition_table(cluster, TOPIC, PARTITIONS))
        say(f"acknowledged: {len(deliveries.acks)}, failed: {deliveries.failed_sends}")

        step("consume everything and check that nothing acknowledged was lost")
        say("(a new leader's high watermark lags until its followers fetch from it: "
            "read up to the last acknowledged offset)")
        read = consume_everything(cluster, deliveries, secure=clients)
        report = deliveries.check()
        say(f"consumed {read} records")
        say(report.summary())
        say("nothing acknowledged was lost" if report.ok else "ACKNOWLEDGED RECORDS WERE LOST")

        step(f"restart broker {victim}: it truncates to the new leader's log and catches up")
        faults.restart(victim)
        for partition in range(PARTITIONS):
            cluster.wait_for_isr(TOPIC, partition, [victim])
        say(f"broker {victim} is back in every ISR")
        say(partition_table(cluster, TOPIC, PARTITIONS))

        extra_ok = after_failover(cluster, step) if after_failover is not None else True

        if keep:
            say(f"\nthe cluster keeps running: bootstrap servers {cluster.bootstrap_servers}")
            say(f"  try: simplekafka topics describe --bootstrap-server "
                f"{cluster.brokers[1].address}")
            if shutil.which("kcat"):  # installed by ./run_tests.sh's set-up, not the demo's
                say(f"   or: kcat -b {cluster.brokers[1].address} -L")
            if secure:
                say("  (over PLAINTEXT you are User:ANONYMOUS and see no topic; log in over "
                    "SASL_SSL with the client settings above)")
            say("press Ctrl-C to stop it")
            _wait_for_interrupt()
        return 0 if report.ok and extra_ok else 1
    finally:
        say("\nstopping the brokers and ZooKeeper")
        cluster.cleanup()
        if made_dir is not None:
            shutil.rmtree(made_dir, ignore_errors=True)


def _wait_for_interrupt() -> None:
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):  # Ctrl-C, or kill from another shell
        signal.signal(signum, lambda *_: stop.set())
    while not stop.wait(1.0):
        pass


def build_parser() -> argparse.ArgumentParser:
    """The demo's options (``simplekafka.spark.demo`` adds ``--no-spark``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--interactive", action="store_true", help="pause before each step")
    parser.add_argument("--keep", action="store_true",
                        help="leave the cluster running at the end until Ctrl-C")
    parser.add_argument("--dir", type=Path, default=None,
                        help="where the brokers keep data and logs (default: a temp dir, "
                             "or $SIMPLEKAFKA_DEMO_DIR)")
    parser.add_argument("--secure", action="store_true",
                        help="brokers, replication and clients over SASL_SSL")
    return parser


def main(argv: list[str] | None = None, after_failover: ExtraStep | None = None,
         parser: argparse.ArgumentParser | None = None) -> int:
    parser = parser or build_parser()
    args = parser.parse_args(argv)
    base_dir = args.dir or (Path(os.environ["SIMPLEKAFKA_DEMO_DIR"]) / "cluster"
                            if os.environ.get("SIMPLEKAFKA_DEMO_DIR") else None)
    try:
        return run_demo(base_dir, interactive=args.interactive, keep=args.keep,
                        after_failover=after_failover, secure=args.secure)
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a demo ends with one clear sentence, not a traceback
        print(f"demo failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
